"""Stock gdb 13 reads a wave's private (scratch) memory per lane through
`monitor gpu mem private`. Run as:
PORT=.. DELTA=.. gdb -batch -nx -x gdb_private.py EXE

DELTA is the offset from the kernel entry of the instruction right after
the kernel's first scratch store (`buffer_store_dword v1, off, s[0:3], s33
offset:4`, s33 = 0): at a breakpoint there, bytes 4..8 of each lane's
private memory hold that lane's v1.
"""
import os
import sys
import re

import gdb

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_common import EXITS, check, connect, ex  # noqa: E402

DELTA = int(os.environ["DELTA"], 0)
connect()
out = ex("monitor gpu break private_array")
check("pending" in out, "the kernel breakpoint is pending before the code object loads")
out = ex("continue")
m = re.search(r"GPU wave (\d+) stopped at a breakpoint in kernel private_array at (0x[0-9a-f]+)", out)
check(m is not None, "continue stops a wave at the pending kernel breakpoint")
entry = int(m.group(2), 16)
bp = entry + DELTA
ex(f"monitor gpu delete {entry:#x}")
out = ex(f"monitor gpu break {bp:#x}")
check(f"GPU breakpoint at {bp:#x}" in out, "breakpoint after the first scratch store")
ex("monitor gpu continue")
out = ex("continue")
m = re.search(rf"GPU wave (\d+) stopped at a breakpoint in kernel private_array\S* at {bp:#x}", out)
check(m is not None, "a wave stops after the scratch store")
wave = m.group(1)
regs = ex(f"monitor gpu regs {wave} v1")
v1 = [int(x, 16) for x in re.search(r"v1\s+\[([^\]]*)\]", regs).group(1).split()]
for lane in (0, 1, 5, 63):
    mem = ex(f"monitor gpu mem private 4 4 {wave} {lane}")
    check(mem.startswith(f"lane {lane}:"), f"private memory of lane {lane} is readable")
    data = bytes(int(b, 16) for b in mem.split(":", 2)[2].split())
    got = int.from_bytes(data[0:4], "little")
    check(got == v1[lane], f"lane {lane}'s private bytes 4..8 are its v1 ({got:#x} == {v1[lane]:#x})")
out = ex(f"monitor gpu mem private-wave 0 256 {wave}")
check(out.startswith("0x") and "error" not in out, "the wave's whole private memory is readable")
out = ex("monitor gpu mem private 0 8")
check("private memory belongs to a wave" in out, "private memory without a wave is refused with a message")
ex(f"monitor gpu delete {bp:#x}")
for _ in range(64):
    ex("monitor gpu continue")
    ex("continue")
    if EXITS:
        break
check(EXITS == [0], f"the program exited with status 0 (exits seen: {EXITS})")
print("ALL CHECKS PASSED", flush=True)
