//! The GPU controller: owns the GPU library and backend, the wave ↔
//! thread-id table, the stop queue and the GPU-side breakpoints. The GPU
//! *connection* state (offered, connected, …) is the multiplexer's
//! ([`crate::mux::state`]); this module reports the runtime's events to it
//! through [`GpuNews`]. Nothing here runs on another thread: the library's
//! own device threads hand events over through its notifier fd.

mod rebind;
mod wave_tids;

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;

use gpu_target::library::GpuLibrary;
use gpu_target::model::AddressSpace;
use gpu_target::model::AgentInfo;
use gpu_target::model::Architecture;
use gpu_target::model::BreakpointAction;
use gpu_target::model::BreakpointId;
use gpu_target::model::CodeObject;
use gpu_target::model::DisplacedStep;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::GpuEvent;
use gpu_target::model::ResumeMode;
use gpu_target::model::RuntimeState;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveId;
use gpu_target::model::WaveInfo;
use gpu_target::model::WaveState;

use super::host;
use super::host::HostBridge;
use super::host::HostRequest;
use crate::target::RegisterInfo;
use crate::target::Tid;

/// How long an interrupt waits for the waves it stopped to report their
/// stops before the GPU session reports the stop anyway (default; see
/// [`STOP_TIMEOUT_ENV`]).
pub const DEFAULT_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Environment variable overriding [`DEFAULT_STOP_TIMEOUT`] (milliseconds).
pub const STOP_TIMEOUT_ENV: &str = "GDBMUX_GPU_STOP_TIMEOUT_MS";

/// A one-shot monotonic timer the mio loop watches (a timerfd): it bounds
/// the wait for wave stops, so a stalled device cannot hang a session.
struct StopTimer {
    fd: std::os::fd::OwnedFd,
    /// Not yet handed to the loop for registration.
    unregistered: bool,
}

impl StopTimer {
    fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd as _;
        // SAFETY: plain syscall with constant flags; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(StopTimer {
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
            unregistered: true,
        })
    }

    /// Arm for `after` (zero disarms).
    fn set(&self, after: std::time::Duration) {
        use std::os::fd::AsRawFd as _;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd owned by us; `spec` outlives the call; no old
        // value is asked for.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r != 0 {
            tracing::warn!(target: "dbgapi", "timerfd_settime: {}", std::io::Error::last_os_error());
        }
    }

    /// Whether it expired since the last call (consumes the expiry).
    fn expired(&self) -> bool {
        let mut b = [0u8; 8];
        matches!(
            nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&self.fd), &mut b),
            Ok(8)
        )
    }
}

/// Most pending GPU breakpoints (`monitor gpu break KERNEL` before a code
/// object defines KERNEL) kept at once.
pub const MAX_PENDING_BREAKPOINTS: usize = 64;

/// The shadow thread shown when no wave exists (lldb needs a thread in
/// every stop reply; research/lldb-accelerator.md §4.5).
pub const SHADOW_TID: Tid = 1;

/// What draining the notifier produced.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GpuNews {
    /// A RUNTIME loaded event (starts a new lifetime).
    pub runtime_loaded: bool,
    /// A RUNTIME unloaded event.
    pub runtime_unloaded: bool,
    /// Whether the runtime is up after the last RUNTIME event of this
    /// batch (`None`: no RUNTIME event).
    pub runtime_up: Option<bool>,
    /// Waves that reported a stop.
    pub wave_stops: Vec<WaveId>,
    /// Host breakpoints the library released.
    pub resumed: Vec<BreakpointId>,
    /// Events handled.
    pub events: u64,
    /// Messages for the CPU client's console (runtime states the user must
    /// know about: a runtime the library cannot debug, an unload).
    pub console: Vec<String>,
}

/// A wave stop, ready to report: a small fixed record (40 bytes). The
/// wave's full info at the stop has one keeper, the controller's stop
/// infos ([`GpuController::wave_info`] answers from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveStop {
    /// The wave.
    pub wave: WaveId,
    /// Its thread id.
    pub tid: Tid,
    /// Why it stopped.
    pub reasons: StopReasons,
    /// Its PC at the stop (already rewound past a breakpoint).
    pub pc: Option<u64>,
}

/// A wave single-stepping off a GPU breakpoint.
#[derive(Clone, Copy, Debug)]
struct StepOver {
    /// The breakpoint's address.
    addr: u64,
    /// Run on once past it (`true`), or report the step (`false`).
    run_on: bool,
    /// How: out of line through the library's displaced stepping (the
    /// trap stays in memory), or `None` with the trap lifted for it (the
    /// fallback where the library has no displaced stepping: the trap goes
    /// back when the last wave stepping off its address has stepped).
    displaced: Option<DisplacedStep>,
}

/// A resume of a wave off a breakpoint, waiting for a displaced stepping
/// buffer (`GpuController::step_queue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StepRequest {
    wave: WaveId,
    /// Report the step (`true`) or run on past the breakpoint.
    step: bool,
}

/// Step-overs waiting for a displaced stepping buffer, oldest first, at
/// most one per wave (gdb's step-over queue). A wave is only ever in it
/// while it lives and is stopped on a breakpoint, so it is bounded by the
/// number of live waves. Membership is a set, as in [`StopQueue`]: the
/// resume of 10,000 waves, most of which are not queued, probes the set
/// instead of scanning the queue once per wave.
#[derive(Default)]
struct StepQueue {
    q: VecDeque<StepRequest>,
    queued: gpu_target::idhash::IdSet<WaveId>,
}

impl StepQueue {
    /// Queues `r` last (a wave already queued is first taken out).
    fn push_back(&mut self, r: StepRequest) {
        self.remove(r.wave);
        self.queued.insert(r.wave);
        self.q.push_back(r);
    }

    /// Puts `r` back first (it was just popped).
    fn push_front(&mut self, r: StepRequest) {
        self.remove(r.wave);
        self.queued.insert(r.wave);
        self.q.push_front(r);
    }

    fn pop_front(&mut self) -> Option<StepRequest> {
        let r = self.q.pop_front()?;
        self.queued.remove(&r.wave);
        Some(r)
    }

    /// Takes the wave out, if queued.
    fn remove(&mut self, wave: WaveId) {
        if self.q.is_empty() || !self.queued.remove(&wave) {
            return;
        }
        self.q.retain(|r| r.wave != wave);
    }

    /// Keeps the waves `keep` accepts.
    fn retain(&mut self, mut keep: impl FnMut(WaveId) -> bool) {
        let queued = &mut self.queued;
        self.q.retain(|r| {
            let k = keep(r.wave);
            if !k {
                queued.remove(&r.wave);
            }
            k
        });
    }

    fn clear(&mut self) {
        self.q.clear();
        self.queued.clear();
    }

    fn len(&self) -> usize {
        self.q.len()
    }
}

/// How [`GpuController::start_step_over`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepStart {
    /// The wave is single-stepping off the breakpoint (or was resumed:
    /// no breakpoint under its pc).
    Started,
    /// Every displaced stepping buffer is in use: nothing changed.
    NoBuffer,
}

/// Events handled per [`GpuController::process_events`] call when the loop
/// can be woken again (see there): bounds the work of one call under an
/// event storm, and what [`GpuNews`] collects.
pub const EVENTS_PER_PASS: u64 = 256;

/// Counters of the events the controller handled, by kind (for `monitor
/// gpu` and the event-storm test).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GpuEventCounts {
    /// All events (= [`GpuController::events_total`]).
    pub total: u64,
    /// WAVE_STOP.
    pub wave_stops: u64,
    /// WAVE_COMMAND_TERMINATED.
    pub wave_terminations: u64,
    /// CODE_OBJECT_LIST_UPDATED.
    pub code_object_updates: u64,
    /// RUNTIME (any state).
    pub runtime: u64,
    /// BREAKPOINT_RESUME.
    pub breakpoint_resumes: u64,
    /// Hits of the library's host breakpoints (the runtime's loader hook)
    /// reported to it: not events, the calls that may lead to them.
    pub host_hits: u64,
    /// QUEUE_ERROR.
    pub queue_errors: u64,
    /// Queued stops replaced by a newer stop of the same wave.
    pub stops_replaced: u64,
    /// Queued stops dropped because their wave terminated.
    pub stops_dropped: u64,
    /// Most stops queued at once.
    pub max_queued_stops: usize,
    /// `process_events` calls that stopped at [`EVENTS_PER_PASS`] and woke
    /// the loop to go on.
    pub passes_cut: u64,
}

/// Wave stops waiting to be reported: at most one per wave.
///
/// A wave cannot stop twice without being resumed in between, so a second
/// stop of a queued wave means the first is obsolete (the wave was resumed
/// by a path that did not go through [`GpuController::resume_wave`]): it is
/// replaced, and the queue holds at most one entry per live wave. Stops of
/// a wave that terminated are dropped. Memory is therefore bounded by the
/// number of live waves, whatever the event rate.
#[derive(Default)]
struct StopQueue {
    q: VecDeque<WaveStop>,
    queued: gpu_target::idhash::IdSet<WaveId>,
}

impl StopQueue {
    /// Queues `s`; `true` when it replaced an older stop of its wave.
    fn push(&mut self, s: WaveStop) -> bool {
        let replaced = !self.queued.insert(s.wave);
        if replaced {
            self.q.retain(|x| x.wave != s.wave);
        }
        self.q.push_back(s);
        replaced
    }

    fn pop(&mut self) -> Option<WaveStop> {
        let s = self.q.pop_front()?;
        self.queued.remove(&s.wave);
        Some(s)
    }

    /// Drops the wave's stop; `true` when there was one.
    fn remove(&mut self, wave: WaveId) -> bool {
        // The resume of 10,000 waves after a stop-all whose stops were all
        // reported probes nothing.
        if self.q.is_empty() || !self.queued.remove(&wave) {
            return false;
        }
        self.q.retain(|x| x.wave != wave);
        true
    }

    fn clear(&mut self) {
        self.q.clear();
        self.queued.clear();
    }

    fn len(&self) -> usize {
        self.q.len()
    }

    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

/// The controller.
pub struct GpuController {
    library: GpuLibrary,
    backend: Option<Box<dyn GpuBackend>>,
    requests: host::RequestQueue,
    cpu_pid: Option<u32>,
    host_bps: BTreeMap<u64, BreakpointId>,
    lifetime: u64,
    waves: wave_tids::WaveTids,
    /// The library's wave list as `try_waves` last saw it.
    last_wave_list: Vec<WaveId>,
    next_tid: Tid,
    stops: StopQueue,
    /// WAVE_COMMAND_TERMINATED events since [`GpuController::take_terminations`]:
    /// a stop request is asynchronous (AMD's wave stop returns at
    /// once), and a wave that ends before it stops reports its request
    /// terminated instead of a stop.
    terminations: usize,
    arch: Option<Architecture>,
    regs: Vec<RegisterInfo>,
    /// Register number → its row in `regs` (the table is grouped by
    /// feature, so a row's index is not its number).
    reg_rows: Vec<Option<usize>>,
    /// The served table as the union of the agents' architectures, and
    /// each architecture's names in it (see [`super::regs::RegisterUnion`]).
    reg_union: super::regs::RegisterUnion,
    /// The architectures the table covers, in agent order.
    arch_names: Vec<String>,
    /// The GPU session's exit held for the lldb helper (see
    /// [`GpuController::arm_exit_hold`]).
    exit_hold: ExitHold,
    /// All-stop across lldb's targets for the helper (`super::allstop`).
    all_stop: super::allstop::AllStop,
    code_objects: Vec<CodeObject>,
    gpu_bps: crate::swbreak::Patches,
    /// Waves single-stepping off a GPU breakpoint (see
    /// [`GpuController::resume_wave_over`]), until that step's stop or the
    /// wave's end.
    stepping_over: BTreeMap<WaveId, StepOver>,
    /// Waves past a breakpoint that run on once their stop event is
    /// processed (at most one entry per wave stepping over).
    run_on: Vec<WaveId>,
    /// Waves waiting for a displaced stepping buffer, oldest first (gdb's
    /// step-over queue): each stays stopped on its breakpoint until an
    /// active displaced step completes and releases one
    /// ([`GpuController::resume_wave_over`]). A wave is in it at most
    /// once, and only while it lives: bounded by the number of waves.
    step_queue: StepQueue,
    /// A displaced step ended since the queue was last tried.
    buffer_freed: bool,
    /// Kernel names of GPU breakpoints no loaded code object defines yet
    /// (`monitor gpu break KERNEL` before the code object loads): resolved
    /// and inserted when a code-object list update defines them. Bounded
    /// by [`MAX_PENDING_BREAKPOINTS`].
    pending_bps: Vec<String>,
    /// Breakpoints set by name that are inserted: name → address (see
    /// `rebind`: they go back to pending when their code object unloads).
    named_bps: BTreeMap<String, u64>,
    /// Inserted breakpoints whose address was in a readable code object.
    located_bps: BTreeSet<u64>,
    /// Breakpoints whose code object unloaded, inserted again when one
    /// covers the address (bounded by [`MAX_PENDING_BREAKPOINTS`]).
    dormant_bps: BTreeSet<u64>,
    /// Kernel symbols of the code objects (for the pending breakpoints).
    symbolizer: super::symbols::Symbolizer,
    notifier: Option<RawFd>,
    /// A second write end of the notifier pipe (see `process_events`).
    self_wake: Option<std::fs::File>,
    /// Events whose `event_processed` waits until the loop carried out the
    /// host-breakpoint requests they caused.
    deferred_acks: Vec<gpu_target::model::EventId>,
    counts: GpuEventCounts,
    /// Per wave: architecture register number → index in the wave's own
    /// register list (a wave only has the registers its kernel allocated).
    wave_regs: gpu_target::idhash::IdMap<WaveId, std::rc::Rc<Vec<Option<usize>>>>,
    /// The register maps themselves, one per distinct register list (the
    /// waves of one kernel share theirs): `wave_regs` holds pointers.
    reg_maps: wave_tids::RegMaps,
    /// Each stopped wave's info as its WAVE_STOP left it (`capture_stop`,
    /// the pc already rewound), until the wave is resumed, a register of it
    /// is written or it goes: a stopped wave's info does not change
    /// meanwhile, and a stop of 10,000 waves asks for each wave's pc, exec
    /// and name again (the stop record, `jThreadsInfo`). At the stop only
    /// the reason is asked for (and the pc of a stop that is more than a
    /// requested one): the rest on first need ([`KeptStop`]). At most one
    /// entry per live wave (dead waves' go with the wave list, as
    /// `wave_regs`').
    stop_infos: gpu_target::idhash::IdMap<WaveId, KeptStop>,
    stop_timer: Option<StopTimer>,
    stop_timeout: std::time::Duration,
    stop_timed_out: bool,
    /// The last RUNTIME event's state (and the library's reason for a
    /// restricted one).
    runtime: Option<(RuntimeState, Option<String>)>,
}

/// What the controller keeps of a stopped wave (`stop_infos`).
///
/// A stop-all of 10,000 waves reports the interrupt once every wave's stop
/// is in; for that it needs each wave's stop reason, nothing else (the
/// interrupt's stop reply of 1024 waves or more lists no pcs). Asking the
/// library for the pc and exec of every wave at its WAVE_STOP as well was
/// two of the seven library calls per wave of a stop-all; they are asked
/// for when a client wants them (`jThreadsInfo`, a register read), once,
/// and kept from then on as before. amd-dbgapi answers a stopped wave's
/// pc and exec until it is resumed, so asking later gives the same answer.
#[derive(Debug, Clone)]
enum KeptStop {
    /// The stop's reason and, for a stop other than a requested one, its pc
    /// (rewound onto a breakpoint); the rest is asked for on first need.
    Reason {
        /// Why it stopped.
        reasons: StopReasons,
        /// Its pc, where it was asked for at the stop.
        pc: Option<u64>,
    },
    /// The wave's whole info at the stop, boxed: the map's entries stay
    /// 32 bytes instead of about 140, so the 10,000 entries of a stop-all
    /// take a fourth of the cache lines (an insert at each WAVE_STOP and
    /// a removal at each resume touch a random one each).
    Info(Box<WaveInfo>),
}

// A map entry (key and value) of `stop_infos` fits half a cache line.
const _: () = assert!(std::mem::size_of::<(WaveId, KeptStop)>() <= 32);

/// The GPU session's exit held for the lldb helper.
#[derive(Debug, Default)]
struct ExitHold {
    /// The client has the helper, which interrupts the GPU process once it
    /// has the CPU's exit.
    helper: bool,
    /// Where the GPU session is.
    gpu: GpuRun,
    /// A wave stop was reported since the CPU's last resume.
    wave_stop_seen: bool,
    /// The next end of the CPU process is held.
    armed: bool,
    /// The GPU session's end, held until its client interrupts.
    held: Option<crate::stop::StopEvent>,
    /// An end was held.
    engaged: bool,
}

/// Where the GPU session is, for [`ExitHold`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum GpuRun {
    /// Not connected, or stopped other than at a wave.
    #[default]
    Other,
    /// Stopped at a wave's stop.
    AtWaveStop,
    /// Running.
    Running,
}

/// What can go wrong on the GPU side, typed. Shown to users as the reason
/// of an `E` reply ([`crate::target::TargetError`] through `From`) or as
/// monitor text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuFault {
    /// The library could not be loaded, attached or described.
    #[error("GPU library: {0}")]
    Library(String),
    /// No CPU process is attached to the library.
    #[error("the GPU library is not attached to a process")]
    NotAttached,
    /// The backend refused or failed.
    #[error("{0}")]
    Backend(#[from] GpuError),
    /// The register does not exist in the table.
    #[error("no such GPU register {0}")]
    NoSuchRegister(usize),
    /// The register exists but is not allocated in this wave.
    #[error("register {regnum} is not allocated in wave {wave}")]
    NotAllocated {
        /// Register number.
        regnum: usize,
        /// Wave handle.
        wave: u64,
    },
    /// The agent's architecture is not known yet.
    #[error("GPU architecture unknown")]
    ArchitectureUnknown,
    /// Code at a breakpoint address could not be read.
    #[error("cannot read GPU code at {0:#x}")]
    CodeUnreadable(u64),
    /// The breakpoint instruction could not be written.
    #[error("cannot write a breakpoint at {0:#x}")]
    BreakpointWrite(u64),
    /// Too many pending breakpoints.
    #[error("too many pending GPU breakpoints (at most {0})")]
    TooManyPending(usize),
}

impl From<GpuFault> for crate::target::TargetError {
    fn from(e: GpuFault) -> Self {
        use crate::target::TargetError;
        match e {
            GpuFault::Backend(GpuError::MemoryAccess { addr }) => TargetError::Errno {
                what: format!("GPU memory access at {addr:#x}"),
                errno: nix::errno::Errno::EFAULT,
            },
            GpuFault::CodeUnreadable(addr) | GpuFault::BreakpointWrite(addr) => {
                TargetError::Errno {
                    what: format!("GPU code at {addr:#x}"),
                    errno: nix::errno::Errno::EFAULT,
                }
            }
            GpuFault::Backend(GpuError::WaveNotStopped(_)) => TargetError::Running,
            GpuFault::Backend(GpuError::NotSupported(what)) => TargetError::Unsupported(what),
            GpuFault::NoSuchRegister(n) => TargetError::NoSuchRegister(n as u32),
            other => TargetError::Invalid(other.to_string()),
        }
    }
}

/// Result of a GPU operation.
pub type GpuResult<T> = Result<T, GpuFault>;

/// Register number → row of a register table grouped by feature
/// (`regs::table`: a register's row is not its number): one lookup per
/// register read instead of a scan of the table's rows.
pub(crate) fn rows_by_regnum(table: &[RegisterInfo]) -> Vec<Option<usize>> {
    let len = table
        .iter()
        .map(|r| r.regnum as usize + 1)
        .max()
        .unwrap_or(0);
    let mut rows = vec![None; len];
    for (i, r) in table.iter().enumerate() {
        rows[r.regnum as usize] = Some(i);
    }
    rows
}

fn gerr(e: GpuError) -> GpuFault {
    GpuFault::Backend(e)
}

impl GpuController {
    /// Load the amd-dbgapi library (`path`, or `$GDBMUX_DBGAPI`, or the
    /// default soname) and initialize it.
    pub fn load(path: Option<&Path>) -> GpuResult<Self> {
        let library = GpuLibrary::load(path).map_err(GpuFault::Library)?;
        tracing::info!(target: "dbgapi", library = %library.describe(), "GPU library initialized");
        Ok(GpuController {
            library,
            backend: None,
            requests: Arc::new(Mutex::new(Vec::new())),
            cpu_pid: None,
            host_bps: BTreeMap::new(),
            lifetime: 0,
            waves: Default::default(),
            last_wave_list: Vec::new(),
            next_tid: SHADOW_TID + 1,
            stops: StopQueue::default(),
            terminations: 0,
            arch: None,
            regs: Vec::new(),
            reg_rows: Vec::new(),
            reg_union: Default::default(),
            arch_names: Vec::new(),
            exit_hold: ExitHold::default(),
            all_stop: Default::default(),
            code_objects: Vec::new(),
            gpu_bps: Default::default(),
            stepping_over: BTreeMap::new(),
            run_on: Vec::new(),
            step_queue: StepQueue::default(),
            buffer_freed: false,
            pending_bps: Vec::new(),
            named_bps: BTreeMap::new(),
            located_bps: BTreeSet::new(),
            dormant_bps: BTreeSet::new(),
            symbolizer: Default::default(),
            notifier: None,
            self_wake: None,
            deferred_acks: Vec::new(),
            counts: GpuEventCounts::default(),
            wave_regs: Default::default(),
            reg_maps: Default::default(),
            stop_infos: Default::default(),
            runtime: None,
            stop_timer: StopTimer::new()
                .map_err(|e| tracing::warn!(target: "dbgapi", "no stop timer (interrupts wait unbounded): {e}"))
                .ok(),
            stop_timeout: std::env::var(STOP_TIMEOUT_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis)
                .unwrap_or(DEFAULT_STOP_TIMEOUT),
            stop_timed_out: false,
        })
    }

    /// The stop timer's fd, once, for the loop to watch (its expiry wakes
    /// the loop like the notifier does).
    pub fn take_new_timer_fd(&mut self) -> Option<RawFd> {
        let t = self.stop_timer.as_mut().filter(|t| t.unregistered)?;
        t.unregistered = false;
        Some(std::os::fd::AsRawFd::as_raw_fd(&t.fd))
    }

    /// How long an interrupt waits for wave stops.
    pub fn set_stop_timeout(&mut self, d: std::time::Duration) {
        self.stop_timeout = d;
    }

    /// The stop timeout in force.
    pub fn stop_timeout(&self) -> std::time::Duration {
        self.stop_timeout
    }

    /// Start bounding the wait for wave stops.
    pub fn arm_stop_timer(&mut self) {
        self.stop_timed_out = false;
        if let Some(t) = &self.stop_timer {
            t.set(self.stop_timeout.max(std::time::Duration::from_millis(1)));
        }
    }

    /// The wait for wave stops ended.
    pub fn disarm_stop_timer(&mut self) {
        self.stop_timed_out = false;
        if let Some(t) = &self.stop_timer {
            t.set(std::time::Duration::ZERO);
        }
    }

    /// Whether the stop timer expired (consumed).
    pub fn take_stop_timeout(&mut self) -> bool {
        if let Some(t) = &self.stop_timer {
            if t.expired() {
                self.stop_timed_out = true;
            }
        }
        std::mem::take(&mut self.stop_timed_out)
    }

    /// Runtime lifetime counter (1 for the first runtime load).
    pub fn lifetime(&self) -> u64 {
        self.lifetime
    }

    /// The GPU runtime's state as the library last reported it.
    pub fn runtime_text(&self) -> String {
        match &self.runtime {
            None => "GPU runtime: not seen yet (the program has not started its GPU runtime)".into(),
            Some((RuntimeState::Loaded, _)) => "GPU runtime: loaded (LOADED_SUCCESS)".into(),
            Some((RuntimeState::Unloaded, _)) => {
                "GPU runtime: unloaded (UNLOADED); its waves are gone".into()
            }
            Some((RuntimeState::LoadedRestriction, why)) => format!(
                "GPU runtime: loaded but this amd-dbgapi cannot debug it (LOADED_ERROR_RESTRICTION{}); \
                 GPU debugging is off for this runtime, the CPU is debugged as usual. \
                 A runtime (ROCr) newer or older than the library supports causes this: \
                 use the amd-dbgapi of the same ROCm release (`gdbmux doctor` shows the library)",
                why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
            ),
        }
    }

    /// Library description.
    pub fn library(&self) -> String {
        self.library.describe()
    }

    /// Attach to the CPU process; returns the notifier fd to watch.
    pub fn attach(&mut self, pid: u32) -> GpuResult<Option<RawFd>> {
        let bridge = HostBridge::new(pid, self.requests.clone());
        let backend = self.library.attach(Box::new(bridge))?;
        let fd = backend.notifier_fd();
        self.backend = Some(backend);
        self.cpu_pid = Some(pid);
        self.notifier = fd;
        // A write end of the same pipe, to wake the loop ourselves (Linux
        // reopens a pipe through /proc with the requested direction).
        self.self_wake = fd.and_then(|fd| {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(format!("/proc/self/fd/{fd}"))
                .map_err(|e| tracing::warn!(target: "dbgapi", "no self-wake for the notifier: {e}"))
                .ok()
        });
        Ok(fd)
    }

    /// The CPU process id.
    pub fn cpu_pid(&self) -> Option<u32> {
        self.cpu_pid
    }

    /// Breakpoint requests from the library, to carry out now.
    pub fn take_host_requests(&mut self) -> Vec<(HostRequest, Option<u64>)> {
        host::drain(&self.requests)
            .into_iter()
            .map(|r| match r {
                HostRequest::Insert { addr, id } => {
                    self.host_bps.insert(addr, id);
                    (r, Some(addr))
                }
                HostRequest::Remove { id } => {
                    let addr = self
                        .host_bps
                        .iter()
                        .find(|(_, v)| **v == id)
                        .map(|(a, _)| *a);
                    if let Some(a) = addr {
                        self.host_bps.remove(&a);
                    }
                    (r, addr)
                }
            })
            .collect()
    }

    fn host_requests_pending(&self) -> bool {
        match self.requests.lock() {
            Ok(v) => !v.is_empty(),
            Err(p) => !p.into_inner().is_empty(),
        }
    }

    /// Addresses of the host breakpoints the library asked for and that
    /// are planted (the runtime's `r_brk`, the dynamic linker's), ascending.
    pub fn host_breakpoint_addresses(&self) -> Vec<u64> {
        self.host_bps.keys().copied().collect()
    }

    /// The library's breakpoint at `addr`, if any.
    pub fn host_breakpoint(&self, addr: u64) -> Option<BreakpointId> {
        self.host_bps.get(&addr).copied()
    }

    fn backend(&mut self) -> GpuResult<&mut Box<dyn GpuBackend>> {
        self.backend.as_mut().ok_or(GpuFault::NotAttached)
    }

    /// A host thread hit the library's breakpoint.
    pub fn report_host_hit(&mut self, id: BreakpointId, tid: Tid) -> GpuResult<BreakpointAction> {
        self.counts.host_hits += 1;
        let r = self.backend()?.report_breakpoint_hit(id, tid).map_err(gerr);
        tracing::debug!(target: "dbgapi", id = id.0, ?r, "reported host breakpoint hit");
        r
    }

    /// Drain the notifier and the pending events: all of them, or at most
    /// [`EVENTS_PER_PASS`] when the loop can be woken again. In that case
    /// the call writes the notifier itself and returns, so the loop serves
    /// its clients between passes (a storm of GPU events must not starve a
    /// client's packets) and `GpuNews` stays small.
    pub fn process_events(&mut self) -> GpuNews {
        let mut news = GpuNews::default();
        if self.stop_timer.as_ref().is_some_and(StopTimer::expired) {
            self.stop_timed_out = true;
        }
        if let Some(fd) = self.notifier {
            let mut buf = [0u8; 256];
            // The pipe's content has no meaning; drain it to re-arm.
            while matches!(nix::unistd::read(fd, &mut buf), Ok(n) if n > 0) {}
        }
        // The caller carried out the host requests of the last round.
        for id in std::mem::take(&mut self.deferred_acks) {
            if let Some(b) = self.backend.as_mut() {
                if let Err(e) = b.event_processed(id) {
                    tracing::warn!(target: "dbgapi", "event_processed: {e}");
                }
            }
        }
        self.resume_run_on();
        loop {
            if news.events >= EVENTS_PER_PASS && self.self_wake.is_some() {
                // More may be pending: come back after the loop's other work.
                self.counts.passes_cut += 1;
                self.wake_self();
                break;
            }
            let ev = match self.backend.as_mut().map(|b| b.next_event()) {
                Some(Ok(Some(ev))) => ev,
                Some(Ok(None)) | None => break,
                Some(Err(e)) => {
                    tracing::warn!(target: "dbgapi", "next_event: {e}");
                    break;
                }
            };
            let (id, event) = ev;
            news.events += 1;
            self.counts.total += 1;
            // The library asks for host breakpoints at runtime and
            // code-object events, never at a wave's: a stop-all's 10,000
            // WAVE_STOPs do not look at the request queue (a lock each).
            let wave_event = matches!(
                event,
                GpuEvent::WaveStop { .. } | GpuEvent::WaveCommandTerminated { .. }
            );
            self.handle_event(event, &mut news);
            // Fix (muxtests): the library's host-breakpoint requests are
            // queued and carried out by the session after this returns. Acking
            // the event that caused them (RUNTIME loaded) at once let the
            // runtime run into its hook before the breakpoint was planted
            // (gdb flow: code-object updates lost in ~half the runs). Hold the
            // ack, wake the loop, and ack at the start of the next round.
            if !wave_event && self.self_wake.is_some() && self.host_requests_pending() {
                self.deferred_acks.push(id);
                self.wake_self();
                break;
            }
            if let Some(b) = self.backend.as_mut() {
                if let Err(e) = b.event_processed(id) {
                    tracing::warn!(target: "dbgapi", "event_processed: {e}");
                }
            }
            self.resume_run_on();
        }
        news
    }

    /// Resume the waves that stepped off a breakpoint and run on (their
    /// stop events are processed by now).
    fn resume_run_on(&mut self) {
        for wave in std::mem::take(&mut self.run_on) {
            if let Err(e) = self.resume_wave(wave, false) {
                tracing::debug!(target: "dbgapi", wave = wave.0, "run on after step-over: {e}");
            }
        }
        self.start_queued_steps();
    }

    /// Make the notifier readable, so the loop calls `process_events` again.
    fn wake_self(&mut self) {
        if let Some(w) = self.self_wake.as_mut() {
            use std::io::Write as _;
            // A full pipe is already readable: nothing to do.
            let _ = w.write(&[1]);
        }
    }

    fn handle_event(&mut self, event: GpuEvent, news: &mut GpuNews) {
        let c = &mut self.counts;
        match event {
            GpuEvent::Runtime(_) => c.runtime += 1,
            GpuEvent::WaveStop { .. } => c.wave_stops += 1,
            GpuEvent::WaveCommandTerminated { .. } => c.wave_terminations += 1,
            GpuEvent::CodeObjectListUpdated => c.code_object_updates += 1,
            GpuEvent::BreakpointResume { .. } => c.breakpoint_resumes += 1,
            GpuEvent::QueueError { .. } => c.queue_errors += 1,
        }
        match event {
            GpuEvent::Runtime(RuntimeState::Loaded) => {
                self.runtime = Some((RuntimeState::Loaded, None));
                self.lifetime += 1;
                news.runtime_loaded = true;
                news.runtime_up = Some(true);
                self.refresh_arch();
            }
            GpuEvent::Runtime(RuntimeState::LoadedRestriction) => {
                let why = self.backend.as_ref().and_then(|b| b.last_warning());
                tracing::warn!(target: "dbgapi", reason = ?why, "GPU runtime loaded but cannot be debugged by this library");
                self.runtime = Some((RuntimeState::LoadedRestriction, why));
                news.console
                    .push(format!("gdbmux: {}\n", self.runtime_text()));
            }
            GpuEvent::Runtime(RuntimeState::Unloaded) => {
                self.runtime = Some((RuntimeState::Unloaded, None));
                news.console
                    .push(format!("gdbmux: {}\n", self.runtime_text()));
                news.runtime_unloaded = true;
                news.runtime_up = Some(false);
                self.step_queue.clear();
                self.waves.clear();
                self.last_wave_list.clear();
                self.stops.clear();
                self.stop_infos.clear();
            }
            GpuEvent::WaveStop { wave } => {
                if self.finish_step_over(wave, true) == Some(true)
                    && self
                        .backend()
                        .and_then(|b| b.stopped_wave_reason(wave).map_err(gerr))
                        .ok()
                        == Some(StopReasons::SINGLE_STEP)
                {
                    // Past the breakpoint and asked to run on: no stop to
                    // report (a step that hit anything else is reported).
                    // The library resumes a wave only once its stop event
                    // is processed: `process_events` resumes it after the
                    // ack.
                    self.run_on.push(wave);
                    return;
                }
                let tid = self.tid_of(wave);
                match self.capture_stop(wave) {
                    Ok((reasons, pc)) => {
                        news.wave_stops.push(wave);
                        let stop = WaveStop {
                            wave,
                            tid,
                            reasons,
                            pc,
                        };
                        if self.stops.push(stop) {
                            self.counts.stops_replaced += 1;
                        }
                        self.counts.max_queued_stops =
                            self.counts.max_queued_stops.max(self.stops.len());
                    }
                    Err(e) => {
                        tracing::warn!(target: "dbgapi", wave = wave.0, "stopped wave vanished: {e}")
                    }
                }
            }
            GpuEvent::WaveCommandTerminated { wave } => {
                // The wave is gone: so is its queued stop (bounded memory
                // under wave churn).
                let _ = self.finish_step_over(wave, false);
                self.unqueue_step(wave);
                self.terminations += 1;
                self.stop_infos.remove(&wave);
                self.waves.remove(&wave);
                self.last_wave_list.clear();
                self.wave_regs.remove(&wave);
                if self.stops.remove(wave) {
                    self.counts.stops_dropped += 1;
                }
            }
            GpuEvent::CodeObjectListUpdated => {
                if let Ok(list) = self.backend().and_then(|b| b.code_objects().map_err(gerr)) {
                    tracing::info!(target: "dbgapi", count = list.len(), "code objects updated");
                    self.code_objects = list;
                    self.rebind_breakpoints(news);
                    // A wave that ends on its own reports no event (only
                    // one with a pending command does): forget the waves
                    // that ended since, once per code-object update.
                    if let Ok(live) = self.backend().and_then(|b| b.waves().map_err(gerr)) {
                        self.forget_dead_waves(&live);
                        self.last_wave_list.clear();
                    }
                    self.resolve_pending(news);
                }
            }
            GpuEvent::BreakpointResume { breakpoint } => news.resumed.push(breakpoint),
            GpuEvent::QueueError { queue } => {
                tracing::warn!(target: "dbgapi", queue = queue.0, "GPU queue error");
            }
        }
    }

    /// A wave's stop: its reason and, for a stop other than a requested
    /// one (a requested stop has no reason), its pc, rewound onto a
    /// breakpoint instruction (the hardware reports it past the `s_trap`).
    /// The rest of the wave's info is asked for on first need
    /// ([`KeptStop`]).
    fn capture_stop(&mut self, wave: WaveId) -> GpuResult<(StopReasons, Option<u64>)> {
        let b = self.backend()?;
        let reasons = b.stopped_wave_reason(wave).map_err(gerr)?;
        let mut pc = None;
        if reasons.0 != 0 {
            pc = Some(b.stopped_wave_pc(wave).map_err(gerr)?);
        }
        let adjust = self
            .arch
            .as_ref()
            .map(|a| a.breakpoint_pc_adjust)
            .unwrap_or(0);
        if let Some(at) = pc {
            if reasons.contains(StopReasons::BREAKPOINT) && adjust > 0 {
                let newpc = at.wrapping_sub(adjust);
                let idx = self
                    .regs
                    .iter()
                    .find(|x| x.generic == Some("pc"))
                    .map(|r| r.regnum as usize);
                match idx {
                    Some(idx) => match self.write_register(wave, idx, &newpc.to_le_bytes()) {
                        Ok(()) => pc = Some(newpc),
                        Err(e) => {
                            tracing::warn!(target: "dbgapi", wave = wave.0, "rewinding pc: {e}")
                        }
                    },
                    None => tracing::warn!(target: "dbgapi", "no pc register in the table"),
                }
            }
        }
        self.stop_infos
            .insert(wave, KeptStop::Reason { reasons, pc });
        Ok((reasons, pc))
    }

    /// A stopped wave's whole info, completed from the library the first
    /// time it is asked for after the stop: `None` when the wave is not
    /// known to be stopped or its info is complete already.
    fn complete_stop_info(&mut self, wave: WaveId) -> Option<GpuResult<()>> {
        let Some(&KeptStop::Reason { reasons, pc }) = self.stop_infos.get(&wave) else {
            return None;
        };
        let mut info = match self
            .backend()
            .and_then(|b| b.stopped_wave_info(wave).map_err(gerr))
        {
            Ok(i) => i,
            Err(e) => return Some(Err(e)),
        };
        // As the stop left them: the reason, and a pc rewound onto a
        // breakpoint (also written to the wave, so the library agrees).
        info.stop_reason = Some(reasons);
        if pc.is_some() {
            info.pc = pc;
        }
        self.stop_infos.insert(wave, KeptStop::Info(Box::new(info)));
        Some(Ok(()))
    }

    fn refresh_arch(&mut self) {
        if self.arch.is_some() {
            return;
        }
        let agents = match self.backend().and_then(|b| b.agents().map_err(gerr)) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(target: "dbgapi", "agents: {e}");
                return;
            }
        };
        // The first agent the library can debug (others are listed by
        // `monitor gpu` with the library's reason).
        let Some(arch) = agents.iter().find_map(|a| a.architecture.clone().ok()) else {
            return;
        };
        match self.union_of_agents(&arch.name) {
            Ok(u) => {
                self.regs = super::regs::table(&u.descs);
                self.reg_rows = rows_by_regnum(&self.regs);
                self.reg_union = u;
            }
            Err(e) => tracing::warn!(target: "dbgapi", "register table: {e}"),
        }
        self.arch = Some(arch);
    }

    /// The register table's rows: the union over the debuggable agents'
    /// architectures (lldb 23.1 keeps one register table per process, gdb
    /// 13 one target description). A backend without per-agent lists
    /// gives its one architecture's list.
    fn union_of_agents(&mut self, first: &str) -> GpuResult<super::regs::RegisterUnion> {
        let per_agent = self.backend()?.agent_architecture_registers();
        let archs = match per_agent {
            Ok(v) => v
                .into_iter()
                .map(|(a, regs)| (a.name, regs))
                .collect::<Vec<_>>(),
            Err(gpu_target::model::GpuError::NotSupported(_)) => {
                let regs = self.backend()?.architecture_registers().map_err(gerr)?;
                vec![(first.to_string(), regs)]
            }
            Err(e) => return Err(gerr(e)),
        };
        self.arch_names = archs.iter().map(|(n, _)| n.clone()).collect();
        let u = super::regs::RegisterUnion::of(&archs);
        tracing::info!(target: "dbgapi", architectures = ?self.arch_names, rows = u.descs.len(), renamed = u.has_renames(), "register table");
        Ok(u)
    }

    /// The lldb helper (`tools/lldb/gdbmux_lldb.py`) says it interrupts
    /// the GPU process once it has taken the CPU's exit in
    /// (`monitor gpu hold-exit`). lldb 23.1 takes each target's exit in on
    /// its own thread; after a wave stop the helper runs the CPU on from a
    /// worker thread, and `target list` right after the end could still
    /// show the CPU `state=running` (docs/gpu-lldb.md, finding 12). So,
    /// for a client with the helper, the end of the GPU process is held
    /// until that interrupt when the CPU was run on from a wave stop
    /// ([`Self::note_cpu_resume`]).
    pub fn set_helper_holds_exits(&mut self) {
        self.exit_hold.helper = true;
    }

    /// The CPU process is resumed: a hold is armed when a wave stopped
    /// since the CPU's previous resume (the helper runs the CPU on after a
    /// wave stop, while the client may already run the GPU on), stays armed
    /// over the CPU's later resumes (a loader-hook stop it passes) unless
    /// the GPU session was stopped other than at a wave since (an interrupt:
    /// the CPU stopped on its own), and is not armed otherwise.
    pub fn note_cpu_resume(&mut self) {
        let h = &mut self.exit_hold;
        h.armed = h.helper && (h.wave_stop_seen || (h.armed && h.gpu != GpuRun::Other));
        h.wave_stop_seen = false;
        tracing::debug!(target: "mux", gpu = ?h.gpu, armed = h.armed, "CPU resumed: GPU exit hold");
    }

    /// The GPU session resumed its process.
    pub fn note_gpu_resume(&mut self) {
        tracing::debug!(target: "mux", "GPU resumed: GPU exit hold");
        self.exit_hold.gpu = GpuRun::Running;
    }

    /// The GPU session reported a stop (`wave`: of a wave, not the
    /// shadow thread's interrupt stop).
    pub fn note_gpu_stop(&mut self, wave: bool) {
        tracing::debug!(target: "mux", wave, "GPU stopped: GPU exit hold");
        self.exit_hold.gpu = if wave {
            GpuRun::AtWaveStop
        } else {
            GpuRun::Other
        };
        self.exit_hold.wave_stop_seen |= wave;
    }

    /// All-stop across lldb's targets (`super::allstop`).
    pub fn all_stop_mut(&mut self) -> &mut super::allstop::AllStop {
        &mut self.all_stop
    }

    /// All-stop's state, for `monitor gpu`.
    pub fn all_stop(&self) -> &super::allstop::AllStop {
        &self.all_stop
    }

    /// (helper announced, hold armed), for `monitor gpu`.
    pub fn exit_hold_state(&self) -> (bool, bool) {
        (self.exit_hold.helper, self.exit_hold.armed)
    }

    /// Hold `ev`, the end of the GPU session's process, if a hold is armed
    /// (the GPU session reports it when its client interrupts).
    pub fn hold_exit(&mut self, ev: &crate::stop::StopEvent) -> bool {
        if !std::mem::take(&mut self.exit_hold.armed) {
            return false;
        }
        self.exit_hold.held = Some(ev.clone());
        self.exit_hold.engaged = true;
        true
    }

    /// Whether the GPU session's end was held (reported or not): a server
    /// serving one program then stays until the GPU session closes.
    pub fn exit_hold_engaged(&self) -> bool {
        self.exit_hold.engaged
    }

    /// The held end of the GPU session's process, once.
    pub fn take_held_exit(&mut self) -> Option<crate::stop::StopEvent> {
        self.exit_hold.held.take()
    }

    /// The architectures the served register table covers (agent order).
    pub fn table_architectures(&self) -> &[String] {
        &self.arch_names
    }

    /// Architecture (known after the runtime loaded).
    pub fn architecture(&mut self) -> Option<Architecture> {
        self.refresh_arch();
        self.arch.clone()
    }

    /// lldb triple for the agent: `amdgpu-amd-amdhsa--gfxNNN` (never
    /// `amdgcn`, which lldb 23.1 rejects as an invalid triple).
    pub fn triple(&mut self) -> String {
        match self.architecture() {
            Some(a) => format!("amdgpu-amd-amdhsa--{}", a.name),
            None => "amdgpu-amd-amdhsa".to_string(),
        }
    }

    /// Register table (generated from the library's descriptions).
    pub fn registers(&mut self) -> &[RegisterInfo] {
        self.refresh_arch();
        &self.regs
    }

    /// Agents.
    pub fn agents(&mut self) -> GpuResult<Vec<AgentInfo>> {
        self.backend()?.agents().map_err(gerr)
    }

    /// Code objects (as of the last update event).
    pub fn code_objects(&self) -> &[CodeObject] {
        &self.code_objects
    }

    /// Thread id of a wave (assigned on first sight; never reused).
    pub fn tid_of(&mut self, wave: WaveId) -> Tid {
        if let Some(t) = self.waves.get(&wave) {
            return *t;
        }
        let t = self.next_tid;
        self.next_tid += 1;
        self.waves.insert(wave, t);
        t
    }

    /// Wave of a thread id.
    pub fn wave_of(&self, tid: Tid) -> Option<WaveId> {
        self.waves.wave_of(tid)
    }

    /// Refresh the wave list; returns (wave, tid) pairs in tid order (none
    /// when the library fails: see [`GpuController::try_waves`]).
    pub fn waves(&mut self) -> Vec<(WaveId, Tid)> {
        self.try_waves().unwrap_or_else(|e| {
            tracing::warn!(target: "dbgapi", "wave list: {e}");
            Vec::new()
        })
    }

    /// Refresh the wave list; the library's error as text.
    pub fn try_waves(&mut self) -> GpuResult<Vec<(WaveId, Tid)>> {
        self.refresh_waves()?;
        Ok(self.waves.listing().to_vec())
    }

    /// Refresh the wave list; the thread ids in order, shared (a thread
    /// list of 10,000 unchanged waves copies them once).
    pub fn try_wave_tids(&mut self) -> GpuResult<std::rc::Rc<[Tid]>> {
        self.refresh_waves()?;
        Ok(self.waves.tids())
    }

    /// Ask the library for its wave list and bring the thread ids in step.
    fn refresh_waves(&mut self) -> GpuResult<()> {
        // While the thread ids are in step with the last list (it was not
        // cleared since), a list the library says is unchanged needs
        // nothing: 10,000 waves are neither copied nor compared.
        let list = if self.last_wave_list.is_empty() {
            self.backend()?.waves().map_err(gerr)?
        } else {
            match self.backend()?.waves_if_changed().map_err(gerr)? {
                Some(list) => list,
                None => return Ok(()),
            }
        };
        // The same waves as last time (a stopped GPU, or a list asked for
        // again and again): every one has its thread id and no dead wave
        // is left to forget.
        if list != self.last_wave_list {
            self.forget_dead_waves(&list);
            for w in &list {
                self.tid_of(*w);
            }
            self.last_wave_list = list;
        }
        Ok(())
    }

    /// Drop what is kept per wave (thread id, register map) for the waves
    /// not in `live`. A wave that ends on its own reports no event, so this
    /// runs on each wave listing and each code-object list update: without
    /// it, every ended wave whose registers were read kept its register
    /// map (the `soak --gpu` RSS growth).
    fn forget_dead_waves(&mut self, live: &[WaveId]) {
        let live: std::collections::BTreeSet<WaveId> = live.iter().copied().collect();
        self.waves.retain(|w| live.contains(w));
        self.wave_regs.retain(|w, _| live.contains(w));
        self.stop_infos.retain(|w, _| live.contains(w));
        self.step_queue.retain(|w| live.contains(&w));
    }

    /// What is kept per wave now: (thread ids, register maps, waves
    /// stepping off a breakpoint, waves waiting for a displaced stepping
    /// buffer), for `monitor gpu` and the leak tests.
    pub fn per_wave_counts(&self) -> (usize, usize, usize, usize) {
        (
            self.waves.len(),
            self.wave_regs.len(),
            self.stepping_over.len(),
            self.step_queue.len(),
        )
    }

    /// A wave's thread name, `waveW_wgX.Y.Z_nN` (workgroup and number in
    /// it): asked of the library once per wave and kept for its life.
    pub fn wave_name(&mut self, wave: WaveId) -> Option<String> {
        if let Some(n) = self.waves.name(&wave) {
            return Some(n.clone());
        }
        let info = self.wave_info(wave).ok()?;
        let c = info.workgroup_coord.unwrap_or_default();
        let name = format!(
            "wave{}_wg{}.{}.{}_n{}",
            wave.0,
            c[0],
            c[1],
            c[2],
            info.wave_number_in_workgroup.unwrap_or(0)
        );
        self.waves.set_name(wave, name.clone());
        Some(name)
    }

    /// Info about one wave (a stopped wave's as its stop left it).
    pub fn wave_info(&mut self, wave: WaveId) -> GpuResult<WaveInfo> {
        match self.stop_infos.get(&wave) {
            Some(KeptStop::Info(i)) => return Ok(WaveInfo::clone(i)),
            Some(KeptStop::Reason { .. }) => {
                if let Some(r) = self.complete_stop_info(wave) {
                    r?;
                }
                if let Some(KeptStop::Info(i)) = self.stop_infos.get(&wave) {
                    return Ok(WaveInfo::clone(i));
                }
            }
            None => {}
        }
        self.backend()?.wave_info(wave).map_err(gerr)
    }

    /// A wave's pc (`None` for a running wave): a stopped wave's from its
    /// stop, without completing the rest of its info.
    fn wave_pc(&mut self, wave: WaveId) -> GpuResult<Option<u64>> {
        match self.stop_infos.get(&wave) {
            Some(KeptStop::Info(i)) => Ok(i.pc),
            Some(KeptStop::Reason { pc: Some(pc), .. }) => Ok(Some(*pc)),
            Some(KeptStop::Reason { pc: None, .. }) => self
                .backend()?
                .stopped_wave_pc(wave)
                .map(Some)
                .map_err(gerr),
            None => Ok(self.wave_info(wave)?.pc),
        }
    }

    /// Register `index` of a stopped wave from its stop's info: pc and
    /// exec, the registers every stop record and `jThreadsInfo` expedite.
    fn stopped_register(&mut self, wave: WaveId, index: usize) -> Option<Vec<u8>> {
        let r = self.register_row(index)?;
        let (pc, bits) = (r.generic == Some("pc"), r.bitsize);
        if !pc && r.name != "exec" {
            return None;
        }
        let v = match self.stop_infos.get(&wave)? {
            KeptStop::Info(i) => (if pc { i.pc } else { i.exec })?,
            KeptStop::Reason { pc: Some(at), .. } if pc => *at,
            KeptStop::Reason { .. } => {
                self.complete_stop_info(wave)?.ok()?;
                match self.stop_infos.get(&wave)? {
                    KeptStop::Info(i) => (if pc { i.pc } else { i.exec })?,
                    KeptStop::Reason { .. } => return None,
                }
            }
        };
        (bits == 64).then(|| v.to_le_bytes().to_vec())
    }

    /// The table's row of register number `index`.
    fn register_row(&self, index: usize) -> Option<&RegisterInfo> {
        self.reg_rows
            .get(index)
            .copied()
            .flatten()
            .and_then(|i| self.regs.get(i))
    }

    /// Next unreported wave stop.
    pub fn pop_stop(&mut self) -> Option<WaveStop> {
        self.stops.pop()
    }

    /// Keep only the queued stops `keep` accepts; the others are handed to
    /// `drop` (e.g. to resume their waves).
    pub fn retain_stops(
        &mut self,
        mut keep: impl FnMut(&WaveStop, &[u64]) -> bool,
    ) -> Vec<WaveStop> {
        let bps = self.gpu_breakpoints();
        let mut dropped = Vec::new();
        let mut kept = StopQueue::default();
        while let Some(s) = self.stops.pop() {
            if keep(&s, &bps) {
                kept.push(s);
            } else {
                dropped.push(s);
            }
        }
        self.stops = kept;
        dropped
    }

    /// Whether wave stops are waiting to be reported.
    pub fn has_stops(&self) -> bool {
        !self.stops.is_empty()
    }

    /// The wave's own index of architecture register `regnum`.
    fn wave_index(&mut self, wave: WaveId, regnum: usize) -> GpuResult<usize> {
        if !self.wave_regs.contains_key(&wave) {
            let key = self.backend()?.register_list_key(wave).map_err(gerr)?;
            let map = match key.and_then(|k| self.reg_maps.by_key(k)) {
                Some(m) => m,
                None => {
                    let descs = self.backend()?.registers(wave).map_err(gerr)?;
                    // The wave's own architecture's registers, named as
                    // the union table names them; the table's other rows
                    // are not available in this wave.
                    let descs = self.reg_union.rename(&descs);
                    let m = self.reg_maps.map_for(&self.regs, &descs);
                    if let Some(k) = key {
                        self.reg_maps.remember(k, m.clone());
                    }
                    m
                }
            };
            if self.wave_regs.len() >= crate::bounds::WAVE_REGISTER_MAPS {
                self.wave_regs.clear();
            }
            self.wave_regs.insert(wave, map);
        }
        self.wave_regs
            .get(&wave)
            .and_then(|m| m.get(regnum).copied().flatten())
            .ok_or(GpuFault::NotAllocated {
                regnum,
                wave: wave.0,
            })
    }

    /// Read a register of a wave by register number (the library's index).
    pub fn read_register(&mut self, wave: WaveId, index: usize) -> GpuResult<Vec<u8>> {
        if let Some(v) = self.stopped_register(wave, index) {
            return Ok(v);
        }
        let size = self
            .register_row(index)
            .map(|r| (r.bitsize / 8) as usize)
            .ok_or(GpuFault::NoSuchRegister(index))?;
        let mut buf = vec![0u8; size];
        let wi = self.wave_index(wave, index)?;
        self.backend()?
            .read_register(wave, wi, &mut buf)
            .map_err(gerr)?;
        Ok(buf)
    }

    /// Write a register of a wave by register number.
    pub fn write_register(&mut self, wave: WaveId, index: usize, data: &[u8]) -> GpuResult<()> {
        self.stop_infos.remove(&wave);
        let wi = self.wave_index(wave, index)?;
        self.backend()?.write_register(wave, wi, data).map_err(gerr)
    }

    /// Read `len` bytes of lane `lane`'s private memory of `wave` (the
    /// private_lane address space: offsets from the lane's own scratch).
    pub fn read_private_lane(
        &mut self,
        wave: WaveId,
        lane: u32,
        addr: u64,
        len: usize,
    ) -> GpuResult<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let n = self
            .backend()?
            .read_lane_memory(AddressSpace::PrivateLane, wave, lane, addr, &mut buf)
            .map_err(gerr)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Read memory in an address space; GPU breakpoints are masked.
    pub fn read_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        len: usize,
    ) -> GpuResult<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let n = self
            .backend()?
            .read_memory(space, wave, addr, &mut buf)
            .map_err(gerr)?;
        buf.truncate(n);
        if space == AddressSpace::Global || space == AddressSpace::Generic {
            self.gpu_bps.mask(addr, &mut buf);
        }
        Ok(buf)
    }

    /// Write memory in an address space. Bytes that land on a GPU
    /// breakpoint update its saved original and keep the trap in memory
    /// (as the native target does with its `int3`s), so a client write
    /// never silently removes a breakpoint.
    pub fn write_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        data: &[u8],
    ) -> GpuResult<usize> {
        let filtered = if space == AddressSpace::Global || space == AddressSpace::Generic {
            self.gpu_bps.filter_write(addr, data)
        } else {
            None
        };
        let data = filtered.as_deref().unwrap_or(data);
        self.backend()?
            .write_memory(space, wave, addr, data)
            .map_err(gerr)
    }

    /// Insert a GPU breakpoint (`s_trap` written through the library;
    /// original bytes kept, masked in reads). Idempotent.
    pub fn insert_gpu_breakpoint(&mut self, addr: u64) -> GpuResult<()> {
        if self.gpu_bps.contains(addr) {
            return Ok(());
        }
        let trap = self
            .architecture()
            .map(|a| a.breakpoint_instruction)
            .ok_or(GpuFault::ArchitectureUnknown)?;
        let mut orig = vec![0u8; trap.len()];
        let n = self
            .backend()?
            .read_memory(AddressSpace::Global, None, addr, &mut orig)
            .map_err(gerr)?;
        if n != trap.len() {
            return Err(GpuFault::CodeUnreadable(addr));
        }
        let w = self
            .backend()?
            .write_memory(AddressSpace::Global, None, addr, &trap)
            .map_err(gerr)?;
        if w != trap.len() {
            return Err(GpuFault::BreakpointWrite(addr));
        }
        self.gpu_bps
            .planted(addr, orig, trap, crate::swbreak::Owner::Client);
        self.note_inserted(addr, None);
        tracing::info!(target: "dbgapi", addr = format_args!("{addr:#x}"), "GPU breakpoint inserted");
        Ok(())
    }

    /// Remove a GPU breakpoint (restoring the original bytes). Removing one
    /// that is not there is OK.
    pub fn remove_gpu_breakpoint(&mut self, addr: u64) -> GpuResult<()> {
        self.note_removed(addr);
        let Some(patch) = self.gpu_bps.release(addr, crate::swbreak::Owner::Client) else {
            return Ok(());
        };
        self.backend()?
            .write_memory(AddressSpace::Global, None, addr, &patch.orig)
            .map_err(gerr)?;
        Ok(())
    }

    /// A GPU breakpoint on a kernel by name: inserted now when a loaded
    /// code object defines it (`Some(address)`), else kept pending until
    /// one does (`None`).
    /// `name` is a kernel, or `FILE:LINE` (the line's first statement in a
    /// code object's DWARF line table).
    pub fn break_kernel(&mut self, name: &str) -> GpuResult<Option<u64>> {
        if let Some(addr) = self.resolve(name) {
            self.insert_gpu_breakpoint(addr)?;
            self.note_inserted(addr, Some(name));
            return Ok(Some(addr));
        }
        if !self.pending_bps.iter().any(|n| n == name) {
            if self.pending_bps.len() >= MAX_PENDING_BREAKPOINTS {
                return Err(GpuFault::TooManyPending(MAX_PENDING_BREAKPOINTS));
            }
            self.pending_bps.push(name.to_string());
        }
        Ok(None)
    }

    /// The address a breakpoint spec (KERNEL or FILE:LINE) names in the
    /// loaded code objects.
    fn resolve(&mut self, spec: &str) -> Option<u64> {
        if let Some((file, line)) = spec.rsplit_once(':') {
            if let Ok(line) = line.parse::<u64>() {
                return self.symbolizer.line_address(&self.code_objects, file, line);
            }
        }
        self.symbolizer.lookup(&self.code_objects, spec)
    }

    /// Kernel names of the pending GPU breakpoints.
    pub fn pending_breakpoints(&self) -> &[String] {
        &self.pending_bps
    }

    /// Drop a GPU breakpoint set by name, pending or inserted; `false`
    /// when there was none.
    pub fn remove_pending(&mut self, name: &str) -> bool {
        let n = self.pending_bps.len();
        self.pending_bps.retain(|p| p != name);
        if let Some(addr) = self.named_bps.get(name).copied() {
            if let Err(e) = self.remove_gpu_breakpoint(addr) {
                tracing::warn!(target: "dbgapi", kernel = %name, "removing GPU breakpoint: {e}");
            }
            return true;
        }
        n != self.pending_bps.len()
    }

    /// Insert the pending breakpoints the code objects now define (called
    /// on a code-object list update, before the event is processed, so the
    /// runtime cannot dispatch the kernel first).
    fn resolve_pending(&mut self, news: &mut GpuNews) {
        for name in std::mem::take(&mut self.pending_bps) {
            match self.resolve(&name) {
                Some(addr) => match self.insert_gpu_breakpoint(addr) {
                    Ok(()) => {
                        self.note_inserted(addr, Some(&name));
                        tracing::info!(target: "dbgapi", kernel = %name, addr = format_args!("{addr:#x}"), "pending GPU breakpoint resolved");
                        news.console.push(format!(
                            "gdbmux: pending GPU breakpoint {name} resolved at {addr:#x}\n"
                        ));
                    }
                    Err(e) => {
                        news.console.push(format!(
                            "gdbmux: pending GPU breakpoint {name} at {addr:#x} could not be inserted: {e}\n"
                        ));
                    }
                },
                None => self.pending_bps.push(name),
            }
        }
    }

    /// GPU breakpoints.
    pub fn gpu_breakpoints(&self) -> Vec<u64> {
        self.gpu_bps.addresses().collect()
    }

    /// Stop every running wave (completions arrive as WaveStop events);
    /// returns how many stop requests the library accepted.
    ///
    /// No state query first: the library refuses a stop of a stopped wave
    /// (`WAVE_STOPPED`) or of one already being stopped, which is the same
    /// answer, and a state query of a running wave can cost as much as the
    /// stop (the simulator answers it at the wave's next quantum: with
    /// 10,000 waves the queries took most of a stop-all).
    pub fn stop_all_waves(&mut self) -> usize {
        // A queued step-over is a resume not carried out yet: stopping
        // everything cancels it (gdb takes a thread off its step-over
        // queue when it stops it); the wave stays on its breakpoint and
        // steps off it at its next resume.
        self.step_queue.clear();
        let mut n = 0;
        for (w, _) in self.waves() {
            if self
                .backend()
                .and_then(|b| b.stop_wave(w).map_err(gerr))
                .is_ok()
            {
                n += 1;
            }
        }
        n
    }

    /// Resume one stopped wave.
    pub fn resume_wave(&mut self, wave: WaveId, step: bool) -> GpuResult<()> {
        let mode = if step {
            ResumeMode::SingleStep
        } else {
            ResumeMode::Normal
        };
        self.stop_infos.remove(&wave);
        self.unqueue_step(wave);
        self.backend()?.resume_wave(wave, mode).map_err(gerr)?;
        // Fix (muxtests): a resumed wave's queued stop is obsolete. Without
        // this, `monitor gpu delete ADDR; monitor gpu continue` in gdb was
        // followed by a report of every other wave that had stopped at the
        // deleted breakpoint. (GpuTarget only resumes waves whose stops it
        // already took out of the queue, so it is unaffected.)
        self.stops.remove(wave);
        Ok(())
    }

    /// Resume one stopped wave the way ROCgdb leaves a breakpoint: a wave
    /// whose pc is on an inserted GPU breakpoint first single-steps off it,
    /// then runs on (`step == false`) or reports the step. The step is
    /// displaced where the library has displaced stepping (amd-dbgapi
    /// 0.76+): the wave executes a copy of the original instruction out of
    /// line while the `s_trap` stays in memory, so every other wave still
    /// stops there; at the step's stop `finish_step_over` completes it.
    ///
    /// When every displaced stepping buffer is in use, the wave waits, as
    /// in ROCgdb (gdb's step-over queue: `displaced_step_prepare` answers
    /// UNAVAILABLE): it stays stopped on the breakpoint, queued, and its
    /// step starts once an active displaced step completes and releases
    /// a buffer. The header: "If allocating a displaced stepping buffer
    /// indicates no more are available, the client must complete ongoing
    /// single steppings and release the associated buffers. [...] Since
    /// there is always at least one displaced stepping buffer, in
    /// general, the worst case is that one wave at a time can be single
    /// stepped over a breakpoint using a displaced stepping buffer." With
    /// no displaced step of gdbmux's active (none to wait for) the resume
    /// fails with [`GpuError::DisplacedBufferUnavailable`].
    ///
    /// Only where the library has no displaced stepping at all (it
    /// answers NOT_IMPLEMENTED or NOT_SUPPORTED) is the trap lifted for
    /// the step and put back at its stop instead. Without a breakpoint
    /// under the pc it is [`Self::resume_wave`].
    pub fn resume_wave_over(&mut self, wave: WaveId, step: bool) -> GpuResult<()> {
        self.unqueue_step(wave);
        match self.start_step_over(wave, step)? {
            StepStart::Started => Ok(()),
            StepStart::NoBuffer if self.displaced_active() => {
                // Resumed, for the client: a stop queued before is obsolete
                // (as in `resume_wave`).
                self.stops.remove(wave);
                self.step_queue.push_back(StepRequest { wave, step });
                tracing::debug!(target: "dbgapi", wave = wave.0, queued = self.step_queue.len(), "no displaced stepping buffer free: step-over queued");
                Ok(())
            }
            StepStart::NoBuffer => Err(gerr(GpuError::DisplacedBufferUnavailable(wave))),
        }
    }

    /// Whether a displaced step of gdbmux's is active (a buffer will be
    /// released when it completes).
    fn displaced_active(&self) -> bool {
        self.stepping_over.values().any(|s| s.displaced.is_some())
    }

    /// Takes `wave` off the step-over queue (resumed otherwise, stopped,
    /// or gone).
    fn unqueue_step(&mut self, wave: WaveId) {
        self.step_queue.remove(wave);
    }

    /// Starts the queued step-overs, oldest first, while buffers are
    /// free; called after events are acknowledged (a wave's displaced step
    /// completes at its stop, before the stop's acknowledgement, and the
    /// library resumes a wave only once its stop is processed).
    fn start_queued_steps(&mut self) {
        if !std::mem::take(&mut self.buffer_freed) {
            return;
        }
        while let Some(req) = self.step_queue.pop_front() {
            let wave = req.wave;
            match self.start_step_over(wave, req.step) {
                Ok(StepStart::Started) => {
                    tracing::debug!(target: "dbgapi", wave = wave.0, left = self.step_queue.len(), "queued step-over started");
                }
                Ok(StepStart::NoBuffer) if self.displaced_active() => {
                    // Still first in line.
                    self.step_queue.push_front(req);
                    break;
                }
                Ok(StepStart::NoBuffer) => {
                    // Nothing of ours to wait for (the library keeps no
                    // buffer for this wave): it stays stopped on its
                    // breakpoint, shown as such, until resumed again.
                    tracing::warn!(target: "dbgapi", wave = wave.0, "queued step-over: no displaced stepping buffer and none in use; the wave stays stopped");
                }
                Err(e) => {
                    tracing::debug!(target: "dbgapi", wave = wave.0, "queued step-over: {e}");
                }
            }
        }
    }

    /// [`Self::resume_wave_over`] without the queue: starts the step off
    /// the breakpoint under the wave's pc, or resumes the wave when there
    /// is none; [`StepStart::NoBuffer`] (nothing changed) when every
    /// displaced stepping buffer is in use.
    fn start_step_over(&mut self, wave: WaveId, step: bool) -> GpuResult<StepStart> {
        let pc = self.wave_pc(wave)?;
        let Some((addr, orig)) =
            pc.and_then(|pc| self.gpu_bps.get(pc).map(|o| (pc, o.orig.clone())))
        else {
            return self.resume_wave(wave, step).map(|()| StepStart::Started);
        };
        let displaced = match self.backend()?.displaced_step_start(wave, &orig) {
            Ok(ds) => Some(ds),
            Err(GpuError::NotSupported(why)) => {
                tracing::debug!(target: "dbgapi", wave = wave.0, "no displaced step ({why}): lifting the trap");
                None
            }
            Err(GpuError::DisplacedBufferUnavailable(_)) => return Ok(StepStart::NoBuffer),
            Err(e) => return Err(gerr(e)),
        };
        if displaced.is_none() && !self.trap_lifted(addr) {
            self.backend()?
                .write_memory(AddressSpace::Global, None, addr, &orig)
                .map_err(gerr)?;
        }
        let over = StepOver {
            addr,
            run_on: !step,
            displaced,
        };
        self.stepping_over.insert(wave, over);
        if let Err(e) = self.resume_wave(wave, true) {
            // Not resumed: the displaced step completes as not executed
            // (the wave is back on the breakpoint), the trap goes back.
            let _ = self.finish_step_over(wave, true);
            return Err(e);
        }
        tracing::debug!(target: "dbgapi", wave = wave.0, addr = format_args!("{addr:#x}"), displaced = displaced.is_some(), "stepping off a GPU breakpoint");
        Ok(StepStart::Started)
    }

    /// Whether a wave stepping off `addr` has its trap lifted.
    fn trap_lifted(&self, addr: u64) -> bool {
        self.stepping_over
            .values()
            .any(|s| s.addr == addr && s.displaced.is_none())
    }

    /// A wave that was stepping off a breakpoint stopped (`alive`) or
    /// ended: a displaced step is completed (the library released an
    /// ended wave's buffer itself), a lifted trap goes back if no other
    /// wave is still stepping off it with the trap lifted (and it was not
    /// deleted meanwhile). `Some(run_on)` when the wave was stepping over.
    fn finish_step_over(&mut self, wave: WaveId, alive: bool) -> Option<bool> {
        let over = self.stepping_over.remove(&wave)?;
        if let Some(ds) = over.displaced {
            // Its buffer is released (completed below, or with the ended
            // wave): a queued step-over can start.
            self.buffer_freed = true;
            if alive {
                // The pc moves (past the instruction, or back onto the
                // breakpoint): what was kept of the stop no longer holds.
                self.stop_infos.remove(&wave);
                let r = self
                    .backend()
                    .and_then(|b| b.displaced_step_complete(wave, ds).map_err(gerr));
                if let Err(e) = r {
                    tracing::warn!(target: "dbgapi", wave = wave.0, "completing a displaced step: {e}");
                }
            }
            return Some(over.run_on);
        }
        let addr = over.addr;
        if !self.trap_lifted(addr) && self.gpu_bps.contains(addr) {
            let trap = self.arch.as_ref().map(|a| a.breakpoint_instruction.clone());
            let r = match (trap, self.backend()) {
                (Some(t), Ok(b)) => b
                    .write_memory(AddressSpace::Global, None, addr, &t)
                    .map(|_| ())
                    .map_err(gerr),
                (None, _) => Err(GpuFault::ArchitectureUnknown),
                (_, Err(e)) => Err(e),
            };
            if let Err(e) = r {
                tracing::warn!(target: "dbgapi", addr = format_args!("{addr:#x}"), "re-inserting a GPU breakpoint: {e}");
            }
        }
        Some(over.run_on)
    }

    /// Before the library lets go of the process (a detach: `D`, a
    /// client that went away from an attached process, `monitor exit`
    /// with one), or when the GPU session's client detaches
    /// (`GpuTarget::detach`): the waves run on undebugged. What ROCgdb does before `amd_dbgapi_process_detach`:
    /// the step-over queue is dropped, every GPU breakpoint comes out of
    /// memory (an `s_trap` left there would end its dispatch with no
    /// debugger to report to), every displaced step whose wave is stopped
    /// is completed ([`Self::finish_displaced_steps`]), and every stopped
    /// wave is resumed normally.
    pub fn prepare_detach(&mut self) {
        self.step_queue.clear();
        for bp in self.gpu_breakpoints() {
            if let Err(e) = self.remove_gpu_breakpoint(bp) {
                tracing::warn!(target: "dbgapi", addr = format_args!("{bp:#x}"), "removing a GPU breakpoint before detaching: {e}");
            }
        }
        self.finish_displaced_steps();
        self.set_wave_creation(false);
        self.resume_all();
    }

    /// Completes every active displaced step whose wave is stopped (before
    /// a detach: a displaced wave runs from a buffer only the library
    /// serves). A wave still mid-step runs on past the breakpoint when its
    /// step's stop comes in while attached; one that is still mid-step when
    /// the library detaches is the library's: the header's
    /// `amd_dbgapi_process_detach` says "Any waves with a displaced stepping
    /// buffer are stopped and the displaced stepping buffer completed."
    /// gdbmux does not wait for those steps (its loop never blocks; gdb's
    /// `prepare_for_detach` runs its event loop until they finish): the
    /// library does what waiting would.
    pub fn finish_displaced_steps(&mut self) {
        let displaced: Vec<WaveId> = self
            .stepping_over
            .iter()
            .filter(|(_, s)| s.displaced.is_some())
            .map(|(w, _)| *w)
            .collect();
        for w in displaced {
            let is_stopped = self
                .wave_info(w)
                .map(|i| i.state == WaveState::Stopped)
                .unwrap_or(false);
            if is_stopped {
                let _ = self.finish_step_over(w, true);
            } else if let Some(s) = self.stepping_over.get_mut(&w) {
                // The client is going: no step of it is reported.
                s.run_on = true;
            }
        }
    }

    /// Resume every stopped wave, stepping each off its breakpoint first.
    pub fn resume_all(&mut self) {
        for (w, _) in self.waves() {
            let stopped = self.stop_infos.contains_key(&w)
                || self
                    .wave_info(w)
                    .map(|i| i.state == WaveState::Stopped)
                    .unwrap_or(false);
            if stopped {
                if let Err(e) = self.resume_wave_over(w, false) {
                    tracing::debug!(target: "dbgapi", wave = w.0, "resume: {e}");
                }
            }
        }
    }

    /// Stop or allow the creation of new waves.
    pub fn set_wave_creation(&mut self, stopped: bool) {
        if let Ok(b) = self.backend() {
            if let Err(e) = b.set_wave_creation(stopped) {
                tracing::debug!(target: "dbgapi", "set_wave_creation: {e}");
            }
        }
    }

    /// Total events handled since load.
    pub fn events_total(&self) -> u64 {
        self.counts.total
    }

    /// Events handled by kind, and what the stop queue did with them.
    pub fn event_counts(&self) -> GpuEventCounts {
        self.counts
    }

    /// Wave stops queued now (at most one per live wave).
    pub fn queued_stops(&self) -> usize {
        self.stops.len()
    }

    /// WAVE_COMMAND_TERMINATED events since the last call: requested stops
    /// that will not come (their waves ended first).
    pub fn take_terminations(&mut self) -> usize {
        std::mem::take(&mut self.terminations)
    }

    /// The CPU process is gone: drop the backend (detaches from the
    /// library).
    pub fn on_cpu_exit(&mut self) {
        self.backend = None;
        self.notifier = None;
        self.self_wake = None;
        self.deferred_acks.clear();
        self.waves.clear();
        self.last_wave_list.clear();
        self.stops.clear();
        self.stop_infos.clear();
        self.host_bps.clear();
        self.gpu_bps.clear();
        self.stepping_over.clear();
        self.run_on.clear();
        self.step_queue.clear();
        self.buffer_freed = false;
        // GPU breakpoints belong to the process: a later one (the next
        // client of `gdbmux demo`, a `run` under --multi) starts without
        // them (set them again), rather than stopping on breakpoints its
        // client never set.
        self.pending_bps.clear();
        self.named_bps.clear();
        self.located_bps.clear();
        self.dormant_bps.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(w: u64, step: bool) -> StepRequest {
        StepRequest {
            wave: WaveId(w),
            step,
        }
    }

    /// Oldest first, one entry per wave (a wave queued again moves last),
    /// a popped wave put back first, removals by wave and by filter.
    #[test]
    fn step_queue_order_and_membership() {
        let mut q = StepQueue::default();
        q.push_back(req(1, false));
        q.push_back(req(2, true));
        q.push_back(req(3, false));
        q.push_back(req(1, true));
        assert_eq!(q.len(), 3);
        let first = q.pop_front().unwrap();
        assert_eq!(first, req(2, true));
        q.push_front(first);
        q.remove(WaveId(3));
        q.remove(WaveId(3));
        assert_eq!(q.len(), 2);
        q.retain(|w| w != WaveId(2));
        assert_eq!(q.pop_front(), Some(req(1, true)));
        assert_eq!(q.pop_front(), None);
        assert!(q.queued.is_empty());
        q.push_back(req(4, false));
        q.clear();
        assert_eq!((q.len(), q.queued.len()), (0, 0));
    }
}
