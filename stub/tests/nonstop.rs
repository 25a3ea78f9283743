//! gdb's non-stop mode (`set non-stop on`), end to end.
//!
//! - `nonstop_packets_transcript`: the packets (`QNonStop`, `vCont;c`
//!   answered `OK`, `%Stop` notifications, `vStopped`, `vCont;t` with
//!   `T00`, `?` through the `vStopped` sequence, `%Stop:W`) sent raw to a
//!   live gdbmux, with a thread spinning while another sits at a
//!   breakpoint.
//! - `gdb_non_stop_*_matches_gdbserver`: stock gdb 13 runs the same
//!   session against gdbserver and gdbmux, over `target remote` and
//!   `target extended-remote`: a breakpoint hit by one thread while the
//!   others run (`info threads` shows them `(running)`), `interrupt -a`,
//!   `thread N` + `continue &`, `continue` of one thread, `continue -a` to
//!   the exit. The outputs, normalised, are compared.
//!
//! gdb is driven through its stdin; each step waits for its own echo
//! marker and for the asynchronous stops it expects (events, no sleeps).
//! Where `interrupt -a` finds the other threads is fixed by the program,
//! not by the machine's speed: its first breakpoint is hit only once the
//! spinner is in its loop and the main thread sleeps in `pthread_join`.
//! Before, the first breakpoint could come while the main thread was
//! still on its way to `pthread_join` (or the spinner not yet in its
//! loop), and the frame `interrupt -a` printed for it would then differ
//! between the two servers' runs: the likely cause of a comparison that
//! failed once under load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use std::io::Read;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

use harden_support::Gdbmux;

const GDBMUX: &str = env!("CARGO_BIN_EXE_gdbmux");
/// Prefix of every stdio-mode server command: gdbserver 13.1 in stdio
/// `--multi` mode outlives gdb, spinning on the closed pipe, in a session
/// of its own out of the test's reach; `timeout` ends it.
const STDIO_GUARD: &str = "timeout -s KILL 120";

/// The fixture, built once: (PIE for gdb, non-PIE for raw addresses).
fn fixtures() -> (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nonstop-fixtures");
            std::fs::create_dir_all(&out).unwrap();
            let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nonstop.c");
            let build = |name: &str, extra: &[&str]| {
                let tmp = out.join(format!("{name}.{}.tmp", std::process::id()));
                let st = Command::new("gcc")
                    .args(["-g", "-O0", "-pthread"])
                    .args(extra)
                    .arg("-o")
                    .arg(&tmp)
                    .arg(&src)
                    .status()
                    .expect("run gcc");
                assert!(st.success(), "gcc nonstop.c failed");
                let dst = out.join(name);
                std::fs::rename(&tmp, &dst).unwrap();
                dst
            };
            (build("nonstop", &[]), build("nonstop-nopie", &["-no-pie"]))
        })
        .clone()
}

fn notification(c: &mut harden_support::RspClient) -> String {
    let n = c.recv_notification().unwrap();
    String::from_utf8_lossy(&n).into_owned()
}

fn thread_of(stop: &str) -> String {
    stop.split("thread:")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no thread in {stop}"))
        .to_string()
}

/// The raw protocol of non-stop mode, as gdbserver 13.1 serves it.
#[test]
fn nonstop_packets_transcript() {
    let (_, prog) = fixtures();
    let g = Gdbmux::start(&[
        "--no-gpu",
        "--once",
        "127.0.0.1:0",
        "--",
        prog.to_str().unwrap(),
    ]);
    let bp = gpu_support::nm(&prog, "bp_here", false);
    let spins = gpu_support::nm(&prog, "spins", false);
    let done = gpu_support::nm(&prog, "done", false);
    let mut c = g.connect();
    let sup = c
        .request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    assert!(sup.split(';').any(|f| f == "QNonStop+"), "{sup}");
    assert_eq!(c.request_str("QNonStop:1").unwrap(), "OK");
    // `?`: the one stopped thread's stop, then the end of the sequence.
    let first = c.request_str("?").unwrap();
    assert!(first.starts_with("T05"), "{first}");
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    assert_eq!(c.request_str(&format!("Z0,{bp:x},1")).unwrap(), "OK");
    // vCont is answered at once; the breakpoint comes as a notification.
    assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
    let hit = notification(&mut c);
    assert!(hit.starts_with("Stop:T05"), "{hit}");
    assert!(hit.contains("swbreak:"), "{hit}");
    let breaker = thread_of(&hit);
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    // The other threads run: the spinner's counter moves while the
    // breaker sits at its breakpoint (memory is read while they run).
    let read = |c: &mut harden_support::RspClient| c.request_str(&format!("m{spins:x},8")).unwrap();
    let before = read(&mut c);
    let moved = (0..100_000).any(|_| read(&mut c) != before);
    assert!(moved, "the spinner does not run");
    let threads = c.request_str("qfThreadInfo").unwrap();
    let ids: Vec<String> = threads
        .trim_start_matches('m')
        .split(',')
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 3, "{threads}");
    let running: Vec<&String> = ids.iter().filter(|t| **t != breaker).collect();
    // A running thread's registers cannot be read.
    assert_eq!(c.request_str(&format!("Hg{}", running[0])).unwrap(), "OK");
    assert!(c.request_str("g").unwrap().starts_with('E'));
    // vCont;t stops every running thread: each reported with signal 0.
    // A notification starts a sequence; the stops queued meanwhile are
    // the vStopped replies; one that comes after the `OK` starts a new
    // sequence.
    assert_eq!(c.request_str("vCont;t").unwrap(), "OK");
    let mut stops = Vec::new();
    while stops.len() < 2 {
        let n = notification(&mut c);
        stops.push(n.strip_prefix("Stop:").unwrap_or(&n).to_string());
        loop {
            let r = c.request_str("vStopped").unwrap();
            if r == "OK" {
                break;
            }
            stops.push(r);
        }
    }
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert!(stops.iter().all(|s| s.starts_with("T00")), "{stops:?}");
    let mut stopped: Vec<String> = stops.iter().map(|s| thread_of(s)).collect();
    stopped.sort();
    let mut want: Vec<String> = running.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(stopped, want);
    // `?` now: every thread's last stop, the breaker's breakpoint among them.
    let mut all = vec![c.request_str("?").unwrap()];
    loop {
        let r = c.request_str("vStopped").unwrap();
        if r == "OK" {
            break;
        }
        all.push(r);
    }
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(
        all.iter()
            .any(|r| r.starts_with("T05") && thread_of(r) == breaker),
        "{all:?}"
    );
    // vCont;c:THREAD resumes that thread only: the breaker hits again.
    assert_eq!(c.request_str(&format!("vCont;c:{breaker}")).unwrap(), "OK");
    let again = notification(&mut c);
    assert!(
        again.starts_with("Stop:T05") && thread_of(&again) == breaker,
        "{again}"
    );
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    let still = read(&mut c);
    assert_eq!(read(&mut c), still, "the stopped spinner moved");
    // Let everything end: the exit comes as a notification.
    assert_eq!(c.request_str(&format!("z0,{bp:x},1")).unwrap(), "OK");
    assert_eq!(
        c.request_str(&format!("M{done:x},4:01000000")).unwrap(),
        "OK"
    );
    assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
    let end = notification(&mut c);
    assert!(end.starts_with("Stop:W07"), "{end}");
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    // Back to all-stop is accepted once nothing runs.
    assert_eq!(c.request_str("QNonStop:0").unwrap(), "OK");
}

/// gdb on stdin/stdout pipes; output collected on a thread.
struct Gdb {
    child: Child,
    out: mpsc::Receiver<String>,
    text: String,
    marks: u32,
}

impl Gdb {
    fn start(exe: &Path) -> Gdb {
        // One pipe for stdout and stderr, so that their lines keep their
        // order.
        let mut child = Command::new("sh")
            .args(["-c", "exec gdb \"$@\" 2>&1", "gdb", "-nx", "-q"])
            .args(["-ex", "set confirm off"])
            .args(["-ex", "set debuginfod enabled off"])
            .args(["-ex", "set pagination off"])
            .args(["-ex", "set width 0"])
            .arg(exe)
            .current_dir(exe.parent().unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn gdb");
        let (tx, out) = mpsc::channel();
        let mut r = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0
                    || tx
                        .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                        .is_err()
                {
                    break;
                }
            }
        });
        Gdb {
            child,
            out,
            text: String::new(),
            marks: 0,
        }
    }

    /// Run `cmd`; wait for its echo marker and for `count` occurrences of
    /// `event` in what it printed, then for a second marker: gdb prints
    /// each stop whole from one event handler before it reads the next
    /// command, so the second marker comes after the last stop's lines.
    /// Returns what it printed.
    fn step(&mut self, cmd: &str, event: Option<&str>, count: usize) -> String {
        let start = self.text.len();
        let first = self.send(cmd);
        self.wait(start, &first, event, count, cmd);
        let second = self.send("");
        self.wait(start, &second, None, 0, cmd);
        let mut got = self.text[start..].to_string();
        for m in [first, second] {
            got = got.replace(&m, "");
        }
        got.replace("(gdb) ", "")
    }

    /// Send `cmd` (if any) and an echo marker; returns the marker.
    fn send(&mut self, cmd: &str) -> String {
        self.marks += 1;
        let mark = format!("@@{}@@", self.marks);
        let stdin = self.child.stdin.as_mut().unwrap();
        if !cmd.is_empty() {
            writeln!(stdin, "{cmd}").unwrap();
        }
        writeln!(stdin, "echo {mark}\\n").unwrap();
        stdin.flush().unwrap();
        mark
    }

    fn wait(&mut self, start: usize, mark: &str, event: Option<&str>, count: usize, cmd: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = &self.text[start..];
            if got.contains(mark) && event.is_none_or(|e| got.matches(e).count() >= count) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(s) => self.text.push_str(&s),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("gdb: no {event:?} after {cmd:?}:\n{}", self.text);
                }
            }
        }
    }
}

impl Drop for Gdb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What differs between two servers or two runs only by pids, addresses,
/// where exactly a spinning thread was stopped, or the order of
/// simultaneous stops: each step's output, with pids and addresses
/// replaced, source lines dropped, and the stop paragraphs sorted.
fn normalise(step: &str) -> Vec<String> {
    let mut paras: Vec<String> = Vec::new();
    let mut cur = String::new();
    for l in step.lines() {
        if l.starts_with("Reading ")
            || l.starts_with("warning: File transfers")
            || l.starts_with("Process ")
            || l.starts_with("Remote debugging")
            || l.starts_with("stdin/stdout")
            || l.starts_with("Detaching from process")
            || l.split('\t')
                .next()
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        if l.trim().is_empty() {
            if !cur.is_empty() {
                paras.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let mut w = String::new();
        for tok in l.split_inclusive(|c: char| !c.is_ascii_alphanumeric()) {
            let word = tok.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            let rest = &tok[word.len()..];
            if word.starts_with("0x") {
                w.push_str("ADDR");
            } else if word.len() >= 3 && word.bytes().all(|b| b.is_ascii_digit()) {
                w.push('N');
            } else {
                w.push_str(word);
            }
            w.push_str(rest);
        }
        // Where a spinning thread stops varies from run to run.
        if w.contains("in spinner") || w.contains("spinner (arg") {
            w = "spinner".into();
        }
        if w.starts_with("    at nonstop.c:") && cur.ends_with("spinner\n") {
            continue;
        }
        cur.push_str(&w);
        cur.push('\n');
    }
    if !cur.is_empty() {
        paras.push(cur);
    }
    paras.sort();
    paras
}

/// The non-stop session of the module comment against `server`;
/// returns each step's normalised output.
fn non_stop_session(server: &str, extended: bool) -> Vec<Vec<String>> {
    let (exe, _) = fixtures();
    let extra = if server == GDBMUX { " --no-gpu" } else { "" };
    let mut g = Gdb::start(&exe);
    let mut out = Vec::new();
    let mut step = |g: &mut Gdb, cmd: &str, event: Option<&str>, count: usize| {
        let o = g.step(cmd, event, count);
        out.push(normalise(&o));
        o
    };
    step(&mut g, "set non-stop on", None, 0);
    if extended {
        step(
            &mut g,
            &format!("target extended-remote | {STDIO_GUARD} {server}{extra} --multi -"),
            None,
            0,
        );
        step(
            &mut g,
            &format!("set remote exec-file {}", exe.display()),
            None,
            0,
        );
        step(&mut g, "break bp_here", None, 0);
        step(&mut g, "run", Some("hit Breakpoint 1"), 1);
    } else {
        step(
            &mut g,
            &format!(
                "target remote | {STDIO_GUARD} {server}{extra} - {}",
                exe.display()
            ),
            None,
            0,
        );
        step(&mut g, "break bp_here", None, 0);
        step(&mut g, "continue", Some("hit Breakpoint 1"), 1);
    }
    let threads = step(&mut g, "info threads", None, 0);
    assert_eq!(
        threads.matches("(running)").count(),
        2,
        "{server}: {threads}"
    );
    step(&mut g, "interrupt -a", Some(" stopped."), 2);
    let threads = step(&mut g, "info threads", None, 0);
    assert!(!threads.contains("(running)"), "{server}: {threads}");
    // The breaker (gdb's thread 2: the first it saw stop) runs alone to
    // its second breakpoint; the others stay stopped.
    step(&mut g, "thread 2", None, 0);
    let hit = step(&mut g, "continue &", Some("hit Breakpoint 1"), 1);
    assert!(hit.contains("bp_here (n=2)"), "{server}: {hit}");
    let threads = step(&mut g, "info threads", None, 0);
    assert!(!threads.contains("(running)"), "{server}: {threads}");
    // One thread continued in the background.
    step(&mut g, "thread 1", None, 0);
    step(&mut g, "continue &", None, 0);
    let threads = step(&mut g, "info threads", None, 0);
    assert_eq!(
        threads.matches("(running)").count(),
        1,
        "{server}: {threads}"
    );
    // Memory written while a thread runs; then everything to the end.
    step(&mut g, "print done = 1", None, 0);
    step(&mut g, "delete", None, 0);
    let end = step(&mut g, "continue -a", Some("exited with code 07"), 1);
    assert!(end.contains("exited with code 07"), "{server}: {end}");
    step(&mut g, "info threads", None, 0);
    out
}

fn compare(extended: bool) {
    let a = non_stop_session("gdbserver", extended);
    let b = non_stop_session(GDBMUX, extended);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "step {i}: gdbserver vs gdbmux");
    }
    assert_eq!(a.len(), b.len());
}

#[test]
fn gdb_non_stop_remote_matches_gdbserver() {
    compare(false);
}

#[test]
fn gdb_non_stop_extended_remote_matches_gdbserver() {
    compare(true);
}

/// A non-stop client that vanishes while threads run (`--multi` keeps the
/// process): the process goes back to all-stop, is stopped, and the next
/// client's `?` answers that stop.
#[test]
fn vanished_non_stop_client_leaves_a_stopped_process() {
    let (_, prog) = fixtures();
    let mut g = Gdbmux::start(&[
        "--no-gpu",
        "--multi",
        "127.0.0.1:0",
        "--",
        prog.to_str().unwrap(),
    ]);
    {
        let mut c = g.connect();
        c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
            .unwrap();
        assert_eq!(c.request_str("QNonStop:1").unwrap(), "OK");
        assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
        assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
    }
    g.wait_line("stop journaled for the next client");
    let mut c = g.connect();
    c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    let stop = c.request_str("?").unwrap();
    assert!(stop.starts_with('T'), "{stop}");
    // All-stop again: `c` waits for a stop; the interrupt ends it.
    c.send_packet(b"vCont;c").unwrap();
    c.send_raw(b"\x03").unwrap();
    let (reply, _) = c.wait_stop("vCont;c").unwrap();
    assert!(
        matches!(reply, harden_support::StopReply::Signal(_)),
        "{reply:?}"
    );
}

/// `vAttach` in non-stop mode is answered `OK` (gdb refuses a stop reply
/// there) and the attached thread's stop follows as a notification, as
/// gdbserver does (gdb.server/ext-attach.exp's `target-non-stop=on` half).
#[test]
fn non_stop_attach_answers_ok_then_notifies() {
    let mut sleeper = Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    let g = Gdbmux::start(&["--no-gpu", "--once", "--multi", "127.0.0.1:0"]);
    let mut c = g.connect();
    c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    assert_eq!(c.request_str("!").unwrap(), "OK");
    assert_eq!(c.request_str("QNonStop:1").unwrap(), "OK");
    // No process: `?` has no stopped thread to report.
    assert_eq!(c.request_str("?").unwrap(), "OK");
    let pid = sleeper.id();
    assert_eq!(c.request_str(&format!("vAttach;{pid:x}")).unwrap(), "OK");
    let stop = notification(&mut c);
    assert!(stop.starts_with("Stop:T"), "{stop}");
    assert!(
        thread_of(&stop).starts_with(&format!("p{pid:x}.")),
        "{stop}"
    );
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    assert_eq!(c.request_str(&format!("D;{pid:x}")).unwrap(), "OK");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// Start `server` ("gdbmux" or "gdbserver") on `prog`; a raw client.
fn raw_server(server: &str, prog: &Path) -> (Gdbmux, harden_support::RspClient) {
    let g = if server == "gdbserver" {
        let mut cmd = Command::new("gdbserver");
        cmd.args(["--once", "127.0.0.1:0"]).arg(prog);
        Gdbmux::spawn_until(cmd, "Listening on port ")
    } else {
        Gdbmux::start(&[
            "--no-gpu",
            "--once",
            "127.0.0.1:0",
            "--",
            prog.to_str().unwrap(),
        ])
    };
    let addr = if server == "gdbserver" {
        format!("127.0.0.1:{}", g.addr)
    } else {
        g.addr.clone()
    };
    let c = harden_support::RspClient::connect(addr.as_str()).expect("connect");
    (g, c)
}

/// Prints the server's log when the test fails while it is in scope.
struct LogOnPanic<'a>(&'a Gdbmux);
impl Drop for LogOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("server log:\n{}", self.0.log());
        }
    }
}

/// One server's answers in `queued_stop_session`: the reply to the
/// wildcard `vCont;c`, whether the thread whose stop was still queued has
/// readable registers then (stopped) and the same pc as in its stop, and
/// the `vStopped` reply after.
fn queued_stop_session(server: &str) -> Vec<String> {
    let (_, prog) = fixtures();
    let bp = gpu_support::nm(&prog, "bp_here", false);
    let done = gpu_support::nm(&prog, "done", false);
    let (g, mut c) = raw_server(server, &prog);
    c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    let _log = LogOnPanic(&g);
    c.start_no_ack().unwrap();
    assert_eq!(c.request_str("QNonStop:1").unwrap(), "OK");
    let first = c.request_str("?").unwrap();
    assert!(first.starts_with("T05"), "{first}");
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    // (gdbserver needs a thread selected for a breakpoint insertion, as
    // gdb always has.)
    assert_eq!(
        c.request_str(&format!("Hg{}", thread_of(&first))).unwrap(),
        "OK"
    );
    assert_eq!(c.request_str(&format!("Z0,{bp:x},1")).unwrap(), "OK");
    assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
    let hit = notification(&mut c);
    assert!(hit.contains("swbreak:"), "{hit}");
    let breaker = thread_of(&hit);
    assert_eq!(c.request_str("vStopped").unwrap(), "OK");
    assert_eq!(c.request_str(&format!("z0,{bp:x},1")).unwrap(), "OK");
    // The breaker's step ends; its stop is sent and not acknowledged.
    assert_eq!(c.request_str(&format!("vCont;s:{breaker}")).unwrap(), "OK");
    let step = notification(&mut c);
    assert!(step.starts_with("Stop:T05"), "{step}");
    assert_eq!(thread_of(&step), breaker);
    let pc_in_stop = unrle(
        step.split(';')
            .find_map(|f| f.strip_prefix("10:"))
            .unwrap_or_else(|| panic!("no pc in {step}")),
    );
    // A wildcard resume now leaves it stopped.
    let mut out = vec![format!("vCont;c -> {}", c.request_str("vCont;c").unwrap())];
    assert_eq!(c.request_str(&format!("Hg{breaker}")).unwrap(), "OK");
    // (rip is register 16 of the `g` block; gdbserver has no `p`.)
    let regs = unrle(&c.request_str("g").unwrap());
    let pc = regs.get(256..272).unwrap_or(&regs).to_string();
    out.push(format!(
        "breaker stopped at its step's pc: {}",
        pc == pc_in_stop
    ));
    out.push(format!(
        "vStopped -> {}",
        c.request_str("vStopped").unwrap()
    ));
    // Let everything end.
    assert_eq!(
        c.request_str(&format!("M{done:x},4:01000000")).unwrap(),
        "OK"
    );
    assert_eq!(c.request_str("vCont;c").unwrap(), "OK");
    let end = notification(&mut c);
    let code = end
        .split(';')
        .next()
        .and_then(|w| w.strip_prefix("Stop:W"))
        .and_then(|h| u8::from_str_radix(h, 16).ok());
    out.push(format!("exit {code:?}"));
    out
}

/// Expand the protocol's run-length encoding (`X*N`: `X` repeated
/// `N - 29` more times; gdbserver uses it in replies).
fn unrle(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(ch) = chars.next() {
        if ch == '*' {
            let n = chars.next().map_or(0, |c| c as usize - 29);
            let last = out.chars().last().unwrap_or('0');
            out.extend(std::iter::repeat_n(last, n));
        } else {
            out.push(ch);
        }
    }
    out
}

/// A wildcard resume (`vCont;c`) leaves a thread whose stop is still in
/// the notification queue stopped, as gdbserver does
/// (`linux_set_resume_request`: "has queued stop reply"). gdbmux resumed
/// it: gdb, not knowing it had stopped, later took the queued stop for
/// where it was, and a thread whose displaced step had just ended ran on
/// from gdb's displaced-step buffer (gdb.threads/non-stop-fair-events.exp
/// under load: threads at `?? ()` or in SIGSEGV).
#[test]
fn wildcard_resume_leaves_a_thread_with_a_queued_stop_as_gdbserver() {
    let want = queued_stop_session("gdbserver");
    let got = queued_stop_session("gdbmux");
    assert_eq!(
        want,
        [
            "vCont;c -> OK",
            "breaker stopped at its step's pc: true",
            "vStopped -> OK",
            "exit Some(7)"
        ],
        "gdbserver's own answers changed"
    );
    assert_eq!(got, want, "gdbmux differs from gdbserver");
}
