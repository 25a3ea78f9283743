"""Stock gdb 13, typed as a new user would: a GPU breakpoint on a kernel by
name before anything is loaded, one `continue` to stop a wave there, a look
at the wave's private memory, and `monitor gpu continue` + `continue` to run
the program to its exit with the breakpoint still inserted. Run as:
PORT=.. gdb -batch -nx -x gdb_pending.py EXE
"""
import os
import sys
import re

import gdb

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_common import EXITS, check, connect, ex  # noqa: E402

connect()
out = ex("monitor gpu break vector_add")
check("pending" in out, "the kernel breakpoint is pending before the code object loads")
# And one on a source line of the kernel (from the code object's DWARF
# line table): `c[i] = a[i] + b[i];`.
out = ex("monitor gpu break vector_add.cl:8")
check("GPU breakpoint vector_add.cl:8 pending" in out, "monitor gpu break FILE:LINE before the code object loads is pending")
out = ex("monitor gpu breaks")
check("vector_add (pending" in out and "vector_add.cl:8 (pending" in out, "monitor gpu breaks lists both pending breakpoints")
out = ex("continue")
m = re.search(r"GPU wave (\d+) stopped at a breakpoint in kernel vector_add at (0x[0-9a-f]+), (\S+\.[ch]l?):(\d+) ", out)
check(m is not None, "one continue stops a wave at the pending kernel breakpoint; the stop names the wave, kernel and source line")
wave, entry = m.group(1), int(m.group(2), 16)
print(f"MARK: the kernel entry is {m.group(3)}:{m.group(4)} in the line table", flush=True)
out = ex("monitor gpu breaks")
check(f"GPU breakpoint at {entry:#x} (vector_add)" in out and "pending" not in out,
      "both breakpoints resolved when the code object loaded")
line8 = re.search(r"GPU breakpoint at (0x[0-9a-f]+) \(vector_add\+0x[0-9a-f]+\)", out)
check(line8 is not None, "the FILE:LINE breakpoint resolved to an address inside the kernel")
# Private memory: per lane (private_lane) needs a wave; vector_add has no
# scratch, so the library answers with an error, not a usage message.
out = ex("monitor gpu mem private 0 8")
check("private memory belongs to a wave" in out, "private memory without a wave is refused with a message")
out = ex(f"monitor gpu mem private 0 4 {wave} 1")
check("usage" not in out and (out.startswith("lane 1:") or out.startswith("error: ")),
      "monitor gpu mem private ADDR LEN WAVE LANE reaches the library for that lane")
stops = 0
at_line8 = 0
for _ in range(256):
    ex("monitor gpu continue")
    out = ex("continue")
    if EXITS:
        break
    stops += 1
    check(re.search(r"GPU wave \d+ stopped at a breakpoint in kernel vector_add", out) is not None,
          "each later GPU stop is a wave reaching a still-inserted breakpoint")
    if f"at {line8.group(1)}, vector_add.cl:8 " in out:
        at_line8 += 1
print(f"MARK: {stops} later breakpoint stops before the exit", flush=True)
check(at_line8 > 0, f"continue stopped waves at vector_add.cl:8 ({at_line8} stops)")
check(EXITS == [0], f"the program exited with status 0 (exits seen: {EXITS})")
print("ALL CHECKS PASSED", flush=True)
