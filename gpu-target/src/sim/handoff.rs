//! The bounded hand-off from device threads (many producers) to the one
//! thread that owns the debugger state (one consumer).
//!
//! # The problem
//!
//! Device threads find out that a wave stopped, a dispatch ended, a code
//! object was loaded; the debugger's state (the amd-dbgapi library and its
//! single caller) lives on one thread. Events must cross over without being
//! lost, duplicated or reordered per producer, and without unbounded memory
//! when producers outrun the consumer.
//!
//! # Options rejected
//!
//! - *An unbounded queue* (what the device had): a storm of events grows it
//!   without limit while the consumer is busy.
//! - *Dropping when full*: a debugger must see every stop.
//! - *A lock around the debugger state*, taken by producers: correctness
//!   would then rest on a lock that only slows producers down, and callbacks
//!   would run on foreign threads (DESIGN §3.8).
//!
//! # Chosen
//!
//! A FIFO with a fixed capacity. [`Handoff::push`] blocks a producer while
//! the queue is full, the way a device stalls when its event ring is full.
//! The consumer never blocks: it calls [`Handoff::try_pop`] when its
//! notifier says so, and a `None` answer *arms* the notifier: the next push
//! returns [`Wake::Yes`] and the producer must then wake the consumer
//! (write the notifier pipe). A push into a queue the consumer has not seen
//! empty needs no wake-up, because the consumer keeps popping until it sees
//! `None` (or wakes itself, when it stops early). This gives at most one
//! notifier write per empty → non-empty transition.
//!
//! The contract is model-checked with `loom` in `tests/loom_handoff.rs`
//! (2–3 producers, one consumer that sleeps on the notifier: every item
//! arrives exactly once, in producer order, and nobody deadlocks):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p gpu-target --test loom_handoff --release
//! ```
//!
//! [`Handoff::close`] makes every push fail at once (blocked producers
//! included) and drops what is queued: used when the debugger detaches and
//! nobody will consume any more.
//!
//! ```
//! use gpu_target::sim::handoff::{Handoff, Wake};
//! let q = Handoff::new(2);
//! assert_eq!(q.try_pop(), None); // arms the notifier
//! assert_eq!(q.push(1), Ok(Wake::Yes)); // first push after `None`: wake
//! assert_eq!(q.push(2), Ok(Wake::No));
//! assert_eq!(q.try_pop(), Some(1));
//! assert_eq!(q.try_pop(), Some(2));
//! ```

#[cfg(loom)]
use loom::sync::Condvar;
#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(loom)]
use loom::sync::MutexGuard;
#[cfg(not(loom))]
use std::sync::Condvar;
#[cfg(not(loom))]
use std::sync::Mutex;
#[cfg(not(loom))]
use std::sync::MutexGuard;

use std::collections::VecDeque;

/// Whether the producer that pushed must wake the consumer.
#[must_use = "a producer told to wake the consumer must do so, or the item may sit unseen"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The consumer saw the queue empty since the last wake-up: wake it.
    Yes,
    /// The consumer has not drained the queue yet: it will see this item.
    No,
}

/// The hand-off was closed; the item comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed<T>(pub T);

/// Counters of a hand-off (for reports and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandoffStats {
    /// Items pushed (accepted).
    pub pushed: u64,
    /// Items popped.
    pub popped: u64,
    /// Pushes that had to wait for room (backpressure engaged).
    pub blocked: u64,
    /// Most items queued at once.
    pub high_water: usize,
    /// Items dropped by [`Handoff::close`] or refused after it.
    pub dropped: u64,
    /// Items accepted beyond the capacity by [`Handoff::push_unbounded`].
    pub overflow: u64,
    /// The capacity.
    pub capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    capacity: usize,
    /// The consumer saw the queue empty: the next push must wake it.
    armed: bool,
    closed: bool,
    /// Producers waiting for room.
    waiting: usize,
    stats: HandoffStats,
}

/// A bounded multi-producer, single-consumer FIFO (see the module docs).
pub struct Handoff<T> {
    state: Mutex<State<T>>,
    not_full: Condvar,
}

impl<T> Handoff<T> {
    /// An open hand-off holding at most `capacity` items (at least 1). The
    /// consumer starts out armed: the first push wakes it.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            state: Mutex::new(State {
                items: VecDeque::with_capacity(capacity.min(4096)),
                capacity,
                armed: true,
                closed: false,
                waiting: 0,
                stats: HandoffStats {
                    capacity,
                    ..HandoffStats::default()
                },
            }),
            not_full: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item`, waiting while the queue is full. Must not be called
    /// by the consumer (it would wait for itself): see
    /// [`Handoff::push_unbounded`].
    pub fn push(&self, item: T) -> Result<Wake, Closed<T>> {
        let mut s = self.lock();
        let mut waited = false;
        loop {
            if s.closed {
                s.stats.dropped += 1;
                return Err(Closed(item));
            }
            if s.items.len() < s.capacity {
                break;
            }
            if !waited {
                waited = true;
                s.stats.blocked += 1;
            }
            s.waiting += 1;
            s = self.not_full.wait(s).unwrap_or_else(|p| p.into_inner());
            s.waiting -= 1;
        }
        Ok(Self::enqueue(&mut s, item))
    }

    /// Queues `item` even when the queue is full. Only for the consumer's
    /// own thread, whose requests are bounded elsewhere (a debugger's stop
    /// request: at most one outstanding per wave).
    pub fn push_unbounded(&self, item: T) -> Result<Wake, Closed<T>> {
        let mut s = self.lock();
        if s.closed {
            s.stats.dropped += 1;
            return Err(Closed(item));
        }
        if s.items.len() >= s.capacity {
            s.stats.overflow += 1;
        }
        Ok(Self::enqueue(&mut s, item))
    }

    fn enqueue(s: &mut State<T>, item: T) -> Wake {
        s.items.push_back(item);
        s.stats.pushed += 1;
        s.stats.high_water = s.stats.high_water.max(s.items.len());
        if std::mem::take(&mut s.armed) {
            Wake::Yes
        } else {
            Wake::No
        }
    }

    /// The oldest item, or `None` — which arms the wake-up for the next
    /// push. Never blocks (beyond the short internal lock).
    pub fn try_pop(&self) -> Option<T> {
        let mut s = self.lock();
        match s.items.pop_front() {
            Some(item) => {
                s.stats.popped += 1;
                if s.waiting > 0 {
                    self.not_full.notify_one();
                }
                Some(item)
            }
            None => {
                s.armed = true;
                None
            }
        }
    }

    /// Refuses every later push, releases blocked producers (their push
    /// fails) and drops the queued items.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.stats.dropped += s.items.len() as u64;
        s.items.clear();
        s.armed = true;
        drop(s);
        self.not_full.notify_all();
    }

    /// Accepts pushes again after [`Handoff::close`].
    pub fn reopen(&self) {
        self.lock().closed = false;
    }

    /// Whether [`Handoff::close`] was called (and not undone).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Items queued now.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> HandoffStats {
        self.lock().stats
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn wakes_once_per_empty_transition() {
        let q = Handoff::new(4);
        assert_eq!(q.push(1), Ok(Wake::Yes));
        assert_eq!(q.push(2), Ok(Wake::No));
        assert_eq!(q.try_pop(), Some(1));
        // Not seen empty yet: no wake.
        assert_eq!(q.push(3), Ok(Wake::No));
        assert_eq!(q.try_pop(), Some(2));
        assert_eq!(q.try_pop(), Some(3));
        assert_eq!(q.try_pop(), None);
        assert_eq!(q.push(4), Ok(Wake::Yes));
    }

    #[test]
    fn full_queue_blocks_until_popped() {
        let q = Arc::new(Handoff::new(2));
        let _ = q.push(0u32);
        let _ = q.push(1u32);
        let (tx, rx) = std::sync::mpsc::channel();
        let p = {
            let q = q.clone();
            std::thread::spawn(move || {
                let _ = q.push(2);
                tx.send(()).ok();
            })
        };
        // The producer cannot finish while the queue is full.
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(50))
            .is_err());
        assert_eq!(q.try_pop(), Some(0));
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("producer released by the pop");
        p.join().unwrap();
        assert_eq!(q.try_pop(), Some(1));
        assert_eq!(q.try_pop(), Some(2));
        let st = q.stats();
        assert_eq!(
            (st.pushed, st.popped, st.blocked, st.high_water),
            (3, 3, 1, 2)
        );
    }

    #[test]
    fn close_releases_blocked_producers_and_drops() {
        let q = Arc::new(Handoff::new(1));
        let _ = q.push(0u32);
        let p = {
            let q = q.clone();
            std::thread::spawn(move || q.push(1))
        };
        // Wait until the producer is blocked (it counts as blocked then).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while q.stats().blocked == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "producer never blocked"
            );
            std::thread::yield_now();
        }
        q.close();
        assert_eq!(p.join().unwrap(), Err(Closed(1)));
        assert_eq!(q.try_pop(), None);
        assert_eq!(q.push(5), Err(Closed(5)));
        q.reopen();
        assert_eq!(q.push(6), Ok(Wake::Yes));
        assert_eq!(q.stats().dropped, 3);
    }

    #[test]
    fn consumer_overflow_is_counted() {
        let q = Handoff::new(1);
        let _ = q.push(1);
        assert_eq!(q.push_unbounded(2), Ok(Wake::No));
        assert_eq!(q.stats().overflow, 1);
        assert_eq!(q.len(), 2);
    }
}
