//! [`LinuxProcess`]: one traced Linux process, all-stop (non-stop mode,
//! where threads stop and resume one by one, is in `process/nonstop.rs`).
//!
//! # Event model
//!
//! `resume` starts threads and returns. The loop calls `process_events`
//! whenever the SIGCHLD signalfd is readable; it collects statuses with
//! `waitpid(tid, WNOHANG | __WALL)` on each of *our* threads (never
//! `waitpid(-1)`: several processes coexist). Statuses that are not
//! reportable (clone/fork/exec bookkeeping, our own SIGSTOPs, passed
//! signals, range-step progress) resume the thread again. The first
//! reportable stop moves the process to *stopping*: every other running
//! thread gets a SIGSTOP, and once all threads are stopped exactly one
//! [`StopEvent`] is returned. Other threads' reportable stops collected
//! meanwhile stay *pending* and are reported on a later resume instead of
//! resuming the thread.
//!
//! When a resume finds such a pending stop (or `kill` has reaped the
//! process), nothing in the kernel changes state, so no SIGCHLD would come:
//! the process raises SIGCHLD on the loop thread itself (it is blocked, so
//! it only makes the signalfd readable) and the next `process_events`
//! returns the stored event. The loop therefore needs no special case.

use std::collections::VecDeque;
use std::marker::PhantomData;

use nix::errno::Errno;

use super::breakpoints::Owner;
use super::breakpoints::SwBreakpoints;
use super::errors::terr;
use super::hwdebug;
use super::hwdebug::HwDebug;
use super::hwdebug::HwError;
use super::memory::Memory;
use super::procfs;
use super::ptrace;
use super::ptrace::event;
use super::ptrace::RawTid;
use super::ptrace::WaitStatus;
use super::sigchld::raise_sigchld;
use super::svr4;
use super::thread::PendingStop;
use super::thread::Thread;
use super::x86_64;
use super::x86_64::RegTable;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::ArchInfo;
use crate::target::BreakpointKind;
use crate::target::MemoryRegion;
use crate::target::Pid;
use crate::target::ProcessInfo;
use crate::target::RegisterInfo;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::Target;
use crate::target::TargetError;
use crate::target::TargetResult;
use crate::target::Tid;

mod nonstop;

const SIGTRAP: i32 = libc::SIGTRAP;
const SIGSTOP: i32 = libc::SIGSTOP;
/// `si_code` of an `int3` trap.
const SI_KERNEL: i32 = 0x80;
/// `si_code` of a single-step trap.
const TRAP_TRACE: i32 = 2;
/// Running threads in a row without a status after which a stopping
/// process's in-order collection ([`LinuxProcess::collect_stop_window`])
/// gives way to one `waitid(P_ALL)` walk.
const STOP_WINDOW: usize = 8;

/// ptrace options for every traced thread (`EXITKILL` is added for
/// processes we launched). `TRACEEXIT` is deliberately not set: it would
/// add one more stop per thread exit that we have no use for.
pub(crate) const BASE_OPTIONS: libc::c_int = libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACEVFORKDONE
    // Syscall-stops (only with PTRACE_SYSCALL, i.e. QCatchSyscalls) are
    // told apart from a SIGTRAP.
    | libc::PTRACE_O_TRACESYSGOOD;

/// A step over a breakpoint whose condition was false, in all-stop mode,
/// done as gdbserver does it (`start_step_over`): the other threads are
/// stopped first and stay stopped until the stepping thread is past the
/// breakpoint, so none of them runs through its address while its
/// original byte is back in memory. Threads that stop meanwhile are
/// "held": [`LinuxProcess::keeps_running`] is false for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StepOverHold {
    /// The thread stepping over the breakpoint.
    tid: RawTid,
    /// The breakpoint's address.
    addr: u64,
    /// The single step is under way (the breakpoint is lifted).
    stepping: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Every thread is stopped; the last event was reported.
    Stopped,
    /// Threads run; no reportable stop yet.
    Running,
    /// A reportable stop is pending; waiting for the other threads to stop.
    Stopping,
    /// Exited, killed or detached.
    Gone,
}

/// A traced Linux process. Not `Send`: ptrace requests must come from the
/// tracer thread.
pub struct LinuxProcess {
    pid: RawTid,
    threads: Vec<Thread>,
    state: State,
    ready: VecDeque<StopEvent>,
    mem: Memory,
    bps: SwBreakpoints,
    hw: HwDebug,
    table: RegTable,
    arch: ArchInfo,
    attached: bool,
    pass: [bool; 65],
    report_forks: bool,
    report_exec: bool,
    /// `QCatchSyscalls`: the numbers to report (empty = all); `None` = off
    /// (threads run with PTRACE_CONT, no syscall-stops at all).
    catch_syscalls: Option<Vec<u64>>,
    /// Target-side breakpoint conditions ([`super::condbp`]).
    conds: super::condbp::Conditions,
    fork_children: Vec<LinuxProcess>,
    vfork_suspends: u32,
    /// All-stop step-over of a breakpoint whose condition was false
    /// ([`StepOverHold`]).
    hold: Option<StepOverHold>,
    seq: u64,
    exe: Option<String>,
    /// Non-stop mode (`QNonStop:1`): threads stop and resume one by one
    /// (`process/nonstop.rs`).
    nonstop: bool,
    _not_send: PhantomData<*const ()>,
}

impl LinuxProcess {
    /// Wrap a process whose threads are all ptrace-stopped.
    pub(crate) fn from_stopped(pid: RawTid, threads: Vec<Thread>, attached: bool) -> Self {
        // gdbserver describes the registers of the XSAVE components the
        // kernel enables for the inferior (its XCR0 word).
        let xfeatures = x86_64::XFeatures::of_thread(threads.first().map_or(pid, |t| t.tid));
        LinuxProcess {
            pid,
            threads,
            state: State::Stopped,
            ready: VecDeque::new(),
            mem: Memory::new(pid),
            bps: SwBreakpoints::default(),
            hw: HwDebug::default(),
            table: x86_64::register_table(xfeatures),
            arch: x86_64::arch_info(),
            attached,
            pass: [false; 65],
            report_forks: false,
            report_exec: false,
            catch_syscalls: None,
            conds: Default::default(),
            fork_children: Vec::new(),
            vfork_suspends: 0,
            hold: None,
            seq: 0,
            exe: procfs::exe(pid as Pid),
            nonstop: false,
            _not_send: PhantomData,
        }
    }

    fn idx(&self, tid: RawTid) -> Option<usize> {
        self.threads.iter().position(|t| t.tid == tid)
    }

    fn stopped_idx(&self, tid: Tid) -> TargetResult<usize> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(tid));
        }
        let i = self
            .idx(tid as RawTid)
            .ok_or(TargetError::NoSuchThread(tid))?;
        if self.threads[i].running {
            return Err(TargetError::Running);
        }
        Ok(i)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Whether the client single-steps thread `i` (`vCont;s`, `vCont;r`).
    /// A signal it passes silently (`QPassSignals`) is reported for such a
    /// thread all the same, as gdbserver does (linux-low.cc `linux_wait_1`
    /// ignores a passed signal only when the thread's `last_resume_kind`
    /// is not `resume_step`): gdb then steps over the handler itself (a
    /// step-resume breakpoint, or the relocation of a displaced step's
    /// pc). Stepping into the handler silently instead ends the step at
    /// the handler's first instruction, which gdb takes for the end of a
    /// displaced step's copied instruction.
    fn client_steps(&self, i: usize) -> bool {
        matches!(
            self.threads[i].action,
            ResumeAction::Step(_) | ResumeAction::RangeStep { .. }
        )
    }

    /// Start (or restart) thread `i` with its current action.
    fn run_thread(&mut self, i: usize) {
        let gen = self.hw.generation;
        let catching = self.catch_syscalls.is_some();
        let t = &mut self.threads[i];
        if t.dr_generation != gen {
            match self.hw.apply(t.tid) {
                Ok(()) => t.dr_generation = gen,
                Err(e) => tracing::warn!(target: "native", "debug registers of {}: {e}", t.tid),
            }
        }
        t.regs.invalidate();
        t.attach_signal = None;
        t.removed.clear();
        let (step, sig) = match t.action {
            ResumeAction::Continue(s) => {
                t.action = ResumeAction::Continue(None);
                (false, s)
            }
            ResumeAction::Step(s) => {
                t.action = ResumeAction::Step(None);
                (true, s)
            }
            ResumeAction::RangeStep { .. } => (true, None),
            ResumeAction::Stop => return,
        };
        let sig = sig
            .or(t.deliver.take())
            .or(t.held_passed.take())
            .unwrap_or(0);
        tracing::trace!(target: "native", "run {} step={step} sig={sig}", t.tid);
        let r = if step {
            ptrace::step(t.tid, sig)
        } else if catching {
            ptrace::syscall(t.tid, sig)
        } else {
            ptrace::cont(t.tid, sig)
        };
        // Even on ESRCH the thread is "running": its death will be reaped.
        t.running = true;
        if let Err(e) = r {
            tracing::debug!(target: "native", "resume {}: {e}", t.tid);
            raise_sigchld();
        }
    }

    /// A non-reportable stop was handled: keep the thread going if the
    /// process is running.
    fn quiet(&mut self, i: usize) {
        if self.keeps_running(i) {
            self.run_thread(i);
        }
    }

    /// A crash signal's stop carries lldb-server's fault description
    /// ([`super::fault`]); any other signal is a plain signal stop.
    fn signal_stop_kind(&self, i: usize, sig: i32) -> StopKind {
        if !matches!(
            sig,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
        ) {
            return StopKind::Signal;
        }
        match ptrace::get_siginfo(self.threads[i].tid)
            .ok()
            .and_then(|info| super::fault::lldb_description(&info))
        {
            Some(description) => StopKind::Fault { description },
            None => StopKind::Signal,
        }
    }

    fn set_pending(&mut self, i: usize, signal: i32, kind: StopKind) {
        if self.nonstop {
            self.ns_report(i, signal, kind);
            return;
        }
        let seq = self.next_seq();
        tracing::debug!(target: "native", "thread {} stop pending: {kind:?} sig {signal}", self.threads[i].tid);
        self.threads[i].pending = Some(PendingStop { signal, kind, seq });
        if self.state == State::Running {
            self.begin_stop();
        }
    }

    /// Send SIGSTOP to every running thread that is not already expecting
    /// one.
    fn begin_stop(&mut self) {
        self.state = State::Stopping;
        let pid = self.pid;
        for t in &mut self.threads {
            if t.running && !t.sigstop_expected {
                match ptrace::tgkill(pid, t.tid, SIGSTOP) {
                    Ok(()) => t.sigstop_expected = true,
                    Err(e) => tracing::debug!(target: "native", "tgkill {}: {e}", t.tid),
                }
            }
            // A zombie leader (it called pthread_exit) never stops; its exit
            // is reported with the whole group.
            if t.running && t.tid == pid && procfs::is_zombie(pid as Pid, pid as Tid) {
                t.running = false;
            }
        }
    }

    /// All threads stopped: pick the oldest pending stop of a thread the
    /// client resumed and report it. A thread the client left stopped
    /// (`vCont` without an action for it) keeps its stop for later: gdb
    /// asserts on a stop of a thread it did not resume (infrun.c,
    /// finish_step_over). Only when no resumed thread has one is another
    /// thread's stop reported.
    fn finalize(&mut self) -> Option<StopEvent> {
        let oldest = |resumed_only: bool| {
            self.threads
                .iter()
                .enumerate()
                .filter(|(_, t)| !resumed_only || t.action != ResumeAction::Stop)
                .filter_map(|(i, t)| t.pending.as_ref().map(|p| (p.seq, i)))
                .min()
                .map(|(_, i)| i)
        };
        let i = oldest(true).or_else(|| oldest(false))?;
        let p = self.threads[i].pending.take()?;
        // Any stop satisfies an interrupt request.
        for t in &mut self.threads {
            t.interrupt = false;
            if matches!(
                t.pending,
                Some(PendingStop {
                    kind: StopKind::Interrupt,
                    ..
                })
            ) {
                t.pending = None;
            }
        }
        let tid = self.threads[i].tid;
        if let ResumeAction::RangeStep { .. } = self.threads[i].action {
            self.threads[i].action = ResumeAction::Continue(None);
        }
        self.state = State::Stopped;
        tracing::debug!(target: "native", "stop: thread {tid} {:?} sig {}", p.kind, p.signal);
        Some(StopEvent::Stopped {
            pid: self.pid as Pid,
            tid: tid as Tid,
            signal: p.signal,
            kind: p.kind,
        })
    }

    fn process_gone(&mut self, st: WaitStatus) -> StopEvent {
        // Reap whatever is left of the other threads.
        for t in &self.threads {
            if t.tid != self.pid {
                let _ = ptrace::wait(t.tid, true);
            }
        }
        self.threads.clear();
        self.state = State::Gone;
        let pid = self.pid as Pid;
        match st {
            WaitStatus::Signaled(sig) => StopEvent::Terminated { pid, signal: sig },
            WaitStatus::Exited(code) => StopEvent::Exited { pid, code },
            _ => StopEvent::Exited { pid, code: 0 },
        }
    }

    /// Handle one wait status of thread `tid`. Returns an event only for
    /// the end of the process.
    fn handle_status(&mut self, tid: RawTid, st: WaitStatus) -> Option<StopEvent> {
        let i = self.idx(tid)?;
        match st {
            WaitStatus::Exited(_) | WaitStatus::Signaled(_) => {
                if tid == self.pid {
                    return Some(self.process_gone(st));
                }
                tracing::debug!(target: "native", "thread {tid} exited");
                let interrupted = self.threads[i].interrupt;
                self.threads.remove(i);
                if interrupted {
                    self.reaim_interrupt(tid);
                }
                None
            }
            WaitStatus::Stopped(sig) => {
                let t = &mut self.threads[i];
                t.running = false;
                t.regs.invalidate();
                if sig == SIGSTOP && t.sigstop_expected {
                    t.sigstop_expected = false;
                    if t.interrupt {
                        t.interrupt = false;
                        self.set_pending(i, SIGSTOP, StopKind::Interrupt);
                    } else {
                        self.quiet(i);
                    }
                    return None;
                }
                if sig == SIGTRAP {
                    self.handle_trap(i);
                    return None;
                }
                // A passed signal goes on unreported, except to a thread
                // the client steps ([`Self::client_steps`]).
                let passed = self.pass.get(sig as usize).copied().unwrap_or(false);
                if passed && (self.conds.is_stepping(tid) || !self.client_steps(i)) {
                    if self.conds.is_stepping(tid) {
                        // A passed signal arrived before the step over a
                        // false condition's breakpoint: step with it (the
                        // trap comes at the handler's first instruction).
                        self.step_with_signal(i, sig);
                    } else if self.keeps_running(i) {
                        let t = &mut self.threads[i];
                        t.deliver = Some(sig);
                        self.run_thread(i);
                    } else {
                        self.threads[i].held_passed = Some(sig);
                    }
                    return None;
                }
                let kind = self.signal_stop_kind(i, sig);
                self.set_pending(i, sig, kind);
                None
            }
            WaitStatus::Event(ev) => {
                self.threads[i].running = false;
                self.threads[i].regs.invalidate();
                self.handle_event(i, ev)
            }
            WaitStatus::Syscall => {
                self.threads[i].running = false;
                self.threads[i].regs.invalidate();
                self.handle_syscall_stop(i);
                None
            }
        }
    }

    /// A software breakpoint (the client's or the stub's own) was taken
    /// out at `addr`: a thread running now may have executed its `int3`
    /// already, its stop not collected yet ([`super::thread::Removed`]).
    fn note_removed_while_running(&mut self, addr: u64) {
        if !self.bps.contains(addr) {
            for t in self.threads.iter_mut().filter(|t| t.running) {
                t.removed.note(addr);
            }
        }
    }

    fn handle_trap(&mut self, i: usize) {
        let tid = self.threads[i].tid;
        let code = ptrace::get_siginfo(tid)
            .map(|si| ptrace::siginfo_signo_code(&si).1)
            .unwrap_or(0);
        let pc = self.threads[i].regs.pc(tid).unwrap_or(0);
        // 0. The step over a breakpoint whose condition was false ended.
        if self.finish_condition_step(i) {
            return;
        }
        // 1. One of our int3s: rewind over it.
        if code == SI_KERNEL && pc > 0 && self.bps.contains(pc - 1) {
            if let Err(e) = self.threads[i].regs.set_pc(tid, pc - 1) {
                tracing::warn!(target: "native", "rewind pc of {tid}: {e}");
            }
            if self.condition_false(i, pc - 1) || self.commands_run(i, pc - 1) {
                return;
            }
            self.set_pending(i, SIGTRAP, StopKind::SwBreak);
            return;
        }
        // 1b. An int3 of ours the client took out while this thread ran
        // (non-stop): back up over it and let the thread go on as it was
        // resumed; the instruction it replaced runs now
        // ([`super::thread::Removed`]).
        if code == SI_KERNEL && pc > 0 && self.removed_hit(i, pc - 1) {
            tracing::debug!(target: "native", "thread {tid}: hit of the removed breakpoint at {:#x}", pc - 1);
            if let Err(e) = self.threads[i].regs.set_pc(tid, pc - 1) {
                tracing::warn!(target: "native", "rewind pc of {tid}: {e}");
            }
            self.quiet(i);
            return;
        }
        // 2. Debug status: hardware breakpoint / watchpoint / step.
        // With no slot in use a kernel-reported single step needs no DR6
        // (two ptrace calls saved on every step); BS is then only trusted
        // while stepping, so a stale BS cannot turn a foreign trap into a
        // step.
        let dr6 = if self.hw.in_use() || code != TRAP_TRACE {
            let dr6 = hwdebug::read_dr6(tid).unwrap_or(0);
            if dr6 & 0xf != 0 || dr6 & hwdebug::DR6_BS != 0 {
                let _ = hwdebug::clear_dr6(tid);
            }
            dr6
        } else {
            0
        };
        for slot in 0..hwdebug::SLOTS {
            if dr6 & (1 << slot) == 0 {
                continue;
            }
            if let Some(s) = self.hw.slot(slot) {
                let kind = match s.kind {
                    BreakpointKind::Hardware | BreakpointKind::Software => StopKind::HwBreak,
                    BreakpointKind::WatchWrite => StopKind::Watch { addr: s.addr },
                    BreakpointKind::WatchRead => StopKind::ReadWatch { addr: s.addr },
                    BreakpointKind::WatchAccess => StopKind::AccessWatch { addr: s.addr },
                };
                self.set_pending(i, SIGTRAP, kind);
                return;
            }
        }
        let stepping = matches!(
            self.threads[i].action,
            ResumeAction::Step(_) | ResumeAction::RangeStep { .. }
        );
        if code == TRAP_TRACE || (stepping && (code > 0 || dr6 & hwdebug::DR6_BS != 0)) {
            if let ResumeAction::RangeStep { start, end } = self.threads[i].action {
                if start <= pc && pc < end && self.keeps_running(i) {
                    self.run_thread(i);
                    return;
                }
            }
            self.set_pending(i, SIGTRAP, StopKind::Step);
            return;
        }
        // A SIGTRAP of the program's own (raise, foreign int3).
        if self.pass[SIGTRAP as usize] {
            if self.keeps_running(i) {
                self.threads[i].deliver = Some(SIGTRAP);
                self.run_thread(i);
            } else {
                self.threads[i].held_passed = Some(SIGTRAP);
            }
            return;
        }
        self.set_pending(i, SIGTRAP, StopKind::Signal);
    }

    /// A thread the client steps that holds a passed signal
    /// ([`super::thread::Thread::held_passed`]) reports it instead of
    /// running: in all-stop as a pending stop, in non-stop at once. True
    /// when it did.
    fn report_held_passed(&mut self, i: usize) -> bool {
        if !self.client_steps(i) {
            return false;
        }
        let Some(sig) = self.threads[i].held_passed.take() else {
            return false;
        };
        // The thread is still in that signal's stop: its siginfo is the
        // signal's.
        let kind = self.signal_stop_kind(i, sig);
        tracing::debug!(target: "native", "thread {}: held passed signal {sig} reported to its step", self.threads[i].tid);
        if self.nonstop {
            self.ns_report(i, sig, kind);
        } else {
            let seq = self.next_seq();
            self.threads[i].pending = Some(PendingStop {
                signal: sig,
                kind,
                seq,
            });
        }
        true
    }

    /// Whether thread `i`'s `int3` trap at `addr` is the hit of a software
    /// breakpoint removed while it ran ([`super::thread::Removed`]).
    fn removed_hit(&mut self, i: usize, addr: u64) -> bool {
        if self.bps.contains(addr) {
            return false;
        }
        let mem = &mut self.mem;
        self.threads[i].removed.explains(addr, || {
            let mut b = [0u8; 1];
            match mem.read_into(addr, &mut b) {
                Ok(1) => Some(b[0]),
                _ => None,
            }
        })
    }

    /// A hit of a conditional breakpoint at `addr`: when no condition is
    /// true, the hit is not reported ([`super::condbp`]): a running
    /// process steps the thread over it, a stopping one leaves it there.
    fn condition_false(&mut self, i: usize, addr: u64) -> bool {
        let Some(conds) = self.conds.at(addr) else {
            return false;
        };
        let tid = self.threads[i].tid;
        let mut ctx = CondCtx { p: self, tid };
        if super::condbp::any_true(&conds, &mut ctx) {
            return false;
        }
        tracing::trace!(target: "native", "thread {tid}: condition at {addr:#x} false (hold {:?})", self.hold);
        self.pass_breakpoint(i, addr);
        true
    }

    /// A hit (its condition true or absent) of a breakpoint with commands
    /// ([`super::condbp`]): run them and pass the breakpoint unreported.
    /// A thread left at the breakpoint (the process stopping, or another
    /// step-over under way) runs them when it hits it again.
    fn commands_run(&mut self, i: usize, addr: u64) -> bool {
        let Some(cmds) = self.conds.commands_at(addr) else {
            return false;
        };
        if self.step_over_waits() {
            return true;
        }
        let tid = self.threads[i].tid;
        let text = super::condbp::run_commands(&cmds, &mut CondCtx { p: self, tid });
        if !text.is_empty() {
            use std::io::Write as _;
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
        self.pass_breakpoint(i, addr);
        true
    }

    /// Whether a hit not reported now leaves its thread at the breakpoint
    /// (to hit it again when it runs): the process is stopping, or
    /// another thread's step-over is under way.
    fn step_over_waits(&self) -> bool {
        (!self.nonstop && self.state != State::Running) || self.hold.is_some()
    }

    /// Pass the breakpoint at `addr` that thread `i` hit, unreported.
    fn pass_breakpoint(&mut self, i: usize, addr: u64) {
        let tid = self.threads[i].tid;
        if self.step_over_waits() {
            // The thread stays at the breakpoint, unreported, and takes
            // the hit again when it runs (is released).
            return;
        }
        // Stop every other running thread first; the step starts once
        // they all have (`advance_step_over`; at once if none runs). In
        // non-stop mode too, as gdbserver's `start_step_over` does; the
        // client does not see those stops (`process/nonstop.rs`).
        self.hold = Some(StepOverHold {
            tid,
            addr,
            stepping: false,
        });
        self.stop_others(i);
        self.advance_step_over();
    }

    /// SIGSTOP every running thread but `i` (a zombie leader never stops:
    /// it is left as it is).
    fn stop_others(&mut self, i: usize) {
        let pid = self.pid;
        for (j, t) in self.threads.iter_mut().enumerate() {
            if j == i || !t.running || t.sigstop_expected {
                continue;
            }
            if t.tid == pid && procfs::is_zombie(pid as Pid, pid as Tid) {
                continue;
            }
            match ptrace::tgkill(pid, t.tid, SIGSTOP) {
                Ok(()) => t.sigstop_expected = true,
                Err(e) => tracing::debug!(target: "native", "tgkill {}: {e}", t.tid),
            }
        }
    }

    /// A held step-over whose other threads have all stopped starts its
    /// single step; one whose process stops for another reason before
    /// that is dropped (its thread stays at the breakpoint, unreported,
    /// and evaluates the hit again when it runs).
    fn advance_step_over(&mut self) {
        let Some(h) = self.hold else { return };
        if h.stepping {
            return;
        }
        if !self.step_over_may_run() {
            self.hold = None;
            return;
        }
        let pid = self.pid;
        let others_stopped = self.threads.iter().all(|t| {
            t.tid == h.tid
                || !t.running
                || (t.tid == pid && procfs::is_zombie(pid as Pid, pid as Tid))
        });
        if !others_stopped {
            return;
        }
        let Some(i) = self.idx(h.tid) else {
            // The stepping thread is gone: nothing to step over.
            self.hold = None;
            self.release_held();
            return;
        };
        self.hold = Some(StepOverHold {
            stepping: true,
            ..h
        });
        if !self.start_condition_step(i, h.addr) {
            // The hit could not be stepped over: report it.
            self.hold = None;
            self.set_pending(i, SIGTRAP, StopKind::SwBreak);
            self.release_held();
        }
    }

    /// Restart the threads held by a finished step-over (those the client
    /// resumed, with no stop to report).
    fn release_held(&mut self) {
        if !self.step_over_may_run() {
            return;
        }
        for j in 0..self.threads.len() {
            let t = &self.threads[j];
            // One that stopped at the breakpoint before our SIGSTOP came
            // runs too: the SIGSTOP then arrives and is swallowed.
            if !t.running && t.pending.is_none() && t.action != ResumeAction::Stop {
                self.run_thread(j);
            }
        }
    }

    /// Whether a condition's step-over may go on: in all-stop while the
    /// process runs (a reportable stop ends it), in non-stop while the
    /// process lives (another thread's stop is that thread's alone).
    fn step_over_may_run(&self) -> bool {
        if self.nonstop {
            self.state != State::Gone
        } else {
            self.state == State::Running
        }
    }

    /// Lift the breakpoint at `addr` and single-step thread `i` over it.
    /// False (breakpoint back in place) when that fails.
    fn start_condition_step(&mut self, i: usize, addr: u64) -> bool {
        let tid = self.threads[i].tid;
        if let Err(e) = self.bps.lift(&mut self.mem, addr) {
            tracing::warn!(target: "native", "lift breakpoint at {addr:#x}: {e}; reporting the hit");
            return false;
        }
        self.conds.begin_step_over(tid, addr);
        self.threads[i].regs.invalidate();
        if let Err(e) = ptrace::step(tid, 0) {
            tracing::warn!(target: "native", "step {tid} over {addr:#x}: {e}");
            self.conds.end_step_over(tid);
            let _ = self.bps.relay(&mut self.mem, addr);
            return false;
        }
        self.threads[i].running = true;
        true
    }

    /// Restart the single step of a condition's step-over, delivering
    /// `sig`.
    fn step_with_signal(&mut self, i: usize, sig: i32) {
        let t = &mut self.threads[i];
        t.regs.invalidate();
        if let Err(e) = ptrace::step(t.tid, sig) {
            tracing::debug!(target: "native", "step {} with signal {sig}: {e}", t.tid);
            raise_sigchld();
        }
        t.running = true;
    }

    /// The single step of a condition's step-over trapped: patch the
    /// breakpoint again and let the thread go on as it was resumed.
    fn finish_condition_step(&mut self, i: usize) -> bool {
        let Some(addr) = self.conds.end_step_over(self.threads[i].tid) else {
            return false;
        };
        if let Err(e) = self.bps.relay(&mut self.mem, addr) {
            tracing::warn!(target: "native", "re-insert breakpoint at {addr:#x}: {e}");
        }
        let held = self.hold.take().is_some();
        if let ResumeAction::Step(_) = self.threads[i].action {
            // The client's own step is this instruction.
            self.set_pending(i, SIGTRAP, StopKind::Step);
        } else {
            self.quiet(i);
        }
        if held {
            self.release_held();
        }
        true
    }

    fn handle_event(&mut self, i: usize, ev: i32) -> Option<StopEvent> {
        let tid = self.threads[i].tid;
        match ev {
            event::CLONE => {
                match ptrace::event_msg(tid) {
                    Ok(new) => {
                        let new = new as RawTid;
                        if self.idx(new).is_none() {
                            tracing::debug!(target: "native", "new thread {new}");
                            let mut t = Thread::new_clone(new);
                            t.action = match self.threads[i].action {
                                ResumeAction::Stop => ResumeAction::Stop,
                                _ => ResumeAction::Continue(None),
                            };
                            self.threads.push(t);
                        }
                    }
                    Err(e) => tracing::warn!(target: "native", "clone event of {tid}: {e}"),
                }
                self.quiet(i);
            }
            event::FORK | event::VFORK => {
                let vfork = ev == event::VFORK;
                let child = match ptrace::event_msg(tid) {
                    Ok(c) => c as RawTid,
                    Err(e) => {
                        tracing::warn!(target: "native", "fork event of {tid}: {e}");
                        self.quiet(i);
                        return None;
                    }
                };
                let child_deliver = wait_initial_stop(child);
                if self.report_forks {
                    let mut c = LinuxProcess::from_stopped(
                        child,
                        vec![Thread::stopped(child)],
                        self.attached,
                    );
                    c.threads[0].deliver = child_deliver;
                    c.bps = self.bps.clone();
                    c.pass = self.pass;
                    c.report_forks = self.report_forks;
                    c.report_exec = self.report_exec;
                    c.catch_syscalls = self.catch_syscalls.clone();
                    self.fork_children.push(c);
                    let kind = if vfork {
                        StopKind::VFork {
                            child_pid: child as Pid,
                            child_tid: child as Tid,
                        }
                    } else {
                        StopKind::Fork {
                            child_pid: child as Pid,
                            child_tid: child as Tid,
                        }
                    };
                    self.set_pending(i, SIGTRAP, kind);
                } else {
                    if vfork {
                        // The child shares our memory: lift the patches until
                        // VFORK_DONE, or the untraced child dies on an int3.
                        self.bps.suspend(&mut self.mem);
                        self.vfork_suspends += 1;
                    } else {
                        self.bps.restore_into(&mut Memory::new(child));
                    }
                    let _ = ptrace::detach(child, child_deliver.unwrap_or(0));
                    self.quiet(i);
                }
            }
            event::VFORK_DONE => {
                if self.vfork_suspends > 0 {
                    self.vfork_suspends -= 1;
                    if self.vfork_suspends == 0 {
                        self.bps.resume(&mut self.mem);
                    }
                }
                if self.report_forks {
                    self.set_pending(i, SIGTRAP, StopKind::VForkDone);
                } else {
                    self.quiet(i);
                }
            }
            event::EXEC => return self.handle_exec(i),
            _ => self.quiet(i),
        }
        None
    }

    /// A syscall-stop (QCatchSyscalls): report an entry or exit of a
    /// caught call; run on past any other. The kernel says which it is
    /// (PTRACE_GET_SYSCALL_INFO), so a thread stopped inside a blocking
    /// call by a signal never gets entry and exit swapped; the number is
    /// `orig_rax` (the entry's, kept by the kernel until the return).
    fn handle_syscall_stop(&mut self, i: usize) {
        let tid = self.threads[i].tid;
        let Some(set) = &self.catch_syscalls else {
            self.quiet(i);
            return;
        };
        let (op, at_entry) = match ptrace::syscall_info(tid) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(target: "native", "syscall info of {tid}: {e}");
                self.quiet(i);
                return;
            }
        };
        let number = if op == 1 {
            at_entry
        } else {
            match self.threads[i].regs.gpr(tid) {
                Ok(g) => g.orig_rax,
                Err(_) => u64::MAX,
            }
        };
        let kind = match op {
            1 => StopKind::SyscallEntry { number },
            2 => StopKind::SyscallReturn { number },
            _ => {
                self.quiet(i);
                return;
            }
        };
        if set.is_empty() || set.contains(&number) {
            self.set_pending(i, SIGTRAP, kind);
        } else {
            self.quiet(i);
        }
    }

    fn handle_exec(&mut self, i: usize) -> Option<StopEvent> {
        let leader = self.threads[i].tid;
        let former = ptrace::event_msg(leader)
            .map(|f| f as RawTid)
            .unwrap_or(leader);
        let sigstop_expected = self
            .idx(former)
            .map(|j| self.threads[j].sigstop_expected)
            .unwrap_or(false);
        // An all-stop interrupt aimed at a thread the exec ended (the
        // leader, when another thread execs) died with it.
        let interrupted = self.threads.iter().any(|t| t.interrupt);
        // The other threads are gone; reap what the kernel reports of them.
        for t in &self.threads {
            if t.tid != leader {
                let _ = ptrace::wait(t.tid, true);
            }
        }
        self.threads.retain(|t| t.tid == leader);
        let i = self.idx(leader)?;
        {
            let t = &mut self.threads[i];
            t.sigstop_expected = sigstop_expected;
            // The SIGSTOP the survivor still gets (its own, which the
            // exec kept) is the interrupt's.
            t.interrupt = interrupted && sigstop_expected;
            t.running = false;
            t.regs.invalidate();
            // The kernel flushed the ptrace debug registers.
            t.dr_generation = u64::MAX;
            if !matches!(t.action, ResumeAction::Stop) {
                t.action = ResumeAction::Continue(None);
            }
        }
        self.mem.reopen();
        self.bps.clear();
        self.conds = Default::default();
        self.vfork_suspends = 0;
        self.exe = procfs::exe(self.pid as Pid);
        tracing::debug!(target: "native", "exec: {:?} (from thread {former})", self.exe);
        if self.report_exec {
            let path = self.exe.clone().unwrap_or_default();
            self.set_pending(i, SIGTRAP, StopKind::Exec { path });
        } else {
            self.quiet(i);
        }
        if interrupted && !sigstop_expected {
            self.reaim_interrupt(former);
        }
        None
    }

    /// The thread an all-stop interrupt was aimed at (`gone`) ended before
    /// its SIGSTOP stopped it: it exited, or another thread's exec ended
    /// it. The interrupt is aimed again at a running thread, or the process
    /// would run on and the client wait for its stop forever. A process
    /// that is stopping already (a stop is pending) needs nothing: that
    /// stop satisfies the interrupt. Non-stop stop requests name their
    /// threads: a thread that is gone is not stopped in its place.
    fn reaim_interrupt(&mut self, gone: RawTid) {
        if self.nonstop || self.state != State::Running {
            return;
        }
        tracing::debug!(target: "native", "interrupted thread {gone} ended before its stop: interrupting again");
        if let Err(e) = crate::target::Target::interrupt(self) {
            tracing::warn!(target: "native", "re-aimed interrupt: {e}");
        }
    }

    /// Stop every thread synchronously (for detach while running).
    fn stop_all_blocking(&mut self) -> Option<StopEvent> {
        // Detach and abandon stop every thread for good.
        self.nonstop = false;
        if self.state == State::Running {
            self.begin_stop();
        }
        for _ in 0..10_000 {
            let Some(tid) = self.threads.iter().find(|t| t.running).map(|t| t.tid) else {
                break;
            };
            match ptrace::wait(tid, false) {
                Ok(Some(st)) => {
                    if let Some(ev) = self.handle_status(tid, st) {
                        return Some(ev);
                    }
                }
                Ok(None) => {}
                Err(_) => {
                    if let Some(i) = self.idx(tid) {
                        self.threads.remove(i);
                    }
                }
            }
        }
        self.state = State::Stopped;
        None
    }

    /// While stopping: collect the statuses of the first running threads
    /// in the order their SIGSTOPs went out ([`Self::begin_stop`]), one
    /// `waitpid(tid, WNOHANG)` each, until [`STOP_WINDOW`] of them in a row
    /// have none yet. `waitid(P_ALL, WNOWAIT)` ([`ptrace::peek_any`]) walks
    /// the tracer's whole list of traced threads on every call, and taking
    /// the lock of each stopped thread's signal handlers on the way: one
    /// walk per stopping thread was two fifths of gdbmux's CPU in a stop
    /// of 1000 threads (`perf`), while the threads stop about in order.
    ///
    /// Returns the end of the process; sets `progress` when a status was
    /// collected. With none in the window, the caller's walk finds a
    /// thread that stopped out of order, or a vanished one.
    fn collect_stop_window(&mut self, progress: &mut bool) -> Option<StopEvent> {
        let mut misses = 0;
        let mut i = 0;
        while i < self.threads.len() && misses < STOP_WINDOW {
            let t = &self.threads[i];
            if !t.running {
                i += 1;
                continue;
            }
            let tid = t.tid;
            match ptrace::wait(tid, true) {
                Ok(None) => misses += 1,
                Ok(Some(st)) => {
                    *progress = true;
                    if let Some(ev) = self.handle_status(tid, st) {
                        return Some(ev);
                    }
                }
                // Vanished without a status: the caller's pass removes it.
                Err(_) => misses += 1,
            }
            // `handle_status` may have removed this thread (an exit): go on
            // from where it was, else from the next one.
            if self.threads.get(i).is_some_and(|t| t.tid == tid) {
                i += 1;
            }
            if self.state != State::Stopping {
                break;
            }
        }
        None
    }

    fn all_tids(&self) -> Vec<RawTid> {
        self.threads.iter().map(|t| t.tid).collect()
    }
}

/// Wait for the initial SIGSTOP of an auto-attached fork child. Returns a
/// signal that arrived first (to deliver later).
fn wait_initial_stop(child: RawTid) -> Option<i32> {
    let mut deliver = None;
    for _ in 0..64 {
        match ptrace::wait(child, false) {
            Ok(Some(WaitStatus::Stopped(SIGSTOP))) => break,
            Ok(Some(WaitStatus::Stopped(sig))) => {
                deliver = Some(sig);
                let _ = ptrace::cont(child, 0);
            }
            Ok(Some(WaitStatus::Event(_))) | Ok(Some(WaitStatus::Syscall)) => {
                let _ = ptrace::cont(child, 0);
            }
            Ok(Some(WaitStatus::Exited(_))) | Ok(Some(WaitStatus::Signaled(_))) | Err(_) => break,
            Ok(None) => {}
        }
    }
    deliver
}

impl Target for LinuxProcess {
    fn arch(&self) -> &ArchInfo {
        &self.arch
    }

    fn registers(&self) -> &[RegisterInfo] {
        &self.table.infos
    }

    fn pid(&self) -> Pid {
        self.pid as Pid
    }

    fn threads(&self) -> Vec<Tid> {
        self.threads.iter().map(|t| t.tid as Tid).collect()
    }

    fn thread_name(&self, tid: Tid) -> Option<String> {
        procfs::thread_name(self.pid as Pid, tid)
    }

    fn is_stopped(&self) -> bool {
        matches!(self.state, State::Stopped)
    }

    fn read_register(&mut self, tid: Tid, regnum: u32) -> TargetResult<Vec<u8>> {
        let i = self.stopped_idx(tid)?;
        let r = regnum as usize;
        let (info, loc) = self
            .table
            .infos
            .get(r)
            .zip(self.table.locs.get(r))
            .ok_or(TargetError::NoSuchRegister(regnum))?;
        let size = (info.bitsize / 8) as usize;
        let t = &mut self.threads[i];
        let mut out = Vec::with_capacity(size);
        t.regs
            .read(t.tid, *loc, size, &mut out)
            .map_err(|e| terr("read register", t.tid, e))?;
        Ok(out)
    }

    fn write_register(&mut self, tid: Tid, regnum: u32, value: &[u8]) -> TargetResult<()> {
        let i = self.stopped_idx(tid)?;
        let r = regnum as usize;
        let (info, loc) = self
            .table
            .infos
            .get(r)
            .zip(self.table.locs.get(r))
            .ok_or(TargetError::NoSuchRegister(regnum))?;
        if value.len() != (info.bitsize / 8) as usize {
            return Err(TargetError::Invalid(format!(
                "register {} is {} bytes, got {}",
                info.name,
                info.bitsize / 8,
                value.len()
            )));
        }
        let t = &mut self.threads[i];
        t.regs
            .write(t.tid, *loc, value)
            .map_err(|e| terr("write register", t.tid, e))
    }

    fn read_g_registers(&mut self, tid: Tid) -> TargetResult<Vec<u8>> {
        let i = self.stopped_idx(tid)?;
        let t = &mut self.threads[i];
        let mut out = Vec::with_capacity(1024);
        for (info, loc) in self.table.infos.iter().zip(&self.table.locs) {
            if info.in_g_packet {
                t.regs
                    .read(t.tid, *loc, (info.bitsize / 8) as usize, &mut out)
                    .map_err(|e| terr("read registers", t.tid, e))?;
            }
        }
        Ok(out)
    }

    /// All or nothing: the whole block is checked against the register
    /// layout first (a `G` of another size changes nothing), and a write
    /// the kernel refuses part-way (a bad segment selector) is rolled back.
    fn write_g_registers(&mut self, tid: Tid, data: &[u8]) -> TargetResult<()> {
        let i = self.stopped_idx(tid)?;
        let t = &mut self.threads[i];
        let in_g = || {
            self.table
                .infos
                .iter()
                .zip(&self.table.locs)
                .filter(|(info, _)| info.in_g_packet)
                .map(|(info, loc)| ((info.bitsize / 8) as usize, *loc))
        };
        let expected: usize = in_g().map(|(size, _)| size).sum();
        if data.len() != expected {
            return Err(TargetError::Invalid(format!(
                "G carries {} bytes of registers; the register block is {expected}",
                data.len()
            )));
        }
        // (location, old value, new value) of every register that changes.
        let mut changes = Vec::new();
        let mut off = 0usize;
        for (size, loc) in in_g() {
            let value = data.get(off..off + size).unwrap_or_default();
            off += size;
            let mut cur = Vec::with_capacity(size);
            t.regs
                .read(t.tid, loc, size, &mut cur)
                .map_err(|e| terr("read registers", t.tid, e))?;
            if cur != value {
                changes.push((loc, cur, value));
            }
        }
        for (k, (loc, _, new)) in changes.iter().enumerate() {
            if let Err(e) = t.regs.write(t.tid, *loc, new) {
                // Put back what was written, the refused one included (its
                // cached copy already holds the new value).
                for (loc, old, _) in changes.iter().take(k + 1).rev() {
                    if let Err(e) = t.regs.write(t.tid, *loc, old) {
                        tracing::warn!(target: "ptrace", tid = t.tid, "rolling back a refused G: {e}");
                    }
                }
                return Err(terr("write registers", t.tid, e));
            }
        }
        Ok(())
    }

    fn pc(&mut self, tid: Tid) -> TargetResult<u64> {
        let i = self.stopped_idx(tid)?;
        let t = &mut self.threads[i];
        t.regs.pc(t.tid).map_err(|e| terr("read pc", t.tid, e))
    }

    fn read_memory(&mut self, addr: u64, len: usize) -> TargetResult<Vec<u8>> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let mut data = self.mem.read(addr, len).map_err(|e| TargetError::Errno {
            what: format!("read memory at {addr:#x}"),
            errno: e,
        })?;
        self.bps.mask(addr, &mut data);
        Ok(data)
    }

    fn read_memory_into(&mut self, addr: u64, buf: &mut [u8]) -> TargetResult<usize> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let n = self
            .mem
            .read_into(addr, buf)
            .map_err(|e| TargetError::Errno {
                what: format!("read memory at {addr:#x}"),
                errno: e,
            })?;
        self.bps.mask(addr, &mut buf[..n]);
        Ok(n)
    }

    fn write_memory(&mut self, addr: u64, data: &[u8]) -> TargetResult<usize> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let filtered = self.bps.filter_write(addr, data);
        let bytes = filtered.as_deref().unwrap_or(data);
        self.mem.write(addr, bytes).map_err(|e| TargetError::Errno {
            what: format!("write memory at {addr:#x}"),
            errno: e,
        })
    }

    fn insert_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        if kind == BreakpointKind::Software {
            // A plain Z0 makes the breakpoint unconditional (gdb sends the
            // conditions again with every insert), without commands.
            self.conds.set(addr, Vec::new());
            self.conds.set_commands(addr, Vec::new());
        }
        match kind {
            BreakpointKind::Software => {
                let listed = self.bps.contains(addr);
                let err = |e| TargetError::Errno {
                    what: format!("insert breakpoint at {addr:#x}"),
                    errno: e,
                };
                self.bps
                    .insert(&mut self.mem, addr, Owner::Client)
                    .map_err(err)?;
                // A vfork child shares its parent's memory and starts with
                // the parent's table: the parent's `z0` (gdb takes its
                // step-resume breakpoint out of the parent, then inserts it
                // in the followed child) takes the int3 out of memory this
                // table still lists. Plant it again (one write; a no-op
                // where it is in place), unless a thread is stepping over
                // it right now (gdb.base/foll-vfork.exp "step over vfork").
                if listed && !self.conds.stepping_over(addr) {
                    self.bps.relay(&mut self.mem, addr).map_err(err)?;
                }
                Ok(())
            }
            _ => {
                self.hw.insert(kind, addr, len).map_err(|e| match e {
                    HwError::Full => TargetError::NoHwSlot,
                    HwError::Invalid(m) => TargetError::Invalid(m),
                })?;
                if self.nonstop {
                    self.ns_refresh_debug_registers();
                }
                Ok(())
            }
        }
    }

    fn remove_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        if self.state == State::Gone {
            return Ok(());
        }
        match kind {
            BreakpointKind::Software => {
                self.bps
                    .remove(&mut self.mem, addr, Owner::Client)
                    .map_err(|e| TargetError::Errno {
                        what: format!("remove breakpoint at {addr:#x}"),
                        errno: e,
                    })?;
                self.note_removed_while_running(addr);
                Ok(())
            }
            _ => {
                self.hw.remove(kind, addr, len);
                if self.nonstop {
                    self.ns_refresh_debug_registers();
                }
                Ok(())
            }
        }
    }

    fn resume(&mut self, plan: &ResumePlan) -> TargetResult<()> {
        if self.nonstop {
            return self.ns_resume(plan);
        }
        match self.state {
            State::Gone => return Err(TargetError::Gone(self.pid as Tid)),
            State::Running | State::Stopping => return Err(TargetError::Running),
            State::Stopped => {}
        }
        for tid in self.all_tids() {
            let Some(i) = self.idx(tid) else { continue };
            let action = plan
                .threads
                .iter()
                .find(|(t, _)| *t == tid as Tid)
                .map(|(_, a)| *a)
                .or(plan.default)
                .unwrap_or(ResumeAction::Stop);
            let t = &mut self.threads[i];
            t.action = action;
            // A breakpoint stop whose breakpoint is gone is stale: the pc
            // was rewound (an execution breakpoint traps before the
            // instruction), so the instruction simply runs again. So is a
            // watchpoint stop whose watchpoint is gone (e.g. one a
            // vanished client inserted): the access is done.
            let stale = match &t.pending {
                Some(PendingStop {
                    kind: StopKind::SwBreak,
                    ..
                }) => !self.bps.contains(t.regs.pc(t.tid).unwrap_or(0)),
                Some(PendingStop {
                    kind: StopKind::HwBreak,
                    ..
                }) => !self
                    .hw
                    .holds(BreakpointKind::Hardware, t.regs.pc(t.tid).unwrap_or(0)),
                Some(PendingStop {
                    kind: StopKind::Watch { addr },
                    ..
                }) => !self.hw.holds(BreakpointKind::WatchWrite, *addr),
                Some(PendingStop {
                    kind: StopKind::ReadWatch { addr },
                    ..
                }) => !self.hw.holds(BreakpointKind::WatchRead, *addr),
                Some(PendingStop {
                    kind: StopKind::AccessWatch { addr },
                    ..
                }) => !self.hw.holds(BreakpointKind::WatchAccess, *addr),
                _ => false,
            };
            if stale {
                tracing::debug!(target: "native", "discarding stale breakpoint or watchpoint stop of {}", t.tid);
                t.pending = None;
            }
        }
        let resumed: Vec<usize> = (0..self.threads.len())
            .filter(|i| self.threads[*i].action != ResumeAction::Stop)
            .collect();
        for &i in &resumed {
            self.report_held_passed(i);
        }
        if resumed.is_empty() {
            return Err(TargetError::Invalid(
                "resume plan leaves every thread stopped".into(),
            ));
        }
        if resumed.iter().any(|i| self.threads[*i].pending.is_some()) {
            // Report a stored stop without running anything. A signal the
            // client passes to a thread that therefore does not run now is
            // kept for its next run (gdbserver: enqueue_pending_signal), so
            // `handle SIG pass` never loses it.
            for &i in &resumed {
                let t = &mut self.threads[i];
                let sig = match &mut t.action {
                    ResumeAction::Continue(s) | ResumeAction::Step(s) => s.take(),
                    _ => None,
                };
                if let Some(sig) = sig.filter(|s| *s != 0) {
                    if t.deliver.replace(sig).is_some_and(|old| old != sig) {
                        tracing::warn!(target: "native", "thread {}: a held signal was replaced by {sig}", t.tid);
                    }
                }
            }
            self.state = State::Stopping;
            raise_sigchld();
            return Ok(());
        }
        self.state = State::Running;
        for i in resumed {
            self.run_thread(i);
        }
        Ok(())
    }

    fn interrupt(&mut self) -> TargetResult<()> {
        if self.nonstop {
            return self.ns_stop(None);
        }
        match self.state {
            State::Gone => return Err(TargetError::Gone(self.pid as Tid)),
            State::Stopped | State::Stopping => return Ok(()),
            State::Running => {}
        }
        let pid = self.pid;
        let pick = self
            .threads
            .iter()
            .position(|t| t.running && t.tid == pid && !procfs::is_zombie(pid as Pid, pid as Tid))
            .or_else(|| self.threads.iter().position(|t| t.running));
        let Some(i) = pick else {
            // Every thread is held by a condition's step-over: the stop
            // is the interrupt.
            if self.hold.is_some() && !self.threads.is_empty() {
                let i = self.idx(pid).unwrap_or(0);
                self.set_pending(i, SIGSTOP, StopKind::Interrupt);
            }
            return Ok(());
        };
        let t = &mut self.threads[i];
        t.interrupt = true;
        if !t.sigstop_expected {
            ptrace::tgkill(pid, t.tid, SIGSTOP).map_err(|e| terr("interrupt", t.tid, e))?;
            t.sigstop_expected = true;
        }
        Ok(())
    }

    fn process_events(&mut self) -> TargetResult<Option<StopEvent>> {
        if self.nonstop {
            return self.ns_process_events();
        }
        if let Some(ev) = self.ready.pop_front() {
            return Ok(Some(ev));
        }
        if matches!(self.state, State::Stopped | State::Gone) {
            return Ok(None);
        }
        loop {
            // While stopping, the threads' SIGSTOPs arrive about in the
            // order they were sent: the next few running threads in that
            // order are asked first, one `waitpid` each, before a
            // `waitid(P_ALL)` walks the whole list of traced threads.
            let mut progress = false;
            if self.state == State::Stopping {
                if let Some(ev) = self.collect_stop_window(&mut progress) {
                    return Ok(Some(ev));
                }
            }
            // One waitpid per thread with news instead of one per running
            // thread (with 1000 threads, a pass per SIGCHLD was most of the
            // server's time): the per-thread pass stays for a status of a
            // child this process does not know as a running thread (a new
            // clone, another target's child).
            // While stopping, a quiet poll still looks at every thread: a
            // thread that vanished without a status (ECHILD) must not hold
            // the stop up.
            let tids = if progress {
                // The window collected some: it is looked at again first.
                Vec::new()
            } else {
                match ptrace::peek_any() {
                    Ok(None) if self.state != State::Stopping => Vec::new(),
                    Ok(Some(tid)) if self.idx(tid).is_some_and(|i| self.threads[i].running) => {
                        vec![tid]
                    }
                    _ => self.all_tids(),
                }
            };
            for tid in tids {
                let Some(i) = self.idx(tid) else { continue };
                if !self.threads[i].running {
                    continue;
                }
                match ptrace::wait(tid, true) {
                    Ok(None) => {}
                    Ok(Some(st)) => {
                        progress = true;
                        if let Some(ev) = self.handle_status(tid, st) {
                            return Ok(Some(ev));
                        }
                    }
                    Err(Errno::ECHILD) => {
                        progress = true;
                        if tid == self.pid && self.threads.len() == 1 {
                            return Ok(Some(self.process_gone(WaitStatus::Exited(0))));
                        }
                        self.threads.remove(i);
                    }
                    Err(e) => tracing::warn!(target: "native", "waitpid({tid}): {e}"),
                }
            }
            // Only a stop of a thread the client resumed stops the others:
            // one kept by a thread it left stopped (`vCont;s:X` while Y
            // still holds a stop) waits for Y's next resume. Stopping for
            // it reported a thread gdb did not resume, and gdb 13 asserts
            // (infrun.c finish_step_over, gdb testsuite
            // signal-while-stepping-over-bp-other-thread, when the resumed
            // thread's step had not ended by this pass).
            if self.state == State::Running
                && self
                    .threads
                    .iter()
                    .any(|t| t.pending.is_some() && t.action != ResumeAction::Stop)
            {
                self.begin_stop();
            }
            self.advance_step_over();
            if self.state == State::Stopping && self.threads.iter().all(|t| !t.running) {
                return Ok(self.finalize());
            }
            if !progress {
                return Ok(None);
            }
        }
    }

    fn kill(&mut self) -> TargetResult<()> {
        if self.state == State::Gone {
            return Ok(());
        }
        let _ = ptrace::kill(self.pid, libc::SIGKILL);
        let mut leader_status = WaitStatus::Signaled(libc::SIGKILL);
        // Non-leaders first: the leader's exit is only reported once every
        // other traced thread has been reaped.
        let mut order: Vec<&Thread> = self.threads.iter().collect();
        order.sort_by_key(|t| t.tid == self.pid);
        for t in order {
            for _ in 0..64 {
                match ptrace::wait(t.tid, false) {
                    Ok(Some(st @ (WaitStatus::Exited(_) | WaitStatus::Signaled(_)))) => {
                        if t.tid == self.pid {
                            leader_status = st;
                        }
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        self.threads.clear();
        self.state = State::Gone;
        let pid = self.pid as Pid;
        let ev = match leader_status {
            WaitStatus::Exited(code) => StopEvent::Exited { pid, code },
            WaitStatus::Signaled(signal) => StopEvent::Terminated { pid, signal },
            _ => StopEvent::Terminated {
                pid,
                signal: libc::SIGKILL,
            },
        };
        self.ready.push_back(ev);
        raise_sigchld();
        Ok(())
    }

    fn detach(&mut self) -> TargetResult<()> {
        if self.state == State::Gone {
            return Ok(());
        }
        if self.state != State::Stopped {
            if let Some(ev) = self.stop_all_blocking() {
                self.ready.push_back(ev);
                return Ok(());
            }
        }
        self.bps.remove_all(&mut self.mem);
        self.hw.clear();
        for t in std::mem::take(&mut self.threads) {
            let _ = ptrace::poke_user(t.tid, x86_64::DEBUGREG_OFFSET + 7 * 8, 0);
            let mut deliver = match &t.pending {
                Some(PendingStop {
                    kind: StopKind::Signal,
                    signal,
                    ..
                }) => Some(*signal),
                _ => None,
            }
            .or(t.deliver)
            .or(t.held_passed)
            // gdbserver's default without QProgramSignals: not SIGTRAP or
            // SIGINT (linux-low.cc get_detach_signal).
            .or(t
                .attach_signal
                .filter(|s| *s != libc::SIGTRAP && *s != libc::SIGINT));
            if t.sigstop_expected {
                // Flush our SIGSTOP, or the untraced process would stop.
                let mut flushed = false;
                for _ in 0..64 {
                    if ptrace::cont(t.tid, deliver.take().unwrap_or(0)).is_err() {
                        flushed = true;
                        break;
                    }
                    match ptrace::wait(t.tid, false) {
                        Ok(Some(WaitStatus::Stopped(SIGSTOP))) => {
                            flushed = true;
                            break;
                        }
                        Ok(Some(WaitStatus::Stopped(sig))) => deliver = Some(sig),
                        Ok(Some(WaitStatus::Event(_) | WaitStatus::Syscall)) | Ok(None) => {}
                        Ok(Some(WaitStatus::Exited(_) | WaitStatus::Signaled(_))) | Err(_) => {
                            flushed = true;
                            break;
                        }
                    }
                }
                if !flushed {
                    // A signal storm keeps a lower-numbered signal ahead of
                    // the SIGSTOP: discard the pending SIGSTOP with a
                    // SIGCONT, as gdbserver's detach does
                    // (linux_detach_one_lwp).
                    if let Err(e) = ptrace::tgkill(self.pid, t.tid, libc::SIGCONT) {
                        tracing::debug!(target: "native", "SIGCONT {}: {e}", t.tid);
                    }
                }
            }
            if let Err(e) = ptrace::detach(t.tid, deliver.unwrap_or(0)) {
                tracing::debug!(target: "native", "detach {}: {e}", t.tid);
            }
        }
        self.state = State::Gone;
        tracing::debug!(target: "native", "detached from {}", self.pid);
        Ok(())
    }

    fn abandon(&mut self) -> TargetResult<()> {
        if self.state == State::Gone {
            return Ok(());
        }
        if self.state != State::Stopped {
            let _ = self.stop_all_blocking();
        }
        self.bps.remove_all(&mut self.mem);
        self.hw.clear();
        for t in std::mem::take(&mut self.threads) {
            let _ = ptrace::poke_user(t.tid, x86_64::DEBUGREG_OFFSET + 7 * 8, 0);
            // Detaching with SIGSTOP puts the untraced process in a group
            // stop: it waits, stopped, for the next debugger.
            if let Err(e) = ptrace::detach(t.tid, libc::SIGSTOP) {
                tracing::debug!(target: "native", "abandon {}: {e}", t.tid);
            }
        }
        self.state = State::Gone;
        tracing::warn!(target: "native", pid = self.pid, "left stopped and detached (the stub is failing)");
        Ok(())
    }

    fn working_dir(&self) -> Option<std::path::PathBuf> {
        procfs::working_dir(self.pid as Pid)
    }

    fn killed_while_stopped(&self) -> bool {
        self.is_stopped() && procfs::all_threads_dead(self.pid as Pid, &self.threads())
    }

    fn support_auxv(&mut self) -> Option<&mut dyn crate::target::AuxvOps> {
        Some(self)
    }

    fn support_libraries_svr4(&mut self) -> Option<&mut dyn crate::target::LibrariesSvr4Ops> {
        Some(self)
    }

    fn exec_file(&self) -> Option<String> {
        self.exe.clone()
    }

    fn support_siginfo(&mut self) -> Option<&mut dyn crate::target::SiginfoOps> {
        Some(self)
    }

    fn support_memory_regions(&mut self) -> Option<&mut dyn crate::target::MemoryRegionOps> {
        Some(self)
    }

    fn support_range_step(&mut self) -> Option<crate::target::RangeStepping> {
        Some(crate::target::RangeStepping)
    }

    fn process_info(&self) -> Option<ProcessInfo> {
        procfs::process_info(self.pid as Pid)
    }

    fn set_pass_signals(&mut self, signals: &[i32]) {
        self.pass = [false; 65];
        for s in signals {
            if let Some(p) = self.pass.get_mut(*s as usize) {
                *p = true;
            }
        }
        // Never pass what drives the debugger itself.
        self.pass[0] = false;
        self.pass[SIGSTOP as usize] = false;
        self.pass[libc::SIGKILL as usize] = false;
    }

    fn thread_core(&self, tid: Tid) -> Option<u32> {
        procfs::thread_core(self.pid as Pid, tid)
    }

    fn hw_watchpoint_slots(&self) -> u32 {
        hwdebug::SLOTS as u32
    }

    fn set_report_forks(&mut self, on: bool) {
        self.report_forks = on;
    }

    fn set_non_stop(&mut self, on: bool) -> TargetResult<()> {
        self.ns_set(on)
    }

    fn stop_threads(&mut self, tids: Option<&[Tid]>) -> TargetResult<()> {
        if !self.nonstop {
            return Err(TargetError::Invalid(
                "stopping single threads needs non-stop mode".into(),
            ));
        }
        self.ns_stop(tids)
    }

    fn thread_running(&self, tid: Tid) -> bool {
        self.idx(tid as RawTid)
            .is_some_and(|i| self.threads[i].running)
    }

    fn attached(&self) -> bool {
        self.attached
    }

    /// Report `exec` as [`StopKind::Exec`] (the client negotiated
    /// exec-events); otherwise an exec is followed silently.
    fn set_catch_syscalls(&mut self, set: Option<Vec<u64>>) -> bool {
        self.catch_syscalls = set;
        true
    }

    fn set_report_exec(&mut self, on: bool) {
        self.report_exec = on;
    }

    /// Insert a breakpoint the stub itself needs (reference counted,
    /// shared with a client `Z0` at the same address).
    fn insert_internal_breakpoint(&mut self, addr: u64) -> TargetResult<()> {
        self.bps
            .insert(&mut self.mem, addr, Owner::Internal)
            .map_err(|e| TargetError::Errno {
                what: format!("insert breakpoint at {addr:#x}"),
                errno: e,
            })
    }

    /// Drop one internal reference at `addr`.
    fn remove_internal_breakpoint(&mut self, addr: u64) -> TargetResult<()> {
        self.bps
            .remove(&mut self.mem, addr, Owner::Internal)
            .map_err(|e| TargetError::Errno {
                what: format!("remove breakpoint at {addr:#x}"),
                errno: e,
            })?;
        self.note_removed_while_running(addr);
        Ok(())
    }

    fn pass_internal_breakpoint(
        &mut self,
        tid: Tid,
        addr: u64,
        then: ResumeAction,
    ) -> TargetResult<bool> {
        self.ns_pass_internal_breakpoint(tid, addr, then)
    }

    /// Whether the stub holds an internal breakpoint at `addr`.
    fn is_internal_breakpoint(&self, addr: u64) -> bool {
        self.bps.get(addr).is_some_and(|b| b.internal > 0)
    }

    /// Whether the client holds a breakpoint at `addr`.
    fn is_client_breakpoint(&self, addr: u64) -> bool {
        self.bps.get(addr).is_some_and(|b| b.client)
    }

    fn set_breakpoint_conditions(&mut self, addr: u64, conds: Vec<Vec<u8>>) -> TargetResult<()> {
        if !self.bps.get(addr).is_some_and(|b| b.client) {
            return Err(TargetError::Invalid(format!("no breakpoint at {addr:#x}")));
        }
        self.conds.set(addr, conds);
        Ok(())
    }

    fn set_breakpoint_commands(&mut self, addr: u64, cmds: Vec<Vec<u8>>) -> TargetResult<()> {
        if !self.bps.get(addr).is_some_and(|b| b.client) {
            return Err(TargetError::Invalid(format!("no breakpoint at {addr:#x}")));
        }
        self.conds.set_commands(addr, cmds);
        Ok(())
    }

    fn take_other_stops(&mut self) -> Vec<(Tid, i32, StopKind)> {
        let mut v = Vec::new();
        for t in &mut self.threads {
            let reportable = matches!(
                &t.pending,
                Some(PendingStop {
                    kind: StopKind::SwBreak
                        | StopKind::HwBreak
                        | StopKind::Watch { .. }
                        | StopKind::ReadWatch { .. }
                        | StopKind::AccessWatch { .. }
                        | StopKind::Step
                        | StopKind::Fault { .. }
                        | StopKind::Signal,
                    signal,
                    ..
                }) if *signal != 0
            );
            if reportable {
                if let Some(p) = t.pending.take() {
                    v.push((t.tid as Tid, p.signal, p.kind));
                }
            }
        }
        v
    }

    fn take_fork_child(&mut self, child: Pid) -> Option<Box<dyn Target>> {
        let i = self
            .fork_children
            .iter()
            .position(|c| c.pid as Pid == child)?;
        Some(Box::new(self.fork_children.remove(i)))
    }
}

impl Drop for LinuxProcess {
    fn drop(&mut self) {
        if self.state == State::Gone {
            return;
        }
        let r = if self.attached {
            self.detach()
        } else {
            self.kill()
        };
        if let Err(e) = r {
            tracing::warn!(target: "native", "cleanup of {} on drop: {e}", self.pid);
        }
    }
}

/// What [`LinuxProcess`]'s `support_*` accessors return, for a session that
/// has no process yet (extended mode advertises it before `vRun`).
pub const CAPABILITIES: crate::target::Capabilities = crate::target::Capabilities {
    auxv: true,
    libraries_svr4: true,
    siginfo: true,
    memory_regions: true,
    range_step: true,
};

impl crate::target::AuxvOps for LinuxProcess {
    fn auxv(&mut self) -> TargetResult<Vec<u8>> {
        std::fs::read(format!("/proc/{}/auxv", self.pid)).map_err(|e| TargetError::Errno {
            what: "read auxv".into(),
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        })
    }
}

impl crate::target::LibrariesSvr4Ops for LinuxProcess {
    fn libraries_svr4_xml(&mut self) -> TargetResult<String> {
        let auxv = crate::target::AuxvOps::auxv(self)?;
        let mut read = |a: u64, n: usize| self.read_memory(a, n).ok().filter(|v| v.len() == n);
        // No DT_DEBUG to find: an error, as gdbserver's E01 (see svr4.rs).
        svr4::library_list(&mut read, &auxv).ok_or(TargetError::Errno {
            what: "find DT_DEBUG".into(),
            errno: Errno::EIO,
        })
    }
}

impl crate::target::SiginfoOps for LinuxProcess {
    fn siginfo(&mut self, tid: Tid) -> TargetResult<Vec<u8>> {
        let i = self.stopped_idx(tid)?;
        let t = &self.threads[i];
        ptrace::get_siginfo(t.tid)
            .map(|b| b.to_vec())
            .map_err(|e| terr("siginfo", t.tid, e))
    }

    fn write_siginfo(&mut self, tid: Tid, offset: u64, data: &[u8]) -> TargetResult<usize> {
        let i = self.stopped_idx(tid)?;
        let t = self.threads[i].tid;
        let mut buf = ptrace::get_siginfo(t).map_err(|e| terr("siginfo", t, e))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(buf.len());
        let n = data.len().min(buf.len() - start);
        buf[start..start + n].copy_from_slice(&data[..n]);
        ptrace::set_siginfo(t, &buf).map_err(|e| terr("set siginfo", t, e))?;
        Ok(n)
    }
}

impl crate::target::MemoryRegionOps for LinuxProcess {
    fn memory_region(&mut self, addr: u64) -> TargetResult<MemoryRegion> {
        let text = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).map_err(|e| {
            TargetError::Errno {
                what: "read maps".into(),
                errno: Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            }
        })?;
        Ok(procfs::region_for(&procfs::parse_maps(&text), addr))
    }
}

/// A stopped thread's registers and memory for a breakpoint condition.
struct CondCtx<'a> {
    p: &'a mut LinuxProcess,
    tid: RawTid,
}

impl crate::agentexpr::AgentContext for CondCtx<'_> {
    fn register(&mut self, regnum: u32) -> Option<Vec<u8>> {
        self.p.read_register(self.tid as Tid, regnum).ok()
    }
    fn memory(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        self.p.read_memory(addr, len).ok()
    }
}
