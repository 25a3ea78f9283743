"""A GPU memory fault reaches stock lldb 23.1 as a SIGSEGV stop of a wave.

usage: lldb_fault.py PORT EXE
"""
import sys
import time

import lldb

PORT, EXE = sys.argv[1], sys.argv[2]
TIMEOUT = 30.0


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
stop_id = gpu.GetStopID()
gpu.Continue()
cpu_t.DeleteAllBreakpoints()
cpu.Continue()
ev = lldb.SBEvent()
deadline = time.monotonic() + TIMEOUT
while not (gpu.GetState() == lldb.eStateStopped and gpu.GetStopID() > stop_id):
    left = deadline - time.monotonic()
    if left <= 0:
        check(False, "the GPU stopped in time")
    dbg.GetListener().WaitForEvent(max(1, int(left)), ev)
th = gpu.GetSelectedThread()
check(th.GetStopReason() == lldb.eStopReasonSignal and th.GetStopReasonDataAtIndex(0) == 11,
      f"a wave stopped with SIGSEGV ({th.GetStopDescription(100)})")
check("memory violation" in th.GetStopDescription(100),
      f"lldb shows the GPU's reason ({th.GetStopDescription(100)})")
print("ALL CHECKS PASSED")
