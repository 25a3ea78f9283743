"""Stock lldb 23.1 against gdbmux --attach PID, where PID already brought its
GPU runtime up (the seed's race: the runtime is up before the client has
handled its first stop). The offer must arrive in the Initialize reply, and
exactly one GPU target must appear.

usage: lldb_attach.py PORT EXE
Prints CHECK lines; exits non-zero on the first failed expectation.
"""
import os
import sys
import time

import lldb

PORT, EXE = sys.argv[1], sys.argv[2]
TIMEOUT = 30.0


def check(cond, what):
    print(("CHECK ok: " if cond else "CHECK FAILED: ") + what, flush=True)
    if not cond:
        if os.environ.get("LLDB_PACKET_LOG"):
            cmd(dbg, "log disable gdb-remote packets process")
        sys.exit(1)


def cmd(dbg, line):
    res = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand(line, res)
    return (res.GetOutput() or "") + (res.GetError() or "")


def wait_state(dbg, process, states):
    """Wait on the debugger's events until `process` reaches one of `states`."""
    listener = dbg.GetListener()
    deadline = time.monotonic() + TIMEOUT
    ev = lldb.SBEvent()
    while process.GetState() not in states:
        left = deadline - time.monotonic()
        check(left > 0, f"process {process.GetProcessID()} reached {states} in time (state {process.GetState()})")
        listener.WaitForEvent(max(1, int(left)), ev)
    return process.GetState()


dbg = lldb.SBDebugger.Create()
dbg.SetAsync(False)
cmd(dbg, "settings set stop-disassembly-display never")
if os.environ.get("LLDB_PACKET_LOG"):
    cmd(dbg, f"log enable -f {os.environ['LLDB_PACKET_LOG']} gdb-remote packets process")
cpu_t = dbg.CreateTarget(EXE)
err = lldb.SBError()
cpu = cpu_t.ConnectRemote(dbg.GetListener(), f"connect://127.0.0.1:{PORT}", "gdb-remote", err)
check(err.Success(), f"connected: {err}")
check(cpu.GetState() == lldb.eStateStopped, "CPU process stopped after attach")
check(dbg.GetNumTargets() == 2, f"the GPU target appeared at the first stop ({dbg.GetNumTargets()} targets)")
gpu_t = dbg.GetTargetAtIndex(1)
gpu = gpu_t.GetProcess()
check("amdgpu" in gpu_t.GetTriple(), f"GPU target triple {gpu_t.GetTriple()}")
check(gpu.GetState() == lldb.eStateStopped, "GPU process stopped after the synchronous connect")
mon = cmd(dbg, "target select 0") + cmd(dbg, "process plugin packet monitor gpu")
print(mon)
check(mon.count("offer ") == 1 and "GPU state: Connected" in mon, "exactly one offer, claimed")
# `?` replays must not create anything new: lldb asks for stop info again.
for _ in range(3):
    cmd(dbg, "process plugin packet send ?")
check(dbg.GetNumTargets() == 2, "still 2 targets after replays")

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
