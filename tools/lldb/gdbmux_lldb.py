"""gdbmux's helper for stock lldb 23.1: GPU debugging as a person types it.

Load it before connecting (gdbmux prints this line with the real path):

    lldb -o 'command script import /path/to/gdbmux_lldb.py' -o 'gdb-remote HOST:PORT' PROGRAM

What it does, because stock lldb 23.1 cannot do it over the protocol
(docs/gpu-lldb.md has the experiments):

* GPU code objects become modules of the GPU target. lldb 23.1 has no
  dynamic loader for an amdgpu process (it never asks for qXfer:libraries on
  the GPU connection). A breakpoint on the GPU runtime's loader hook (called
  on every code-object load/unload, the CPU stays stopped meanwhile) reads
  gdbmux's code-object list (`monitor gpu`) and adds each object with its
  load address, so `image list`, `image lookup -n KERNEL`, source lines and
  pending breakpoints work.
* Breakpoints typed before the GPU target exists land on the CPU target,
  where they stay pending; when code objects load, each pending
  `breakpoint set -n NAME` / `-f FILE -l LINE` is set on the GPU target too.
* All-stop across the two targets (`monitor gpu all-stop`, with gdbmux):
  a wave stop stops the CPU too, and a `process continue` of either target
  runs the other one on (gdbmux's notice on that target's connection, taken
  by a listener thread); a stop hook of the CPU target orders the two stops
  so that a command ends with both targets stopped.
  A code object whose breakpoints must be set while a synchronous command
  holds the GPU target stops both targets (`monitor gpu all-stop-gpu`);
  the GPU target's stop hook sets them.
* `stop-disassembly-display never`: stock 23.1 aborts disassembling AMDGPU.

The user writes no Python and computes no address.
GDBMUX_LLDB_TRACE=FILE appends the listener threads' decisions to FILE.
"""
import os
import re
import threading
import time
import urllib.parse

import lldb

# Loader hooks of the GPU runtimes gdbmux serves (simulated runtime, ROCr),
# and ROCr's exported `hsa_executable_freeze`, which every code object passes
# through before its kernels run: it stands in for ROCr's hook when the
# runtime is stripped (the hook's name is only in `.symtab`; `.dynsym`, which
# `strip` keeps, has the exported API). Not run against ROCr (no GPU machine).
HOOKS = ["_simgpu_loader_debug_state", "_ZN4rocr19_loader_debug_stateEv", "hsa_executable_freeze"]

_state = {
    "dbg": None,
    "copied": set(),  # CPU breakpoint ids already set on the GPU target
    "loaded": {},  # code-object path -> load address
    "cpu_bg": False,  # the CPU was run on in the background after a GPU stop
    "watching": set(),  # process uids a listener thread watches
    "gpu_started": False,  # the GPU target was run on after its connection
    "cpu_bg_thread": None,  # the worker running a synchronous CPU continue
    "all_stop": False,  # gdbmux stops the CPU with a wave (monitor gpu all-stop)
    "cpu_run_by_helper": False,  # the CPU runs because the GPU was continued
    "gpu_run_by_helper": False,  # the GPU runs because the CPU was continued
    "gpu_bg_thread": None,  # the worker running a synchronous GPU continue
    "gpu_stopped": threading.Condition(),  # notified when the GPU is taken stopped
    "gpu_is_stopped": False,
    "cpu_stopped": threading.Condition(),  # notified when the CPU is taken stopped
    "cpu_is_stopped": True,
    "carry": None,  # breakpoints for the GPU target's stop hook to set
    "gpu_hook_id": None,  # the GPU target's stop hook (enabled for a carry)
    # The GPU's first run, continued asynchronously in synchronous lldb: the
    # text of its first stop, formatted by the GPU target's stop hook on the
    # thread that takes that stop in (lldb's event thread); see _first_stop.
    "first_stop": None,
    "gpu_markers": {},  # GPU process uid -> broadcaster of the continue markers
    "gpu_markers_pending": {},  # GPU process uid -> markers its listener has not taken
    "lock": threading.Lock(),
}

# gdbmux's notice on the GPU connection that the GPU target was continued
# while the CPU is stopped with it (an `A` packet: lldb's asynchronous
# profile data), and the prefix of the CPU stop gdbmux makes for a wave
# stop (stub/src/gpu/allstop.rs).
RUN_CPU_NOTICE = "gdbmux:run-cpu"
# The mirror, on the CPU connection: the CPU target was continued while it
# was stopped with the GPU (`target select 0`, `process continue`).
RUN_GPU_NOTICE = "gdbmux:run-gpu"
ALL_STOP_PREFIX = "gdbmux all-stop:"
# How long a command that took the CPU's all-stop stop waits for the GPU
# target's stop (it comes at once; the bound only keeps lldb responsive
# if gdbmux went away).
GPU_STOP_WAIT_S = 30.0
# The event bit of the helper's continue markers (_mark_gpu_continue).
MARKER_BIT = 1


def _log(msg):
    print(f"gdbmux: {msg}", flush=True)


def _trace(msg):
    path = os.environ.get("GDBMUX_LLDB_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.monotonic():.3f} {os.getpid()} {threading.current_thread().name}: {msg}\n")


def _targets(dbg):
    cpu = gpu = None
    for i in range(dbg.GetNumTargets()):
        t = dbg.GetTargetAtIndex(i)
        if "amdgpu" in (t.GetTriple() or ""):
            gpu = gpu or t
        else:
            cpu = cpu or t
    return cpu, gpu


def _monitor(dbg, cpu_t):
    """gdbmux's `monitor gpu` text, asked on the CPU connection."""
    res = lldb.SBCommandReturnObject()
    ctx = lldb.SBExecutionContext(cpu_t.GetProcess())
    dbg.GetCommandInterpreter().HandleCommand("process plugin packet monitor gpu", ctx, res, False)
    return (res.GetOutput() or "") + (res.GetError() or "")


def _code_objects(text):
    out = []
    for m in re.finditer(r"code object \d+: (\S+) \(load address (0x[0-9a-f]+)\)", text):
        uri, addr = m.group(1), int(m.group(2), 16)
        if not uri.startswith("file://"):
            continue  # memory:// objects: see docs/gpu-lldb.md
        rest, _, frag = uri[len("file://"):].partition("#")
        path = urllib.parse.unquote(rest)
        offset = urllib.parse.parse_qs(frag).get("offset", ["0"])[0]
        if int(offset, 0) != 0:
            # Embedded in a bigger file (a fat binary): lldb 23.1 cannot
            # load a module from part of a file.
            _log(f"GPU code object at offset {offset} of {path}: not added (see docs/gpu-lldb.md)")
            continue
        out.append((path, addr))
    return out


def _architectures(text):
    """The debuggable agents' architectures `monitor gpu` lists."""
    return re.findall(r"^agent \d+: .* \((gfx[0-9a-f]+)\)$", text, re.M)


def _bp_spec(bp):
    """(names, file, line) of a name or file:line breakpoint, else None."""
    sd = bp.SerializeToStructuredData()
    opts = sd.GetValueForKey("Breakpoint").GetValueForKey("BKPTResolver").GetValueForKey("Options")
    names = opts.GetValueForKey("SymbolNames")
    if names.IsValid() and names.GetSize() > 0:
        return ([names.GetItemAtIndex(i).GetStringValue(1000) for i in range(names.GetSize())], None, None)
    f = opts.GetValueForKey("FileName")
    ln = opts.GetValueForKey("LineNumber")
    if f.IsValid() and ln.IsValid():
        return (None, f.GetStringValue(4096), ln.GetIntegerValue())
    return None


def _cpu_side(dbg):
    """What the CPU connection says (code objects) and the pending CPU
    breakpoints to carry over; asked on the thread that may use the CPU."""
    cpu_t, gpu_t = _targets(dbg)
    if cpu_t is None or gpu_t is None:
        return None
    text = _monitor(dbg, cpu_t)
    _hold_exits(dbg, cpu_t)
    cos = _code_objects(text)
    _state["archs"] = _architectures(text)
    pending = []
    for i in range(cpu_t.GetNumBreakpoints()):
        bp = cpu_t.GetBreakpointAtIndex(i)
        if bp.GetID() in _state["copied"] or bp.GetNumLocations() > 0:
            continue
        spec = _bp_spec(bp)
        if spec is not None and spec[0] and set(spec[0]) <= set(HOOKS):
            continue  # the helper's own (e.g. ROCr's hook, absent here)
        if spec is not None:
            pending.append((bp, spec, bp.IsOneShot(), bp.GetCondition(), bp.GetIgnoreCount()))
    return cos, pending


def _gpu_side(dbg, cos, pending):
    """Adds the code objects to the GPU target and sets the pending
    breakpoints there. Returns the CPU breakpoints now set on the GPU."""
    _gpu_modules(dbg, cos)
    return _gpu_breakpoints(dbg, pending)


def _gpu_modules(dbg, cos):
    """Adds, moves and removes the GPU target's modules (calls that do not
    take the target's API lock: docs/gpu-lldb.md, finding 4)."""
    _, gpu_t = _targets(dbg)
    for path, addr in cos:
        if _state["loaded"].get(path) == addr:
            continue
        mod = gpu_t.FindModule(lldb.SBFileSpec(path))
        if not mod.IsValid():
            mod = gpu_t.AddModule(path, None, None)
        # Agents of several architectures: lldb 23.1 adds a module of
        # another processor than the target's triple names (gfx90a code in
        # a gfx908-described target) only when given that module's triple.
        for arch in _state.get("archs", []):
            if mod.IsValid():
                break
            mod = gpu_t.AddModule(path, f"amdgpu-amd-amdhsa--{arch}", None)
        if not mod.IsValid():
            _log(f"cannot add GPU code object {path}")
            continue
        gpu_t.SetModuleLoadAddress(mod, addr)
        _state["loaded"][path] = addr
    present = {p for p, _ in cos}
    for path in list(_state["loaded"]):
        if path not in present:
            mod = gpu_t.FindModule(lldb.SBFileSpec(path))
            if mod.IsValid():
                gpu_t.ClearModuleLoadAddress(mod)
                gpu_t.RemoveModule(mod)
            del _state["loaded"][path]


def _gpu_breakpoints(dbg, pending):
    """Sets the pending CPU breakpoints on the GPU target (this takes the
    target's API lock). Returns the CPU breakpoints now set there."""
    _, gpu_t = _targets(dbg)
    carried = []
    for bp, (names, f, line), one_shot, cond, ignore in pending:
        if names:
            gbp = gpu_t.BreakpointCreateByNames(names, lldb.eFunctionNameTypeAuto, lldb.SBFileSpecList(), lldb.SBFileSpecList())
        else:
            gbp = gpu_t.BreakpointCreateByLocation(f, line)
        if gbp.GetNumLocations() > 0:
            gbp.SetOneShot(one_shot)
            if cond:
                gbp.SetCondition(cond)
            gbp.SetIgnoreCount(ignore)
            _state["copied"].add(bp.GetID())
            carried.append((bp, gbp.GetID()))
        else:
            gpu_t.BreakpointDelete(gbp.GetID())
    return carried


def sync_modules(dbg):
    """Both halves on one thread (the `gdbmux-sync` command)."""
    side = _cpu_side(dbg)
    if side is None:
        return False
    for bp, gid in _gpu_side(dbg, *side):
        _report_carried(bp, gid)
    return True


def _report_carried(bp, gid):
    bp.SetEnabled(False)
    _log(f"breakpoint {bp.GetID()} of the CPU target resolved in the GPU target as breakpoint {gid}")


def _async(dbg, fn):
    was = dbg.GetAsync()
    dbg.SetAsync(True)
    try:
        fn()
    finally:
        dbg.SetAsync(was)


def _run_on_in_background(dbg, cpu, gpu):
    """Runs the CPU on (gdbmux's notice: the GPU target was continued while
    the CPU was stopped with it) without touching the debugger's async
    flag: flipping it here raced with the command the user typed next,
    which then ran asynchronously and returned before its stop (a `thread
    step-over` in `lldb -b` left the GPU running). In synchronous lldb the
    continue blocks this worker thread until the CPU stops or exits."""

    if dbg.GetAsync():
        # Interactive lldb: asynchronous already, Continue returns at once
        # and the listener sees the CPU's events.
        cpu.Continue()
        return

    def work():
        cpu.Continue()
        st = cpu.GetState()
        _trace(f"background CPU continue ended in state {st}")
        with _state["lock"]:
            _state["cpu_bg"] = False
        _set_cpu_stopped(True)
        if st == lldb.eStateExited:
            # The CPU's exit is in (this worker took it): gdbmux held the GPU
            # process's end for this interrupt (_hold_exits), so a command
            # waiting on the GPU now ends after the CPU shows `exited`.
            # Lock-free: a command waiting on the GPU holds that target
            # (GetState would wait for it); lldb ignores the interrupt of a
            # process that has stopped or exited.
            _trace("background CPU continue took the exit in: interrupting the GPU for its held end")
            gpu.SendAsyncInterrupt()
        elif st == lldb.eStateStopped and not _all_stop_stop(cpu) and _stopped_on_its_own(cpu):
            # A CPU stop of its own (breakpoint, signal) while the user's
            # command waits on the GPU: end that wait. (The all-stop stop
            # was handled by the stop hook, in this thread.)
            _trace("background CPU stopped on its own: stopping the GPU with it")
            _join_cpu_stop(dbg, cpu, gpu)

    worker = threading.Thread(target=work, name="gdbmux-cpu-bg", daemon=True)
    _state["cpu_bg_thread"] = worker
    worker.start()


def _run_gpu_in_background(dbg, cpu, gpu):
    """Runs the GPU on (gdbmux's notice on the CPU connection: the CPU
    target was continued while it was stopped with a wave), the mirror of
    _run_on_in_background. In synchronous lldb the user's command waits on
    the CPU: a worker thread's blocking Continue takes the GPU's events in
    (they are hidden from the listener) and says when the GPU has stopped,
    for the stop hook of the next all-stop stop. When it takes the GPU's end
    in, it interrupts the CPU: gdbmux holds the CPU's end until then, so the
    user's command ends after both targets have exited."""
    _set_gpu_stopped(False)
    if dbg.GetAsync():
        # Interactive lldb: the listener sees the GPU's events. A stop the
        # GPU listener has not taken yet is older than this continue: the
        # marker queued behind it tells the listener so (finding 17).
        _mark_gpu_continue(gpu)
        gpu.Continue()
        return

    def work():
        gpu.Continue()
        st = gpu.GetState()
        _trace(f"background GPU continue ended in state {st}")
        with _state["lock"]:
            _state["gpu_run_by_helper"] = False
        if st == lldb.eStateStopped:
            _set_gpu_stopped(True)
        elif st in (lldb.eStateExited, lldb.eStateDetached):
            _trace("background GPU continue took the exit in: interrupting the CPU for its held end")
            cpu.SendAsyncInterrupt()

    worker = threading.Thread(target=work, name="gdbmux-gpu-bg", daemon=True)
    _state["gpu_bg_thread"] = worker
    worker.start()


def _mark_gpu_continue(gpu):
    """Queues a marker event on the GPU listener before the helper continues
    the GPU target: the listener takes events in order, so a stop it takes
    while a marker is pending was broadcast before that continue (finding
    17). Taken for the stop it is not, it cleared `gpu_run_by_helper`, and
    the GPU's exit after the continue then never released the CPU's held
    end (interactive lldb hung at the second `exited`)."""
    uid = gpu.GetUniqueID()
    marker = _state["gpu_markers"].get(uid)
    if marker is None:
        return
    with _state["lock"]:
        _state["gpu_markers_pending"][uid] = _state["gpu_markers_pending"].get(uid, 0) + 1
    marker.BroadcastEventByType(MARKER_BIT)


def _join_cpu_stop(dbg, cpu, gpu):
    """The CPU stopped on its own (a breakpoint, a signal) while the GPU
    target runs: gdbmux stops the GPU with a stop of its own that counts as
    stopped together with the CPU (`monitor gpu all-stop-gpu join`), so a
    later `process continue` of either target runs both (after an
    interrupt, the GPU's continue ran the GPU alone and waited for good).
    An older gdbmux: the GPU is interrupted."""
    res = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand(
        "process plugin packet monitor gpu all-stop-gpu join", lldb.SBExecutionContext(cpu), res, False
    )
    if "stops the GPU" not in (res.GetOutput() or ""):
        gpu.SendAsyncInterrupt()


def _stopped_on_its_own(cpu):
    return any(
        th.GetStopReason() not in (lldb.eStopReasonNone, lldb.eStopReasonInvalid)
        and not (th.GetStopReason() == lldb.eStopReasonSignal and th.GetStopReasonDataAtIndex(0) in (2, 19))
        for th in cpu
    )


def _all_stop_stop(cpu):
    """Whether the CPU's stop is the one gdbmux made for a wave stop."""
    return any(
        th.GetStopReason() == lldb.eStopReasonSignal and ALL_STOP_PREFIX in (th.GetStopDescription(512) or "")
        for th in cpu
    )


def _set_gpu_stopped(v):
    cond = _state["gpu_stopped"]
    with cond:
        _state["gpu_is_stopped"] = v
        cond.notify_all()


class AllStopHook:
    """Stop hook of the CPU target (`target stop-hook add -P`): lldb runs it
    on the thread that takes the CPU's stop in, also inside a synchronous
    command (docs/gpu-lldb.md, finding 14). At gdbmux's all-stop stop (a
    wave stopped):
    - the helper ran the CPU on (the user's command waits on the GPU):
      gdbmux holds the wave's stop until the GPU is interrupted, so the
      CPU's stop is in before the GPU's ends that command;
    - the user's command waits on the CPU: the wave's stop went out at
      once; the command ends once the GPU target has it (the listener
      thread takes it), so the next command sees both targets stopped.
    In interactive lldb the hook runs on lldb's event thread, which hands
    out the GPU's stop only after the hook: there it releases and returns."""

    def __init__(self, target, extra_args, internal_dict):
        self.target = target

    def handle_stop(self, exe_ctx, stream):
        if not _state["all_stop"]:
            return True
        if "amdgpu" in (self.target.GetTriple() or ""):
            return self._gpu_stop(exe_ctx)
        cpu = exe_ctx.GetProcess()
        if not _all_stop_stop(cpu):
            if _state["gpu_run_by_helper"] and _stopped_on_its_own(cpu):
                self._stop_gpu_with_cpu(cpu)
            return True
        dbg = _state["dbg"]
        _, gpu_t = _targets(dbg)
        if gpu_t is None:
            return True
        with _state["lock"]:
            _state["cpu_run_by_helper"] = False
        # gdbmux holds the wave's stop until the CPU's is in (whoever
        # ran the CPU): released on the CPU connection, not as an
        # interrupt of the GPU: lldb does not carry out a breakpoint's
        # actions (a one-shot one's deletion) at a stop it asked for
        # with an interrupt.
        res = lldb.SBCommandReturnObject()
        ctx = lldb.SBExecutionContext(cpu)
        dbg.GetCommandInterpreter().HandleCommand(
            "process plugin packet monitor gpu all-stop-release", ctx, res, False
        )
        _trace(f"all-stop: CPU stop taken in: released the GPU's held wave stop: {res.GetOutput()} {res.GetError()}")
        if threading.current_thread().name == "gdbmux-cpu-bg":
            # The user's synchronous command on the GPU takes its stop.
            _set_gpu_stopped(True)
            return True
        if dbg.GetAsync():
            # Interactive lldb: the hook runs on lldb's event thread, which
            # is also the GPU process's primary listener: lldb hands the
            # GPU's stop to the helper's listener (and prints it) only
            # after this hook returns, so waiting here for it only ran out
            # the bound (measured: the wave's stop showed GPU_STOP_WAIT_S
            # late). The event thread takes and prints the GPU's stop next.
            _trace("all-stop: CPU stop hook on lldb's event thread: the GPU's stop is printed after it")
            dbg.SetSelectedTarget(gpu_t)
            return True
        cond = _state["gpu_stopped"]
        with cond:
            ok = cond.wait_for(lambda: _state["gpu_is_stopped"], GPU_STOP_WAIT_S)
        _trace(f"all-stop: CPU stop hook: GPU stop taken: {ok}")
        dbg.SetSelectedTarget(gpu_t)
        first = _state.get("first_stop")
        if ok and first is not None:
            if first.get("text") is None:
                # The GPU's first run: lldb's event thread took this stop
                # in, and the stop hook has not formatted it (lldb ran no
                # stop hook for it): lldb prints it, the helper does not.
                return True
            _state["first_stop"] = None
            if first.get("stop_id") == gpu_t.GetProcess().GetStopID():
                # The GPU's first run (continued asynchronously): lldb's
                # event thread took this stop in and prints it now.
                # Formatting it here too ran two threads through lldb
                # 23.1's source display at once, which is not thread-safe
                # (finding 18): the GPU target's stop hook formatted it on
                # the event thread, before that thread's own print.
                if first["text"]:
                    stream.Print(f"GPU target (selected): {first['text']}")
                return True
            # Formatted for an earlier stop (the first one was not a wave's):
            # this one was taken in by a synchronous continue (below).
        if ok:
            # The command waited on the CPU, whose stop it prints; lldb prints
            # the GPU's on its event thread, at any time (in `lldb -b` after
            # later commands, or not at all when the GPU target was not yet
            # selected): the wave's stop goes with this command's output.
            # (This stop was taken in by a synchronous continue of the GPU,
            # the helper's worker: lldb's event thread never sees it.)
            th = gpu_t.GetProcess().GetSelectedThread()
            status = lldb.SBStream()
            if th.IsValid() and th.GetStatus(status):
                stream.Print(f"GPU target (selected): {status.GetData()}")
        return True


    def _stop_gpu_with_cpu(self, cpu):
        """The CPU stopped on its own (a breakpoint, a signal) while the GPU
        runs because the helper continued it on the CPU's continue: gdbmux
        stops the GPU with it (`monitor gpu all-stop-gpu join`), and a
        command waiting on the CPU ends once the helper's worker has that
        stop (else `target list` showed the GPU running, and `lldb -b` hung
        at its end: the worker's continue held the GPU target)."""
        dbg = _state["dbg"]
        _, gpu_t = _targets(dbg)
        if gpu_t is None:
            return
        _join_cpu_stop(dbg, cpu, gpu_t.GetProcess())
        worker = _state.get("gpu_bg_thread")
        _trace("all-stop: the CPU stopped on its own: stopping the GPU with it")
        if worker is None or not worker.is_alive() or dbg.GetAsync():
            return
        cond = _state["gpu_stopped"]
        with cond:
            ok = cond.wait_for(lambda: _state["gpu_is_stopped"], GPU_STOP_WAIT_S)
        _trace(f"all-stop: the GPU stopped with the CPU: {ok}")

    def _gpu_stop(self, exe_ctx):
        """The GPU target's stop (enabled only while a carry waits:
        _carry_at_all_stop, or for the GPU's first stop: _first_stop). On
        the thread that holds the GPU target: the breakpoints are set here."""
        first = _state.get("first_stop")
        if first is not None and first.get("text") is None:
            _first_stop(first, exe_ctx, self.target)
        carry = _state.get("carry")
        if carry is None or not _all_stop_stop(exe_ctx.GetProcess()):
            return True
        _state["carry"] = None
        dbg = _state["dbg"]
        _trace(f"all-stop: GPU stop hook (async {dbg.GetAsync()})")
        carry["carried"].extend(_gpu_breakpoints(dbg, carry["pending"]))
        _gpu_hook(dbg, self.target, "disable")
        carry["done"].set()
        _trace(f"all-stop: GPU stop hook set {len(carry['carried'])} carried breakpoints (async {dbg.GetAsync()})")
        if threading.current_thread().name == "gdbmux-gpu-bg":
            return True
        # The user's command waits on the GPU (a carry happens only under a
        # synchronous command; the debugger's async flag reads true inside
        # a stop hook, measured, so it cannot tell); the helper's worker
        # runs the CPU, which gdbmux stops as it leaves the loader hook: the
        # command ends once that stop is in.
        cond = _state["cpu_stopped"]
        with cond:
            ok = cond.wait_for(lambda: _state["cpu_is_stopped"], GPU_STOP_WAIT_S)
        _trace(f"all-stop: GPU stop hook: CPU stop taken: {ok}")
        return True


def _first_stop(first, exe_ctx, gpu_t):
    """The GPU's first stop, in the GPU target's stop hook: formats it for
    the CPU stop hook to print (`GPU target (selected): ...`). The GPU's
    first run is continued asynchronously (the loader hook's callback runs
    with the debugger's async flag on), so lldb's event thread takes this
    stop in and, the GPU target selected, prints it with its source lines.
    lldb 23.1's source display has no lock (`SourceManager` and its file
    cache: two threads in `SourceManager::File::CalculateLineOffsets` on one
    file aborted lldb with std::bad_alloc, crashed it in malloc, or listed
    the wrong lines; finding 18). A stop hook runs on the thread that takes
    the stop in, before that thread prints it: formatted here, the two
    passes over the source run one after the other. The hook is disabled
    again: it runs only for this stop."""
    th = exe_ctx.GetThread()
    status = lldb.SBStream()
    first["stop_id"] = exe_ctx.GetProcess().GetStopID()
    first["text"] = status.GetData() if th.IsValid() and th.GetStatus(status) else ""
    _gpu_hook(_state["dbg"], gpu_t, "disable")
    _trace(f"first GPU stop formatted in the GPU stop hook on {threading.current_thread().name}")


def _hold_exits(dbg, cpu_t):
    """Tells gdbmux (once) that this helper interrupts the GPU process once
    it has taken the CPU's exit in (docs/gpu-lldb.md, finding 12). lldb
    23.1 takes each target's exit in on its own thread: after a wave stop
    the CPU's in the worker of _run_on_in_background (or this module's CPU
    listener), the GPU's in the command waiting on it, so `target list`
    right after the end could show the CPU `state=running`. gdbmux then
    holds the GPU process's end, when the CPU was run on from a wave stop,
    until that interrupt. Asked from the loader hook, where the CPU is
    stopped and no other command runs."""
    if _state.get("holds_exits"):
        return
    res = lldb.SBCommandReturnObject()
    ctx = lldb.SBExecutionContext(cpu_t.GetProcess())
    dbg.GetCommandInterpreter().HandleCommand("process plugin packet monitor gpu hold-exit", ctx, res, False)
    _state["holds_exits"] = res.Succeeded()
    _trace(f"hold-exit announced: {res.Succeeded()}")
    res = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand("process plugin packet monitor gpu all-stop", ctx, res, False)
    _state["all_stop"] = res.Succeeded() and "all-stop across" in (res.GetOutput() or "")
    _trace(f"all-stop announced: {_state['all_stop']}")
    if _state["all_stop"]:
        # The stop hook of the CPU target (the selected target gets it: the
        # GPU target may be selected by now). Only from here on: a stop hook
        # makes lldb ask every stop's threads for their stop info, one more
        # packet at each stop before the GPU is up.
        was = dbg.GetSelectedTarget()
        dbg.SetSelectedTarget(cpu_t)
        res = lldb.SBCommandReturnObject()
        dbg.GetCommandInterpreter().HandleCommand("target stop-hook add -P gdbmux_lldb.AllStopHook", res)
        _trace(f"all-stop stop hook: {res.GetOutput()} {res.GetError()}")
        # The GPU target's, disabled: enabled only while breakpoints wait
        # for it (_carry_at_all_stop). An active stop hook makes lldb look
        # at every thread's stop info at each stop (every wave).
        _, gpu_t = _targets(dbg)
        if gpu_t is not None:
            # In the GPU target's context: this runs in the loader hook's
            # callback, whose context (the CPU's) commands take otherwise.
            dbg.SetSelectedTarget(gpu_t)
            res = lldb.SBCommandReturnObject()
            dbg.GetCommandInterpreter().HandleCommand(
                "target stop-hook add -P gdbmux_lldb.AllStopHook", lldb.SBExecutionContext(gpu_t), res, False
            )
            m = re.search(r"#(\d+)", res.GetOutput() or "")
            if m:
                _state["gpu_hook_id"] = m.group(1)
                _gpu_hook(dbg, gpu_t, "disable")
            _trace(f"all-stop GPU stop hook: {_state['gpu_hook_id']} {res.GetOutput()} {res.GetError()}")
        dbg.SetSelectedTarget(was)


def _on_destroy(debugger_id, *_):
    """lldb is quitting (the end of `lldb -b`, or `quit`). The background
    CPU continue above holds the CPU target until the process stops or
    exits, and lldb's teardown of that target waits on it: when `lldb -b`
    ended within milliseconds of the program's exit, before the worker had
    taken the CPU's exit in, lldb sent an interrupt for a process already
    gone and hung for good (seen under load, gdbmux's packet log). So the
    worker finishes first: it takes the exit in, or an interrupt ends it."""
    gpu_worker = _state.get("gpu_bg_thread")
    if gpu_worker is not None and gpu_worker.is_alive() and _state["dbg"] is not None:
        # The helper's GPU continue (finding 15) holds the GPU target, which
        # lldb's teardown waits for: it ends at the GPU's stop.
        _, gpu_t = _targets(_state["dbg"])
        if gpu_t is not None:
            _trace("lldb quitting: interrupting the background GPU continue")
            gpu_t.GetProcess().SendAsyncInterrupt()
            gpu_worker.join(10.0)
    worker = _state.get("cpu_bg_thread")
    if worker is None or not worker.is_alive():
        return
    dbg = _state["dbg"]
    cpu_t, gpu_t = _targets(dbg) if dbg is not None else (None, None)
    gpu_gone = gpu_t is None or gpu_t.GetProcess().GetState() in (
        lldb.eStateExited,
        lldb.eStateDetached,
        lldb.eStateInvalid,
    )
    if gpu_gone:
        # The program has ended: the CPU's exit is on its way to the worker.
        _trace("lldb quitting: waiting for the background CPU continue to take the exit in")
        worker.join(10.0)
    # A CPU still running (the user quit mid-program): lldb's teardown
    # interrupts it itself; only a worker stuck past the wait needs one here.
    if gpu_gone and worker.is_alive() and cpu_t is not None:
        _trace("lldb quitting: interrupting the background CPU continue")
        cpu_t.GetProcess().SendAsyncInterrupt()
        worker.join(10.0)


def _is_real_gpu_stop(gpu):
    for th in gpu:
        if th.GetStopReason() not in (lldb.eStopReasonNone, lldb.eStopReasonInvalid, lldb.eStopReasonSignal):
            return True
    return False


def _watch(dbg, proc, role):
    """A listener thread on `proc`'s state changes (and, on the GPU, gdbmux's
    notices) keeping the targets in step."""
    uid = proc.GetUniqueID()
    with _state["lock"]:
        if uid in _state["watching"]:
            return
        _state["watching"].add(uid)
    listener = lldb.SBListener(f"gdbmux-{role}")
    # gdbmux's notices come as asynchronous profile data: not hijacked by a
    # synchronous command (it takes state changes only), and printed by no
    # one.
    mask = lldb.SBProcess.eBroadcastBitStateChanged | lldb.SBProcess.eBroadcastBitProfileData
    listener.StartListeningForEvents(proc.GetBroadcaster(), mask)
    marker = None
    if role == "gpu":
        marker = lldb.SBBroadcaster(f"gdbmux-gpu-continue-{uid}")
        listener.StartListeningForEvents(marker, MARKER_BIT)
        with _state["lock"]:
            _state["gpu_markers"][uid] = marker

    def notice(ev, p):
        data = ""
        while True:
            chunk = p.GetAsyncProfileData(4096)
            if not chunk:
                break
            data += chunk
        if role == "cpu" and RUN_GPU_NOTICE in data:
            _, gpu_t = _targets(dbg)
            if gpu_t is None:
                return
            gpu = gpu_t.GetProcess()
            with _state["lock"]:
                if gpu.GetState() != lldb.eStateStopped:
                    _trace(f"notice: run the GPU, which is in state {gpu.GetState()}")
                    return
                _trace("notice: the CPU was continued: running the GPU on")
                _state["gpu_run_by_helper"] = True
            _run_gpu_in_background(dbg, p, gpu)
            return
        if role != "gpu" or RUN_CPU_NOTICE not in data:
            return
        gpu_p = p
        cpu_t, _ = _targets(dbg)
        if cpu_t is None:
            return
        cpu = cpu_t.GetProcess()
        _set_gpu_stopped(False)
        with _state["lock"]:
            if cpu.GetState() != lldb.eStateStopped:
                _trace(f"notice: run the CPU, which is in state {cpu.GetState()}")
                return
            _trace("notice: the GPU was continued: running the CPU on")
            _state["cpu_run_by_helper"] = True
            _state["cpu_bg"] = True
        _run_on_in_background(dbg, cpu, gpu_p)

    def run():
        ev = lldb.SBEvent()
        while True:
            if not listener.WaitForEvent(3600, ev):
                continue
            if marker is not None and ev.BroadcasterMatchesRef(marker):
                with _state["lock"]:
                    _state["gpu_markers_pending"][uid] -= 1
                _trace("gpu continue marker taken")
                continue
            if not lldb.SBProcess.EventIsProcessEvent(ev):
                _trace(f"{role} other event {ev.GetType()}")
                continue
            if ev.GetType() & lldb.SBProcess.eBroadcastBitProfileData:
                _trace(f"{role} profile data event")
                notice(ev, lldb.SBProcess.GetProcessFromEvent(ev))
                continue
            st = lldb.SBProcess.GetStateFromEvent(ev)
            _trace(f"{role} event state {st} restarted {lldb.SBProcess.GetRestartedFromEvent(ev)}")
            if lldb.SBProcess.GetRestartedFromEvent(ev):
                continue
            if role == "gpu" and st == lldb.eStateStopped:
                with _state["lock"]:
                    stale = _state["gpu_markers_pending"].get(uid, 0) > 0
                if stale:
                    # Broadcast before a continue of the helper's: that
                    # continue's own stop or exit follows the marker.
                    _trace("gpu stop older than the helper's continue: left alone")
                    continue
            if role == "gpu":
                if st == lldb.eStateStopped:
                    # The GPU target is where the user is; selected before a
                    # CPU stop hook waiting for this stop lets the command
                    # end (selected after, it overrode a `target select 0`
                    # typed next, and that `process continue` went to the GPU).
                    dbg.SetSelectedTarget(proc.GetTarget())
                # Then, before any call that may wait on the CPU target: a
                # CPU stop hook may wait for this (AllStopHook).
                _set_gpu_stopped(st == lldb.eStateStopped)
            cpu_t, gpu_t = _targets(dbg)
            if cpu_t is None or gpu_t is None:
                continue
            cpu, gpu = cpu_t.GetProcess(), gpu_t.GetProcess()
            # While a command runs on the CPU target (a synchronous
            # `process continue`), lldb holds that target's API lock: only
            # lock-free calls (SendAsyncInterrupt) may touch the CPU then.
            with _state["lock"]:
                if role == "cpu" and st != lldb.eStateRunning:
                    _state["cpu_bg"] = False
                if role == "cpu" and st == lldb.eStateExited:
                    # The CPU's exit is in (asynchronous lldb): gdbmux may
                    # hold the GPU's end for this interrupt (_hold_exits).
                    _trace("cpu exited: interrupting the GPU for its held end")
                    gpu.SendAsyncInterrupt()
                elif role == "gpu" and st == lldb.eStateExited and _state["gpu_run_by_helper"]:
                    # The GPU's end is in (asynchronous lldb), the GPU having
                    # been run on the CPU's continue: gdbmux holds the CPU's
                    # end for this interrupt (_run_gpu_in_background).
                    _state["gpu_run_by_helper"] = False
                    _trace("gpu exited: interrupting the CPU for its held end")
                    cpu.SendAsyncInterrupt()
                elif role == "gpu" and st == lldb.eStateStopped:
                    # (The GPU target was selected above, before the stop
                    # was announced: selected here, after, it raced with a
                    # `target select 0` typed next.)
                    _state["gpu_run_by_helper"] = False
                elif (
                    role == "cpu"
                    and st == lldb.eStateStopped
                    and not lldb.SBProcess.GetInterruptedFromEvent(ev)
                    and not _all_stop_stop(cpu)
                    and _stopped_on_its_own(cpu)
                ):
                    # A CPU stop of its own (breakpoint, signal) while a
                    # command may wait on the GPU: end that wait. Decided
                    # on the stop the CPU shows now, not on the event: this
                    # thread may take an event late (interactive lldb on a
                    # loaded machine), e.g. the all-stop stop of a wave
                    # after the user's `process continue` of the GPU had
                    # the helper run the CPU on. A running process shows no
                    # threads, so a negative test (`not _all_stop_stop`)
                    # took that stale stop for one of the CPU's own and
                    # interrupted the GPU's continue: its next wave stop
                    # never showed.
                    _trace("cpu stopped: stopping the GPU with it")
                    _join_cpu_stop(dbg, cpu, gpu)
                elif role == "cpu" and st == lldb.eStateStopped:
                    _trace("cpu stop event: not a stop of its own now (taken late, or the all-stop stop)")
                if st in (lldb.eStateExited, lldb.eStateDetached):
                    return

    threading.Thread(target=run, name=f"gdbmux-{role}", daemon=True).start()


def loader_hook(frame, bp_loc, extra_args, internal_dict):
    """CPU breakpoint callback on the runtime's loader hook: never stops.

    The GPU target is updated on a worker thread that holds the GPU
    target's API lock (`SBTarget.GetAPIMutex`, lldb 21 and later) for the
    whole update, so no call of it can wait half-way. Whether a command
    holds that lock, and for how long, is known without waiting
    (docs/gpu-lldb.md, finding 4):
    - `SBMutex.try_lock` succeeds: nobody holds it; the update runs.
    - It fails and this callback runs on the helper's own CPU worker
      (`gdbmux-cpu-bg`): the CPU runs because the user continued the GPU
      target in synchronous lldb (all-stop's notice), so that command holds
      the GPU target until the GPU stops. Modules are updated without the
      lock (those calls do not take it); breakpoints to set need it: then
      the GPU process is interrupted (lock-free) so that the command ends,
      and the update runs once it has.
    - It fails otherwise: a short holder (another helper thread, a command
      typed meanwhile in asynchronous lldb); the update waits for it.
    The CPU stays at the hook until the update is done, so breakpoints are
    in place before the new code runs."""
    dbg = _state["dbg"] or lldb.debugger
    # In synchronous lldb (`lldb -b`) the CPU's stop is taken in, and this
    # callback run, on lldb's main thread (the command waits there); in
    # asynchronous lldb on lldb's event thread. (The debugger's async flag
    # cannot tell: lldb sets it around every breakpoint callback.)
    sync = threading.current_thread() is threading.main_thread()
    side = _cpu_side(dbg)
    if side is None:
        return False
    cos, pending = side
    if not pending and all(_state["loaded"].get(p) == a for p, a in cos):
        # Only unloads (the program's end, a module unload): nothing new
        # to resolve, so the GPU target is left as it is until the next
        # change (stale modules are removed then). Updating it now would
        # interrupt a `process continue` waiting on the GPU for nothing.
        _trace("loader hook: only unloads, the GPU target's modules are updated later")
        return False
    _, gpu_t = _targets(dbg)
    lock = gpu_t.GetAPIMutex()
    held = not lock.try_lock()
    if not held:
        lock.unlock()
    by_command = held and threading.current_thread().name == "gdbmux-cpu-bg"
    gpu_worker = _state.get("gpu_bg_thread")
    # The helper's own GPU continue (the user continued the CPU target at a
    # wave stop) holds the lock until the GPU stops.
    by_gpu_worker = held and gpu_worker is not None and gpu_worker.is_alive()
    if by_command or by_gpu_worker:
        if not any(_state["loaded"].get(p) != a for p, a in cos):
            # Nothing new to resolve breakpoints in (an unload while the
            # breakpoints of a later code object wait): the modules only.
            _gpu_modules(dbg, cos)
            _trace("loader hook: a command holds the GPU target and no code object is new: modules only")
            return False
        if pending and _state.get("gpu_hook_id") and _carry_at_all_stop(dbg, cos, pending):
            return False
    # Adding, moving and removing modules does not take the target's API
    # lock (measured: `stub/tests/gpu_reload.rs` reloads a code object while
    # `process continue` waits on the GPU); creating breakpoints does.
    interrupt = by_command and bool(pending)
    locked = not by_command or interrupt
    _trace(f"loader hook: updating the GPU target (lock held: {held}, by the user's command: {by_command}, "
           f"interrupt: {interrupt})")
    if interrupt:
        _log("GPU breakpoints to set while the GPU target ran: it stops to take them "
             "(stock lldb 23.1 waits for a running target's command); `process continue` runs on")
        gpu_t.GetProcess().SendAsyncInterrupt()
    done = threading.Event()
    carried = []

    def work():
        if locked:
            lock.lock()
        try:
            carried.extend(_gpu_side(dbg, *side))
            cpu_t, gpu_t2 = _targets(dbg)
            _watch(dbg, cpu_t.GetProcess(), "cpu")
            _watch(dbg, gpu_t2.GetProcess(), "gpu")
            gpu = gpu_t2.GetProcess()
            if (
                _state["loaded"]
                and not _state["gpu_started"]
                and gpu.GetState() == lldb.eStateStopped
                and not _is_real_gpu_stop(gpu)
            ):
                # The GPU target stops after its connection; run it with
                # the CPU once there is code to run. Only that first time:
                # a GPU stopped later for an update (above) waits for the
                # user's `process continue`; continuing it here raced with
                # that command ("Process is running").
                _state["gpu_started"] = True
                _set_gpu_stopped(False)
                if sync and _state.get("gpu_hook_id"):
                    # Its first stop goes to lldb's event thread, which prints
                    # it: the GPU target's stop hook formats it there
                    # (_first_stop; enabled below, on the callback's thread).
                    _state["first_stop"] = {"text": None}
                _async(dbg, gpu.Continue)
        finally:
            if locked:
                lock.unlock()
            done.set()

    started = time.monotonic()
    threading.Thread(target=work, name="gdbmux-loader", daemon=True).start()
    done.wait()
    _trace(f"loader hook: update done after {time.monotonic() - started:.3f} s")
    first = _state.get("first_stop")
    if first is not None and first.get("text") is None and not first.get("armed"):
        # The GPU's first run has begun: no wave runs before the CPU leaves
        # this hook (nothing was dispatched before the first code object),
        # so the stop hook is on before the GPU's first stop.
        first["armed"] = True
        _gpu_hook(dbg, gpu_t, "enable")
    for bp, gid in carried:
        _report_carried(bp, gid)
    return False


def _carry_at_all_stop(dbg, cos, pending):
    """A code object with breakpoints to carry over loaded while a
    synchronous command holds the GPU target (the user's `process continue`
    of the GPU target, or the helper's of the CPU's): all-stop covers it
    (docs/gpu-lldb.md, finding 16). gdbmux stops the GPU target with a stop
    of its own (`monitor gpu all-stop-gpu`: not an lldb interrupt, at which
    lldb runs no stop hook) and the CPU at its next continue. The GPU
    target's stop hook runs on the thread that holds the GPU target and sets
    the breakpoints there; this callback (the CPU stays at the loader hook)
    waits for them. A user's command that waits on the GPU ends once the
    CPU's stop is in too (the stop hook waits for it). Returns False when
    gdbmux does not do it (an older gdbmux)."""
    cpu_t, gpu_t = _targets(dbg)
    _gpu_modules(dbg, cos)
    carry = {"pending": pending, "done": threading.Event(), "carried": []}
    _state["carry"] = carry
    _set_cpu_stopped(False)
    ctx = lldb.SBExecutionContext(cpu_t.GetProcess())
    interp = dbg.GetCommandInterpreter()
    _gpu_hook(dbg, gpu_t, "enable")
    res = lldb.SBCommandReturnObject()
    interp.HandleCommand("process plugin packet monitor gpu all-stop-gpu", ctx, res, False)
    if "stops the GPU" not in (res.GetOutput() or ""):
        _trace(f"all-stop-gpu refused: {res.GetOutput()} {res.GetError()}")
        _state["carry"] = None
        _gpu_hook(dbg, gpu_t, "disable")
        return False
    _log("a GPU code object loaded while the GPU target ran: both targets stop to set its "
         "breakpoints (all-stop); `process continue` runs on")
    ok = carry["done"].wait(GPU_STOP_WAIT_S)
    _trace(f"loader hook: breakpoints carried at the GPU's all-stop stop: {ok}")
    for bp, gid in carry["carried"]:
        _report_carried(bp, gid)
    return True


def _gpu_hook(dbg, gpu_t, verb):
    """Enables or disables the GPU target's stop hook (the command acts on
    the selected target)."""
    was = dbg.GetSelectedTarget()
    dbg.SetSelectedTarget(gpu_t)
    res = lldb.SBCommandReturnObject()
    dbg.GetCommandInterpreter().HandleCommand(
        f"target stop-hook {verb} {_state['gpu_hook_id']}", lldb.SBExecutionContext(gpu_t), res, False
    )
    dbg.SetSelectedTarget(was)
    _trace(f"GPU stop hook {verb}: {res.Succeeded()} {res.GetError()}")


def _set_cpu_stopped(v):
    cond = _state["cpu_stopped"]
    with cond:
        _state["cpu_is_stopped"] = v
        cond.notify_all()


def _arm(dbg, target):
    for name in HOOKS:
        bp = target.BreakpointCreateByName(name)
        bp.SetScriptCallbackFunction("gdbmux_lldb.loader_hook")
        bp.SetAutoContinue(True)
        bp.AddName("gdbmux-loader-hook")


def gdbmux_sync(debugger, command, result, internal_dict):
    """gdbmux-sync: re-read the GPU code objects now."""
    if not sync_modules(debugger):
        result.PutCString("gdbmux: no GPU target yet")


def __lldb_init_module(debugger, internal_dict):
    _state["dbg"] = debugger
    debugger.AddDestroyCallback(_on_destroy)
    debugger.HandleCommand("settings set stop-disassembly-display never")
    # Fast stepping disassembles the line range to find branches, which
    # aborts stock 23.1 on AMDGPU; stepping by instructions needs none.
    # `-g`: the global value, which the GPU target (created later) takes;
    # without it only the selected (CPU) target changed, and a `thread
    # step-over` on a wave aborted lldb in LLVM's AMDGPU disassembler.
    debugger.HandleCommand("settings set -g target.use-fast-stepping false")
    debugger.HandleCommand("settings set target.use-fast-stepping false")
    debugger.HandleCommand("command script add -f gdbmux_lldb.gdbmux_sync gdbmux-sync")
    cpu_t, _ = _targets(debugger)
    if cpu_t is None:
        # No target yet: prime the dummy target, which seeds every new one.
        dummy = debugger.GetDummyTarget()
        _arm(debugger, dummy)
    else:
        _arm(debugger, cpu_t)
