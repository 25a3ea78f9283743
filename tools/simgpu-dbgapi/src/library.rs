//! The library's state and logic, in safe Rust. `ffi` converts raw C
//! arguments into calls here and results back.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;

use gpu_target::dbgapi::abi::event_kind;
use gpu_target::dbgapi::abi::info;
use gpu_target::dbgapi::abi::runtime_state;
use gpu_target::dbgapi::abi::status as st;
use gpu_target::dbgapi::abi::wave_state;
use gpu_target::dbgapi::abi::Status;
use gpu_target::idhash::IdMap;
use gpu_target::model::DispatchId;
use gpu_target::model::ResumeMode;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveId;
use gpu_target::model::WaveState;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DeviceError;
use gpu_target::sim::device::DeviceEvent;
use gpu_target::sim::device::SimWaveInfo;
use gpu_target::sim::device::WaveIndex;
use gpu_target::sim::memory::ProcessMemory;
use gpu_target::sim::regs::Reg;
use gpu_target::sim::rendezvous::outcome_code;
use gpu_target::sim::rendezvous::socket_name;
use gpu_target::sim::rendezvous::Message;
use gpu_target::sim::rendezvous::MessageKind;
use gpu_target::sim::rendezvous::RT_CONSISTENT;
use gpu_target::sim::storm::is_storm_id;
use gpu_target::sim::storm::Storm;
use gpu_target::sim::storm::StormConfig;
use gpu_target::sim::storm::StormEvent;
use gpu_target::sim::storm::StormKind;
use gpu_target::sim::storm::STORM_ENV;

use crate::agents::Agents;
use crate::archs::SimArch;
use crate::faults::Faults;
use crate::storm::StormRun;
use crate::storm::StormWave;

/// The ABI version this library implements.
pub const VERSION: (u32, u32, u32) = (0, 77, 0);
/// `amd_dbgapi_get_build_name`.
pub const BUILD_NAME: &str = "0.77.0-simgpu";

/// The one architecture: gfx90a, with the handle AMD's library 0.77 gives
/// it (measured without a GPU: `amd_dbgapi_get_architecture` returns 1 for
/// gfx900, 4 for gfx90a, 5 for gfx940; a client sees the number in every
/// `ARCHITECTURE` info answer).
pub const ARCH_HANDLE: u64 = 4;
/// Address space handles.
// Address-space handles as AMD's library 0.77 numbers them on gfx90a.
pub const ASPACE_GLOBAL: u64 = 1;
pub const ASPACE_GENERIC: u64 = 17;
pub const ASPACE_LOCAL: u64 = 14;
pub const ASPACE_PRIVATE_LANE: u64 = 15;
pub const ASPACE_PRIVATE_WAVE: u64 = 16;

/// (handle, name, address bits, null address, DWARF number) of each address
/// space, in AMD's list order (measured on the real library 0.77).
const ADDRESS_SPACES: [(u64, &str, u64, u64, u64); 5] = [
    (ASPACE_GLOBAL, "global", 64, 0, 0),
    (ASPACE_GENERIC, "generic", 64, 0, 1),
    (ASPACE_PRIVATE_WAVE, "private_wave", 32, 0xffff_ffff, 6),
    (ASPACE_PRIVATE_LANE, "private_lane", 32, 0xffff_ffff, 5),
    (ASPACE_LOCAL, "local", 32, 0xffff_ffff, 3),
];

/// The callbacks the client gave, wrapped safely by `ffi`.
pub trait Client: Send {
    /// A client-owned copy of `data` (allocate_memory + copy).
    fn alloc_copy(&self, data: &[u8]) -> Result<usize, Status>;
    /// `client_process_get_info(OS_PID)`.
    fn os_pid(&self, cp: usize) -> Result<i32, Status>;
    /// `insert_breakpoint`.
    fn insert_breakpoint(&self, cp: usize, addr: u64, id: u64) -> Status;
    /// `remove_breakpoint`.
    fn remove_breakpoint(&self, cp: usize, id: u64) -> Status;
    /// `xfer_global_memory` read; returns bytes read.
    fn read_global(&self, cp: usize, addr: u64, buf: &mut [u8]) -> Result<usize, Status>;
    /// `log_message`.
    fn log(&self, level: i32, msg: &str);
    /// `deallocate_memory` of a block the client allocated (a symbolizer's
    /// text).
    fn free(&self, p: usize);
}

/// A typed `*_get_info` answer; `ffi` checks the size and writes it.
pub enum Info {
    U16(u16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    Usize(usize),
    Handle(u64),
    U32x3([u32; 3]),
    U16x3([u16; 3]),
    /// A string the client must free.
    Str(String),
    /// A byte array the client must free (pointer-sized result).
    Bytes(Vec<u8>),
    /// An empty watchpoint list.
    EmptyWatchpoints,
}

/// A list answer with `changed` semantics.
pub struct ListOut {
    pub items: Vec<u64>,
    pub changed: bool,
}

/// What a wave's stop left, as the device reported it with the stop: a
/// stopped wave's state, stop reason, PC and EXEC are answered from here
/// without touching the wave's simulator state again (24 bytes of facts
/// per stopped wave instead of a lookup of its workgroup per query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StopFacts {
    reason: u32,
    pc: u64,
    exec: u64,
}

/// A wave's stop as the client sees it: a request not completed yet, a
/// fetched WAVE_STOP (with its facts while they hold) and whether that
/// event is still unprocessed. One entry per wave with any of these, none
/// when all are clear: a stop-all of 10,000 waves made three sets each
/// take an insert and a removal per wave.
#[derive(Clone, Copy, Default)]
struct WaveStop {
    requested: bool,
    /// `Some` once the client fetched the stop (the wave looks stopped
    /// until resumed, see `visible_state`); the facts while they hold
    /// (dropped by a register write).
    fetched: Option<Option<StopFacts>>,
    unprocessed: bool,
}

impl WaveStop {
    fn is_clear(&self) -> bool {
        !self.requested && self.fetched.is_none() && !self.unprocessed
    }
}

/// Most wave ids [`WaveStops`] covers with its dense table (40 bytes each:
/// 2.6 MB at most); waves outside it go to the map.
const DENSE_STOPS: u64 = 1 << 16;

/// The per-wave stop states of a process (see [`WaveStop`]).
///
/// A stop-all of 10,000 waves touches every wave's state four times (the
/// request, the fetched event, its acknowledgement, the resume): in a hash
/// map each was a probe of a 10,000-entry table, most of the library's
/// time in a stop-all. The device numbers a launch's waves consecutively,
/// so the states live in a table indexed by the wave id's distance from a
/// base (`dense`, up to [`DENSE_STOPS`] ids), and only waves outside that
/// window in the map. The window moves to the next wave that needs a state
/// once no wave in it has one (`dense_live`), so later launches, whose ids
/// are higher, use it too.
#[derive(Default)]
struct WaveStops {
    base: u64,
    dense: Vec<WaveStop>,
    /// States in `dense` that are not all clear.
    dense_live: usize,
    sparse: IdMap<WaveId, WaveStop>,
}

impl WaveStops {
    /// Whether `w`'s state is in the map (it stays there until it clears).
    fn in_map(&self, w: &WaveId) -> bool {
        !self.sparse.is_empty() && self.sparse.contains_key(w)
    }

    /// The dense slot of `w`, if the window holds it.
    fn slot(&self, w: &WaveId) -> Option<usize> {
        let i = w.0.checked_sub(self.base)?;
        (i < self.dense.len() as u64).then_some(i as usize)
    }

    fn get(&self, w: &WaveId) -> WaveStop {
        // A wave with a state in the map keeps it there until it clears,
        // even once the window covers its id.
        if !self.sparse.is_empty() {
            if let Some(s) = self.sparse.get(w) {
                return *s;
            }
        }
        match self.slot(w) {
            Some(i) => self.dense[i],
            None => WaveStop::default(),
        }
    }

    /// Changes a wave's state; an all-clear state leaves no map entry.
    fn update<R>(&mut self, w: WaveId, f: impl FnOnce(&mut WaveStop) -> R) -> R {
        if self.dense_live == 0 && !self.in_map(&w) && !is_storm_id(w.0) {
            // Nothing in the window: move it to start at this wave.
            self.base = w.0;
            self.dense.clear();
        }
        let i = w.0.wrapping_sub(self.base);
        if w.0 >= self.base && i < DENSE_STOPS && !is_storm_id(w.0) && !self.in_map(&w) {
            let i = i as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, WaveStop::default());
            }
            let s = &mut self.dense[i];
            let was = !s.is_clear();
            let r = f(s);
            let now = !s.is_clear();
            self.dense_live = self.dense_live + usize::from(now) - usize::from(was);
            return r;
        }
        use std::collections::hash_map::Entry;
        match self.sparse.entry(w) {
            Entry::Occupied(mut o) => {
                let r = f(o.get_mut());
                if o.get().is_clear() {
                    o.remove();
                }
                r
            }
            Entry::Vacant(v) => {
                let mut s = WaveStop::default();
                let r = f(&mut s);
                if !s.is_clear() {
                    v.insert(s);
                }
                r
            }
        }
    }

    /// The fetched stop's facts (`Some(None)` when they no longer hold).
    fn fetched(&self, w: &WaveId) -> Option<Option<StopFacts>> {
        self.get(w).fetched
    }

    fn is_fetched(&self, w: &WaveId) -> bool {
        self.fetched(w).is_some()
    }

    fn is_unprocessed(&self, w: &WaveId) -> bool {
        self.get(w).unprocessed
    }

    fn set_requested(&mut self, w: WaveId, on: bool) {
        self.update(w, |s| s.requested = on);
    }

    /// Marks a stop requested (one look-up, where a look-up first and an
    /// update after were two per wave of a stop-all); the state before,
    /// for the caller to check and undo.
    fn request(&mut self, w: WaveId) -> WaveStop {
        self.update(w, |s| {
            let before = *s;
            s.requested = true;
            before
        })
    }

    fn unfetch(&mut self, w: WaveId) {
        self.update(w, |s| s.fetched = None);
    }

    fn processed(&mut self, w: WaveId) {
        self.update(w, |s| s.unprocessed = false);
    }

    /// The client fetched the wave's WAVE_STOP: the request (if any) is
    /// complete, the event unprocessed.
    fn fetch(&mut self, w: WaveId, facts: Option<StopFacts>) {
        self.update(w, |s| {
            s.requested = false;
            s.fetched = Some(facts);
            s.unprocessed = true;
        });
    }

    /// The stop's facts no longer hold (a register was written).
    fn forget_facts(&mut self, w: WaveId) {
        if self.get(&w).fetched.is_some() {
            self.update(w, |s| {
                if let Some(f) = s.fetched.as_mut() {
                    *f = None;
                }
            });
        }
    }

    fn forget(&mut self, w: &WaveId) {
        if self.get(w).is_clear() {
            return;
        }
        self.update(*w, |s| *s = WaveStop::default());
    }
}

#[derive(Clone, Debug)]
struct EventRec {
    process: u64,
    kind: i32,
    wave: u64,
    breakpoint: u64,
    thread: usize,
    runtime: i32,
    queue: u64,
    /// Made from a storm event (counted in the storm report).
    storm: bool,
    /// A device WAVE_STOP's facts (none for a storm stop).
    facts: Option<StopFacts>,
}

/// [`Inbox`] and whether it has news for the library's caller: `poll`
/// runs once per event the client takes (10,000 in a stop-all of 10,000
/// waves) and looks at the inbox only when a thread posted to it, instead
/// of locking it each time.
#[derive(Default)]
struct Mailbox {
    /// Set after `hello` or `runtime_gone` was set (before the notifier is
    /// written); cleared by the reader before it locks the inbox.
    news: AtomicBool,
    inbox: Mutex<Inbox>,
}

impl Mailbox {
    /// The inbox. A change of `hello` or `runtime_gone` is followed, once
    /// the lock is dropped, by [`Mailbox::posted`].
    fn open(&self) -> std::sync::MutexGuard<'_, Inbox> {
        lock(&self.inbox)
    }

    /// Says that `hello` or `runtime_gone` changed (after the change).
    fn posted(&self) {
        self.news.store(true, Ordering::Release);
    }

    /// The news, if a thread posted since the last call: the runtime's
    /// HELLO and whether it went away.
    fn take_news(&self) -> (Option<(u64, UnixStream)>, bool) {
        // A post after the load is seen by the next call (its flag stays
        // set); one between the swap and the lock is seen now, and again
        // (as nothing) by the next call.
        if !self.news.load(Ordering::Acquire) || !self.news.swap(false, Ordering::AcqRel) {
            return (None, false);
        }
        let mut ib = lock(&self.inbox);
        (ib.hello.take(), std::mem::take(&mut ib.runtime_gone))
    }
}

/// What the listener / dispatch threads hand to the library caller.
#[derive(Default)]
struct Inbox {
    hello: Option<(u64, UnixStream)>,
    runtime_gone: bool,
    /// The runtime's acknowledgement was released (see [`HeldAck`]): later
    /// HELLOs are acknowledged by the listener itself.
    announced: bool,
}

/// The runtime acknowledgement, held from the processing of the RUNTIME
/// event until the client's next event pass.
///
/// The ACK releases the runtime, which then loads code objects and calls its
/// hook (`r_brk`) right away. A client may carry out `insert_breakpoint`
/// requests only at the end of its event pass (gdbmux queues them and plants
/// them once `next_pending_event` said NONE), so an ACK sent from
/// `event_processed` lets the runtime pass the hook before the breakpoint
/// exists: the load is never reported. The ACK therefore goes out at the
/// start of the first `next_pending_event` call after one that returned NONE
/// (the notifier is written then, so a client waiting on it comes back).
#[derive(Default)]
struct HeldAck {
    streams: Vec<UnixStream>,
    /// A NONE was returned since the RUNTIME event was processed.
    ready: bool,
}

enum Runtime {
    Down,
    /// RUNTIME event queued (at attach, or on HELLO); the runtime's
    /// connection, if any, is acknowledged when the event is processed.
    Enabling {
        r_debug: u64,
        stream: Option<UnixStream>,
        event: u64,
    },
    Up {
        r_debug: u64,
    },
}

struct Process {
    handle: u64,
    client: usize,
    pid: i32,
    notifier_r: OwnedFd,
    notifier_w: Arc<OwnedFd>,
    device: Arc<Device>,
    inbox: Arc<Mailbox>,
    listener_stop: Arc<AtomicBool>,
    listener: Option<std::thread::JoinHandle<()>>,
    runtime: Runtime,
    agent: u64,
    queue: u64,
    /// Events not yet returned to the client, with their records (a
    /// stop-all's 10,000 are read in the order they were queued).
    pending: VecDeque<(u64, EventRec)>,
    /// Per wave: stop requested, fetched (with its facts), unprocessed.
    stops: WaveStops,
    /// The device's wave index as last used: per-wave calls find their
    /// wave in it without a lock while the waves do not change.
    wave_index: Option<Arc<WaveIndex>>,
    code_objects: Vec<(u64, String, i64)>,
    announced: Vec<(String, i64)>,
    breakpoint: Option<(u64, u64)>,
    bp_resume: Option<(u64, usize, u64)>,
    /// `SIMGPU_QUIET_RESUME`: the resume (breakpoint, thread) waiting for
    /// the client's next pass; `true` once a pass has ended since.
    late_resume: Option<(u64, usize, bool)>,
    held_ack: Option<HeldAck>,
    /// The notifier is drained at the start of the client's next pass
    /// (set when a call returned NONE; see `poll`).
    drain_notifier: bool,
    last_lists: HashMap<&'static str, Vec<u64>>,
    /// The device's wave epoch when the last wave list was made: while it
    /// holds, the waves did not change (`list_unchanged_waves`).
    wave_list_epoch: Option<u64>,
    /// The event storm of `SIMGPU_STORM`, if one was asked for.
    storm: Option<StormRun>,
    /// `SIMGPU_FAIL` / `SIMGPU_STALL`, read at attach.
    faults: Faults,
    /// `SIMGPU_AGENTS`, read at attach.
    agents: Agents,
    /// Dispatch id → its architecture's handle (`dispatch_placement`),
    /// bounded by [`MAX_DISPATCH_ARCHS`].
    dispatch_archs: HashMap<u64, u64>,
    /// Active displaced steps: wave → its displaced stepping handle
    /// (one per wave; bounded by the process's buffer count,
    /// [`Faults::displaced_buffers`]: 1024 unless
    /// `SIMGPU_DISPLACED_BUFFERS` says otherwise; beyond,
    /// `displaced_stepping_start` answers BUFFER_NOT_AVAILABLE, and the
    /// contract says there is always at least one).
    displaced: HashMap<WaveId, u64>,
}

/// Where the displaced stepping buffers live: the library's own range of
/// the GPU address space, one 16-byte slot per handle. The device fetches
/// a displaced wave's instruction from its saved copy there, never from
/// memory.
const DISPLACED_BUFFERS: u64 = 0x7e00_0000_0000;

/// The gfx9 breakpoint instruction's size (`s_trap 1`): the saved bytes
/// `displaced_stepping_start` takes.
pub const BREAKPOINT_SIZE: usize = 4;

/// Most dispatch architectures remembered per process (cleared when full:
/// each is found again from the code object).
const MAX_DISPATCH_ARCHS: usize = 4096;

pub struct Library {
    client: Box<dyn Client>,
    next_handle: u64,
    processes: BTreeMap<u64, Process>,
    /// Events returned to the client and not yet processed (gdbmux
    /// processes each before it takes the next: the map stays small and
    /// cached, where it held every pending event of a stop-all, 10,000
    /// records of 80 bytes, each lookup a cache miss).
    events: IdMap<u64, EventRec>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wake(fd: &OwnedFd) {
    let _ = nix::unistd::write(fd.as_fd(), &[1u8]);
}

fn dev_status(e: DeviceError) -> Status {
    match e {
        DeviceError::InvalidWave(_) => st::ERROR_INVALID_WAVE_ID,
        DeviceError::WaveNotStopped(_) => st::ERROR_WAVE_NOT_STOPPED,
        DeviceError::WaveStopped(_) => st::ERROR_WAVE_STOPPED,
        _ => st::ERROR,
    }
}

/// `AMD_DBGAPI_DISPLACED_STEPPING_INFO_PROCESS`.
const DISPLACED_STEPPING_INFO_PROCESS: i32 = 1;

/// Handles of waves and dispatches are `process << 40 | device id`.
const SHIFT: u32 = 40;

/// Load address of storm producer 0's code object (producer `i`: `+ i << 32`).
const STORM_CODE_BASE: u64 = 0x7d00_0000_0000;

impl Library {
    pub fn new(client: Box<dyn Client>) -> Self {
        Self {
            client,
            next_handle: 16,
            processes: BTreeMap::new(),
            events: IdMap::default(),
        }
    }

    pub fn client(&self) -> &dyn Client {
        &*self.client
    }

    fn handle(&mut self) -> u64 {
        self.next_handle += 1;
        self.next_handle
    }

    fn proc(&mut self, p: u64) -> Result<&mut Process, Status> {
        self.processes
            .get_mut(&p)
            .ok_or(st::ERROR_INVALID_PROCESS_ID)
    }

    /// The processes a call on `p` covers: all for 0, else `p` (checked).
    fn targets(&mut self, p: u64) -> Result<Vec<u64>, Status> {
        if p == 0 {
            return Ok(self.processes.keys().copied().collect());
        }
        self.proc(p)?;
        Ok(vec![p])
    }

    /// The first process that `owns` an entity, else `err`.
    fn proc_where(&self, owns: impl Fn(&Process) -> bool, err: Status) -> Result<&Process, Status> {
        self.processes.values().find(|p| owns(p)).ok_or(err)
    }

    fn wave_proc(&mut self, w: u64) -> Result<(&mut Process, WaveId), Status> {
        let p = w >> SHIFT;
        let proc = self
            .processes
            .get_mut(&p)
            .ok_or(st::ERROR_INVALID_WAVE_ID)?;
        Ok((proc, WaveId(w & ((1 << SHIFT) - 1))))
    }

    pub fn attach(&mut self, client_process: usize) -> Result<u64, Status> {
        if self.processes.values().any(|p| p.client == client_process) {
            return Err(st::ERROR_ALREADY_ATTACHED);
        }
        let pid = self.client.os_pid(client_process)?;
        let handle = self.handle();
        if handle >= 1 << (64 - SHIFT) {
            return Err(st::ERROR);
        }
        let (r, w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|_| st::ERROR)?;
        let notifier_w = Arc::new(w);
        let storm_cfg = match std::env::var(STORM_ENV) {
            Ok(v) => match StormConfig::parse(&v) {
                Ok(c) => Some(c),
                Err(e) => {
                    self.client
                        .log(2, &format!("simgpu: {STORM_ENV} ignored: {e}"));
                    None
                }
            },
            Err(_) => None,
        };
        let (faults, fault_errors) = Faults::from_env();
        for e in &fault_errors {
            self.client.log(2, &format!("simgpu: {e} (ignored)"));
        }
        if faults.any() {
            self.client
                .log(2, &format!("simgpu: fault injection active: {faults:?}"));
        }
        let mut dev_cfg = DeviceConfig::default();
        if let Some(c) = &storm_cfg {
            dev_cfg.event_capacity = c.capacity;
        }
        let device = Arc::new(Device::new(Arc::new(ProcessMemory::new(pid)), dev_cfg));
        device.set_debug(true);
        let hook_fd = notifier_w.clone();
        device.set_event_hook(Some(Box::new(move || wake(&hook_fd))));
        let inbox = Arc::new(Mailbox::default());
        let listener_stop = Arc::new(AtomicBool::new(false));
        let name = socket_name(pid as u32);
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(|_| st::ERROR)?;
        let listener = UnixListener::bind_addr(&addr).map_err(|e| {
            self.client
                .log(2, &format!("simgpu: cannot listen on @{name}: {e}"));
            st::ERROR_RESTRICTION
        })?;
        let thread = {
            let inbox = inbox.clone();
            let device = device.clone();
            let stop = listener_stop.clone();
            let wfd = notifier_w.clone();
            std::thread::Builder::new()
                .name("simgpu-listen".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(mut s) = conn else { continue };
                        match Message::read_from(&mut s) {
                            Ok(Message {
                                kind: MessageKind::Hello,
                                value,
                            }) => {
                                let mut ib = inbox.open();
                                // A runtime that went away and came back
                                // before the client saw it go: its HELLO
                                // goes through a new RUNTIME event.
                                if ib.announced && !ib.runtime_gone {
                                    drop(ib);
                                    ack_and_serve(s, &device, Some((inbox.clone(), wfd.clone())));
                                } else {
                                    ib.hello = Some((value, s));
                                    drop(ib);
                                    inbox.posted();
                                    wake(&wfd);
                                }
                            }
                            _ => continue,
                        }
                    }
                })
                .map_err(|_| st::ERROR)?
        };
        let agent = self.handle();
        let queue = self.handle();
        let cp = client_process;
        self.processes.insert(
            handle,
            Process {
                handle,
                client: client_process,
                pid,
                notifier_r: r,
                notifier_w,
                device,
                inbox,
                listener_stop,
                listener: Some(thread),
                runtime: Runtime::Down,
                agent,
                queue,
                pending: VecDeque::new(),
                stops: WaveStops::default(),
                wave_index: None,
                code_objects: Vec::new(),
                announced: Vec::new(),
                breakpoint: None,
                bp_resume: None,
                late_resume: None,
                held_ack: None,
                drain_notifier: true,
                last_lists: HashMap::new(),
                wave_list_epoch: None,
                storm: None,
                faults,
                agents: Agents::from_env(),
                dispatch_archs: HashMap::new(),
                displaced: HashMap::new(),
            },
        );
        self.client
            .log(3, &format!("simgpu: attached to process {pid}"));
        if let (Some(cfg), Some(proc)) = (storm_cfg, self.processes.get_mut(&handle)) {
            self.client
                .log(3, &format!("simgpu storm: started {cfg:?}"));
            proc.storm = Some(StormRun::start(Storm::start(proc.device.clone(), cfg)));
        }
        // A runtime that is already up is announced right away (its r_brk is
        // set once initialized); it connects at its next load or launch.
        if let Some(r_debug) = gpu_target::sim::rendezvous::find_r_debug(pid) {
            if let Ok(r_brk) = self.read_u64(cp, r_debug + 16) {
                if r_brk != 0 {
                    self.runtime_enabling(handle, r_debug, r_brk, None);
                }
            }
        }
        Ok(handle)
    }

    /// Asks for the hook breakpoint and queues RUNTIME(LOADED_SUCCESS).
    fn runtime_enabling(&mut self, p: u64, r_debug: u64, r_brk: u64, stream: Option<UnixStream>) {
        let Ok(cp) = self.proc(p).map(|x| x.client) else {
            return;
        };
        let restricted = crate::restriction::reason();
        let bp = self.handle();
        let s = match &restricted {
            Some(why) => {
                // What AMD's library does for a runtime it refuses: a
                // warning, no r_brk breakpoint (`crate::restriction`).
                self.client.log(2, why);
                st::ERROR_RESTRICTION
            }
            None => self.client.insert_breakpoint(cp, r_brk, bp),
        };
        if s != st::SUCCESS && restricted.is_none() {
            self.client
                .log(2, &format!("simgpu: insert_breakpoint failed ({s})"));
        }
        let state = match restricted {
            Some(_) => runtime_state::LOADED_ERROR_RESTRICTION,
            None => runtime_state::LOADED_SUCCESS,
        };
        let ev = self.push_event(p, event_kind::RUNTIME, |e| e.runtime = state);
        if let Ok(proc) = self.proc(p) {
            if s == st::SUCCESS {
                proc.breakpoint = Some((bp, r_brk));
            }
            proc.runtime = Runtime::Enabling {
                r_debug,
                stream,
                event: ev,
            };
            wake(&proc.notifier_w);
        }
    }

    pub fn detach(&mut self, p: u64) -> Result<(), Status> {
        let mut proc = self
            .processes
            .remove(&p)
            .ok_or(st::ERROR_INVALID_PROCESS_ID)?;
        self.events.retain(|_, e| e.process != p);
        if let Some((bp, _)) = proc.breakpoint.take() {
            self.client.remove_breakpoint(proc.client, bp);
        }
        // Waves keep running, undebugged. Leaving debug mode closes the
        // event hand-off, which stops storm producers.
        // The header (`amd_dbgapi_process_detach`): "Any waves with a
        // displaced stepping buffer are stopped and the displaced stepping
        // buffer completed." A displaced wave left as it is would run on
        // from its buffer, which only this library serves: each is stopped
        // where it is, mid-step or not, and goes back to its breakpoint
        // (the step had not executed) or past the instruction (it had), in
        // one hold of its workgroup (`Device::stop_undisplace`). ROCgdb
        // completes its displaced steps before detaching; this covers a
        // client that did not.
        for (w, _) in proc.displaced.drain() {
            let _ = proc.device.stop_undisplace(w);
        }
        proc.device.set_debug(false);
        proc.device.set_event_hook(None);
        if let Some(run) = proc.storm.as_mut() {
            run.join();
        }
        for w in proc.device.wave_ids() {
            let _ = proc.device.resume_wave(w, ResumeMode::Normal);
        }
        proc.device.set_wave_creation_stopped(false);
        // A runtime still waiting for its ACK gets it and keeps its device.
        if let Runtime::Enabling {
            stream: Some(stream),
            ..
        } = std::mem::replace(&mut proc.runtime, Runtime::Down)
        {
            ack_and_serve(stream, &proc.device, None);
        }
        for stream in proc.held_ack.take().into_iter().flat_map(|h| h.streams) {
            ack_and_serve(stream, &proc.device, None);
        }
        if let Some((_, stream)) = proc.inbox.open().hello.take() {
            ack_and_serve(stream, &proc.device, None);
        }
        proc.listener_stop.store(true, Ordering::SeqCst);
        let name = socket_name(proc.pid as u32);
        if let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) {
            let _ = UnixStream::connect_addr(&addr);
        }
        if let Some(t) = proc.listener.take() {
            let _ = t.join();
        }
        Ok(())
    }

    pub fn finalize(&mut self) {
        let ps: Vec<u64> = self.processes.keys().copied().collect();
        for p in ps {
            let _ = self.detach(p);
        }
    }

    fn push_event(&mut self, p: u64, kind: i32, f: impl FnOnce(&mut EventRec)) -> u64 {
        let id = self.handle();
        let mut e = EventRec {
            process: p,
            kind,
            wave: 0,
            breakpoint: 0,
            thread: 0,
            runtime: 0,
            queue: 0,
            storm: false,
            facts: None,
        };
        f(&mut e);
        if let Some(proc) = self.processes.get_mut(&p) {
            proc.pending.push_back((id, e));
        }
        id
    }

    fn read_u64(&self, cp: usize, addr: u64) -> Result<u64, Status> {
        let mut b = [0u8; 8];
        if self.client.read_global(cp, addr, &mut b)? != 8 {
            return Err(st::ERROR_MEMORY_ACCESS);
        }
        Ok(u64::from_le_bytes(b))
    }

    /// Gathers device and runtime news into ABI events.
    fn poll(&mut self, p: u64) -> Result<(), Status> {
        let (cp, hello, gone) = {
            let proc = self.proc(p)?;
            // Once per pass of the client (its first call after a NONE),
            // before anything is looked at: a wake-up written later stays
            // readable, so nothing is missed, and a pass over 10,000 wave
            // stops makes one `read` instead of one per event.
            if std::mem::take(&mut proc.drain_notifier) {
                let mut buf = [0u8; 64];
                while matches!(nix::unistd::read(proc.notifier_r.as_raw_fd(), &mut buf), Ok(n) if n > 0)
                {
                }
            }
            let (hello, gone) = proc.inbox.take_news();
            (proc.client, hello, gone)
        };
        // An unload first: a HELLO that came with it belongs to the
        // next runtime lifetime.
        if gone {
            let proc = self.proc(p)?;
            let had = !proc.code_objects.is_empty();
            proc.runtime = Runtime::Down;
            // A new runtime connection goes through a new RUNTIME event.
            proc.inbox.open().announced = false;
            proc.held_ack = None;
            proc.code_objects.clear();
            proc.announced.clear();
            let bp = proc.breakpoint.take();
            if let Some((bp, _)) = bp {
                self.client.remove_breakpoint(cp, bp);
            }
            if had {
                self.push_event(p, event_kind::CODE_OBJECT_LIST_UPDATED, |_| {});
            }
            self.push_event(p, event_kind::RUNTIME, |e| {
                e.runtime = runtime_state::UNLOADED
            });
        }
        if let Some((r_debug, stream)) = hello {
            let proc = self.proc(p)?;
            match &mut proc.runtime {
                Runtime::Enabling { stream: slot, .. } => *slot = Some(stream),
                Runtime::Up { .. } => match proc.held_ack.as_mut() {
                    Some(held) => held.streams.push(stream),
                    None => {
                        let notify = Some((proc.inbox.clone(), proc.notifier_w.clone()));
                        ack_and_serve(stream, &proc.device, notify);
                    }
                },
                Runtime::Down => {
                    let r_brk = self.read_u64(cp, r_debug + 16)?;
                    self.runtime_enabling(p, r_debug, r_brk, Some(stream));
                }
            }
        }
        // Device events are pulled one at a time, and only while nothing
        // is pending for the client: the device's bounded hand-off stays the
        // only buffer of the device threads' events, so they (and storm
        // producers) feel backpressure instead of growing a queue here.
        // (The stops `wave_stop` made itself are queued here directly: one
        // per wave at most, as the stop requests that made them.)
        loop {
            let proc = self.proc(p)?;
            if !proc.pending.is_empty() || proc.faults.stall {
                break;
            }
            let ev = match proc.storm.as_mut().map(|r| r.stalled.take()) {
                Some(Some(held)) => {
                    if Self::storm_blocked(proc, &held) {
                        if let Some(run) = proc.storm.as_mut() {
                            run.stalled = Some(held);
                        }
                        break;
                    }
                    DeviceEvent::Storm(held)
                }
                _ => match proc.device.pop_event() {
                    Some(DeviceEvent::Storm(ev)) => {
                        if let Some(run) = proc.storm.as_mut() {
                            run.check(&ev);
                        }
                        DeviceEvent::Storm(ev)
                    }
                    Some(ev) => ev,
                    None => break,
                },
            };
            match ev {
                DeviceEvent::Storm(ev) => {
                    if Self::storm_blocked(self.proc(p)?, &ev) {
                        let proc = self.proc(p)?;
                        if let Some(run) = proc.storm.as_mut() {
                            run.stalls += 1;
                            run.stalled = Some(ev);
                        }
                        break;
                    }
                    self.storm_apply(p, ev)?;
                }
                ev => self.take_device_event(p, ev),
            }
        }
        self.storm_report(p);
        Ok(())
    }

    /// A device event of process `p` other than a storm's, taken from the
    /// hand-off (or from a stop request carried out at once,
    /// [`Library::wave_stop`]): its ABI event, if it has one, is queued.
    fn take_device_event(&mut self, p: u64, ev: DeviceEvent) {
        match ev {
            DeviceEvent::WaveStop {
                wave,
                reasons,
                pc,
                exec,
            } => {
                let h = p << SHIFT | wave.0;
                self.push_event(p, event_kind::WAVE_STOP, |e| {
                    e.wave = h;
                    e.facts = Some(StopFacts {
                        reason: reasons.0,
                        pc,
                        exec,
                    });
                });
            }
            DeviceEvent::WaveCommandTerminated { wave } => {
                let h = p << SHIFT | wave.0;
                if let Ok(proc) = self.proc(p) {
                    proc.stops.set_requested(wave, false);
                    // The wave exited: its displaced stepping buffer is
                    // released with it.
                    proc.displaced.remove(&wave);
                }
                self.push_event(p, event_kind::WAVE_COMMAND_TERMINATED, |e| e.wave = h);
            }
            DeviceEvent::DispatchDone { .. } | DeviceEvent::Storm(_) => {}
        }
    }

    /// A storm resume must wait until the client processed its wave's stop
    /// (a stopped wave stays stopped until then, as on a real device).
    fn storm_blocked(proc: &Process, ev: &StormEvent) -> bool {
        match (ev.kind, proc.storm.as_ref()) {
            (StormKind::WaveResume { wave }, Some(run)) => {
                run.waves.get(&wave).is_some_and(|w| w.stop_event.is_some())
            }
            _ => false,
        }
    }

    /// Applies a (checked) storm event: library state and ABI events.
    fn storm_apply(&mut self, p: u64, ev: StormEvent) -> Result<(), Status> {
        let proc = self.proc(p)?;
        let Some(run) = proc.storm.as_mut() else {
            return Ok(());
        };
        match ev.kind {
            StormKind::DispatchBegin { wave } => {
                run.waves.insert(
                    wave,
                    StormWave {
                        stopped: false,
                        reasons: StopReasons::NONE,
                        pc: StormRun::pc_at(0),
                        stops: 0,
                        stop_event: None,
                    },
                );
            }
            StormKind::WaveStop { wave, reasons } => {
                if !run.waves.contains_key(&wave) {
                    return Ok(());
                }
                let h = p << SHIFT | wave.0;
                let id = self.push_event(p, event_kind::WAVE_STOP, |e| {
                    e.wave = h;
                    e.storm = true;
                });
                let run = self.proc(p)?.storm.as_mut().ok_or(st::ERROR)?;
                if let Some(w) = run.waves.get_mut(&wave) {
                    w.stopped = true;
                    w.reasons = reasons;
                    w.stops += 1;
                    w.pc = StormRun::pc_at(w.stops);
                    w.stop_event = Some(id);
                }
            }
            StormKind::WaveResume { wave } => {
                // Already running when the client resumed it itself.
                if let Some(w) = run.waves.get_mut(&wave) {
                    w.stopped = false;
                }
                proc.stops.unfetch(wave);
            }
            StormKind::DispatchEnd { wave } => {
                run.waves.remove(&wave);
                proc.stops.forget(&wave);
                let h = p << SHIFT | wave.0;
                self.push_event(p, event_kind::WAVE_COMMAND_TERMINATED, |e| {
                    e.wave = h;
                    e.storm = true;
                });
            }
            StormKind::CodeObjects { generation } => {
                if let Some(g) = run.code_generation.get_mut(ev.producer as usize) {
                    *g = generation;
                }
                self.push_event(p, event_kind::CODE_OBJECT_LIST_UPDATED, |e| e.storm = true);
            }
        }
        Ok(())
    }

    /// Logs the storm report once the storm is complete.
    fn storm_report(&mut self, p: u64) {
        let Some(proc) = self.processes.get_mut(&p) else {
            return;
        };
        let pending = proc.pending.len();
        let Some(run) = proc.storm.as_mut() else {
            return;
        };
        if !run.due(pending) {
            return;
        }
        let report = run.take_report(proc.device.event_stats());
        self.client
            .log(3, &format!("simgpu storm: report {report}"));
    }

    /// `SIMGPU_QUIET_RESUME`: queue the late resume once a pass ended
    /// since its code-object update was processed.
    fn release_late_resume(&mut self, p: u64) -> Result<(), Status> {
        let proc = self.proc(p)?;
        if let Some((bp, thread, true)) = proc.late_resume {
            proc.late_resume = None;
            self.push_event(p, event_kind::BREAKPOINT_RESUME, |e| {
                e.breakpoint = bp;
                e.thread = thread;
            });
        }
        Ok(())
    }

    pub fn next_pending_event(&mut self, p: u64) -> Result<(u64, i32), Status> {
        // One process (the usual call, once per event of a 10,000-wave
        // stop): no list is allocated.
        let all;
        let one;
        let ps: &[u64] = if p == 0 {
            all = self.targets(p)?;
            &all
        } else {
            self.proc(p)?;
            one = [p];
            &one
        };
        for &p in ps {
            self.release_held_ack(p)?;
            self.release_late_resume(p)?;
        }
        for &p in ps {
            self.poll(p)?;
            let proc = self.proc(p)?;
            if let Some((id, e)) = proc.pending.pop_front() {
                let (kind, wave, storm, facts) = (e.kind, e.wave, e.storm, e.facts);
                self.events.insert(id, e);
                if storm {
                    if let Some(run) = self.proc(p)?.storm.as_mut() {
                        count_kind(&mut run.delivered, kind);
                    }
                }
                if kind == event_kind::WAVE_STOP {
                    let proc = self.proc(p)?;
                    let w = WaveId(wave & ((1 << SHIFT) - 1));
                    proc.stops.fetch(w, facts);
                }
                return Ok((id, kind));
            }
        }
        // End of the client's pass: held acknowledgements go out on its next
        // call (after it carried out its breakpoint requests).
        for &p in ps {
            let proc = self.proc(p)?;
            proc.drain_notifier = true;
            if let Some((_, _, ended)) = proc.late_resume.as_mut() {
                // Quietly: no notifier write (`SIMGPU_QUIET_RESUME`).
                *ended = true;
            }
            if let Some(held) = proc.held_ack.as_mut() {
                if !held.ready {
                    held.ready = true;
                    wake(&proc.notifier_w);
                }
            }
        }
        Ok((0, event_kind::NONE))
    }

    /// Sends the runtime acknowledgement held since an earlier pass.
    fn release_held_ack(&mut self, p: u64) -> Result<(), Status> {
        let proc = self.proc(p)?;
        if !proc.held_ack.as_ref().is_some_and(|h| h.ready) {
            return Ok(());
        }
        let Some(held) = proc.held_ack.take() else {
            return Ok(());
        };
        let late = {
            let mut ib = proc.inbox.open();
            ib.announced = true;
            ib.hello.take()
        };
        for s in held.streams.into_iter().chain(late.map(|h| h.1)) {
            let notify = Some((proc.inbox.clone(), proc.notifier_w.clone()));
            ack_and_serve(s, &proc.device, notify);
        }
        Ok(())
    }

    pub fn event_info(&self, ev: u64, q: i32) -> Result<Info, Status> {
        let e = self.events.get(&ev).ok_or(st::ERROR_INVALID_EVENT_ID)?;
        use info::event as q_;
        Ok(match q {
            q_::PROCESS => Info::Handle(e.process),
            q_::KIND => Info::I32(e.kind),
            q_::WAVE
                if matches!(
                    e.kind,
                    event_kind::WAVE_STOP | event_kind::WAVE_COMMAND_TERMINATED
                ) =>
            {
                Info::Handle(e.wave)
            }
            q_::BREAKPOINT if e.kind == event_kind::BREAKPOINT_RESUME => Info::Handle(e.breakpoint),
            q_::CLIENT_THREAD if e.kind == event_kind::BREAKPOINT_RESUME => Info::Usize(e.thread),
            q_::RUNTIME_STATE if e.kind == event_kind::RUNTIME => Info::I32(e.runtime),
            q_::QUEUE if e.kind == event_kind::QUEUE_ERROR => Info::Handle(e.queue),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    pub fn event_processed(&mut self, ev: u64) -> Result<(), Status> {
        // One lookup, and the record moved out rather than copied.
        let e = match self.events.entry(ev) {
            std::collections::hash_map::Entry::Occupied(o) => o.remove(),
            _ => {
                for proc in self.processes.values_mut() {
                    if let Some(run) = proc.storm.as_mut() {
                        run.invalid_acks += 1;
                    }
                }
                return Err(st::ERROR_INVALID_EVENT_ID);
            }
        };
        let p = e.process;
        if e.storm {
            self.storm_processed(p, &e, ev);
        }
        match e.kind {
            event_kind::WAVE_STOP => {
                if let Ok(proc) = self.proc(p) {
                    proc.stops.processed(WaveId(e.wave & ((1 << SHIFT) - 1)));
                }
            }
            event_kind::RUNTIME => {
                let proc = self.proc(p)?;
                if matches!(&proc.runtime, Runtime::Enabling { event, .. } if *event == ev) {
                    if let Runtime::Enabling {
                        r_debug, stream, ..
                    } = std::mem::replace(&mut proc.runtime, Runtime::Down)
                    {
                        proc.runtime = Runtime::Up { r_debug };
                        // Released on the client's next pass (see `HeldAck`).
                        proc.held_ack = Some(HeldAck {
                            streams: stream.into_iter().collect(),
                            ready: false,
                        });
                    }
                }
            }
            event_kind::CODE_OBJECT_LIST_UPDATED => {
                let proc = self.proc(p)?;
                if let Some((bp, thread, _)) = proc.bp_resume.take() {
                    if proc.faults.quiet_resume > 0 {
                        proc.faults.quiet_resume -= 1;
                        proc.late_resume = Some((bp, thread, false));
                        return Ok(());
                    }
                    self.push_event(p, event_kind::BREAKPOINT_RESUME, |e| {
                        e.breakpoint = bp;
                        e.thread = thread;
                    });
                    if let Ok(proc) = self.proc(p) {
                        wake(&proc.notifier_w);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A storm event was processed: count it; a processed stop releases its
    /// wave's resume (the client is woken to pull it).
    fn storm_processed(&mut self, p: u64, e: &EventRec, ev: u64) {
        let Some(proc) = self.processes.get_mut(&p) else {
            return;
        };
        let Some(run) = proc.storm.as_mut() else {
            return;
        };
        count_kind(&mut run.processed, e.kind);
        if e.kind == event_kind::WAVE_STOP {
            let w = WaveId(e.wave & ((1 << SHIFT) - 1));
            if let Some(sw) = run.waves.get_mut(&w) {
                if sw.stop_event == Some(ev) {
                    sw.stop_event = None;
                }
            }
            if run.stalled.is_some() {
                wake(&proc.notifier_w);
            }
        }
        self.storm_report(p);
    }

    /// Reads a NUL-terminated string of at most `max` bytes, one page at a
    /// time: a client may answer a read that crosses into an unmapped page
    /// with an error instead of a short count, and a string may end right
    /// before such a page.
    fn read_c_string(&self, cp: usize, addr: u64, max: usize) -> Result<Vec<u8>, Status> {
        let mut out = Vec::new();
        let mut a = addr;
        while out.len() < max {
            let page_left = (0x1000 - (a & 0xfff)) as usize;
            let mut chunk = vec![0u8; page_left.min(max - out.len())];
            let n = match self.client.read_global(cp, a, &mut chunk) {
                Ok(n) => n.min(chunk.len()),
                Err(e) if out.is_empty() => return Err(e),
                Err(_) => 0,
            };
            if let Some(end) = chunk[..n].iter().position(|&c| c == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
            if n < chunk.len() {
                break;
            }
            a += n as u64;
        }
        Ok(out)
    }

    /// Reads the runtime's link map: (URI, load address) in list order.
    fn read_link_map(&self, cp: usize, r_debug: u64) -> Result<(i32, Vec<(String, i64)>), Status> {
        let mut b = [0u8; 4];
        self.client.read_global(cp, r_debug + 24, &mut b)?;
        let state = i32::from_le_bytes(b);
        let mut out = Vec::new();
        let mut node = self.read_u64(cp, r_debug + 8)?;
        while node != 0 && out.len() < 4096 {
            let l_addr = self.read_u64(cp, node)?;
            let l_name = self.read_u64(cp, node + 8)?;
            let name = self.read_c_string(cp, l_name, 4096)?;
            out.push((String::from_utf8_lossy(&name).into_owned(), l_addr as i64));
            node = self.read_u64(cp, node + 24)?;
        }
        Ok((state, out))
    }

    pub fn report_breakpoint_hit(&mut self, bp: u64, thread: usize) -> Result<i32, Status> {
        let p = self
            .proc_where(
                |pr| pr.breakpoint.map(|b| b.0) == Some(bp),
                st::ERROR_INVALID_BREAKPOINT_ID,
            )?
            .handle;
        let (cp, r_debug) = {
            let proc = self.proc(p)?;
            match proc.runtime {
                Runtime::Up { r_debug } | Runtime::Enabling { r_debug, .. } => {
                    (proc.client, r_debug)
                }
                Runtime::Down => return Ok(gpu_target::dbgapi::abi::BREAKPOINT_ACTION_RESUME),
            }
        };
        let (state, list) = match self.read_link_map(cp, r_debug) {
            Ok(x) => x,
            Err(e) => {
                self.client.log(
                    2,
                    &format!("simgpu: cannot read the link map at a hook hit ({e})"),
                );
                return Ok(gpu_target::dbgapi::abi::BREAKPOINT_ACTION_RESUME);
            }
        };
        let proc = self.proc(p)?;
        if state != RT_CONSISTENT || list == proc.announced {
            return Ok(gpu_target::dbgapi::abi::BREAKPOINT_ACTION_RESUME);
        }
        proc.announced = list;
        let ev = self.push_event(p, event_kind::CODE_OBJECT_LIST_UPDATED, |_| {});
        let proc = self.proc(p)?;
        proc.bp_resume = Some((bp, thread, ev));
        wake(&proc.notifier_w);
        Ok(gpu_target::dbgapi::abi::BREAKPOINT_ACTION_HALT)
    }

    fn list_out(
        proc: &mut Process,
        key: &'static str,
        items: Vec<u64>,
        want_changed: bool,
    ) -> ListOut {
        let changed = proc.last_lists.get(key) != Some(&items);
        if changed {
            proc.last_lists.insert(key, items.clone());
        }
        if want_changed && !changed {
            ListOut {
                items: Vec::new(),
                changed: false,
            }
        } else {
            ListOut {
                items,
                changed: true,
            }
        }
    }

    pub fn list(
        &mut self,
        p: u64,
        what: &'static str,
        want_changed: bool,
    ) -> Result<ListOut, Status> {
        let ps = self.targets(p)?;
        if let ([p], "wave", true) = (ps.as_slice(), what, want_changed) {
            if let Some(unchanged) = self.list_unchanged_waves(*p)? {
                return Ok(unchanged);
            }
        }
        let mut all = Vec::new();
        for p in &ps {
            let items = self.list_one(*p, what)?;
            all.extend(items);
        }
        if ps.len() == 1 {
            let proc = self.proc(ps[0])?;
            return Ok(Self::list_out(proc, what, all, want_changed));
        }
        Ok(ListOut {
            items: all,
            changed: true,
        })
    }

    /// A wave list with `changed` asked for, answered without building the
    /// list when the device's waves did not change since the last one
    /// (10,000 waves: the list, its comparison with the last one and the
    /// copy cost most of a listing). Records the epoch the next list is
    /// made at. `None`: build the list.
    fn list_unchanged_waves(&mut self, p: u64) -> Result<Option<ListOut>, Status> {
        let proc = self.proc(p)?;
        proc.faults.check("wave_list")?;
        let epoch = proc.device.waves_epoch();
        let same = proc.storm.is_none()
            && proc.wave_list_epoch == Some(epoch)
            && proc.last_lists.contains_key("wave");
        // Read before the list is made: a change meanwhile only costs the
        // next call a full list.
        proc.wave_list_epoch = Some(epoch);
        Ok(same.then_some(ListOut {
            items: Vec::new(),
            changed: false,
        }))
    }

    fn list_one(&mut self, p: u64, what: &str) -> Result<Vec<u64>, Status> {
        if what == "wave" {
            self.proc(p)?.faults.check("wave_list")?;
        }
        match what {
            "agent" => {
                let proc = self.proc(p)?;
                Ok(proc.agents.list(proc.handle, proc.agent))
            }
            "queue" => {
                let proc = self.proc(p)?;
                Ok(proc.agents.queues(proc.handle, proc.queue))
            }
            "wave" | "dispatch" => {
                let proc = self.proc(p)?;
                let mut ids: Vec<u64> = if what == "wave" {
                    proc.device.resident_waves().iter().map(|w| w.0).collect()
                } else {
                    proc.device.dispatches().iter().map(|d| d.id.0).collect()
                };
                // A storm wave is the one wave of its dispatch (same id).
                if let Some(run) = &proc.storm {
                    let mut storm: Vec<u64> = run.waves.keys().map(|w| w.0).collect();
                    storm.sort_unstable();
                    ids.extend(storm);
                }
                Ok(ids.into_iter().map(|id| p << SHIFT | id).collect())
            }
            _ => {
                // code objects
                let proc = self.proc(p)?;
                let storm = proc.storm.as_ref().map(|r| {
                    r.code_generation
                        .iter()
                        .enumerate()
                        .filter(|(_, g)| **g > 0)
                        .map(|(i, g)| {
                            (
                                format!(
                                    "file:///simgpu-storm/producer{i}.hsaco#offset={g}&size=4096"
                                ),
                                (STORM_CODE_BASE + ((i as u64) << 32)) as i64,
                            )
                        })
                        .collect::<Vec<_>>()
                });
                let (cp, r_debug) = match (storm.is_some(), &proc.runtime) {
                    (false, Runtime::Up { r_debug }) => (proc.client, *r_debug),
                    _ => (proc.client, 0),
                };
                // An exited or unreadable process has no code objects.
                let list = match storm {
                    Some(list) => Ok(list),
                    None if r_debug == 0 => return Ok(Vec::new()),
                    None => self.read_link_map(cp, r_debug).map(|(_, l)| l),
                };
                let list = match list {
                    Ok(list) => list,
                    Err(e) => {
                        self.client
                            .log(2, &format!("simgpu: cannot read the link map ({e})"));
                        Vec::new()
                    }
                };
                let mut out = Vec::new();
                let mut next = Vec::new();
                for (uri, addr) in list {
                    let known = self
                        .proc(p)?
                        .code_objects
                        .iter()
                        .find(|(_, u, a)| *u == uri && *a == addr)
                        .map(|c| c.0);
                    let h = match known {
                        Some(h) => h,
                        None => self.handle(),
                    };
                    out.push(h);
                    next.push((h, uri, addr));
                }
                self.proc(p)?.code_objects = next;
                Ok(out)
            }
        }
    }

    pub fn code_object_info(&self, co: u64, q: i32) -> Result<Info, Status> {
        for proc in self.processes.values() {
            if let Some((_, uri, addr)) = proc.code_objects.iter().find(|c| c.0 == co) {
                return Ok(match q {
                    info::code_object::PROCESS => Info::Handle(proc.handle),
                    info::code_object::URI_NAME => Info::Str(uri.clone()),
                    info::code_object::LOAD_ADDRESS => Info::I64(*addr),
                    _ => return Err(st::ERROR_INVALID_ARGUMENT),
                });
            }
        }
        Err(st::ERROR_INVALID_CODE_OBJECT_ID)
    }

    pub fn process_info(&mut self, p: u64, q: i32) -> Result<Info, Status> {
        let proc = self.proc(p)?;
        use info::process as q_;
        Ok(match q {
            q_::NOTIFIER => Info::I32(proc.notifier_r.as_raw_fd()),
            q_::WATCHPOINT_COUNT => Info::Usize(0),
            q_::WATCHPOINT_SHARE
            | q_::PRECISE_MEMORY_SUPPORTED
            | q_::PRECISE_ALU_EXCEPTIONS_SUPPORTED => Info::U32(0),
            q_::OS_ID => Info::I32(proc.pid),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    pub fn set_wave_creation(&mut self, p: u64, stop: bool) -> Result<(), Status> {
        let proc = self.proc(p)?;
        proc.device.set_wave_creation_stopped(stop);
        Ok(())
    }

    pub fn check_process(&mut self, p: u64) -> Result<(), Status> {
        if p == 0 {
            return Ok(());
        }
        self.proc(p).map(|_| ())
    }

    pub fn agent_info(&self, a: u64, q: i32) -> Result<Info, Status> {
        if let Some((p, index)) = crate::agents::split_handle(a) {
            return self.extra_agent_info(p, index, a, q);
        }
        let proc = self.proc_where(|p| p.agent == a, st::ERROR_INVALID_AGENT_ID)?;
        use info::agent as q_;
        Ok(match q {
            q_::PROCESS => Info::Handle(proc.handle),
            q_::NAME => Info::Str("AMD Instinct MI210 (simgpu)".into()),
            q_::ARCHITECTURE => Info::Handle(ARCH_HANDLE),
            q_::STATE => Info::U32(1),
            q_::PCI_DOMAIN | q_::PCI_SLOT => Info::U16(0),
            q_::PCI_VENDOR_ID => Info::U32(0x1002),
            q_::PCI_DEVICE_ID => Info::U32(0x740f),
            q_::EXECUTION_UNIT_COUNT => Info::Usize(104 * 4),
            q_::MAX_WAVES_PER_EXECUTION_UNIT => Info::Usize(8),
            q_::OS_ID => Info::U64(1),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    /// `agent_get_info` of an agent of `SIMGPU_AGENTS` other than the
    /// simulated device (`crate::agents`).
    fn extra_agent_info(&self, p: u64, index: usize, a: u64, q: i32) -> Result<Info, Status> {
        let proc = self.proc_where(|pr| pr.handle == p, st::ERROR_INVALID_AGENT_ID)?;
        let extra = proc.agents.extra(p, a).ok_or(st::ERROR_INVALID_AGENT_ID)?;
        crate::agents::info(extra, index, p, q, |q| self.agent_info(proc.agent, q))
    }

    pub fn queue_info(&self, qh: u64, q: i32) -> Result<Info, Status> {
        if let Some(agent) = crate::agents::split_queue(qh) {
            return self.extra_queue_info(agent, q);
        }
        let proc = self.proc_where(|p| p.queue == qh, st::ERROR_INVALID_QUEUE_ID)?;
        use info::queue as q_;
        Ok(match q {
            q_::AGENT => Info::Handle(proc.agent),
            q_::PROCESS => Info::Handle(proc.handle),
            q_::ARCHITECTURE => Info::Handle(ARCH_HANDLE),
            q_::TYPE | q_::STATE => Info::U32(1),
            q_::ERROR_REASON => Info::U32(0),
            q_::ADDRESS | q_::SIZE => Info::U64(0),
            q_::OS_ID => Info::U64(1),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    pub fn dispatch_info(&mut self, d: u64, q: i32) -> Result<Info, Status> {
        let p = d >> SHIFT;
        if self.processes.contains_key(&p) {
            self.dispatch_placement(p, d & ((1 << SHIFT) - 1));
        }
        let proc = self
            .processes
            .get(&p)
            .ok_or(st::ERROR_INVALID_DISPATCH_ID)?;
        let id = d & ((1 << SHIFT) - 1);
        if is_storm_id(id) {
            return Self::storm_dispatch_info(proc, id, q);
        }
        let desc = proc
            .device
            .dispatches()
            .into_iter()
            .find(|x| x.id.0 == id)
            .ok_or(st::ERROR_INVALID_DISPATCH_ID)?;
        let place = Self::known_placement(proc, id);
        if let Some(i) = Self::dispatch_identity(proc, id, q, place) {
            return Ok(i);
        }
        use info::dispatch as q_;
        Ok(match q {
            q_::BARRIER => Info::U32(1),
            q_::ACQUIRE_FENCE | q_::RELEASE_FENCE => Info::U32(2),
            q_::GRID_DIMENSIONS => Info::U32(if desc.grid[2] > 1 {
                3
            } else if desc.grid[1] > 1 {
                2
            } else {
                1
            }),
            q_::WORKGROUP_SIZES => Info::U16x3(desc.wg),
            q_::GRID_SIZES => Info::U32x3(desc.grid),
            q_::PRIVATE_SEGMENT_SIZE => Info::U64(desc.kd.private_segment_fixed_size as u64),
            q_::GROUP_SEGMENT_SIZE => Info::U64(desc.group_segment as u64),
            q_::KERNEL_ARGUMENT_SEGMENT_ADDRESS => Info::U64(desc.kernarg),
            q_::KERNEL_DESCRIPTOR_ADDRESS => Info::U64(desc.kd_addr),
            q_::KERNEL_CODE_ENTRY_ADDRESS => Info::U64(desc.entry),
            q_::KERNEL_COMPLETION_ADDRESS => Info::U64(0),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    /// (agent, queue, architecture handle) of wave `wh`: those of its
    /// dispatch.
    fn wave_placement(&mut self, wh: u64) -> Result<(u64, u64, u64), Status> {
        let (proc, w) = self.wave_proc(wh)?;
        let p = proc.handle;
        let dispatch = Self::sim_wave(proc, w)?.dispatch.0;
        Ok(self.dispatch_placement(p, dispatch))
    }

    /// (agent, queue, architecture handle) of dispatch `id` of process
    /// `p`: the architecture of the code object its kernel descriptor lies
    /// in, and the agent that runs that architecture (found once per
    /// dispatch, from the code object's ELF header in process memory).
    /// Without an agent running gfx908 (`crate::agents`), every dispatch is
    /// the simulated gfx90a device's, as it always was.
    fn dispatch_placement(&mut self, p: u64, id: u64) -> (u64, u64, u64) {
        let Some(proc) = self.processes.get(&p) else {
            return (0, 0, ARCH_HANDLE);
        };
        let gfx908 = proc
            .agents
            .runner(proc.handle, proc.agent, &crate::archs::GFX908);
        if gfx908.is_none() || is_storm_id(id) {
            return (proc.agent, proc.queue, ARCH_HANDLE);
        }
        if !proc.dispatch_archs.contains_key(&id) {
            let kd = proc
                .device
                .dispatches()
                .iter()
                .find(|d| d.id.0 == id)
                .map(|d| d.kd_addr);
            let arch = kd
                .and_then(|kd| self.code_object_arch(p, kd))
                .unwrap_or(&crate::archs::GFX90A);
            if let Some(proc) = self.processes.get_mut(&p) {
                if proc.dispatch_archs.len() >= MAX_DISPATCH_ARCHS {
                    proc.dispatch_archs.clear();
                }
                proc.dispatch_archs.insert(id, arch.handle);
            }
        }
        match self.processes.get(&p) {
            Some(proc) => Self::known_placement(proc, id),
            None => (0, 0, ARCH_HANDLE),
        }
    }

    /// [`Self::dispatch_placement`] as already found (the simulated
    /// device's when it was not).
    fn known_placement(proc: &Process, id: u64) -> (u64, u64, u64) {
        let arch = proc
            .dispatch_archs
            .get(&id)
            .and_then(|h| crate::archs::by_handle(*h))
            .unwrap_or(&crate::archs::GFX90A);
        match proc.agents.runner(proc.handle, proc.agent, arch) {
            Some(a) if a != proc.agent => (a, crate::agents::queue_of(a), arch.handle),
            _ => (proc.agent, proc.queue, ARCH_HANDLE),
        }
    }

    /// The architecture of the loaded code object holding `addr`.
    fn code_object_arch(&self, p: u64, addr: u64) -> Option<&'static SimArch> {
        let proc = self.processes.get(&p)?;
        let Runtime::Up { r_debug } = proc.runtime else {
            return None;
        };
        let (_, list) = self.read_link_map(proc.client, r_debug).ok()?;
        let base = list
            .iter()
            .map(|(_, a)| *a as u64)
            .filter(|a| *a <= addr)
            .max()?;
        let mut h = [0u8; 64];
        let n = self.client.read_global(proc.client, base, &mut h).ok()?;
        crate::archs::of_elf_header(&h[..n.min(64)])
    }

    /// `queue_get_info` of the queue of an extra agent that runs
    /// dispatches.
    fn extra_queue_info(&self, agent: u64, q: i32) -> Result<Info, Status> {
        let (p, _) = crate::agents::split_handle(agent).ok_or(st::ERROR_INVALID_QUEUE_ID)?;
        let proc = self.proc_where(|pr| pr.handle == p, st::ERROR_INVALID_QUEUE_ID)?;
        let extra = proc
            .agents
            .extra(p, agent)
            .ok_or(st::ERROR_INVALID_QUEUE_ID)?;
        let arch = crate::archs::by_name(&extra.arch)
            .filter(|_| extra.runs)
            .ok_or(st::ERROR_INVALID_QUEUE_ID)?;
        use info::queue as q_;
        match q {
            q_::AGENT => Ok(Info::Handle(agent)),
            q_::ARCHITECTURE => Ok(Info::Handle(arch.handle)),
            q_::OS_ID => Ok(Info::U64(2)),
            _ => self.queue_info(proc.queue, q),
        }
    }

    /// A wave as the device sees it: the device's, or a storm wave.
    fn sim_wave(proc: &mut Process, w: WaveId) -> Result<SimWaveInfo, Status> {
        if !is_storm_id(w.0) {
            let ix = proc.device.wave_index(&mut proc.wave_index);
            return proc.device.wave_info_in(ix, w).map_err(dev_status);
        }
        let sw = proc
            .storm
            .as_ref()
            .and_then(|r| r.waves.get(&w))
            .ok_or(st::ERROR_INVALID_WAVE_ID)?;
        Ok(SimWaveInfo {
            id: w,
            dispatch: DispatchId(w.0),
            state: if sw.stopped {
                WaveState::Stopped
            } else {
                WaveState::Running
            },
            stop_reason: sw.reasons,
            pc: sw.pc,
            exec: u64::MAX,
            workgroup_coord: [(w.0 & 0x0fff_ffff) as u32, 0, 0],
            wave_in_group: 0,
        })
    }

    /// The attributes that identify dispatch `id` of `proc` (where it runs
    /// and which packet it is), or `None` for any other query.
    fn dispatch_identity(
        proc: &Process,
        id: u64,
        q: i32,
        (agent, queue, arch): (u64, u64, u64),
    ) -> Option<Info> {
        use info::dispatch as q_;
        Some(match q {
            q_::QUEUE => Info::Handle(queue),
            q_::AGENT => Info::Handle(agent),
            q_::PROCESS => Info::Handle(proc.handle),
            q_::ARCHITECTURE => Info::Handle(arch),
            q_::OS_QUEUE_PACKET_ID => Info::U64(id),
            _ => return None,
        })
    }

    /// A storm dispatch (one wave of the same id): identity only.
    fn storm_dispatch_info(proc: &Process, id: u64, q: i32) -> Result<Info, Status> {
        if !proc
            .storm
            .as_ref()
            .is_some_and(|r| r.waves.contains_key(&WaveId(id)))
        {
            return Err(st::ERROR_INVALID_DISPATCH_ID);
        }
        let place = (proc.agent, proc.queue, ARCH_HANDLE);
        if let Some(i) = Self::dispatch_identity(proc, id, q, place) {
            return Ok(i);
        }
        use info::dispatch as q_;
        Ok(match q {
            q_::GRID_DIMENSIONS => Info::U32(1),
            q_::WORKGROUP_SIZES => Info::U16x3([64, 1, 1]),
            q_::GRID_SIZES => Info::U32x3([64, 1, 1]),
            _ => return Err(st::ERROR_NOT_AVAILABLE),
        })
    }

    /// The state a client sees: STOP only once the WAVE_STOP was fetched.
    fn visible_state(proc: &Process, w: WaveId, dev: WaveState) -> i32 {
        match dev {
            WaveState::Stopped if proc.stops.is_fetched(&w) => wave_state::STOP,
            WaveState::SingleStep => wave_state::SINGLE_STEP,
            _ => wave_state::RUN,
        }
    }

    pub fn wave_info(&mut self, wh: u64, q: i32) -> Result<Info, Status> {
        use info::wave as q_;
        let (agent, queue, arch) = match q {
            q_::AGENT | q_::QUEUE | q_::ARCHITECTURE => self.wave_placement(wh)?,
            _ => (0, 0, 0),
        };
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("wave_info")?;
        // A stopped wave's stop facts, as its stop left them: its
        // simulator state is not touched again (a stop-all asks these of
        // every wave).
        if let Some(Some(f)) = proc.stops.fetched(&w) {
            match q {
                q_::STATE => return Ok(Info::I32(wave_state::STOP)),
                q_::STOP_REASON => return Ok(Info::U32(f.reason)),
                q_::PC => return Ok(Info::U64(f.pc)),
                q_::EXEC_MASK => return Ok(Info::U64(f.exec)),
                _ => {}
            }
        }
        let i = Self::sim_wave(proc, w)?;
        let state = Self::visible_state(proc, w, i.state);
        let stopped = state == wave_state::STOP;

        let need_stop = |v: Info| {
            if stopped {
                Ok(v)
            } else {
                Err(st::ERROR_WAVE_NOT_STOPPED)
            }
        };
        Ok(match q {
            q_::STATE => Info::I32(state),
            q_::STOP_REASON => need_stop(Info::U32(i.stop_reason.0))?,
            q_::WATCHPOINTS => need_stop(Info::EmptyWatchpoints)?,
            q_::WORKGROUP => return Err(st::ERROR_NOT_AVAILABLE),
            q_::DISPATCH => Info::Handle(proc.handle << SHIFT | i.dispatch.0),
            q_::QUEUE => Info::Handle(queue),
            q_::AGENT => Info::Handle(agent),
            q_::PROCESS => Info::Handle(proc.handle),
            q_::ARCHITECTURE => Info::Handle(arch),
            q_::PC => need_stop(Info::U64(i.pc))?,
            q_::EXEC_MASK => need_stop(Info::U64(i.exec))?,
            q_::WORKGROUP_COORD => Info::U32x3(i.workgroup_coord),
            q_::WAVE_NUMBER_IN_WORKGROUP => Info::U32(i.wave_in_group),
            q_::LANE_COUNT => Info::Usize(64),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    pub fn wave_stop(&mut self, wh: u64) -> Result<(), Status> {
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("wave_stop")?;
        // Only a wave whose WAVE_STOP was fetched can look stopped to the
        // client (`visible_state`): any other wave goes straight to the
        // device, whose stop request finds the wave once (a state query
        // first cost a second lookup and workgroup lock per wave of a
        // stop-all). The request is marked first and undone where refused.
        let stop = proc.stops.request(w);
        let refuse = |proc: &mut Process, e: Status| {
            if !stop.requested {
                proc.stops.set_requested(w, false);
            }
            Err(e)
        };
        if stop.fetched.is_some() || is_storm_id(w.0) {
            let i = match Self::sim_wave(proc, w) {
                Ok(i) => i,
                Err(e) => return refuse(proc, e),
            };
            if Self::visible_state(proc, w, i.state) == wave_state::STOP {
                return refuse(proc, st::ERROR_WAVE_STOPPED);
            }
        }
        if stop.requested {
            return Err(st::ERROR_WAVE_OUTSTANDING_STOP);
        }
        if is_storm_id(w.0) {
            // Storm waves stop when their producer says so.
            return refuse(proc, st::ERROR_NOT_IMPLEMENTED);
        }
        if proc.faults.stall {
            // Accepted (if the wave exists), never completed: the device
            // is stalled.
            if let Err(e) = Self::sim_wave(proc, w) {
                return refuse(proc, e);
            }
            return Ok(());
        }
        let ix = proc.device.wave_index(&mut proc.wave_index);
        match proc.device.stop_wave_taking(ix, w) {
            // Stopped here, at once: the library is the hand-off's consumer,
            // and takes the event as it would have popped it.
            Ok(Some(ev)) => {
                let p = proc.handle;
                let was_idle = proc.pending.is_empty();
                self.take_device_event(p, ev);
                if was_idle {
                    // As a device thread's first event after the client saw
                    // none: the notifier says there is one.
                    if let Ok(proc) = self.proc(p) {
                        wake(&proc.notifier_w);
                    }
                }
                Ok(())
            }
            // Left to the device thread holding the workgroup, or stopped
            // already (its WAVE_STOP is pending): that event completes the
            // request.
            Ok(None) | Err(DeviceError::WaveStopped(_)) => Ok(()),
            Err(e) => refuse(proc, dev_status(e)),
        }
    }

    pub fn wave_resume(&mut self, wh: u64, mode: i32, exceptions: u32) -> Result<(), Status> {
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("wave_resume")?;
        let i = Self::sim_wave(proc, w)?;
        if Self::visible_state(proc, w, i.state) != wave_state::STOP {
            return Err(st::ERROR_WAVE_NOT_STOPPED);
        }
        if proc.stops.is_unprocessed(&w) {
            return Err(st::ERROR_WAVE_NOT_RESUMABLE);
        }
        if let Some(&ds) = proc.displaced.get(&w) {
            // While displaced: one single step from the buffer, no more.
            let at_buffer = i.pc == Self::displaced_buffer(ds);
            if mode != gpu_target::dbgapi::abi::RESUME_MODE_SINGLE_STEP
                || exceptions != 0
                || !at_buffer
            {
                return Err(st::ERROR_RESUME_DISPLACED_STEPPING);
            }
        }
        if is_storm_id(w.0) {
            if exceptions != 0 {
                return Err(st::ERROR_NOT_IMPLEMENTED);
            }
            if let Some(sw) = proc.storm.as_mut().and_then(|r| r.waves.get_mut(&w)) {
                sw.stopped = false;
            }
            proc.stops.unfetch(w);
            return Ok(());
        }
        if exceptions != 0 {
            // The runtime sees the exception: the dispatch is abandoned and
            // the queue reports an error (the runtime's launch fails).
            use gpu_target::dbgapi::abi::exceptions as x;
            let reason = if exceptions & (x::WAVE_MEMORY_VIOLATION | x::WAVE_ADDRESS_ERROR) != 0 {
                StopReasons::MEMORY_VIOLATION
            } else if exceptions & x::WAVE_ILLEGAL_INSTRUCTION != 0 {
                StopReasons::ILLEGAL_INSTRUCTION
            } else {
                StopReasons::TRAP
            };
            proc.device
                .abort_dispatch_of(w, reason)
                .map_err(dev_status)?;
            proc.stops.unfetch(w);
            let (p, queue) = (proc.handle, proc.queue);
            self.push_event(p, event_kind::QUEUE_ERROR, |e| e.queue = queue);
            if let Ok(proc) = self.proc(p) {
                wake(&proc.notifier_w);
            }
            return Ok(());
        }
        let mode = match mode {
            gpu_target::dbgapi::abi::RESUME_MODE_NORMAL => ResumeMode::Normal,
            gpu_target::dbgapi::abi::RESUME_MODE_SINGLE_STEP => ResumeMode::SingleStep,
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        };
        let ix = proc.device.wave_index(&mut proc.wave_index);
        proc.device
            .resume_wave_in(ix, w, mode)
            .map_err(dev_status)?;
        proc.stops.unfetch(w);
        Ok(())
    }

    /// The buffer address of displaced stepping handle `ds`.
    fn displaced_buffer(ds: u64) -> u64 {
        DISPLACED_BUFFERS + (ds & 0xffff_ffff) * 16
    }

    /// `amd_dbgapi_displaced_stepping_start`: the stopped wave `wh` gets a
    /// buffer holding `saved` (the bytes its breakpoint replaced at its
    /// pc) and the rest of the instruction; its pc moves there. Memory,
    /// the breakpoint included, is not touched. Any error changes nothing.
    pub fn displaced_stepping_start(&mut self, wh: u64, saved: &[u8]) -> Result<u64, Status> {
        let ds = self.handle();
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("displaced_stepping_start")?;
        let i = Self::sim_wave(proc, w)?;
        if Self::visible_state(proc, w, i.state) != wave_state::STOP {
            return Err(st::ERROR_WAVE_NOT_STOPPED);
        }
        if is_storm_id(w.0) {
            return Err(st::ERROR_NOT_SUPPORTED);
        }
        if proc.displaced.contains_key(&w) {
            return Err(st::ERROR_DISPLACED_STEPPING_ACTIVE);
        }
        let buffers = proc.faults.displaced_buffers();
        if proc.displaced.len() >= buffers {
            // Waves that ended without an event released theirs.
            let dev = proc.device.clone();
            proc.displaced.retain(|w, _| dev.wave_info(*w).is_ok());
            if proc.displaced.len() >= buffers {
                return Err(st::ERROR_DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE);
            }
        }
        proc.device
            .displace(w, Self::displaced_buffer(ds), saved)
            .map_err(|e| match e {
                DeviceError::Displaced(_) => st::ERROR_DISPLACED_STEPPING_ACTIVE,
                DeviceError::IllegalInstruction(_) => st::ERROR_ILLEGAL_INSTRUCTION,
                e => dev_status(e),
            })?;
        // The stop's pc no longer holds.
        proc.stops.forget_facts(w);
        proc.displaced.insert(w, ds);
        Ok(ds)
    }

    /// `amd_dbgapi_displaced_stepping_complete`: releases wave `wh`'s
    /// buffer `ds`; the wave's pc goes back to the breakpoint if the step
    /// did not execute, past the instruction (or to its branch target) if
    /// it did.
    pub fn displaced_stepping_complete(&mut self, wh: u64, ds: u64) -> Result<(), Status> {
        if !self
            .processes
            .values()
            .any(|p| p.displaced.values().any(|&d| d == ds))
        {
            return Err(st::ERROR_INVALID_DISPLACED_STEPPING_ID);
        }
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("displaced_stepping_complete")?;
        let i = Self::sim_wave(proc, w)?;
        if Self::visible_state(proc, w, i.state) != wave_state::STOP {
            return Err(st::ERROR_WAVE_NOT_STOPPED);
        }
        if proc.displaced.get(&w) != Some(&ds) {
            return Err(st::ERROR_INVALID_ARGUMENT_COMPATIBILITY);
        }
        proc.device.undisplace(w).map_err(dev_status)?;
        proc.stops.forget_facts(w);
        proc.displaced.remove(&w);
        Ok(())
    }

    /// `amd_dbgapi_displaced_stepping_get_info`.
    pub fn displaced_stepping_info(&self, ds: u64, q: i32) -> Result<Info, Status> {
        let proc = self
            .processes
            .values()
            .find(|p| p.displaced.values().any(|&d| d == ds))
            .ok_or(st::ERROR_INVALID_DISPLACED_STEPPING_ID)?;
        match q {
            DISPLACED_STEPPING_INFO_PROCESS => Ok(Info::Handle(proc.handle)),
            _ => Err(st::ERROR_INVALID_ARGUMENT),
        }
    }

    pub fn wave_register_list(&mut self, wh: u64) -> Result<Vec<u64>, Status> {
        let (_, _, arch) = self.wave_placement(wh)?;
        let arch = crate::archs::by_handle(arch).unwrap_or(&crate::archs::GFX90A);
        let (proc, w) = self.wave_proc(wh)?;
        let regs = crate::archs::registers(arch);
        let vgprs = if is_storm_id(w.0) {
            Self::sim_wave(proc, w)?;
            256
        } else {
            proc.device
                .with_stopped_regs(w, |r| r.vgpr.len())
                .or_else(|e| match e {
                    DeviceError::WaveNotStopped(_) => Ok(256),
                    e => Err(dev_status(e)),
                })?
        };
        let vgprs = match Self::sim_wave(proc, w) {
            Ok(i) if !is_storm_id(w.0) && arch.handle != ARCH_HANDLE => proc
                .device
                .dispatches()
                .iter()
                .find(|d| d.id == i.dispatch)
                .map_or(vgprs, |d| crate::archs::vgprs(arch, d.kd.rsrc1, vgprs)),
            _ => vgprs,
        };
        Ok(regs
            .iter()
            .enumerate()
            .filter(|(_, r)| !matches!(r, Reg::Vgpr(n) if *n as usize >= vgprs))
            .map(|(i, _)| crate::archs::register_handle(arch, i))
            .collect())
    }

    fn reg(r: u64) -> Result<Reg, Status> {
        crate::archs::split_register(r)
            .map(|(_, reg)| reg)
            .ok_or(st::ERROR_INVALID_REGISTER_ID)
    }

    pub fn register_info(&self, r: u64, q: i32) -> Result<Info, Status> {
        let d = Self::reg(r)?.desc();
        use info::register as q_;
        Ok(match q {
            q_::ARCHITECTURE => Info::Handle(r >> 32),
            q_::NAME => Info::Str(d.name),
            q_::SIZE => Info::U64(d.size as u64),
            q_::TYPE => Info::Str(d.type_name),
            q_::DWARF => Info::U64(d.dwarf.ok_or(st::ERROR_NOT_AVAILABLE)?),
            q_::PROPERTIES => Info::U32(0),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    /// The gfx90a address spaces in the order AMD's library 0.77 lists them.
    pub fn architecture_address_space_list(&self, a: u64) -> Result<Vec<u64>, Status> {
        if crate::archs::by_handle(a).is_none() {
            return Err(st::ERROR_INVALID_ARCHITECTURE_ID);
        }
        Ok(ADDRESS_SPACES.iter().map(|s| s.0).collect())
    }

    /// `amd_dbgapi_address_space_get_info`, answered as AMD's library 0.77
    /// answers on gfx90a.
    pub fn address_space_info(&self, h: u64, q: i32) -> Result<Info, Status> {
        let &(_, name, bits, null, dwarf) = ADDRESS_SPACES
            .iter()
            .find(|s| s.0 == h)
            .ok_or(st::ERROR_INVALID_ADDRESS_SPACE_ID)?;
        use info::address_space as q_;
        Ok(match q {
            q_::NAME => Info::Str(name.into()),
            q_::ADDRESS_SIZE => Info::U64(bits),
            q_::NULL_ADDRESS => Info::U64(null),
            q_::ACCESS => Info::I32(q_::ACCESS_ALL),
            q_::DWARF => Info::U64(dwarf),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    pub fn architecture_register_list(&self, a: u64) -> Result<Vec<u64>, Status> {
        let arch = crate::archs::by_handle(a).ok_or(st::ERROR_INVALID_ARCHITECTURE_ID)?;
        Ok((0..crate::archs::registers(arch).len())
            .map(|i| crate::archs::register_handle(arch, i))
            .collect())
    }

    pub fn wave_register_exists(&mut self, wh: u64, r: u64) -> Result<bool, Status> {
        let list = self.wave_register_list(wh)?;
        Self::reg(r)?;
        Ok(list.contains(&r))
    }

    pub fn read_register(
        &mut self,
        wh: u64,
        r: u64,
        off: usize,
        out: &mut [u8],
    ) -> Result<(), Status> {
        let reg = Self::reg(r)?;
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("read_register")?;
        if let Some(bytes) = Self::read_fetched_register(proc, w, reg)? {
            return Self::copy_register(&bytes, off, out);
        }
        let i = Self::sim_wave(proc, w)?;
        if Self::visible_state(proc, w, i.state) != wave_state::STOP {
            return Err(st::ERROR_WAVE_NOT_STOPPED);
        }
        if is_storm_id(w.0) {
            return Err(st::ERROR_REGISTER_NOT_AVAILABLE);
        }
        let bytes = proc
            .device
            .with_stopped_regs(w, |regs| reg.read(regs))
            .map_err(dev_status)?
            .ok_or(st::ERROR_REGISTER_NOT_AVAILABLE)?;
        Self::copy_register(&bytes, off, out)
    }

    /// A register of a wave whose WAVE_STOP was fetched (the only waves
    /// that can look stopped, see `visible_state`), with one device lookup:
    /// the device checks that it is stopped as it reads (`jThreadsInfo`
    /// reads a few registers of every wave). `None` for any other wave.
    fn read_fetched_register(
        proc: &Process,
        w: WaveId,
        reg: Reg,
    ) -> Result<Option<Vec<u8>>, Status> {
        if is_storm_id(w.0) || !proc.stops.is_fetched(&w) {
            return Ok(None);
        }
        proc.device
            .with_stopped_regs(w, |regs| reg.read(regs))
            .map_err(dev_status)?
            .ok_or(st::ERROR_REGISTER_NOT_AVAILABLE)
            .map(Some)
    }

    fn copy_register(bytes: &[u8], off: usize, out: &mut [u8]) -> Result<(), Status> {
        let src = bytes
            .get(off..off + out.len())
            .ok_or(st::ERROR_INVALID_ARGUMENT_COMPATIBILITY)?;
        out.copy_from_slice(src);
        Ok(())
    }

    pub fn write_register(
        &mut self,
        wh: u64,
        r: u64,
        off: usize,
        data: &[u8],
    ) -> Result<(), Status> {
        let reg = Self::reg(r)?;
        let (proc, w) = self.wave_proc(wh)?;
        proc.faults.check("write_register")?;
        let i = Self::sim_wave(proc, w)?;
        if Self::visible_state(proc, w, i.state) != wave_state::STOP {
            return Err(st::ERROR_WAVE_NOT_STOPPED);
        }
        let size = reg.desc().size;
        if off + data.len() > size {
            return Err(st::ERROR_INVALID_ARGUMENT_COMPATIBILITY);
        }
        if is_storm_id(w.0) {
            return Err(st::ERROR_REGISTER_NOT_AVAILABLE);
        }
        // The stop's facts may no longer hold (a PC rewound past a
        // breakpoint, EXEC written): queries read the wave again.
        proc.stops.forget_facts(w);
        proc.device
            .with_stopped_regs(w, |regs| reg.write(regs, off, data))
            .map_err(dev_status)?
            .ok_or(st::ERROR_REGISTER_NOT_AVAILABLE)
    }

    pub fn architecture_info(&self, a: u64, q: i32) -> Result<Info, Status> {
        let arch = crate::archs::by_handle(a).ok_or(st::ERROR_INVALID_ARCHITECTURE_ID)?;
        use info::architecture as q_;
        Ok(match q {
            q_::NAME => Info::Str(arch.name.into()),
            q_::ELF_AMDGPU_MACHINE => Info::U32(arch.mach),
            q_::LARGEST_INSTRUCTION_SIZE => Info::U64(8),
            q_::MINIMUM_INSTRUCTION_ALIGNMENT => Info::U64(4),
            q_::BREAKPOINT_INSTRUCTION_SIZE => Info::U64(4),
            q_::BREAKPOINT_INSTRUCTION => Info::Bytes(vec![0x01, 0x00, 0x92, 0xbf]),
            q_::BREAKPOINT_INSTRUCTION_PC_ADJUST => Info::U64(4),
            q_::PC_REGISTER => Info::Handle(crate::archs::register_handle(
                arch,
                crate::archs::registers(arch)
                    .iter()
                    .position(|r| *r == Reg::Pc)
                    .unwrap_or(0),
            )),
            _ => return Err(st::ERROR_INVALID_ARGUMENT),
        })
    }

    /// Memory access. `wave` 0 = none.
    #[allow(clippy::too_many_arguments)]
    pub fn memory(
        &mut self,
        p: u64,
        wave: u64,
        lane: u32,
        aspace: u64,
        addr: u64,
        read: Option<&mut [u8]>,
        write: Option<&[u8]>,
    ) -> Result<usize, Status> {
        if p != 0 {
            let call = if read.is_some() {
                "read_memory"
            } else {
                "write_memory"
            };
            self.proc(p)?.faults.check(call)?;
        }
        match aspace {
            ASPACE_GLOBAL | ASPACE_GENERIC => {
                let proc = self.proc(p)?;
                if let Some(buf) = read {
                    let n = proc.device.memory().read_partial(addr, buf);
                    if n == 0 && !buf.is_empty() {
                        return Err(st::ERROR_MEMORY_ACCESS);
                    }
                    Ok(n)
                } else if let Some(data) = write {
                    proc.device
                        .write_memory(addr, data)
                        .map_err(|_| st::ERROR_MEMORY_ACCESS)?;
                    Ok(data.len())
                } else {
                    Err(st::ERROR_INVALID_ARGUMENT)
                }
            }
            ASPACE_LOCAL => {
                if wave == 0 {
                    return Err(st::ERROR_INVALID_WAVE_ID);
                }
                let (proc, w) = self.wave_proc(wave)?;
                let a = u32::try_from(addr).map_err(|_| st::ERROR_MEMORY_ACCESS)?;
                let n = if let Some(buf) = read {
                    proc.device.read_lds(w, a, buf).map_err(dev_status)?
                } else if let Some(data) = write {
                    proc.device.write_lds(w, a, data).map_err(dev_status)?
                } else {
                    0
                };
                if n == 0 {
                    return Err(st::ERROR_MEMORY_ACCESS);
                }
                Ok(n)
            }
            ASPACE_PRIVATE_LANE | ASPACE_PRIVATE_WAVE => {
                if wave == 0 {
                    return Err(st::ERROR_INVALID_WAVE_ID);
                }
                let lane = if aspace == ASPACE_PRIVATE_LANE {
                    if lane as usize >= gpu_target::sim::wave::LANES {
                        return Err(st::ERROR_INVALID_LANE_ID);
                    }
                    Some(lane as usize)
                } else {
                    None
                };
                let (proc, w) = self.wave_proc(wave)?;
                let n = proc
                    .device
                    .xfer_private(w, lane, addr, read, write)
                    .map_err(dev_status)?;
                if n == 0 {
                    return Err(st::ERROR_MEMORY_ACCESS);
                }
                Ok(n)
            }
            _ => Err(st::ERROR_INVALID_ADDRESS_SPACE_ID),
        }
    }
}

/// Counts an ABI event of a storm by kind.
fn count_kind(k: &mut crate::storm::KindCounts, kind: i32) {
    match kind {
        event_kind::WAVE_STOP => k.wave_stop += 1,
        event_kind::WAVE_COMMAND_TERMINATED => k.terminated += 1,
        _ => k.code_objects += 1,
    }
}

/// Acknowledges a runtime's HELLO and serves its dispatches.
fn ack_and_serve(
    mut stream: UnixStream,
    device: &Arc<Device>,
    notify: Option<(Arc<Mailbox>, Arc<OwnedFd>)>,
) {
    let ack = Message {
        kind: MessageKind::Ack,
        value: 0,
    };
    if stream.write_all(&ack.encode()).is_ok() {
        serve_runtime(stream, device.clone(), notify);
    }
}

/// Serves the runtime's dispatches on the device until it disconnects.
fn serve_runtime(
    mut stream: UnixStream,
    device: Arc<Device>,
    notify: Option<(Arc<Mailbox>, Arc<OwnedFd>)>,
) {
    let _ = std::thread::Builder::new()
        .name("simgpu-queue".into())
        .spawn(move || {
            while let Ok(m) = Message::read_from(&mut stream) {
                if m.kind != MessageKind::Dispatch {
                    continue;
                }
                let status = match device.submit(m.value) {
                    Ok(id) => outcome_code(device.wait(id, None)),
                    Err(_) => 1,
                };
                let done = Message {
                    kind: MessageKind::Done,
                    value: status,
                };
                if stream.write_all(&done.encode()).is_err() {
                    break;
                }
            }
            if let Some((inbox, fd)) = notify {
                inbox.open().runtime_gone = true;
                inbox.posted();
                wake(&fd);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_target::sim::memory::BufferMemory;
    use gpu_target::sim::memory::GlobalMemory;

    /// A client whose memory reads are all or nothing (no short counts).
    struct StrictClient(BufferMemory);

    impl Client for StrictClient {
        fn alloc_copy(&self, _: &[u8]) -> Result<usize, Status> {
            Err(st::ERROR)
        }
        fn free(&self, _: usize) {}
        fn os_pid(&self, _: usize) -> Result<i32, Status> {
            Ok(1)
        }
        fn insert_breakpoint(&self, _: usize, _: u64, _: u64) -> Status {
            st::SUCCESS
        }
        fn remove_breakpoint(&self, _: usize, _: u64) -> Status {
            st::SUCCESS
        }
        fn read_global(&self, _: usize, addr: u64, buf: &mut [u8]) -> Result<usize, Status> {
            self.0
                .read(addr, buf)
                .map(|()| buf.len())
                .map_err(|_| st::ERROR_MEMORY_ACCESS)
        }
        fn log(&self, _: i32, _: &str) {}
    }

    #[test]
    fn name_ending_right_before_an_unmapped_page() {
        let mem = BufferMemory::new();
        let name = b"file:///k.hsaco#offset=0&size=1\0";
        let mut page = vec![0xaau8; 0x1000];
        page[0x1000 - name.len()..].copy_from_slice(name);
        mem.map(0x1000, page);
        mem.map(0x4000, vec![0xaa; 0x1000]);
        let lib = Library::new(Box::new(StrictClient(mem)));
        let addr = 0x2000 - name.len() as u64;
        let got = lib.read_c_string(0, addr, 4096).unwrap();
        assert_eq!(got, &name[..name.len() - 1]);
        // Unterminated up to the hole: what was readable.
        let got = lib.read_c_string(0, 0x4ff0, 4096).unwrap();
        assert_eq!(got, [0xaa; 0x10]);
        // Nothing readable at all: an error.
        assert_eq!(
            lib.read_c_string(0, 0x3000, 4096),
            Err(st::ERROR_MEMORY_ACCESS)
        );
    }

    #[test]
    fn wave_stops_window_moves_and_keeps_every_state() {
        let facts = StopFacts {
            reason: 0,
            pc: 0x1000,
            exec: u64::MAX,
        };
        let mut t = WaveStops::default();
        // A stop-all of waves 100..110: each requested, fetched, processed.
        for w in 100..110 {
            assert!(!t.request(WaveId(w)).requested);
            assert!(t.request(WaveId(w)).requested, "an outstanding request");
        }
        assert_eq!((t.base, t.dense_live, t.sparse.len()), (100, 10, 0));
        // Below the window: the map.
        t.set_requested(WaveId(50), true);
        assert_eq!(t.sparse.len(), 1);
        for w in 100..110 {
            t.fetch(WaveId(w), Some(facts));
            t.processed(WaveId(w));
        }
        assert_eq!(t.fetched(&WaveId(105)), Some(Some(facts)));
        t.forget_facts(WaveId(105));
        assert_eq!(t.fetched(&WaveId(105)), Some(None));
        assert!(t.is_fetched(&WaveId(109)) && !t.is_unprocessed(&WaveId(109)));
        for w in 100..110 {
            t.unfetch(WaveId(w));
        }
        assert_eq!(t.dense_live, 0);
        // Nothing left in the window: it moves to the next wave with a
        // state, here a later launch's; wave 50 keeps its state in the map,
        // also once the window covers its id.
        t.set_requested(WaveId(70_000), true);
        assert_eq!(t.base, 70_000);
        t.set_requested(WaveId(70_000), false);
        t.set_requested(WaveId(40), true);
        assert_eq!(t.base, 40);
        assert!(t.get(&WaveId(50)).requested && t.get(&WaveId(40)).requested);
        t.forget(&WaveId(50));
        t.forget(&WaveId(40));
        assert!(t.sparse.is_empty() && t.dense_live == 0);
        assert!(t.get(&WaveId(50)).is_clear() && t.get(&WaveId(40)).is_clear());
        // Outside the window's reach: the map.
        t.set_requested(WaveId(40), true);
        t.set_requested(WaveId(40 + DENSE_STOPS), true);
        assert_eq!((t.dense_live, t.sparse.len()), (1, 1));
    }
}
