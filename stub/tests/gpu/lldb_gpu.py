"""Stock lldb 23.1 (PyPI lldb-for-pwndbg) debugs a GPU kernel through gdbmux.

usage: lldb_gpu.py PORT EXE HSACO_SYMBOL_OFFSET [address|source HSACO]
With `source`, the GPU breakpoint is set by source line after
`target modules add` + `target modules load --slide` of the code object
(stock 23.1 has no GPU dynamic loader; research/lldb-accelerator.md §2.5).
Prints CHECK lines; exits non-zero on the first failed expectation.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lldb  # noqa: E402
from lldb_common import check, cmd, connect, drain_events, gpu_target, wait_state, wait_stop_event  # noqa: E402

PORT, EXE, SYM_OFF = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)
MODE = sys.argv[4] if len(sys.argv) > 4 else "address"
HSACO = sys.argv[5] if len(sys.argv) > 5 else None


dbg, cpu_t, cpu = connect(PORT, EXE)
check(cpu.GetState() == lldb.eStateStopped, "CPU process stopped after connect")
bp = cpu_t.BreakpointCreateByName("simgpu_launch")
cpu.Continue()
check(cpu.GetState() == lldb.eStateStopped, "CPU stopped at simgpu_launch")
check(dbg.GetNumTargets() == 2, f"the GPU target appeared by itself ({dbg.GetNumTargets()} targets)")
gpu_t, gpu = gpu_target(dbg)

mon = cmd(dbg, "target select 0") + cmd(dbg, "process plugin packet monitor gpu")
print(mon)
m = re.search(r"code object \d+: \S*vector_add\S* \(load address (0x[0-9a-f]+)\)", mon)
check(m is not None, "monitor gpu lists the vector_add code object")
entry = int(m.group(1), 16) + SYM_OFF
cmd(dbg, "target select 1")
if MODE == "source":
    print(cmd(dbg, f"target modules add {HSACO}"))
    name = HSACO.rsplit("/", 1)[-1]
    print(cmd(dbg, f"target modules load --file {name} --slide {entry - SYM_OFF:#x}"))
    gbp = gpu_t.BreakpointCreateByLocation("vector_add.cl", 8)
    check(gbp.GetNumLocations() == 1, "GPU breakpoint at vector_add.cl:8")
    bp_addr = gbp.GetLocationAtIndex(0).GetLoadAddress()
    check(entry < bp_addr < entry + 0xa0, f"line 8 is inside the kernel ({bp_addr:#x})")
else:
    gbp = gpu_t.BreakpointCreateByAddress(entry)
    check(gbp.GetNumLocations() == 1, f"GPU breakpoint at {entry:#x}")
    bp_addr = entry
# The CPU's `a` buffer, to compare with what the GPU target reads.
frame = cpu.GetSelectedThread().GetFrameAtIndex(1)
a_ptr = frame.FindVariable("a").GetValueAsUnsigned()
check(a_ptr != 0, f"CPU variable a = {a_ptr:#x}")

dbg.SetAsync(True)
drain_events(dbg)
gpu.Continue()
cpu_t.DeleteAllBreakpoints()
cpu.Continue()
wait_stop_event(dbg, gpu)
# The wave that hit: with no event handler of lldb's own (an SB client's
# listener) nothing has selected the thread with the stop reason, as the
# command line's `Process::HandleProcessStateChangedEvent` does: the
# selected thread can still be the one selected before the resume.
hits = [t for t in gpu if t.GetStopReason() == lldb.eStopReasonBreakpoint]
sel = gpu.GetSelectedThread()
check(len(hits) >= 1, f"a wave stopped at the GPU breakpoint (selected thread {sel.GetThreadID()}: "
      f"'{sel.GetStopDescription(100)}'; {gpu.GetNumThreads()} threads)")
th = hits[0]
gpu.SetSelectedThread(th)
check(gpu.GetNumThreads() >= 1, f"waves are threads: {gpu.GetNumThreads()}")
print(cmd(dbg, "thread list"))
fr = th.GetFrameAtIndex(0)
pc = fr.FindRegister("pc").GetValueAsUnsigned()
check(pc == bp_addr, f"pc {pc:#x} == breakpoint {bp_addr:#x}")
if MODE == "source":
    line = fr.GetLineEntry()
    check(line.GetLine() == 8 and line.GetFileSpec().GetFilename() == "vector_add.cl",
          f"the wave is at vector_add.cl:8 ({line.GetFileSpec().GetFilename()}:{line.GetLine()})")
exec_ = fr.FindRegister("exec").GetValueAsUnsigned()
check(exec_ != 0, f"exec {exec_:#x}")
v0 = fr.FindRegister("v0")
d = v0.GetData()
e0 = lldb.SBError()
raw = d.ReadRawData(e0, 0, d.GetByteSize())
lanes = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw or b""), 4)]
check(len(lanes) == 64 and lanes == list(range(lanes[0], lanes[0] + 64)) and lanes[0] % 64 == 0,
      f"v0 holds the work-item ids of the wave's lanes ({lanes[:4]}...)")
s0 = fr.FindRegister("s0")
check(s0.IsValid(), f"s0 = {s0.GetValue()}")
print(cmd(dbg, "register read pc exec s0"))
e = lldb.SBError()
data = gpu.ReadMemory(a_ptr, 16, e)
check(e.Success() and [int.from_bytes(data[i:i + 4], "little") for i in range(0, 16, 4)] == [0, 3, 6, 9],
      "global buffer a[] read through the GPU target matches")

gpu_t.DeleteAllBreakpoints()
gpu.Continue()
wait_state(dbg, cpu, [lldb.eStateExited])
check(cpu.GetExitStatus() == 0, f"CPU process exit status {cpu.GetExitStatus()}")
check(dbg.GetNumTargets() == 2, "exactly 2 targets")
wait_state(dbg, gpu, [lldb.eStateExited, lldb.eStateDetached])
print("ALL CHECKS PASSED")
