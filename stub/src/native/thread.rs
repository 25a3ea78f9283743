//! Per-thread state of a traced process.

use super::ptrace::RawTid;
use super::x86_64::RegCache;
use crate::stop::StopKind;
use crate::target::ResumeAction;

/// A classified stop that has not been reported yet (all-stop keeps one
/// per thread; it is reported on a later resume instead of resuming the
/// thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingStop {
    /// Linux signal number to report.
    pub signal: i32,
    /// Why.
    pub kind: StopKind,
    /// Arrival order (lowest is reported first).
    pub seq: u64,
}

/// One traced thread.
pub struct Thread {
    /// Kernel thread id.
    pub tid: RawTid,
    /// Resumed by us and no stop collected since.
    pub running: bool,
    /// A SIGSTOP is on its way (ours, or a new thread's initial one):
    /// swallow it when it arrives.
    pub sigstop_expected: bool,
    /// The expected SIGSTOP is an interrupt request: report it.
    pub interrupt: bool,
    /// Stop collected but not reported yet.
    pub pending: Option<PendingStop>,
    /// What the thread does when it runs (the last resume action).
    pub action: ResumeAction,
    /// Signal held back, to deliver on the next resume.
    pub deliver: Option<i32>,
    /// Register sets cached while stopped.
    pub regs: RegCache,
    /// Debug-register generation applied to this thread.
    pub dr_generation: u64,
    /// The signal an attach found it stopped for, reported to the client
    /// as the attach stop: delivered if the client detaches before the
    /// thread runs, as gdbserver's `get_detach_signal` delivers the last
    /// reported signal (a program whose SIGALRM handler raises the next
    /// SIGALRM aborts when one is dropped: attach-into-signal).
    pub attach_signal: Option<i32>,
}

impl Thread {
    /// A thread that is stopped now.
    pub fn stopped(tid: RawTid) -> Self {
        Thread {
            tid,
            running: false,
            sigstop_expected: false,
            interrupt: false,
            pending: None,
            action: ResumeAction::Continue(None),
            deliver: None,
            regs: RegCache::default(),
            dr_generation: 0,
            attach_signal: None,
        }
    }

    /// A thread just reported by a clone event, whose initial SIGSTOP has
    /// not been collected yet.
    pub fn new_clone(tid: RawTid) -> Self {
        Thread {
            running: true,
            sigstop_expected: true,
            ..Thread::stopped(tid)
        }
    }
}
