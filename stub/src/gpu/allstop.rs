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
//!   as the stop reason). When the helper ran that CPU on (below), the GPU
//!   session holds the wave's stop until the helper says, once lldb has
//!   taken the CPU's stop in, `monitor gpu all-stop-release` on the CPU
//!   connection: a `process continue` waiting on the GPU then ends with
//!   both targets stopped. (Not the GPU's interrupt: lldb does not carry
//!   out a breakpoint's actions, e.g. delete a one-shot one, at a stop it
//!   asked for with an interrupt.) When the user's own command
//!   waits on the CPU, the wave's stop goes out at once and the helper's
//!   stop hook waits for it before that command ends.
//! - **A wave stops while the CPU is stopped at something else** (the
//!   runtime's loader hook): the CPU stops as soon as it is resumed.
//! - **The GPU session is continued while the CPU is stopped with it:**
//!   the GPU session sends its client an `A` packet (lldb's asynchronous
//!   "profile data", `ProcessGDBRemote::HandleAsyncMisc`, broadcast as
//!   `eBroadcastBitProfileData`: not under the hijacking of a synchronous
//!   command, which takes state changes only, and printed by no one). The
//!   helper listens for it and continues the CPU.
//!
//! A client without the helper gets none of this: stops and resumes stay
//! per target, as before.

use crate::stop::StopEvent;

/// The notice to the GPU session's client: an `A` packet of one
/// `name:value;` pair, ended as lldb splits profile data
/// (`ProcessGDBRemote::HandleAsyncMisc` broadcasts each piece up to
/// `--end--;`, and keeps a piece without it for the next packet).
pub const RUN_CPU_NOTICE: &[u8] = b"Agdbmux:run-cpu;--end--;";

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
    /// The CPU session is to stop its process for this wave (thread id).
    cpu_stop_wanted: Option<crate::target::Tid>,
    /// A wave stop the GPU session holds until its client interrupts.
    held: Option<StopEvent>,
    /// The held stop, released by an interrupt: reported next.
    released: Option<StopEvent>,
    /// The GPU session is to send [`RUN_CPU_NOTICE`].
    notice_wanted: bool,
    /// The sessions have work above (the multiplexer wakes them).
    wake: bool,
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

    /// The CPU session resumes its process.
    pub fn note_cpu_resume(&mut self) {
        self.cpu_running = true;
        self.cpu_stopped_with_gpu = false;
        if let Some(t) = self.cpu_stop_wanted {
            // A wave stopped while the CPU was stopped at something else:
            // the CPU stops again at once.
            tracing::debug!(target: "mux", wave = t, "all-stop: CPU resumed with a wave stopped");
            self.wake = true;
        }
    }

    /// The CPU session reports a stop (`with_gpu`: the all-stop stop).
    pub fn note_cpu_stop(&mut self, with_gpu: bool) {
        self.cpu_running = false;
        self.cpu_stopped_with_gpu = with_gpu;
        self.cpu_run_by_helper = false;
    }

    /// A wave stop (thread `tid`) the GPU session is about to report.
    pub fn on_wave_stop(&mut self, tid: crate::target::Tid, ev: &StopEvent) -> WaveStopAction {
        if !self.on || self.cpu_stopped_with_gpu {
            return WaveStopAction::Report;
        }
        self.cpu_stop_wanted = Some(tid);
        self.wake |= self.cpu_running;
        if self.cpu_running && self.cpu_run_by_helper {
            tracing::info!(target: "mux", wave = tid, "all-stop: the wave's stop waits for the CPU's (lldb helper)");
            self.held = Some(ev.clone());
            return WaveStopAction::Hold;
        }
        WaveStopAction::Report
    }

    /// The CPU session takes the stop it is to make (when running).
    pub fn take_cpu_stop(&mut self) -> Option<crate::target::Tid> {
        if !self.cpu_running {
            return None;
        }
        self.cpu_stop_wanted.take()
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
        a.note_cpu_resume();
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.take_cpu_stop(), None);
        a.note_cpu_stop(false);
        a.note_gpu_continue();
        assert!(!a.take_notice() && !a.take_wake());
    }

    #[test]
    fn a_user_run_cpu_stops_with_the_wave_which_is_reported_at_once() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume();
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert!(a.take_wake());
        assert_eq!(a.take_cpu_stop(), Some(7));
        a.note_cpu_stop(true);
        // A step of the wave while the CPU is stopped with it: reported.
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Report);
        assert_eq!(a.take_cpu_stop(), None);
    }

    #[test]
    fn a_helper_run_cpu_stops_first_and_the_interrupt_releases_the_wave() {
        let mut a = AllStop::default();
        a.enable();
        a.note_cpu_resume();
        a.on_wave_stop(7, &wave_stop());
        a.take_cpu_stop();
        a.note_cpu_stop(true);
        a.note_gpu_continue();
        assert!(a.take_notice() && a.take_wake());
        a.note_cpu_resume();
        assert_eq!(a.on_wave_stop(7, &wave_stop()), WaveStopAction::Hold);
        assert_eq!(a.take_cpu_stop(), Some(7));
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
        a.note_cpu_resume();
        assert!(a.take_wake());
        assert_eq!(a.take_cpu_stop(), Some(7));
    }
}
