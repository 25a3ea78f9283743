//! All-stop across lldb's two targets, for a client with gdbmux's lldb
//! helper (`tools/lldb/gdbmux_lldb.py`, which announces it with `monitor
//! gpu all-stop`; docs/gpu-lldb.md, finding 14).
//!
//! lldb 23.1 has no all-stop across targets: each target's process runs and
//! stops on its own. ROCgdb and cuda-gdb users expect the host to stop with
//! the GPU, and `target list` to say so. gdbmux does the stopping, the
//! helper the resuming (only the client can resume its own target):
//!
//! - **A wave stops while the CPU runs:** the CPU session stops its process
//!   and reports the stop with a description naming the wave (lldb shows it
//!   as the stop reason). The GPU session holds the wave's stop until the
//!   helper's stop hook says, once lldb has taken the CPU's stop in,
//!   `monitor gpu all-stop-release` on the CPU connection: a `process
//!   continue` waiting on the GPU then ends with both targets stopped, and
//!   interactive lldb, which prints a stop in full only for the selected
//!   target, prints the wave's after the hook selected the GPU target. (Not
//!   the GPU's interrupt: lldb does not carry out a breakpoint's actions,
//!   e.g. delete a one-shot one, at a stop it asked for with an interrupt.)
//!   When the user's command waits on the CPU, the stop hook then waits for
//!   the wave's stop before that command ends.
//! - **A wave stops while the CPU is stopped at something else** (the
//!   runtime's loader hook): the CPU stops as soon as it is resumed.
//! - **The GPU session is continued while the CPU is stopped with it:**
//!   the GPU session sends its client an `A` packet (lldb's asynchronous
//!   "profile data", `ProcessGDBRemote::HandleAsyncMisc`, broadcast as
//!   `eBroadcastBitProfileData`: not under the hijacking of a synchronous
//!   command, which takes state changes only, and printed by no one). The
//!   helper listens for it and continues the CPU.
//!
//! - **The CPU session is continued while it is stopped with the GPU**
//!   (`target select 0`, `process continue` at a wave stop): the mirror of
//!   the above. The CPU session sends its client [`RUN_GPU_NOTICE`] (an `A`
//!   packet on the CPU connection) and the helper continues the GPU target.
//!   The CPU's end is then held until its client interrupts: the helper
//!   does so once it has taken the GPU's end in, so that a command waiting
//!   on the CPU ends with both targets exited (the mirror of
//!   `GpuController::hold_exit`).
//!
//! - **A code object loads while a synchronous command holds the GPU
//!   target** and the helper has breakpoints to set in it (lldb 23.1
//!   creates a breakpoint only while no command holds the target): the
//!   helper asks, `monitor gpu all-stop-gpu`, and the GPU session stops its
//!   process with a stop of gdbmux's own (lldb runs the GPU target's stop
//!   hook there, which sets the breakpoints; not at a stop lldb asked for
//!   with an interrupt), and the CPU session's next continue ends at once
//!   ([`AllStop::request_gpu_stop`], docs/gpu-lldb.md, finding 16).
//!
//! A client without the helper gets none of this: stops and resumes stay
//! per target, as before. A continue of the CPU while a wave is stopped
//! then gets a console line saying that the CPU waits for the GPU target.

use crate::stop::StopEvent;

/// The notice to the GPU session's client: an `A` packet of one
/// `name:value;` pair, ended as lldb splits profile data
/// (`ProcessGDBRemote::HandleAsyncMisc` broadcasts each piece up to
/// `--end--;`, and keeps a piece without it for the next packet).
pub const RUN_CPU_NOTICE: &[u8] = b"Agdbmux:run-cpu;--end--;";

/// The notice to the CPU session's client: its CPU continue at a wave stop
/// is to run the GPU target too (the same `A` packet form).
pub const RUN_GPU_NOTICE: &[u8] = b"Agdbmux:run-gpu;--end--;";

/// Prefix of the CPU stop's description (the helper recognises its stop
/// by it).
pub const CPU_STOP_PREFIX: &str = "gdbmux all-stop:";

/// The all-stop state (one writer: the controller that holds it, called
/// by the two sessions).
#[derive(Debug, Default)]
pub struct AllStop {
    /// The helper announced it.
    on: bool,
    /// The CPU session's process runs (resumed by its client).
    cpu_running: bool,
    /// The CPU's last stop was for a wave stop.
    cpu_stopped_with_gpu: bool,
    /// The CPU runs because the helper continued it on a notice.
    cpu_run_by_helper: bool,
    /// The CPU session is to stop its process, and for what.
    cpu_stop_wanted: Option<CpuStopFor>,
    /// The CPU session's process runs on a continue (not only steps).
    cpu_continues: bool,
    /// The GPU session is to stop its process (the helper's
    /// `monitor gpu all-stop-gpu`), with this description.
    gpu_stop_wanted: bool,
    /// The description of that GPU stop, until it is reported.
    gpu_stop_description: Option<String>,
    /// The CPU's continue was not carried out: it stops at once for an
    /// update ([`AllStop::keep_cpu_stopped`]).
    cpu_unresumed: bool,
    /// The GPU stop being made joins a CPU stop of the CPU's own
    /// ([`AllStop::request_gpu_stop_with_cpu`]).
    gpu_stop_joins_cpu: bool,
    /// A wave stop the GPU session holds until its client interrupts.
    held: Option<StopEvent>,
    /// The held stop, released by an interrupt: reported next.
    released: Option<StopEvent>,
    /// The GPU session is to send [`RUN_CPU_NOTICE`].
    notice_wanted: bool,
    /// The sessions have work above (the multiplexer wakes them).
    wake: bool,
    /// The CPU stopped with the GPU and neither was continued since (a
    /// step of the CPU keeps it).
    both_stopped: bool,
    /// The GPU runs because the helper continued it on [`RUN_GPU_NOTICE`]
    /// (the client continued the CPU at a wave stop); until the CPU's
    /// next stop.
    gpu_run_by_helper: bool,
    /// The CPU's end, held until the CPU session's client interrupts.
    held_cpu_exit: Option<StopEvent>,
    /// The last wave stop the GPU session reported, until the GPU is
    /// continued (for the message to a client without the helper).
    stopped_wave: Option<crate::target::Tid>,
}

/// Why the CPU session is to stop its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuStopFor {
    /// A wave (thread id) stopped.
    Wave(crate::target::Tid),
    /// The GPU target stopped so that the helper sets the breakpoints of a
    /// code object that loaded ([`AllStop::request_gpu_stop`]).
    Update,
}

/// The description of the GPU stop for an update (and of the CPU's).
pub const UPDATE_STOP: &str =
    "gdbmux all-stop: a GPU code object loaded while the GPU target ran; \
     both targets stopped to set its breakpoints; `process continue` on either target runs both";

/// The description of the GPU stop that joins a CPU stop of its own.
pub const JOIN_STOP: &str = "gdbmux all-stop: the CPU target stopped (see its stop reason); \
     the GPU target stopped with it; `process continue` on either target runs both";

/// What a resume of the CPU session means for the GPU (see
/// [`AllStop::note_cpu_resume`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuResume {
    /// Nothing for the GPU.
    Plain,
    /// The helper is to continue the GPU target: send [`RUN_GPU_NOTICE`].
    RunGpu,
    /// No helper, and this wave is stopped: the CPU will wait for it (a
    /// console line says so).
    WaitsForWave(crate::target::Tid),
}

/// What the GPU session does with a wave stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaveStopAction {
    /// Report it now.
    Report,
    /// Hold it until the client's interrupt.
    Hold,
}

impl AllStop {
    /// `monitor gpu all-stop`.
    pub fn enable(&mut self) {
        self.on = true;
    }

    /// Whether the helper announced all-stop.
    pub fn enabled(&self) -> bool {
        self.on
    }

    /// The CPU session resumes its process (`continues`: a continue, not
    /// only steps). A continue while the CPU is stopped with the GPU runs
    /// the GPU too: the helper is told ([`CpuResume::RunGpu`]).
    pub fn note_cpu_resume(&mut self, continues: bool) -> CpuResume {
        self.cpu_running = true;
        self.cpu_continues = continues;
        self.cpu_stopped_with_gpu = false;
        if let (Some(t), true) = (self.cpu_stop_wanted, continues) {
            // A wave stopped while the CPU was stopped at something else
            // (the loader hook), or the GPU was stopped for an update: the
            // CPU stops again at once (at its continue: a step off the
            // hook's breakpoint ends by itself).
            tracing::debug!(target: "mux", ?t, "all-stop: CPU continued with the GPU stopped");
            self.wake = true;
        }
        if !continues {
            return CpuResume::Plain;
        }
        let both = std::mem::take(&mut self.both_stopped);
        if self.on && both && !self.cpu_run_by_helper {
            tracing::info!(target: "mux", "all-stop: the CPU continued at a wave stop: the helper continues the GPU");
            self.gpu_run_by_helper = true;
            return CpuResume::RunGpu;
        }
        match self.stopped_wave {
            Some(t) if !self.on => CpuResume::WaitsForWave(t),
            _ => CpuResume::Plain,
        }
    }

    /// The CPU session reports a stop (`with_gpu`: the all-stop stop).
    pub fn note_cpu_stop(&mut self, with_gpu: bool) {
        self.cpu_running = false;
        self.both_stopped |= with_gpu;
        self.cpu_stopped_with_gpu = self.both_stopped;
        self.cpu_run_by_helper = false;
        self.gpu_run_by_helper = false;
    }

    /// The CPU's end (`ev`) while the helper runs the GPU on the CPU's
    /// continue: held (`true`, once) until the CPU session's client
    /// interrupts. The helper interrupts once it has the GPU's end, which
    /// the GPU session reports at once (`gpu_run_by_helper`), so a command
    /// waiting on the CPU ends after both targets have exited.
    pub fn hold_cpu_exit(&mut self, ev: &StopEvent) -> bool {
        if !self.on || !self.gpu_run_by_helper || self.held_cpu_exit.is_some() {
            return false;
        }
        self.held_cpu_exit = Some(ev.clone());
        true
    }

    /// The held end of the CPU, once.
    pub fn take_held_cpu_exit(&mut self) -> Option<StopEvent> {
        self.held_cpu_exit.take()
    }

    /// Whether the GPU runs because the helper continued it on the CPU's
    /// continue (its end is then reported at once, not held).
    pub fn gpu_run_by_helper(&self) -> bool {
        self.gpu_run_by_helper
    }

    /// A wave stop (thread `tid`) the GPU session is about to report.
    pub fn on_wave_stop(&mut self, tid: crate::target::Tid, ev: &StopEvent) -> WaveStopAction {
        self.stopped_wave = Some(tid);
        if self.gpu_stop_description.is_some() {
            // The stop gdbmux makes for all-stop (an update, or joining a
            // CPU stop), reported on a wave it stopped: the CPU's side is
            // already decided.
            return WaveStopAction::Report;
        }
        if !self.on || self.cpu_stopped_with_gpu {
            return WaveStopAction::Report;
        }
        self.cpu_stop_wanted = Some(CpuStopFor::Wave(tid));
        self.wake |= self.cpu_running;
        if self.cpu_running {
            // Whoever ran the CPU (the user's command, or the helper on
            // either notice), the CPU's stop is taken in first: interactive
            // lldb prints a stop in full only for the selected target, which
            // the stop hook makes the GPU one before it releases this stop.
            tracing::info!(target: "mux", wave = tid, "all-stop: the wave's stop waits for the CPU's (lldb helper)");
            self.held = Some(ev.clone());
            return WaveStopAction::Hold;
        }
        WaveStopAction::Report
    }

    /// The CPU session takes the stop it is to make (when it runs on a
    /// continue).
    pub fn take_cpu_stop(&mut self) -> Option<CpuStopFor> {
        if !self.cpu_running || !self.cpu_continues {
            return None;
        }
        self.cpu_stop_wanted.take()
    }

    /// The helper (`monitor gpu all-stop-gpu` on the CPU connection, the CPU
    /// stopped at the runtime's loader hook) has breakpoints to set in the
    /// GPU target while a synchronous command holds it: the GPU session
    /// stops its process with a stop of gdbmux's own (lldb runs the GPU
    /// target's stop hook there, which it does not at a stop it asked for
    /// with an interrupt), and the CPU stops at its next continue.
    /// `false` when all-stop is off.
    pub fn request_gpu_stop(&mut self) -> bool {
        if !self.on {
            return false;
        }
        tracing::info!(target: "mux", "all-stop: stopping the GPU for the helper's update; the CPU stops at its next continue");
        self.gpu_stop_wanted = true;
        self.gpu_stop_description = Some(UPDATE_STOP.to_string());
        self.cpu_stop_wanted = Some(CpuStopFor::Update);
        self.wake = true;
        true
    }

    /// The CPU session is continued while the GPU stopped for an update:
    /// the CPU is not resumed at all (`true`), and its stop is reported at
    /// once. (Resumed and then interrupted, it could reach the loader hook
    /// again first, the next code object's, with the GPU already stopped.)
    pub fn keep_cpu_stopped(&mut self) -> bool {
        if self.cpu_stop_wanted != Some(CpuStopFor::Update) || !self.cpu_continues {
            return false;
        }
        self.cpu_unresumed = true;
        true
    }

    /// Whether the CPU's continue was not carried out (once).
    pub fn take_cpu_unresumed(&mut self) -> bool {
        std::mem::take(&mut self.cpu_unresumed)
    }

    /// The helper (its CPU stop hook, `monitor gpu all-stop-gpu join`): the
    /// CPU stopped on its own (a breakpoint, a signal) while the GPU runs
    /// because the helper continued it on the CPU's continue. The GPU
    /// session stops its process too, with a stop of gdbmux's own, and the
    /// two count as stopped together: a continue of either runs both.
    /// `false` when all-stop is off.
    pub fn request_gpu_stop_with_cpu(&mut self) -> bool {
        if !self.on {
            return false;
        }
        tracing::info!(target: "mux", "all-stop: the CPU stopped on its own: stopping the GPU with it");
        self.gpu_stop_wanted = true;
        self.gpu_stop_description = Some(JOIN_STOP.to_string());
        self.gpu_stop_joins_cpu = true;
        self.wake = true;
        true
    }

    /// The GPU stop for all-stop is reported: its description, once; a
    /// stop that joins the CPU's makes the two stopped together.
    pub fn take_gpu_stop_report(&mut self) -> Option<String> {
        let d = self.gpu_stop_description.take()?;
        if std::mem::take(&mut self.gpu_stop_joins_cpu) && !self.cpu_running {
            self.both_stopped = true;
            self.cpu_stopped_with_gpu = true;
        }
        Some(d)
    }

    /// The GPU session takes the stop it is to make.
    pub fn take_gpu_stop(&mut self) -> bool {
        std::mem::take(&mut self.gpu_stop_wanted)
    }

    /// The helper has the CPU's stop (`monitor gpu all-stop-release` on the
    /// CPU connection), or the GPU session's client interrupts: a held wave
    /// stop is released (`true`) and the GPU session reports it.
    pub fn release_held(&mut self) -> bool {
        match self.held.take() {
            Some(ev) => {
                tracing::info!(target: "mux", "all-stop: reporting the held wave stop");
                self.released = Some(ev);
                self.wake = true;
                true
            }
            None => false,
        }
    }

    /// The released stop, once.
    pub fn take_released(&mut self) -> Option<StopEvent> {
        self.released.take()
    }

    /// Whether a wave stop is held.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The GPU session continues its waves: when the CPU is stopped with
    /// them, its client is told to continue the CPU.
    pub fn note_gpu_continue(&mut self) {
        self.stopped_wave = None;
        self.both_stopped = false;
        if self.on && !self.cpu_running && self.cpu_stopped_with_gpu {
            self.notice_wanted = true;
            self.cpu_run_by_helper = true;
            self.wake = true;
        }
    }

    /// The GPU session takes the notice to send.
    pub fn take_notice(&mut self) -> bool {
        std::mem::take(&mut self.notice_wanted)
    }

    /// Whether the sessions have work (once).
    pub fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.wake)
    }

    /// For `monitor gpu`: (announced, CPU stopped with the GPU, a wave stop held).
    pub fn describe(&self) -> String {
        format!(
            "all-stop: {} (CPU {}{})",
            if self.on { "on (lldb helper)" } else { "off" },
            if self.cpu_running {
                "running"
            } else if self.cpu_stopped_with_gpu {
                "stopped with the GPU"
            } else {
                "stopped"
            },
            if self.holds() {
                ", a wave stop waits for the CPU's"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave_stop() -> StopEvent {
        StopEvent::Stopped {
            pid: 1,
            tid: 7,
            signal: libc::SIGTRAP,
            kind: crate::stop::StopKind::SwBreak,
        }
    }

    #[test]
    fn off_reports_everything_and_wants_nothing() {
        let mut a = AllStop::default();
        a.note_cpu_resume(true);
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.take_cpu_stop(), None);
        a.note_cpu_stop(false);
        a.note_gpu_continue();
        assert!(!a.take_notice() && !a.take_wake());
    }

    #[test]
    fn a_user_run_cpu_stops_with_the_wave_which_waits_for_it() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume(true);
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Hold);
        assert!(a.take_wake());
        assert_eq!(a.take_cpu_stop(), Some(CpuStopFor::Wave(7)));
        a.note_cpu_stop(true);
        // A step of the wave while the CPU is stopped with it: reported.
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.take_cpu_stop(), None);
    }

    #[test]
    fn a_helper_run_cpu_stops_first_and_the_interrupt_releases_the_wave() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume(true);
        a.on_wave_stop(7, &wave_stop());
        a.take_cpu_stop();
        a.note_cpu_stop(true);
        a.note_gpu_continue();
        assert!(a.take_notice() && a.take_wake());
        a.note_cpu_resume(true);
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Hold);
        assert_eq!(a.take_cpu_stop(), Some(CpuStopFor::Wave(7)));
        a.note_cpu_stop(true);
        assert!(a.release_held());
        assert_eq!(a.take_released(), Some(wave_stop()));
        assert!(!a.release_held());
    }

    #[test]
    fn a_wave_stop_at_a_cpu_stop_of_its_own_stops_the_cpu_at_its_resume() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_stop(false);
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.take_cpu_stop(), None);
        a.note_cpu_resume(true);
        assert!(a.take_wake());
        assert_eq!(a.take_cpu_stop(), Some(CpuStopFor::Wave(7)));
    }

    #[test]
    fn a_cpu_continue_at_a_wave_stop_runs_the_gpu_and_holds_the_cpu_exit() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume(true);
        a.on_wave_stop(7, &wave_stop());
        a.take_cpu_stop();
        a.note_cpu_stop(true);
        assert!(a.release_held());
        // A step of the CPU keeps it stopped with the GPU.
        assert_eq!(a.note_cpu_resume(false), CpuResume::Plain);
        a.note_cpu_stop(false);
        assert_eq!(a.note_cpu_resume(true), CpuResume::RunGpu);
        assert!(a.gpu_run_by_helper());
        // The helper's continue of the GPU sends no notice back.
        a.note_gpu_continue();
        assert!(!a.take_notice());
        let end = StopEvent::Exited { pid: 1, code: 0 };
        assert!(a.hold_cpu_exit(&end));
        assert!(!a.hold_cpu_exit(&end));
        assert_eq!(a.take_held_cpu_exit(), Some(end));
    }

    #[test]
    fn without_the_helper_a_cpu_continue_at_a_wave_stop_names_the_wave() {
        let mut a = AllStop::default();
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.note_cpu_resume(true), CpuResume::WaitsForWave(7));
        assert!(!a.hold_cpu_exit(&StopEvent::Exited { pid: 1, code: 0 }));
        a.note_gpu_continue();
        assert_eq!(a.note_cpu_resume(true), CpuResume::Plain);
    }

    #[test]
    fn an_update_stops_the_gpu_and_the_cpu_at_its_continue() {
        let mut a = AllStop::default();
        assert!(!a.request_gpu_stop());
        a.enable();
        a.note_cpu_stop(false);
        assert!(a.request_gpu_stop());
        assert!(a.take_gpu_stop() && !a.take_gpu_stop());
        assert!(a
            .take_gpu_stop_report()
            .is_some_and(|d| d.starts_with(CPU_STOP_PREFIX)));
        // The step off the loader hook's breakpoint is not stopped.
        a.note_cpu_resume(false);
        assert_eq!(a.take_cpu_stop(), None);
        a.note_cpu_stop(false);
        a.note_cpu_resume(true);
        assert!(a.take_wake());
        assert!(a.keep_cpu_stopped());
        assert_eq!(a.take_cpu_stop(), Some(CpuStopFor::Update));
        assert!(a.take_cpu_unresumed() && !a.take_cpu_unresumed());
    }

    #[test]
    fn a_cpu_stop_of_its_own_under_the_helpers_gpu_continue_stops_both() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume(true);
        a.on_wave_stop(7, &wave_stop());
        a.take_cpu_stop();
        a.note_cpu_stop(true);
        assert_eq!(a.note_cpu_resume(true), CpuResume::RunGpu);
        // A CPU breakpoint.
        a.note_cpu_stop(false);
        assert!(a.request_gpu_stop_with_cpu());
        assert!(a.take_gpu_stop());
        // Reported on a wave: the CPU is not stopped again for it.
        assert_eq!(a.on_wave_stop(8, &wave_stop()), WaveStopAction::Report);
        assert!(a.take_gpu_stop_report().is_some());
        assert_eq!(a.take_cpu_stop(), None);
        // Stopped together: a continue of the CPU runs the GPU.
        assert_eq!(a.note_cpu_resume(true), CpuResume::RunGpu);
    }
}
