//! GPU event storm, end to end: the simulated amd-dbgapi library's storm
//! mode (`SIMGPU_STORM`) has 8 producer threads push wave stop/resume,
//! dispatch begin/end and code-object events as fast as they can into the
//! device's bounded hand-off; a real gdbmux process consumes them through
//! the real dbgapi path (notifier pipe → `GpuController::process_events` →
//! `next_pending_event` / `event_processed`).
//!
//! Checked: the library's consumer-side check (every producer's numbered
//! stream arrives complete and in order: 0 lost, 0 duplicated, per-wave
//! order kept; every wave's events follow begin → (stop → resume)* → end),
//! every ABI event delivered is processed exactly once, gdbmux's own count
//! of handled events (`monitor gpu`) equals what the library delivered, the
//! hand-off never held more than its capacity, and gdbmux's resident memory
//! stays under [`RSS_LIMIT_KIB`] throughout. The second test does the same
//! with a client attached that calls `jThreadsInfo` in a loop, and checks
//! that it kept being served during the storm.
//!
//! Size: `GDBMUX_STORM_EVENTS` (default [`DEFAULT_EVENTS`]). The long run:
//!
//! ```text
//! GDBMUX_STORM_EVENTS=5000000 cargo test -p stub --release --test gpu_storm -- --nocapture
//! ```

mod gpu_support;

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use gpu_support::*;
use protocol_tests::client::RspClient;
use protocol_tests::reply::parse_json_reply;
use serde_json::Value;

/// Events per storm unless `GDBMUX_STORM_EVENTS` says otherwise.
const DEFAULT_EVENTS: u64 = 300_000;

/// gdbmux's resident memory must stay under this during and after a storm
/// (its idle size is a few MiB; the storm's buffers are bounded by the
/// hand-off's capacity, one queued stop per live wave and
/// `EVENTS_PER_PASS` events of news per loop pass).
const RSS_LIMIT_KIB: u64 = 32 * 1024;

/// Capacity of the device → library hand-off in these runs.
const CAPACITY: u64 = 1024;

fn events() -> u64 {
    std::env::var("GDBMUX_STORM_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_EVENTS)
}

/// Seconds allowed for a storm of `n` events (≥ 15k events/s, debug build
/// on a loaded 2-core machine), at least 60.
fn deadline_secs(n: u64) -> u64 {
    (n / 15_000).max(60)
}

/// gdbmux's count of handled GPU events, from `monitor gpu`.
fn events_handled(c: &mut RspClient) -> u64 {
    let text = monitor(c, "gpu");
    text.lines()
        .find_map(|l| l.split("events handled: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no 'events handled' in `monitor gpu`:\n{text}"))
}

/// gdbmux's peak resident set size (`VmHWM`: the kernel's own high-water
/// mark, exact, no sampling).
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A client calling `jThreadsInfo` in a loop on the CPU session until told
/// to stop; every reply must be a JSON array naming the inferior's thread.
struct ThreadsInfoLoop {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(RspClient, u64, Duration)>>,
}

impl ThreadsInfoLoop {
    fn start(mut c: RspClient) -> (Self, std::sync::mpsc::Receiver<()>) {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let (mut n, mut worst) = (0u64, Duration::ZERO);
            while !s.load(Ordering::SeqCst) {
                let t0 = Instant::now();
                let raw = c.request(b"jThreadsInfo").expect("jThreadsInfo reply");
                worst = worst.max(t0.elapsed());
                let v = parse_json_reply(&raw).expect("jThreadsInfo JSON");
                let threads = v.as_array().expect("jThreadsInfo is an array");
                assert!(
                    threads.iter().any(|t| t.get("tid").is_some()),
                    "jThreadsInfo without threads: {v}"
                );
                n += 1;
                if n == 1 {
                    let _ = first_tx.send(());
                }
            }
            (c, n, worst)
        });
        (
            Self {
                stop,
                thread: Some(thread),
            },
            first_rx,
        )
    }

    /// Stops the loop: (client, replies, slowest reply).
    fn finish(mut self) -> (RspClient, u64, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .expect("loop thread")
            .join()
            .expect("jThreadsInfo loop failed")
    }
}

fn start_gdbmux(events: u64) -> Server {
    let bin = bin_dir_with_dbgapi();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.arg("--dbgapi")
        .arg(bin.join("libsimgpu_dbgapi.so"))
        .args(["127.0.0.1:0", "--", "/bin/sleep", "600"])
        .env(
            "SIMGPU_STORM",
            format!(
                "threads=8,events={events},waves=64,stops=8,code_objects=64,capacity={CAPACITY}"
            ),
        )
        // The library's report is an INFO message on the `dbgapi` channel;
        // per-event debug logs stay off.
        .env("GDBMUX_LOG", "warn,dbgapi=info");
    Server::start(cmd)
}

fn report_of(log: &str) -> Value {
    let line = log
        .lines()
        .find_map(|l| l.split("simgpu storm: report ").nth(1))
        .expect("storm report line");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("storm report JSON: {e}\n{line}"))
}

fn n(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no number at {path} in the storm report: {v}"))
}

/// Asserts the library's report: complete, exactly once, in order, bounded.
fn assert_clean(r: &Value, events: u64) {
    assert_eq!(n(r, "/check/expected"), events, "{r}");
    assert_eq!(
        n(r, "/check/pulled"),
        events,
        "every event crossed the hand-off: {r}"
    );
    assert_eq!(n(r, "/check/lost"), 0, "lost events: {r}");
    assert_eq!(
        n(r, "/check/out_of_order"),
        0,
        "duplicated or reordered events: {r}"
    );
    assert_eq!(
        n(r, "/check/state_errors"),
        0,
        "impossible per-wave order: {r}"
    );
    assert_eq!(n(r, "/check/live_waves"), 0, "{r}");
    assert_eq!(
        n(r, "/check/dispatches_begun"),
        n(r, "/check/dispatches_ended"),
        "{r}"
    );
    assert_eq!(n(r, "/check/stops"), n(r, "/check/resumes"), "{r}");
    let produced: u64 = r
        .pointer("/producer_counts")
        .and_then(Value::as_array)
        .expect("producer_counts")
        .iter()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(produced, events, "producers pushed everything: {r}");
    // Every ABI event the storm caused was delivered, and processed once.
    assert_eq!(n(r, "/delivered/wave_stop"), n(r, "/check/stops"), "{r}");
    assert_eq!(
        n(r, "/delivered/wave_command_terminated"),
        n(r, "/check/dispatches_ended"),
        "{r}"
    );
    assert_eq!(
        n(r, "/delivered/code_object_list_updated"),
        n(r, "/check/code_object_updates"),
        "{r}"
    );
    for kind in [
        "total",
        "wave_stop",
        "wave_command_terminated",
        "code_object_list_updated",
    ] {
        assert_eq!(
            n(r, &format!("/delivered/{kind}")),
            n(r, &format!("/processed/{kind}")),
            "{kind}: delivered but not processed (or twice): {r}"
        );
    }
    assert_eq!(
        n(r, "/invalid_acks"),
        0,
        "event_processed with unknown ids: {r}"
    );
    // The hand-off: bounded, never overflowed, nothing dropped; producers
    // had to wait (the storm really outran the consumer).
    assert_eq!(n(r, "/handoff/capacity"), CAPACITY, "{r}");
    assert!(n(r, "/handoff/high_water") <= CAPACITY, "{r}");
    assert_eq!(n(r, "/handoff/pushed"), events, "{r}");
    assert_eq!(n(r, "/handoff/popped"), events, "{r}");
    assert_eq!(n(r, "/handoff/overflow"), 0, "{r}");
    assert_eq!(n(r, "/handoff/dropped"), 0, "{r}");
    // The library pulls only while nothing is pending for the client.
    assert!(n(r, "/max_pending") <= 1, "{r}");
}

#[test]
fn storm_is_consumed_exactly_once_in_bounded_memory() {
    run_storm(false);
}

#[test]
fn storm_with_a_client_calling_jthreadsinfo() {
    run_storm(true);
}

/// gdbmux adopts the launched program, and attaches the GPU library to
/// it (which starts the storm), when the first client connects: every run
/// has a client. `busy`: it calls `jThreadsInfo` in a loop meanwhile;
/// otherwise it waits idle.
fn run_storm(busy: bool) {
    let events = events();
    let server = start_gdbmux(events);
    let t0 = Instant::now();
    let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect to gdbmux");
    c.handshake_gdb().expect("gdb handshake");
    let (idle, busy_loop) = if busy {
        let (l, first) = ThreadsInfoLoop::start(c);
        first
            .recv_timeout(Duration::from_secs(30))
            .expect("first jThreadsInfo reply within 30 s");
        (None, Some(l))
    } else {
        (Some(c), None)
    };
    let log = server.wait_log("simgpu storm: report ", deadline_secs(events));
    let wall = t0.elapsed();
    let (mut c, served) = match (idle, busy_loop) {
        (_, Some(l)) => {
            let (c, replies, worst) = l.finish();
            (c, Some((replies, worst)))
        }
        (Some(c), None) => (c, None),
        (None, None) => unreachable!("one client or the other"),
    };
    let handled = events_handled(&mut c);
    let peak = vm_hwm_kib(server.pid()).expect("gdbmux still running");
    let after = vm_rss_kib(server.pid()).expect("gdbmux still running");
    let r = report_of(&log);
    eprintln!(
        "storm: {events} events, report {r}\n  wall {:.2} s (from the first client reply or start), \
         gdbmux RSS peak {peak} KiB (VmHWM; after {after} KiB), events handled by gdbmux {handled}, \
         jThreadsInfo {served:?}",
        wall.as_secs_f64(),
    );
    assert_clean(&r, events);
    assert_eq!(
        handled,
        n(&r, "/delivered/total"),
        "gdbmux handled exactly the events the library delivered"
    );
    assert!(
        peak < RSS_LIMIT_KIB && after < RSS_LIMIT_KIB,
        "gdbmux RSS peak {peak} KiB / after {after} KiB, limit {RSS_LIMIT_KIB} KiB"
    );
    if let Some((replies, worst)) = served {
        // Served all along: one pass handles at most EVENTS_PER_PASS events
        // before the loop turns to the clients again.
        assert!(
            replies >= 10,
            "only {replies} jThreadsInfo replies during the storm"
        );
        assert!(
            worst < Duration::from_secs(2),
            "slowest jThreadsInfo reply {worst:?} (lldb gives up after 5 s)"
        );
    }
}
