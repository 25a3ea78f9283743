//! The library's side of an event storm (`SIMGPU_STORM`, read at process
//! attach; see `gpu_target::sim::storm`).
//!
//! Storm producer threads push synthetic events into the device's bounded
//! hand-off, the path real device events take. The library's caller pulls
//! them one at a time, only while nothing is pending for the client (so the
//! hand-off is the only buffer and producers feel backpressure), checks each
//! with a [`StormChecker`], and turns them into ABI events:
//!
//! | storm event      | ABI event                  | library state          |
//! |------------------|----------------------------|------------------------|
//! | dispatch begins  | —                          | wave + dispatch listed |
//! | wave stops       | `WAVE_STOP`                | wave stopped           |
//! | wave resumes     | — (waits until the stop is processed) | wave runs   |
//! | dispatch ends    | `WAVE_COMMAND_TERMINATED`  | wave + dispatch gone   |
//! | code objects     | `CODE_OBJECT_LIST_UPDATED` | producer's entry bumped|
//!
//! A storm wave's end is reported as `WAVE_COMMAND_TERMINATED` so that a
//! client learns, in order, that state it keeps for the wave (its last stop)
//! can go. Clients cannot stop storm waves (`wave_stop` answers
//! NOT_IMPLEMENTED); they may resume one whose stop they processed.
//!
//! When every event was pulled and every delivered event processed, the
//! library logs one INFO line `simgpu storm: report {json}` through the
//! client's log callback: producer-side counts, the checker's tally, what
//! was delivered and processed per kind, and the hand-off's counters.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use gpu_target::model::StopReasons;
use gpu_target::model::WaveId;
use gpu_target::sim::handoff::HandoffStats;
use gpu_target::sim::storm::Storm;
use gpu_target::sim::storm::StormChecker;
use gpu_target::sim::storm::StormEvent;

/// Where storm waves' PCs point (nothing is mapped there).
const STORM_PC: u64 = 0x7e00_0000_0000;

/// A live storm wave.
pub struct StormWave {
    /// Stopped (as the device sees it).
    pub stopped: bool,
    /// Its last stop's reasons.
    pub reasons: StopReasons,
    /// Its PC.
    pub pc: u64,
    /// Stops so far.
    pub stops: u64,
    /// The WAVE_STOP event not processed yet.
    pub stop_event: Option<u64>,
}

/// Counts of ABI events by kind: stops, terminations, code-object updates.
#[derive(Default, Clone, Copy)]
pub struct KindCounts {
    pub wave_stop: u64,
    pub terminated: u64,
    pub code_objects: u64,
}

impl KindCounts {
    fn total(&self) -> u64 {
        self.wave_stop + self.terminated + self.code_objects
    }
}

/// A storm in progress (or done) for one process.
pub struct StormRun {
    storm: Storm,
    checker: StormChecker,
    started: Instant,
    /// Events each producer will push.
    expected: Vec<u64>,
    /// Live storm waves.
    pub waves: HashMap<WaveId, StormWave>,
    /// Per producer, the generation of its code object (0: none yet).
    pub code_generation: Vec<u64>,
    /// A resume waiting for the client to process its wave's stop; nothing
    /// else is pulled meanwhile (order).
    pub stalled: Option<StormEvent>,
    /// ABI events of the storm returned by `next_pending_event`.
    pub delivered: KindCounts,
    /// … and marked processed.
    pub processed: KindCounts,
    /// `event_processed` calls with an unknown event id while the storm ran.
    pub invalid_acks: u64,
    /// Times a resume waited for its stop to be processed.
    pub stalls: u64,
    /// Most events pending for the client at once.
    pub max_pending: usize,
    reported: bool,
}

impl StormRun {
    /// Starts the producers.
    pub fn start(storm: Storm) -> Self {
        let cfg = storm.config().clone();
        Self {
            checker: StormChecker::new(cfg.threads),
            started: Instant::now(),
            expected: (0..cfg.threads).map(|p| cfg.events_of(p)).collect(),
            waves: HashMap::new(),
            code_generation: vec![0; cfg.threads],
            stalled: None,
            delivered: KindCounts::default(),
            processed: KindCounts::default(),
            invalid_acks: 0,
            stalls: 0,
            max_pending: 0,
            reported: false,
            storm,
        }
    }

    /// Checks an event just pulled from the hand-off (once per event).
    pub fn check(&mut self, ev: &StormEvent) {
        self.checker.check(ev);
    }

    /// The PC a storm wave reports at its `n`th stop.
    pub fn pc_at(n: u64) -> u64 {
        STORM_PC + 4 * (n % 1024)
    }

    /// Stops the producers (the hand-off must be closed first).
    pub fn join(&mut self) {
        self.storm.join();
    }

    /// Notes how many events are pending for the client; `true` once the
    /// storm is complete and not yet reported: every expected event was
    /// pulled and every delivered storm event processed.
    pub fn due(&mut self, pending: usize) -> bool {
        self.max_pending = self.max_pending.max(pending);
        let total: u64 = self.expected.iter().sum();
        !self.reported
            && self.checker.tally().pulled >= total
            && self.stalled.is_none()
            && pending == 0
            && self.delivered.total() == self.processed.total()
    }

    /// The report (once [`StormRun::due`]), as one JSON object.
    pub fn take_report(&mut self, handoff: HandoffStats) -> String {
        self.reported = true;
        let t = self.checker.tally();
        let secs = self.started.elapsed().as_secs_f64();
        let cfg = self.storm.config();
        let mut s = String::from("{\"config\":{");
        let _ = write!(
            s,
            "\"threads\":{},\"events\":{},\"waves\":{},\"stops\":{},\"code_objects\":{}}},",
            cfg.threads, cfg.events, cfg.waves, cfg.max_stops, cfg.code_object_every
        );
        let _ = write!(
            s,
            "\"seconds\":{secs:.3},\"events_per_second\":{:.0},",
            t.pulled as f64 / secs.max(1e-9)
        );
        let kinds = |k: &KindCounts| {
            format!(
                "{{\"total\":{},\"wave_stop\":{},\"wave_command_terminated\":{},\"code_object_list_updated\":{}}}",
                k.total(),
                k.wave_stop,
                k.terminated,
                k.code_objects
            )
        };
        let _ = write!(
            s,
            "\"delivered\":{},\"processed\":{},\"invalid_acks\":{},\"stalls\":{},\"max_pending\":{},",
            kinds(&self.delivered),
            kinds(&self.processed),
            self.invalid_acks,
            self.stalls,
            self.max_pending
        );
        let _ = write!(
            s,
            "\"handoff\":{{\"capacity\":{},\"pushed\":{},\"popped\":{},\"high_water\":{},\"producer_waits\":{},\"overflow\":{},\"dropped\":{}}},",
            handoff.capacity,
            handoff.pushed,
            handoff.popped,
            handoff.high_water,
            handoff.blocked,
            handoff.overflow,
            handoff.dropped
        );
        let _ = write!(s, "\"producer_counts\":{:?},", self.storm.produced());
        let _ = write!(s, "\"check\":{}}}", t.to_json(&self.expected));
        s
    }
}
