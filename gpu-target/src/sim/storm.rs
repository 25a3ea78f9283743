//! Event storms: synthetic device events produced as fast as producer
//! threads can push them, to test that a debugger consumes every event
//! exactly once, in order, with bounded memory.
//!
//! Producer threads stand in for device threads: each owns a few wave
//! *slots* and pushes, through [`Device::inject_event`] (the same bounded
//! hand-off real device events take), a stream of [`StormEvent`]s numbered
//! per producer. In each slot a dispatch with one wave begins, the wave
//! stops and resumes a few times, and the dispatch ends; now and then the
//! producer loads a new version of its code object. The consumer checks the
//! stream with a [`StormChecker`].
//!
//! The simulated amd-dbgapi library starts a storm at process attach when
//! `SIMGPU_STORM` is set (see [`StormConfig::parse`]):
//!
//! ```
//! use gpu_target::sim::storm::StormConfig;
//! let c = StormConfig::parse("threads=8,events=1000000,waves=64").unwrap();
//! assert_eq!((c.threads, c.events, c.waves), (8, 1_000_000, 64));
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use thiserror::Error;

use super::device::Device;
use super::device::DeviceEvent;
use crate::model::StopReasons;
use crate::model::WaveId;

/// The environment variable the simulated library reads at attach.
pub const STORM_ENV: &str = "SIMGPU_STORM";

/// Storm wave and dispatch ids have this bit set (device ids count up from
/// 1 and never reach it).
pub const STORM_ID_BASE: u64 = 1 << 39;

const SERIAL_BITS: u32 = 28;

/// Whether `id` (a wave or dispatch id) belongs to a storm.
pub fn is_storm_id(id: u64) -> bool {
    id & STORM_ID_BASE != 0
}

/// What a storm produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StormConfig {
    /// Producer threads.
    pub threads: usize,
    /// Events in all (split evenly between producers).
    pub events: u64,
    /// Wave slots in all (split between producers; at least one each).
    pub waves: usize,
    /// Most stops of a wave before its dispatch ends.
    pub max_stops: u32,
    /// A code-object update every this many events per producer (0: none).
    pub code_object_every: u64,
    /// Capacity of the device's event hand-off.
    pub capacity: usize,
}

impl Default for StormConfig {
    fn default() -> Self {
        Self {
            threads: 8,
            events: 1_000_000,
            waves: 64,
            max_stops: 8,
            code_object_every: 64,
            capacity: 1024,
        }
    }
}

/// A malformed storm description.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum StormConfigError {
    /// Not `key=value`.
    #[error("storm setting {0:?} is not key=value")]
    NotKeyValue(String),
    /// Unknown key.
    #[error("unknown storm setting {0:?} (threads, events, waves, stops, code_objects, capacity)")]
    UnknownKey(String),
    /// Not a number, or out of range.
    #[error("storm setting {key}={value:?} is not a valid number")]
    BadNumber {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
}

impl StormConfig {
    /// Parses `key=value` pairs separated by commas, over the defaults:
    /// `threads` (1–64), `events`, `waves` (≥ 1), `stops` (most stops per
    /// dispatch, ≥ 1), `code_objects` (one update every N events per
    /// producer; 0 = none), `capacity` (of the device's event hand-off).
    pub fn parse(s: &str) -> Result<Self, StormConfigError> {
        let mut c = Self::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| StormConfigError::NotKeyValue(part.into()))?;
            let bad = || StormConfigError::BadNumber {
                key: k.into(),
                value: v.into(),
            };
            let n: u64 = v.trim().parse().map_err(|_| bad())?;
            match k.trim() {
                "threads" if (1..=64).contains(&n) => c.threads = n as usize,
                "events" => c.events = n,
                "waves" if (1..=1 << 20).contains(&n) => c.waves = n as usize,
                "stops" if (1..=u64::from(u32::MAX)).contains(&n) => c.max_stops = n as u32,
                "code_objects" => c.code_object_every = n,
                "capacity" if (1..=1 << 24).contains(&n) => c.capacity = n as usize,
                "threads" | "waves" | "stops" | "capacity" => return Err(bad()),
                _ => return Err(StormConfigError::UnknownKey(k.into())),
            }
        }
        Ok(c)
    }

    /// Events producer `p` produces.
    pub fn events_of(&self, p: usize) -> u64 {
        let t = self.threads.max(1) as u64;
        self.events / t + u64::from((p as u64) < self.events % t)
    }

    fn slots_of(&self, p: usize) -> usize {
        let t = self.threads.max(1);
        (self.waves / t + usize::from(p < self.waves % t)).max(1)
    }
}

/// One synthetic event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StormEvent {
    /// The producer thread.
    pub producer: u32,
    /// Its number in the producer's stream (from 0, no gaps).
    pub seq: u64,
    /// What happened.
    pub kind: StormKind,
}

/// What a storm event says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StormKind {
    /// A dispatch with one (running) wave began.
    DispatchBegin {
        /// The wave; its dispatch has the same number.
        wave: WaveId,
    },
    /// The wave stopped.
    WaveStop {
        /// Which.
        wave: WaveId,
        /// Why.
        reasons: StopReasons,
    },
    /// The wave runs again (the device resumed it once its stop was
    /// processed).
    WaveResume {
        /// Which.
        wave: WaveId,
    },
    /// The wave ended and its dispatch with it.
    DispatchEnd {
        /// Which.
        wave: WaveId,
    },
    /// The producer's code object was replaced by a new generation.
    CodeObjects {
        /// Generation (from 1).
        generation: u64,
    },
}

impl StormKind {
    /// The wave the event is about.
    pub fn wave(&self) -> Option<WaveId> {
        match *self {
            StormKind::DispatchBegin { wave }
            | StormKind::WaveStop { wave, .. }
            | StormKind::WaveResume { wave }
            | StormKind::DispatchEnd { wave } => Some(wave),
            StormKind::CodeObjects { .. } => None,
        }
    }
}

struct Counters {
    produced: Vec<AtomicU64>,
    finished: AtomicUsize,
}

/// Running producer threads.
pub struct Storm {
    cfg: StormConfig,
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<()>>,
}

impl Storm {
    /// Starts `cfg.threads` producers pushing into `device`'s event
    /// hand-off. They stop early when the hand-off is closed (debug mode
    /// left).
    pub fn start(device: Arc<Device>, cfg: StormConfig) -> Self {
        let counters = Arc::new(Counters {
            produced: (0..cfg.threads).map(|_| AtomicU64::new(0)).collect(),
            finished: AtomicUsize::new(0),
        });
        let threads = (0..cfg.threads)
            .filter_map(|p| {
                let device = device.clone();
                let counters = counters.clone();
                let cfg = cfg.clone();
                std::thread::Builder::new()
                    .name(format!("simgpu-storm{p}"))
                    .spawn(move || {
                        produce(&device, &cfg, p, &counters.produced[p]);
                        counters.finished.fetch_add(1, Ordering::SeqCst);
                    })
                    .ok()
            })
            .collect();
        Self {
            cfg,
            counters,
            threads,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StormConfig {
        &self.cfg
    }

    /// Events pushed so far, per producer.
    pub fn produced(&self) -> Vec<u64> {
        self.counters
            .produced
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }

    /// Whether every producer has returned.
    pub fn finished(&self) -> bool {
        self.counters.finished.load(Ordering::SeqCst) == self.cfg.threads
    }

    /// Waits for the producers (close the hand-off first to stop them).
    pub fn join(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    wave: Option<WaveId>,
    stopped: bool,
    stops_left: u32,
}

/// xorshift64*: deterministic per producer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn produce(device: &Device, cfg: &StormConfig, p: usize, produced: &AtomicU64) {
    let total = cfg.events_of(p);
    let mut slots = vec![
        Slot {
            wave: None,
            stopped: false,
            stops_left: 0,
        };
        cfg.slots_of(p)
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (p as u64 + 1));
    let mut serial = 0u64;
    let mut generation = 0u64;
    for seq in 0..total {
        let remaining = total - seq;
        // Events still needed to end every live wave: resume + end, or end.
        let closing: u64 = slots
            .iter()
            .map(|s| match (s.wave, s.stopped) {
                (Some(_), true) => 2,
                (Some(_), false) => 1,
                (None, _) => 0,
            })
            .sum();
        let kind = if cfg.code_object_every > 0
            && seq % cfg.code_object_every == cfg.code_object_every - 1
            && remaining > closing
        {
            generation += 1;
            StormKind::CodeObjects { generation }
        } else if remaining < closing + 2 {
            // Wind down: end the live waves with exactly the events left.
            match slots.iter_mut().find_map(|s| Some((s.wave?, s))) {
                Some((wave, s)) => step_down(s, wave),
                None => {
                    generation += 1;
                    StormKind::CodeObjects { generation }
                }
            }
        } else {
            let i = (rng.next() % slots.len() as u64) as usize;
            let s = &mut slots[i];
            match s.wave {
                None => {
                    serial += 1;
                    let wave = WaveId(
                        STORM_ID_BASE
                            | (p as u64) << SERIAL_BITS
                            | (serial & ((1 << SERIAL_BITS) - 1)),
                    );
                    s.wave = Some(wave);
                    s.stopped = false;
                    s.stops_left = 1 + (rng.next() % u64::from(cfg.max_stops.max(1))) as u32;
                    StormKind::DispatchBegin { wave }
                }
                Some(wave) if !s.stopped && s.stops_left > 0 => {
                    s.stopped = true;
                    s.stops_left -= 1;
                    StormKind::WaveStop {
                        wave,
                        reasons: StopReasons::NONE,
                    }
                }
                Some(wave) => step_down(s, wave),
            }
        };
        let ev = StormEvent {
            producer: p as u32,
            seq,
            kind,
        };
        if device.inject_event(DeviceEvent::Storm(ev)).is_err() {
            return;
        }
        produced.fetch_add(1, Ordering::SeqCst);
    }
}

/// Resume the stopped wave of `s`, or end it when it runs.
fn step_down(s: &mut Slot, wave: WaveId) -> StormKind {
    if s.stopped {
        s.stopped = false;
        StormKind::WaveResume { wave }
    } else {
        s.wave = None;
        StormKind::DispatchEnd { wave }
    }
}

/// What a consumer saw of a storm, as checked by [`StormChecker`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StormTally {
    /// Events checked.
    pub pulled: u64,
    /// Events whose number was not the next of their producer (lost,
    /// duplicated or reordered).
    pub out_of_order: u64,
    /// Events impossible in their wave's state (stop of a stopped wave…).
    pub state_errors: u64,
    /// Per producer: the next number expected (= events seen in order).
    pub next_seq: Vec<u64>,
    /// Dispatches begun / ended.
    pub dispatches: (u64, u64),
    /// Stops / resumes.
    pub stops: (u64, u64),
    /// Code-object updates.
    pub code_objects: u64,
    /// Live waves now.
    pub live_waves: usize,
    /// The first anomalies, described (at most 16).
    pub anomalies: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Running,
    Stopped,
}

/// Checks a storm stream on the consumer side: per producer the numbers
/// follow each other without a gap (nothing lost, duplicated or reordered,
/// so every wave's events are in order), and each wave's events follow
/// begin → (stop → resume)* → end. Memory: one entry per live wave.
pub struct StormChecker {
    tally: StormTally,
    waves: HashMap<WaveId, Seen>,
}

impl StormChecker {
    /// A checker for `producers` producers.
    pub fn new(producers: usize) -> Self {
        Self {
            tally: StormTally {
                next_seq: vec![0; producers],
                ..StormTally::default()
            },
            waves: HashMap::new(),
        }
    }

    fn anomaly(&mut self, what: impl FnOnce() -> String) {
        if self.tally.anomalies.len() < 16 {
            self.tally.anomalies.push(what());
        }
    }

    /// Checks the next event; `false` when it is out of order or
    /// impossible (counted either way).
    pub fn check(&mut self, ev: &StormEvent) -> bool {
        let t = &mut self.tally;
        t.pulled += 1;
        let mut ok = true;
        let p = ev.producer as usize;
        match t.next_seq.get_mut(p) {
            Some(next) if *next == ev.seq => *next += 1,
            Some(next) => {
                let expected = *next;
                *next = ev.seq + 1;
                t.out_of_order += 1;
                ok = false;
                self.anomaly(|| format!("producer {p}: event {} after {}", ev.seq, expected));
            }
            None => {
                t.out_of_order += 1;
                ok = false;
                self.anomaly(|| format!("unknown producer {p}"));
            }
        }
        let state = ev.kind.wave().map(|w| (w, self.waves.get(&w).copied()));
        let legal = match (ev.kind, state) {
            (StormKind::DispatchBegin { wave }, Some((_, None))) => {
                self.waves.insert(wave, Seen::Running);
                self.tally.dispatches.0 += 1;
                true
            }
            (StormKind::WaveStop { wave, .. }, Some((_, Some(Seen::Running)))) => {
                self.waves.insert(wave, Seen::Stopped);
                self.tally.stops.0 += 1;
                true
            }
            (StormKind::WaveResume { wave }, Some((_, Some(Seen::Stopped)))) => {
                self.waves.insert(wave, Seen::Running);
                self.tally.stops.1 += 1;
                true
            }
            (StormKind::DispatchEnd { wave }, Some((_, Some(Seen::Running)))) => {
                self.waves.remove(&wave);
                self.tally.dispatches.1 += 1;
                true
            }
            (StormKind::CodeObjects { .. }, _) => {
                self.tally.code_objects += 1;
                true
            }
            _ => false,
        };
        if !legal {
            self.tally.state_errors += 1;
            self.anomaly(|| format!("impossible in its wave's state: {ev:?}"));
        }
        self.tally.live_waves = self.waves.len();
        ok && legal
    }

    /// The tally so far.
    pub fn tally(&self) -> &StormTally {
        &self.tally
    }
}

impl StormTally {
    /// Events lost: expected (per producer) but never seen in order.
    pub fn lost(&self, expected: &[u64]) -> u64 {
        expected
            .iter()
            .zip(&self.next_seq)
            .map(|(p, n)| p.saturating_sub(*n))
            .sum()
    }

    /// The tally as one JSON object, given the events each producer was
    /// to push (no nesting beyond an array of strings).
    pub fn to_json(&self, expected: &[u64]) -> String {
        let mut s = String::new();
        let total: u64 = expected.iter().sum();
        let _ = write!(
            s,
            "{{\"expected\":{total},\"pulled\":{},\"lost\":{},\"out_of_order\":{},\"state_errors\":{},\
             \"dispatches_begun\":{},\"dispatches_ended\":{},\"stops\":{},\"resumes\":{},\
             \"code_object_updates\":{},\"live_waves\":{},\"anomalies\":[",
            self.pulled,
            self.lost(expected),
            self.out_of_order,
            self.state_errors,
            self.dispatches.0,
            self.dispatches.1,
            self.stops.0,
            self.stops.1,
            self.code_objects,
            self.live_waves,
        );
        for (i, a) in self.anomalies.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push('"');
            for c in a.chars() {
                match c {
                    '"' | '\\' => {
                        s.push('\\');
                        s.push(c);
                    }
                    c if (c as u32) < 0x20 => s.push(' '),
                    c => s.push(c),
                }
            }
            s.push('"');
        }
        s.push_str("]}");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::device::DeviceConfig;
    use crate::sim::memory::BufferMemory;

    #[test]
    fn parse_rejects_nonsense() {
        assert!(matches!(
            StormConfig::parse("threads=0"),
            Err(StormConfigError::BadNumber { .. })
        ));
        assert!(matches!(
            StormConfig::parse("bogus=1"),
            Err(StormConfigError::UnknownKey(_))
        ));
        assert!(matches!(
            StormConfig::parse("events"),
            Err(StormConfigError::NotKeyValue(_))
        ));
        let c = StormConfig::parse(" events=10 , stops=2,code_objects=0").unwrap();
        assert_eq!((c.events, c.max_stops, c.code_object_every), (10, 2, 0));
        assert_eq!(
            (0..8)
                .map(|p| StormConfig::parse("events=13").unwrap().events_of(p))
                .sum::<u64>(),
            13
        );
    }

    /// Producers through a small hand-off, consumed here: every stream is
    /// complete, in order, and every wave ends.
    #[test]
    fn storm_streams_check_clean() {
        let dev = Arc::new(Device::new(
            Arc::new(BufferMemory::new()),
            DeviceConfig {
                threads: 1,
                event_capacity: 8,
                ..Default::default()
            },
        ));
        dev.set_debug(true);
        let cfg =
            StormConfig::parse("threads=4,events=20003,waves=10,stops=3,code_objects=7").unwrap();
        let mut storm = Storm::start(dev.clone(), cfg.clone());
        let mut checker = StormChecker::new(cfg.threads);
        while checker.tally().pulled < cfg.events {
            match dev.pop_event() {
                Some(DeviceEvent::Storm(ev)) => {
                    assert!(checker.check(&ev), "{:?}", checker.tally().anomalies);
                }
                Some(other) => panic!("unexpected device event {other:?}"),
                None => std::thread::yield_now(),
            }
        }
        storm.join();
        assert!(storm.finished());
        let produced = storm.produced();
        let t = checker.tally();
        assert_eq!(produced.iter().sum::<u64>(), cfg.events);
        assert_eq!(t.lost(&produced), 0);
        assert_eq!((t.out_of_order, t.state_errors, t.live_waves), (0, 0, 0));
        assert_eq!(t.dispatches.0, t.dispatches.1);
        assert_eq!(t.stops.0, t.stops.1);
        assert!(t.code_objects > 0);
        assert!(dev.event_stats().high_water <= 8);
        assert!(t.to_json(&produced).contains("\"lost\":0"));
    }

    #[test]
    fn checker_reports_gaps_and_impossible_events() {
        let mut c = StormChecker::new(1);
        let w = WaveId(STORM_ID_BASE | 1);
        let ev = |seq, kind| StormEvent {
            producer: 0,
            seq,
            kind,
        };
        assert!(c.check(&ev(0, StormKind::DispatchBegin { wave: w })));
        // Resume of a running wave, and a gap (1 lost).
        assert!(!c.check(&ev(2, StormKind::WaveResume { wave: w })));
        let t = c.tally();
        assert_eq!((t.out_of_order, t.state_errors), (1, 1));
        assert_eq!(t.lost(&[3]), 0);
        assert_eq!(t.lost(&[5]), 2);
        assert_eq!(t.anomalies.len(), 2);
    }
}
