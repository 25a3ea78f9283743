"""A hung kernel under stock gdb 13: the runtime's watchdog is off while a
debugger is attached, so the wave runs until gdb stops it through the CPU
session's monitor commands, and is then inspected and stepped.
Run as: PORT=.. gdb -batch -nx -x gdb_hang.py EXE (EXE = hostile --hang).

Prints CHECK lines; raises on the first failed expectation; ALL CHECKS
PASSED at the end.
"""
import os
import re
import sys
import time

import gdb

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_common import check, connect, ex  # noqa: E402

connect()
out = ex("monitor gpu break hang")
check("pending" in out, "a breakpoint on the hang kernel is pending")
out = ex("continue")
check(re.search(r"GPU wave \d+ .*stopped.*breakpoint", out) is not None,
      "the hang kernel's wave stops at its entry")
mon = ex("monitor gpu")
m = re.search(r"kernel hang at (0x[0-9a-f]+)", mon)
check(m is not None, "monitor gpu lists the hang kernel")
entry = int(m.group(1), 16)
ex(f"monitor gpu delete {entry:#x}")
out = ex("monitor gpu continue")
check("resumed" in out, "the wave runs on (into its endless loop)")
waves = ex("monitor gpu waves")
# A running wave has no readable pc (as with amd-dbgapi): it shows "-".
m = re.search(r"wave (\d+) \(dbgapi \d+\): Running ", waves)
check(m is not None, "monitor gpu waves shows the hung wave running")
wave = m.group(1)
out = ex("monitor gpu stop")
check("stop requested for 1 running waves" in out, "monitor gpu stop stops the hung wave")
# amd-dbgapi's wave stop is asynchronous: the request returns at once and
# the stop is in when the library reports its WAVE_STOP event (the device
# thread running the wave carries it out at its next instruction). No
# client-visible event says so: ask again, for at most 30 s.
deadline = time.monotonic() + 30
while True:
    waves = ex("monitor gpu waves")
    m = re.search(rf"wave {wave} \(dbgapi \d+\): Stopped pc=(0x[0-9a-f]+) .*stop=\(stop requested\)", waves)
    if m is not None or time.monotonic() > deadline:
        break
    time.sleep(0.05)
check(m is not None, f"wave {wave} is stopped on request")
pc = int(m.group(1), 16)
# The stop can come before the wave ran its first instruction after the
# resume (its device thread runs at the lowest host priority and may not
# have had a CPU yet): then it is still at the entry.
check(entry <= pc < entry + 0x100, f"its pc {pc:#x} lies in the hang kernel ({entry:#x}…)")
regs = ex(f"monitor gpu regs {wave} pc exec s2")
check(re.search(rf"pc\s+{pc:#x}", regs) is not None, "monitor gpu regs reads the stopped wave's pc")
out = ex(f"monitor gpu step {wave}")
check(f"wave {wave} stepping" in out, "the hung wave can be single-stepped")
ex("kill")
print("ALL CHECKS PASSED", flush=True)
