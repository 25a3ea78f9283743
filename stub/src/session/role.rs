//! The two session roles over the one protocol engine, and what only one
//! of them has.
//!
//! Both roles share the engine (`handlers/`: codec state, negotiation,
//! thread selection, the stop journal, the packet families). What differs
//! lives here, in the role's own variant, so a fact of one role cannot be
//! read or written by the other:
//!
//! - **CPU session** ([`CpuRole`]): processes come from the command line,
//!   `vRun`, `vAttach` and fork/exec; it carries out the GPU library's
//!   internal host breakpoints (`Internal`, re-resuming the client's last
//!   plan), answers lldb's accelerator plugin (the GPU offer), reports GPU
//!   stops to gdb (`gpu_report`), forwards the launched programs' output to
//!   lldb, tells the multiplexer when its process ends or is released, and
//!   outlives its client under `--multi`.
//! - **GPU session** ([`GpuRole`]): the offer it claimed and the CPU
//!   process it serves; its one process is a `gpu::GpuTarget` (waves are its
//!   threads, built by the server when a claim is accepted); the CPU
//!   process's end reaches it as `W`/`X` (`Session::on_peer_exit`). Its
//!   waves and GPU breakpoints are the controller's facts
//!   (`gpu/controller.rs`), not the session's.
//!
//! The roles are types ([`CpuRole`], [`GpuRole`]) and the session is
//! generic over them ([`SessionRole`]): `Session<CpuRole>` and
//! `Session<GpuRole>` are distinct types over one protocol engine, and the
//! server holds them through one enum (`session::AnySession`). Every
//! decision that differs between the roles is a method of
//! [`SessionRole`] ([`SessionRole::serves`], `reports_process_ends`,
//! `outlives_client`, the advertised features); the protocol engine asks
//! the role, it never tests which role it is. A packet only the CPU role
//! serves is answered on a GPU session as an unsupported one (empty reply,
//! or an error for `QNonStop:1`), never carried out there.

use std::collections::BTreeMap;

use super::gpu::Internal;
use super::Role;
use super::Session;
use crate::error::ErrorCode;
use crate::gpu::controller::GpuNews;
use crate::packet::stop_reply::StopInfos;
use crate::packet::Command;
use crate::stop::StopEvent;
use crate::target::Capabilities;
use crate::target::Pid;
use crate::target::ResumePlan;

/// A session's role: the state only that role has, and every decision
/// that differs between the roles. [`super::Session`] is generic over it:
/// `Session<CpuRole>` and `Session<GpuRole>` are distinct types over one
/// protocol engine, and the engine asks the role, never which role it is.
/// Implemented by [`CpuRole`] and [`GpuRole`] only.
pub trait SessionRole: std::fmt::Debug + Default + sealed::Sealed + 'static {
    /// Which role (for logs and [`super::Session::role`]).
    const ROLE: Role;

    /// The launched programs' output terminal, forwarded to an lldb
    /// client (the CPU role's, outside stdio mode).
    fn program_output(&self) -> Option<&crate::native::SharedProgramOutput> {
        None
    }

    /// The client interrupted while the target ran (the CPU role keeps
    /// it for the resume it carries out itself after an internal stop).
    fn client_interrupted(&mut self) {}

    /// A stop reaches the client: a pending interrupt is answered.
    fn stop_reaches_client(&mut self) {}

    /// Whether the end, kill or detach of this session's processes is a
    /// fact for the multiplexer: the CPU process's end ends the GPU
    /// session (`MuxEvent::CpuProcessEnded`, `CpuProcessReleased`). A GPU
    /// session's process is the CPU process's GPU, whose end the
    /// multiplexer already knows from the CPU side.
    fn reports_process_ends(&self) -> bool;

    /// Whether `--multi` keeps the session for the next client when its
    /// client vanishes: the CPU process outlives its client; a GPU session
    /// ends with its client (a new claim needs a new offer).
    fn outlives_client(&self) -> bool;

    /// Whether `jThreadsInfo` carries each thread's stack top and
    /// frame-pointer chain for lldb's memory cache: a CPU thread's frames
    /// are walked through its stack; a GPU wave's are not.
    fn expedites_stack(&self) -> bool;

    /// Which threads the `jstopinfo` of stop replies to lldb lists: it
    /// spares lldb a `qThreadStopInfo` round trip per thread at each stop.
    /// Both roles list only the threads (waves) with a stop reason, as
    /// lldb-server does.
    fn lists_stop_infos(&self) -> StopInfos;

    /// What a session with no process advertises: a CPU session's
    /// `vRun`/`vAttach` will create a native Linux process, a GPU session
    /// has nothing.
    fn idle_capabilities(&self) -> Capabilities;

    /// Role features `qSupported` advertises beyond the target's
    /// capabilities: ptrace's syscall stops and the host's `/proc`
    /// tables belong to the CPU session's native processes.
    fn qsupported_features(&self) -> &'static [&'static str];

    /// `accelerator-plugins+` when a GPU library is loaded: only the CPU
    /// session offers the GPU (lldb checks the feature on every
    /// connection, research/lldb-accelerator.md §1.1).
    fn accelerator_feature(&self, gpu_loaded: bool) -> Option<&'static str>;

    /// Whether this role serves `cmd`, and if not, how it is answered.
    /// Process creation, syscall catching, the host's osdata tables,
    /// non-stop mode and lldb's accelerator plugin are the CPU session's
    /// only.
    fn serves(&self, cmd: &Command) -> Result<(), NotServed>;

    // The engine's hooks where only the CPU role acts (its GPU hooks,
    // `gpu.rs`); a GPU session does nothing there (the defaults).

    /// A process was adopted: the CPU role attaches the GPU library to it.
    fn after_adopt(_s: &mut Session<Self>, _pid: Pid) {}

    /// A stop while running: `true` when the role handled it out of the
    /// client's sight (the CPU role: the GPU library's own breakpoint).
    fn intercept_stop(_s: &mut Session<Self>, _stop: &StopEvent) -> bool {
        false
    }

    /// Non-stop: a stop or end collected from a target: `true` when the
    /// role handled it out of the client's sight (the CPU role: the GPU
    /// library's own breakpoint, `gpu::gpu_nonstop_intercept`).
    fn intercept_nonstop_stop(_s: &mut Session<Self>, _stop: &StopEvent) -> bool {
        false
    }

    /// Non-stop: the client resumes thread `tid`, stopped for the target
    /// (`action` is not `Stop`): `true` when the role carries the resume
    /// out itself (the CPU role: a thread at the GPU library's breakpoint).
    fn nonstop_takes_resume(
        _s: &mut Session<Self>,
        _pid: Pid,
        _tid: crate::target::Tid,
        _action: crate::target::ResumeAction,
    ) -> bool {
        false
    }

    /// Non-stop: the client asked threads to stop (`vCont;t`); the CPU
    /// role reports those it holds at the GPU library's breakpoint at once
    /// (stopped already, they would never be reported).
    fn nonstop_stops_asked(_s: &mut Session<Self>) {}

    /// Non-stop mode ends (`QNonStop:0`, or the client vanished): the CPU
    /// role hands its per-thread internal stops to all-stop's handling.
    fn nonstop_ends(_s: &mut Session<Self>) {}

    /// Non-stop mode begins (`QNonStop:1`, every thread stopped): the CPU
    /// role makes all-stop's hold at the GPU library's breakpoint the held
    /// thread's own.
    fn nonstop_begins(_s: &mut Session<Self>) {}

    /// Before the client's resume (`plans`): `true` when the role started
    /// the resume itself (the CPU role keeps `plans` to carry them out
    /// again after an internal stop, and steps over its internal
    /// breakpoint first).
    fn prepare_resume(_s: &mut Session<Self>, _plans: &BTreeMap<Pid, ResumePlan>) -> bool {
        false
    }

    /// While running: the CPU role reports a pending GPU stop to gdb.
    fn report_gpu_stop(_s: &mut Session<Self>) {}

    /// The client interrupts: report a held process end instead (`true`).
    fn release_held_end(_s: &mut Session<Self>) -> bool {
        false
    }

    /// The process is to stop now (the client's interrupt, or `--multi`:
    /// its client vanished during a resume): `true` when the role had it
    /// stopped already and reported that stop (the CPU role: a thread held
    /// at the GPU library's breakpoint, `gpu::gpu_interrupt_while_held`).
    fn stop_now_if_held(_s: &mut Session<Self>) -> bool {
        false
    }

    /// The stop about to be reported, as the role reports it (the CPU
    /// role: a GPU stop shown on the launching thread).
    fn decorate_stop(_s: &mut Session<Self>, stop: StopEvent) -> StopEvent {
        stop
    }

    /// GPU news the session took in itself (`monitor gpu`).
    fn gpu_news(_s: &mut Session<Self>, _news: &GpuNews) {}

    /// `jAcceleratorPluginInitialize` (refused before on a GPU session:
    /// [`SessionRole::serves`]).
    fn accel_initialize(s: &mut Session<Self>) {
        s.send(&crate::packet::reply::empty());
    }

    /// `jAcceleratorPluginBreakpointHit` (refused before on a GPU
    /// session: [`SessionRole::serves`]).
    fn accel_hit(s: &mut Session<Self>, _json: &[u8]) {
        s.send(&crate::packet::reply::empty());
    }
}

mod sealed {
    /// Only this module's roles are roles.
    pub trait Sealed {}
    impl Sealed for super::CpuRole {}
    impl Sealed for super::GpuRole {}
}

/// What only the CPU session has.
#[derive(Debug, Default)]
pub struct CpuRole {
    /// An internal (GPU library) breakpoint hit being handled out of the
    /// client's sight.
    pub(super) internal: Option<Internal>,
    /// gdb's path to the GPU: the console line of a GPU stop being
    /// reported as the CPU process's stop.
    pub(super) gpu_report: Option<(String, Option<crate::target::Pid>)>,
    /// All-stop (`crate::gpu::allstop`): the description of the CPU stop
    /// being made for a wave's stop, and the thread it is shown on.
    pub(super) all_stop_report: Option<(String, Option<crate::target::Pid>)>,
    /// The client's last resume, carried out again once an internal
    /// breakpoint stop was handled (`gpu::resume_last_plans`); once it has
    /// been carried out, without the signals it delivered
    /// (`gpu::carried_out`).
    pub(super) last_plans: BTreeMap<Pid, ResumePlan>,
    /// A client interrupt is pending: set by the client's `\x03` while the
    /// target runs (`client_interrupted`), cleared only when a stop reaches
    /// the client (`stop_reaches_client`); nothing else writes it. Every
    /// resume gdbmux makes by itself after an internal stop asks it first
    /// (`gpu::owes_stop`): while it is set, the internal stop ends the
    /// client's resume as the interrupt's stop instead of running on.
    pub(super) interrupt_wanted: bool,
    /// Non-stop: the threads being handled at (or stepped off) the GPU
    /// library's breakpoint, each on its own (`gpu::NsInternal`).
    pub(super) ns_internal: BTreeMap<(Pid, crate::target::Tid), super::gpu::NsInternal>,
    /// The launched programs' output terminal (lldb: forwarded before a
    /// stop reply, `server::output`); `None` in stdio mode.
    pub(super) program_output: Option<crate::native::SharedProgramOutput>,
}

/// What only the GPU session has: which offer it claimed, for which CPU
/// process. `None` for a session built outside a server (tests, fuzzing).
#[derive(Debug, Default)]
pub struct GpuRole {
    /// The offer (the multiplexer's ledger id) this connection claimed.
    pub(super) offer: Option<i64>,
    /// The CPU process whose GPU this session serves; its end is this
    /// session's end (`Session::on_peer_exit`).
    pub(super) cpu_pid: Option<Pid>,
    /// This session's end is held for the lldb helper's interrupt
    /// (`Session::on_peer_exit`): a second end (the runtime's unload, then
    /// the CPU process's exit, in two loop turns) waits with it.
    pub(super) end_held: bool,
}

/// How a session answers a packet its role does not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotServed {
    /// As an unknown packet: an empty reply.
    Unsupported,
    /// With an error naming why.
    Error(ErrorCode, &'static str),
}

impl SessionRole for CpuRole {
    const ROLE: Role = Role::Cpu;

    fn program_output(&self) -> Option<&crate::native::SharedProgramOutput> {
        self.program_output.as_ref()
    }

    fn client_interrupted(&mut self) {
        self.interrupt_wanted = true;
    }

    fn stop_reaches_client(&mut self) {
        self.interrupt_wanted = false;
    }

    fn reports_process_ends(&self) -> bool {
        true
    }

    fn lists_stop_infos(&self) -> StopInfos {
        // Only the threads with a stop reason, as for the GPU: lldb takes
        // an unlisted thread as one without a reason and asks nothing
        // about it (ProcessGDBRemote::CalculateThreadStopInfo), and it
        // looks every thread up in the array by a linear scan
        // (GetThreadStopInfoFromJSON), so a 1000-thread list made its stop
        // quadratic (16 % of lldb's CPU in a 1000-thread stop of all). The
        // names come with the `jThreadsInfo` lldb fetches at every stop.
        StopInfos::WithReason
    }

    fn expedites_stack(&self) -> bool {
        true
    }

    fn outlives_client(&self) -> bool {
        true
    }

    fn idle_capabilities(&self) -> Capabilities {
        crate::native::CAPABILITIES
    }

    fn qsupported_features(&self) -> &'static [&'static str] {
        &[
            "QCatchSyscalls+",
            "qXfer:osdata:read+",
            "QNonStop+",
            "ConditionalBreakpoints+",
            "BreakpointCommands+",
        ]
    }

    fn accelerator_feature(&self, gpu_loaded: bool) -> Option<&'static str> {
        gpu_loaded.then_some("accelerator-plugins+")
    }

    fn serves(&self, _cmd: &Command) -> Result<(), NotServed> {
        Ok(())
    }

    fn after_adopt(s: &mut Session<Self>, pid: Pid) {
        s.gpu_attach(pid);
    }

    fn intercept_stop(s: &mut Session<Self>, stop: &StopEvent) -> bool {
        s.gpu_intercept(stop)
    }

    fn prepare_resume(s: &mut Session<Self>, plans: &BTreeMap<Pid, ResumePlan>) -> bool {
        s.role.last_plans = plans.clone();
        let started = s.gpu_prepare_resume(plans);
        if !started {
            // The engine carries the plan out now: its signals are
            // delivered once, never again by a re-resume.
            s.role.last_plans = super::gpu::carried_out(plans);
        }
        started
    }

    fn intercept_nonstop_stop(s: &mut Session<Self>, stop: &StopEvent) -> bool {
        s.gpu_nonstop_intercept(stop)
    }

    fn nonstop_takes_resume(
        s: &mut Session<Self>,
        pid: Pid,
        tid: crate::target::Tid,
        action: crate::target::ResumeAction,
    ) -> bool {
        s.gpu_nonstop_takes_resume(pid, tid, action)
    }

    fn nonstop_stops_asked(s: &mut Session<Self>) {
        s.gpu_nonstop_stops_asked();
    }

    fn nonstop_ends(s: &mut Session<Self>) {
        s.gpu_nonstop_ends();
    }

    fn nonstop_begins(s: &mut Session<Self>) {
        s.gpu_nonstop_begins();
    }

    fn report_gpu_stop(s: &mut Session<Self>) {
        s.gpu_report_stop();
    }

    fn decorate_stop(s: &mut Session<Self>, stop: StopEvent) -> StopEvent {
        s.gpu_decorate_stop(stop)
    }

    fn release_held_end(s: &mut Session<Self>) -> bool {
        s.gpu_release_held_exit()
    }

    fn stop_now_if_held(s: &mut Session<Self>) -> bool {
        s.gpu_interrupt_while_held()
    }

    fn gpu_news(s: &mut Session<Self>, news: &GpuNews) {
        s.gpu_on_news(news);
    }

    fn accel_initialize(s: &mut Session<Self>) {
        s.handle_accel_initialize();
    }

    fn accel_hit(s: &mut Session<Self>, json: &[u8]) {
        s.handle_accel_hit(json);
    }
}

impl SessionRole for GpuRole {
    const ROLE: Role = Role::Gpu;

    fn reports_process_ends(&self) -> bool {
        false
    }

    fn lists_stop_infos(&self) -> StopInfos {
        StopInfos::WithReason
    }

    fn expedites_stack(&self) -> bool {
        false
    }

    fn outlives_client(&self) -> bool {
        false
    }

    fn idle_capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    fn qsupported_features(&self) -> &'static [&'static str] {
        &[]
    }

    fn decorate_stop(s: &mut Session<Self>, stop: StopEvent) -> StopEvent {
        s.gpu_all_stop_decorate(stop)
    }

    fn accelerator_feature(&self, _gpu_loaded: bool) -> Option<&'static str> {
        None
    }

    fn serves(&self, cmd: &Command) -> Result<(), NotServed> {
        match cmd {
            Command::VRun(_)
            | Command::VAttach(_)
            | Command::Restart
            | Command::CatchSyscalls(_)
            | Command::AcceleratorInitialize
            | Command::AcceleratorBreakpointHit(_) => Err(NotServed::Unsupported),
            Command::XferRead(x) if x.object == "osdata" => Err(NotServed::Unsupported),
            Command::NonStop(true) => Err(NotServed::Error(
                ErrorCode::NotSupported,
                "non-stop mode is served on the CPU connection only",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::XferRead;

    #[test]
    fn gpu_session_refuses_cpu_only_packets() {
        let gpu = GpuRole::default();
        let cpu = CpuRole::default();
        let osdata = Command::XferRead(XferRead {
            object: "osdata".into(),
            annex: String::new(),
            offset: 0,
            length: 100,
        });
        let features = Command::XferRead(XferRead {
            object: "features".into(),
            annex: "target.xml".into(),
            offset: 0,
            length: 100,
        });
        for c in [
            Command::VRun(vec![]),
            Command::VAttach(1),
            Command::Restart,
            Command::CatchSyscalls(None),
            Command::AcceleratorInitialize,
            Command::AcceleratorBreakpointHit(vec![]),
            osdata.clone(),
        ] {
            assert_eq!(
                gpu.serves(&c),
                Err(NotServed::Unsupported),
                "GPU session serves {c:?}"
            );
            assert!(cpu.serves(&c).is_ok(), "CPU session refuses {c:?}");
        }
        for c in [features, Command::QuestionMark, Command::Kill] {
            assert!(gpu.serves(&c).is_ok(), "GPU session refuses {c:?}");
        }
        assert_eq!(GpuRole::ROLE, Role::Gpu);
        assert_eq!(CpuRole::ROLE, Role::Cpu);
        assert!(matches!(
            gpu.serves(&Command::NonStop(true)),
            Err(NotServed::Error(ErrorCode::NotSupported, _))
        ));
        assert!(gpu.serves(&Command::NonStop(false)).is_ok());
        let (mut gpu_m, mut cpu_m) = (GpuRole::default(), CpuRole::default());
        gpu_m.client_interrupted();
        cpu_m.client_interrupted();
        assert!(cpu_m.interrupt_wanted);
        cpu_m.stop_reaches_client();
        assert!(!cpu_m.interrupt_wanted);
        assert!(gpu.program_output().is_none() && cpu.program_output().is_none());
        assert!(cpu.reports_process_ends() && !gpu.reports_process_ends());
        assert!(cpu.outlives_client() && !gpu.outlives_client());
        assert_eq!(gpu.accelerator_feature(true), None);
        assert_eq!(cpu.accelerator_feature(true), Some("accelerator-plugins+"));
        assert_eq!(cpu.accelerator_feature(false), None);
        assert!(gpu.qsupported_features().is_empty());
        assert_eq!(gpu.idle_capabilities(), Capabilities::NONE);
    }
}
