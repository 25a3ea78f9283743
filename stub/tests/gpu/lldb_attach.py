"""Stock lldb 23.1 against gdbmux --attach PID, where PID already brought its
GPU runtime up (the seed's race: the runtime is up before the client has
handled its first stop). The offer must arrive in the Initialize reply, and
exactly one GPU target must appear.

usage: lldb_attach.py PORT EXE
Prints CHECK lines; exits non-zero on the first failed expectation.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lldb  # noqa: E402
from lldb_common import check, cmd, connect, gpu_target, wait_state  # noqa: E402

PORT, EXE = sys.argv[1], sys.argv[2]


dbg, cpu_t, cpu = connect(PORT, EXE, packet_log=True)
check(cpu.GetState() == lldb.eStateStopped, "CPU process stopped after attach")
check(dbg.GetNumTargets() == 2, f"the GPU target appeared at the first stop ({dbg.GetNumTargets()} targets)")
gpu_t, gpu = gpu_target(dbg)
mon = cmd(dbg, "target select 0") + cmd(dbg, "process plugin packet monitor gpu")
print(mon)
check(mon.count("offer ") == 1 and "GPU state: Connected" in mon, "exactly one offer, claimed")
# `?` replays must not create anything new: lldb asks for stop info again.
for _ in range(3):
    cmd(dbg, "process plugin packet send ?")
check(dbg.GetNumTargets() == 2, "still 2 targets after replays")

# Duplicate refusal with stock lldb: a second lldb debugger that connects
# while both sessions are live is refused, and nothing changes here.
dbg2 = lldb.SBDebugger.Create()
dbg2.SetAsync(False)
t2 = dbg2.CreateTarget("")
err2 = lldb.SBError()
p2 = t2.ConnectRemote(dbg2.GetListener(), f"connect://127.0.0.1:{PORT}", "gdb-remote", err2)
state2 = p2.GetState() if p2.IsValid() else lldb.eStateInvalid
print(f"second lldb: {err2}; process state {state2}")
# The refused lldb sees a placeholder stop whose stop reason is gdbmux's
# reason (refusal::lldb_answer; checked with `lldb -b` in hostile.rs); the
# refusal itself is checked by the Rust side (gpu_mux.rs); here: the first
# debugger is untouched.
check(dbg.GetNumTargets() == 2, "still 2 targets after the refusal")
mon = cmd(dbg, "target select 0") + cmd(dbg, "process plugin packet monitor gpu")
check(mon.count("offer ") == 1 and "GPU state: Connected" in mon, "still exactly one offer, claimed, after the refusal")
check(cpu.GetState() == lldb.eStateStopped and gpu.GetState() == lldb.eStateStopped, "both sessions untouched")

# The hook breakpoint stays enabled: stepping off it (it shares its address
# with gdbmux's own internal breakpoint) must be exactly one instruction
# (gpu_mux.rs::client_step_off_shared_hook_breakpoint_is_one_instruction).

dbg.SetAsync(True)
gpu.Continue()
cpu.Continue()
wait_state(dbg, cpu, [lldb.eStateExited])
check(cpu.GetExitStatus() == 0, f"CPU process exit status {cpu.GetExitStatus()}")
check(dbg.GetNumTargets() == 2, f"exactly 2 targets at the end ({dbg.GetNumTargets()})")
wait_state(dbg, gpu, [lldb.eStateExited, lldb.eStateDetached])
print("ALL CHECKS PASSED")
