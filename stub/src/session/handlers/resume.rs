//! Resume: `c`, `C`, `s`, `S`, `vCont`, `vCont?`, and `\x03`
//! (packets: `packet/resume.rs`).

use std::collections::BTreeMap;

use crate::packet::reply;
use crate::packet::IdSel;
use crate::packet::ThreadId;
use crate::packet::VContAction;
use crate::packet::VContKind;
use crate::session::Session;
use crate::session::SessionRole;
use crate::stop::StopEvent;
use crate::target::Pid;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::TargetError;
use crate::target::Tid;

/// What one `vCont` action applies to ([`Session::vcont_scopes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::session) enum VContScope {
    /// No thread, or `-1`: every thread of every process.
    All,
    /// `p<pid>.-1`: every thread of one process.
    Process(Pid),
    /// One thread.
    Thread(Pid, Tid),
}

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_vcont_query(&mut self) {
        if self.features.disabled.vcont {
            self.send(&reply::empty());
            return;
        }
        let caps = self.capabilities();
        self.send(caps.vcont_reply());
    }

    pub(in crate::session) fn handle_c_s(
        &mut self,
        step: bool,
        signal: Option<u8>,
        addr: Option<u64>,
    ) {
        let sig = match signal.map(|s| self.signal_from_wire(s)) {
            Some(None) => {
                self.send_error(crate::error::ErrorCode::Invalid, "unknown signal number");
                return;
            }
            Some(s) => s.filter(|s| *s != 0),
            None => None,
        };
        let Some(pid) = self.current.or_else(|| self.procs.keys().next().copied()) else {
            self.reply_no_process_resume();
            return;
        };
        let tid = self
            .c_thread
            .filter(|(p, _)| *p == pid)
            .map(|(_, t)| t)
            .or_else(|| {
                self.resolve_thread(Some(ThreadId {
                    pid: None,
                    tid: IdSel::Any,
                }))
                .map(|(_, t)| t)
            });
        let Some(tid) = tid else {
            self.reply_no_process_resume();
            return;
        };
        if let Some(addr) = addr {
            let pc_reg = self.procs.get(&pid).and_then(|t| {
                t.registers()
                    .iter()
                    .find(|r| r.generic == Some("pc"))
                    .map(|r| r.regnum)
            });
            if let Some(regnum) = pc_reg {
                if let Err(e) = self
                    .target_mut(pid)
                    .and_then(|t| t.write_register(tid, regnum, &addr.to_le_bytes()))
                {
                    self.send_target_error(&e);
                    return;
                }
            }
        }
        let action = if step {
            ResumeAction::Step(sig)
        } else {
            ResumeAction::Continue(sig)
        };
        let plan = if step {
            // `s`: only the selected thread moves (others stay stopped).
            ResumePlan {
                threads: vec![(tid, action)],
                default: None,
            }
        } else {
            ResumePlan {
                threads: vec![(tid, action)],
                default: Some(ResumeAction::Continue(None)),
            }
        };
        let mut plans = BTreeMap::new();
        plans.insert(pid, plan);
        self.start_resume(plans);
    }

    pub(in crate::session) fn handle_vcont(&mut self, actions: &[VContAction]) {
        if self.features.disabled.vcont {
            self.send(&reply::empty());
            return;
        }
        if self.procs.is_empty() {
            self.reply_no_process_resume();
            return;
        }
        let ranges = actions
            .iter()
            .any(|a| matches!(a.kind, VContKind::Range(..)));
        if ranges && !self.capabilities().range_step {
            // Not in our `vCont?` reply: refused, never narrowed to a step.
            self.send_target_error(&TargetError::Unsupported("range stepping (vCont;r)"));
            return;
        }
        let Some(scoped) = self.vcont_scopes(actions) else {
            return;
        };
        let mut plans: BTreeMap<Pid, ResumePlan> = BTreeMap::new();
        let mut default: Option<ResumeAction> = None;
        for (scope, action) in scoped {
            match scope {
                VContScope::All => {
                    if default.is_none() {
                        default = Some(action);
                    }
                }
                VContScope::Process(p) => {
                    let plan = plans.entry(p).or_insert_with(|| ResumePlan {
                        threads: vec![],
                        default: None,
                    });
                    if plan.default.is_none() {
                        plan.default = Some(action);
                    }
                }
                VContScope::Thread(pid, tid) => {
                    let plan = plans.entry(pid).or_insert_with(|| ResumePlan {
                        threads: vec![],
                        default: None,
                    });
                    // The first action that matches a thread wins.
                    if !plan.threads.iter().any(|(t, _)| *t == tid) {
                        plan.threads.push((tid, action));
                    }
                }
            }
        }
        for pid in self.procs.keys() {
            let plan = plans.entry(*pid).or_insert_with(|| ResumePlan {
                threads: vec![],
                default: None,
            });
            if plan.default.is_none() {
                plan.default = default;
            }
        }
        plans.retain(|_, p| {
            !p.threads.iter().all(|(_, a)| *a == ResumeAction::Stop)
                || matches!(p.default, Some(a) if a != ResumeAction::Stop)
        });
        if plans.is_empty() {
            self.send_error(crate::error::ErrorCode::Invalid, "vCont resumes nothing");
            return;
        }
        self.start_resume(plans);
    }

    /// The one reading of `vCont` actions, for all-stop ([`Self::handle_vcont`])
    /// and non-stop (`nonstop.rs`) alike: each action with its signal in
    /// Linux numbering and what it applies to, in the client's order (the
    /// first action that matches a thread wins). A bad signal or an unknown
    /// thread is answered here, and `None` returned. A `p<pid>.-1` whose pid
    /// is out of range applies to nothing.
    pub(in crate::session) fn vcont_scopes(
        &mut self,
        actions: &[VContAction],
    ) -> Option<Vec<(VContScope, ResumeAction)>> {
        let mut scoped = Vec::with_capacity(actions.len());
        for a in actions {
            let action = match a.kind {
                VContKind::Continue => ResumeAction::Continue(None),
                VContKind::Step => ResumeAction::Step(None),
                VContKind::Stop => ResumeAction::Stop,
                VContKind::Range(start, end) => ResumeAction::RangeStep { start, end },
                VContKind::ContinueSig(s) | VContKind::StepSig(s) => {
                    let Some(sig) = self.signal_from_wire(s) else {
                        self.send_error(crate::error::ErrorCode::Invalid, "unknown signal number");
                        return None;
                    };
                    let sig = Some(sig).filter(|s| *s != 0);
                    if matches!(a.kind, VContKind::ContinueSig(_)) {
                        ResumeAction::Continue(sig)
                    } else {
                        ResumeAction::Step(sig)
                    }
                }
            };
            let scope = match a.thread {
                None => VContScope::All,
                // `p<pid>.-1` or `-1`: every thread of that process (or all).
                Some(id) if id.tid == IdSel::All => match id.pid {
                    Some(IdSel::Id(p)) => match Pid::try_from(p) {
                        Ok(p) => VContScope::Process(p),
                        Err(_) => continue,
                    },
                    _ => VContScope::All,
                },
                Some(id) => {
                    let Some((pid, tid)) = self.resolve_thread(Some(id)) else {
                        self.send_error(
                            crate::error::ErrorCode::NoSuchProcess,
                            "vCont names an unknown thread",
                        );
                        return None;
                    };
                    VContScope::Thread(pid, tid)
                }
            };
            scoped.push((scope, action));
        }
        Some(scoped)
    }

    pub(in crate::session) fn reply_no_process_resume(&mut self) {
        // The process is gone (e.g. killed from outside while stopped):
        // report its end again, or an error if nothing was ever recorded.
        let opts = self.features.stop_options();
        match self.journal.reply(&opts) {
            Some(r)
                if matches!(
                    self.journal.event(),
                    Some(StopEvent::Exited { .. } | StopEvent::Terminated { .. })
                ) =>
            {
                self.send(&r)
            }
            _ => self.send_error(
                crate::error::ErrorCode::NoSuchProcess,
                "no process to resume",
            ),
        }
    }

    pub(in crate::session) fn start_resume(&mut self, plans: BTreeMap<Pid, ResumePlan>) {
        self.xfer_cache.clear();
        self.interrupt_echo_due = false;
        self.stop_echo_owed = false;
        // An exit kept from the last stop's wake-up is this resume's
        // reply; nothing runs (gdbserver reports a pending status without
        // resuming).
        while !self.deferred_ends.is_empty() {
            let end = self.deferred_ends.remove(0);
            if self.procs.contains_key(&end.pid()) {
                self.run = crate::session::RunState::Running;
                self.on_stop(end);
                return;
            }
        }
        // A thread sitting on one of the GPU library's own breakpoints must
        // get off it first, out of the client's sight.
        if R::prepare_resume(self, &plans) {
            self.run = crate::session::RunState::Running;
            self.on_target_event();
            return;
        }
        let mut resumed = 0;
        for (pid, plan) in plans {
            let r = match self.procs.get_mut(&pid) {
                Some(t) => t.resume(&plan),
                None => continue,
            };
            match r {
                Ok(()) => resumed += 1,
                Err(TargetError::Running) => {}
                Err(e) => {
                    self.send_target_error(&e);
                    return;
                }
            }
        }
        if resumed == 0 {
            self.send_error(
                crate::error::ErrorCode::NoSuchProcess,
                "nothing was resumed",
            );
            return;
        }
        self.run = crate::session::RunState::Running;
        // Events already queued by the target (pending stops of other
        // threads) are picked up at once, and so are GPU stops that
        // happened while the CPU was stopped (gdb's GPU path).
        self.on_target_event();
        R::report_gpu_stop(self);
    }

    /// Whether this session answers lldb's interrupts twice, as lldb reads
    /// them (`interrupt_echo_due`, `stop_echo_owed`): an all-stop session
    /// whose client speaks lldb's dialect, unless
    /// `--no-lldb-interrupt-echo`.
    pub(in crate::session) fn lldb_echoes(&self) -> bool {
        !self.launch.no_lldb_interrupt_echo
            && self.features.dialect == crate::session::Dialect::Lldb
            && !self.nonstop.on
    }

    pub(in crate::session) fn handle_interrupt(&mut self) {
        if !self.is_running() {
            if std::mem::take(&mut self.stop_echo_owed) {
                // The interrupt raced with the stop just reported: lldb
                // reads a second stop reply (`stop_echo_owed`).
                let opts = self.features.stop_options();
                if let Some(r) = self.journal.reply(&opts) {
                    tracing::debug!(target: "packets", session = self.id, "interrupt after the stop: its reply sent again for lldb");
                    self.send(&r);
                }
                return;
            }
            tracing::debug!(target: "packets", session = self.id, "interrupt while stopped: ignored");
            return;
        }
        self.role.client_interrupted();
        self.interrupt_echo_due = self.lldb_echoes();
        if R::release_held_end(self) || R::stop_now_if_held(self) {
            return;
        }
        for t in self.procs.values_mut() {
            if let Err(e) = t.interrupt() {
                tracing::warn!(target: "ptrace", "interrupt failed: {e}");
            }
        }
        tracing::debug!(target: "ptrace", session = self.id, "interrupt: the processes were asked to stop");
        // A stop the interrupt already queued is picked up at once, as after
        // a resume (`start_resume`). A GPU target with no wave to stop
        // reports the interrupt so, with no fd that would wake the loop
        // (lldb interrupts the GPU process to insert breakpoints while it
        // runs; without this the client waits out its packet timeout); a
        // native process's SIGSTOP is usually still on its way (SIGCHLD).
        self.on_target_wakeup(false);
    }
}
