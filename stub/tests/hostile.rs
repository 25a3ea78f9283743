//! Hostile input against the `gdbmux` binary (issue 16): a packet answered
//! with an error changes nothing in the debugged process (registers,
//! `/proc/PID/mem`, breakpoints, processes, the stop journal), acks are
//! handled as gdbserver handles them, and every client-grown buffer is
//! bounded (checked by growing it past its bound while measuring RSS).

mod gpu_support;
mod harden_support;

use std::io::Read as _;
use std::io::Seek as _;
use std::time::Duration;
use std::time::Instant;

use harden_support::*;
use proptest::prelude::*;
use protocol_tests::framing::encode_packet;

/// The tests of this file run one at a time: the timing tests measure
/// round trips and load the machine, and the others must not disturb them
/// (or be starved by them).
static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything an erroneous packet must leave alone.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    /// `g` of every thread.
    regs: Vec<(String, Vec<u8>)>,
    /// Every readable mapping of the inferior, from `/proc/PID/mem` (the
    /// breakpoint table shows as the int3 bytes it planted).
    mem: Vec<(String, Vec<u8>)>,
    /// `qfThreadInfo`: the processes and threads.
    threads: Vec<u8>,
    /// `?`: the stop journal.
    stop: Vec<u8>,
}

fn mappings(pid: i32) -> Vec<(u64, u64, String)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let name = l.split_whitespace().nth(5).unwrap_or("").to_string();
            if !perms.starts_with('r') || name.starts_with("[v") {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
                format!("{range} {name}"),
            ))
        })
        .collect()
}

/// Panics naming what differs (the snapshots are too big to print).
fn assert_same(before: &Snapshot, after: &Snapshot, what: &str) {
    let mut diffs = Vec::new();
    if before.regs != after.regs {
        diffs.push("registers".to_string());
    }
    for ((name, a), (_, b)) in before.mem.iter().zip(&after.mem) {
        if a != b {
            let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0);
            diffs.push(format!("memory of {name} at +{at:#x}"));
        }
    }
    if before.mem.len() != after.mem.len() {
        diffs.push("the mappings".into());
    }
    if before.threads != after.threads {
        diffs.push("the threads".into());
    }
    if before.stop != after.stop {
        diffs.push(format!(
            "the stop journal ({} -> {})",
            String::from_utf8_lossy(&before.stop),
            String::from_utf8_lossy(&after.stop)
        ));
    }
    assert!(diffs.is_empty(), "{what}: changed {}", diffs.join(", "));
}

fn snapshot(c: &mut RspClient, pid: i32) -> Snapshot {
    let threads = c.request(b"qfThreadInfo").unwrap();
    let mut regs = Vec::new();
    let list = String::from_utf8_lossy(&threads).into_owned();
    for t in list.trim_start_matches('m').split(',') {
        c.expect_ok(&format!("Hg{t}")).unwrap();
        regs.push((t.to_string(), c.request(b"g").unwrap()));
    }
    let mut f = std::fs::File::open(format!("/proc/{pid}/mem")).expect("open mem");
    let mut mem = Vec::new();
    for (a, b, name) in mappings(pid) {
        let mut buf = vec![0u8; (b - a) as usize];
        f.seek(std::io::SeekFrom::Start(a)).unwrap();
        // Some special mappings cannot be read; they cannot change either.
        if f.read_exact(&mut buf).is_ok() {
            mem.push((name, buf));
        }
    }
    let stop = c.request(b"?").unwrap();
    Snapshot {
        regs,
        mem,
        threads,
        stop,
    }
}

/// A session on `spin`, stopped at its entry, with a breakpoint planted at
/// `tick` so the breakpoint table is not empty; no-ack mode.
fn stopped_session() -> (Gdbmux, RspClient, i32, u64) {
    let (g, spin) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    c.expect_ok("QStartNoAckMode").ok();
    let tick = sym(&spin, "tick");
    c.expect_ok(&format!("Z0,{tick:x},1")).unwrap();
    let pid = inferior_pid(&g);
    (g, c, pid, tick)
}

/// The end of a mapping of `spin` that no mapping follows.
fn mapping_edge(pid: i32) -> u64 {
    let maps = mappings(pid);
    maps.iter()
        .find(|(_, end, name)| {
            name.contains("spin") && !maps.iter().any(|(start, _, _)| start == end)
        })
        .map(|(_, end, _)| *end)
        .expect("a mapping of spin followed by a hole")
}

fn g_size(c: &mut RspClient) -> usize {
    c.request(b"g").unwrap().len() / 2
}

fn raw_frame(body: &[u8]) -> Vec<u8> {
    encode_packet(body)
}

fn is_error(r: &[u8]) -> bool {
    r.first() == Some(&b'E') && r.len() >= 3
}

/// R1: a `G` of the wrong size (10,000 bytes of `ff`), and a `G` of the
/// right size the kernel refuses part-way (all zeros: the segment
/// selectors), are answered with an error and change no register.
#[test]
fn refused_g_changes_no_register() {
    let _one = serial();
    let (_g, mut c, pid, _) = stopped_session();
    let before = snapshot(&mut c, pid);
    let n = g_size(&mut c);
    let r = c
        .request(format!("G{}", "ff".repeat(10_000)).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "oversize G applied");
    let r = c
        .request(format!("G{}", "00".repeat(n)).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "refused G half applied");
    let r = c
        .request(format!("G{}", "00".repeat(n - 1)).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "short G applied");
    // The whole block written back as it was is accepted.
    let g = c.request(b"g").unwrap();
    let mut p = b"G".to_vec();
    p.extend_from_slice(&g);
    assert_eq!(c.request(&p).unwrap(), b"OK");
}

/// R2: a `vRun` of a program that does not exist is answered with an error
/// and the process being debugged lives on.
#[test]
fn failed_vrun_keeps_the_process() {
    let _one = serial();
    let (_g, mut c, pid, _) = stopped_session();
    c.expect_ok("!").unwrap();
    let before = snapshot(&mut c, pid);
    let r = c
        .request(format!("vRun;{}", hex(b"/nonexistent/program")).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "after an error");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
}

/// R3: `X` whose data ends with a lone `}` is refused; memory unchanged.
#[test]
fn lone_escape_is_refused() {
    let _one = serial();
    let (g, mut c, pid, _) = stopped_session();
    let spin = helper("spin");
    let done = sym(&spin, "g_done");
    let before = snapshot(&mut c, pid);
    c.send_raw(&raw_frame(format!("X{done:x},1:}}").as_bytes()))
        .unwrap();
    let r = c.recv_packet().unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "after an error");
    drop(g);
}

/// Acks as gdbserver handles them: a `-` resends the last reply only until
/// its `+`, at most 3 times; in no-ack mode a `-` is ignored.
#[test]
fn naks_are_bounded_and_ignored_after_ack_and_in_no_ack_mode() {
    let _one = serial();
    let (g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.send_ack().unwrap();
    c.set_ack_mode(false);
    // Ack mode on the server side: our reads do not ack automatically.
    c.send_raw(&encode_packet(b"qC")).unwrap();
    let first = c.recv_packet().unwrap();
    // Three resends, then nothing more for this packet.
    c.send_raw(b"-----").unwrap();
    for _ in 0..3 {
        assert_eq!(c.recv_packet().unwrap(), first);
    }
    // After `+`, stray `-` are ignored: the next reply is the next packet's.
    c.send_raw(b"+--------").unwrap();
    c.send_raw(&encode_packet(b"qAttached")).unwrap();
    let r = c.recv_packet().unwrap();
    assert_ne!(r, first, "a stray '-' after '+' resent the old reply");
    c.send_raw(b"+").unwrap();
    // No-ack mode: a `-` resends nothing.
    c.send_raw(&encode_packet(b"QStartNoAckMode")).unwrap();
    assert_eq!(c.recv_packet().unwrap(), b"OK");
    c.send_raw(b"+-").unwrap();
    c.send_raw(&encode_packet(b"qC")).unwrap();
    assert_eq!(c.recv_packet().unwrap(), first);
    c.send_raw(b"---").unwrap();
    c.send_raw(&encode_packet(b"qAttached")).unwrap();
    assert_eq!(c.recv_packet().unwrap(), r, "'-' in no-ack mode resent");
}

/// `vKill` of a pid that is not debugged is an error (not `X09`), and the
/// process lives on.
#[test]
fn vkill_of_unknown_pid_is_an_error() {
    let _one = serial();
    let (_g, mut c, pid, _) = stopped_session();
    let before = snapshot(&mut c, pid);
    for p in ["7ffffff0", "ffffffffff", "0"] {
        let r = c.request(format!("vKill;{p}").as_bytes()).unwrap();
        assert!(is_error(&r), "vKill;{p}: {}", String::from_utf8_lossy(&r));
    }
    assert_same(&before, &snapshot(&mut c, pid), "after an error");
}

/// `?` never replays the stop of a process that is gone: after `D;pid` of
/// a second, `vAttach`ed process, `?` reports the first one.
#[test]
fn question_after_detaching_the_reporting_process() {
    let _one = serial();
    let (_g, mut c, pid, _) = stopped_session();
    c.expect_ok("!").unwrap();
    let mut other = std::process::Command::new(helper("spin"))
        .spawn()
        .expect("second spin");
    let opid = other.id();
    let r = c.request(format!("vAttach;{opid:x}").as_bytes()).unwrap();
    assert!(r.starts_with(b"T"), "{}", String::from_utf8_lossy(&r));
    let q = String::from_utf8_lossy(&c.request(b"?").unwrap()).into_owned();
    assert!(q.contains(&format!("p{opid:x}.")), "{q}");
    c.expect_ok(&format!("D;{opid:x}")).unwrap();
    let q = String::from_utf8_lossy(&c.request(b"?").unwrap()).into_owned();
    assert!(
        !q.contains(&format!("p{opid:x}.")),
        "replayed a gone process: {q}"
    );
    assert!(q.contains(&format!("p{pid:x}.")), "{q}");
    let _ = other.kill();
    let _ = other.wait();
}

/// Malformed packets of every kind that can change the target.
fn hostile_packet(g_bytes: usize, addr: u64, edge: u64) -> impl Strategy<Value = Vec<u8>> {
    let hexs = |n: std::ops::Range<usize>| {
        proptest::collection::vec(any::<u8>(), n).prop_map(|v| hex(&v).into_bytes())
    };
    let junk = proptest::collection::vec(
        prop_oneof![
            // `$` and `#` are structural: they would cut the frame short.
            4 => any::<u8>().prop_filter("framing", |b| !matches!(b, b'$' | b'#')),
            1 => Just(b'}'),
            1 => Just(b','),
            1 => Just(b':'),
            1 => Just(b';')
        ],
        0..40,
    );
    let a = addr;
    prop_oneof![
        // G: wrong sizes, odd hex, the right size the kernel refuses.
        (0..g_bytes * 2 + 40)
            .prop_filter("not the g size", move |n| *n != g_bytes)
            .prop_map(|n| [b"G".to_vec(), "ff".repeat(n).into_bytes()].concat()),
        Just([b"G".to_vec(), "00".repeat(g_bytes).into_bytes()].concat()),
        hexs(1..20).prop_map(|h| [b"G".to_vec(), h, b"f".to_vec()].concat()),
        // P: unknown registers, wrong value lengths.
        (0u32..400, hexs(0..20)).prop_map(|(r, v)| format!(
            "P{r:x}={}",
            String::from_utf8_lossy(&v)
        )
        .into_bytes()),
        // M and X: lengths that do not match the data, unmapped addresses,
        // lone escapes.
        (0u64..64, hexs(0..40))
            .prop_map(move |(n, d)| [format!("M{a:x},{n:x}:").into_bytes(), d].concat())
            .prop_filter("length matches", |p| {
                let s = String::from_utf8_lossy(p);
                let (head, data) = s.split_once(':').unwrap_or_default();
                let n =
                    u64::from_str_radix(head.rsplit(',').next().unwrap_or("0"), 16).unwrap_or(0);
                n * 2 != data.len() as u64
            }),
        hexs(1..20).prop_map(|d| [
            b"M10,".to_vec(),
            format!("{:x}:", d.len() / 2).into_bytes(),
            d
        ]
        .concat()),
        (1u64..8).prop_map(move |n| format!("X{a:x},{n:x}:}}").into_bytes()),
        (0u64..64, proptest::collection::vec(any::<u8>(), 0..10))
            .prop_filter("length matches", |(n, d)| *n as usize != d.len())
            .prop_map(move |(n, d)| [
                format!("X{a:x},{n:x}:").into_bytes(),
                d.iter()
                    .flat_map(|b| if matches!(b, b'}' | b'$' | b'#' | b'*') {
                        vec![b'}', b ^ 0x20]
                    } else {
                        vec![*b]
                    })
                    .collect()
            ]
            .concat()),
        Just(b"X10,1:a".to_vec()),
        // Writes that run off the end of a mapping.
        (1u64..8, 2u64..16).prop_map(move |(back, n)| format!(
            "M{:x},{n:x}:{}",
            edge - back,
            "5a".repeat(n as usize)
        )
        .into_bytes()),
        (1u64..8, 2u64..16).prop_map(move |(back, n)| [
            format!("X{:x},{n:x}:", edge - back).into_bytes(),
            vec![b'Z'; n as usize]
        ]
        .concat()),
        // Breakpoints: unmapped, bad kinds, unknown types.
        (0u64..0x1000, 0u8..4).prop_map(|(at, t)| format!("Z{t},{at:x},1").into_bytes()),
        (0u8..2).prop_map(move |t| format!("Z{t},{a:x},9").into_bytes()),
        (5u8..10).prop_map(move |t| format!("Z{t},{a:x},1").into_bytes()),
        // Processes: launches that fail, unknown pids.
        hexs(1..10)
            .prop_map(|h| [b"vRun;".to_vec(), hex(b"/nonexistent/").into_bytes(), h].concat()),
        (0x7fff_0000u64..0x7fff_ffff).prop_map(|p| format!("vKill;{p:x}").into_bytes()),
        (0x7fff_0000u64..0x7fff_ffff).prop_map(|p| format!("D;{p:x}").into_bytes()),
        (0x7fff_0000u64..0x7fff_ffff).prop_map(|p| format!("vAttach;{p:x}").into_bytes()),
        (0x7fff_0000u64..0x7fff_ffff).prop_map(|p| format!("vCont;c:p{p:x}.{p:x}").into_bytes()),
        (0x7fff_0000u64..0x7fff_ffff).prop_map(|p| format!("Hgp{p:x}.{p:x}").into_bytes()),
        Just(b"vCont;x".to_vec()),
        Just(b"vCont;".to_vec()),
        // Anything, escapes included, after a packet letter.
        (
            prop_oneof![
                Just(b'G'),
                Just(b'P'),
                Just(b'M'),
                Just(b'X'),
                Just(b'Z'),
                Just(b'z'),
                Just(b'v'),
                Just(b'Q'),
                Just(b'D'),
                Just(b'T'),
                Just(b'H')
            ],
            junk
        )
            .prop_map(|(l, j)| [vec![l], j].concat()),
    ]
}

/// Issue 16, property 1: every packet answered with an error leaves the
/// registers, memory, breakpoints, processes and stop journal as they were.
#[test]
fn an_error_reply_changes_nothing() {
    let _one = serial();
    let (_g, mut c, pid, tick) = stopped_session();
    c.expect_ok("!").unwrap();
    let n = g_size(&mut c);
    let edge = mapping_edge(pid);
    let before = snapshot(&mut c, pid);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        ProptestConfig {
            cases: 300,
            failure_persistence: None,
            ..ProptestConfig::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let state = std::cell::RefCell::new((c, 0u32, before));
    let result = runner.run(&hostile_packet(n, tick, edge), |p| {
        let (c, errors, before) = &mut *state.borrow_mut();
        // Sent as it is: the data holds its own escapes (a lone `}` too).
        c.send_raw(&raw_frame(&p)).unwrap();
        let r = c.recv_packet().unwrap();
        let after = snapshot(c, pid);
        if is_error(&r) {
            *errors += 1;
            let what = format!(
                "{} answered {}",
                String::from_utf8_lossy(&p),
                String::from_utf8_lossy(&r)
            );
            let same = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                assert_same(before, &after, &what)
            }));
            prop_assert!(same.is_ok(), "{what} and changed the target");
        }
        *before = after;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let errors = state.borrow().1;
    eprintln!(
        "{errors} of 300 hostile packets were answered with an error; none changed the target"
    );
    assert!(
        errors > 150,
        "too few error replies ({errors}): the generator drifted"
    );
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// R4 and the other per-session buffers: a client grows the qXfer cache
/// (a different big annex each time), the unknown-packet log (distinct
/// big unknown packets) and the environment (`QEnvironmentHexEncoded`)
/// far past their bounds; RSS stays flat and the environment is refused
/// with an error once full.
#[test]
fn session_buffers_are_bounded() {
    let _one = serial();
    let (g, mut c, _, _) = stopped_session();
    let pid = g.pid();
    let base = rss_kib(pid);
    let big = "a".repeat(100_000);
    for i in 0..300 {
        let r = c
            .request(format!("qXfer:threads:read:{big}{i}:0,fff").as_bytes())
            .unwrap();
        assert!(
            r.starts_with(b"l") || r.starts_with(b"m"),
            "{}",
            String::from_utf8_lossy(&r[..r.len().min(80)])
        );
        c.request(format!("qZZunknown{i}{big}").as_bytes()).unwrap();
    }
    let grown = rss_kib(pid).saturating_sub(base);
    // Unbounded, that is 30 MB of annexes and 30 MB of logged packets.
    assert!(grown < 24 * 1024, "RSS grew by {grown} KiB");
    let value = hex(format!("V={}", "x".repeat(60_000)).as_bytes());
    let mut refused = None;
    for i in 0..40 {
        let name = hex(format!("BIG{i}").as_bytes());
        let r = c
            .request(format!("QEnvironmentHexEncoded:{name}{}", &value[2..]).as_bytes())
            .unwrap();
        if is_error(&r) {
            refused = Some(i);
            break;
        }
    }
    let i = refused.expect("the environment grew past 2 MiB without an error");
    assert!((16..=18).contains(&i), "refused at {i}");
    assert!(rss_kib(pid).saturating_sub(base) < 28 * 1024);
}

/// The live session's `qC` round trips (after a warm-up) while `noise`
/// runs, sorted (issue 16: a refused connection must not slow a live one;
/// judged by [`assert_fair`]).
fn round_trips_while(c: &mut RspClient, n: usize) -> Vec<Duration> {
    assert!(TIMING.try_lock().is_err(), "hold TIMING while measuring");
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = c.request(b"qC").unwrap();
        times.push(t.elapsed());
        assert!(r.starts_with(b"QC"), "{}", String::from_utf8_lossy(&r));
    }
    times.sort();
    times
}

fn report(what: &str, times: &[Duration]) {
    let p = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    eprintln!(
        "{what}: qC round trip median {:?}, p99 {:?}, max {:?}",
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

/// R5: 10 refused connections flood bytes (reconnecting whenever the
/// server closes them) while the live session makes round trips: each
/// stays fast ([`assert_fair`]). Before the fix, one flood made `qC` take
/// seconds.
#[test]
fn refused_floods_do_not_slow_the_live_session() {
    let _one = serial();
    let (g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let quiet = round_trips_while(&mut c, 300);
    report("no load", &quiet);
    let base = rss_kib(g.pid());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    // The flooder whose write takes the total past 4 MiB says so (an event
    // to wait on, not a counter to poll).
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let flooders: Vec<_> = (0..10)
        .map(|i| {
            let addr = g.addr.clone();
            let stop = stop.clone();
            let sent = sent.clone();
            let started_tx = started_tx.clone();
            std::thread::spawn(move || {
                // The flooders stand for other machines: on this one they
                // must not take the CPU from the server and the measuring
                // client, or the test measures the scheduler.
                // SAFETY: setpriority on this thread's own id.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
                }
                // Noise, and a packet body that never ends.
                let chunk: Vec<u8> = if i % 2 == 0 {
                    vec![b'x'; 64 * 1024]
                } else {
                    [b"$".to_vec(), vec![b'a'; 64 * 1024]].concat()
                };
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut s) = std::net::TcpStream::connect(addr.as_str()) else {
                        continue;
                    };
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        match std::io::Write::write(&mut s, &chunk) {
                            Ok(n) => {
                                let before =
                                    sent.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                                if before < 4 << 20 && before + n as u64 >= 4 << 20 {
                                    let _ = started_tx.send(());
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
            })
        })
        .collect();
    // Let the floods start before measuring.
    started
        .recv_timeout(WAIT)
        .expect("the flooders sent less than 4 MiB");
    let times = round_trips_while(&mut c, 300);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for f in flooders {
        f.join().unwrap();
    }
    report("10 refused floods", &times);
    let grown = rss_kib(g.pid()).saturating_sub(base);
    eprintln!("gdbmux RSS grew by {grown} KiB during the floods");
    // Each refused connection holds at most its 64 KiB budget.
    assert!(grown < 16 * 1024, "RSS grew by {grown} KiB");
    eprintln!(
        "flooders sent {} MiB",
        sent.load(std::sync::atomic::Ordering::Relaxed) >> 20
    );
    assert_fair(&quiet, &times);
}

/// Fairness, judged so that a machine busy with other work (CI on a shared
/// 2-core host) cannot fail it, while an unfair loop still does:
/// - the median round trip under load is within 10 ms of the median
///   without load, measured just before (scheduler delays of a busy
///   machine hit some samples of both runs, not half of those of one);
/// - no round trip stalls: each is under 1 s (before the budget every one
///   took 7.5-9.8 s under the flood, and a loop blocked in a handler
///   answers none at all).
fn assert_fair(quiet: &[Duration], loaded: &[Duration]) {
    let median = |t: &[Duration]| t[(t.len() - 1) / 2];
    let bound = Duration::from_millis(10) + median(quiet);
    assert!(
        median(loaded) < bound,
        "median {:?} under load, {:?} without",
        median(loaded),
        median(quiet)
    );
    let worst = loaded.iter().max().copied().unwrap_or_default();
    assert!(
        worst < Duration::from_secs(1),
        "a round trip stalled for {worst:?} under load"
    );
}

/// A slowloris holds 60 connections, each trickling a byte of a packet
/// that never ends: the live session's round trips stay fast ([`assert_fair`]), and
/// the server answers each of them by its deadline (they do not hold a
/// connection slot for ever).
#[test]
fn slowloris_does_not_slow_the_live_session() {
    let _one = serial();
    let (mut g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let quiet = round_trips_while(&mut c, 300);
    report("no load", &quiet);
    let mut held: Vec<std::net::TcpStream> = (0..60)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(g.addr.as_str()).unwrap();
            std::io::Write::write_all(&mut s, b"$qSupported:").unwrap();
            s
        })
        .collect();
    let mut all = Vec::new();
    for round in 0..10 {
        for s in held.iter_mut() {
            let _ = std::io::Write::write_all(s, &[b'a' + round as u8]);
        }
        all.extend(round_trips_while(&mut c, 30));
    }
    all.sort();
    report("slowloris of 60", &all);
    assert_fair(&quiet, &all);
    // Each is answered (by its deadline) with the reason, then closed.
    for s in held.iter_mut() {
        s.set_read_timeout(Some(WAIT)).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        assert!(text.contains("$E.gdbmux: connection refused"), "{text}");
    }
    assert!(g.alive());
}

/// `vFile:open` of a FIFO does not block the loop: opening it for reading
/// returns at once, for writing (no reader) fails at once, a read of it is
/// refused instead of waiting, and the session goes on.
#[test]
fn vfile_open_of_a_fifo_does_not_block() {
    let _one = serial();
    let (_g, mut c, _, _) = stopped_session();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let fifo = dir.join(format!("hostile-fifo-{}", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let path = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let name = hex(fifo.display().to_string().as_bytes());
    c.set_timeout(Duration::from_secs(5));
    let r = c.request_str(&format!("vFile:open:{name},0,0")).unwrap();
    assert!(r.starts_with('F') && !r.starts_with("F-1"), "{r}");
    let fd = r.trim_start_matches('F').to_string();
    let r = c.request_str(&format!("vFile:pread:{fd},100,0")).unwrap();
    assert!(r.starts_with("F-1,"), "a FIFO read must not wait: {r}");
    c.request_str(&format!("vFile:close:{fd}")).unwrap();
    let r = c.request_str(&format!("vFile:open:{name},1,0")).unwrap();
    assert!(r.starts_with("F-1,"), "{r}");
    assert!(c.request(b"qC").unwrap().starts_with(b"QC"));
    let _ = std::fs::remove_file(&fifo);
}

/// Runs a client command to its end (at most [`WAIT`]); returns its output
/// and how long it took.
fn run_client(mut cmd: std::process::Command) -> (String, Duration) {
    gpu_support::require_pinned(&cmd);
    let t = Instant::now();
    cmd.stdin(std::process::Stdio::null());
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the client");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx.recv_timeout(WAIT).unwrap_or_else(|_| {
        // SAFETY: kill of the child we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("{cmd:?} did not end within {WAIT:?}")
    });
    let out = out.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, t.elapsed())
}

/// A refused stock gdb 13 prints the reason and ends at once; a refused
/// stock lldb 23.1 prints it too, as the stop reason of the placeholder
/// stop the refusal reports (the one text lldb shows while it connects:
/// `refusal::lldb_answer`), and ends at once; the live session is
/// untouched.
#[test]
fn refusal_is_readable_in_gdb_and_ends_lldb_promptly() {
    let _one = serial();
    let (g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let mut gdb = std::process::Command::new("gdb");
    gdb.args(["-nx", "-batch", "-ex"])
        .arg(format!("target remote {}", g.addr));
    let (text, took) = run_client(gdb);
    eprintln!("gdb ({took:?}):\n{text}");
    assert!(
        text.contains("Remote failure reply: E.gdbmux: connection refused: a debugger session is already active"),
        "{text}"
    );
    assert!(!text.contains("Connection reset"), "{text}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let mut lldb = std::process::Command::new("lldb");
    lldb.args(["-b", "-o"])
        .arg(format!("gdb-remote {}", g.addr));
    let (text, took) = run_client(lldb);
    eprintln!("lldb ({took:?}):\n{text}");
    assert!(
        text.contains(
            "stop reason = gdbmux: connection refused: a debugger session is already active"
        ),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(c.request(b"qC").unwrap().starts_with(b"QC"));
}

/// An `M` or `X` that runs off the end of a mapping is an error and
/// writes nothing, not even the part that is mapped.
#[test]
fn write_across_the_end_of_a_mapping_changes_nothing() {
    let _one = serial();
    let (_g, mut c, pid, _) = stopped_session();
    let edge = mapping_edge(pid);
    let before = snapshot(&mut c, pid);
    let r = c
        .request(format!("M{:x},4:11223344", edge - 2).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "M wrote the mapped part");
    let r = c
        .request(format!("X{:x},4:abcd", edge - 2).as_bytes())
        .unwrap();
    assert!(is_error(&r), "{}", String::from_utf8_lossy(&r));
    assert_same(&before, &snapshot(&mut c, pid), "X wrote the mapped part");
}

/// Issue 15: the largest mapping of the inferior read with binary `x` in
/// packets of up to 1 MiB (escaped, checksummed in one pass by the encoder,
/// written out as the socket accepts it) is byte-exact against
/// `/proc/PID/mem`.
#[test]
fn large_binary_reads_match_proc_mem() {
    let _one = serial();
    let (_g, mut c, pid, tick) = stopped_session();
    let (start, end, name) = mappings(pid)
        .into_iter()
        .filter(|(a, b, _)| !(*a..*b).contains(&tick))
        .max_by_key(|(a, b, _)| b - a)
        .expect("a mapping");
    let mut want = vec![0u8; (end - start) as usize];
    let mut f = std::fs::File::open(format!("/proc/{pid}/mem")).expect("open mem");
    f.seek(std::io::SeekFrom::Start(start)).unwrap();
    f.read_exact(&mut want).expect("read the mapping");
    let mut got = Vec::with_capacity(want.len());
    let mut packets = 0;
    while got.len() < want.len() {
        let addr = start + got.len() as u64;
        let len = (want.len() - got.len()).min(1 << 20);
        let raw = c.request(format!("x{addr:x},{len:x}").as_bytes()).unwrap();
        let data = protocol_tests::framing::unescape(&raw).unwrap();
        assert!(
            !data.is_empty() && !is_error(&raw),
            "x{addr:x},{len:x} of {name}"
        );
        got.extend_from_slice(&data);
        packets += 1;
    }
    assert!(
        want.len() > 64 * 1024,
        "{name} is only {} bytes",
        want.len()
    );
    assert!(
        got == want,
        "x of {name} ({} bytes, {packets} packets) differs from /proc/PID/mem",
        want.len()
    );
}

/// Round trips of `n` refused connections, one after the other: connect,
/// send `qHostInfo`, read the `E.` refusal (the loop answers it in its
/// turn).
fn refused_round_trips(g: &Gdbmux, n: usize) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let mut r = protocol_tests::client::RspClient::connect(g.addr.as_str()).unwrap();
            r.set_timeout(WAIT);
            let t = Instant::now();
            r.send_ack().unwrap();
            let reply = r.request(b"qHostInfo").unwrap();
            let took = t.elapsed();
            assert!(
                reply.starts_with(b"E."),
                "{}",
                String::from_utf8_lossy(&reply)
            );
            took
        })
        .collect();
    times.sort();
    times
}

/// A `vFile:pread` of a regular file that does not answer (a stalled
/// network file system; here the test hook `GDBMUX_TEST_HOSTIO_GATE` holds
/// the read on its worker until the test writes to a FIFO) runs off the
/// loop: meanwhile connections are answered as fast as without it, a
/// packet the client sent after the `pread` waits its turn, and once the
/// file answers the data arrives, then the next reply, in order.
#[test]
fn slow_vfile_pread_does_not_stall_the_loop() {
    let _one = serial();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let gate = dir.join(format!("hostile-gate-{}", std::process::id()));
    let slow = dir.join(format!("hostile-{}.gdbmux-slow", std::process::id()));
    let _ = std::fs::remove_file(&gate);
    let cpath = std::ffi::CString::new(gate.display().to_string()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let content: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(&slow, &content).unwrap();
    let spin = helper("spin");
    let mut cmd = std::process::Command::new(gdbmux_bin());
    cmd.args(["--no-gpu", "127.0.0.1:0", "--"])
        .arg(&spin)
        .env("GDBMUX_TEST_HOSTIO_GATE", &gate);
    let mut g = Gdbmux::spawn(cmd);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let quiet = refused_round_trips(&g, 50);
    report("refused connections, no vFile pending", &quiet);
    let name = hex(slow.display().to_string().as_bytes());
    let r = c.request_str(&format!("vFile:open:{name},0,0")).unwrap();
    assert!(r.starts_with('F') && !r.starts_with("F-1"), "{r}");
    let fd = r.trim_start_matches('F').to_string();
    c.send_packet(format!("vFile:pread:{fd},3e8,10").as_bytes())
        .unwrap();
    c.send_packet(b"qC").unwrap();
    g.wait_line("test hook: pread waits for the gate");
    let stalled = refused_round_trips(&g, 50);
    report("refused connections, a pread stalled", &stalled);
    assert_fair(&quiet, &stalled);
    // The file answers.
    std::io::Write::write_all(
        &mut std::fs::OpenOptions::new().write(true).open(&gate).unwrap(),
        b"x",
    )
    .unwrap();
    let data = c.recv_packet().unwrap();
    let mut want = b"F3e8;".to_vec();
    want.extend_from_slice(&content[0x10..0x10 + 0x3e8]);
    assert!(
        data == want,
        "pread reply: {}",
        String::from_utf8_lossy(&data)
    );
    let qc = c.recv_packet().unwrap();
    assert!(qc.starts_with(b"QC"), "{}", String::from_utf8_lossy(&qc));
    c.request_str(&format!("vFile:close:{fd}")).unwrap();
    assert!(g.alive());
    let _ = std::fs::remove_file(&gate);
    let _ = std::fs::remove_file(&slow);
}
