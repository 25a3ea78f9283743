//! Non-stop mode (gdb's `set non-stop on`; "Remote Non-Stop" in gdb's
//! manual), served as gdbserver 13.1 serves it (`server.cc`, `notif.cc`).
//!
//! - `QNonStop:1`/`QNonStop:0` switch the mode (advertised as `QNonStop+`
//!   by the CPU session). The processes' threads must all be stopped.
//! - `vCont` acts only on the threads it names (an action without a
//!   thread: every thread); the others keep their state. It is answered
//!   `OK` at once; stops come later as notifications. `vCont;t` stops a
//!   running thread, reported with signal 0 (`T00`). `c`/`s`/`C`/`S`
//!   resume like `vCont` without thread (`s`: the `Hc` thread) and are
//!   answered `OK`.
//! - A stop or exit is sent as a `%Stop:T…` / `%Stop:W…`/`X…` notification.
//!   One notification is outstanding at a time: the rest wait in
//!   [`StopQueue`] until the client acknowledges with `vStopped`, which is
//!   answered with the next queued stop (as a plain packet) or `OK`.
//! - `vAttach` is answered `OK`; the attached thread's stop follows as a
//!   notification.
//! - `?` answers every stopped thread's last stop (a thread that stopped
//!   without an event of its own: signal 0): the first as its reply, the
//!   rest through the `vStopped` sequence; `OK` when no thread is stopped.
//!
//! The queue is bounded by construction: a stopped thread stays stopped
//! until the client resumes it, so it has at most one stop queued (a
//! second stop of the same thread replaces its queued one), and each
//! process at most one exit (`bounds::stop_queue_limit`).

use std::collections::BTreeMap;
use std::collections::VecDeque;

use super::handlers::VContScope;
use super::Session;
use super::SessionRole;
use crate::packet::reply;
use crate::packet::Command;
use crate::packet::IdSel;
use crate::packet::VContAction;
use crate::packet::VContKind;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::Tid;

/// Which thread (or, for an exit, which process) a queued stop is about.
type StopKey = (Pid, Option<Tid>);

/// Stops waiting for the client: the front one was sent (as a
/// notification or a `vStopped`/`?` reply) and waits for `vStopped`.
#[derive(Debug, Default)]
pub(super) struct StopQueue {
    entries: VecDeque<(StopKey, Vec<u8>)>,
}

impl StopQueue {
    /// Queue a stop; returns true when it is the only one (so it must be
    /// sent now as a notification). A queued, not yet sent stop of the
    /// same thread is replaced (at most one per thread).
    fn push(&mut self, key: StopKey, bytes: Vec<u8>) -> bool {
        if let Some(pos) = self.entries.iter().skip(1).position(|(k, _)| *k == key) {
            self.entries.remove(pos + 1);
        }
        self.entries.push_back((key, bytes));
        self.entries.len() == 1
    }

    /// `vStopped`: the front one was taken; the next one to send, if any.
    fn acknowledge(&mut self) -> Option<Vec<u8>> {
        self.entries.pop_front();
        self.entries.front().map(|(_, b)| b.clone())
    }

    /// Drop queued (unsent) stops of the threads of `pid`.
    fn forget_threads_of(&mut self, pid: Pid) {
        let mut first = true;
        self.entries.retain(|((p, t), _)| {
            let keep = first || *p != pid || t.is_none();
            first = false;
            keep
        });
    }

    fn clear(&mut self) {
        self.entries.clear();
    }

    /// The threads with a stop queued: sent and not yet acknowledged, or
    /// waiting to be sent.
    fn threads(&self) -> std::collections::BTreeSet<(Pid, Tid)> {
        self.entries
            .iter()
            .filter_map(|((pid, tid), _)| tid.map(|t| (*pid, t)))
            .collect()
    }

    /// Entries queued.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The non-stop state of a session.
#[derive(Debug, Default)]
pub(super) struct NonStop {
    /// `QNonStop:1` is in force.
    pub(super) on: bool,
    queue: StopQueue,
    /// The last stop of each stopped thread (for `?`).
    pub(super) last: BTreeMap<(Pid, Tid), StopEvent>,
    /// The action the client last resumed each thread with (what an
    /// internal stop of the thread runs it on with: `gpu::ns_*`).
    pub(super) actions: BTreeMap<(Pid, Tid), ResumeAction>,
    /// Threads the client asked to stop (`vCont;t`) whose stop it has not
    /// been sent yet: an internal stop of such a thread is reported as
    /// that stop instead of running on (docs/architecture.md,
    /// "Interrupts and internal stops").
    pub(super) stop_wanted: std::collections::BTreeSet<(Pid, Tid)>,
}

impl<R: SessionRole> Session<R> {
    /// `QNonStop:0|1`.
    /// (A GPU session refuses `QNonStop:1` before this: `SessionRole::serves`.)
    pub(super) fn handle_nonstop(&mut self, on: bool) {
        for (pid, t) in self.procs.iter_mut() {
            if let Err(e) = t.set_non_stop(on) {
                tracing::debug!(target: "session", session = self.id, pid, "QNonStop:{}: {e}", on as u8);
                // Put back those already switched.
                for t in self.procs.values_mut() {
                    let _ = t.set_non_stop(self.nonstop.on);
                }
                let p = crate::packet::reply::error(
                    e.code(),
                    &e.to_string(),
                    self.features.error_strings,
                );
                self.send(&p);
                return;
            }
        }
        if on && !self.nonstop.on {
            // Every thread is stopped now; the journaled stop is its
            // thread's last stop.
            self.nonstop.last.clear();
            if let Some(ev @ StopEvent::Stopped { pid, tid, .. }) = self.journal.event() {
                self.nonstop.last.insert((*pid, *tid), ev.clone());
            }
            R::nonstop_begins(self);
        }
        if !on {
            if self.nonstop.on {
                R::nonstop_ends(self);
            }
            self.nonstop = NonStop::default();
        }
        self.nonstop.on = on;
        tracing::info!(target: "session", session = self.id, on, "non-stop mode");
        self.send(&reply::ok());
    }

    /// `vStopped`: the next queued stop, or `OK`.
    pub(super) fn handle_vstopped(&mut self) {
        match self.nonstop.queue.acknowledge() {
            Some(next) => self.send(&next),
            None => self.send(&reply::ok()),
        }
    }

    /// Non-stop packets whose meaning differs from all-stop; everything
    /// else is given back to the all-stop dispatch.
    pub(super) fn nonstop_dispatch(&mut self, cmd: Command) -> Option<Command> {
        if !self.nonstop.on {
            return Some(cmd);
        }
        self.nonstop_sync_targets();
        match cmd {
            Command::QuestionMark => self.nonstop_question(),
            Command::VCont(actions) if !self.features.disabled.vcont => {
                self.nonstop_vcont(&actions)
            }
            Command::Continue { signal, addr: None } => self.nonstop_vcont(&[VContAction {
                kind: signal.map_or(VContKind::Continue, VContKind::ContinueSig),
                thread: None,
            }]),
            Command::Step { signal, addr: None } => {
                let thread = self.c_thread.map(|(pid, tid)| crate::packet::ThreadId {
                    pid: Some(IdSel::Id(u64::from(pid))),
                    tid: IdSel::Id(tid),
                });
                self.nonstop_vcont(&[VContAction {
                    kind: signal.map_or(VContKind::Step, VContKind::StepSig),
                    thread,
                }])
            }
            Command::VAttach(pid) => self.nonstop_vattach(pid),
            other => return Some(other),
        }
        None
    }

    /// `vAttach` in non-stop: answered `OK` (gdb refuses a stop reply
    /// there); the attached thread's stop follows as a notification, as
    /// gdbserver sends it.
    fn nonstop_vattach(&mut self, pid: u64) {
        let Ok(pid) = Pid::try_from(pid) else {
            self.send_error(crate::error::ErrorCode::Invalid, "bad pid");
            return;
        };
        match crate::native::LinuxProcess::attach(pid) {
            Ok((proc_, stop)) => {
                tracing::info!(target: "ptrace", session = self.id, pid, "attached (non-stop)");
                self.adopt_launched(Box::new(proc_), stop.clone());
                self.nonstop_sync_targets();
                self.send(&reply::ok());
                self.nonstop_event(stop);
            }
            Err(e) => {
                tracing::warn!(target: "ptrace", session = self.id, pid, "attach failed: {e}");
                self.send_error(crate::error::ErrorCode::NotPermitted, &e.to_string());
            }
        }
    }

    /// Processes created since the switch (vRun, vAttach, fork children)
    /// are non-stop too.
    fn nonstop_sync_targets(&mut self) {
        for (pid, t) in self.procs.iter_mut() {
            if let Err(e) = t.set_non_stop(true) {
                tracing::debug!(target: "session", session = self.id, pid, "non-stop for a new process: {e}");
            }
        }
    }

    /// `?` in non-stop: every stopped thread's last stop.
    ///
    /// The other threads of an attached process still at its attach stop
    /// (never resumed, never reported) run on instead, as with gdbserver: its `?`
    /// reports the threads whose stop it has collected, which after
    /// `--attach` is the main thread alone (linux-low.cc attaches the
    /// others without waiting for their stop). gdb then stops those it
    /// wants (`vCont;t`, answered with a stop notification each). gdb 13
    /// connecting with `maint set target-non-stop on` aborts (remote.c
    /// `wait`: `!async_event_handler_marked`) when `?` lists several
    /// stopped threads of a process it is attaching to (gdb testsuite
    /// gdb.server/attach-flag.exp).
    fn nonstop_question(&mut self) {
        self.nonstop.queue.clear();
        let mut stopped: Vec<StopEvent> = Vec::new();
        for (pid, t) in self.procs.iter_mut() {
            let halted: Vec<Tid> = t
                .threads()
                .into_iter()
                .filter(|tid| !t.thread_running(*tid))
                .collect();
            // The threads of a process still at its attach stop, other
            // than the one with that stop, run on.
            let at_attach = t.attached()
                && halted.iter().any(|tid| {
                    matches!(
                        self.nonstop.last.get(&(*pid, *tid)),
                        Some(StopEvent::Stopped {
                            kind: StopKind::Initial,
                            ..
                        })
                    )
                });
            let run_on: Vec<Tid> = if at_attach {
                halted
                    .iter()
                    .copied()
                    .filter(|tid| !self.nonstop.last.contains_key(&(*pid, *tid)))
                    .collect()
            } else {
                Vec::new()
            };
            for tid in halted {
                if run_on.contains(&tid) {
                    continue;
                }
                let ev =
                    self.nonstop
                        .last
                        .get(&(*pid, tid))
                        .cloned()
                        .unwrap_or(StopEvent::Stopped {
                            pid: *pid,
                            tid,
                            signal: 0,
                            kind: StopKind::Signal,
                        });
                stopped.push(ev);
            }
            if !run_on.is_empty() {
                let plan = ResumePlan {
                    threads: run_on
                        .iter()
                        .map(|tid| (*tid, ResumeAction::Continue(None)))
                        .collect(),
                    default: None,
                };
                if let Err(e) = t.resume(&plan) {
                    tracing::warn!(target: "session", session = self.id, pid, "non-stop: run the attached threads: {e}");
                }
            }
        }
        for ev in stopped {
            let key = match &ev {
                StopEvent::Stopped { pid, tid, .. } => (*pid, Some(*tid)),
                other => (other.pid(), None),
            };
            let bytes = self.render_stop(ev);
            self.nonstop.queue.push(key, bytes);
        }
        match self.nonstop.queue.entries.front() {
            Some((_, first)) => {
                let first = first.clone();
                self.send(&first);
            }
            None => self.send(&reply::ok()),
        }
    }

    /// Journal a stop and render its reply bytes.
    fn render_stop(&mut self, ev: StopEvent) -> Vec<u8> {
        // The client's thread selection (`Hg`, `Hc`) stays as it set it:
        // a stop notification can arrive between gdb's `Hg` and its `P`,
        // and gdbserver 13 says "In non-stop, don't change the general
        // thread behind GDB's back" (remote-utils.cc,
        // prepare_resume_reply). An exit still drops its threads.
        let kept = match ev {
            StopEvent::Stopped { .. } if self.g_thread.is_some() => {
                Some((self.g_thread, self.c_thread, self.current))
            }
            _ => None,
        };
        self.record_stop(ev);
        if let Some((g, c, current)) = kept {
            (self.g_thread, self.c_thread, self.current) = (g, c, current);
        }
        let opts = self.features.stop_options();
        self.journal.reply(&opts).unwrap_or_default()
    }

    /// `vCont` in non-stop: resume or stop the threads named, answer `OK`.
    fn nonstop_vcont(&mut self, actions: &[VContAction]) {
        if self.procs.is_empty() {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        }
        let Some(scoped) = self.vcont_scopes(actions) else {
            return;
        };
        // (pid, tid) → action: the first action that matches a thread wins.
        let mut chosen: BTreeMap<(Pid, Tid), ResumeAction> = BTreeMap::new();
        let all: Vec<(Pid, Tid)> = self
            .procs
            .iter()
            .flat_map(|(pid, t)| t.threads().into_iter().map(move |tid| (*pid, tid)))
            .collect();
        let queued = self.nonstop.queue.threads();
        for (scope, action) in scoped {
            let matches: Vec<(Pid, Tid)> = match scope {
                VContScope::All => all.clone(),
                VContScope::Process(p) => {
                    all.iter().copied().filter(|(pid, _)| *pid == p).collect()
                }
                VContScope::Thread(pid, tid) => vec![(pid, tid)],
            };
            for k in matches {
                if action == ResumeAction::Stop {
                    self.nonstop.stop_wanted.insert(k);
                }
                // A thread whose stop the client has not pulled yet (it
                // is in the queue) stays stopped: the client does not
                // know it stopped, and resuming it would lose that stop.
                // gdbserver ignores such a resume request the same way
                // (linux-low.cc `linux_set_resume_request`: "not resuming
                // LWP: has queued stop reply", `in_queued_stop_replies`).
                // gdb's `vCont;s:X;c` right after a displaced step of Y
                // ended, Y's stop still queued, restarted Y in gdb's
                // displaced-step buffer, where it ran on into `_start`
                // (gdb.threads/non-stop-fair-events.exp under load).
                if action != ResumeAction::Stop && queued.contains(&k) {
                    tracing::debug!(target: "session", session = self.id, pid = k.0, tid = k.1, "non-stop: not resumed, its stop is queued");
                    continue;
                }
                chosen.entry(k).or_insert(action);
            }
        }
        // Threads resumed by the client; a thread the role handles itself
        // (stopped at an internal breakpoint: `SessionRole::
        // nonstop_takes_resume`) is resumed by the role.
        chosen.retain(|&(pid, tid), action| {
            if *action == ResumeAction::Stop
                || self.procs.get(&pid).is_none_or(|t| t.thread_running(tid))
            {
                return true;
            }
            if R::nonstop_takes_resume(self, pid, tid, *action) {
                return false;
            }
            self.nonstop.stop_wanted.remove(&(pid, tid));
            self.nonstop.actions.insert((pid, tid), *action);
            true
        });
        self.xfer_cache.clear();
        for (pid, t) in self.procs.iter_mut() {
            let mut plan = ResumePlan {
                threads: vec![],
                default: None,
            };
            let mut stop = Vec::new();
            for ((p, tid), action) in &chosen {
                if p != pid {
                    continue;
                }
                if *action == ResumeAction::Stop {
                    stop.push(*tid);
                } else if !t.thread_running(*tid) {
                    plan.threads.push((*tid, *action));
                    self.nonstop.last.remove(&(*pid, *tid));
                }
            }
            if !plan.threads.is_empty() {
                if let Err(e) = t.resume(&plan) {
                    tracing::warn!(target: "session", session = self.id, pid, "non-stop resume: {e}");
                }
            }
            if !stop.is_empty() {
                if let Err(e) = t.stop_threads(Some(&stop)) {
                    tracing::warn!(target: "session", session = self.id, pid, "non-stop stop: {e}");
                }
            }
        }
        R::nonstop_stops_asked(self);
        self.send(&reply::ok());
        // Stops already queued by the targets (a thread that had one
        // pending) are picked up at once.
        self.nonstop_wakeup(false);
    }

    /// Collect every target's events and notify the client of them.
    pub(super) fn nonstop_wakeup(&mut self, maybe_death: bool) {
        self.nonstop_sync_targets();
        let pids: Vec<Pid> = self.procs.keys().copied().collect();
        let mut got_event = false;
        for pid in pids {
            while let Some(t) = self.procs.get_mut(&pid) {
                match t.process_events() {
                    Ok(Some(stop)) => {
                        got_event = true;
                        let ended = !matches!(stop, StopEvent::Stopped { .. });
                        // An internal stop (the GPU library's breakpoint)
                        // is handled out of the client's sight.
                        if R::intercept_nonstop_stop(self, &stop) {
                            continue;
                        }
                        self.nonstop_event(stop);
                        if ended {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(target: "ptrace", session = self.id, pid, "event processing failed: {e}");
                        break;
                    }
                }
            }
        }
        if maybe_death && !got_event {
            for end in self.reap_killed() {
                self.nonstop_event(end);
            }
        }
    }

    /// One stop or exit: bookkeeping as in all-stop, then queue it and
    /// notify the client when nothing else is outstanding.
    pub(super) fn nonstop_event(&mut self, stop: StopEvent) {
        self.process_bookkeeping(&stop);
        let key = match &stop {
            StopEvent::Stopped { pid, tid, .. } => {
                self.nonstop.stop_wanted.remove(&(*pid, *tid));
                self.nonstop.last.insert((*pid, *tid), stop.clone());
                (*pid, Some(*tid))
            }
            other => {
                let pid = other.pid();
                self.nonstop.last.retain(|(p, _), _| *p != pid);
                self.nonstop.actions.retain(|(p, _), _| *p != pid);
                self.nonstop.stop_wanted.retain(|(p, _)| *p != pid);
                self.nonstop.queue.forget_threads_of(pid);
                self.cpu_process_ended(other);
                (pid, None)
            }
        };
        let bytes = self.render_stop(stop);
        let limit = crate::bounds::stop_queue_limit(self.live_threads());
        if self.nonstop.queue.len() >= limit {
            // Cannot happen (see the module comment); logged, never dropped:
            // a lost stop would leave the client waiting for it.
            tracing::error!(target: "session", session = self.id, queued = self.nonstop.queue.len(), limit, "non-stop stop queue past its bound");
        }
        if self.nonstop.queue.push(key, bytes.clone()) {
            let mut note = b"Stop:".to_vec();
            note.extend_from_slice(&bytes);
            tracing::trace!(target: "packets", session = self.id, "--> %{}", String::from_utf8_lossy(&note));
            self.encoder.notification(&note, &mut self.out);
        }
    }

    fn live_threads(&self) -> usize {
        self.procs
            .values()
            .map(|t| t.threads().len())
            .sum::<usize>()
            + self.procs.len()
    }

    /// `--multi`: the client vanished. Its processes go back to all-stop;
    /// returns whether a thread still runs (its stop then ends an
    /// all-stop resume, journaled for the next client).
    pub(super) fn nonstop_client_gone(&mut self) -> bool {
        if !self.nonstop.on {
            return false;
        }
        R::nonstop_ends(self);
        self.nonstop = NonStop::default();
        let mut running = false;
        for (pid, t) in self.procs.iter_mut() {
            running |= t.threads().iter().any(|tid| t.thread_running(*tid));
            if let Err(e) = t.set_non_stop(false) {
                tracing::warn!(target: "session", session = self.id, pid, "back to all-stop: {e}");
            }
        }
        running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outstanding_and_one_per_thread() {
        let mut q = StopQueue::default();
        assert!(q.push((1, Some(1)), b"T05a".to_vec()));
        assert!(!q.push((1, Some(2)), b"T05b".to_vec()));
        // A second stop of thread 2 replaces its queued one.
        assert!(!q.push((1, Some(2)), b"T00b".to_vec()));
        assert_eq!(q.len(), 2);
        // The outstanding one is never replaced.
        assert!(!q.push((1, Some(1)), b"T00a".to_vec()));
        assert_eq!(q.len(), 3);
        assert_eq!(q.acknowledge(), Some(b"T00b".to_vec()));
        assert_eq!(q.acknowledge(), Some(b"T00a".to_vec()));
        assert_eq!(q.acknowledge(), None);
        assert_eq!(q.acknowledge(), None);
    }

    #[test]
    fn exit_drops_unsent_thread_stops() {
        let mut q = StopQueue::default();
        q.push((1, Some(1)), b"T05".to_vec());
        q.push((1, Some(2)), b"T05".to_vec());
        q.push((2, Some(3)), b"T05".to_vec());
        q.forget_threads_of(1);
        q.push((1, None), b"W00".to_vec());
        assert_eq!(q.len(), 3);
        assert_eq!(q.acknowledge(), Some(b"T05".to_vec()));
        assert_eq!(q.acknowledge(), Some(b"W00".to_vec()));
    }
}
