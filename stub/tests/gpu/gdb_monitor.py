"""Stock gdb 13 reaches the simulated GPU through `monitor gpu` on the CPU
session (DESIGN §3.10). Run as: PORT=.. SYM_OFF=.. gdb -batch -nx -x gdb_monitor.py EXE

Prints CHECK lines; raises (gdb then exits non-zero) on the first failed
expectation; ALL CHECKS PASSED at the end.
"""
import os
import sys
import re

import gdb

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_common import EXITS, check, connect, ex  # noqa: E402

SYM_OFF = int(os.environ["SYM_OFF"], 0)
connect()
mon = ex("monitor gpu")
check(re.search(r"GPU state: ProcessAttached", mon) is not None, "monitor gpu shows the state before the runtime")
# A breakpoint on the kernel by name before any code object is loaded is
# pending, and resolves when the code object loads.
out = ex("monitor gpu break vector_add")
check("GPU breakpoint vector_add pending until a code object defines it" in out,
      "monitor gpu break KERNEL before the code object loads is pending")
out = ex("monitor gpu breaks")
check("vector_add (pending" in out, "monitor gpu breaks lists the pending breakpoint")
ex("break simgpu_launch")
ex("continue")
mon = ex("monitor gpu")
check("GPU state: RuntimeLoaded" in mon, "runtime loaded at simgpu_launch")
m = re.search(r"code object \d+: \S*vector_add\S* \(load address (0x[0-9a-f]+)\)", mon)
check(m is not None, "monitor gpu lists the vector_add code object with its load address")
entry = int(m.group(1), 16) + SYM_OFF
check(f"kernel vector_add at {entry:#x}" in mon, "monitor gpu lists the kernel with its address")
out = ex("monitor gpu breaks")
check(f"GPU breakpoint at {entry:#x} (vector_add)" in out and "pending" not in out,
      f"the pending breakpoint resolved to the kernel entry {entry:#x} when the code object loaded")
out = ex(f"monitor gpu break {entry:#x}")
check(f"GPU breakpoint at {entry:#x}" in out, f"GPU breakpoint at the kernel entry {entry:#x} (by address)")
ex("frame 1")
a_ptr = int(gdb.parse_and_eval("a"))
check(a_ptr != 0, f"CPU variable a = {a_ptr:#x}")
ex("delete")
# The wave's stop surfaces as a CPU-session stop with a console line
# (`O` packet) naming the wave, kernel and address.
out = ex("continue")
check(re.search(r"GPU wave \d+ .*stopped.*breakpoint", out) is not None,
      "the GPU stop surfaced in the CPU session as a console line naming the wave")
check("vector_add" in out and f"{entry:#x}" in out, "the console line names the kernel and the address")
waves = ex("monitor gpu waves")
m = re.search(rf"wave (\d+) \(dbgapi \d+\): Stopped pc={entry:#x}", waves)
check(m is not None, "monitor gpu waves lists a wave stopped at the breakpoint")
wave = m.group(1)
check(re.search(rf"wave {wave} .*stop=\(breakpoint\)", waves) is not None,
      "monitor gpu waves names the stop reason (breakpoint), not a bitmask")
regs = ex(f"monitor gpu regs {wave} exec pc")
check(regs.find("exec") < regs.find("pc "), "registers are listed in the order asked")
full = ex(f"monitor gpu regs {wave}")
check("not allocated>" not in full and "v0 " in full and "s0 " in full,
      "a full listing shows the wave's registers and no unallocated ones")
pc = re.search(r"pc\s+(0x[0-9a-f]+)", regs)
check(pc is not None and int(pc.group(1), 16) == entry, f"wave {wave} pc == {entry:#x}")
exe = re.search(r"exec\s+(0x[0-9a-f]+)", regs)
check(exe is not None and int(exe.group(1), 16) != 0, f"wave {wave} exec is non-zero")
mem = ex(f"monitor gpu mem global {a_ptr:#x} 16")
check(re.search(r"00 00 00 00 03 00 00 00 06 00 00 00 09 00 00 00", mem) is not None,
      "a[0..4] read through the GPU is 0 3 6 9")
# `monitor gpu step W` steps the wave off the inserted breakpoint (its
# s_trap is lifted for the step and put back). The step's stop is reported
# by a later `continue` (after the other waves' breakpoint stops, each
# reported once).
out = ex(f"monitor gpu step {wave}")
check(f"wave {wave} stepping" in out, f"monitor gpu step {wave} accepted")
stepped = None
for _ in range(64):
    out = ex("continue")
    if re.search(rf"GPU wave {wave} stopped at a single step", out):
        stepped = re.search(r"at a single step in kernel \S+ at (0x[0-9a-f]+)", out)
        break
    check(re.search(r"GPU wave \d+ stopped at a breakpoint", out) is not None,
          "until the step's stop, each GPU stop is another wave at the breakpoint")
check(stepped is not None and int(stepped.group(1), 16) > entry,
      f"wave {wave} stepped off the breakpoint at {entry:#x} (now at {stepped and stepped.group(1)})")
regs = ex(f"monitor gpu regs {wave} pc")
pc = re.search(r"pc\s+(0x[0-9a-f]+)", regs)
check(pc is not None and int(pc.group(1), 16) > entry, "the wave's pc moved past the breakpoint")
breaks = ex("monitor gpu breaks")
check(f"GPU breakpoint at {entry:#x}" in breaks, "the breakpoint is still inserted after the step")
# `monitor gpu continue` steps every stopped wave off the breakpoint and
# runs it on; waves that reach the breakpoint later stop there and are
# resumed the same way, until the program exits.
stops = 0
for _ in range(256):
    ex("monitor gpu continue")
    out = ex("continue")
    if EXITS:
        break
    stops += 1
    check(re.search(r"GPU wave \d+ stopped at a breakpoint", out) is not None,
          "a later GPU stop is a wave reaching the (still inserted) breakpoint")
print(f"MARK: {stops} later breakpoint stops before the exit", flush=True)
check(EXITS == [0], f"the program exited with status 0 (exits seen: {EXITS})")
print("ALL CHECKS PASSED", flush=True)
