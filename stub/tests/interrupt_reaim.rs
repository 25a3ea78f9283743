//! An all-stop interrupt is never lost to the end of the thread it was
//! aimed at (docs/architecture.md, "Interrupts and internal stops").
//!
//! gdbmux interrupts a process with a SIGSTOP to one thread (the main
//! thread while it runs). `tests/fixtures/exec_interrupt.c` makes the loss
//! certain, with no timing luck: its main thread waits in `vfork` (where a
//! SIGSTOP stays pending) when the client interrupts; only once gdbmux says
//! it sent the interrupt does the test let a second thread exec, which ends
//! the main thread and its pending SIGSTOP with it. The client did not ask
//! for exec events, so the exec is no stop of its own: before the fix the
//! new program ran on and the client waited for the interrupt's stop
//! forever. Now the interrupt is aimed again at the thread that survived
//! the exec, and its stop is the interrupt's (`T02`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;

use std::io::Read;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use gpu_support::Server;
use protocol_tests::client::RspClient;
use protocol_tests::reply::StopReply;

fn fixture() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interrupt_reaim");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(format!("exec_interrupt.{}", std::process::id()));
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exec_interrupt.c");
    let st = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run gcc");
    assert!(st.success(), "gcc exec_interrupt.c failed");
    exe
}

fn mkfifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success(), "mkfifo {}", path.display());
}

/// Run `f` on a thread; its result, or a failure after `secs` (a FIFO
/// whose other end never opens would block the test forever).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what}: not within {secs} s"))
}

#[test]
fn interrupt_survives_the_exec_of_another_thread() {
    let exe = fixture();
    let ready = exe.with_extension("ready");
    let go = exe.with_extension("go");
    mkfifo(&ready);
    mkfifo(&go);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--no-gpu", "--log-channels", "ptrace", "127.0.0.1:0", "--"])
        .arg(&exe)
        .arg(&ready)
        .arg(&go);
    let server = Server::start(cmd);
    let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    c.send_ack().expect("ack");
    // No exec (or fork) events: the exec is not a stop of its own.
    let sup = c
        .request_str("qSupported:multiprocess+;swbreak+;hwbreak+;vContSupported+")
        .expect("qSupported");
    if sup.contains("QStartNoAckMode+") {
        c.start_no_ack().expect("no-ack");
    }
    c.stop_reply("?").expect("?");
    c.send_packet(b"vCont;c").expect("vCont;c");
    // The vfork child wrote: the main thread waits in vfork.
    let r = ready.clone();
    let child = within(60, "the vfork child's pid", move || {
        let mut b = [0u8; 4];
        std::fs::File::open(&r)
            .and_then(|mut f| f.read_exact(&mut b))
            .expect("read READY");
        i32::from_ne_bytes(b)
    });
    c.interrupt().expect("interrupt");
    server.wait_log("interrupt: the processes were asked to stop", 30);
    // Now the exec, which ends the main thread and its pending SIGSTOP.
    let g = go.clone();
    within(60, "the exec thread's FIFO", move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&g)
            .and_then(|mut f| f.write_all(b"g"))
            .expect("write GO");
    });
    let (stop, _) = c.wait_stop("\\x03").unwrap_or_else(|e| {
        panic!(
            "the interrupt was lost to the exec: {e}\n--- gdbmux log ---\n{}",
            server.log()
        )
    });
    match stop {
        StopReply::Signal(s) => assert_eq!(s.signo, 2, "the interrupt's stop: {s:?}"),
        other => panic!("the interrupt's stop: {other:?}"),
    }
    let _ = c.send_packet(b"k");
    // The vfork child (no longer traced) pauses until killed.
    let _ = Command::new("kill")
        .args(["-KILL", &child.to_string()])
        .status();
    let _ = std::fs::remove_file(&ready);
    let _ = std::fs::remove_file(&go);
    let _ = std::fs::remove_file(&exe);
}
