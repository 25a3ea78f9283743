//! lldb 23.1 reads the thread list in the form gdbmux gives an lldb
//! session with one process (docs/decisions.md §12): `p<pid>.` on the
//! first id only, bare thread ids after it. lldb takes its thread list
//! from the stop replies' `threads:` and from `jThreadsInfo` when it can,
//! so a proxy between lldb and gdbmux renames those two packets (the same
//! length and checksum: gdbmux answers them as unknown, empty), and lldb
//! has to build its list from `qfThreadInfo`. `thread list` must then show
//! the 5 threads of `fixtures/threads.c` with their tids, and lldb's packet
//! log must hold the short form.

mod compare_support;

use std::io::Read;
use std::io::Write;
use std::net::TcpListener;
use std::net::TcpStream;

/// lldb's packets the proxy hides from gdbmux, and what it sends instead:
/// two bytes moved by one in opposite directions, so the checksum holds.
const RENAMES: [(&[u8], &[u8]); 2] = [
    (b"QListThreadsInStopReply", b"RListThreadsInStopReplx"),
    (b"jThreadsInfo", b"kThreadsInfn"),
];

/// Copy `from` to `to`, renaming [`RENAMES`]; a tail that may be the start
/// of one waits for the next read (a packet's `#cc` never is).
fn pump_renaming(mut from: TcpStream, mut to: TcpStream) {
    let mut held: Vec<u8> = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        held.extend_from_slice(&buf[..n]);
        for (old, new) in RENAMES {
            let mut i = 0;
            while i + old.len() <= held.len() {
                if &held[i..i + old.len()] == old {
                    held[i..i + old.len()].copy_from_slice(new);
                    i += old.len();
                } else {
                    i += 1;
                }
            }
        }
        let keep = (1..held.len().min(24))
            .rev()
            .find(|k| {
                let tail = &held[held.len() - k..];
                RENAMES.iter().any(|(old, _)| old.starts_with(tail))
            })
            .unwrap_or(0);
        let send = held.len() - keep;
        if to.write_all(&held[..send]).is_err() {
            break;
        }
        held.drain(..send);
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(std::net::Shutdown::Both);
}

#[test]
fn lldb_lists_threads_from_the_short_qfthreadinfo_form() {
    let dir = compare_support::build_fixtures("lldb-thread-list-form", &["threads"]);
    let (mut server, port) = compare_support::start_gdbmux(&dir, &["127.0.0.1:0", "./threads"]);
    let proxy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let proxy_port = proxy.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let (client, _) = proxy.accept().expect("accept lldb");
        let upstream = TcpStream::connect(("127.0.0.1", port)).expect("connect gdbmux");
        let (c2, u2) = (
            client.try_clone().expect("clone"),
            upstream.try_clone().expect("clone"),
        );
        std::thread::spawn(move || pump(u2, c2));
        pump_renaming(client, upstream);
    });
    let log = dir.join(format!("lldb-packets.{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let out = compare_support::lldb_batch(
        &[
            format!("log enable -f {} gdb-remote packets", log.display()),
            format!("gdb-remote 127.0.0.1:{proxy_port}"),
            "breakpoint set -n thread_work".into(),
            "continue".into(),
            "thread list".into(),
            "kill".into(),
        ],
        &dir.join("threads"),
    );
    let _ = server.kill();
    let _ = server.wait();
    let packets = std::fs::read_to_string(&log).expect("lldb's packet log");
    let _ = std::fs::remove_file(&log);
    // gdbmux did not see the hidden packet (its reply was empty), and
    // lldb asked qfThreadInfo.
    let lines: Vec<&str> = packets.lines().collect();
    let asked = lines
        .iter()
        .position(|l| l.contains("send packet: $QListThreadsInStopReply"))
        .expect("lldb sends QListThreadsInStopReply");
    assert!(
        lines
            .get(asked + 1)
            .is_some_and(|l| l.contains("read packet: $#00")),
        "the proxy hid QListThreadsInStopReply:\n{packets}"
    );
    assert!(packets.contains("send packet: $qfThreadInfo"), "{packets}");
    // The short form came back: the pid on the first id, bare ids after.
    let lists: Vec<&str> = packets
        .lines()
        .filter_map(|l| l.split("read packet: $m").nth(1))
        .filter(|l| l.starts_with('p'))
        .collect();
    let longest = lists
        .iter()
        .max_by_key(|l| l.matches(',').count())
        .expect("a qfThreadInfo reply");
    let ids: Vec<&str> = longest.split('#').next().unwrap_or("").split(',').collect();
    assert_eq!(ids.len(), 5, "the main thread and 4 workers: {longest}");
    assert!(ids[0].starts_with('p') && ids[0].contains('.'), "{longest}");
    assert!(
        ids[1..]
            .iter()
            .all(|i| !i.contains('p') && !i.contains('.')),
        "{longest}"
    );
    // lldb lists every thread, each with the tid gdbmux sent.
    let listing = out
        .split("(lldb) thread list")
        .nth(1)
        .and_then(|t| t.split("(lldb) kill").next())
        .unwrap_or_else(|| panic!("no thread list in:\n{out}"));
    let listed: Vec<&str> = listing
        .lines()
        .filter(|l| l.trim_start_matches(['*', ' ']).starts_with("thread #"))
        .collect();
    assert_eq!(listed.len(), 5, "lldb's thread list:\n{out}");
    let tids: Vec<u64> = ids
        .iter()
        .map(|i| u64::from_str_radix(i.rsplit('.').next().unwrap_or(i), 16).expect("hex tid"))
        .collect();
    for t in tids {
        assert!(
            listed.iter().any(|l| l.contains(&format!("tid = {t},"))),
            "tid {t} not listed:\n{out}"
        );
    }
}
