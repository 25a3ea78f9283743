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
    /// A signal the client passes silently (`QPassSignals`) that stopped
    /// the thread while we held it stopped (the process stopping for
    /// another thread's event, a condition's step-over). gdbserver keeps
    /// such a stop as the thread's pending status and filters it when the
    /// thread is resumed (linux-low.cc `linux_wait_1`): delivered with a
    /// continue, reported to a thread the client steps. Delivering it with
    /// the step instead ends the step at the handler's first instruction.
    pub held_passed: Option<i32>,
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
    /// Software breakpoints (the client's or the stub's own) removed while this thread ran
    /// ([`Removed`]).
    pub removed: Removed,
}

/// Most addresses [`Removed`] lists for one thread; past it, any `int3`
/// trap at an address whose byte is no longer `0xcc` counts as the hit of
/// a removed breakpoint.
pub const REMOVED_LIMIT: usize = 64;

/// The software breakpoints taken out of memory while a thread ran (gdb
/// removes breakpoints while threads run in non-stop mode). The thread may
/// have executed one of those `int3`s just before the `z0` came, its stop
/// then collected only after: a hit of a breakpoint that is no longer
/// there. gdbserver backs the pc up over any `int3` trap
/// (`linux_process_target::save_stop_reason`, linux-low.cc, for every
/// `SI_KERNEL` SIGTRAP) and reports a software-breakpoint stop, which gdb
/// drops as a hit of one of its "moribund locations" (infrun.c) and
/// resumes the thread. Without the pc backed up, the thread would go on
/// from the middle of the instruction the `int3` replaced.
///
/// Emptied each time the thread is started again: an `int3` taken out
/// before that is no longer in memory when it runs.
#[derive(Debug, Default)]
pub struct Removed {
    addrs: Vec<u64>,
    overflow: bool,
}

impl Removed {
    /// A breakpoint at `addr` was taken out of memory while the thread ran.
    pub fn note(&mut self, addr: u64) {
        if self.addrs.contains(&addr) {
            return;
        }
        if self.addrs.len() >= REMOVED_LIMIT {
            self.overflow = true;
            return;
        }
        self.addrs.push(addr);
    }

    /// Whether an `int3` trap at `addr` (no breakpoint of ours there now)
    /// is the hit of a breakpoint removed while the thread ran. `byte` is
    /// what memory holds at `addr` now (asked only past the limit: a
    /// program's own `int3` is still there).
    pub fn explains(&self, addr: u64, byte: impl FnOnce() -> Option<u8>) -> bool {
        self.addrs.contains(&addr) || (self.overflow && byte().is_some_and(|b| b != 0xcc))
    }

    /// The thread starts running again.
    pub fn clear(&mut self) {
        self.addrs.clear();
        self.overflow = false;
    }
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
            held_passed: None,
            regs: RegCache::default(),
            dr_generation: 0,
            attach_signal: None,
            removed: Removed::default(),
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
