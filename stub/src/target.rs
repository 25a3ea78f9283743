//! The `Target` contract: what a debuggable thing (a Linux process, a GPU)
//! offers to a session.
//!
//! One trait per process: it owns memory, breakpoints, resume and the
//! thread list. Threads are plain ids ([`Tid`]); registers are addressed
//! per thread through the process (`read_register(tid, regnum)`), and one
//! runtime [`RegisterInfo`] table per process describes them: `g`, `p`,
//! `qRegisterInfo` and target.xml are all generated from that table by the
//! session, never hand-written. There are no separate thread or
//! register-context objects.
//!
//! Optional features are typed capabilities, the gdbstub way: a
//! `support_*` accessor returns `Some(ops)` when the target has the
//! feature ([`AuxvOps`], [`LibrariesSvr4Ops`], [`SiginfoOps`],
//! [`MemoryRegionOps`], [`RangeStepping`]). The session derives
//! `qSupported` and `vCont?` from them ([`Capabilities`]), so a client is
//! never offered what the target cannot do.
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
    /// The named code of its `Exx` reply (the one mapping; numbers in
    /// [`crate::error::ErrorCode::wire`]).
    pub fn code(&self) -> crate::error::ErrorCode {
        use crate::error::ErrorCode;
        match self {
            TargetError::Errno { errno, .. } => ErrorCode::Errno(*errno),
            TargetError::Gone(_) | TargetError::NoSuchThread(_) => ErrorCode::NoSuchProcess,
            TargetError::NoSuchRegister(_) | TargetError::Invalid(_) => ErrorCode::Invalid,
            TargetError::NoHwSlot => ErrorCode::NoSpace,
            TargetError::Running => ErrorCode::Busy,
            TargetError::Unsupported(_) => ErrorCode::NotImplemented,
        }
    }
}

/// Result alias for target operations.
pub type TargetResult<T> = Result<T, TargetError>;

/// `qXfer:auxv:read` (see [`Target::support_auxv`]).
pub trait AuxvOps {
    /// The raw auxiliary vector.
    fn auxv(&mut self) -> TargetResult<Vec<u8>>;
}

/// `qXfer:libraries-svr4:read` (see [`Target::support_libraries_svr4`]).
pub trait LibrariesSvr4Ops {
    /// The gdb `<library-list-svr4>` document.
    fn libraries_svr4_xml(&mut self) -> TargetResult<String>;
}

/// `qXfer:siginfo:read` (see [`Target::support_siginfo`]).
pub trait SiginfoOps {
    /// Raw `siginfo_t` of the thread's last stop.
    fn siginfo(&mut self, tid: Tid) -> TargetResult<Vec<u8>>;
    /// `qXfer:siginfo:write`: replace bytes of the stopped thread's
    /// siginfo (delivered with the signal on the next resume). Returns the
    /// count written.
    fn write_siginfo(&mut self, tid: Tid, offset: u64, data: &[u8]) -> TargetResult<usize>;
}

/// `qMemoryRegionInfo` (see [`Target::support_memory_regions`]).
pub trait MemoryRegionOps {
    /// The region holding `addr`, or the unmapped gap around it.
    fn memory_region(&mut self, addr: u64) -> TargetResult<MemoryRegion>;
}

/// Proof that a target range-steps (see [`Target::support_range_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeStepping;

/// What a target can do beyond the required methods, read from its
/// `support_*` accessors. `qSupported` and `vCont?` are derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `qXfer:auxv:read`.
    pub auxv: bool,
    /// `qXfer:libraries-svr4:read`.
    pub libraries_svr4: bool,
    /// `qXfer:siginfo:read`.
    pub siginfo: bool,
    /// `qMemoryRegionInfo`.
    pub memory_regions: bool,
    /// `vCont;r`.
    pub range_step: bool,
}

impl Capabilities {
    /// Read a target's accessors.
    pub fn of(t: &mut dyn Target) -> Self {
        Capabilities {
            auxv: t.support_auxv().is_some(),
            libraries_svr4: t.support_libraries_svr4().is_some(),
            siginfo: t.support_siginfo().is_some(),
            memory_regions: t.support_memory_regions().is_some(),
            range_step: t.support_range_step().is_some(),
        }
    }

    /// Nothing optional.
    pub const NONE: Capabilities = Capabilities {
        auxv: false,
        libraries_svr4: false,
        siginfo: false,
        memory_regions: false,
        range_step: false,
    };

    /// The `vCont?` reply.
    pub fn vcont_reply(&self) -> &'static [u8] {
        if self.range_step {
            b"vCont;c;C;s;S;t;r"
        } else {
            b"vCont;c;C;s;S;t"
        }
    }
}

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
    /// [`Target::try_threads`] as a shared slice. A target that keeps its
    /// list (the GPU's waves) hands out the same slice until its threads
    /// change, so a caller may keep what it made of the list while
    /// `Rc::ptr_eq` holds (the formatted thread-list reply).
    fn try_thread_ids(&self) -> TargetResult<std::rc::Rc<[Tid]>> {
        self.try_threads().map(std::rc::Rc::from)
    }
    /// Whether `tid` is one of [`Target::threads`]: a target with many
    /// threads answers by lookup (a packet naming a thread must not cost a
    /// listing of all of them).
    fn has_thread(&self, tid: Tid) -> bool {
        self.threads().contains(&tid)
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
    /// [`Target::read_memory`] into the caller's buffer (reused between
    /// packets, so a large read allocates nothing): fills a prefix of
    /// `buf` and returns its length. The default copies from
    /// `read_memory`; the native target reads straight into `buf`.
    fn read_memory_into(&mut self, addr: u64, buf: &mut [u8]) -> TargetResult<usize> {
        let data = self.read_memory(addr, buf.len())?;
        let n = data.len().min(buf.len());
        if let (Some(d), Some(s)) = (buf.get_mut(..n), data.get(..n)) {
            d.copy_from_slice(s);
        }
        Ok(n)
    }
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
    /// The fatal tier ([`crate::error`]): the stub itself is failing.
    /// Remove every breakpoint and detach, leaving the process **stopped**
    /// (never killed), so another debugger can take it over. The default
    /// detaches (a target without a stopped state of its own).
    fn abandon(&mut self) -> TargetResult<()> {
        self.detach()
    }

    /// `qXfer:auxv:read`, when the target has an auxiliary vector.
    fn support_auxv(&mut self) -> Option<&mut dyn AuxvOps> {
        None
    }
    /// `qXfer:libraries-svr4:read`, when the target has a dynamic linker.
    fn support_libraries_svr4(&mut self) -> Option<&mut dyn LibrariesSvr4Ops> {
        None
    }
    /// Executable path (`qXfer:exec-file:read`).
    fn exec_file(&self) -> Option<String> {
        None
    }
    /// `qXfer:siginfo:read`, when stops carry a `siginfo_t`.
    fn support_siginfo(&mut self) -> Option<&mut dyn SiginfoOps> {
        None
    }
    /// `qMemoryRegionInfo`, when the target knows its memory map.
    fn support_memory_regions(&mut self) -> Option<&mut dyn MemoryRegionOps> {
        None
    }
    /// Whether [`Target::resume`] carries out [`ResumeAction::RangeStep`]
    /// (gdb's `vCont;r`). Without it, `r` is not advertised in `vCont?`
    /// and a range step is refused, never silently narrowed.
    fn support_range_step(&mut self) -> Option<RangeStepping> {
        None
    }
    /// `qProcessInfo` data.
    fn process_info(&self) -> Option<ProcessInfo> {
        None
    }
    /// The process's working directory (lldb's `qGetWorkingDir`).
    fn working_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Whether a stopped process was killed from outside while stopped
    /// (every thread gone or a zombie). Asked only after a SIGCHLD that no
    /// ptrace stop explains.
    fn killed_while_stopped(&self) -> bool {
        false
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
    /// Non-stop mode (gdb's `QNonStop`): threads stop and resume one by
    /// one. On, [`Target::resume`] starts only the stopped threads its
    /// plan covers and leaves every other thread as it is, each stop
    /// stops its own thread only and comes from
    /// [`Target::process_events`] as one event per thread (the caller
    /// drains it until `None`). Switched only while every thread is
    /// stopped.
    fn set_non_stop(&mut self, on: bool) -> TargetResult<()> {
        if on {
            Err(TargetError::Unsupported("non-stop mode"))
        } else {
            Ok(())
        }
    }
    /// Non-stop: stop these running threads (all for `None`); each is
    /// reported with signal 0 once stopped. Stopped threads are left alone.
    fn stop_threads(&mut self, _tids: Option<&[Tid]>) -> TargetResult<()> {
        Err(TargetError::Unsupported("non-stop mode"))
    }
    /// Non-stop: whether the thread runs (resumed, no stop collected).
    fn thread_running(&self, _tid: Tid) -> bool {
        false
    }
    /// Whether fork/vfork children are followed (the session enables
    /// this when the client negotiated fork-events).
    fn set_report_forks(&mut self, _on: bool) {}
    /// Whether `exec` is reported as [`crate::stop::StopKind::Exec`] (the
    /// client negotiated exec-events); otherwise it is followed silently.
    fn set_report_exec(&mut self, _on: bool) {}

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
    /// Non-stop mode: move thread `tid`, stopped at the stub's own
    /// breakpoint `addr` and seen running by the client, past it as `then`
    /// moves it, with every other running thread stopped for the single
    /// step, as gdbserver's `start_step_over` does, so that none runs
    /// through `addr` while its original byte is back. `Ok(false)`: this
    /// target does not (all-stop mode, where the other threads are stopped
    /// already); the caller lifts the breakpoint and steps the thread.
    fn pass_internal_breakpoint(
        &mut self,
        _tid: Tid,
        _addr: u64,
        _then: ResumeAction,
    ) -> TargetResult<bool> {
        Ok(false)
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
    /// Conditions (agent expressions, [`crate::agentexpr`]) of the
    /// client's software breakpoint at `addr`; the hit is reported only
    /// when one is true. Replaced by the next insert at `addr`.
    fn set_breakpoint_conditions(&mut self, _addr: u64, _conds: Vec<Vec<u8>>) -> TargetResult<()> {
        Err(TargetError::Unsupported("breakpoint conditions"))
    }
    /// Commands (agent expressions run at each hit, gdb's agent-style
    /// `dprintf`) of the client's software breakpoint at `addr`; a hit of
    /// a breakpoint with commands is not reported, as gdbserver does.
    /// Replaced by the next insert at `addr` (empty: none).
    fn set_breakpoint_commands(&mut self, _addr: u64, cmds: Vec<Vec<u8>>) -> TargetResult<()> {
        if cmds.is_empty() {
            return Ok(());
        }
        Err(TargetError::Unsupported("breakpoint commands"))
    }
    /// At a stop: take the stops other threads had when every thread was
    /// stopped (breakpoints, watchpoints, steps, signals), so they are
    /// reported with this stop and not on later resumes (lldb-server's
    /// model: every thread that stopped with a reason shows it at once).
    /// (tid, signal, kind). Targets without per-thread stops have none.
    fn take_other_stops(&mut self) -> Vec<(Tid, i32, crate::stop::StopKind)> {
        Vec::new()
    }
    /// After a [`crate::stop::StopKind::Fork`]/`VFork` stop: hand over the
    /// traced, stopped child as a target of its own.
    fn take_fork_child(&mut self, _child: Pid) -> Option<Box<dyn Target>> {
        None
    }
}
