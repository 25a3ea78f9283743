//! The GPU as a [`Target`]: waves are threads (ids stable for a wave's life
//! and never reused), a shadow thread stands in when no wave exists, global
//! memory is the CPU process's memory (read through the library), GPU
//! breakpoints are `s_trap` instructions written through the library.
//!
//! All-stop for the GPU session: when a wave stops, the other waves are
//! stopped and wave creation is paused; a resume restarts them.

use std::cell::RefCell;
use std::os::fd::RawFd;
use std::rc::Rc;

use gpu_target::model::AddressSpace;
use gpu_target::model::StopReasons;

use super::controller::GpuController;
use super::controller::WaveStop;
use super::controller::SHADOW_TID;
use super::regs;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::ArchInfo;
use crate::target::BreakpointKind;
use crate::target::Pid;
use crate::target::RegisterInfo;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::Target;
use crate::target::TargetError;
use crate::target::TargetResult;
use crate::target::Tid;

/// Shared handle on the controller (one loop thread; no locks).
pub type GpuShared = Rc<RefCell<GpuController>>;

/// The GPU session's target.
pub struct GpuTarget {
    gpu: GpuShared,
    pid: Pid,
    arch: ArchInfo,
    regs: Vec<RegisterInfo>,
    /// Register number → row of `regs` (grouped by feature).
    reg_rows: Vec<Option<usize>>,
    running: bool,
    /// Set when the CPU process ended: reported at the next wait.
    exit: Option<StopEvent>,
    interrupted: bool,
    /// An interrupt is waiting for the waves it stopped (bounded by the
    /// controller's stop timer).
    awaiting_stop: bool,
    /// While `awaiting_stop`: stop requests not completed yet, and the
    /// stopped wave with the lowest thread id (the interrupt is reported
    /// on it: see [`note_interrupt_wave`]).
    stops_awaited: usize,
    interrupt_tid: Option<Tid>,
}

fn terr(e: super::controller::GpuFault) -> TargetError {
    e.into()
}

/// Whether a queued wave stop is worth reporting: not a stop we requested
/// for all-stop (no reason), and not a breakpoint stop whose breakpoint was
/// removed before it could be reported (clients do not tolerate stale
/// breakpoint reports: research/client-traces.md §13).
/// A wave stopped for the interrupt: the interrupt is reported on the
/// stopped wave listed first (the lowest thread id; the thread list is in
/// thread-id order). lldb 23.1 selects the thread the stop names, and its
/// `thread list` asks `ThreadList::GetSelectedThread` once per listed
/// thread, a linear scan for the selected thread's id: named first, each
/// scan stops at the first entry instead of visiting every wave listed
/// before the first one to stop (anywhere in the list).
fn note_interrupt_wave(slot: &mut Option<Tid>, tid: Tid) {
    *slot = Some(slot.map_or(tid, |t| t.min(tid)));
}

fn reportable(s: &WaveStop, bps: &[u64]) -> bool {
    let reasons = s.reasons;
    let stale_bp = reasons == StopReasons::BREAKPOINT && s.pc.is_some_and(|pc| !bps.contains(&pc));
    reasons.0 != 0 && !stale_bp
}

/// Map a wave stop to the signal and kind a debugger expects: breakpoints
/// and steps as such, every exception with its signal and description
/// ([`StopReasons::TABLE`]), a requested stop as an interrupt.
pub fn stop_kind(reasons: StopReasons) -> (i32, StopKind) {
    let signal = reasons.signal();
    if reasons.0 == 0 {
        (libc::SIGSTOP, StopKind::Interrupt)
    } else if signal != libc::SIGTRAP {
        (
            signal,
            StopKind::Fault {
                description: format!("{}: {}", signal_name(signal), reasons.description()),
            },
        )
    } else if reasons.contains(StopReasons::BREAKPOINT) {
        (libc::SIGTRAP, StopKind::SwBreak)
    } else if reasons.contains(StopReasons::SINGLE_STEP) {
        (libc::SIGTRAP, StopKind::Step)
    } else {
        (
            libc::SIGTRAP,
            StopKind::Fault {
                description: format!("SIGTRAP: {}", reasons.description()),
            },
        )
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "SIGTRAP",
    }
}

impl GpuTarget {
    /// GPU target for the CPU process `pid`.
    pub fn new(gpu: GpuShared, pid: Pid) -> Self {
        let (arch, regs) = {
            let mut g = gpu.borrow_mut();
            let regs = g.registers().to_vec();
            let arch = g
                .architecture()
                .map(|a| regs::arch_info(&a))
                .unwrap_or_else(|| ArchInfo {
                    triple: "amdgpu-amd-amdhsa".into(),
                    gdb_arch: "amdgcn".into(),
                    osabi: None,
                    ptr_size: 8,
                    xml_types: regs::XML_TYPES.into(),
                });
            (arch, regs)
        };
        GpuTarget {
            gpu,
            pid,
            arch,
            reg_rows: super::controller::rows_by_regnum(&regs),
            regs,
            running: false,
            exit: None,
            interrupted: false,
            awaiting_stop: false,
            stops_awaited: 0,
            interrupt_tid: None,
        }
    }

    /// The initial stop of a new GPU session: the first stopped wave, or
    /// the shadow thread.
    pub fn initial_stop(&mut self) -> StopEvent {
        let mut g = self.gpu.borrow_mut();
        // A GPU does not stop with its host: waves keep running while the
        // GPU session is "stopped"; a wave that stops meanwhile (e.g. at a
        // breakpoint) is queued and reported at the next resume.
        while let Some(s) = g.pop_stop() {
            if s.reasons.0 != 0 {
                return self.stop_event(&s);
            }
        }
        // A quiet stop (signal 0, no reason): nothing happened on the GPU
        // yet. lldb's batch mode treats a signal stop as a crash and stops
        // running its commands.
        StopEvent::Stopped {
            pid: self.pid,
            tid: SHADOW_TID,
            signal: 0,
            kind: StopKind::Signal,
        }
    }

    fn stop_event(&self, s: &WaveStop) -> StopEvent {
        let (signal, kind) = stop_kind(s.reasons);
        StopEvent::Stopped {
            pid: self.pid,
            tid: s.tid,
            signal,
            kind,
        }
    }

    /// The CPU process ended: the GPU session reports this at its next
    /// wait or `?`.
    pub fn set_exit(&mut self, ev: StopEvent) {
        self.exit = Some(ev);
    }

    fn pending_interrupt(&mut self) {
        self.interrupted = true;
    }

    /// The next stop or exit to report (`Target::process_events`).
    /// Every stop the interrupt asked for is in: the interrupt is
    /// reported on the stopped wave listed first (or the shadow thread).
    fn interrupt_complete(&mut self) -> StopEvent {
        self.awaiting_stop = false;
        self.running = false;
        StopEvent::Stopped {
            pid: self.pid,
            tid: self.interrupt_tid.take().unwrap_or(SHADOW_TID),
            signal: libc::SIGSTOP,
            kind: StopKind::Interrupt,
        }
    }

    fn next_stop(&mut self) -> TargetResult<Option<StopEvent>> {
        if !self.running {
            return Ok(None);
        }
        if let Some(e) = self.exit.take() {
            self.running = false;
            return Ok(Some(e));
        }
        let mut g = self.gpu.borrow_mut();
        if self.interrupted {
            self.interrupted = false;
            self.running = false;
            return Ok(Some(StopEvent::Stopped {
                pid: self.pid,
                tid: SHADOW_TID,
                signal: libc::SIGSTOP,
                kind: StopKind::Interrupt,
            }));
        }
        if self.awaiting_stop {
            // Requested stops whose waves ended first never come.
            self.stops_awaited = self.stops_awaited.saturating_sub(g.take_terminations());
        }
        let bps = g.gpu_breakpoints();
        let stop = loop {
            let Some(stop) = g.pop_stop() else {
                if self.awaiting_stop && self.stops_awaited == 0 {
                    g.disarm_stop_timer();
                    g.set_wave_creation(true);
                    drop(g);
                    return Ok(Some(self.interrupt_complete()));
                }
                if self.awaiting_stop && g.take_stop_timeout() {
                    // The device did not complete the stop requests in time:
                    // report the interrupt anyway (waves may still run).
                    self.awaiting_stop = false;
                    g.set_wave_creation(true);
                    tracing::warn!(
                        target: "dbgapi",
                        timeout_ms = g.stop_timeout().as_millis() as u64,
                        "GPU stop requests timed out: the device did not report the stops; reporting the interrupt on the shadow thread"
                    );
                    drop(g);
                    self.running = false;
                    return Ok(Some(StopEvent::Stopped {
                        pid: self.pid,
                        tid: SHADOW_TID,
                        signal: libc::SIGSTOP,
                        kind: StopKind::Interrupt,
                    }));
                }
                return Ok(None);
            };
            if !reportable(&stop, &bps) && self.awaiting_stop {
                // A wave stopped for the interrupt: it stays stopped, and
                // once every requested stop is in the interrupt is reported
                // (without this the requested stops were resumed here and
                // the interrupt came after the stop timeout, waves running).
                if stop.reasons.0 == 0 {
                    self.stops_awaited = self.stops_awaited.saturating_sub(1);
                    note_interrupt_wave(&mut self.interrupt_tid, stop.tid);
                }
                if self.stops_awaited == 0 {
                    g.disarm_stop_timer();
                    g.set_wave_creation(true);
                    drop(g);
                    return Ok(Some(self.interrupt_complete()));
                }
                continue;
            }
            if !reportable(&stop, &bps) {
                if let Err(e) = g.resume_wave(stop.wave, false) {
                    tracing::debug!(target: "dbgapi", wave = stop.wave.0, "late resume: {e}");
                }
                continue;
            }
            break stop;
        };
        // All-stop: hold the other waves and new ones.
        if self.awaiting_stop {
            self.awaiting_stop = false;
            g.disarm_stop_timer();
        }
        g.set_wave_creation(true);
        g.stop_all_waves();
        drop(g);
        self.running = false;
        Ok(Some(self.stop_event(&stop)))
    }

    fn wave(&self, tid: Tid) -> TargetResult<gpu_target::model::WaveId> {
        self.gpu
            .borrow()
            .wave_of(tid)
            .ok_or(TargetError::NoSuchThread(tid))
    }
}

impl Target for GpuTarget {
    fn arch(&self) -> &ArchInfo {
        &self.arch
    }

    fn registers(&self) -> &[RegisterInfo] {
        &self.regs
    }

    fn pid(&self) -> Pid {
        self.pid
    }

    /// The threads (waves), or the library's error when it cannot list
    /// them (the thread-list replies say so instead of showing no waves).
    fn try_threads(&self) -> TargetResult<Vec<Tid>> {
        let tids = self.gpu.borrow_mut().try_wave_tids().map_err(terr)?;
        Ok(if tids.is_empty() {
            vec![SHADOW_TID]
        } else {
            tids.to_vec()
        })
    }

    /// The waves' shared thread-id slice (the same one until the waves
    /// change).
    fn try_thread_ids(&self) -> TargetResult<std::rc::Rc<[Tid]>> {
        let tids = self.gpu.borrow_mut().try_wave_tids().map_err(terr)?;
        Ok(if tids.is_empty() {
            std::rc::Rc::from([SHADOW_TID])
        } else {
            tids
        })
    }

    fn threads(&self) -> Vec<Tid> {
        let waves = self.gpu.borrow_mut().waves();
        if waves.is_empty() {
            vec![SHADOW_TID]
        } else {
            waves.into_iter().map(|(_, t)| t).collect()
        }
    }

    /// A wave's thread id is looked up among the waves of the last
    /// listing or event (a wave cannot end while the GPU session is
    /// stopped; a packet naming one that ended since gets the library's
    /// error instead of "no such thread").
    fn has_thread(&self, tid: Tid) -> bool {
        if tid == SHADOW_TID {
            return self.threads().contains(&tid);
        }
        self.gpu.borrow().wave_of(tid).is_some()
    }

    fn thread_name(&self, tid: Tid) -> Option<String> {
        if tid == SHADOW_TID {
            return Some("AMD GPU shadow".into());
        }
        let mut g = self.gpu.borrow_mut();
        let w = g.wave_of(tid)?;
        g.wave_name(w)
    }

    fn is_stopped(&self) -> bool {
        !self.running
    }

    fn read_register(&mut self, tid: Tid, regnum: u32) -> TargetResult<Vec<u8>> {
        let size = self
            .reg_rows
            .get(regnum as usize)
            .copied()
            .flatten()
            .and_then(|i| self.regs.get(i))
            .map(|r| (r.bitsize / 8) as usize)
            .ok_or(TargetError::NoSuchRegister(regnum))?;
        if tid == SHADOW_TID {
            return Ok(vec![0; size]);
        }
        let w = self.wave(tid)?;
        self.gpu
            .borrow_mut()
            .read_register(w, regnum as usize)
            .map_err(terr)
    }

    fn write_register(&mut self, tid: Tid, regnum: u32, value: &[u8]) -> TargetResult<()> {
        let w = self.wave(tid)?;
        self.gpu
            .borrow_mut()
            .write_register(w, regnum as usize, value)
            .map_err(terr)
    }

    fn read_g_registers(&mut self, _tid: Tid) -> TargetResult<Vec<u8>> {
        // 64-lane VGPRs make a `g` block of hundreds of KiB; clients read
        // GPU registers one at a time with `p`.
        Err(TargetError::Unsupported("g on a GPU target (use p)"))
    }

    fn write_g_registers(&mut self, _tid: Tid, _data: &[u8]) -> TargetResult<()> {
        Err(TargetError::Unsupported("G on a GPU target (use P)"))
    }

    fn pc(&mut self, tid: Tid) -> TargetResult<u64> {
        if tid == SHADOW_TID {
            return Ok(0);
        }
        let w = self.wave(tid)?;
        let info = self.gpu.borrow_mut().wave_info(w).map_err(terr)?;
        info.pc.ok_or(TargetError::Running)
    }

    fn read_memory(&mut self, addr: u64, len: usize) -> TargetResult<Vec<u8>> {
        let r = self
            .gpu
            .borrow_mut()
            .read_memory(AddressSpace::Global, None, addr, len)
            .map_err(terr)?;
        if r.is_empty() && len > 0 {
            return Err(TargetError::Errno {
                what: format!("GPU global memory read at {addr:#x}"),
                errno: nix::errno::Errno::EFAULT,
            });
        }
        Ok(r)
    }

    fn write_memory(&mut self, addr: u64, data: &[u8]) -> TargetResult<usize> {
        self.gpu
            .borrow_mut()
            .write_memory(AddressSpace::Global, None, addr, data)
            .map_err(terr)
    }

    fn insert_breakpoint(
        &mut self,
        kind: BreakpointKind,
        addr: u64,
        _len: u64,
    ) -> TargetResult<()> {
        match kind {
            BreakpointKind::Software => self
                .gpu
                .borrow_mut()
                .insert_gpu_breakpoint(addr)
                .map_err(terr),
            _ => Err(TargetError::Unsupported(
                "GPU hardware breakpoints and watchpoints",
            )),
        }
    }

    fn remove_breakpoint(
        &mut self,
        kind: BreakpointKind,
        addr: u64,
        _len: u64,
    ) -> TargetResult<()> {
        match kind {
            BreakpointKind::Software => self
                .gpu
                .borrow_mut()
                .remove_gpu_breakpoint(addr)
                .map_err(terr),
            _ => Ok(()),
        }
    }

    fn resume(&mut self, plan: &ResumePlan) -> TargetResult<()> {
        if self.awaiting_stop {
            self.awaiting_stop = false;
            self.gpu.borrow_mut().disarm_stop_timer();
        }
        if self.exit.is_some() {
            self.running = true;
            return Ok(());
        }
        let mut g = self.gpu.borrow_mut();
        g.note_gpu_resume();
        let continues = plan
            .default
            .is_some_and(|a| matches!(a, ResumeAction::Continue(_)))
            || plan
                .threads
                .iter()
                .any(|(_, a)| matches!(a, ResumeAction::Continue(_)));
        if continues {
            g.all_stop_mut().note_gpu_continue();
        }
        // Pending stops first (all-stop): drop the stale ones (their waves
        // run on); if a reportable one remains, report it instead of
        // resuming anything (the loop polls us right after the resume).
        let stale = g.retain_stops(reportable);
        for s in stale {
            // A wave the client steps is stepped below (run on here, it
            // ran to its end and vanished under lldb's step plan, which
            // crashed lldb 23.1 in ThreadPlanStepOverBreakpoint).
            let steps = plan
                .threads
                .iter()
                .find(|(t, _)| *t == s.tid)
                .map(|(_, a)| *a)
                .or(plan.default)
                .is_some_and(|a| matches!(a, ResumeAction::Step(_)));
            if steps {
                continue;
            }
            if let Err(e) = g.resume_wave(s.wave, false) {
                tracing::debug!(target: "dbgapi", wave = s.wave.0, "resume after stale stop: {e}");
            }
        }
        if g.has_stops() {
            self.running = true;
            return Ok(());
        }
        let waves = g.waves();
        for (w, tid) in &waves {
            let action = plan
                .threads
                .iter()
                .find(|(t, _)| t == tid)
                .map(|(_, a)| *a)
                .or(plan.default);
            // No state query first: the library refuses to resume a wave
            // that is not stopped (logged below), the same answer, and a
            // query of a running wave waits for it (the simulator answers
            // at the wave's next quantum: 10,000 running waves made a
            // resume take seconds).
            let r = match action {
                Some(ResumeAction::Continue(_)) => g.resume_wave(*w, false),
                Some(ResumeAction::Step(_)) => g.resume_wave(*w, true),
                // Not advertised (no `support_range_step`); the session
                // refuses `vCont;r` before it gets here.
                Some(ResumeAction::RangeStep { .. }) => Ok(()),
                Some(ResumeAction::Stop) | None => Ok(()),
            };
            if let Err(e) = r {
                tracing::debug!(target: "dbgapi", wave = w.0, "resume: {e}");
            }
        }
        g.set_wave_creation(false);
        self.running = true;
        Ok(())
    }

    fn interrupt(&mut self) -> TargetResult<()> {
        // The program's end, held for the lldb helper, which interrupts
        // once the CPU's exit is in (`GpuController::arm_exit_hold`).
        if let Some(e) = self.gpu.borrow_mut().take_held_exit() {
            tracing::info!(target: "mux", "interrupt: reporting the held end of the GPU process");
            self.exit = Some(e);
            self.running = true;
            return Ok(());
        }
        if self.gpu.borrow_mut().all_stop_mut().release_held() {
            return Ok(());
        }
        if !self.awaiting_stop {
            // Count only the terminations of the stops asked for now.
            self.gpu.borrow_mut().take_terminations();
        }
        let n = self.gpu.borrow_mut().stop_all_waves();
        if n == 0 && self.running {
            // Nothing to wait for: report the interrupt on the shadow
            // thread at once.
            self.gpu.borrow_mut().set_wave_creation(true);
            self.pending_interrupt();
        } else if self.running && !self.awaiting_stop {
            // Wait for the stops, but not forever (a stalled device never
            // reports them): the loop's timer ends the wait.
            self.awaiting_stop = true;
            self.stops_awaited = n;
            self.interrupt_tid = None;
            self.gpu.borrow_mut().arm_stop_timer();
        } else if self.awaiting_stop {
            self.stops_awaited += n;
        }
        Ok(())
    }

    fn event_fd(&self) -> Option<RawFd> {
        None
    }

    fn process_events(&mut self) -> TargetResult<Option<StopEvent>> {
        // A wave stop held for the CPU's (all-stop, `super::allstop`),
        // released by the client's interrupt.
        let (released, holds) = {
            let mut g = self.gpu.borrow_mut();
            let a = g.all_stop_mut();
            (a.take_released(), a.holds())
        };
        let r = match released {
            Some(ev) if self.running => {
                self.running = false;
                Ok(Some(ev))
            }
            // The other waves' stops stay queued behind the held one.
            _ if holds => return Ok(None),
            _ => self.next_stop(),
        };
        if let Ok(Some(ev @ StopEvent::Stopped { tid, .. })) = &r {
            // Where the GPU session is, for the exit hold of the lldb
            // helper (`GpuController::note_cpu_resume`).
            let mut g = self.gpu.borrow_mut();
            g.note_gpu_stop(*tid != SHADOW_TID);
            if *tid != SHADOW_TID
                && g.all_stop_mut().on_wave_stop(*tid, ev) == super::allstop::WaveStopAction::Hold
            {
                self.running = true;
                return Ok(None);
            }
        }
        r
    }

    fn kill(&mut self) -> TargetResult<()> {
        // The GPU process cannot be killed on its own; the session answers
        // `X09` and lldb drops the target.
        Ok(())
    }

    fn detach(&mut self) -> TargetResult<()> {
        self.gpu.borrow_mut().prepare_detach();
        Ok(())
    }

    /// The GPU "process" is the CPU process's GPU: the same pid and
    /// credentials (its own amdgpu triple comes from `arch`), no executable.
    fn process_info(&self) -> Option<crate::target::ProcessInfo> {
        crate::native::process_info(self.pid).map(|mut i| {
            i.exe = None;
            i
        })
    }

    fn working_dir(&self) -> Option<std::path::PathBuf> {
        crate::native::working_dir(self.pid)
    }

    fn attached(&self) -> bool {
        true
    }
}
