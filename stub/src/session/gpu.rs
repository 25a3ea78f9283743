//! GPU hooks of the sessions.
//!
//! CPU session: attach the GPU library when a process is adopted, carry
//! out the library's host-breakpoint requests on our own internal
//! breakpoints, and handle hits of those breakpoints invisibly (report to
//! the library, wait for BREAKPOINT_RESUME when it says HALT, step over,
//! resume the client's plan). GPU session: the CPU process's end reaches
//! it as `W`/`X`.

use std::collections::BTreeMap;

use gpu_target::model::BreakpointAction;
use gpu_target::model::BreakpointId;

use super::CpuRole;
use super::GpuRole;
use super::Session;
use super::SessionControl;
use super::SessionRole;
use crate::gpu::controller::GpuNews;
use crate::gpu::host::HostRequest;
use crate::packet::reply;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::Tid;

/// The client's plan once carried out: the same actions without their
/// signals, which the first resume delivered (the target keeps one for a
/// thread that did not run, `deliver`). A re-resume after an internal stop
/// delivered them again: a handler ran once per hit of the runtime's hook.
pub(super) fn carried_out(plans: &BTreeMap<Pid, ResumePlan>) -> BTreeMap<Pid, ResumePlan> {
    let plain = |a: ResumeAction| match a {
        ResumeAction::Continue(_) => ResumeAction::Continue(None),
        ResumeAction::Step(_) => ResumeAction::Step(None),
        other => other,
    };
    plans
        .iter()
        .map(|(pid, p)| {
            let plan = ResumePlan {
                threads: p.threads.iter().map(|(t, a)| (*t, plain(*a))).collect(),
                default: p.default.map(plain),
            };
            (*pid, plan)
        })
        .collect()
}

/// An internal breakpoint hit being handled out of the client's sight.
#[derive(Debug, Clone)]
pub(super) enum Internal {
    /// The library said HALT: wait for BREAKPOINT_RESUME of `id`.
    Held {
        pid: Pid,
        tid: Tid,
        addr: u64,
        id: BreakpointId,
    },
    /// Single-stepping `tid` off the breakpoint at `addr`.
    SteppingOver { pid: Pid, tid: Tid, addr: u64 },
    /// The client single-steps `tid` off `addr`, where only our
    /// breakpoint remains: it is lifted for the step and put back at the
    /// next stop, which the client sees as its own.
    ClientStepping { pid: Pid, addr: u64 },
}

/// Non-stop: one thread's hit of the GPU library's breakpoint, handled out
/// of the client's sight while the other threads keep their state
/// (docs/architecture.md, "Interrupts and internal stops").
#[derive(Debug, Clone, Copy)]
pub(super) enum NsInternal {
    /// The library said HALT: the thread waits for BREAKPOINT_RESUME of
    /// `id` at `addr`. `then`: the client's action to carry out after it;
    /// `None` once the client was told the thread stopped (its `vCont;t`),
    /// until it resumes the thread.
    Held {
        addr: u64,
        id: BreakpointId,
        then: Option<ResumeAction>,
    },
    /// Reported stopped to the client (its `vCont;t`) at `addr`, where the
    /// library is done with it: the client's resume steps it off first.
    Parked { addr: u64 },
    /// Single-stepping off the breakpoint at `addr`, lifted; then `then`.
    SteppingOver { addr: u64, then: ResumeAction },
    /// The client's own step runs with the breakpoint at `addr` lifted;
    /// put back at the step's stop, which the client sees.
    ClientStepping { addr: u64 },
}

/// An action as carried out again by gdbmux: without the signal that the
/// client's resume delivered already.
fn without_signal(a: ResumeAction) -> ResumeAction {
    match a {
        ResumeAction::Continue(_) => ResumeAction::Continue(None),
        ResumeAction::Step(_) => ResumeAction::Step(None),
        other => other,
    }
}

impl<R: SessionRole> Session<R> {
    /// Carry out queued host-breakpoint requests of the library.
    pub(super) fn gpu_apply_host_requests(&mut self) {
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return;
        };
        let reqs = gpu.borrow_mut().take_host_requests();
        let pid = gpu.borrow().cpu_pid();
        let Some(t) = pid.and_then(|p| self.procs.get_mut(&p)) else {
            return;
        };
        for (r, addr) in reqs {
            let res = match (r, addr) {
                (HostRequest::Insert { .. }, Some(a)) => t.insert_internal_breakpoint(a),
                (HostRequest::Remove { .. }, Some(a)) => t.remove_internal_breakpoint(a),
                _ => Ok(()),
            };
            if let Err(e) = res {
                tracing::warn!(target: "dbgapi", ?r, "host breakpoint request failed: {e}");
            } else {
                tracing::debug!(target: "dbgapi", ?r, "host breakpoint request done");
            }
        }
    }

    /// Take in the GPU library's events through the multiplexer (which
    /// applies the runtime's transitions first, and passes the news on to
    /// the other sessions).
    pub(super) fn pump_gpu(&mut self) -> crate::gpu::GpuNews {
        self.mux
            .as_ref()
            .map(|m| m.borrow_mut().pump_gpu_for(self.id))
            .unwrap_or_default()
    }

    /// A CPU session's process is about to be detached (`D`, or its
    /// client went away from an attached process): the GPU side lets go
    /// first, while the process is still ours
    /// ([`crate::gpu::controller::GpuController::prepare_detach`]: GPU
    /// breakpoints out, displaced steps completed, waves resumed). The
    /// library itself detaches once the process is released
    /// (`MuxEvent::CpuProcessReleased`).
    pub(super) fn gpu_before_detach(&self, pid: Pid) {
        if !self.role.reports_process_ends() {
            return;
        }
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return;
        };
        if gpu.borrow().cpu_pid() == Some(pid) {
            tracing::info!(target: "mux", pid, "GPU: letting go before the CPU process is detached");
            gpu.borrow_mut().prepare_detach();
        }
    }

    /// A CPU session's process was detached or killed: the multiplexer
    /// ends the GPU session that depends on it (the role decides,
    /// `SessionRole::reports_process_ends`).
    pub(super) fn cpu_process_released(&self, pid: Pid, how: crate::mux::Release) {
        if self.role.reports_process_ends() {
            self.mux_event(crate::mux::MuxEvent::CpuProcessReleased { pid, how });
        }
    }

    /// A CPU session's process exited or was killed by a signal.
    pub(super) fn cpu_process_ended(&self, stop: &StopEvent) {
        if self.role.reports_process_ends() {
            self.mux_event(crate::mux::MuxEvent::CpuProcessEnded(stop));
        }
    }

    /// Tell the multiplexer something (no-op without one).
    pub(super) fn mux_event(&self, ev: crate::mux::MuxEvent<'_>) {
        if let Some(m) = &self.mux {
            m.borrow_mut().on(ev);
        }
    }
}

/// The CPU role's GPU hooks: the engine reaches them through
/// [`SessionRole`]'s hooks (`after_adopt`, `intercept_stop`,
/// `prepare_resume`, `report_gpu_stop`, `decorate_stop`, `gpu_news`, the
/// accelerator plugin), which do nothing on a GPU session.
impl Session<CpuRole> {
    /// After a CPU process was adopted: attach the GPU library to it.
    pub(super) fn gpu_attach(&mut self, pid: Pid) {
        let Some(mux) = self.mux.clone() else { return };
        let Some(gpu) = mux.borrow().gpu() else {
            return;
        };
        let r = gpu.borrow_mut().attach(pid);
        match r {
            Ok(notifier) => mux
                .borrow_mut()
                .on(crate::mux::MuxEvent::GpuAttached { pid, notifier }),
            Err(e) => tracing::warn!(target: "dbgapi", pid, "GPU attach failed: {e}"),
        }
        self.gpu_apply_host_requests();
    }

    /// A CPU stop while running: if it is a hit of the library's own
    /// breakpoint (and not also a client breakpoint), handle it here and
    /// return `true` (the client sees nothing).
    pub(super) fn gpu_intercept(&mut self, stop: &StopEvent) -> bool {
        if self.all_stop_hold_cpu_exit(stop) {
            return true;
        }
        let cpu = &mut self.role;
        if let Some(Internal::ClientStepping { pid, addr }) = cpu.internal.clone() {
            cpu.internal = None;
            self.reinsert_lifted(pid, addr);
            return false;
        }
        // Finishing a step-over of an internal breakpoint.
        if let Some(Internal::SteppingOver { pid, tid, addr }) = cpu.internal.clone() {
            if let StopEvent::Stopped {
                pid: p,
                tid: t,
                kind: StopKind::Step,
                ..
            } = stop
            {
                if *p == pid && *t == tid {
                    self.set_internal(None);
                    self.reinsert_lifted(pid, addr);
                    self.resume_last_plans(pid, tid);
                    return true;
                }
            }
            // Something else happened during the step: put the breakpoint
            // back and report it.
            self.set_internal(None);
            self.reinsert_lifted(pid, addr);
            return false;
        }
        let StopEvent::Stopped {
            pid,
            tid,
            kind: StopKind::SwBreak,
            ..
        } = stop
        else {
            return false;
        };
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return false;
        };
        let Some(t) = self.procs.get_mut(pid) else {
            return false;
        };
        let Ok(pc) = t.pc(*tid) else { return false };
        let Some(id) = gpu.borrow().host_breakpoint(pc) else {
            return false;
        };
        let client_too = t.is_client_breakpoint(pc);
        let action = gpu.borrow_mut().report_host_hit(id, *tid);
        self.gpu_apply_host_requests();
        let news = self.pump_gpu();
        self.gpu_on_news(&news);
        if client_too {
            // The client has its own breakpoint here: it sees the stop
            // (and steps over it itself, which covers ours too).
            return false;
        }
        match action {
            Ok(BreakpointAction::Halt) if !news.resumed.contains(&id) => {
                tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid = *tid, "host breakpoint hit held until the library's BREAKPOINT_RESUME");
                self.set_internal(Some(Internal::Held {
                    pid: *pid,
                    tid: *tid,
                    addr: pc,
                    id,
                }));
                // The process is stopped: a stop owed to the client (its
                // interrupt came before this hit was collected) is answered
                // now, not after the library's resume, which may be late.
                self.answer_owed_stop(*pid, *tid);
            }
            Ok(_) => self.leave_internal(*pid, *tid, pc),
            Err(e) => {
                tracing::warn!(target: "dbgapi", "report_breakpoint_hit: {e}");
                self.leave_internal(*pid, *tid, pc);
            }
        }
        true
    }

    /// Whether a stop is owed to the client while its resume runs: a
    /// process end kept for it (an exit held until the other processes
    /// stopped, whose stop was this internal one: `deferred_ends`), its
    /// interrupt (`CpuRole::interrupt_wanted`), a GPU stop being reported
    /// to gdb or an all-stop stop being made (each interrupted the process
    /// and waits for its stop), or, `--multi`, the stop of a vanished
    /// client's resume that the next client reads. gdbmux runs the process
    /// on by itself after an internal stop only when none is owed
    /// (docs/architecture.md, "Interrupts and internal stops").
    fn owes_stop(&self) -> bool {
        !self.deferred_ends.is_empty()
            || self.role.interrupt_wanted
            || self.role.gpu_report.is_some()
            || self.role.all_stop_report.is_some()
            || self.run == super::RunState::Orphaned
    }

    /// At an internal stop that gdbmux handled (the process is stopped,
    /// thread `tid` at or past the library's breakpoint): a stop owed to the
    /// client is reported now, as the interrupt's stop (gdb: `T02`, lldb:
    /// `T13`; a GPU report or all-stop description replaces it as at any
    /// interrupt stop), instead of running the process on and interrupting
    /// it again (which a second internal stop, or a SIGSTOP taken for
    /// another stop, could defeat). Returns `true` when it reported.
    fn answer_owed_stop(&mut self, pid: Pid, tid: Tid) -> bool {
        if !self.is_running() || !self.owes_stop() {
            return false;
        }
        tracing::info!(target: "mux", session = self.id, pid, tid, internal = ?self.role.internal, "a stop is owed to the client: reported at the internal stop instead of running on");
        if !self.deferred_ends.is_empty() {
            // The end goes out as this resume's reply (as at a resume,
            // `start_resume`); an interrupt still pending is satisfied by it.
            let end = self.deferred_ends.remove(0);
            self.on_stop(end);
            return true;
        }
        self.on_stop(StopEvent::Stopped {
            pid,
            tid,
            signal: libc::SIGSTOP,
            kind: StopKind::Interrupt,
        });
        true
    }

    /// The library's hit at `addr` is handled (it said RESUME, or its
    /// BREAKPOINT_RESUME came): answer an owed stop, or take thread `tid`
    /// off the breakpoint as the client's plan moves it (a step runs with
    /// the breakpoint lifted; anything else steps over it first, then the
    /// client's plan is resumed).
    fn leave_internal(&mut self, pid: Pid, tid: Tid, addr: u64) {
        if self.answer_owed_stop(pid, tid) {
            return;
        }
        let steps = self.role.last_plans.get(&pid).is_some_and(|p| {
            matches!(
                p.threads
                    .iter()
                    .find(|(t, _)| *t == tid)
                    .map(|(_, a)| *a)
                    .or(p.default),
                Some(ResumeAction::Step(_) | ResumeAction::RangeStep { .. })
            )
        });
        if steps {
            if let Some(t) = self.procs.get_mut(&pid) {
                match t.remove_internal_breakpoint(addr) {
                    Ok(()) => {
                        self.set_internal(Some(Internal::ClientStepping { pid, addr }));
                        self.resume_last_plans(pid, tid);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(target: "dbgapi", "lifting host breakpoint for a client step: {e}")
                    }
                }
            }
        }
        self.step_over_internal(pid, tid, addr);
    }

    /// The client interrupts while the process is held at the library's
    /// breakpoint (waiting for BREAKPOINT_RESUME): the process is stopped,
    /// so the interrupt is answered at once (`true`); the thread stays held
    /// (`gpu_prepare_resume`, `gpu_on_news`).
    pub(super) fn gpu_interrupt_while_held(&mut self) -> bool {
        match self.role.internal {
            Some(Internal::Held { pid, tid, .. }) => self.answer_owed_stop(pid, tid),
            _ => false,
        }
    }

    /// Before the client's resume: a thread stopped on an address where
    /// only our (already reported) internal breakpoint remains — the
    /// client removed its own `Z0` there — must not trap on it again. A
    /// client step runs with the breakpoint lifted; anything else first
    /// steps over it internally, then resumes the client's plan. Returns
    /// `true` when it started the resume itself.
    pub(super) fn gpu_prepare_resume(&mut self, plans: &BTreeMap<Pid, ResumePlan>) -> bool {
        let continues = plans.values().any(|p| {
            p.default
                .is_some_and(|a| matches!(a, ResumeAction::Continue(_)))
                || p.threads
                    .iter()
                    .any(|(_, a)| matches!(a, ResumeAction::Continue(_)))
        });
        let resume = match self.mux.as_ref().and_then(|m| m.borrow().gpu()) {
            Some(g) => {
                let mut g = g.borrow_mut();
                g.note_cpu_resume();
                g.all_stop_mut().note_cpu_resume(continues)
            }
            None => crate::gpu::allstop::CpuResume::Plain,
        };
        self.all_stop_cpu_resume(resume);
        let keep = continues
            && self
                .mux
                .as_ref()
                .and_then(|m| m.borrow().gpu())
                .is_some_and(|g| g.borrow_mut().all_stop_mut().keep_cpu_stopped());
        if keep {
            // Reported at the wake-up all-stop asked for (`all_stop_cpu`).
            tracing::info!(target: "mux", session = self.id, "all-stop: the GPU stopped for an update: the CPU's continue ends at once");
            return true;
        }
        if let Some(Internal::Held { tid, id, .. }) = self.role.internal {
            // The client's stop came while a thread was held at the
            // library's breakpoint (its interrupt): the thread stays held;
            // the resume goes on once the library's BREAKPOINT_RESUME comes
            // (`gpu_on_news`, with this plan).
            tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "resume while held at the library's breakpoint: it waits for BREAKPOINT_RESUME");
            return true;
        }
        if self.role.internal.is_some() {
            return false;
        }
        let Some(crate::stop::StopEvent::Stopped { pid, tid, .. }) = self.journal.event().cloned()
        else {
            return false;
        };
        let Some(plan) = plans.get(&pid) else {
            return false;
        };
        let action = plan
            .threads
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, a)| *a)
            .or(plan.default);
        let Some(t) = self.procs.get_mut(&pid) else {
            return false;
        };
        let Ok(pc) = t.pc(tid) else { return false };
        if !t.is_internal_breakpoint(pc) || t.is_client_breakpoint(pc) {
            return false;
        }
        match action {
            None | Some(ResumeAction::Stop) => false,
            Some(ResumeAction::Step(_)) | Some(ResumeAction::RangeStep { .. }) => {
                if let Err(e) = t.remove_internal_breakpoint(pc) {
                    tracing::warn!(target: "dbgapi", "lifting host breakpoint for a client step: {e}");
                    return false;
                }
                self.set_internal(Some(Internal::ClientStepping { pid, addr: pc }));
                false
            }
            Some(ResumeAction::Continue(_)) => {
                self.step_over_internal(pid, tid, pc);
                true
            }
        }
    }

    /// All-stop: what the CPU's resume means for the GPU target. The helper
    /// is told to continue the GPU target (an `A` packet on this
    /// connection, `crate::gpu::allstop::RUN_GPU_NOTICE`); without the
    /// helper, a console line says that the CPU waits for the stopped wave.
    fn all_stop_cpu_resume(&mut self, resume: crate::gpu::allstop::CpuResume) {
        use crate::gpu::allstop::CpuResume;
        match resume {
            CpuResume::Plain => {}
            CpuResume::RunGpu => {
                tracing::info!(target: "mux", session = self.id, "all-stop: telling the client to continue the GPU");
                self.send(crate::gpu::allstop::RUN_GPU_NOTICE);
            }
            CpuResume::WaitsForWave(tid) => {
                tracing::info!(target: "mux", session = self.id, wave = tid, "CPU continued while a wave is stopped (no lldb helper)");
                self.send(&reply::console(&format!(
                    "gdbmux: GPU wave {tid} is stopped in the GPU target: the CPU waits in the GPU \
                     runtime for its dispatch until the GPU target is continued (`target select 1`, \
                     `process continue`; Ctrl-C stops the CPU). gdbmux's lldb helper (the \
                     `command script import` of the lldb line gdbmux prints) runs both together.\n"
                )));
            }
        }
    }

    /// All-stop: the CPU process ended while the helper runs the GPU on the
    /// client's CPU continue. The GPU session reports its end at once; this
    /// end is held until the client interrupts (the helper does, once it
    /// has the GPU's end), so the command waiting on the CPU ends with both
    /// targets exited (docs/gpu-lldb.md, finding 15). Returns `true` when
    /// held.
    fn all_stop_hold_cpu_exit(&mut self, stop: &StopEvent) -> bool {
        if !matches!(
            stop,
            StopEvent::Exited { .. } | StopEvent::Terminated { .. }
        ) {
            return false;
        }
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return false;
        };
        if !gpu.borrow_mut().all_stop_mut().hold_cpu_exit(stop) {
            return false;
        }
        tracing::info!(target: "mux", session = self.id, "all-stop: the CPU process's end waits for the client's interrupt (lldb helper)");
        self.cpu_process_ended(stop);
        true
    }

    /// The client interrupts: a CPU end held by all-stop is reported now
    /// (`true`), in place of the interrupt.
    pub(super) fn gpu_release_held_exit(&mut self) -> bool {
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return false;
        };
        let Some(stop) = gpu.borrow_mut().all_stop_mut().take_held_cpu_exit() else {
            return false;
        };
        tracing::info!(target: "mux", session = self.id, "interrupt: reporting the held end of the CPU process");
        gpu.borrow_mut().all_stop_mut().note_cpu_stop(false);
        self.role.stop_reaches_client();
        self.record_stop(stop);
        self.run = super::RunState::Stopped;
        let opts = self.features.stop_options();
        if let Some(r) = self.journal.reply(&opts) {
            self.send(&r);
        }
        true
    }

    /// The CPU role's internal-breakpoint state.
    fn set_internal(&mut self, v: Option<Internal>) {
        self.role.internal = v;
    }

    /// Put back the library's breakpoint at `addr`, lifted for a step, if
    /// the library still has one there: the hit that was stepped over may
    /// have been the runtime's unload, and the library's removal of its
    /// breakpoint can come while the breakpoint is lifted (a breakpoint
    /// put back then is no one's, and its next hit would reach the client
    /// as a stray SIGTRAP).
    fn reinsert_lifted(&mut self, pid: Pid, addr: u64) {
        let wanted = self
            .mux
            .as_ref()
            .and_then(|m| m.borrow().gpu())
            .is_some_and(|g| g.borrow().host_breakpoint(addr).is_some());
        if !wanted {
            tracing::debug!(target: "dbgapi", addr, "host breakpoint removed by the library while lifted: not put back");
            return;
        }
        if let Some(tg) = self.procs.get_mut(&pid) {
            if let Err(e) = tg.insert_internal_breakpoint(addr) {
                tracing::warn!(target: "dbgapi", "re-inserting host breakpoint: {e}");
            }
        }
    }

    fn step_over_internal(&mut self, pid: Pid, tid: Tid, addr: u64) {
        let Some(t) = self.procs.get_mut(&pid) else {
            return;
        };
        if let Err(e) = t.remove_internal_breakpoint(addr) {
            tracing::warn!(target: "dbgapi", "lifting host breakpoint: {e}");
        }
        let plan = ResumePlan {
            threads: vec![(tid, ResumeAction::Step(None))],
            default: None,
        };
        match t.resume(&plan) {
            Ok(()) => self.set_internal(Some(Internal::SteppingOver { pid, tid, addr })),
            Err(e) => {
                tracing::warn!(target: "dbgapi", "step over host breakpoint: {e}");
                let _ = t.insert_internal_breakpoint(addr);
                self.resume_last_plans(pid, tid);
            }
        }
    }

    /// The internal stop of thread `tid` is behind us: resume the client's
    /// last plan, unless a stop is owed to the client, which is reported
    /// instead (`answer_owed_stop`; the process is stopped, which is all
    /// an interrupt asks).
    fn resume_last_plans(&mut self, pid: Pid, tid: Tid) {
        if self.answer_owed_stop(pid, tid) {
            return;
        }
        let plans = std::mem::take(&mut self.role.last_plans);
        for (pid, plan) in &plans {
            if let Some(t) = self.procs.get_mut(pid) {
                if let Err(e) = t.resume(plan) {
                    tracing::warn!(target: "ptrace", pid, "re-resume after host breakpoint: {e}");
                }
            }
        }
        self.role.last_plans = carried_out(&plans);
    }

    /// The CPU role's part of GPU events (the notifier was readable, or an
    /// internal breakpoint was reported): console lines, a held internal
    /// breakpoint released, the library's host-breakpoint requests, a wave
    /// stop reported to gdb.
    pub(super) fn gpu_on_news(&mut self, news: &GpuNews) {
        self.gpu_nonstop_news(news);
        if news.runtime_loaded && self.is_running() {
            // Stock lldb 23.1 aborts (LLVM ERROR: disassembly not yet
            // supported for subtarget) when it displays a GPU stop
            // without line info; research/lldb-accelerator.md §2.4.8.
            self.send(&reply::console(
                "gdbmux: GPU runtime loaded. lldb: the GPU target appears by itself (the helper \
                 gdbmux_lldb.py that gdbmux's lldb line imports sets what stock lldb 23.1 needs; \
                 without it: `settings set stop-disassembly-display never` and `settings set -g \
                 target.use-fast-stepping false`); gdb: `monitor gpu` shows the GPU.\n",
            ));
        }
        if self.is_running() {
            for line in &news.console {
                self.send(&reply::console(line));
            }
        }
        let held = self.role.internal.clone();
        if let Some(Internal::Held { pid, tid, addr, id }) = held {
            if news.resumed.contains(&id) {
                self.set_internal(None);
                if self.is_running() {
                    self.leave_internal(pid, tid, addr);
                } else {
                    // The client stopped (its interrupt) while the thread
                    // was held: it stays at the breakpoint, which the
                    // client's next resume steps off (`gpu_prepare_resume`).
                    tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "BREAKPOINT_RESUME while the client is stopped: its next resume steps off the breakpoint");
                }
            }
        }
        self.gpu_apply_host_requests();
        self.gpu_report_stop();
    }

    /// All-stop (`crate::gpu::allstop`): a wave stopped while the client
    /// runs the CPU: stop the CPU process too, and report that stop with a
    /// description naming the wave (lldb shows it as the stop reason).
    fn all_stop_cpu(&mut self) {
        if !self.is_running()
            || self.role.all_stop_report.is_some()
            || self.role.gpu_report.is_some()
        {
            return;
        }
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return;
        };
        let Some(why) = gpu.borrow_mut().all_stop_mut().take_cpu_stop() else {
            return;
        };
        let tid = match why {
            crate::gpu::allstop::CpuStopFor::Wave(tid) => tid,
            crate::gpu::allstop::CpuStopFor::Update => {
                tracing::info!(target: "mux", "all-stop: stopping the CPU with the GPU (update)");
                let report = crate::gpu::allstop::UPDATE_STOP.to_string();
                if !gpu.borrow_mut().all_stop_mut().take_cpu_unresumed() {
                    let launcher = self.launcher_then_interrupt();
                    self.role.all_stop_report = Some((report, launcher));
                    self.gpu_interrupt_while_held();
                    return;
                }
                // Not resumed (`gpu_prepare_resume`): its stop is the last
                // one's thread, stopped again.
                let Some((pid, tid)) = self.journal.event().and_then(|e| match e {
                    StopEvent::Stopped { pid, tid, .. } => Some((*pid, *tid)),
                    _ => None,
                }) else {
                    return;
                };
                self.role.all_stop_report = Some((report, None));
                self.on_stop(StopEvent::Stopped {
                    pid,
                    tid,
                    signal: libc::SIGSTOP,
                    kind: StopKind::Interrupt,
                });
                return;
            }
        };
        let text = {
            let mut g = gpu.borrow_mut();
            let info = g.wave_of(tid).and_then(|w| g.wave_info(w).ok());
            let cos = g.code_objects().to_vec();
            let (pc, reasons) = info
                .map(|i| (i.pc.unwrap_or(0), i.stop_reason.unwrap_or_default()))
                .unwrap_or_default();
            let why = match crate::gpu::target::stop_kind(reasons) {
                (_, StopKind::SwBreak) => "a breakpoint".to_string(),
                (_, StopKind::Step) => "a single step".to_string(),
                _ => reasons.description(),
            };
            let kernel = self
                .symbolizer
                .describe(&cos, pc)
                .unwrap_or_else(|| "?".into());
            let line = self
                .symbolizer
                .source_line(&cos, pc)
                .map(|(f, l)| format!(" at {}:{l}", f.rsplit('/').next().unwrap_or(&f)))
                .unwrap_or_default();
            format!(
                "{} GPU wave {tid} stopped at {why} in {kernel}{line}; the GPU target shows it; \
                 `process continue` on the GPU target runs both",
                crate::gpu::allstop::CPU_STOP_PREFIX
            )
        };
        tracing::info!(target: "mux", wave = tid, "all-stop: stopping the CPU with the GPU");
        let launcher = self.launcher_then_interrupt();
        self.role.all_stop_report = Some((text, launcher));
        // Held at the library's breakpoint, the CPU is stopped already.
        self.gpu_interrupt_while_held();
    }

    /// The thread that launched the dispatch (found before the interrupt:
    /// a stopped thread no longer waits in the runtime,
    /// crate::gpu::launcher), then every process interrupted for a GPU stop.
    fn launcher_then_interrupt(&mut self) -> Option<Pid> {
        let launcher = self
            .procs
            .keys()
            .next()
            .and_then(|pid| crate::gpu::launcher::launching_thread(*pid));
        for t in self.procs.values_mut() {
            if let Err(e) = t.interrupt() {
                tracing::warn!(target: "ptrace", "interrupt for a GPU stop: {e}");
            }
        }
        launcher
    }

    /// gdb's path to the GPU (docs/architecture.md, "gdb's path to the GPU"): when a wave stops (breakpoint,
    /// fault) while the client waits on the CPU and no GPU session is
    /// connected, stop the CPU process and report that stop with a console
    /// line naming the wave, kernel and address.
    pub(super) fn gpu_report_stop(&mut self) {
        self.all_stop_cpu();
        if !self.is_running() || self.role.gpu_report.is_some() {
            return;
        }
        let Some(mux) = self.mux.clone() else { return };
        let (gpu, report) = {
            let m = mux.borrow();
            (m.gpu(), m.report_gpu_stops_to_cpu())
        };
        let Some(gpu) = gpu else { return };
        if !report {
            return;
        }
        let stop = {
            let mut g = gpu.borrow_mut();
            loop {
                let Some(s) = g.pop_stop() else { return };
                if s.reasons.0 != 0 {
                    break s;
                }
            }
        };
        let (text, kernel) = {
            // Where the wave runs: its info at the stop (kept by the
            // controller), or asked again.
            let info = gpu.borrow_mut().wave_info(stop.wave).ok();
            let g = gpu.borrow();
            let cos = g.code_objects().to_vec();
            let pc = stop.pc.unwrap_or(0);
            let kernel = self
                .symbolizer
                .describe(&cos, pc)
                .unwrap_or_else(|| "?".into());
            let reasons = stop.reasons;
            let why = crate::gpu::target::stop_kind(reasons);
            let why = match why {
                (_, StopKind::SwBreak) => "a breakpoint".to_string(),
                (_, StopKind::Step) => "a single step".to_string(),
                _ => reasons.description(),
            };
            let c = info
                .as_ref()
                .and_then(|i| i.workgroup_coord)
                .unwrap_or_default();
            let line = self
                .symbolizer
                .source_line(&cos, pc)
                .map(|(f, l)| {
                    let f = f.rsplit('/').next().unwrap_or(&f).to_string();
                    format!(", {f}:{l}")
                })
                .unwrap_or_default();
            (
                format!(
                    "gdbmux: GPU wave {} stopped at {why} in kernel {kernel} at {pc:#x}{line} (dispatch {}, workgroup ({},{},{}), wave {} in group). \
                     See `monitor gpu waves`; resume it with `monitor gpu continue`.\n",
                    stop.tid,
                    info.as_ref().map_or(0, |i| i.dispatch.0),
                    c[0],
                    c[1],
                    c[2],
                    info.as_ref()
                        .and_then(|i| i.wave_number_in_workgroup)
                        .unwrap_or(0)
                ),
                kernel,
            )
        };
        tracing::info!(target: "mux", wave = stop.tid, %kernel, "GPU stop reported to the CPU session");
        let launcher = self.launcher_then_interrupt();
        self.role.gpu_report = Some((text, launcher));
        // Held at the library's breakpoint, the CPU is stopped already.
        self.gpu_interrupt_while_held();
    }

    /// If a GPU stop is being reported, turn the CPU interrupt into that
    /// report (console line + SIGTRAP stop).
    pub(super) fn gpu_decorate_stop(&mut self, stop: StopEvent) -> StopEvent {
        let stop = self.all_stop_decorate(stop);
        let Some((text, launcher)) = self.role.gpu_report.take() else {
            return stop;
        };
        self.send(&reply::console(&text));
        if let Some(t) = launcher {
            self.send(&reply::console(&format!(
                "gdbmux: gdb shows this stop on the CPU thread that launched the dispatch \
                 (LWP {t}), waiting for it in the GPU runtime; `bt` reaches the launch.\n"
            )));
        }
        match stop {
            StopEvent::Stopped {
                pid,
                tid,
                kind: StopKind::Interrupt,
                ..
            } => StopEvent::Stopped {
                pid,
                // The thread that launched the dispatch, when found.
                tid: launcher.map(u64::from).unwrap_or(tid),
                signal: libc::SIGTRAP,
                kind: StopKind::Signal,
            },
            other => other,
        }
    }

    /// All-stop: the CPU's interrupt becomes the stop for the wave (a
    /// signal stop with a description, on the thread that launched the
    /// dispatch); any stop tells all-stop where the CPU is.
    fn all_stop_decorate(&mut self, stop: StopEvent) -> StopEvent {
        let report = self.role.all_stop_report.take();
        let with_gpu = report.is_some()
            && matches!(
                stop,
                StopEvent::Stopped {
                    kind: StopKind::Interrupt,
                    ..
                }
            );
        if let Some(g) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) {
            g.borrow_mut().all_stop_mut().note_cpu_stop(with_gpu);
        }
        match (stop, report) {
            (
                StopEvent::Stopped {
                    pid,
                    tid,
                    kind: StopKind::Interrupt,
                    ..
                },
                Some((description, launcher)),
            ) => StopEvent::Stopped {
                pid,
                tid: launcher.map(u64::from).unwrap_or(tid),
                // SIGSTOP, as lldb's own interrupt: `lldb -b` stops
                // running its commands at any other signal stop (lldb's
                // `CommandInterpreter::DidProcessStopAbnormally`).
                signal: libc::SIGSTOP,
                kind: StopKind::Fault { description },
            },
            (stop, _) => stop,
        }
    }

    /// `jAcceleratorPluginInitialize`
    pub(super) fn handle_accel_initialize(&mut self) {
        let r = match &self.mux {
            Some(m) => m.borrow_mut().initialize(),
            None => b"[]".to_vec(),
        };
        self.send(&r);
    }

    /// `jAcceleratorPluginBreakpointHit:`
    pub(super) fn handle_accel_hit(&mut self, json: &[u8]) {
        let r = match &self.mux {
            Some(m) => m.borrow_mut().breakpoint_hit(json),
            None => Err(crate::mux::AccelError::NoPlugin),
        };
        match r {
            Ok(j) => self.send(&j),
            Err(e) => self.send_error(e.code(), &e.to_string()),
        }
    }
}

/// Non-stop mode: the GPU library's breakpoint is handled per thread
/// (the others keep running), with the same rule as all-stop: the client
/// never sees it, and a stop the client asked for (`vCont;t`) is reported
/// at it instead of running the thread on.
impl Session<CpuRole> {
    /// A stop or end collected in non-stop mode: `true` when it is an
    /// internal one, handled here.
    pub(super) fn gpu_nonstop_intercept(&mut self, stop: &StopEvent) -> bool {
        let StopEvent::Stopped { pid, tid, kind, .. } = stop else {
            let gone = stop.pid();
            self.role.ns_internal.retain(|(p, _), _| *p != gone);
            return false;
        };
        let (pid, tid) = (*pid, *tid);
        match self.role.ns_internal.get(&(pid, tid)).copied() {
            Some(NsInternal::SteppingOver { addr, then }) => {
                self.role.ns_internal.remove(&(pid, tid));
                self.reinsert_lifted(pid, addr);
                if *kind == StopKind::Step {
                    self.ns_run_on(pid, tid, then);
                    return true;
                }
                // Something else happened during the step (the client's
                // `vCont;t` came first): reported.
                self.ns_park_if_on(pid, tid, addr);
                return false;
            }
            Some(NsInternal::ClientStepping { addr }) => {
                self.role.ns_internal.remove(&(pid, tid));
                self.reinsert_lifted(pid, addr);
                self.ns_park_if_on(pid, tid, addr);
                return false;
            }
            Some(NsInternal::Held { .. } | NsInternal::Parked { .. }) => {
                tracing::warn!(target: "dbgapi", session = self.id, pid, tid, "non-stop: a stop of a thread held at the library's breakpoint");
                self.role.ns_internal.remove(&(pid, tid));
            }
            None => {}
        }
        if *kind != StopKind::SwBreak {
            return false;
        }
        let Some(gpu) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return false;
        };
        let Some(t) = self.procs.get_mut(&pid) else {
            return false;
        };
        let Ok(pc) = t.pc(tid) else { return false };
        let Some(id) = gpu.borrow().host_breakpoint(pc) else {
            return false;
        };
        let client_too = t.is_client_breakpoint(pc);
        let action = gpu.borrow_mut().report_host_hit(id, tid);
        self.gpu_apply_host_requests();
        let news = self.pump_gpu();
        self.gpu_on_news(&news);
        if client_too {
            // The client's own breakpoint: it sees the stop.
            return false;
        }
        let then = self
            .nonstop
            .actions
            .get(&(pid, tid))
            .copied()
            .map_or(ResumeAction::Continue(None), without_signal);
        match action {
            Ok(BreakpointAction::Halt) if !news.resumed.contains(&id) => {
                tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "host breakpoint hit held until the library's BREAKPOINT_RESUME (non-stop)");
                self.role.ns_internal.insert(
                    (pid, tid),
                    NsInternal::Held {
                        addr: pc,
                        id,
                        then: Some(then),
                    },
                );
                self.gpu_nonstop_stops_asked();
            }
            Ok(_) => self.ns_leave(pid, tid, pc, then),
            Err(e) => {
                tracing::warn!(target: "dbgapi", "report_breakpoint_hit: {e}");
                self.ns_leave(pid, tid, pc, then);
            }
        }
        true
    }

    /// The client asked threads to stop: those held at the library's
    /// breakpoint are stopped already and reported at once (`T00`); they
    /// stay held.
    pub(super) fn gpu_nonstop_stops_asked(&mut self) {
        let asked: Vec<(Pid, Tid)> = self
            .role
            .ns_internal
            .iter_mut()
            .filter(|(k, _)| self.nonstop.stop_wanted.contains(k))
            .filter_map(|(k, v)| match v {
                NsInternal::Held { then, .. } if then.is_some() => {
                    *then = None;
                    Some(*k)
                }
                _ => None,
            })
            .collect();
        for (pid, tid) in asked {
            tracing::info!(target: "dbgapi", session = self.id, pid, tid, "non-stop: the client's stop request answered at the library's breakpoint (the thread stays held)");
            self.ns_report_stopped(pid, tid);
        }
    }

    /// The client resumes thread `tid`, stopped for the target: `true` when
    /// it is one of the library's breakpoint (held: it goes on after the
    /// library's resume; parked: it steps off first).
    pub(super) fn gpu_nonstop_takes_resume(
        &mut self,
        pid: Pid,
        tid: Tid,
        action: ResumeAction,
    ) -> bool {
        let Some(entry) = self.role.ns_internal.get_mut(&(pid, tid)) else {
            return false;
        };
        match entry {
            // Running as far as the client knows: not the client's to
            // resume (a `vCont;c` without thread names it too).
            NsInternal::Held { then: Some(_), .. }
            | NsInternal::SteppingOver { .. }
            | NsInternal::ClientStepping { .. } => true,
            NsInternal::Held { then, id, .. } => {
                tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "non-stop: resume while held at the library's breakpoint: it waits for BREAKPOINT_RESUME");
                *then = Some(action);
                self.ns_client_resumed(pid, tid, action);
                true
            }
            NsInternal::Parked { addr } => {
                let addr = *addr;
                self.role.ns_internal.remove(&(pid, tid));
                self.ns_client_resumed(pid, tid, action);
                self.ns_step_off(pid, tid, addr, action);
                true
            }
        }
    }

    /// A thread reported stopped before its step off the library's
    /// breakpoint at `addr` ran (still at `addr`): its next resume steps
    /// off first, rather than hitting the breakpoint again.
    fn ns_park_if_on(&mut self, pid: Pid, tid: Tid, addr: u64) {
        let at = self
            .procs
            .get_mut(&pid)
            .and_then(|t| t.pc(tid).ok())
            .is_some_and(|pc| pc == addr);
        if at {
            self.role
                .ns_internal
                .insert((pid, tid), NsInternal::Parked { addr });
        }
    }

    /// Non-stop mode ends with threads at the library's breakpoint: a
    /// lifted breakpoint is put back (a thread still on it hits it again:
    /// a second report to the library, never a hit it misses); a thread
    /// the library still holds is all-stop's held thread (`Internal::
    /// Held`: a resume waits for BREAKPOINT_RESUME); a parked one is
    /// stepped off by all-stop's next resume (`gpu_prepare_resume`, when it
    /// is the journaled thread).
    /// Non-stop mode begins (`QNonStop:1`) while all-stop holds a thread
    /// at the library's breakpoint (the client stopped the process
    /// meanwhile, or connected to it so): the hold becomes the thread's own,
    /// as a thread reported stopped at the hook (`NsInternal::Held` with no
    /// action), so the client's resume of it waits for the library's
    /// BREAKPOINT_RESUME instead of running into the hook again.
    pub(super) fn gpu_nonstop_begins(&mut self) {
        if let Some(Internal::Held { pid, tid, addr, id }) = self.role.internal.clone() {
            tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "non-stop begins while the library holds a thread: the hold is the thread's own");
            self.set_internal(None);
            self.role.ns_internal.insert(
                (pid, tid),
                NsInternal::Held {
                    addr,
                    id,
                    then: None,
                },
            );
        }
    }

    pub(super) fn gpu_nonstop_ends(&mut self) {
        let entries = std::mem::take(&mut self.role.ns_internal);
        for ((pid, tid), e) in entries {
            match e {
                NsInternal::SteppingOver { addr, .. } | NsInternal::ClientStepping { addr } => {
                    self.reinsert_lifted(pid, addr)
                }
                NsInternal::Held { addr, id, .. } if self.role.internal.is_none() => {
                    tracing::info!(target: "dbgapi", session = self.id, id = id.0, tid, "non-stop ends while the library holds a thread: all-stop holds it");
                    self.set_internal(Some(Internal::Held { pid, tid, addr, id }));
                }
                NsInternal::Held { .. } | NsInternal::Parked { .. } => {}
            }
        }
    }

    /// The session's bookkeeping of a client resume the role carries out.
    fn ns_client_resumed(&mut self, pid: Pid, tid: Tid, action: ResumeAction) {
        self.nonstop.stop_wanted.remove(&(pid, tid));
        self.nonstop.actions.insert((pid, tid), action);
        self.nonstop.last.remove(&(pid, tid));
    }

    /// Non-stop GPU news: held threads whose BREAKPOINT_RESUME came go on
    /// (or, reported stopped to the client, stay at the breakpoint).
    fn gpu_nonstop_news(&mut self, news: &GpuNews) {
        if !self.nonstop.on || news.resumed.is_empty() {
            return;
        }
        let done: Vec<((Pid, Tid), u64, Option<ResumeAction>)> = self
            .role
            .ns_internal
            .iter()
            .filter_map(|(k, v)| match v {
                NsInternal::Held { addr, id, then } if news.resumed.contains(id) => {
                    Some((*k, *addr, *then))
                }
                _ => None,
            })
            .collect();
        for ((pid, tid), addr, then) in done {
            self.role.ns_internal.remove(&(pid, tid));
            match then {
                Some(then) => self.ns_leave(pid, tid, addr, then),
                None => {
                    tracing::info!(target: "dbgapi", session = self.id, tid, "BREAKPOINT_RESUME while the client has the thread stopped: its next resume steps off the breakpoint");
                    self.role
                        .ns_internal
                        .insert((pid, tid), NsInternal::Parked { addr });
                }
            }
        }
    }

    /// The library is done with thread `tid` at its breakpoint `addr`: a
    /// stop the client asked for is reported here (the thread parked at
    /// the breakpoint); otherwise it is taken off the breakpoint as `then`
    /// moves it.
    fn ns_leave(&mut self, pid: Pid, tid: Tid, addr: u64, then: ResumeAction) {
        if self.nonstop.stop_wanted.contains(&(pid, tid)) {
            self.role
                .ns_internal
                .insert((pid, tid), NsInternal::Parked { addr });
            self.ns_report_stopped(pid, tid);
            return;
        }
        self.ns_step_off(pid, tid, addr, then);
    }

    /// Take thread `tid` off the library's breakpoint at `addr` as `then`
    /// moves it. The target does it with the other threads stopped for the
    /// single step (`Target::pass_internal_breakpoint`, as gdbserver's
    /// step-over), so none passes `addr` unseen meanwhile. A target that
    /// cannot: a client step runs with the breakpoint lifted; anything
    /// else steps over it first.
    fn ns_step_off(&mut self, pid: Pid, tid: Tid, addr: u64, then: ResumeAction) {
        let Some(t) = self.procs.get_mut(&pid) else {
            return;
        };
        match t.pass_internal_breakpoint(tid, addr, then) {
            Ok(true) => {
                self.role.ns_internal.remove(&(pid, tid));
                return;
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(target: "dbgapi", pid, tid, "non-stop: pass host breakpoint: {e}");
                return;
            }
        }
        if let Err(e) = t.remove_internal_breakpoint(addr) {
            tracing::warn!(target: "dbgapi", "lifting host breakpoint: {e}");
        }
        let steps = matches!(then, ResumeAction::Step(_) | ResumeAction::RangeStep { .. });
        let (first, next) = if steps {
            (then, NsInternal::ClientStepping { addr })
        } else {
            (
                ResumeAction::Step(None),
                NsInternal::SteppingOver { addr, then },
            )
        };
        let plan = ResumePlan {
            threads: vec![(tid, first)],
            default: None,
        };
        match t.resume(&plan) {
            Ok(()) => {
                self.role.ns_internal.insert((pid, tid), next);
            }
            Err(e) => {
                tracing::warn!(target: "dbgapi", "non-stop: step off host breakpoint: {e}");
                let _ = t.insert_internal_breakpoint(addr);
            }
        }
    }

    /// Thread `tid` is past the library's breakpoint: it runs on with the
    /// client's action, or is reported stopped if the client asked.
    fn ns_run_on(&mut self, pid: Pid, tid: Tid, then: ResumeAction) {
        if self.nonstop.stop_wanted.contains(&(pid, tid)) {
            self.ns_report_stopped(pid, tid);
            return;
        }
        let plan = ResumePlan {
            threads: vec![(tid, then)],
            default: None,
        };
        if let Some(t) = self.procs.get_mut(&pid) {
            if let Err(e) = t.resume(&plan) {
                tracing::warn!(target: "ptrace", pid, tid, "non-stop: run on after host breakpoint: {e}");
            }
        }
    }

    /// The stop the client asked for (`vCont;t`), as the target reports
    /// one: signal 0.
    fn ns_report_stopped(&mut self, pid: Pid, tid: Tid) {
        self.nonstop_event(StopEvent::Stopped {
            pid,
            tid,
            signal: 0,
            kind: StopKind::Signal,
        });
    }
}

impl Session<CpuRole> {
    /// The GPU notifier was readable and the multiplexer took in `news`:
    /// the CPU session carries out what they mean for its process.
    pub fn on_gpu_notifier(&mut self, news: &GpuNews) {
        self.gpu_on_news(news);
    }
}

impl Session<GpuRole> {
    /// The GPU notifier was readable: the GPU session collects its
    /// target's events (wave stops).
    pub fn on_gpu_notifier(&mut self, _news: &GpuNews) {
        // All-stop: the client (the lldb helper) is told to continue the
        // CPU, while it waits on this session's continue
        // (`crate::gpu::allstop`).
        let notice = self.is_running()
            && self
                .mux
                .as_ref()
                .and_then(|m| m.borrow().gpu())
                .is_some_and(|g| g.borrow_mut().all_stop_mut().take_notice());
        if notice {
            tracing::info!(target: "mux", session = self.id, "all-stop: telling the client to continue the CPU");
            self.send(crate::gpu::allstop::RUN_CPU_NOTICE);
        }
        // All-stop: the helper wants the GPU stopped for an update (a stop of
        // gdbmux's own, not the client's interrupt).
        let gpu = self.mux.as_ref().and_then(|m| m.borrow().gpu());
        let stop = gpu
            .as_ref()
            .is_some_and(|g| g.borrow_mut().all_stop_mut().take_gpu_stop());
        if stop && !self.is_running() {
            // Stopped already (a late request): nothing to stop, and
            // nothing to describe at a later stop.
            if let Some(g) = &gpu {
                let _ = g.borrow_mut().all_stop_mut().take_gpu_stop_report();
            }
        } else if stop {
            tracing::info!(target: "mux", session = self.id, "all-stop: stopping the GPU process for the helper's update");
            for t in self.procs.values_mut() {
                if let Err(e) = t.interrupt() {
                    tracing::warn!(target: "mux", "all-stop: stopping the GPU: {e}");
                }
            }
        }
        self.on_target_event();
    }

    /// All-stop: the GPU stop gdbmux made for the helper's update is shown
    /// with its description (a `SIGSTOP` stop, which `lldb -b` runs on
    /// from, as lldb's own interrupt), and counts as a wave stop for the
    /// exit hold (the helper runs the CPU on from it).
    pub(super) fn gpu_all_stop_decorate(&mut self, stop: StopEvent) -> StopEvent {
        let Some(g) = self.mux.as_ref().and_then(|m| m.borrow().gpu()) else {
            return stop;
        };
        let Some(description) = g.borrow_mut().all_stop_mut().take_gpu_stop_report() else {
            return stop;
        };
        match stop {
            StopEvent::Stopped {
                pid,
                tid,
                kind: StopKind::Interrupt,
                ..
            } => {
                g.borrow_mut().note_gpu_stop(true);
                StopEvent::Stopped {
                    pid,
                    tid,
                    signal: libc::SIGSTOP,
                    kind: StopKind::Fault { description },
                }
            }
            other => other,
        }
    }

    /// The CPU process of this server ended; the GPU session reports it
    /// as the end of its own process (a CPU session learns its own
    /// process's end from its target).
    pub fn on_peer_exit(&mut self, ev: &StopEvent) {
        self.finish_memory_stream();
        let role = &self.role;
        tracing::info!(target: "mux", session = self.id, offer = ?role.offer, cpu_pid = ?role.cpu_pid, "the CPU process ended: ending the GPU session");
        let was_running = self.is_running();
        // The GPU process is reported under its own pid (the CPU process's
        // for a `GpuTarget`).
        let pid = self
            .procs
            .keys()
            .next()
            .copied()
            .or(role.cpu_pid)
            .unwrap_or_else(|| ev.pid());
        let ev = match ev {
            StopEvent::Exited { code, .. } => StopEvent::Exited { pid, code: *code },
            StopEvent::Terminated { signal, .. } => StopEvent::Terminated {
                pid,
                signal: *signal,
            },
            other => other.clone(),
        };
        if was_running && self.role.end_held {
            // The runtime's unload ended this session's process and that end
            // is held; the CPU process's exit, in a later loop turn, is the
            // same end: it waits too (reported at once, it defeated the
            // hold: `target list` read the CPU still running).
            tracing::info!(target: "mux", session = self.id, "a second end of the GPU process while its first is held: waits with it");
            return;
        }
        if was_running {
            // Held for the lldb helper: reported when the client interrupts
            // (`GpuController::arm_exit_hold`); not when the helper runs the
            // GPU on the CPU's continue, whose end waits for this one
            // (`crate::gpu::allstop`).
            let held = self
                .mux
                .as_ref()
                .and_then(|m| m.borrow().gpu())
                .is_some_and(|g| {
                    let mut g = g.borrow_mut();
                    !g.all_stop().gpu_run_by_helper() && g.hold_exit(&ev)
                });
            if held {
                tracing::info!(target: "mux", session = self.id, "the GPU process's end waits for the client's interrupt (lldb helper)");
                self.role.end_held = true;
                return;
            }
        }
        self.record_stop(ev);
        if was_running {
            self.run = super::RunState::Stopped;
            let opts = self.features.stop_options();
            if let Some(r) = self.journal.reply(&opts) {
                self.send(&r);
            }
            self.control = SessionControl::Close;
        }
    }
}
