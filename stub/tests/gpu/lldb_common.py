"""Helpers shared by the stock-lldb scripts next to this file: CHECK lines,
command execution, waiting on process states, and the connection to gdbmux
with the GPU target appearing by itself.
"""
import os
import sys
import time

import lldb

TIMEOUT = 30.0

# The Python module must be stock lldb 23.1 (the `lldb` command's version is
# checked by the Rust side; this is the module these scripts drive).
_version = lldb.SBDebugger.GetVersionString()
if not _version.startswith("lldb version 23.1."):
    print("CHECK FAILED: lldb Python module is not 23.1: " + _version, flush=True)
    sys.exit(1)

# The debugger whose packet log `check` closes on a failure (see `connect`).
_packet_log_dbg = None


def check(cond, what):
    print(("CHECK ok: " if cond else "CHECK FAILED: ") + what, flush=True)
    if not cond:
        if _packet_log_dbg is not None:
            cmd(_packet_log_dbg, "log disable gdb-remote packets process")
        sys.exit(1)


def cmd(dbg, line):
    res = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand(line, res)
    return (res.GetOutput() or "") + (res.GetError() or "")


def wait_state(dbg, process, states, after_stop_id=None):
    """Wait on the debugger's events until `process` reaches one of `states`
    (with a stop id above `after_stop_id`, when given)."""
    listener = dbg.GetListener()
    deadline = time.monotonic() + TIMEOUT
    ev = lldb.SBEvent()

    def done():
        if process.GetState() not in states:
            return False
        return after_stop_id is None or process.GetStopID() > after_stop_id

    while not done():
        left = deadline - time.monotonic()
        check(left > 0, f"process {process.GetProcessID()} reached {states} in time (state {process.GetState()})")
        listener.WaitForEvent(max(1, int(left)), ev)
    return process.GetState()


def drain_events(dbg):
    """Drop the events queued on the debugger's listener (before a resume
    whose stop `wait_stop_event` then waits for)."""
    ev = lldb.SBEvent()
    while dbg.GetListener().GetNextEvent(ev):
        pass


def wait_stop_event(dbg, process):
    """Wait on the debugger's events for `process`'s next stopped event (not
    one lldb restarts from). Polling the state is not enough right after an
    asynchronous resume: the public state can still be the stop before it
    while the stop id already counts the new private stop, whose thread
    list lldb's private state thread is still building (0 threads seen)."""
    listener = dbg.GetListener()
    deadline = time.monotonic() + TIMEOUT
    ev = lldb.SBEvent()
    target = process.GetTarget()
    while True:
        left = deadline - time.monotonic()
        check(left > 0, f"process {process.GetProcessID()} stopped in time (state {process.GetState()})")
        if not listener.WaitForEvent(max(1, int(left)), ev):
            continue
        if not lldb.SBProcess.EventIsProcessEvent(ev):
            continue
        if lldb.SBProcess.GetProcessFromEvent(ev).GetTarget() != target:
            continue
        state = lldb.SBProcess.GetStateFromEvent(ev)
        if state == lldb.eStateStopped and not lldb.SBProcess.GetRestartedFromEvent(ev):
            return state
        check(state not in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateCrashed),
              f"process {process.GetProcessID()} ended before it stopped ({state})")


def connect(port, exe, packet_log=False):
    """A synchronous debugger with a target for `exe` connected to gdbmux on
    `port`. With `packet_log`, LLDB_PACKET_LOG=FILE (when set) logs the
    gdb-remote packets to FILE, closed by a failed check.
    Returns (dbg, cpu_t, cpu)."""
    global _packet_log_dbg
    dbg = lldb.SBDebugger.Create()
    dbg.SetAsync(False)
    cmd(dbg, "settings set stop-disassembly-display never")
    if packet_log and os.environ.get("LLDB_PACKET_LOG"):
        cmd(dbg, f"log enable -f {os.environ['LLDB_PACKET_LOG']} gdb-remote packets process")
        _packet_log_dbg = dbg
    cpu_t = dbg.CreateTarget(exe)
    err = lldb.SBError()
    cpu = cpu_t.ConnectRemote(dbg.GetListener(), f"connect://127.0.0.1:{port}", "gdb-remote", err)
    check(err.Success(), f"connected: {err}")
    return dbg, cpu_t, cpu


def gpu_target(dbg):
    """The GPU target (the second one) and its process, checked to be an
    amdgpu target stopped after the synchronous connect."""
    gpu_t = dbg.GetTargetAtIndex(1)
    gpu = gpu_t.GetProcess()
    check("amdgpu" in gpu_t.GetTriple(), f"GPU target triple {gpu_t.GetTriple()}")
    check(gpu.GetState() == lldb.eStateStopped, "GPU process stopped after the synchronous connect")
    return gpu_t, gpu
