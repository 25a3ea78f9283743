//! The GPU model and the backend contract.
//!
//! Agents (GPUs) own queues; queues run dispatches (one kernel launch with
//! grid and workgroup sizes); dispatches are executed by waves of 64 lanes.
//! A debugger sees waves as threads: each has an id that is never reused, a
//! state, and — when stopped — a stop reason, PC and EXEC mask. Registers
//! are described at run time per architecture ([`RegisterDesc`]); memory is
//! addressed per [`AddressSpace`]. Code objects are identified by a URI and a
//! load address. Everything the GPU reports arrives as a [`GpuEvent`].
//!
//! [`GpuBackend`] is the contract a debugger drives; it is object safe
//! (`Box<dyn GpuBackend>`). The production implementation is
//! [`crate::dbgapi::DbgApiBackend`] (over any amd-dbgapi library, real or the
//! simulated `libsimgpu_dbgapi.so`).

use std::fmt;

use thiserror::Error;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u64);
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A GPU agent (device).
    AgentId
);
id_type!(
    /// A hardware queue.
    QueueId
);
id_type!(
    /// One kernel launch.
    DispatchId
);
id_type!(
    /// A wave; never reused.
    WaveId
);
id_type!(
    /// A loaded code object.
    CodeObjectId
);
id_type!(
    /// A host breakpoint the GPU library asked for.
    BreakpointId
);
id_type!(
    /// An event returned by [`GpuBackend::next_event`].
    EventId
);

/// An instruction-set architecture and its debug facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Architecture {
    /// `gfx90a`, ...
    pub name: String,
    /// `EF_AMDGPU_MACH_*`.
    pub elf_machine: u32,
    /// The breakpoint instruction bytes (`s_trap 1`).
    pub breakpoint_instruction: Vec<u8>,
    /// How far past a breakpoint the reported PC is.
    pub breakpoint_pc_adjust: u64,
    /// Longest instruction in bytes.
    pub largest_instruction_size: u64,
}

/// An agent as listed by the backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentInfo {
    /// Handle.
    pub id: AgentId,
    /// Marketing or architecture name.
    pub name: String,
    /// Its architecture, or the library's reason it cannot debug this
    /// agent (e.g. an architecture it does not support): such an agent is
    /// listed, and has no queues or waves.
    pub architecture: Result<Architecture, String>,
}

impl fmt::Display for AgentInfo {
    /// `agent 1: AMD Instinct MI210 (gfx90a)` or, for an agent the library
    /// cannot debug, `agent 2: ... (not debuggable: REASON)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.architecture {
            Ok(a) => write!(f, "agent {}: {} ({})", self.id, self.name, a.name),
            Err(reason) => write!(
                f,
                "agent {}: {} (not debuggable, skipped: {reason})",
                self.id, self.name
            ),
        }
    }
}

/// A dispatch's geometry and kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchInfo {
    /// Handle.
    pub id: DispatchId,
    /// Queue it came from.
    pub queue: QueueId,
    /// Agent running it.
    pub agent: AgentId,
    /// Kernel descriptor address.
    pub kernel_descriptor: u64,
    /// First instruction of the kernel.
    pub kernel_entry: u64,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size in work-items.
    pub workgroup: [u16; 3],
}

/// Run state of a wave.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WaveState {
    /// Executing.
    Running,
    /// Executing one instruction, then it stops.
    SingleStep,
    /// Stopped (its stop event has been reported).
    Stopped,
}

/// Why a wave stopped (a bit set).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StopReasons(pub u32);

impl StopReasons {
    /// Only stopped because a stop was requested.
    pub const NONE: Self = Self(0);
    /// A breakpoint instruction (`s_trap 1`); PC is past it.
    pub const BREAKPOINT: Self = Self(1 << 0);
    /// A watchpoint.
    pub const WATCHPOINT: Self = Self(1 << 1);
    /// A single step completed.
    pub const SINGLE_STEP: Self = Self(1 << 2);
    /// `s_trap 3` (llvm.debugtrap); PC is past it.
    pub const DEBUG_TRAP: Self = Self(1 << 10);
    /// `s_trap 2` (llvm.trap); PC at it.
    pub const ASSERT_TRAP: Self = Self(1 << 11);
    /// Another `s_trap`; PC at it.
    pub const TRAP: Self = Self(1 << 12);
    /// A memory access faulted; PC at it.
    pub const MEMORY_VIOLATION: Self = Self(1 << 13);
    /// Unknown instruction; PC at it.
    pub const ILLEGAL_INSTRUCTION: Self = Self(1 << 15);
    /// An enabled floating-point input-denormal exception.
    pub const FP_INPUT_DENORMAL: Self = Self(1 << 3);
    /// An enabled floating-point divide-by-zero exception.
    pub const FP_DIVIDE_BY_0: Self = Self(1 << 4);
    /// An enabled floating-point overflow exception.
    pub const FP_OVERFLOW: Self = Self(1 << 5);
    /// An enabled floating-point underflow exception.
    pub const FP_UNDERFLOW: Self = Self(1 << 6);
    /// An enabled floating-point inexact exception.
    pub const FP_INEXACT: Self = Self(1 << 7);
    /// An enabled floating-point invalid-operation exception.
    pub const FP_INVALID_OPERATION: Self = Self(1 << 8);
    /// An enabled integer divide-by-zero exception.
    pub const INT_DIVIDE_BY_0: Self = Self(1 << 9);
    /// An address outside the virtual address range (aperture violation).
    pub const ADDRESS_ERROR: Self = Self(1 << 14);
    /// An unrecoverable ECC error.
    pub const ECC_ERROR: Self = Self(1 << 16);
    /// The wave caused a hardware fatal halt.
    pub const FATAL_HALT: Self = Self(1 << 17);

    /// Every reason amd-dbgapi 0.77 defines, most severe first, with the
    /// Linux signal a debugger reports for it and its description
    /// (the library's wave stop reasons type; its header documents each bit).
    pub const TABLE: &'static [(StopReasons, i32, &'static str)] = &[
        (Self::FATAL_HALT, libc::SIGABRT, "hardware fatal halt"),
        (Self::ECC_ERROR, libc::SIGBUS, "uncorrectable ECC error"),
        (Self::MEMORY_VIOLATION, libc::SIGSEGV, "memory violation"),
        (Self::ADDRESS_ERROR, libc::SIGSEGV, "address error"),
        (
            Self::ILLEGAL_INSTRUCTION,
            libc::SIGILL,
            "illegal instruction",
        ),
        (
            Self::INT_DIVIDE_BY_0,
            libc::SIGFPE,
            "integer divide by zero",
        ),
        (
            Self::FP_DIVIDE_BY_0,
            libc::SIGFPE,
            "floating-point divide by zero",
        ),
        (
            Self::FP_INVALID_OPERATION,
            libc::SIGFPE,
            "floating-point invalid operation",
        ),
        (Self::FP_OVERFLOW, libc::SIGFPE, "floating-point overflow"),
        (Self::FP_UNDERFLOW, libc::SIGFPE, "floating-point underflow"),
        (
            Self::FP_INEXACT,
            libc::SIGFPE,
            "floating-point inexact result",
        ),
        (
            Self::FP_INPUT_DENORMAL,
            libc::SIGFPE,
            "floating-point input denormal",
        ),
        (Self::ASSERT_TRAP, libc::SIGABRT, "assert trap (llvm.trap)"),
        (Self::TRAP, libc::SIGTRAP, "trap instruction"),
        (Self::WATCHPOINT, libc::SIGTRAP, "watchpoint"),
        (Self::BREAKPOINT, libc::SIGTRAP, "breakpoint"),
        (
            Self::DEBUG_TRAP,
            libc::SIGTRAP,
            "debug trap (llvm.debugtrap)",
        ),
        (Self::SINGLE_STEP, libc::SIGTRAP, "single step"),
    ];

    /// The signal to report: that of the most severe reason set
    /// ([`Self::TABLE`]); SIGTRAP for bits this table does not know; 0 when
    /// no reason is set (a requested stop).
    pub fn signal(self) -> i32 {
        if self.0 == 0 {
            return 0;
        }
        Self::TABLE
            .iter()
            .find(|(r, _, _)| self.contains(*r))
            .map_or(libc::SIGTRAP, |(_, sig, _)| *sig)
    }

    /// Every reason set, most severe first, as text (`integer divide by
    /// zero`, `memory violation, single step`); unknown bits in hex.
    pub fn description(self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut known = 0u32;
        for (r, _, text) in Self::TABLE {
            known |= r.0;
            if self.contains(*r) {
                parts.push((*text).to_string());
            }
        }
        if self.0 & !known != 0 {
            parts.push(format!("stop reasons {:#x}", self.0 & !known));
        }
        if parts.is_empty() {
            parts.push("stop requested".into());
        }
        parts.join(", ")
    }

    /// Whether all bits of `other` are set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for StopReasons {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// A wave as the debugger sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveInfo {
    /// Handle.
    pub id: WaveId,
    /// Run state.
    pub state: WaveState,
    /// Why it stopped (only when stopped).
    pub stop_reason: Option<StopReasons>,
    /// PC (only when stopped).
    pub pc: Option<u64>,
    /// EXEC (only when stopped).
    pub exec: Option<u64>,
    /// Its agent.
    pub agent: AgentId,
    /// Its queue.
    pub queue: QueueId,
    /// Its dispatch.
    pub dispatch: DispatchId,
    /// Workgroup coordinates.
    pub workgroup_coord: Option<[u32; 3]>,
    /// Index of the wave within its workgroup.
    pub wave_number_in_workgroup: Option<u32>,
    /// Lanes (64 for wave64).
    pub lane_count: u32,
}

/// How to resume a wave.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResumeMode {
    /// Run.
    Normal,
    /// Execute one instruction and stop with [`StopReasons::SINGLE_STEP`].
    SingleStep,
}

/// A wave's displaced step (amd-dbgapi's displaced stepping buffer
/// handle): from [`GpuBackend::displaced_step_start`] until
/// [`GpuBackend::displaced_step_complete`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DisplacedStep(pub u64);

/// An exception delivered to the GPU runtime when a wave is resumed (the
/// runtime then puts the queue in the error state and the dispatch fails).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WaveException {
    /// Abort (SIGABRT).
    Abort,
    /// Trap (SIGTRAP).
    Trap,
    /// Math error (SIGFPE).
    MathError,
    /// Illegal instruction (SIGILL).
    IllegalInstruction,
    /// Memory violation (SIGSEGV).
    MemoryViolation,
    /// Address error (SIGBUS).
    AddressError,
}

/// Address spaces of the AMDGPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    /// Global memory (the host process's memory on unified systems).
    Global,
    /// LDS of the wave's workgroup.
    Local,
    /// Scratch of one lane.
    PrivateLane,
    /// Scratch of the whole wave.
    PrivateWave,
    /// Generic (flat) addresses.
    Generic,
}

impl AddressSpace {
    /// The DWARF address-space number (LLVM AMDGPU mapping).
    pub fn dwarf(self) -> u64 {
        match self {
            Self::Global => 0,
            Self::Generic => 1,
            Self::Local => 3,
            Self::PrivateLane => 5,
            Self::PrivateWave => 6,
        }
    }
}

/// Register groups.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterClass {
    /// SGPRs and scalar specials.
    Scalar,
    /// VGPRs.
    Vector,
    /// PC, STATUS and other system registers.
    System,
}

/// One register of an architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterDesc {
    /// `s0`, `v0`, `pc`, ...
    pub name: String,
    /// Size in bytes.
    pub size: usize,
    /// C-like type (`uint32_t`, `int32_t[64]`, `void (*)()`).
    pub type_name: String,
    /// DWARF register number.
    pub dwarf: Option<u64>,
    /// Group.
    pub class: RegisterClass,
}

/// A loaded code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// Handle.
    pub id: CodeObjectId,
    /// `file://...` or `memory://<pid>#offset=...&size=...`.
    pub uri: String,
    /// Load bias (ELF vaddr + bias = address).
    pub load_address: i64,
}

/// Runtime state reported by [`GpuEvent::Runtime`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeState {
    /// The GPU runtime is up and debuggable.
    Loaded,
    /// The runtime went away.
    Unloaded,
    /// Up but cannot be debugged.
    LoadedRestriction,
}

/// What the GPU tells its debugger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuEvent {
    /// The GPU runtime came up or went away.
    Runtime(RuntimeState),
    /// A wave stopped.
    WaveStop {
        /// Which.
        wave: WaveId,
    },
    /// A stop or step request ended because the wave terminated.
    WaveCommandTerminated {
        /// Which (no longer valid).
        wave: WaveId,
    },
    /// Call [`GpuBackend::code_objects`] again.
    CodeObjectListUpdated,
    /// The host thread halted at this breakpoint may resume.
    BreakpointResume {
        /// Which.
        breakpoint: BreakpointId,
    },
    /// A queue went into the error state.
    QueueError {
        /// Which.
        queue: QueueId,
    },
}

/// What to do with a host thread that hit a library breakpoint.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BreakpointAction {
    /// Resume it now.
    Resume,
    /// Keep it halted until [`GpuEvent::BreakpointResume`].
    Halt,
}

/// Errors of the backend contract.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// The wave no longer exists.
    #[error("invalid wave {0}")]
    InvalidWave(WaveId),
    /// The wave must be stopped for this.
    #[error("wave {0} is not stopped")]
    WaveNotStopped(WaveId),
    /// The wave is already stopped.
    #[error("wave {0} is already stopped")]
    WaveStopped(WaveId),
    /// The wave cannot be resumed now.
    #[error("wave {0} is not resumable")]
    WaveNotResumable(WaveId),
    /// A memory access failed.
    #[error("memory access at {addr:#x} failed")]
    MemoryAccess {
        /// Where.
        addr: u64,
    },
    /// The backend does not support it.
    #[error("not supported: {0}")]
    NotSupported(&'static str),
    /// Every displaced stepping buffer suitable for the wave is in use
    /// (amd-dbgapi's `DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE`): one is
    /// released when an active displaced step completes or its wave
    /// ends, and the step can be started then.
    #[error("no displaced stepping buffer available for wave {0}")]
    DisplacedBufferUnavailable(WaveId),
    /// Anything the library reported, with its status text.
    #[error("{call}: {message} (status {status})")]
    Library {
        /// The failing call.
        call: &'static str,
        /// Numeric status.
        status: i32,
        /// Text.
        message: String,
    },
}

/// The debugger-facing contract of a GPU backend (object safe).
///
/// A backend is driven by one thread. Events are pulled with
/// [`next_event`](Self::next_event) when [`notifier_fd`](Self::notifier_fd)
/// is readable and each must be acknowledged with
/// [`event_processed`](Self::event_processed).
pub trait GpuBackend {
    /// A file descriptor that becomes readable when events may be pending.
    fn notifier_fd(&self) -> Option<i32>;
    /// Next pending event, if any.
    fn next_event(&mut self) -> Result<Option<(EventId, GpuEvent)>, GpuError>;
    /// Acknowledges an event returned by `next_event`.
    fn event_processed(&mut self, event: EventId) -> Result<(), GpuError>;
    /// Agents of the process.
    fn agents(&mut self) -> Result<Vec<AgentInfo>, GpuError>;
    /// Current waves.
    fn waves(&mut self) -> Result<Vec<WaveId>, GpuError>;
    /// The current waves if they changed since the last call of this or
    /// [`Self::waves`], `None` when they did not: a caller that keeps the
    /// last list is spared a copy and a comparison of every wave. A backend
    /// that cannot tell answers the list every time.
    fn waves_if_changed(&mut self) -> Result<Option<Vec<WaveId>>, GpuError> {
        self.waves().map(Some)
    }
    /// One wave.
    fn wave_info(&mut self, wave: WaveId) -> Result<WaveInfo, GpuError>;
    /// One wave whose WAVE_STOP event is being handled: the wave is known
    /// to be stopped (it stays stopped until resumed), so a backend can
    /// skip the state query; the default asks [`Self::wave_info`].
    fn stopped_wave_info(&mut self, wave: WaveId) -> Result<WaveInfo, GpuError> {
        self.wave_info(wave)
    }
    /// The stop reason of a wave whose WAVE_STOP event is being handled
    /// (one `STOP_REASON` query for amd-dbgapi): a stop-all of 10,000
    /// waves needs only this of each wave to report the stop; the rest of
    /// its info is asked for when a client wants it. The default asks
    /// [`Self::stopped_wave_info`].
    fn stopped_wave_reason(&mut self, wave: WaveId) -> Result<StopReasons, GpuError> {
        Ok(self
            .stopped_wave_info(wave)?
            .stop_reason
            .unwrap_or_default())
    }
    /// The PC of a stopped wave (one `PC` query for amd-dbgapi); the
    /// default asks [`Self::stopped_wave_info`].
    fn stopped_wave_pc(&mut self, wave: WaveId) -> Result<u64, GpuError> {
        self.stopped_wave_info(wave)?
            .pc
            .ok_or(GpuError::WaveNotStopped(wave))
    }
    /// One dispatch.
    fn dispatch_info(&mut self, dispatch: DispatchId) -> Result<DispatchInfo, GpuError>;
    /// Loaded code objects.
    fn code_objects(&mut self) -> Result<Vec<CodeObject>, GpuError>;
    /// Registers of a wave (index = position in this list).
    fn registers(&mut self, wave: WaveId) -> Result<Vec<RegisterDesc>, GpuError>;
    /// A key for the wave's register list: waves with equal keys have
    /// equal [`Self::registers`] (so a debugger's per-wave register maps
    /// can be shared); `None` when the backend cannot tell.
    fn register_list_key(&mut self, wave: WaveId) -> Result<Option<u64>, GpuError> {
        let _ = wave;
        Ok(None)
    }
    /// The library's last warning, if it gives one (the reason behind a
    /// runtime it cannot debug, `RuntimeState::LoadedRestriction`).
    fn last_warning(&self) -> Option<String> {
        None
    }
    /// Every register of the agents' architecture, in the library's order
    /// (the register table a debugger describes to its client; a wave has
    /// a subset of them, [`Self::registers`]).
    fn architecture_registers(&mut self) -> Result<Vec<RegisterDesc>, GpuError> {
        Err(GpuError::NotSupported("architecture register list"))
    }
    /// Every distinct architecture of the agents the backend can debug, in
    /// agent order, each with its register list in the library's order
    /// (a debugger serving one register table builds their union; a wave
    /// has a subset of its own architecture's registers).
    fn agent_architecture_registers(
        &mut self,
    ) -> Result<Vec<(Architecture, Vec<RegisterDesc>)>, GpuError> {
        Err(GpuError::NotSupported("per-agent register lists"))
    }
    /// Reads register `index` of a stopped wave into `buf` (its full size).
    fn read_register(&mut self, wave: WaveId, index: usize, buf: &mut [u8])
        -> Result<(), GpuError>;
    /// Writes register `index` of a stopped wave.
    fn write_register(&mut self, wave: WaveId, index: usize, data: &[u8]) -> Result<(), GpuError>;
    /// Reads memory; returns the bytes read.
    fn read_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<usize, GpuError>;
    /// Reads memory as one lane of `wave` sees it (what the private_lane
    /// address space needs); returns the bytes read.
    fn read_lane_memory(
        &mut self,
        space: AddressSpace,
        wave: WaveId,
        lane: u32,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<usize, GpuError>;
    /// Writes memory; returns the bytes written.
    fn write_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        data: &[u8],
    ) -> Result<usize, GpuError>;
    /// Asks a wave to stop (completes with [`GpuEvent::WaveStop`]).
    fn stop_wave(&mut self, wave: WaveId) -> Result<(), GpuError>;
    /// Resumes a stopped wave.
    fn resume_wave(&mut self, wave: WaveId, mode: ResumeMode) -> Result<(), GpuError>;
    /// Resumes a stopped wave delivering `exception` to the runtime (the
    /// queue goes to the error state; a [`GpuEvent::QueueError`] follows).
    fn resume_wave_with_exception(
        &mut self,
        wave: WaveId,
        exception: WaveException,
    ) -> Result<(), GpuError>;
    /// Moves a stopped wave whose pc is on an inserted breakpoint onto an
    /// out-of-line copy of the instruction the breakpoint replaced (`saved`:
    /// the replaced bytes), leaving memory, the breakpoint included, as it
    /// is. The wave must then be resumed single-step only, and completed
    /// ([`Self::displaced_step_complete`]) once that step's stop is in (or
    /// the wave stopped otherwise). [`GpuError::NotSupported`] where the
    /// backend cannot: the caller steps over some other way;
    /// [`GpuError::DisplacedBufferUnavailable`] when every buffer is in
    /// use now: the caller starts the step once an active one completes.
    /// Any error changes nothing.
    fn displaced_step_start(
        &mut self,
        _wave: WaveId,
        _saved: &[u8],
    ) -> Result<DisplacedStep, GpuError> {
        Err(GpuError::NotSupported("displaced stepping"))
    }
    /// Ends a stopped wave's displaced step: its pc is past the instruction
    /// if the step executed it, back on the breakpoint if not.
    fn displaced_step_complete(
        &mut self,
        _wave: WaveId,
        _step: DisplacedStep,
    ) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("displaced stepping"))
    }
    /// Stops or restarts the creation of new waves.
    fn set_wave_creation(&mut self, stopped: bool) -> Result<(), GpuError>;
    /// Reports that a host thread hit breakpoint `bp` the library asked for.
    fn report_breakpoint_hit(
        &mut self,
        bp: BreakpointId,
        host_thread: u64,
    ) -> Result<BreakpointAction, GpuError>;
}

/// Whoever owns the host (CPU) process: the GPU library asks it for host
/// breakpoints and for the process id.
pub trait HostProcess: Send {
    /// The OS process id of the inferior.
    fn os_pid(&self) -> i32;
    /// Plants a host breakpoint at `addr` and remembers it as `id`.
    fn insert_breakpoint(&mut self, addr: u64, id: BreakpointId) -> Result<(), GpuError>;
    /// Removes breakpoint `id`.
    fn remove_breakpoint(&mut self, id: BreakpointId) -> Result<(), GpuError>;
}
