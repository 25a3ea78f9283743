//! The loop's fairness, counted (issue 16, "the loop is fair"): while 10
//! refused connections flood bytes (reconnecting whenever the server
//! closes them) and a slowloris holds 60 connections, the live session
//! makes round trips, and the server's own counts (`monitor loop`,
//! `stub/src/server/turns.rs`) must show that
//! - no refused connection was read more than its per-turn byte budget
//!   (`REFUSED_TURN_BYTES`) in any turn, nor more than twice in a turn;
//! - all of them together cost a turn at most that budget each (of the
//!   100 connections the server may hold here);
//! - the live session never ended more than [`N`] = 2 turns in a row with
//!   its client's bytes unread (`max-session-wait-turns`): its bytes are
//!   read within N + 1 turns of their arrival, however many refused
//!   connections compete (1 is expected: bytes that arrive during a turn
//!   are read by the next);
//! - the contention was real: more than 60 refused connections open at
//!   once, a megabyte refused before the measured round trips and more
//!   during them, and most of the 200 live round trips (at least 100
//!   reads) were read in turns that ended with refused connections open.
//!
//! Counts, not wall-clock timings: a loaded machine makes the turns slower
//! but cannot change what each turn reads. (`hostile.rs` has the
//! round-trip timings.)

mod gpu_support;
mod harden_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use gpu_support::monitor;
use harden_support::*;

/// `REFUSED_TURN_BYTES` in `stub/src/bounds.rs`, as the server reports it.
const TURN_BUDGET: u64 = 16 * 1024;
/// The most turns in a row the live session may end with input unread.
const N: u64 = 2;

/// `monitor loop`: `name value` per line.
fn counts(c: &mut RspClient) -> BTreeMap<String, u64> {
    monitor(c, "loop")
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn get(c: &BTreeMap<String, u64>, k: &str) -> u64 {
    *c.get(k)
        .unwrap_or_else(|| panic!("monitor loop has no {k}: {c:?}"))
}

#[test]
fn refused_floods_and_a_slowloris_get_a_budget_per_turn() {
    let (g, _) = spin_server(&["--max-connections", "100"]);
    let mut live = g.connect();
    live.handshake_gdb().unwrap();
    let quiet = counts(&mut live);
    assert_eq!(get(&quiet, "refused-turn-budget-bytes"), TURN_BUDGET);
    assert_eq!(get(&quiet, "refused-connections"), 0);

    // The slowloris: 60 connections, each inside a packet that never ends.
    let mut held: Vec<TcpStream> = (0..60)
        .map(|_| {
            let mut s = TcpStream::connect(g.addr.as_str()).unwrap();
            s.write_all(b"$qSupported:").unwrap();
            s
        })
        .collect();
    // The floods: noise, and a packet body that never ends.
    let stop = Arc::new(AtomicBool::new(false));
    let flooders: Vec<_> = (0..10)
        .map(|i| {
            let addr = g.addr.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let chunk: Vec<u8> = if i % 2 == 0 {
                    vec![b'x'; 64 * 1024]
                } else {
                    [b"$".to_vec(), vec![b'a'; 64 * 1024]].concat()
                };
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect(addr.as_str()) else {
                        continue;
                    };
                    while !stop.load(Ordering::Relaxed) {
                        if s.write(&chunk).is_err() {
                            break;
                        }
                    }
                }
            })
        })
        .collect();

    // Round trips until the server's counts show the flood in full swing
    // (every slowloris connection and flooders open together, a megabyte
    // refused); each is a live round trip under contention too.
    let t = Instant::now();
    let mut trips = 0u64;
    loop {
        let c = counts(&mut live);
        trips += 1;
        if get(&c, "max-refused-open") > 60 && get(&c, "refused-bytes") >= 1 << 20 {
            break;
        }
        assert!(
            t.elapsed() < WAIT,
            "the flood did not reach the server: {c:?}"
        );
    }
    let before = counts(&mut live);
    // The measured round trips; the slowloris trickles a byte each 20.
    for i in 0..200u32 {
        if i % 20 == 0 {
            for s in held.iter_mut() {
                let _ = s.write_all(b"a");
            }
        }
        let r = live.request(b"qC").unwrap();
        assert!(r.starts_with(b"QC"), "{}", String::from_utf8_lossy(&r));
    }
    let after = counts(&mut live);
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        f.join().unwrap();
    }
    drop(held);
    eprintln!("before the measured round trips ({trips} to get there): {before:?}");
    eprintln!("after 200 round trips under the flood: {after:?}");

    let per_conn = get(&after, "max-connection-turn-bytes");
    assert!(
        per_conn <= TURN_BUDGET,
        "a refused connection was read {per_conn} bytes in one turn (budget {TURN_BUDGET})"
    );
    assert!(get(&after, "max-connection-turn-reads") <= 2, "{after:?}");
    // Together: at most the budget of every connection the server may
    // hold (`--max-connections 100`).
    assert!(
        get(&after, "max-turn-refused-bytes") <= TURN_BUDGET * 100,
        "{after:?}"
    );
    let open = get(&after, "max-refused-open");
    let wait = get(&after, "max-session-wait-turns");
    assert!(
        wait <= N,
        "the live session ended {wait} turns in a row with its input unread"
    );
    // The contention was real, and the live session was served in it.
    assert!(open > 60, "{after:?}");
    assert!(
        get(&after, "refused-bytes") - get(&before, "refused-bytes") > 0,
        "the flood went on during the measured round trips: {after:?}"
    );
    assert!(
        get(&after, "contended-session-reads") - get(&before, "contended-session-reads") >= 100,
        "the measured round trips were read while refused connections were open: {after:?}"
    );
}
