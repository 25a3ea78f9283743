"""A GPU memory fault reaches stock lldb 23.1 as a SIGSEGV stop of a wave.

usage: lldb_fault.py PORT EXE
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lldb  # noqa: E402
from lldb_common import drain_events, wait_stop_event  # noqa: E402

PORT, EXE = sys.argv[1], sys.argv[2]


def check(cond, what):
    print(("CHECK ok: " if cond else "CHECK FAILED: ") + what, flush=True)
    if not cond:
        sys.exit(1)


dbg = lldb.SBDebugger.Create()
dbg.SetAsync(False)
res = lldb.SBCommandReturnObject()
dbg.GetCommandInterpreter().HandleCommand("settings set stop-disassembly-display never", res)
cpu_t = dbg.CreateTarget(EXE)
err = lldb.SBError()
cpu = cpu_t.ConnectRemote(dbg.GetListener(), f"connect://127.0.0.1:{PORT}", "gdb-remote", err)
check(err.Success(), f"connected: {err}")
cpu_t.BreakpointCreateByName("simgpu_launch")
cpu.Continue()
check(dbg.GetNumTargets() == 2, "the GPU target appeared")
gpu = dbg.GetTargetAtIndex(1).GetProcess()
dbg.SetAsync(True)
drain_events(dbg)
gpu.Continue()
cpu_t.DeleteAllBreakpoints()
cpu.Continue()
# On the stop event, not the polled state (lldb_common.wait_stop_event).
wait_stop_event(dbg, gpu)
# The faulting wave (nothing of lldb's own selects it for an SB listener).
faulted = [t for t in gpu if t.GetStopReason() == lldb.eStopReasonSignal]
check(len(faulted) >= 1, f"a wave stopped with a signal ({gpu.GetNumThreads()} threads)")
th = faulted[0]
check(th.GetStopReason() == lldb.eStopReasonSignal and th.GetStopReasonDataAtIndex(0) == 11,
      f"a wave stopped with SIGSEGV ({th.GetStopDescription(100)})")
check("memory violation" in th.GetStopDescription(100),
      f"lldb shows the GPU's reason ({th.GetStopDescription(100)})")
print("ALL CHECKS PASSED")
