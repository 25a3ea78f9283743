//! The bounds on what a client can make the server hold, in one place.
//!
//! Every per-session and per-server buffer that grows with client input
//! has a limit here, a type that enforces it, and a row in the README's
//! limits table. The types are small and free of I/O so that the session
//! and the server only call them:
//!
//! - [`XferCache`]: the `qXfer` documents kept for windowed reads;
//! - [`UnknownLog`]: which unknown packets were already logged;
//! - [`EnvLimits`]: the environment a client builds with `QEnvironment*`;
//! - [`HELD_INPUT_LIMIT`]: input held while a vanished client's resume
//!   ends (`--multi`);
//! - [`ConnBudget`]: what a refused connection may make the loop do per
//!   turn and in all;
//! - [`stop_queue_limit`]: stops queued for the client in non-stop mode;
//! - [`WAVE_REGISTER_MAPS`]: GPU waves' register maps (kept for live
//!   waves only);
//! - GPU step-overs waiting for a displaced stepping buffer
//!   (`gpu::controller::GpuController`'s step queue): one per live wave,
//!   by construction (a wave is queued once, and leaves the queue when it
//!   steps, is resumed or stopped otherwise, or ends);
//! - `vFile` requests off the loop: `crate::hostio::offload::MAX_OUTSTANDING`
//!   (input sent meanwhile is held up to [`HELD_INPUT_LIMIT`]);
//! - a streamed `x` reply: one escaped piece of at most twice
//!   `session::handlers::memory::STREAM_PIECE` queued beyond what the socket
//!   took (input sent meanwhile is held up to [`HELD_INPUT_LIMIT`]).

use std::collections::VecDeque;
use std::time::Duration;
use std::time::Instant;

/// Most bytes of launched programs' output held for a stopped lldb
/// session ([`crate::native::ProgramOutput`]); the oldest are dropped.
pub const HELD_PROGRAM_OUTPUT: usize = 1 << 20;

/// Most GPU waves whose register map (architecture register number →
/// the wave's own register index) is kept at once. Maps of ended waves are
/// dropped at each wave listing and code-object list update (a wave that
/// ends on its own reports no event); past this many live waves with
/// read registers, every map is dropped and rebuilt on the next read.
/// An entry is a pointer to a map shared by the waves of one kernel, so
/// the bound is above the waves a device keeps resident (4096 made every
/// register read of a 10,000-wave stop rebuild its wave's entry).
pub const WAVE_REGISTER_MAPS: usize = 65_536;

/// Most `qXfer` documents kept at once (one per object and annex).
pub const XFER_CACHE_ENTRIES: usize = 8;
/// Most bytes (keys and documents) kept by the `qXfer` cache; the newest
/// document is always kept, whatever its size, so a windowed read of it
/// stays consistent.
pub const XFER_CACHE_BYTES: usize = 16 << 20;

/// The `qXfer` documents generated at offset 0 and kept until the next
/// stop, so that a windowed read sees one consistent document. Bounded by
/// [`XFER_CACHE_ENTRIES`] and [`XFER_CACHE_BYTES`]: the oldest documents
/// are dropped first (a read at a non-zero offset of a dropped document
/// regenerates it).
#[derive(Debug, Default)]
pub struct XferCache {
    entries: VecDeque<(String, Vec<u8>)>,
    bytes: usize,
}

impl XferCache {
    /// The document cached under `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, d)| d.as_slice())
    }

    /// Caches `doc` under `key` (replacing an older one), then drops the
    /// oldest documents until the bounds hold again.
    pub fn insert(&mut self, key: String, doc: Vec<u8>) {
        self.remove(&key);
        self.bytes += key.len() + doc.len();
        self.entries.push_back((key, doc));
        while self.entries.len() > 1
            && (self.entries.len() > XFER_CACHE_ENTRIES || self.bytes > XFER_CACHE_BYTES)
        {
            if let Some((k, d)) = self.entries.pop_front() {
                self.bytes -= k.len() + d.len();
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(i) = self.entries.iter().position(|(k, _)| k == key) {
            if let Some((k, d)) = self.entries.remove(i) {
                self.bytes -= k.len() + d.len();
            }
        }
    }

    /// Drops every document (a stop or resume makes them stale).
    pub fn clear(&mut self) {
        self.entries = VecDeque::new();
        self.bytes = 0;
    }

    /// Bytes held (keys and documents).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Most distinct unknown packets logged per connection.
pub const UNKNOWN_LOG_ENTRIES: usize = 256;
/// How much of an unknown packet is kept (and logged) to recognise it.
pub const UNKNOWN_LOG_PREFIX: usize = 64;

/// Logs each distinct unknown packet once, keeping only its first
/// [`UNKNOWN_LOG_PREFIX`] bytes for at most [`UNKNOWN_LOG_ENTRIES`]
/// packets (16 KiB in all).
#[derive(Debug, Default)]
pub struct UnknownLog {
    seen: std::collections::HashSet<Vec<u8>>,
}

impl UnknownLog {
    /// The prefix to log when `packet` was not logged yet, else `None`.
    pub fn first_sight<'a>(&mut self, packet: &'a [u8]) -> Option<&'a [u8]> {
        let prefix = packet.get(..UNKNOWN_LOG_PREFIX).unwrap_or(packet);
        (self.seen.len() < UNKNOWN_LOG_ENTRIES && self.seen.insert(prefix.to_vec()))
            .then_some(prefix)
    }

    /// Forgets everything (a new client).
    pub fn clear(&mut self) {
        self.seen = Default::default();
    }

    /// Bytes held by the entries.
    pub fn bytes(&self) -> usize {
        self.seen.iter().map(Vec::len).sum()
    }
}

/// Most variables a client may set with `QEnvironment*`.
pub const ENV_MAX_VARS: usize = 4096;
/// Most bytes of `NAME=VALUE` text a client may set (the kernel's own
/// limit on a new program's arguments and environment is about 2 MiB).
pub const ENV_MAX_BYTES: usize = 1 << 20;

/// The limits on the environment for launched programs.
#[derive(Debug, Clone, Copy)]
pub struct EnvLimits;

impl EnvLimits {
    /// Whether an environment of `vars` variables and `bytes` bytes of
    /// `NAME=VALUE` text (a terminator each) is within [`ENV_MAX_VARS`]
    /// and [`ENV_MAX_BYTES`].
    pub fn check_totals(vars: usize, bytes: usize) -> Result<(), String> {
        if vars > ENV_MAX_VARS {
            return Err(format!(
                "the environment would have {vars} variables; the limit is {ENV_MAX_VARS}"
            ));
        }
        if bytes > ENV_MAX_BYTES {
            return Err(format!(
                "the environment would hold {bytes} bytes; the limit is {ENV_MAX_BYTES}"
            ));
        }
        Ok(())
    }
}

/// Most bytes a new `--multi` client may send while the vanished client's
/// resume is still ending (its packets wait until that stop is journaled).
/// A client that sends more is disconnected with a logged error; the kept
/// session is untouched.
pub const HELD_INPUT_LIMIT: usize = 1 << 20;

/// Most bytes read from one refused connection in one loop turn.
pub const REFUSED_TURN_BYTES: usize = 16 * 1024;
/// Most bytes read from one refused connection in all: it only has to
/// send one packet to get its answer, and its answer is sent once it has.
pub const REFUSED_TOTAL_BYTES: usize = 64 * 1024;
/// How long a refused connection may take to send its first packet before
/// it is answered anyway and closed (a slowloris holds a connection slot
/// no longer than this).
pub const REFUSED_DEADLINE: Duration = Duration::from_secs(10);

/// What a refused connection may cost the loop: at most
/// [`REFUSED_TURN_BYTES`] read per loop turn, [`REFUSED_TOTAL_BYTES`] in
/// all, and [`REFUSED_DEADLINE`] of time. A connection over a per-turn
/// budget is read again on the next turn, after every other ready
/// connection had its turn.
#[derive(Debug, Clone, Copy)]
pub struct ConnBudget {
    turn: u64,
    turn_bytes: usize,
    total: usize,
    deadline: Instant,
}

impl ConnBudget {
    /// The budget of a connection refused at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            turn: 0,
            turn_bytes: 0,
            total: 0,
            deadline: now + REFUSED_DEADLINE,
        }
    }

    /// How many bytes may be read in loop turn `turn` (0: stop reading
    /// until the next turn).
    pub fn allowance(&self, turn: u64) -> usize {
        let used = if turn == self.turn {
            self.turn_bytes
        } else {
            0
        };
        REFUSED_TURN_BYTES
            .saturating_sub(used)
            .min(REFUSED_TOTAL_BYTES.saturating_sub(self.total))
    }

    /// Counts `n` bytes read in loop turn `turn`.
    pub fn spend(&mut self, turn: u64, n: usize) {
        if turn != self.turn {
            self.turn = turn;
            self.turn_bytes = 0;
        }
        self.turn_bytes += n;
        self.total += n;
    }

    /// Whether the connection used up its total byte budget.
    pub fn exhausted(&self) -> bool {
        self.total >= REFUSED_TOTAL_BYTES
    }

    /// When the connection is answered and closed at the latest.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// Most stops the non-stop queue (`session/nonstop.rs`) can hold for
/// `live` = live threads plus processes: one unsent stop per thread (a
/// stopped thread stays stopped until the client resumes it; a second
/// stop of a thread replaces its unsent one), one exit per process, plus
/// the one sent and not yet acknowledged with `vStopped`. The bound holds
/// by construction; the queue logs an error should it ever be passed.
pub fn stop_queue_limit(live: usize) -> usize {
    live + 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn xfer_cache_keeps_the_newest_within_bounds() {
        let mut c = XferCache::default();
        for i in 0..100 {
            c.insert(format!("threads:{}", "a".repeat(900_000 + i)), vec![0; 10]);
            assert!(c.len() <= XFER_CACHE_ENTRIES);
            assert!(c.bytes() <= XFER_CACHE_BYTES);
        }
        let big = vec![1u8; XFER_CACHE_BYTES + 1];
        c.insert("libraries:".into(), big);
        assert_eq!(c.len(), 1, "an oversize newest document is kept alone");
        assert!(c.get("libraries:").is_some());
        c.insert("libraries:".into(), vec![2]);
        assert_eq!(c.get("libraries:"), Some(&[2u8][..]));
        assert_eq!(c.bytes(), "libraries:".len() + 1);
    }

    #[test]
    fn unknown_log_is_bounded() {
        let mut l = UnknownLog::default();
        let big = vec![b'x'; 1 << 20];
        assert_eq!(l.first_sight(&big).unwrap().len(), UNKNOWN_LOG_PREFIX);
        assert!(l.first_sight(&big).is_none());
        for i in 0..1000 {
            l.first_sight(format!("qUnknown{i}").as_bytes());
        }
        assert!(l.bytes() <= UNKNOWN_LOG_ENTRIES * UNKNOWN_LOG_PREFIX);
    }

    #[test]
    fn env_limits() {
        assert!(EnvLimits::check_totals(10, 100).is_ok());
        assert!(EnvLimits::check_totals(ENV_MAX_VARS + 1, 100).is_err());
        assert!(EnvLimits::check_totals(1, ENV_MAX_BYTES + 1).is_err());
    }

    #[test]
    fn conn_budget() {
        let now = Instant::now();
        let mut b = ConnBudget::new(now);
        assert_eq!(b.allowance(1), REFUSED_TURN_BYTES);
        b.spend(1, REFUSED_TURN_BYTES);
        assert_eq!(b.allowance(1), 0);
        for turn in 2..5 {
            b.spend(turn, b.allowance(turn));
        }
        assert!(b.exhausted());
        assert_eq!(b.allowance(9), 0);
        assert_eq!(b.deadline(), now + REFUSED_DEADLINE);
    }
}
