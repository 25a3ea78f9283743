//! The `Target` contract: what a debuggable thing (a Linux process, a GPU)
//! offers to a session.
//!
//! Shape follows lldb's `NativeProcessProtocol` → `NativeThreadProtocol` →
//! `NativeRegisterContext`: the process owns memory, breakpoints, resume and
//! the thread list; each thread has a register context described by a
//! runtime [`RegisterInfo`] table. `g`, `p`, `qRegisterInfo` and target.xml
//! are all generated from that table by the session, never hand-written.
//!
//! Targets never block: [`Target::resume`] returns at once, and the stop
//! arrives later when the loop sees [`Target::event_fd`] readable and calls
//! [`Target::process_events`].

use std::os::fd::RawFd;

use crate::stop::StopEvent;

/// Process id as the kernel (or backend) knows it.
pub type Pid = u32;
/// Thread id as the backend knows it (a Linux tid, or a GPU wave handle).
pub type Tid = u64;

/// Where a register lives and how the client should display it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterInfo {
    /// Name as gdb/lldb know it (`rax`, `xmm0`, `ymm0h`, `fs_base`, `v0`).
    pub name: String,
    /// Size in bits.
    pub bitsize: u32,
    /// Register number on the wire (`p`/`P` number, target.xml `regnum`).
    pub regnum: u32,
    /// DWARF register number, if any.
    pub dwarf: Option<u32>,
    /// lldb "generic" role: `pc`, `sp`, `fp`, `flags`, `ra`, `arg1`…
    pub generic: Option<&'static str>,
    /// target.xml type: `int`, `code_ptr`, `data_ptr`, `i387_ext`,
    /// `vec128`, `i8`, `int64`, `uint32`, `ieee_single`…
    pub reg_type: String,
    /// target.xml feature this register belongs to
    /// (`org.gnu.gdb.i386.core`, `org.gnu.gdb.i386.sse`, …).
    pub feature: String,
    /// Register group (`general`, `float`, `vector`, `system`).
    pub group: Option<&'static str>,
    /// Whether this register is included in the `g` packet.
    pub in_g_packet: bool,
    /// lldb `encoding` (`uint`, `sint`, `ieee754`, `vector`).
    pub encoding: &'static str,
    /// lldb `format` (`hex`, `decimal`, `float`, `vector-uint8`…).
    pub format: &'static str,
}

/// Static description of the architecture, for qHostInfo/qProcessInfo and
/// target.xml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchInfo {
    /// LLVM triple (`x86_64-pc-linux-gnu`, `amdgpu-amd-amdhsa--gfx90a`).
    pub triple: String,
    /// gdb's `<architecture>` string (`i386:x86-64`).
    pub gdb_arch: String,
    /// gdb `<osabi>` (`GNU/Linux`), if any.
    pub osabi: Option<String>,
    /// Pointer size in bytes.
    pub ptr_size: u32,
    /// Extra target.xml types (vector unions etc.), already in XML form.
    pub xml_types: String,
}

/// Kind of breakpoint or watchpoint (`Z0`..`Z4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakpointKind {
    /// `Z0`: software breakpoint (int3).
    Software,
    /// `Z1`: hardware execution breakpoint.
    Hardware,
    /// `Z2`: write watchpoint.
    WatchWrite,
    /// `Z3`: read watchpoint.
    WatchRead,
    /// `Z4`: access watchpoint.
    WatchAccess,
}

/// What to do with one thread on resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeAction {
    /// Continue, optionally delivering a signal (Linux numbering).
    Continue(Option<i32>),
    /// Single-step one instruction, optionally delivering a signal.
    Step(Option<i32>),
    /// Keep stepping while `start <= pc < end`; report when it leaves the
    /// range (gdb's `vCont;r`).
    RangeStep {
        /// First address of the range.
        start: u64,
        /// One past the last address of the range.
        end: u64,
    },
    /// Leave the thread stopped.
    Stop,
}

/// Resume plan: explicit per-thread actions plus a default for the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumePlan {
    /// Actions for named threads.
    pub threads: Vec<(Tid, ResumeAction)>,
    /// Action for every thread not named (`None` = leave stopped).
    pub default: Option<ResumeAction>,
}

/// One memory region (from /proc/PID/maps) for `qMemoryRegionInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Start address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Readable / writable / executable; all false for an unmapped gap.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
    /// Mapped file or pseudo name (`[stack]`), if any.
    pub name: Option<String>,
}

/// Information about the inferior for `qProcessInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: Pid,
    /// Parent process id.
    pub ppid: Pid,
    /// Real user id.
    pub uid: u32,
    /// Real group id.
    pub gid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Effective group id.
    pub egid: u32,
    /// Executable path.
    pub exe: Option<String>,
}

/// Errors a target reports. Converted to `Exx` replies (with a readable
/// message when the client enabled error strings) in one place in the
/// session.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// A failed system call or target operation with an errno.
    #[error("{what}: {errno}")]
    Errno {
        /// What we were doing.
        what: String,
        /// The errno.
        errno: nix::errno::Errno,
    },
    /// The thread or process no longer exists.
    #[error("thread or process {0} is gone")]
    Gone(Tid),
    /// No such thread.
    #[error("no thread {0}")]
    NoSuchThread(Tid),
    /// Register number out of range.
    #[error("no register {0}")]
    NoSuchRegister(u32),
    /// Bad argument (length, alignment, kind not supported).
    #[error("{0}")]
    Invalid(String),
    /// All hardware debug registers are in use.
    #[error("no free hardware debug register")]
    NoHwSlot,
    /// Operation needs the target to be stopped.
    #[error("target is running")]
    Running,
    /// The target does not support this operation.
    #[error("not supported: {0}")]
    Unsupported(&'static str),
}

impl TargetError {
    /// The errno to put in an `Exx` reply.
    pub fn errno_code(&self) -> u8 {
        use nix::errno::Errno;
        match self {
            TargetError::Errno { errno, .. } => (*errno as i32).clamp(1, 255) as u8,
            TargetError::Gone(_) => Errno::ESRCH as u8,
            TargetError::NoSuchThread(_) => Errno::ESRCH as u8,
            TargetError::NoSuchRegister(_) => Errno::EINVAL as u8,
            TargetError::Invalid(_) => Errno::EINVAL as u8,
            TargetError::NoHwSlot => Errno::ENOSPC as u8,
            TargetError::Running => Errno::EBUSY as u8,
            TargetError::Unsupported(_) => Errno::ENOSYS as u8,
        }
    }
}

/// Result alias for target operations.
pub type TargetResult<T> = Result<T, TargetError>;

/// A debuggable process. All methods are called from the loop thread and
/// must not block (apart from short ptrace/waitpid calls on stopped
/// threads).
pub trait Target {
    /// Architecture facts.
    fn arch(&self) -> &ArchInfo;
    /// Register table (indexed by position; `regnum` is the wire number).
    fn registers(&self) -> &[RegisterInfo];
    /// Process id.
    fn pid(&self) -> Pid;
    /// Live threads, in creation order (first = main thread).
    fn threads(&self) -> Vec<Tid>;
    /// Live threads, or why the list cannot be had (a GPU library error):
    /// the thread-list packets answer an `E` reply with the reason.
    fn try_threads(&self) -> TargetResult<Vec<Tid>> {
        Ok(self.threads())
    }
    /// Thread name (Linux `comm`), if known.
    fn thread_name(&self, tid: Tid) -> Option<String>;
    /// Whether the process is currently stopped (all-stop).
    fn is_stopped(&self) -> bool;

    /// Read one register by wire number. Returns its bytes in target
    /// (little-endian) order, `bitsize/8` long.
    fn read_register(&mut self, tid: Tid, regnum: u32) -> TargetResult<Vec<u8>>;
    /// Write one register by wire number.
    fn write_register(&mut self, tid: Tid, regnum: u32, value: &[u8]) -> TargetResult<()>;
    /// Read all registers that go into the `g` packet, in table order,
    /// concatenated. Targets should fetch each register set once.
    fn read_g_registers(&mut self, tid: Tid) -> TargetResult<Vec<u8>>;
    /// Write the `g` block (same layout as [`Target::read_g_registers`]).
    fn write_g_registers(&mut self, tid: Tid, data: &[u8]) -> TargetResult<()>;
    /// Program counter of a thread.
    fn pc(&mut self, tid: Tid) -> TargetResult<u64>;

    /// Read memory. May return fewer bytes than asked when the range
    /// crosses into unmapped memory; an error only when nothing is
    /// readable. Our own internal breakpoints are masked out.
    fn read_memory(&mut self, addr: u64, len: usize) -> TargetResult<Vec<u8>>;
    /// Write memory (text pages too). Returns bytes written.
    fn write_memory(&mut self, addr: u64, data: &[u8]) -> TargetResult<usize>;

    /// Insert a breakpoint/watchpoint. Idempotent per (kind, addr, len).
    fn insert_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()>;
    /// Remove a breakpoint/watchpoint. Removing one that is not there is OK.
    fn remove_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()>;

    /// Resume according to `plan`. Returns immediately; the next stop comes
    /// from [`Target::process_events`].
    fn resume(&mut self, plan: &ResumePlan) -> TargetResult<()>;
    /// Ask a running process to stop (`\x03`). The stop is reported later
    /// by [`Target::process_events`] as an interrupt.
    fn interrupt(&mut self) -> TargetResult<()>;
    /// fd of the target's own that becomes readable when
    /// [`Target::process_events`] has work. Native Linux targets return
    /// `None`: they share the process-wide SIGCHLD signalfd
    /// (`native::SigchldFd`), and the loop calls `process_events` on every
    /// native target when it is readable.
    fn event_fd(&self) -> Option<RawFd> {
        None
    }
    /// Consume pending kernel events (non-blocking; `WNOHANG`). Returns a stop to report when the
    /// process as a whole has stopped (all-stop) or exited.
    fn process_events(&mut self) -> TargetResult<Option<StopEvent>>;

    /// Kill the process; returns once it is reaped or returns and reports
    /// exit later via events.
    fn kill(&mut self) -> TargetResult<()>;
    /// Detach: remove every breakpoint, leave no thread stopped.
    fn detach(&mut self) -> TargetResult<()>;

    /// `qXfer:auxv:read` contents.
    fn auxv(&mut self) -> TargetResult<Vec<u8>> {
        Err(TargetError::Unsupported("auxv"))
    }
    /// `qXfer:libraries-svr4:read` document.
    fn libraries_svr4_xml(&mut self) -> TargetResult<String> {
        Err(TargetError::Unsupported("libraries-svr4"))
    }
    /// Executable path (`qXfer:exec-file:read`).
    fn exec_file(&self) -> Option<String> {
        None
    }
    /// Raw `siginfo_t` of the thread's last stop (`qXfer:siginfo:read`).
    fn siginfo(&mut self, _tid: Tid) -> TargetResult<Vec<u8>> {
        Err(TargetError::Unsupported("siginfo"))
    }
    /// `qMemoryRegionInfo` for an address.
    fn memory_region(&mut self, _addr: u64) -> TargetResult<MemoryRegion> {
        Err(TargetError::Unsupported("memory regions"))
    }
    /// `qProcessInfo` data.
    fn process_info(&self) -> Option<ProcessInfo> {
        None
    }
    /// Signals (Linux numbers) to pass to the inferior without stopping.
    fn set_pass_signals(&mut self, _signals: &[i32]) {}
    /// Core a thread last ran on.
    fn thread_core(&self, _tid: Tid) -> Option<u32> {
        None
    }
    /// Number of hardware watchpoint slots.
    fn hw_watchpoint_slots(&self) -> u32 {
        0
    }
    /// Whether fork/vfork children are followed (the session enables
    /// this when the client negotiated fork-events).
    fn set_report_forks(&mut self, _on: bool) {}
    /// Whether `exec` is reported as [`crate::stop::StopKind::Exec`] (the
    /// client negotiated exec-events); otherwise it is followed silently.
    fn set_report_exec(&mut self, _on: bool) {}

    /// `qXfer:siginfo:write`: replace bytes of the stopped thread's
    /// siginfo (delivered with the signal on the next resume). Returns the
    /// count written.
    fn write_siginfo(&mut self, _tid: Tid, _offset: u64, _data: &[u8]) -> TargetResult<usize> {
        Err(TargetError::Unsupported("siginfo write"))
    }

    /// `QCatchSyscalls`: report entries to and returns from these system
    /// calls (`Some(empty)` = all; `None` = off). Returns false when the
    /// target cannot.
    fn set_catch_syscalls(&mut self, _set: Option<Vec<u64>>) -> bool {
        false
    }
    /// Insert a breakpoint the stub itself needs (e.g. the GPU runtime
    /// hook). Reference counted; shares the patch with a client `Z0` at
    /// the same address; masked from memory reads like any breakpoint.
    fn insert_internal_breakpoint(&mut self, _addr: u64) -> TargetResult<()> {
        Err(TargetError::Unsupported("internal breakpoints"))
    }
    /// Drop one reference taken by [`Target::insert_internal_breakpoint`].
    fn remove_internal_breakpoint(&mut self, _addr: u64) -> TargetResult<()> {
        Err(TargetError::Unsupported("internal breakpoints"))
    }
    /// Whether the stub holds an internal breakpoint at `addr` (a
    /// `SwBreak` stop there is the stub's own, maybe the client's too).
    fn is_internal_breakpoint(&self, _addr: u64) -> bool {
        false
    }
    /// Whether the client inserted a software breakpoint at `addr`.
    fn is_client_breakpoint(&self, _addr: u64) -> bool {
        false
    }
    /// Whether this process was attached (vs launched by us).
    fn attached(&self) -> bool;
    /// After a [`crate::stop::StopKind::Fork`]/`VFork` stop: hand over the
    /// traced, stopped child as a target of its own.
    fn take_fork_child(&mut self, _child: Pid) -> Option<Box<dyn Target>> {
        None
    }
}
