//! Shared by the tests that run the same client script against a reference
//! server and gdbmux (`gdbserver_compat.rs`, `lldb_parity.rs`): fixtures
//! built once with gcc, lldb-server started on a free port, and clients run
//! to their end with a deadline.
#![allow(dead_code)]

#[path = "../fixture_support/mod.rs"]
mod fixture_support;

use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

/// Build `tests/fixtures/NAME.c` for each of `names` with `gcc -g -O0
/// -pthread` into `CARGO_TARGET_TMPDIR/subdir` (each through a temporary
/// name, so a parallel test never runs a half-written binary); returns
/// that directory. Callers keep it in a `OnceLock` to build once.
pub fn build_fixtures(subdir: &str, names: &[&str]) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(subdir);
    fixture_support::build_c(&out, names, &["-O0", "-pthread"]);
    out
}

/// Wait for `child` to end within `secs` and return its stdout; past the
/// deadline it is killed and the test fails naming `what`.
pub fn wait_stdout(child: Child, secs: u64, what: &str) -> String {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(o)) => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what} timed out");
        }
    }
}

/// `lldb -b` with the stop disassembly display off, `cmds` as `-o`
/// commands, on `exe`; its stdout (60 s at most).
pub fn lldb_batch(cmds: &[String], exe: &Path) -> String {
    protocol_tests::drivers::versions::require_lldb();
    let mut cmd = Command::new("lldb");
    cmd.args(["-b", "-o", "settings set stop-disassembly-display never"]);
    for c in cmds {
        cmd.args(["-o", c]);
    }
    cmd.arg(exe)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    wait_stdout(
        cmd.spawn().expect("spawn lldb"),
        60,
        &format!("lldb {cmds:?}"),
    )
}

/// `lldb-server gdbserver 127.0.0.1:0 --named-pipe FIFO TARGET…` in
/// `dir` (`target`: `["--", PROG, ARGS…]` or `["--attach", PID]`): the
/// child and the port it listens on, read from the FIFO (decimal text
/// ending in NUL). The FIFO's name is unique per call.
pub fn start_lldb_server(dir: &Path, target: &[&str]) -> (Child, u16) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let fifo = dir.join(format!("lldb-port.{}.{n}", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let child = Command::new("lldb-server")
        .args(["gdbserver", "127.0.0.1:0", "--named-pipe"])
        .arg(&fifo)
        .args(target)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lldb-server");
    let (tx, rx) = mpsc::channel();
    let f2 = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(&f2));
    });
    let text = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("lldb-server did not report its port")
        .expect("read the port FIFO");
    let _ = std::fs::remove_file(&fifo);
    let port = String::from_utf8_lossy(&text)
        .trim_matches(char::from(0))
        .trim()
        .parse()
        .expect("lldb-server's port");
    (child, port)
}

/// gdbmux (`--no-gpu --once` and `args`, e.g. `127.0.0.1:0 ./prog` or
/// `--attach 127.0.0.1:0 PID`) started in `dir`, and the port it announces
/// on stderr ("Listening on port N").
pub fn start_gdbmux(dir: &Path, args: &[&str]) -> (Child, u16) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gdbmux"))
        .args(["--no-gpu", "--once"])
        .args(args)
        .env_remove("GDBMUX_LOG")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gdbmux");
    let err = child.stderr.take().expect("gdbmux stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(err).lines() {
            let Ok(l) = l else { break };
            if let Some(p) = l.strip_prefix("Listening on port ") {
                let _ = tx.send(p.trim().parse::<u16>().expect("gdbmux's port"));
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("gdbmux did not report its port");
    (child, port)
}

/// A program the test started, killed at the end.
pub struct Victim(pub Child);

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `dir/sleepers` (main and two threads blocked in `pause`) once it says
/// "ready" (its threads exist).
pub fn sleepers(dir: &Path) -> Victim {
    use std::io::BufRead;
    let mut c = Command::new(dir.join("sleepers"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sleepers");
    let mut line = String::new();
    std::io::BufReader::new(c.stdout.take().expect("sleepers' stdout"))
        .read_line(&mut line)
        .expect("read sleepers' ready line");
    assert_eq!(line.trim(), "ready");
    Victim(c)
}
