//! Non-stop mode of [`LinuxProcess`] (gdb's `QNonStop:1`).
//!
//! In all-stop (the default, `process.rs`) the first reportable stop stops
//! every thread and one event is reported for the whole process. In
//! non-stop each thread has its own resume/stop state:
//!
//! - a resume ([`LinuxProcess::ns_resume`]) starts only the stopped threads
//!   the plan names (or its default covers); running threads and threads
//!   the plan leaves out keep their state;
//! - a reportable stop of a thread stops **that thread only**: it is
//!   queued as its own [`StopEvent`] (`ready`) and the thread stays
//!   stopped (`action = Stop`) until the client resumes it;
//! - a stop request ([`LinuxProcess::ns_stop`], gdb's `vCont;t`) sends the
//!   named running threads a SIGSTOP and reports each with signal 0, as
//!   gdbserver does (gdb expects `T00` for a thread it asked to stop);
//! - new threads inherit the state of the thread that created them (a
//!   running thread's child runs);
//! - `process_events` waits on every thread, stopped ones too: a stopped
//!   thread can still die (another thread's `exit_group`), and the leader's
//!   exit is only reported once every other thread has been reaped.
//!
//! Memory and software breakpoints work while threads run: memory goes
//! through `process_vm_readv` and `/proc/PID/mem`, which the kernel lets
//! the tracer use whatever its tracees do (no thread has to be stopped),
//! and an `int3` is a one-byte write, atomic for the running threads.
//! Registers are only read and written on stopped threads (ptrace's
//! rule); a running thread's registers are refused (`target is
//! running`). Debug registers (hardware breakpoints and watchpoints)
//! need a stopped thread too: after a change every running thread gets a
//! SIGSTOP of ours, takes the new debug registers when it stops and runs
//! on at once, unseen by the client.

use super::LinuxProcess;
use super::State;
use super::SIGSTOP;
use crate::native::procfs;
use crate::native::ptrace;
use crate::native::ptrace::WaitStatus;
use crate::native::sigchld::raise_sigchld;
use crate::native::thread::PendingStop;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::TargetError;
use crate::target::TargetResult;
use crate::target::Tid;
use nix::errno::Errno;

impl LinuxProcess {
    /// Switch non-stop mode on or off. On only while every thread is
    /// stopped (gdb switches at connection set-up): every thread is then
    /// marked as left stopped by the client. Off while threads run (the
    /// client vanished): the process becomes an all-stop process that is
    /// running and asked to stop; its interrupt stop comes from
    /// `process_events` as in all-stop.
    pub(super) fn ns_set(&mut self, on: bool) -> TargetResult<()> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        if on == self.nonstop {
            return Ok(());
        }
        if self.threads.iter().any(|t| t.running) {
            if on {
                return Err(TargetError::Running);
            }
            self.nonstop = false;
            for t in &mut self.threads {
                t.action = if t.running {
                    ResumeAction::Continue(None)
                } else {
                    ResumeAction::Stop
                };
            }
            self.state = State::Running;
            return crate::target::Target::interrupt(self);
        }
        self.nonstop = on;
        for t in &mut self.threads {
            t.action = if on {
                ResumeAction::Stop
            } else {
                ResumeAction::Continue(None)
            };
        }
        self.state = State::Stopped;
        Ok(())
    }

    /// Whether thread `i` should run on after a stop the client does not
    /// see (clone bookkeeping, our own SIGSTOP, a passed signal, range-step
    /// progress).
    pub(super) fn keeps_running(&self, i: usize) -> bool {
        if self.nonstop {
            // As in all-stop, threads stopped for a condition's step-over
            // stay stopped until it is done.
            self.hold.is_none()
                && self
                    .threads
                    .get(i)
                    .is_some_and(|t| t.action != ResumeAction::Stop)
        } else {
            // Threads stopped for a condition's step-over stay stopped
            // until it is done (`StepOverHold`).
            self.state == State::Running && self.hold.is_none()
        }
    }

    /// A reportable stop of thread `i`: only this thread stops; its event
    /// is queued.
    pub(super) fn ns_report(&mut self, i: usize, signal: i32, kind: StopKind) {
        let pid = self.pid as Pid;
        let t = &mut self.threads[i];
        t.action = ResumeAction::Stop;
        t.interrupt = false;
        let (signal, kind) = match kind {
            // A stop the client asked for (`vCont;t`) is reported with
            // signal 0, as gdbserver reports it.
            StopKind::Interrupt => (0, StopKind::Signal),
            k => (signal, k),
        };
        tracing::debug!(target: "native", "non-stop: thread {} stopped: {kind:?} sig {signal}", t.tid);
        self.ready.push_back(StopEvent::Stopped {
            pid,
            tid: t.tid as Tid,
            signal,
            kind,
        });
        self.ns_refresh_state();
    }

    fn ns_refresh_state(&mut self) {
        if self.state == State::Gone {
            return;
        }
        self.state = if self.threads.iter().any(|t| t.running) {
            State::Running
        } else {
            State::Stopped
        };
    }

    /// Resume the stopped threads `plan` names (its default: every stopped
    /// thread it does not name). Running threads are left as they are.
    pub(super) fn ns_resume(&mut self, plan: &ResumePlan) -> TargetResult<()> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let mut held = false;
        for i in 0..self.threads.len() {
            let tid = self.threads[i].tid as Tid;
            let action = plan
                .threads
                .iter()
                .find(|(t, _)| *t == tid)
                .map(|(_, a)| *a)
                .or(plan.default);
            let Some(action) = action.filter(|a| *a != ResumeAction::Stop) else {
                continue;
            };
            let held_by = self.hold.map(|h| h.tid);
            let t = &mut self.threads[i];
            // Only threads the client sees stopped: one stopped by us (a
            // condition's step-over, its held threads, one resumed while
            // the step-over holds it) runs as far as the client knows.
            if t.running || t.action != ResumeAction::Stop {
                continue;
            }
            t.action = action;
            // A stop collected in all-stop and never reported (before the
            // switch to non-stop) is reported now instead of running.
            if let Some(PendingStop { signal, kind, .. }) = t.pending.take() {
                let sig = match &mut t.action {
                    ResumeAction::Continue(s) | ResumeAction::Step(s) => s.take(),
                    _ => None,
                };
                if let Some(sig) = sig.filter(|s| *s != 0) {
                    t.deliver = Some(sig);
                }
                self.ns_report(i, signal, kind);
                held = true;
                continue;
            }
            // A passed signal it took while we held it is reported to a
            // step (`report_held_passed`); the step's own signal waits.
            if self.client_steps(i) && self.threads[i].held_passed.is_some() {
                let t = &mut self.threads[i];
                if let ResumeAction::Step(Some(sig)) = t.action {
                    t.deliver = Some(sig);
                }
                if self.report_held_passed(i) {
                    held = true;
                    continue;
                }
            }
            // During a condition's step-over it starts with the held
            // threads, once the step is done (`release_held`).
            if held_by.is_none() {
                self.run_thread(i);
            }
        }
        self.ns_refresh_state();
        if held {
            raise_sigchld();
        }
        Ok(())
    }

    /// Stop the named running threads (every running thread for `None`);
    /// each is reported with signal 0 once it stops. A thread that is
    /// already stopped is left alone (nothing is reported for it).
    pub(super) fn ns_stop(&mut self, tids: Option<&[Tid]>) -> TargetResult<()> {
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let pid = self.pid;
        let mut reported = false;
        let mut dropped = false;
        for i in 0..self.threads.len() {
            let t = &self.threads[i];
            if tids.is_some_and(|l| !l.contains(&(t.tid as Tid))) {
                continue;
            }
            // Held for a condition's step-over, or its thread waiting for
            // the others to stop (it waits at the breakpoint, which it
            // hits again when resumed): stopped already, running for the
            // client, who now gets its stop.
            if let Some(h) = self.hold {
                if !t.running && t.action != ResumeAction::Stop && t.pending.is_none() {
                    if h.tid == t.tid {
                        if h.stepping {
                            continue;
                        }
                        self.hold = None;
                        dropped = true;
                    }
                    self.ns_report(i, 0, StopKind::Interrupt);
                    reported = true;
                    continue;
                }
            }
            let t = &mut self.threads[i];
            if !t.running {
                continue;
            }
            // A zombie leader (it called pthread_exit) never stops.
            if t.tid == pid && procfs::is_zombie(pid as Pid, pid as Tid) {
                continue;
            }
            t.interrupt = true;
            if !t.sigstop_expected {
                match ptrace::tgkill(pid, t.tid, SIGSTOP) {
                    Ok(()) => t.sigstop_expected = true,
                    Err(e) => tracing::debug!(target: "native", "tgkill {}: {e}", t.tid),
                }
            }
        }
        if dropped {
            // The threads it held and the client did not stop run on.
            self.release_held();
        }
        if reported {
            raise_sigchld();
        }
        Ok(())
    }

    /// Move thread `tid`, stopped at the internal breakpoint `addr` (the
    /// GPU library's hook, its hit handled out of the client's sight), past
    /// it as `then` moves it: the other running threads are stopped first
    /// and held until the single step is done, the machinery of a
    /// condition's step-over (`pass_breakpoint`), so none of them passes
    /// `addr` unseen while its original byte is back. During another
    /// step-over the thread waits at `addr` with the held threads and,
    /// released with them, hits it again: a second hit of the same call,
    /// which the library takes as any hit (it finds nothing new).
    pub(super) fn ns_pass_internal_breakpoint(
        &mut self,
        tid: Tid,
        addr: u64,
        then: ResumeAction,
    ) -> TargetResult<bool> {
        if !self.nonstop {
            return Ok(false);
        }
        if self.state == State::Gone {
            return Err(TargetError::Gone(self.pid as Tid));
        }
        let Some(i) = self.idx(tid as ptrace::RawTid) else {
            return Err(TargetError::NoSuchThread(tid));
        };
        if self.threads[i].running {
            return Err(TargetError::Running);
        }
        self.threads[i].action = then;
        if self.hold.is_none() {
            self.pass_breakpoint(i, addr);
        }
        self.ns_refresh_state();
        Ok(true)
    }

    /// New debug registers reach running threads: each gets a SIGSTOP of
    /// ours and takes them when it restarts (see the module comment).
    pub(super) fn ns_refresh_debug_registers(&mut self) {
        let pid = self.pid;
        for t in &mut self.threads {
            if t.running && !t.sigstop_expected {
                match ptrace::tgkill(pid, t.tid, SIGSTOP) {
                    Ok(()) => t.sigstop_expected = true,
                    Err(e) => tracing::debug!(target: "native", "tgkill {}: {e}", t.tid),
                }
            }
        }
    }

    /// Collect kernel events; returns queued thread stops one at a time
    /// (the caller drains until `None`), or the end of the process.
    pub(super) fn ns_process_events(&mut self) -> TargetResult<Option<StopEvent>> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Ok(Some(ev));
            }
            if self.state == State::Gone {
                return Ok(None);
            }
            let mut progress = false;
            for tid in self.all_tids() {
                let Some(i) = self.idx(tid) else { continue };
                match ptrace::wait(tid, true) {
                    Ok(None) => {}
                    Ok(Some(st)) => {
                        progress = true;
                        if !self.threads[i].running
                            && !matches!(st, WaitStatus::Exited(_) | WaitStatus::Signaled(_))
                        {
                            tracing::warn!(target: "native", "non-stop: status {st:?} of stopped thread {tid}");
                        }
                        if let Some(ev) = self.handle_status(tid, st) {
                            // After the stops already queued.
                            self.ready.push_back(ev);
                            break;
                        }
                    }
                    Err(Errno::ECHILD) => {
                        progress = true;
                        if tid == self.pid && self.threads.len() == 1 {
                            let ev = self.process_gone(WaitStatus::Exited(0));
                            self.ready.push_back(ev);
                            break;
                        }
                        self.threads.remove(i);
                    }
                    Err(e) => tracing::warn!(target: "native", "waitpid({tid}): {e}"),
                }
            }
            // A condition's step-over starts once the threads it stopped
            // have all stopped.
            self.advance_step_over();
            self.ns_refresh_state();
            if !progress && self.ready.is_empty() {
                return Ok(None);
            }
        }
    }
}
