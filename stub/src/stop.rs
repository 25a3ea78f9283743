//! Typed stop events, produced by targets and turned into `T`/`S`/`W`/`X`
//! stop replies in exactly one place (`packet::stop_reply`).

use crate::target::Pid;
use crate::target::Tid;

/// Why a thread stopped (beyond the signal number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopKind {
    /// A plain signal (delivered by the kernel or another process).
    Signal,
    /// Software breakpoint (int3) hit; the PC was already rewound to the
    /// breakpoint address.
    SwBreak,
    /// Hardware execution breakpoint hit.
    HwBreak,
    /// Write watchpoint triggered at `addr`.
    Watch {
        /// Watched address that triggered.
        addr: u64,
    },
    /// Read watchpoint.
    ReadWatch {
        /// Watched address that triggered.
        addr: u64,
    },
    /// Access watchpoint.
    AccessWatch {
        /// Watched address that triggered.
        addr: u64,
    },
    /// Single step (or range step) finished.
    Step,
    /// Stopped on request (`\x03`).
    Interrupt,
    /// The thread forked; the child is stopped and traced.
    Fork {
        /// Child process id.
        child_pid: Pid,
        /// Child's (only) thread id.
        child_tid: Tid,
    },
    /// The thread vforked; the child is stopped and traced.
    VFork {
        /// Child process id.
        child_pid: Pid,
        /// Child's thread id.
        child_tid: Tid,
    },
    /// The vfork child exec'd or exited; parent can run again.
    VForkDone,
    /// The process exec'd a new program.
    Exec {
        /// Path of the new executable.
        path: String,
    },
    /// Initial stop after launch or attach.
    Initial,
    /// A signal stop with a text for the client, e.g. a GPU wave's
    /// exception (`integer divide by zero`): lldb shows it as the stop
    /// reason (the `description:` key, as lldb-server sends for SIGSEGV),
    /// gdb shows the signal.
    Fault {
        /// What happened.
        description: String,
    },
    /// Entry to a caught system call (`QCatchSyscalls`).
    SyscallEntry {
        /// System call number.
        number: u64,
    },
    /// Return from a caught system call.
    SyscallReturn {
        /// System call number.
        number: u64,
    },
}

/// A stop of the whole process (all-stop), or its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopEvent {
    /// A thread stopped; every other thread is stopped too.
    Stopped {
        /// Process.
        pid: Pid,
        /// The thread that reports the stop.
        tid: Tid,
        /// Linux signal number (SIGTRAP=5 for breakpoints and steps,
        /// 0 for a quiet attach stop).
        signal: i32,
        /// Why.
        kind: StopKind,
    },
    /// The process exited normally.
    Exited {
        /// Process.
        pid: Pid,
        /// Exit status.
        code: i32,
    },
    /// The process was killed by a signal (Linux numbering).
    Terminated {
        /// Process.
        pid: Pid,
        /// Signal.
        signal: i32,
    },
}

impl StopEvent {
    /// The process this event concerns.
    pub fn pid(&self) -> Pid {
        match self {
            StopEvent::Stopped { pid, .. }
            | StopEvent::Exited { pid, .. }
            | StopEvent::Terminated { pid, .. } => *pid,
        }
    }
}
