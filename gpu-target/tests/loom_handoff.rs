//! Model check of the device → debugger hand-off (`sim::handoff`) with
//! loom: every interleaving of 2–3 producers and the one consumer.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p gpu-target --test loom_handoff --release
//! ```
//!
//! The consumer behaves like the library's caller: it sleeps until the
//! notifier is readable, drains the notifier, then pops until `None`
//! (which re-arms the wake-up). A lost wake-up leaves it asleep while the
//! producers have finished: loom reports that as a deadlock. Blocked
//! producers that are never released are reported the same way.
#![cfg(loom)]

use gpu_target::sim::handoff::Closed;
use gpu_target::sim::handoff::Handoff;
use gpu_target::sim::handoff::Wake;
use loom::sync::Arc;
use loom::sync::Condvar;
use loom::sync::Mutex;
use loom::thread;

/// The notifier pipe: readable or not.
struct Notifier {
    readable: Mutex<bool>,
    cv: Condvar,
}

impl Notifier {
    fn new() -> Self {
        Self {
            readable: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    /// A producer writes the pipe.
    fn wake(&self) {
        *self.readable.lock().unwrap() = true;
        self.cv.notify_one();
    }

    /// The consumer waits for readiness and drains the pipe.
    fn wait_and_drain(&self) {
        let mut r = self.readable.lock().unwrap();
        while !*r {
            r = self.cv.wait(r).unwrap();
        }
        *r = false;
    }
}

fn producer(q: &Handoff<(usize, usize)>, n: &Notifier, p: usize, items: usize) -> usize {
    let mut pushed = 0;
    for i in 0..items {
        match q.push((p, i)) {
            Ok(Wake::Yes) => n.wake(),
            Ok(Wake::No) => {}
            Err(Closed(_)) => break,
        }
        pushed += 1;
    }
    pushed
}

/// `producers` × `items` through a hand-off of `capacity`: all arrive,
/// once, in order per producer; nobody deadlocks.
fn exactly_once_in_order(producers: usize, items: usize, capacity: usize, bound: Option<usize>) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = bound;
    b.check(move || {
        let q = Arc::new(Handoff::new(capacity));
        let n = Arc::new(Notifier::new());
        let hs: Vec<_> = (0..producers)
            .map(|p| {
                let (q, n) = (q.clone(), n.clone());
                thread::spawn(move || producer(&q, &n, p, items))
            })
            .collect();
        let mut next = vec![0usize; producers];
        let mut got = 0;
        while got < producers * items {
            n.wait_and_drain();
            while let Some((p, i)) = q.try_pop() {
                assert_eq!(i, next[p], "producer {p}: item {i} out of order");
                next[p] += 1;
                got += 1;
            }
        }
        for h in hs {
            assert_eq!(h.join().unwrap(), items);
        }
        assert_eq!(q.try_pop(), None);
        let st = q.stats();
        assert_eq!(st.pushed, (producers * items) as u64);
        assert!(st.high_water <= capacity);
    });
}

#[test]
fn two_producers_capacity_one() {
    exactly_once_in_order(2, 2, 1, Some(3));
}

#[test]
fn two_producers_capacity_two() {
    exactly_once_in_order(2, 3, 2, Some(3));
}

#[test]
fn three_producers_capacity_one() {
    exactly_once_in_order(3, 1, 1, Some(3));
}

/// The consumer gives up (detach) while producers may be blocked on a
/// full queue: close releases them; what arrived is in order.
#[test]
fn close_releases_blocked_producers() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let q = Arc::new(Handoff::new(1));
        let n = Arc::new(Notifier::new());
        let hs: Vec<_> = (0..2)
            .map(|p| {
                let (q, n) = (q.clone(), n.clone());
                thread::spawn(move || producer(&q, &n, p, 2))
            })
            .collect();
        n.wait_and_drain();
        let first = q.try_pop().expect("woken with an item queued");
        assert_eq!(first.1, 0);
        q.close();
        let pushed: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert!((1..=4).contains(&pushed));
        assert_eq!(q.try_pop(), None);
        assert!(q.push((9, 9)).is_err());
    });
}
