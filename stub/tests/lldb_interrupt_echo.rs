//! Stock lldb 23.1 and `--lldb-interrupt-echo`: after an interrupt it
//! sent, lldb waits up to 100 ms for a second stop reply before it goes on
//! (`GDBRemoteClientBase::ShouldStop`, for debugservers that send two).
//! With the option gdbmux sends the interrupt's stop reply twice, lldb
//! reads both (its packet log shows them back to back, before its next
//! request) and the session goes on in step: two stops of all threads,
//! then `thread list` lists every thread. Without the option the reply
//! goes out once, as lldb-server sends it.
//!
//! Needs `lldb` (pip `lldb-for-pwndbg`) and gcc.

mod compare_support;

use std::path::Path;
use std::path::PathBuf;

/// Run in lldb: two rounds of continue, wait for the running event,
/// `SBProcess.Stop` (lldb sends `\x03`), wait for the stopped event.
const DRIVER: &str = r#"
import lldb
dbg = lldb.debugger
proc = dbg.GetSelectedTarget().GetProcess()
listener = lldb.SBListener("interrupt-echo")
proc.GetBroadcaster().AddListener(listener, lldb.SBProcess.eBroadcastBitStateChanged)
def wait_state(want):
    ev = lldb.SBEvent()
    while listener.WaitForEvent(30, ev):
        if lldb.SBProcess.EventIsProcessEvent(ev) and lldb.SBProcess.GetStateFromEvent(ev) == want:
            return True
    return False
dbg.SetAsync(True)
for round in range(2):
    proc.Continue()
    if not wait_state(lldb.eStateRunning):
        raise Exception("no running event")
    proc.Stop()
    if not wait_state(lldb.eStateStopped):
        raise Exception("no stopped event")
    print("STOPPED", round)
dbg.SetAsync(False)
"#;

/// One session: attach, the driver's two stops, `thread list`, detach.
/// lldb's output and, per `\x03` it sent, the stop replies it read before
/// its next request.
fn session(dir: &Path, echo: bool) -> (String, Vec<usize>) {
    let v = compare_support::sleepers(dir);
    let pid = v.0.id().to_string();
    let mut args = vec!["--attach", "127.0.0.1:0", pid.as_str()];
    if echo {
        args.insert(0, "--lldb-interrupt-echo");
    }
    let (mut child, port) = compare_support::start_gdbmux(dir, &args);
    let tag = if echo { "echo" } else { "plain" };
    let log = dir.join(format!("interrupt-{tag}.log"));
    let driver = dir.join(format!("interrupt-{tag}.py"));
    let _ = std::fs::remove_file(&log);
    std::fs::write(&driver, DRIVER).unwrap();
    let out = compare_support::lldb_batch(
        &[
            format!("log enable -f {} gdb-remote packets", log.display()),
            format!("gdb-remote 127.0.0.1:{port}"),
            format!("script exec(open('{}').read())", driver.display()),
            "thread list".into(),
            "process detach".into(),
        ],
        &dir.join("sleepers"),
    );
    let _ = child.kill();
    let _ = child.wait();
    drop(v);
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    let mut replies = Vec::new();
    let mut counting: Option<usize> = None;
    for l in text.lines() {
        if l.contains("sent packet: \\x03") {
            if let Some(n) = counting.take() {
                replies.push(n);
            }
            counting = Some(0);
        } else if l.contains("send packet: $") {
            if let Some(n) = counting.take() {
                replies.push(n);
            }
        } else if l.contains("read packet: $T") {
            if let Some(n) = counting.as_mut() {
                *n += 1;
            }
        }
    }
    (out, replies)
}

#[test]
fn lldb_reads_the_echoed_stop_reply_and_stays_in_step() {
    let dir: PathBuf = compare_support::build_fixtures("lldb-interrupt-echo", &["sleepers"]);
    for echo in [false, true] {
        let (out, replies) = session(&dir, echo);
        assert!(out.contains("STOPPED 1"), "echo {echo}: {out}");
        // Each interrupt's stop reply, read once or twice before lldb's
        // next request.
        let want = if echo { 2 } else { 1 };
        assert_eq!(replies, vec![want, want], "echo {echo}:\n{out}");
        // The session is in step: `thread list` after the two stops lists
        // the three threads, each with its name.
        let list = out
            .split("(lldb) thread list")
            .nth(1)
            .unwrap_or_else(|| panic!("echo {echo}: no thread list:\n{out}"));
        let threads: Vec<&str> = list
            .lines()
            .take_while(|l| !l.starts_with("(lldb)"))
            .filter(|l| l.contains("thread #"))
            .collect();
        assert_eq!(threads.len(), 3, "echo {echo}: {threads:?}");
        assert!(
            threads.iter().all(|l| l.contains("name = 'sleepers'")),
            "echo {echo}: {threads:?}"
        );
        assert!(
            out.contains("Process") && out.contains("detached"),
            "echo {echo}: {out}"
        );
    }
}
