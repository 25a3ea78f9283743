//! The simulated device: dispatches, workgroups, waves and the device
//! threads that run them.
//!
//! A dispatch is submitted as the address of an HSA kernel dispatch packet
//! (`hsa_kernel_dispatch_packet_t`) in global memory, exactly what a real
//! runtime writes into an AQL queue. Workgroups become resident while there
//! is room ([`DeviceConfig::max_resident_waves`]) and wave creation is not
//! stopped. Device threads take a runnable workgroup, run each runnable wave
//! for a quantum, and put it back. A workgroup is run by one thread at a time,
//! so its LDS needs no lock; `s_barrier` parks a wave until every live wave of
//! its workgroup has arrived.
//!
//! In debug mode ([`Device::set_debug`]) a wave that traps or faults stops and
//! a [`DeviceEvent::WaveStop`] is queued; otherwise the dispatch is aborted and
//! [`Device::wait`] reports why. Waves keep running while the host process is
//! stopped; only [`Device::stop_wave`] stops them.
//!
//! Events reach the debugger through a bounded [`Handoff`]: a device thread
//! that finds it full waits (backpressure, never loss), outside every device
//! lock, so the consumer can always make progress. The consumer pops with
//! [`Device::pop_event`] / [`Device::take_events`]; the event hook runs when
//! a push finds the consumer armed (it saw the queue empty).

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::atomic::fence;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::RwLock;
use std::sync::TryLockError;
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;

use thiserror::Error;

use super::elf::KernelDescriptor;
use super::elf::KERNEL_DESCRIPTOR_SIZE;
use super::handoff::Handoff;
use super::handoff::HandoffStats;
use super::handoff::Wake;
use super::icache::ICache;
use super::memory::GlobalMemory;
use super::memory::MemFault;
use super::storm::StormEvent;
use super::wave::Ctx;
use super::wave::Step;
use super::wave::WaveRegs;
use super::wave::LANES;
use crate::model::DispatchId;
use crate::model::ResumeMode;
use crate::model::StopReasons;
use crate::model::WaveId;
use crate::model::WaveState;

/// Size of `hsa_kernel_dispatch_packet_t`.
pub const DISPATCH_PACKET_SIZE: usize = 64;

/// Encodes an `hsa_kernel_dispatch_packet_t` (header: kernel dispatch,
/// system-scope fences; setup: dimensions).
pub fn encode_dispatch_packet(
    kd_addr: u64,
    kernarg: u64,
    grid: [u32; 3],
    wg: [u16; 3],
    group_segment: u32,
) -> [u8; DISPATCH_PACKET_SIZE] {
    let mut p = [0u8; DISPATCH_PACKET_SIZE];
    // HSA_PACKET_TYPE_KERNEL_DISPATCH (2) | barrier | acquire/release system.
    let header: u16 = 2 | 1 << 8 | 2 << 9 | 2 << 11;
    let dims: u16 = if grid[2] > 1 {
        3
    } else if grid[1] > 1 {
        2
    } else {
        1
    };
    p[0..2].copy_from_slice(&header.to_le_bytes());
    p[2..4].copy_from_slice(&dims.to_le_bytes());
    for i in 0..3 {
        p[4 + 2 * i..6 + 2 * i].copy_from_slice(&wg[i].to_le_bytes());
        p[12 + 4 * i..16 + 4 * i].copy_from_slice(&grid[i].to_le_bytes());
    }
    p[28..32].copy_from_slice(&group_segment.to_le_bytes());
    p[32..40].copy_from_slice(&kd_addr.to_le_bytes());
    p[40..48].copy_from_slice(&kernarg.to_le_bytes());
    p
}

/// Device parameters.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Device threads.
    pub threads: usize,
    /// Most waves resident at once.
    pub max_resident_waves: usize,
    /// Instructions a wave runs before its workgroup goes back in the queue.
    pub quantum: u32,
    /// Capacity of the event hand-off to the debugger; device threads wait
    /// while it is full.
    pub event_capacity: usize,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(1, 8),
            max_resident_waves: 16384,
            quantum: 4096,
            event_capacity: 1024,
        }
    }
}

/// Why a dispatch could not be started.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DeviceError {
    /// Reading the packet or descriptor failed.
    #[error("reading the dispatch: {0}")]
    Memory(#[from] MemFault),
    /// The packet is malformed.
    #[error("invalid dispatch packet: {0}")]
    InvalidPacket(&'static str),
    /// The wave does not exist (any more).
    #[error("invalid wave {0}")]
    InvalidWave(WaveId),
    /// The wave must be stopped.
    #[error("wave {0} is not stopped")]
    WaveNotStopped(WaveId),
    /// The wave is already stopped.
    #[error("wave {0} is already stopped")]
    WaveStopped(WaveId),
    /// The wave already steps an instruction out of line.
    #[error("wave {0} is already displaced")]
    Displaced(WaveId),
    /// The wave steps no instruction out of line.
    #[error("wave {0} is not displaced")]
    NotDisplaced(WaveId),
    /// The bytes at this address decode to no instruction.
    #[error("no instruction at {0:#x}")]
    IllegalInstruction(u64),
}

/// How a dispatch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchOutcome {
    /// Every wave reached `s_endpgm`.
    Completed,
    /// A wave stopped without a debugger; the dispatch was abandoned.
    Aborted {
        /// Why the wave stopped.
        reason: StopReasons,
        /// Its PC.
        pc: u64,
        /// The faulting address for memory violations.
        fault_addr: Option<u64>,
    },
}

/// What the device tells a debugger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceEvent {
    /// A wave stopped (trap, fault, step done, or requested).
    WaveStop {
        /// Which.
        wave: WaveId,
        /// Why.
        reasons: StopReasons,
        /// Its PC at the stop.
        pc: u64,
        /// Its EXEC mask at the stop.
        exec: u64,
    },
    /// A wave with a pending stop or step request terminated.
    WaveCommandTerminated {
        /// Which.
        wave: WaveId,
    },
    /// A dispatch finished.
    DispatchDone {
        /// Which.
        dispatch: DispatchId,
        /// How.
        outcome: DispatchOutcome,
    },
    /// A synthetic event of an event storm ([`super::storm`]), injected
    /// with [`Device::inject_event`] by storm producer threads.
    Storm(StormEvent),
}

/// A dispatch as the device runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchDesc {
    /// Handle.
    pub id: DispatchId,
    /// Address of the AQL packet.
    pub packet_addr: u64,
    /// Address of the kernel descriptor.
    pub kd_addr: u64,
    /// The kernel descriptor.
    pub kd: KernelDescriptor,
    /// First instruction.
    pub entry: u64,
    /// Kernel arguments.
    pub kernarg: u64,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub wg: [u16; 3],
    /// LDS bytes per workgroup (descriptor + packet).
    pub group_segment: u32,
    /// Workgroups per dimension.
    pub num_wgs: [u32; 3],
    /// Waves per workgroup.
    pub waves_per_wg: u32,
}

impl DispatchDesc {
    fn total_wgs(&self) -> u64 {
        self.num_wgs.iter().map(|&n| n as u64).product()
    }
}

/// A snapshot of one wave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimWaveInfo {
    /// Handle.
    pub id: WaveId,
    /// Dispatch.
    pub dispatch: DispatchId,
    /// Running or stopped (as the device sees it).
    pub state: WaveState,
    /// Stop reasons when stopped.
    pub stop_reason: StopReasons,
    /// PC.
    pub pc: u64,
    /// EXEC.
    pub exec: u64,
    /// Workgroup coordinates.
    pub workgroup_coord: [u32; 3],
    /// Wave index in the workgroup.
    pub wave_in_group: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Running,
    Stopped,
    Done,
}

const _: () = {
    assert!(std::mem::offset_of!(SimWave, regs) == 64);
    assert!(std::mem::size_of::<SimWave>().is_multiple_of(64));
};

/// A cache line's alignment, as a zero-sized field ([`SimWave`]).
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct LineStart;

/// A wave. Its control state (run, stop reason, stepping) comes first, in
/// a cache line of its own: the interpreter only reads it while the wave
/// runs, so the debugger's stop request (which reads and writes it for
/// every wave of a stop-all) does not take that line from the device
/// thread's cache, where the registers written at every instruction (the
/// pc, SCC) used to share it with `run`.
#[repr(C)]
struct SimWave {
    run: Run,
    at_barrier: bool,
    single_step: bool,
    stop_reason: StopReasons,
    index: u32,
    id: WaveId,
    /// The instruction this wave steps out of line ([`Device::displace`]):
    /// boxed, so a wave without one costs a null pointer.
    displaced: Option<Box<Displaced>>,
    /// Private memory, lane-major (`private_segment_fixed_size` per lane).
    scratch: Vec<u8>,
    /// The registers start on the next line (and the wave's size is a
    /// whole number of lines: the next wave's control state does not share
    /// the last one).
    _line: [LineStart; 0],
    regs: WaveRegs,
}

/// An instruction a wave executes out of line, as amd-dbgapi's displaced
/// stepping does: the wave's pc is moved to `buffer`, an address the
/// debugger library owns, where the device fetches `bytes` (the original
/// instruction, whose first bytes a breakpoint's `s_trap` replaced in
/// memory) instead of memory. It runs as if at `orig`, so PC-relative
/// instructions (branches, `s_getpc_b64`) give what they give there; a
/// pc that falls through lands at `buffer + size`, which
/// [`Device::undisplace`] relocates to `orig + size`.
#[derive(Clone, Copy, Debug)]
struct Displaced {
    orig: u64,
    buffer: u64,
    bytes: [u8; 8],
    len: u8,
    size: u8,
}

/// How [`Device::undisplace`] left a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undisplaced {
    /// The instruction had not executed: the pc is back at its address.
    NotExecuted,
    /// It executed: the pc is where it left the wave at its own address.
    Executed,
}

/// Ends a stopped wave's displaced step ([`Device::undisplace`]); `None`
/// when it has none.
fn undisplace_wave(w: &mut SimWave) -> Option<Undisplaced> {
    let d = w.displaced.take()?;
    if w.regs.pc == d.buffer {
        w.regs.pc = d.orig;
        return Some(Undisplaced::NotExecuted);
    }
    if w.regs.pc == d.buffer + d.size as u64 {
        w.regs.pc = d.orig + d.size as u64;
    }
    Some(Undisplaced::Executed)
}

/// Runs a displaced wave's saved instruction at its buffer (see
/// [`Displaced`]); `None` when the wave's pc is not at the buffer (its
/// next instruction comes from memory as usual).
fn run_displaced(w: &mut SimWave, ctx: &mut Ctx<'_>) -> Option<Step> {
    let d = **w.displaced.as_ref()?;
    if w.regs.pc != d.buffer {
        return None;
    }
    let Some(inst) = super::decode::decode(&d.bytes[..d.len as usize]) else {
        return Some(Step::IllegalInstruction);
    };
    w.regs.pc = d.orig;
    let out = super::wave::execute(&mut w.regs, ctx, &inst);
    if w.regs.pc == d.orig + inst.size as u64 {
        // Fell through: out of line, past the buffer's copy.
        w.regs.pc = d.buffer + inst.size as u64;
    } else if w.regs.pc == d.orig {
        // Not executed (a fault leaves the pc at the instruction).
        w.regs.pc = d.buffer;
    }
    Some(out)
}

struct WgInner {
    waves: Vec<SimWave>,
    lds: Vec<u8>,
    queued: bool,
}

/// The low bits of [`Workgroup::attention`]: one pending stop request per
/// wave of the workgroup (at most 16 waves: 1024 work-items of 64 lanes).
const STOP_BITS: u64 = 0xffff;
/// One thread waiting for [`Workgroup::inner`] (the count is in the high
/// bits of [`Workgroup::attention`]).
const WAITER: u64 = 1 << 32;

/// [`WaveSnap::state`] values.
const STATE_RUNNING: u8 = 0;
const STATE_SINGLE_STEP: u8 = 1;
const STATE_STOPPED: u8 = 2;
const STATE_DONE: u8 = 3;

/// A wave as of the last release of its workgroup's lock: what
/// [`Device::wave_info`] answers without that lock. A running wave's
/// fields may lag (as a real device's do); a stopped wave's are exact,
/// since only the debugger changes them, under the lock, and they are
/// published before the lock is let go and before its stop event is
/// queued.
#[derive(Default)]
struct WaveSnap {
    state: AtomicU8,
    stop_reason: AtomicU32,
    pc: AtomicU64,
    exec: AtomicU64,
}

struct Workgroup {
    dispatch: Arc<DispatchDesc>,
    aborted: Arc<AtomicBool>,
    coord: [u32; 3],
    /// Id of wave 0; wave `i` of the workgroup is `first_wave + i`.
    first_wave: u64,
    /// Why the device thread running the workgroup should let go of it
    /// now: stop requests ([`STOP_BITS`]) and threads waiting for the lock
    /// (counted in [`WAITER`]s). Zero while nobody wants anything; the
    /// interpreter checks it before each instruction.
    attention: AtomicU64,
    /// Each wave as of the last release of `inner`: what a stop request
    /// looks at when a device thread holds the lock, and what wave queries
    /// answer.
    snaps: Box<[WaveSnap]>,
    inner: Mutex<WgInner>,
}

impl Workgroup {
    /// Index in the workgroup of wave `id`.
    fn index_of(&self, id: WaveId) -> Option<usize> {
        let i = id.0.checked_sub(self.first_wave)? as usize;
        (i < self.snaps.len()).then_some(i)
    }

    /// Publishes each wave (called with `inner` locked).
    fn publish(&self, inner: &WgInner) {
        for (w, snap) in inner.waves.iter().zip(self.snaps.iter()) {
            snap.stop_reason.store(w.stop_reason.0, Ordering::Relaxed);
            snap.pc.store(w.regs.pc, Ordering::Relaxed);
            snap.exec.store(w.regs.exec, Ordering::Relaxed);
            snap.state.store(wave_state(w), Ordering::Release);
        }
    }

    /// Publishes wave `i` alone (called with `inner` locked), for a caller
    /// that changed only that wave since it took the lock: every unlock
    /// goes through [`release`], which published the others as they still
    /// are. A stop request of 10,000 waves then reads one wave's state per
    /// stop instead of its whole workgroup's (each wave's state sits in its
    /// own cache lines, last written by a device thread on another CPU).
    ///
    /// Only its control state (state, stop reason): the callers (a stop
    /// or resume request) change no register, so the published pc and exec
    /// still hold (every unlock published them), and the registers' cache
    /// lines, written by the interpreter at every instruction, are not
    /// touched.
    fn publish_one(&self, inner: &WgInner, i: usize) {
        if let (Some(w), Some(snap)) = (inner.waves.get(i), self.snaps.get(i)) {
            snap.stop_reason.store(w.stop_reason.0, Ordering::Relaxed);
            snap.state.store(wave_state(w), Ordering::Release);
        }
    }

    /// Carries out the pending stop requests (called with `inner` locked):
    /// a running wave stops (its WAVE_STOP is returned), a stopped one
    /// needs nothing (the event of the stop it made completes the request)
    /// and one that ended reports its request terminated.
    fn apply_stop_requests(&self, inner: &mut WgInner, out: &mut Vec<DeviceEvent>) {
        // A load first: with no request pending (every call of a
        // stop-all's own stops, twice per wave) nothing is cleared, and a
        // read-modify-write of the line the device threads share cost a
        // locked instruction each time. A request set after this load is
        // seen by its requester's `try_lock` or by `release`'s check after
        // the unlock, as one set after the `fetch_and` would be.
        if self.attention.load(Ordering::Acquire) & STOP_BITS == 0 {
            return;
        }
        let bits = self.attention.fetch_and(!STOP_BITS, Ordering::AcqRel) & STOP_BITS;
        if bits == 0 {
            return;
        }
        for (i, w) in inner.waves.iter_mut().enumerate() {
            if bits & 1 << i == 0 {
                continue;
            }
            match w.run {
                Run::Running => {
                    w.run = Run::Stopped;
                    w.single_step = false;
                    w.stop_reason = StopReasons::NONE;
                    out.push(DeviceEvent::WaveStop {
                        wave: w.id,
                        reasons: StopReasons::NONE,
                        pc: w.regs.pc,
                        exec: w.regs.exec,
                    });
                }
                Run::Stopped => {}
                Run::Done => out.push(DeviceEvent::WaveCommandTerminated { wave: w.id }),
            }
        }
    }

    /// Takes a pending stop request of wave `i` (it ended: the caller
    /// reports the request terminated).
    fn take_stop_request(&self, i: usize) -> bool {
        let bit = 1u64 << i;
        self.attention.load(Ordering::Acquire) & bit != 0
            && self.attention.fetch_and(!bit, Ordering::AcqRel) & bit != 0
    }

    /// Locks `inner` as a debugger does: the device thread running the
    /// workgroup lets go at its next instruction. Pending stop requests
    /// are carried out first (their events go to `out`).
    fn lock_for_debugger(&self, out: &mut Vec<DeviceEvent>) -> MutexGuard<'_, WgInner> {
        self.attention.fetch_add(WAITER, Ordering::AcqRel);
        let mut inner = lock(&self.inner);
        self.attention.fetch_sub(WAITER, Ordering::AcqRel);
        self.apply_stop_requests(&mut inner, out);
        inner
    }
}

/// A wave's published state.
fn wave_state(w: &SimWave) -> u8 {
    match (w.run, w.single_step) {
        (Run::Running, false) => STATE_RUNNING,
        (Run::Running, true) => STATE_SINGLE_STEP,
        (Run::Stopped, _) => STATE_STOPPED,
        (Run::Done, _) => STATE_DONE,
    }
}

/// Unlocks a workgroup: the stop requests still pending are carried out
/// and the wave states published first. A request made while the lock was
/// held is never left behind: its maker stores it, then tries the lock; an
/// unlocker unlocks, then looks for requests (both with a sequentially
/// consistent fence in between), so one of the two sees the other and
/// carries it out. The events are queued outside the lock.
fn release<'a>(
    shared: &Shared,
    wg: &'a Workgroup,
    inner: MutexGuard<'a, WgInner>,
    events: Vec<DeviceEvent>,
) {
    release_changed(shared, wg, inner, events, None)
}

/// [`release`] for a caller that changed wave `only`'s control state alone
/// (run state, stepping, stop reason; no register) since it took the lock
/// (`events` empty: no stop request was carried out meanwhile): unless a
/// stop request is carried out now, only that wave's control state is
/// published ([`Workgroup::publish_one`]).
fn release_changed<'a>(
    shared: &Shared,
    wg: &'a Workgroup,
    mut inner: MutexGuard<'a, WgInner>,
    mut events: Vec<DeviceEvent>,
    only: Option<usize>,
) {
    let mut only = only.filter(|_| events.is_empty());
    loop {
        wg.apply_stop_requests(&mut inner, &mut events);
        match only.take() {
            Some(i) if events.is_empty() => wg.publish_one(&inner, i),
            _ => wg.publish(&inner),
        }
        drop(inner);
        push_unbounded(shared, std::mem::take(&mut events));
        fence(Ordering::SeqCst);
        if wg.attention.load(Ordering::SeqCst) & STOP_BITS == 0 {
            return;
        }
        inner = match wg.inner.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
    }
}

/// Queues events caused by the consumer's own requests (stop requests):
/// they may exceed the hand-off's capacity (one outstanding stop per wave
/// bounds them), since the thread carrying them out may be the consumer,
/// which would wait for itself.
/// [`push_unbounded`] of one event.
fn push_one(shared: &Shared, ev: DeviceEvent) {
    if shared.events.push_unbounded(ev) == Ok(Wake::Yes) {
        notify_hook(shared);
    }
}

fn push_unbounded(shared: &Shared, evs: Vec<DeviceEvent>) {
    let mut wake = false;
    for ev in evs {
        wake |= shared.events.push_unbounded(ev) == Ok(Wake::Yes);
    }
    if wake {
        notify_hook(shared);
    }
}

/// The resident waves as published at one epoch ([`Shared::waves_epoch`]):
/// ascending ids, each with its workgroup, and an O(1) id → workgroup
/// lookup where the ids are dense (a workgroup's waves take consecutive
/// ids, and a launch takes its workgroups' ids in a row). Built once per
/// change of the waves, under the table lock the device threads never
/// take, and shared: the wave list, and a caller that keeps it
/// ([`Device::wave_index`]) looks waves up without any lock while the
/// epoch holds.
pub struct WaveIndex {
    epoch: u64,
    ids: Arc<[WaveId]>,
    wgs: Vec<Arc<Workgroup>>,
    positions: Positions,
}

/// Slots a dense [`Positions`] may hold per resident wave (plus a
/// constant): a wave that lives on while later launches take millions of
/// ids must not make the index grow with the ids instead of the waves.
const MAX_SLOTS_PER_WAVE: usize = 4;

/// Id → position in an ascending id list: a direct table over the ids'
/// span when they are dense enough, else a binary search.
#[derive(Default)]
struct Positions {
    /// The smallest id.
    base: u64,
    /// `slots[id - base]`: 1 + the id's position, 0 for none. Empty when
    /// the ids are too sparse ([`MAX_SLOTS_PER_WAVE`]).
    slots: Vec<u32>,
}

impl Positions {
    fn new(ids: &[WaveId]) -> Self {
        let base = ids.first().map_or(0, |w| w.0);
        let span = ids.last().map_or(0, |w| (w.0 - base).saturating_add(1));
        let dense =
            span <= (ids.len() * MAX_SLOTS_PER_WAVE + 1024) as u64 && ids.len() < u32::MAX as usize;
        let mut slots = Vec::new();
        if dense {
            slots = vec![0u32; span as usize];
            for (i, w) in ids.iter().enumerate() {
                slots[(w.0 - base) as usize] = i as u32 + 1;
            }
        }
        Self { base, slots }
    }

    fn find(&self, ids: &[WaveId], id: WaveId) -> Option<usize> {
        if self.slots.is_empty() {
            return ids.binary_search(&id).ok();
        }
        let k = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        match *self.slots.get(k)? {
            0 => None,
            s => Some(s as usize - 1),
        }
    }
}

impl WaveIndex {
    fn build(epoch: u64, waves: &BTreeMap<WaveId, Arc<Workgroup>>) -> Self {
        let ids: Arc<[WaveId]> = waves.keys().copied().collect();
        let wgs: Vec<Arc<Workgroup>> = waves.values().cloned().collect();
        let positions = Positions::new(&ids);
        Self {
            epoch,
            ids,
            wgs,
            positions,
        }
    }

    /// The workgroup of resident wave `id`.
    fn find(&self, id: WaveId) -> Option<&Arc<Workgroup>> {
        self.wgs.get(self.positions.find(&self.ids, id)?)
    }

    /// Ids of the resident waves, ascending.
    pub fn ids(&self) -> &Arc<[WaveId]> {
        &self.ids
    }
}

impl Default for WaveIndex {
    fn default() -> Self {
        Self {
            epoch: 0,
            ids: Arc::from(Vec::new()),
            wgs: Vec::new(),
            positions: Positions::default(),
        }
    }
}

struct DispatchState {
    desc: Arc<DispatchDesc>,
    aborted: Arc<AtomicBool>,
    next_wg: u64,
    live_wgs: u64,
    outcome: Option<DispatchOutcome>,
}

#[derive(Default)]
struct Sched {
    run_queue: VecDeque<Arc<Workgroup>>,
    dispatches: BTreeMap<DispatchId, DispatchState>,
    /// The resident waves; every change bumps [`Shared::waves_epoch`].
    waves: BTreeMap<WaveId, Arc<Workgroup>>,
    resident_waves: usize,
    debug: bool,
    wave_creation_stopped: bool,
    shutdown: bool,
}

/// Called after events are queued (e.g. to write a notifier pipe).
pub type EventHook = Box<dyn Fn() + Send + Sync>;

struct Shared {
    mem: Arc<dyn GlobalMemory>,
    code: ICache,
    sched: Mutex<Sched>,
    work_cv: Condvar,
    done_cv: Condvar,
    hook: RwLock<Option<EventHook>>,
    events: Handoff<DeviceEvent>,
    /// Bumped (with the scheduler locked) whenever `Sched::waves` changes.
    waves_epoch: AtomicU64,
    table: Mutex<Arc<WaveIndex>>,
    next_id: AtomicU64,
    instructions: AtomicU64,
    cfg: DeviceConfig,
}

/// The simulated GPU.
pub struct Device {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Device {
    /// Starts a device over `mem` with `cfg.threads` device threads.
    pub fn new(mem: Arc<dyn GlobalMemory>, cfg: DeviceConfig) -> Self {
        let shared = Arc::new(Shared {
            code: ICache::new(mem.clone()),
            mem,
            sched: Mutex::new(Sched::default()),
            work_cv: Condvar::new(),
            done_cv: Condvar::new(),
            hook: RwLock::new(None),
            events: Handoff::new(cfg.event_capacity),
            waves_epoch: AtomicU64::new(1),
            table: Mutex::new(Arc::new(WaveIndex::default())),
            next_id: AtomicU64::new(1),
            instructions: AtomicU64::new(0),
            cfg: cfg.clone(),
        });
        let workers = (0..cfg.threads.max(1))
            .map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("simgpu-cu{i}"))
                    .spawn(move || worker(&s))
            })
            .filter_map(Result::ok)
            .collect();
        Self { shared, workers }
    }

    /// Global memory of the device.
    pub fn memory(&self) -> &Arc<dyn GlobalMemory> {
        &self.shared.mem
    }

    /// Sets the hook called when an event is queued for a consumer that saw
    /// the queue empty (e.g. to write a notifier pipe).
    pub fn set_event_hook(&self, hook: Option<EventHook>) {
        if let Ok(mut h) = self.shared.hook.write() {
            *h = hook;
        }
    }

    /// Debug mode: traps and faults stop waves instead of aborting.
    /// Leaving it closes the event hand-off (queued events are dropped and
    /// device threads waiting for room go on); entering it reopens it.
    pub fn set_debug(&self, on: bool) {
        lock(&self.shared.sched).debug = on;
        if on {
            self.shared.events.reopen();
        } else {
            self.shared.events.close();
        }
    }

    /// Stops or restarts the creation of new waves.
    pub fn set_wave_creation_stopped(&self, stopped: bool) {
        let mut s = lock(&self.shared.sched);
        s.wave_creation_stopped = stopped;
        if !stopped {
            launch_more(&self.shared, &mut s);
            self.shared.work_cv.notify_all();
        }
    }

    /// Instructions executed since start.
    pub fn instructions_executed(&self) -> u64 {
        self.shared.instructions.load(Ordering::Relaxed)
    }

    /// Submits the dispatch packet at `packet_addr`.
    pub fn submit(&self, packet_addr: u64) -> Result<DispatchId, DeviceError> {
        let mem = &self.shared.mem;
        let mut p = [0u8; DISPATCH_PACKET_SIZE];
        mem.read(packet_addr, &mut p)?;
        let u16_at = |o: usize| u16::from_le_bytes([p[o], p[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]);
        let u64_at = |o: usize| u32_at(o) as u64 | (u32_at(o + 4) as u64) << 32;
        let wg = [u16_at(4), u16_at(6), u16_at(8)];
        let grid = [u32_at(12), u32_at(16), u32_at(20)];
        let kd_addr = u64_at(32);
        let kernarg = u64_at(40);
        if wg.contains(&0) || grid.contains(&0) {
            return Err(DeviceError::InvalidPacket("zero grid or workgroup size"));
        }
        let items: u32 = wg.iter().map(|&x| x as u32).product();
        if items > 1024 {
            return Err(DeviceError::InvalidPacket("workgroup larger than 1024"));
        }
        let mut kdb = [0u8; KERNEL_DESCRIPTOR_SIZE];
        mem.read(kd_addr, &mut kdb)?;
        let kd = KernelDescriptor::parse(&kdb)
            .map_err(|_| DeviceError::InvalidPacket("kernel descriptor"))?;
        if kd.wave32() {
            return Err(DeviceError::InvalidPacket(
                "wave32 kernels are not supported",
            ));
        }
        let id = DispatchId(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let num_wgs = [0, 1, 2].map(|i| grid[i].div_ceil(wg[i] as u32));
        let desc = Arc::new(DispatchDesc {
            id,
            packet_addr,
            kd_addr,
            kd,
            entry: kd_addr.wrapping_add(kd.kernel_code_entry_byte_offset as u64),
            kernarg,
            grid,
            wg,
            group_segment: kd.group_segment_fixed_size.max(u32_at(28)),
            num_wgs,
            waves_per_wg: items.div_ceil(LANES as u32),
        });
        tracing::debug!(target: "simgpu", dispatch = id.0, ?grid, ?wg, entry = desc.entry, "submit");
        self.shared.code.clear();
        let mut s = lock(&self.shared.sched);
        s.dispatches.insert(
            id,
            DispatchState {
                desc,
                aborted: Arc::new(AtomicBool::new(false)),
                next_wg: 0,
                live_wgs: 0,
                outcome: None,
            },
        );
        launch_more(&self.shared, &mut s);
        self.shared.work_cv.notify_all();
        Ok(id)
    }

    /// Waits for a dispatch to finish (and forgets it). `None` on timeout.
    pub fn wait(&self, id: DispatchId, timeout: Option<Duration>) -> Option<DispatchOutcome> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut s = lock(&self.shared.sched);
        loop {
            match s.dispatches.get(&id) {
                None => return None,
                Some(d) => {
                    // An aborted dispatch is over only once its last
                    // workgroup has retired: a wave still running could
                    // otherwise write into host memory (a stack buffer)
                    // that the caller reuses after `wait` returns.
                    if let (Some(o), 0) = (d.outcome, d.live_wgs) {
                        s.dispatches.remove(&id);
                        return Some(o);
                    }
                }
            }
            s = match deadline {
                None => self
                    .shared
                    .done_cv
                    .wait(s)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.checked_duration_since(Instant::now())?;
                    self.shared
                        .done_cv
                        .wait_timeout(s, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// Takes the queued events (until the hand-off is seen empty, which
    /// arms the event hook).
    pub fn take_events(&self) -> Vec<DeviceEvent> {
        std::iter::from_fn(|| self.shared.events.try_pop()).collect()
    }

    /// The oldest queued event; `None` arms the event hook. For the one
    /// consumer (the debugger's thread).
    pub fn pop_event(&self) -> Option<DeviceEvent> {
        self.shared.events.try_pop()
    }

    /// Queues an event as a device thread does: waits while the hand-off is
    /// full. Fails (returning the event) once debug mode was left. Never
    /// call it from the consumer's thread: it would wait for itself.
    pub fn inject_event(&self, ev: DeviceEvent) -> Result<(), DeviceEvent> {
        match self.shared.events.push(ev) {
            Ok(wake) => {
                if wake == Wake::Yes {
                    notify_hook(&self.shared);
                }
                Ok(())
            }
            Err(c) => Err(c.0),
        }
    }

    /// Counters of the event hand-off.
    pub fn event_stats(&self) -> HandoffStats {
        self.shared.events.stats()
    }

    /// Descriptions of the dispatches in flight.
    pub fn dispatches(&self) -> Vec<Arc<DispatchDesc>> {
        lock(&self.shared.sched)
            .dispatches
            .values()
            .filter(|d| d.outcome.is_none())
            .map(|d| d.desc.clone())
            .collect()
    }

    /// Ids of the resident waves, ascending.
    pub fn wave_ids(&self) -> Vec<WaveId> {
        self.resident_waves().to_vec()
    }

    /// Ids of the resident waves, ascending, as published: no device
    /// lock is taken unless the waves changed since the last call.
    pub fn resident_waves(&self) -> Arc<[WaveId]> {
        self.index().ids.clone()
    }

    /// A number that changes whenever the resident waves change.
    pub fn waves_epoch(&self) -> u64 {
        self.shared.waves_epoch.load(Ordering::Acquire)
    }

    /// The wave index, brought up to date when the waves changed.
    fn index(&self) -> Arc<WaveIndex> {
        let mut t = lock(&self.shared.table);
        if t.epoch != self.shared.waves_epoch.load(Ordering::Acquire) {
            let s = lock(&self.shared.sched);
            let epoch = self.shared.waves_epoch.load(Ordering::Acquire);
            *t = Arc::new(WaveIndex::build(epoch, &s.waves));
        }
        t.clone()
    }

    /// The wave index for a caller that keeps one (`kept`): reused, with no
    /// lock taken, while the waves did not change (one atomic load), else
    /// replaced by the current one. The per-wave calls
    /// ([`Device::wave_info_in`], [`Device::stop_wave_in`]) take it.
    pub fn wave_index<'a>(&self, kept: &'a mut Option<Arc<WaveIndex>>) -> &'a WaveIndex {
        let epoch = self.shared.waves_epoch.load(Ordering::Acquire);
        if kept.as_ref().is_some_and(|ix| ix.epoch != epoch) {
            *kept = None;
        }
        kept.get_or_insert_with(|| self.index())
    }

    fn wg_of(&self, id: WaveId) -> Result<Arc<Workgroup>, DeviceError> {
        self.index()
            .find(id)
            .cloned()
            .ok_or(DeviceError::InvalidWave(id))
    }

    /// Runs `f` on a wave with its workgroup locked (and preempted).
    fn with_wave<R>(
        &self,
        id: WaveId,
        f: impl FnOnce(&mut WgInner, usize, &Workgroup) -> Result<R, DeviceError>,
    ) -> Result<R, DeviceError> {
        let wg = self.wg_of(id)?;
        let mut events = Vec::new();
        let mut inner = wg.lock_for_debugger(&mut events);
        let r = match wg.index_of(id) {
            Some(i) if inner.waves[i].run != Run::Done => f(&mut inner, i, &wg),
            _ => Err(DeviceError::InvalidWave(id)),
        };
        release(&self.shared, &wg, inner, events);
        r
    }

    /// A snapshot of one wave, as last published (see [`WaveSnap`]): no
    /// device lock is taken, so a query never waits for a device thread.
    pub fn wave_info(&self, id: WaveId) -> Result<SimWaveInfo, DeviceError> {
        self.wave_info_in(&self.index(), id)
    }

    /// [`Device::wave_info`] with a wave index the caller keeps
    /// ([`Device::wave_index`]): no lock at all.
    pub fn wave_info_in(&self, ix: &WaveIndex, id: WaveId) -> Result<SimWaveInfo, DeviceError> {
        let wg = ix.find(id).ok_or(DeviceError::InvalidWave(id))?;
        let i = wg.index_of(id).ok_or(DeviceError::InvalidWave(id))?;
        let snap = &wg.snaps[i];
        let state = match snap.state.load(Ordering::Acquire) {
            STATE_STOPPED => WaveState::Stopped,
            STATE_SINGLE_STEP => WaveState::SingleStep,
            STATE_DONE => return Err(DeviceError::InvalidWave(id)),
            _ => WaveState::Running,
        };
        Ok(SimWaveInfo {
            id,
            dispatch: wg.dispatch.id,
            state,
            stop_reason: StopReasons(snap.stop_reason.load(Ordering::Relaxed)),
            pc: snap.pc.load(Ordering::Relaxed),
            exec: snap.exec.load(Ordering::Relaxed),
            workgroup_coord: wg.coord,
            wave_in_group: i as u32,
        })
    }

    /// Runs `f` on the registers of a stopped wave.
    pub fn with_stopped_regs<R>(
        &self,
        id: WaveId,
        f: impl FnOnce(&mut WaveRegs) -> R,
    ) -> Result<R, DeviceError> {
        self.with_wave(id, |inner, i, _| {
            let w = &mut inner.waves[i];
            if w.run != Run::Stopped {
                return Err(DeviceError::WaveNotStopped(id));
            }
            Ok(f(&mut w.regs))
        })
    }

    /// Reads the LDS of a stopped wave's workgroup; returns bytes read.
    pub fn read_lds(&self, id: WaveId, addr: u32, buf: &mut [u8]) -> Result<usize, DeviceError> {
        self.with_wave(id, |inner, _, _| {
            let src = inner.lds.get(addr as usize..).unwrap_or(&[]);
            let n = src.len().min(buf.len());
            buf[..n].copy_from_slice(&src[..n]);
            Ok(n)
        })
    }

    /// Transfers bytes of a wave's private memory: `lane` `Some(l)` is the
    /// private_lane view (offset within lane `l`'s memory), `None` the
    /// private_wave view (the hardware's swizzled scratch layout). Returns
    /// the bytes moved (0 when `offset` is past the end).
    pub fn xfer_private(
        &self,
        id: WaveId,
        lane: Option<usize>,
        offset: u64,
        read: Option<&mut [u8]>,
        write: Option<&[u8]>,
    ) -> Result<usize, DeviceError> {
        self.with_wave(id, |inner, i, _| {
            let mem = &mut inner.waves[i].scratch;
            let len = mem.len() as u64;
            let at = |k: u64| -> Option<usize> {
                let wave = match lane {
                    Some(l) => super::wave::swizzle_private(l, offset + k),
                    None => offset + k,
                };
                (wave < len).then_some(wave as usize)
            };
            let mut n = 0;
            if let Some(buf) = read {
                for (k, b) in buf.iter_mut().enumerate() {
                    let Some(a) = at(k as u64) else { break };
                    *b = mem[a];
                    n += 1;
                }
            } else if let Some(data) = write {
                for (k, b) in data.iter().enumerate() {
                    let Some(a) = at(k as u64) else { break };
                    mem[a] = *b;
                    n += 1;
                }
            }
            Ok(n)
        })
    }

    /// Writes the LDS of a wave's workgroup; returns bytes written.
    pub fn write_lds(&self, id: WaveId, addr: u32, data: &[u8]) -> Result<usize, DeviceError> {
        self.with_wave(id, |inner, _, _| {
            let dst = inner.lds.get_mut(addr as usize..).unwrap_or(&mut []);
            let n = dst.len().min(data.len());
            dst[..n].copy_from_slice(&data[..n]);
            Ok(n)
        })
    }

    /// Writes global memory and keeps the instruction cache coherent.
    pub fn write_memory(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        self.shared.mem.write(addr, data)?;
        self.shared.code.invalidate(addr, data.len());
        Ok(())
    }

    /// Requests a wave stop; a [`DeviceEvent::WaveStop`] follows (or a
    /// [`DeviceEvent::WaveCommandTerminated`] if the wave ends first).
    ///
    /// Asynchronous, as AMD's wave stop is: it never waits
    /// for the device thread that may be running the wave. When nobody
    /// holds the workgroup the wave stops here; otherwise the request is
    /// left in [`Workgroup::attention`], and the holder, which checks it
    /// before each instruction, carries it out as it lets go.
    pub fn stop_wave(&self, id: WaveId) -> Result<(), DeviceError> {
        self.stop_wave_in(&self.index(), id)
    }

    /// [`Device::stop_wave`] with a wave index the caller keeps
    /// ([`Device::wave_index`]): the wave is found without a lock, and the
    /// only lock taken is its workgroup's, when free.
    pub fn stop_wave_in(&self, ix: &WaveIndex, id: WaveId) -> Result<(), DeviceError> {
        if let Some(ev) = self.stop_wave_taking(ix, id)? {
            push_one(&self.shared, ev);
        }
        Ok(())
    }

    /// [`Device::stop_wave_in`] for the consumer of the event hand-off
    /// ([`Device::pop_event`]): a wave stopped here, at once, comes back as
    /// its [`DeviceEvent::WaveStop`] instead of going through the
    /// hand-off, and the caller delivers it as if it had popped it (it was
    /// published like every stop event). `Ok(None)`: the request was left
    /// to the device thread holding the workgroup, whose event comes
    /// through the hand-off. A stop-all of 10,000 waves thereby takes no
    /// hand-off lock per wave, on either side, and does not contend with
    /// the device threads for it.
    pub fn stop_wave_taking(
        &self,
        ix: &WaveIndex,
        id: WaveId,
    ) -> Result<Option<DeviceEvent>, DeviceError> {
        let wg = ix.find(id).ok_or(DeviceError::InvalidWave(id))?;
        let i = wg.index_of(id).ok_or(DeviceError::InvalidWave(id))?;
        let mut events = Vec::new();
        let inner = match wg.inner.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        if let Some(mut inner) = inner {
            wg.apply_stop_requests(&mut inner, &mut events);
            let w = &mut inner.waves[i];
            let r = match w.run {
                Run::Stopped => Err(DeviceError::WaveStopped(id)),
                Run::Done => Err(DeviceError::InvalidWave(id)),
                Run::Running => {
                    w.run = Run::Stopped;
                    w.single_step = false;
                    w.stop_reason = StopReasons::NONE;
                    // As the last unlock published them (the registers
                    // did not change since): the snapshot's line is written
                    // below anyway, the registers' lines are not read.
                    let snap = &wg.snaps[i];
                    Ok(DeviceEvent::WaveStop {
                        wave: id,
                        reasons: StopReasons::NONE,
                        pc: snap.pc.load(Ordering::Relaxed),
                        exec: snap.exec.load(Ordering::Relaxed),
                    })
                }
            };
            release_changed(&self.shared, wg, inner, events, Some(i));
            // Handed over once `release` published the stopped wave (as
            // every stop event is), on its own: `events` stays empty in a
            // stop-all, which therefore allocates nothing per wave (a `Vec`
            // of one event was a malloc and a free per wave stopped).
            return r.map(Some);
        }
        match wg.snaps[i].state.load(Ordering::Acquire) {
            STATE_STOPPED => return Err(DeviceError::WaveStopped(id)),
            STATE_DONE => return Err(DeviceError::InvalidWave(id)),
            _ => {}
        }
        wg.attention.fetch_or(1 << i, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // The holder may have let go before it saw the request.
        match wg.inner.try_lock() {
            Ok(g) => release(&self.shared, wg, g, events),
            Err(TryLockError::Poisoned(p)) => release(&self.shared, wg, p.into_inner(), events),
            Err(TryLockError::WouldBlock) => {}
        }
        Ok(None)
    }

    /// Moves a stopped wave onto an out-of-line copy of the instruction at
    /// its pc (amd-dbgapi's displaced stepping, done by its library):
    /// `saved` are the bytes a breakpoint replaced at the pc, the rest of
    /// the instruction is read from memory after them. The wave's pc
    /// becomes `buffer`, where a single step executes the copy as if at the
    /// original address; memory is not touched. Fails (changing nothing)
    /// when the wave is not stopped, already displaced
    /// ([`DeviceError::Displaced`]), or the bytes are no instruction
    /// ([`DeviceError::IllegalInstruction`]).
    pub fn displace(&self, id: WaveId, buffer: u64, saved: &[u8]) -> Result<u64, DeviceError> {
        let mem = self.shared.mem.clone();
        self.with_wave(id, |inner, i, _| {
            let w = &mut inner.waves[i];
            if w.run != Run::Stopped {
                return Err(DeviceError::WaveNotStopped(id));
            }
            if w.displaced.is_some() {
                return Err(DeviceError::Displaced(id));
            }
            let orig = w.regs.pc;
            let mut bytes = [0u8; 8];
            let head = saved.len().min(8);
            bytes[..head].copy_from_slice(&saved[..head]);
            let tail = mem.read_partial(orig + head as u64, &mut bytes[head..]);
            let len = head + tail;
            let inst = super::decode::decode(&bytes[..len])
                .ok_or(DeviceError::IllegalInstruction(orig))?;
            w.displaced = Some(Box::new(Displaced {
                orig,
                buffer,
                bytes,
                len: len as u8,
                size: inst.size,
            }));
            w.regs.pc = buffer;
            Ok(orig)
        })
    }

    /// Ends a stopped wave's displaced step ([`Device::displace`]): a pc
    /// still at the buffer goes back to the original address (not
    /// executed), one past the buffer's copy to past the original
    /// instruction; any other pc (a branch taken) is where the instruction
    /// sent the wave already.
    pub fn undisplace(&self, id: WaveId) -> Result<Undisplaced, DeviceError> {
        self.with_wave(id, |inner, i, _| {
            let w = &mut inner.waves[i];
            if w.run != Run::Stopped {
                return Err(DeviceError::WaveNotStopped(id));
            }
            undisplace_wave(w).ok_or(DeviceError::NotDisplaced(id))
        })
    }

    /// Stops a displaced wave where it is, running (mid-step) or not, and
    /// ends its displaced step as [`Device::undisplace`] does, in one hold
    /// of its workgroup: no device thread runs it in between, so a wave
    /// whose step had not executed goes back to the original address and
    /// never runs from the buffer. What a library's detach does to a wave
    /// it leaves displaced (amd-dbgapi's `amd_dbgapi_process_detach`: "Any
    /// waves with a displaced stepping buffer are stopped and the displaced
    /// stepping buffer completed"). The stop is silent (no
    /// [`DeviceEvent::WaveStop`]): the debugger is leaving. Fails only for
    /// a wave that is gone ([`DeviceError::InvalidWave`]) or not displaced.
    pub fn stop_undisplace(&self, id: WaveId) -> Result<Undisplaced, DeviceError> {
        self.with_wave(id, |inner, i, _| {
            let w = &mut inner.waves[i];
            if w.displaced.is_none() {
                return Err(DeviceError::NotDisplaced(id));
            }
            w.run = Run::Stopped;
            w.single_step = false;
            undisplace_wave(w).ok_or(DeviceError::NotDisplaced(id))
        })
    }

    /// Resumes a stopped wave.
    pub fn resume_wave(&self, id: WaveId, mode: ResumeMode) -> Result<(), DeviceError> {
        self.resume_wave_in(&self.index(), id, mode)
    }

    /// [`Device::resume_wave`] with a wave index the caller keeps
    /// ([`Device::wave_index`]): the wave is found once, without a lock.
    pub fn resume_wave_in(
        &self,
        ix: &WaveIndex,
        id: WaveId,
        mode: ResumeMode,
    ) -> Result<(), DeviceError> {
        let wg = ix.find(id).ok_or(DeviceError::InvalidWave(id))?;
        let mut events = Vec::new();
        let mut inner = wg.lock_for_debugger(&mut events);
        let at = wg.index_of(id);
        let r = match at {
            Some(i) if inner.waves[i].run == Run::Stopped => {
                let w = &mut inner.waves[i];
                w.run = Run::Running;
                w.single_step = mode == ResumeMode::SingleStep;
                w.stop_reason = StopReasons::NONE;
                let push = !inner.queued;
                inner.queued = true;
                Ok(push)
            }
            Some(i) if inner.waves[i].run != Run::Done => Err(DeviceError::WaveNotStopped(id)),
            _ => Err(DeviceError::InvalidWave(id)),
        };
        release_changed(&self.shared, wg, inner, events, at);
        if r? {
            lock(&self.shared.sched).run_queue.push_back(wg.clone());
            self.shared.work_cv.notify_one();
        }
        Ok(())
    }

    /// Abandons the dispatch of a stopped wave (the debugger delivered an
    /// exception to the runtime): every wave of it ends and
    /// [`Device::wait`] reports `reason`.
    pub fn abort_dispatch_of(
        &self,
        id: WaveId,
        reason: StopReasons,
    ) -> Result<DispatchId, DeviceError> {
        let (did, pc) = self.with_wave(id, |inner, i, wg| {
            let w = &inner.waves[i];
            if w.run != Run::Stopped {
                return Err(DeviceError::WaveNotStopped(id));
            }
            Ok((wg.dispatch.id, w.regs.pc))
        })?;
        self.end_dispatch(did, reason, pc);
        Ok(did)
    }

    /// Abandons a dispatch whose waves may still be running (the runtime's
    /// watchdog): every wave of it ends and [`Device::wait`] reports
    /// `reason`. Returns the oldest live wave and its PC at that moment
    /// (`None` when no wave of it was resident).
    pub fn abort_dispatch(&self, did: DispatchId, reason: StopReasons) -> Option<(WaveId, u64)> {
        let first = {
            let s = lock(&self.shared.sched);
            s.waves
                .iter()
                .find(|(_, wg)| wg.dispatch.id == did)
                .map(|(w, _)| *w)
        };
        let at = first.and_then(|w| self.wave_info(w).ok().map(|i| (w, i.pc)));
        self.end_dispatch(did, reason, at.map(|(_, pc)| pc).unwrap_or(0));
        at
    }

    /// Ends every wave of dispatch `did` and records `reason` at `pc` as
    /// its outcome (unless it already has one).
    fn end_dispatch(&self, did: DispatchId, reason: StopReasons, pc: u64) {
        let wgs: Vec<Arc<Workgroup>> = {
            let s = lock(&self.shared.sched);
            if let Some(d) = s.dispatches.get(&did) {
                d.aborted.store(true, Ordering::SeqCst);
            }
            let mut v: Vec<Arc<Workgroup>> = Vec::new();
            for wg in s.waves.values() {
                if wg.dispatch.id == did && !v.iter().any(|x| Arc::ptr_eq(x, wg)) {
                    v.push(wg.clone());
                }
            }
            v
        };
        let mut ended = Vec::new();
        for wg in &wgs {
            let mut events = Vec::new();
            let mut inner = wg.lock_for_debugger(&mut events);
            for w in inner.waves.iter_mut().filter(|w| w.run != Run::Done) {
                w.run = Run::Done;
                ended.push(w.id);
            }
            release(&self.shared, wg, inner, events);
        }
        let mut s = lock(&self.shared.sched);
        for w in &ended {
            s.waves.remove(w);
        }
        self.shared.waves_epoch.fetch_add(1, Ordering::AcqRel);
        s.resident_waves = s.resident_waves.saturating_sub(ended.len());
        if let Some(d) = s.dispatches.get_mut(&did) {
            d.live_wgs = 0;
            if d.outcome.is_none() {
                d.outcome = Some(DispatchOutcome::Aborted {
                    reason,
                    pc,
                    fault_addr: None,
                });
            }
        }
        launch_more(&self.shared, &mut s);
        drop(s);
        self.shared.work_cv.notify_all();
        self.shared.done_cv.notify_all();
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // Device threads waiting for room in the hand-off must go on.
        self.shared.events.close();
        lock(&self.shared.sched).shutdown = true;
        self.shared.work_cv.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn notify_hook(shared: &Shared) {
    if let Ok(h) = shared.hook.read() {
        if let Some(h) = h.as_ref() {
            h();
        }
    }
}

/// Makes workgroups resident while there is room.
fn launch_more(shared: &Shared, s: &mut Sched) {
    if s.wave_creation_stopped {
        return;
    }
    let max = shared.cfg.max_resident_waves;
    let ids: Vec<DispatchId> = s.dispatches.keys().copied().collect();
    for id in ids {
        while let Some(d) = s.dispatches.get_mut(&id) {
            let need = d.desc.waves_per_wg as usize;
            if d.outcome.is_some()
                || d.next_wg >= d.desc.total_wgs()
                || d.aborted.load(Ordering::Relaxed)
                || (s.resident_waves + need > max && s.resident_waves > 0)
            {
                break;
            }
            let lin = d.next_wg;
            d.next_wg += 1;
            d.live_wgs += 1;
            let desc = d.desc.clone();
            let aborted = d.aborted.clone();
            let n = desc.num_wgs;
            let coord = [
                (lin % n[0] as u64) as u32,
                ((lin / n[0] as u64) % n[1] as u64) as u32,
                (lin / (n[0] as u64 * n[1] as u64)) as u32,
            ];
            let first_wave = shared
                .next_id
                .fetch_add(desc.waves_per_wg as u64, Ordering::Relaxed);
            let waves: Vec<SimWave> = (0..desc.waves_per_wg)
                .map(|index| SimWave {
                    id: WaveId(first_wave + index as u64),
                    index,
                    regs: init_wave(&desc, coord, index),
                    run: Run::Running,
                    at_barrier: false,
                    single_step: false,
                    stop_reason: StopReasons::NONE,
                    displaced: None,
                    scratch: vec![
                        0;
                        desc.kd.private_segment_fixed_size.next_multiple_of(16) as usize
                            * LANES
                    ],
                    _line: [],
                })
                .collect();
            let ids: Vec<WaveId> = waves.iter().map(|w| w.id).collect();
            let wg = Arc::new(Workgroup {
                dispatch: desc.clone(),
                aborted,
                coord,
                first_wave,
                attention: AtomicU64::new(0),
                snaps: waves
                    .iter()
                    .map(|w| WaveSnap {
                        pc: AtomicU64::new(w.regs.pc),
                        exec: AtomicU64::new(w.regs.exec),
                        ..Default::default()
                    })
                    .collect(),
                inner: Mutex::new(WgInner {
                    waves,
                    lds: vec![0; desc.group_segment as usize],
                    queued: true,
                }),
            });
            s.resident_waves += ids.len();
            for w in ids {
                s.waves.insert(w, wg.clone());
            }
            shared.waves_epoch.fetch_add(1, Ordering::AcqRel);
            s.run_queue.push_back(wg);
        }
    }
}

/// The initial registers of wave `index` of workgroup `coord`, following
/// the kernel descriptor's SGPR/VGPR set-up bits.
fn init_wave(d: &DispatchDesc, coord: [u32; 3], index: u32) -> WaveRegs {
    let kd = &d.kd;
    let mut r = WaveRegs::new(kd.vgpr_count() as usize);
    let mut s = 0usize;
    let put64 = |r: &mut WaveRegs, s: &mut usize, v: u64| {
        if *s + 1 < r.sgpr.len() {
            r.sgpr[*s] = v as u32;
            r.sgpr[*s + 1] = (v >> 32) as u32;
        }
        *s += 2;
    };
    if kd.private_segment_buffer() {
        // The private segment buffer: base 0 of the wave's private memory,
        // swizzled per lane (ADD_TID_ENABLE, index stride 64), as the
        // runtime sets it up for scratch.
        let rsrc = [0, 0, u32::MAX, super::wave::RSRC3_ADD_TID_ENABLE | 3 << 21];
        for (k, w) in rsrc.into_iter().enumerate() {
            if let Some(x) = r.sgpr.get_mut(s + k) {
                *x = w;
            }
        }
        s += 4;
    }
    if kd.dispatch_ptr() {
        put64(&mut r, &mut s, d.packet_addr);
    }
    if kd.queue_ptr() {
        put64(&mut r, &mut s, 0);
    }
    if kd.kernarg_segment_ptr() {
        put64(&mut r, &mut s, d.kernarg);
    }
    if kd.dispatch_id() {
        put64(&mut r, &mut s, d.id.0);
    }
    if kd.flat_scratch_init() {
        put64(&mut r, &mut s, 0);
    }
    if kd.private_segment_size() {
        s += 1;
    }
    let mut s = (kd.user_sgpr_count() as usize).max(s);
    for (dim, on) in kd.workgroup_id_enabled().into_iter().enumerate() {
        if on {
            if let Some(x) = r.sgpr.get_mut(s) {
                *x = coord[dim];
            }
            s += 1;
        }
    }
    if kd.workgroup_info() {
        s += 1;
    }
    let _ = s;
    // Work-items of this wave; gfx90a packs the ids into v0 (x | y<<10 | z<<20).
    let wg = d.wg.map(|x| x as u32);
    let mut exec = 0u64;
    for lane in 0..LANES as u32 {
        let lin = index * LANES as u32 + lane;
        let (x, y, z) = (lin % wg[0], (lin / wg[0]) % wg[1], lin / (wg[0] * wg[1]));
        if z >= wg[2] {
            continue;
        }
        let g = [
            coord[0] * wg[0] + x,
            coord[1] * wg[1] + y,
            coord[2] * wg[2] + z,
        ];
        if g[0] >= d.grid[0] || g[1] >= d.grid[1] || g[2] >= d.grid[2] {
            continue;
        }
        exec |= 1 << lane;
        if let Some(v0) = r.vgpr.get_mut(0) {
            v0[lane as usize] = x | y << 10 | z << 20;
        }
    }
    r.exec = exec;
    r.pc = d.entry;
    r
}

/// The host scheduling priority of the device threads.
///
/// A real GPU runs its waves without taking host CPU from the debugger;
/// the simulator's device threads do take it, and 10,000 spinning waves keep
/// every device thread busy. At the default priority they shared the CPUs
/// with the debugger's one event loop thread, which then waited for a CPU
/// in the middle of a stop-all (on 2 CPUs, 8 ms of the loop's CPU time took
/// 0.4–2.3 s of wall-clock time, every switch away from it a preemption).
/// At the lowest priority (nice 19) they run on what the debugger leaves.
mod host_priority {
    /// Nice value of a device thread (the lowest priority).
    const DEVICE_NICE: libc::c_int = 19;

    /// Lowers the calling thread's priority; best effort (a failure leaves
    /// it where it was, which only costs latency).
    pub fn lower_this_thread() {
        let tid = nix::unistd::gettid().as_raw();
        // SAFETY: setpriority takes plain integers and touches no memory of
        // ours; on Linux, PRIO_PROCESS with a thread id sets that thread's
        // nice value only.
        let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, DEVICE_NICE) };
        if r != 0 {
            tracing::debug!(target: "simgpu", "device thread priority unchanged: {}", std::io::Error::last_os_error());
        }
    }
}

fn worker(shared: &Shared) {
    host_priority::lower_this_thread();
    loop {
        let wg = {
            let mut s = lock(&shared.sched);
            loop {
                if s.shutdown {
                    return;
                }
                if let Some(wg) = s.run_queue.pop_front() {
                    break wg;
                }
                s = shared.work_cv.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        };
        run_workgroup(shared, &wg);
    }
}

fn trap_reason(id: u8) -> (StopReasons, bool) {
    // (reasons, pc stays after the trap)
    match id {
        1 => (StopReasons::BREAKPOINT, true),
        2 => (StopReasons::ASSERT_TRAP, false),
        3 => (StopReasons::DEBUG_TRAP, true),
        _ => (StopReasons::TRAP, false),
    }
}

fn run_workgroup(shared: &Shared, wg: &Arc<Workgroup>) {
    let debug = lock(&shared.sched).debug;
    let mut events = Vec::new();
    let mut finished = Vec::new();
    let mut abort: Option<DispatchOutcome> = None;
    let mut executed = 0u64;
    // Events of stop requests, queued (unbounded) as the lock is released.
    let mut requested = Vec::new();
    let (requeue, all_done) = {
        let mut guard = lock(&wg.inner);
        wg.apply_stop_requests(&mut guard, &mut requested);
        let inner = &mut *guard;
        if wg.aborted.load(Ordering::Relaxed) {
            for w in inner.waves.iter_mut().filter(|w| w.run != Run::Done) {
                w.run = Run::Done;
                finished.push(w.id);
            }
        }
        // The code page of the last wave run: the next wave, running the
        // same code, usually starts on it (the loop checks it as it checks
        // every instruction), so no cache lookup per wave.
        let mut last_page = None;
        let mut last_other: Option<Arc<super::icache::DecodedPage>> = None;
        for w in inner.waves.iter_mut() {
            if w.run != Run::Running || w.at_barrier {
                continue;
            }
            let mut scratch = std::mem::take(&mut w.scratch);
            let mut ctx = Ctx {
                mem: &*shared.mem,
                lds: &mut inner.lds,
                scratch: &mut scratch,
                code: None,
            };
            let mut n = 0;
            let code = &shared.code;
            let quantum = shared.cfg.quantum;
            let mut page = last_page.take().unwrap_or_else(|| code.page(w.regs.pc));
            // The page the wave was on before `page` (calls and returns
            // between a kernel and its functions go back and forth), tried
            // before the cache's map.
            let mut other = last_other.take();
            while n < quantum && wg.attention.load(Ordering::Relaxed) == 0 {
                n += 1;
                let pc = w.regs.pc;
                // A displaced wave runs single-step only (its library
                // refuses any other resume): the check is a load of a line
                // the loop reads anyway.
                let displaced = if w.displaced.is_some() {
                    run_displaced(w, &mut ctx)
                } else {
                    None
                };
                let out = match displaced {
                    Some(out) => out,
                    None => {
                        let inst = match page.get(pc, code.generation()) {
                            Some(i) => i,
                            None => {
                                let next = match other.take() {
                                    Some(p) if p.get(pc, code.generation()).is_some() => p,
                                    _ => code.page(pc),
                                };
                                other = Some(std::mem::replace(&mut page, next));
                                page.at(pc)
                            }
                        };
                        match inst {
                            Some(d) => d.run(&mut w.regs, &mut ctx),
                            None => Step::IllegalInstruction,
                        }
                    }
                };
                // The common case: on to the next instruction.
                if out == Step::Continue && !w.single_step {
                    continue;
                }
                let stop = |w: &mut SimWave, reasons: StopReasons, at: Option<u64>| {
                    if let Some(pc) = at {
                        w.regs.pc = pc;
                    }
                    w.run = Run::Stopped;
                    w.single_step = false;
                    w.stop_reason = reasons;
                };
                match out {
                    Step::Continue | Step::Barrier => {
                        if out == Step::Barrier {
                            w.at_barrier = true;
                        }
                        if w.single_step {
                            stop(w, StopReasons::SINGLE_STEP, None);
                            events.push(DeviceEvent::WaveStop {
                                wave: w.id,
                                reasons: StopReasons::SINGLE_STEP,
                                pc: w.regs.pc,
                                exec: w.regs.exec,
                            });
                        }
                        if out == Step::Barrier || w.run != Run::Running {
                            break;
                        }
                    }
                    Step::End => {
                        let requested = wg.take_stop_request(w.index as usize);
                        if w.single_step || requested {
                            events.push(DeviceEvent::WaveCommandTerminated { wave: w.id });
                        }
                        w.run = Run::Done;
                        finished.push(w.id);
                        break;
                    }
                    Step::Trap(_) | Step::MemoryViolation { .. } | Step::IllegalInstruction => {
                        let (reasons, at, fault_addr) = match out {
                            Step::Trap(id) => {
                                let (r, after) = trap_reason(id as u8);
                                (r, if after { None } else { Some(pc) }, None)
                            }
                            Step::MemoryViolation { addr } => {
                                (StopReasons::MEMORY_VIOLATION, Some(pc), Some(addr))
                            }
                            _ => (StopReasons::ILLEGAL_INSTRUCTION, Some(pc), None),
                        };
                        stop(w, reasons, at);
                        if debug {
                            events.push(DeviceEvent::WaveStop {
                                wave: w.id,
                                reasons,
                                pc: w.regs.pc,
                                exec: w.regs.exec,
                            });
                        } else if abort.is_none() {
                            abort = Some(DispatchOutcome::Aborted {
                                reason: reasons,
                                pc: w.regs.pc,
                                fault_addr,
                            });
                        }
                        break;
                    }
                }
            }
            w.scratch = scratch;
            executed += n as u64;
            last_page = Some(page);
            last_other = other;
        }
        if abort.is_some() {
            wg.aborted.store(true, Ordering::Relaxed);
            for w in inner.waves.iter_mut().filter(|w| w.run != Run::Done) {
                w.run = Run::Done;
                finished.push(w.id);
            }
        }
        // Barrier: release when every live wave has arrived.
        let live = inner.waves.iter().filter(|w| w.run != Run::Done);
        let (mut arrived, mut total) = (0, 0);
        for w in live {
            total += 1;
            arrived += w.at_barrier as usize;
        }
        if total > 0 && arrived == total {
            for w in inner.waves.iter_mut() {
                w.at_barrier = false;
            }
        }
        wg.apply_stop_requests(inner, &mut requested);
        let requeue = inner
            .waves
            .iter()
            .any(|w| w.run == Run::Running && !w.at_barrier);
        inner.queued = requeue;
        let all_done = inner.waves.iter().all(|w| w.run == Run::Done);
        release(shared, wg, guard, requested);
        (requeue, all_done)
    };
    shared.instructions.fetch_add(executed, Ordering::Relaxed);
    let mut s = lock(&shared.sched);
    for id in &finished {
        s.waves.remove(id);
    }
    if !finished.is_empty() {
        shared.waves_epoch.fetch_add(1, Ordering::AcqRel);
    }
    s.resident_waves = s.resident_waves.saturating_sub(finished.len());
    let did = wg.dispatch.id;
    let mut completed = false;
    let mut retired = false;
    if let Some(d) = s.dispatches.get_mut(&did) {
        if let Some(a) = abort {
            d.aborted.store(true, Ordering::Relaxed);
            if d.outcome.is_none() {
                d.outcome = Some(a);
                completed = true;
            }
        }
        if all_done {
            d.live_wgs = d.live_wgs.saturating_sub(1);
            let aborted = d.aborted.load(Ordering::Relaxed);
            if d.live_wgs == 0
                && (aborted || d.next_wg >= d.desc.total_wgs())
                && d.outcome.is_none()
            {
                d.outcome = Some(DispatchOutcome::Completed);
                completed = true;
            }
            retired = d.live_wgs == 0 && d.outcome.is_some();
        }
        if completed {
            if let Some(o) = d.outcome {
                events.push(DeviceEvent::DispatchDone {
                    dispatch: did,
                    outcome: o,
                });
            }
        }
    }
    if requeue {
        s.run_queue.push_back(wg.clone());
    }
    if all_done || !finished.is_empty() {
        launch_more(shared, &mut s);
        shared.work_cv.notify_all();
    }
    let debug = s.debug;
    drop(s);
    if completed || retired {
        shared.done_cv.notify_all();
    }
    if debug {
        // Outside every lock: this may wait for the consumer (backpressure),
        // and the consumer needs the scheduler and workgroup locks to make
        // progress. A wave's next event needs the debugger's resume, so its
        // events cannot overtake each other here.
        let mut wake = false;
        for ev in events {
            wake |= shared.events.push(ev) == Ok(Wake::Yes);
        }
        if wake {
            notify_hook(shared);
        }
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;

    fn ids(v: &[u64]) -> Vec<WaveId> {
        v.iter().map(|&x| WaveId(x)).collect()
    }

    #[test]
    fn dense_ids_are_found_by_slot_and_gaps_are_not_waves() {
        // Two workgroups of a launch, a dispatch id between them.
        let v = ids(&[10, 11, 12, 13, 15, 16]);
        let p = Positions::new(&v);
        assert!(!p.slots.is_empty());
        for (i, w) in v.iter().enumerate() {
            assert_eq!(p.find(&v, *w), Some(i));
        }
        for gap in [0, 9, 14, 17, u64::MAX] {
            assert_eq!(p.find(&v, WaveId(gap)), None, "{gap}");
        }
    }

    #[test]
    fn sparse_ids_fall_back_to_a_search() {
        let v = ids(&[5, 1_000_000_000, 1_000_000_001]);
        let p = Positions::new(&v);
        assert!(p.slots.is_empty());
        assert_eq!(p.find(&v, WaveId(1_000_000_001)), Some(2));
        assert_eq!(p.find(&v, WaveId(6)), None);
        let none = Positions::new(&[]);
        assert_eq!(none.find(&[], WaveId(1)), None);
    }
}
