//! Stock lldb 23.1: `jThreadsInfo` carries each CPU thread's stack top and
//! frame-pointer chain (the `memory` key), so `thread list` after an
//! attach lists the same frames as with lldb-server without reading each
//! thread's stack in its own `x` round trip (issue 15, lldb `thread list`
//! with many threads). The packet logs of both runs are compared.
//!
//! And at a breakpoint stop of a launched program, the stop reply's
//! `jstopinfo` (the threads with a stop reason; lldb takes an unlisted
//! thread as one without) spares lldb a `qThreadStopInfo` round trip per
//! thread, and every thread still shows its name.
//!
//! Needs `lldb` and `lldb-server` (pip `lldb-for-pwndbg`) and gcc.

mod compare_support;

use std::path::Path;
use std::path::PathBuf;

/// One lldb session: attach, `thread list`, detach. The `thread #` lines
/// (tids masked) and the packets lldb sent after the last `jThreadsInfo`.
fn session(server: &str, dir: &Path, log: &Path) -> (Vec<String>, Vec<String>) {
    let v = compare_support::sleepers(dir);
    let pid = v.0.id().to_string();
    let (mut child, port) = match server {
        "gdbmux" => compare_support::start_gdbmux(dir, &["--attach", "127.0.0.1:0", &pid]),
        _ => compare_support::start_lldb_server(dir, &["--attach", &pid]),
    };
    let _ = std::fs::remove_file(log);
    let out = compare_support::lldb_batch(
        &[
            format!("log enable -f {} gdb-remote packets", log.display()),
            format!("gdb-remote 127.0.0.1:{port}"),
            "thread list".into(),
            "process detach".into(),
        ],
        &dir.join("sleepers"),
    );
    let _ = child.kill();
    let _ = child.wait();
    drop(v);
    let threads = out
        .lines()
        .filter(|l| l.contains("thread #"))
        .map(|l| {
            // "thread #2: tid = 123, 0x… sleepers`f … at x.c:9, name = …"
            let mut parts = l.splitn(2, ", ");
            let head = parts.next().unwrap_or("").split(':').next().unwrap_or("");
            // Addresses differ between two processes (ASLR): masked.
            let rest: Vec<&str> = parts
                .next()
                .unwrap_or("")
                .split(' ')
                .map(|w| if w.starts_with("0x") { "0x…" } else { w })
                .collect();
            format!("{} {}", head.trim(), rest.join(" "))
        })
        .collect();
    let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    let sent: Vec<String> = text
        .lines()
        .filter_map(|l| l.split("send packet: $").nth(1))
        .map(|p| p.split('#').next().unwrap_or("").to_string())
        .collect();
    let last = sent
        .iter()
        .rposition(|p| p == "jThreadsInfo")
        .unwrap_or_else(|| panic!("{server}: lldb sent no jThreadsInfo: {sent:?}"));
    (threads, sent[last + 1..].to_vec())
}

#[test]
fn thread_list_needs_no_stack_reads_and_matches_lldb_server() {
    let dir: PathBuf = compare_support::build_fixtures("lldb-stack-expedite", &["sleepers"]);
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (ref_threads, ref_after) = session("lldb-server", &dir, &tmp.join("lse-ref.log"));
    let (threads, after) = session("gdbmux", &dir, &tmp.join("lse-gdbmux.log"));
    // The attach stop and `thread list` each show the three threads.
    assert_eq!(threads.len(), 6, "{threads:?}");
    assert_eq!(threads, ref_threads, "gdbmux vs lldb-server");
    let reads = |v: &[String]| v.iter().filter(|p| p.starts_with('x')).count();
    // Without the stack in jThreadsInfo lldb reads every thread's stack
    // (lldb-server's run shows it, so the check below can fail).
    assert!(reads(&ref_after) >= 2, "lldb-server: {ref_after:?}");
    assert_eq!(reads(&after), 0, "gdbmux: {after:?}");
}

/// The packets lldb sent, in order, from an lldb packet log.
fn sent_packets(log: &Path) -> Vec<String> {
    let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    text.lines()
        .filter_map(|l| l.split("send packet: $").nth(1))
        .map(|p| p.split('#').next().unwrap_or("").to_string())
        .collect()
}

/// One lldb session on a launched `threads` (main and four workers):
/// a breakpoint on `thread_work`, `continue`, `thread list`, kill. The
/// `thread #` lines of `thread list` and the packets sent from the
/// `continue` on.
fn breakpoint_session(server: &str, dir: &Path, log: &Path) -> (Vec<String>, Vec<String>) {
    let exe = dir.join("threads");
    let exe_s = exe.to_str().unwrap();
    let (mut child, port) = match server {
        "gdbmux" => compare_support::start_gdbmux(dir, &["127.0.0.1:0", exe_s, "30"]),
        _ => compare_support::start_lldb_server(dir, &["--", exe_s, "30"]),
    };
    let _ = std::fs::remove_file(log);
    let out = compare_support::lldb_batch(
        &[
            format!("gdb-remote 127.0.0.1:{port}"),
            "breakpoint set -n thread_work".into(),
            format!("log enable -f {} gdb-remote packets", log.display()),
            "continue".into(),
            "thread list".into(),
            "process kill".into(),
        ],
        &exe,
    );
    let _ = child.kill();
    let _ = child.wait();
    let list = out
        .split("(lldb) thread list")
        .nth(1)
        .unwrap_or_else(|| panic!("{server}: no thread list:\n{out}"));
    let threads = list
        .lines()
        .take_while(|l| !l.starts_with("(lldb)"))
        .filter(|l| l.contains("thread #"))
        .map(str::to_string)
        .collect();
    (threads, sent_packets(log))
}

#[test]
fn breakpoint_stop_needs_no_stop_info_per_thread() {
    let dir: PathBuf = compare_support::build_fixtures("lldb-stop-infos", &["threads"]);
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let asks = |v: &[String]| {
        v.iter()
            .filter(|p| p.starts_with("qThreadStopInfo"))
            .count()
    };
    for server in ["lldb-server", "gdbmux"] {
        let (threads, sent) =
            breakpoint_session(server, &dir, &tmp.join(format!("lsi-{server}.log")));
        // Five threads, each with its name; the one at the breakpoint
        // (more may be, as the workers race) shows it.
        assert_eq!(threads.len(), 5, "{server}: {threads:?}");
        assert!(
            threads.iter().all(|l| l.contains("name = 'threads'")),
            "{server}: {threads:?}"
        );
        assert!(
            threads
                .iter()
                .any(|l| l.contains("stop reason = breakpoint")),
            "{server}: {threads:?}"
        );
        // Without jstopinfo lldb asks each of the other four threads.
        assert_eq!(asks(&sent), 0, "{server}: {sent:?}");
    }
}

/// One lldb session on `condloop`: a breakpoint on `f`, `continue`, four
/// `thread step-inst` inside `f`, kill. The `frame #0` lines of the steps
/// (addresses masked) and the packets sent from the first step on.
fn step_session(server: &str, dir: &Path, log: &Path) -> (Vec<String>, Vec<String>) {
    let exe = dir.join("condloop");
    let exe_s = exe.to_str().unwrap();
    let (mut child, port) = match server {
        "gdbmux" => compare_support::start_gdbmux(dir, &["127.0.0.1:0", exe_s]),
        _ => compare_support::start_lldb_server(dir, &["--", exe_s]),
    };
    let _ = std::fs::remove_file(log);
    let mut cmds = vec![
        format!("gdb-remote 127.0.0.1:{port}"),
        "breakpoint set -n f".into(),
        "continue".into(),
        format!("log enable -f {} gdb-remote packets", log.display()),
    ];
    cmds.extend(std::iter::repeat_n("thread step-inst".to_string(), 4));
    cmds.push("process kill".into());
    let out = compare_support::lldb_batch(&cmds, &exe);
    let _ = child.kill();
    let _ = child.wait();
    let frames: Vec<String> = out
        .split("(lldb) thread step-inst")
        .skip(1)
        .filter_map(|s| s.lines().find(|l| l.contains("frame #0")))
        .map(|l| {
            l.split(' ')
                .map(|w| if w.starts_with("0x") { "0x…" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(frames.len(), 4, "{server}: {out}");
    // The log starts with lldb's packet history (lines `history[N]`):
    // only what was sent after it was enabled counts.
    let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    let sent = text
        .lines()
        .filter(|l| !l.contains("history["))
        .filter_map(|l| l.split("send packet: $").nth(1))
        .map(|p| p.split('#').next().unwrap_or("").to_string())
        .collect();
    (frames, sent)
}

/// Each stop reply to lldb carries the stopped thread's stack top and
/// frame links (`memory:`, debugserver's key), so lldb's check of frame 0
/// and its caller after a `thread step-inst` reads no stack: with
/// lldb-server it sends an `x` of the stack's 512-byte line after every
/// step (so the check can fail). The steps show the same frames.
#[test]
fn steps_need_no_stack_reads() {
    let dir: PathBuf = compare_support::build_fixtures("lldb-step-stack", &["condloop"]);
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let reads = |v: &[String]| v.iter().filter(|p| p.starts_with('x')).count();
    let (ref_frames, ref_sent) = step_session("lldb-server", &dir, &tmp.join("lss-ref.log"));
    let (frames, sent) = step_session("gdbmux", &dir, &tmp.join("lss-gdbmux.log"));
    assert_eq!(frames, ref_frames, "gdbmux vs lldb-server");
    assert!(reads(&ref_sent) >= 4, "lldb-server: {ref_sent:?}");
    assert_eq!(reads(&sent), 0, "gdbmux: {sent:?}");
}
