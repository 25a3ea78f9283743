//! gdbmux as a drop-in gdbserver: the same command lines, messages and
//! argument passing, checked with stock gdb 13 against both servers (the
//! same gdb script, outputs compared).
//!
//! Needs `gdb` and `gdbserver` (tools/test-all.sh installs them).

mod compare_support;

use std::io::BufRead;
use std::io::BufReader;
use std::io::Read;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

const GDBMUX: &str = env!("CARGO_BIN_EXE_gdbmux");
const GDBSERVER: &str = "gdbserver";
/// Prefix of every stdio-mode server command: gdbserver 13.1 in stdio mode
/// can outlive a gdb that timed out (it spins on the closed pipe), and gdb
/// starts it in a session of its own, out of reach of the test; `timeout`
/// ends it after the longest a session here may take.
const STDIO_GUARD: &str = "timeout -s KILL 90";
const SERVERS: [&str; 2] = [GDBSERVER, GDBMUX];

const FIXTURES: [&str; 13] = [
    "argv",
    "sigchain",
    "sig",
    "condloop",
    "condthreads",
    "sigstorm",
    "execer",
    "forker",
    "sigthreads",
    "tlsvars",
    "watchwide",
    "sigwrite",
    "stepsig",
];

/// The fixtures, built once into one directory; returns it.
fn fixture_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| compare_support::build_fixtures("compat-fixtures", &FIXTURES))
        .clone()
}

/// The `argv` fixture: (directory, binary).
fn argv_fixture() -> (PathBuf, PathBuf) {
    let dir = fixture_dir();
    let exe = dir.join("argv");
    (dir, exe)
}

/// A server started the way the gdb testsuite starts gdbserver, its
/// stderr read line by line on a thread (events, no polling).
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: String,
    stdout: mpsc::Receiver<String>,
}

impl Server {
    fn start(server: &str, args: &[&str], cwd: &Path) -> Server {
        let mut cmd = Command::new(server);
        if server == GDBMUX {
            cmd.arg("--no-gpu").env_remove("GDBMUX_LOG");
        }
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn server");
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut out = child.stdout.take().unwrap();
        let (otx, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            let _ = otx.send(s);
        });
        Server {
            child,
            lines,
            stderr: String::new(),
            stdout,
        }
    }

    /// Wait for a stderr line containing `needle`; returns it.
    fn wait_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.stderr.push_str(&l);
                    self.stderr.push('\n');
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; stderr so far:\n{}", self.stderr),
            }
        }
    }

    fn port(&mut self) -> u16 {
        let l = self.wait_line("Listening on port ");
        l.rsplit(' ').next().unwrap().parse().unwrap()
    }

    /// Wait for the server to exit; returns (exit code, rest of stderr,
    /// its stdout = the program's output).
    fn finish(mut self) -> (Option<i32>, String, String) {
        let (tx, rx) = mpsc::channel();
        let mut child = self.child;
        let pid = child.id();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let st = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(st) => st.unwrap(),
            Err(_) => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                panic!("server did not exit; stderr:\n{}", self.stderr);
            }
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.stderr.push_str(&l);
            self.stderr.push('\n');
        }
        let out = self
            .stdout
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        (st.code(), self.stderr, out)
    }
}

/// Run gdb in batch mode with `cmds`; returns its stdout and stderr.
fn gdb(cmds: &[String], exe: Option<&Path>) -> String {
    protocol_tests::drivers::versions::require_gdb();
    let mut cmd = Command::new("gdb");
    cmd.args(["-nx", "-batch", "-ex", "set confirm off"]);
    cmd.args(["-ex", "set debuginfod enabled off"]);
    for c in cmds {
        cmd.args(["-ex", c]);
    }
    if let Some(e) = exe {
        cmd.arg(e);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn gdb");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(o)) => format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        _ => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("gdb timed out: {cmds:?}");
        }
    }
}

/// The program's `argN=<…>` lines.
fn arg_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("arg"))
        .map(str::to_string)
        .collect()
}

fn addresses(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("stack="))
        .unwrap_or_else(|| panic!("no stack= line in {out:?}"))
        .to_string()
}

const ODD_ARGS: [&str; 6] = ["a b", "", "$HOME", "it's", "*", "x\ty"];

/// `SERVER --once HOST:PORT PROG ARGS…` with a bare PROG found in the
/// current directory: the same "Process … created" line, the same argv
/// for the program (no splitting, empty kept, nothing expanded) and ASLR
/// off by default (the same addresses on every run).
#[test]
fn command_line_launch_matches_gdbserver() {
    let (dir, exe) = argv_fixture();
    let mut results = Vec::new();
    for server in SERVERS {
        let mut addrs = Vec::new();
        for _run in 0..2 {
            let mut args = vec!["--once", "127.0.0.1:0", "argv"];
            args.extend(ODD_ARGS);
            let mut s = Server::start(server, &args, &dir);
            let created = s.wait_line("created; pid = ");
            assert!(
                created.starts_with(&format!("Process {} created; pid = ", exe.display())),
                "{server}: {created}"
            );
            let port = s.port();
            let out = gdb(
                &[format!("target remote 127.0.0.1:{port}"), "continue".into()],
                Some(&exe),
            );
            assert!(out.contains("exited normally"), "{server}: {out}");
            let (code, _err, stdout) = s.finish();
            assert_eq!(code, Some(0), "{server}");
            addrs.push(addresses(&stdout));
            results.push(arg_lines(&stdout));
        }
        assert_eq!(addrs[0], addrs[1], "{server}: ASLR must be off by default");
    }
    let expected: Vec<String> = ODD_ARGS
        .iter()
        .enumerate()
        .map(|(i, a)| format!("arg{}=<{a}>", i + 1))
        .collect();
    for r in &results {
        assert_eq!(r, &expected);
    }
}

/// `--no-disable-randomization` turns ASLR back on (addresses differ
/// between runs), as in gdbserver.
#[test]
fn no_disable_randomization_turns_aslr_on() {
    let (dir, exe) = argv_fixture();
    let mut addrs = Vec::new();
    for _ in 0..3 {
        let mut s = Server::start(
            GDBMUX,
            &[
                "--no-disable-randomization",
                "--once",
                "127.0.0.1:0",
                "argv",
            ],
            &dir,
        );
        let port = s.port();
        gdb(
            &[format!("target remote 127.0.0.1:{port}"), "continue".into()],
            Some(&exe),
        );
        let (_, _, stdout) = s.finish();
        addrs.push(addresses(&stdout));
    }
    assert!(
        addrs[0] != addrs[1] || addrs[1] != addrs[2],
        "three runs with the same addresses: {addrs:?}"
    );
}

/// `run ARGS` in extended-remote (`vRun`): the program gets the same argv
/// from both servers.
#[test]
fn vrun_arguments_match_gdbserver() {
    let (dir, exe) = argv_fixture();
    let mut results = Vec::new();
    for server in SERVERS {
        let mut s = Server::start(server, &["--once", "--multi", "127.0.0.1:0"], &dir);
        let port = s.port();
        let out = gdb(
            &[
                format!("target extended-remote 127.0.0.1:{port}"),
                format!("set remote exec-file {}", exe.display()),
                r#"run 'a b' '' $HOME "q\"uote" "it's" x\ y"#.into(),
                "monitor exit".into(),
            ],
            Some(&exe),
        );
        assert!(out.contains("exited normally"), "{server}: {out}");
        let (_code, _err, stdout) = s.finish();
        results.push(arg_lines(&stdout));
    }
    assert_eq!(results[0], results[1], "gdbserver vs gdbmux");
    assert!(
        results[1].contains(&"arg1=<a b>".to_string()),
        "{:?}",
        results[1]
    );
    assert!(
        results[1].contains(&"arg2=<>".to_string()),
        "{:?}",
        results[1]
    );
    assert!(
        results[1].contains(&"arg3=<$HOME>".to_string()),
        "{:?}",
        results[1]
    );
}

/// `target remote | SERVER - PROG ARGS`: the program's output goes to the
/// server's stderr (gdb shows it), never into the protocol, even when it
/// looks like a packet.
#[test]
fn stdio_mode_keeps_program_off_the_protocol() {
    let (_dir, exe) = argv_fixture();
    for server in SERVERS {
        let extra = if server == GDBMUX { " --no-gpu" } else { "" };
        let out = gdb(
            &[
                format!(
                    "target remote | {STDIO_GUARD} {server}{extra} - {} '$W00#b7' 'a b'",
                    exe.display()
                ),
                "continue".into(),
            ],
            Some(&exe),
        );
        assert!(out.contains("stdin/stdout redirected"), "{server}: {out}");
        assert!(out.contains("arg1=<$W00#b7>"), "{server}: {out}");
        assert!(out.contains("arg2=<a b>"), "{server}: {out}");
        assert!(out.contains("exited normally"), "{server}: {out}");
    }
}

/// A port in use: gdbserver's exact message (the testsuite matches it to
/// pick another port) and exit status 1.
#[test]
fn port_in_use_message_matches_gdbserver() {
    let (dir, _exe) = argv_fixture();
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    for server in SERVERS {
        let s = Server::start(
            server,
            &["--once", &format!("127.0.0.1:{port}"), "argv"],
            &dir,
        );
        let (code, err, _) = s.finish();
        assert_eq!(code, Some(1), "{server}: {err}");
        assert!(
            err.contains("Can't bind address: Address already in use.\nExiting"),
            "{server}: {err}"
        );
    }
}

/// `SERVER --once --attach COMM PID`: attach, gdb sees the process,
/// detaches; the process lives on.
#[test]
fn attach_comm_pid_form() {
    let (dir, _exe) = argv_fixture();
    for server in SERVERS {
        let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = sleeper.id().to_string();
        let mut s = Server::start(server, &["--once", "--attach", "127.0.0.1:0", &pid], &dir);
        let l = s.wait_line("Attached; pid = ");
        assert_eq!(l, format!("Attached; pid = {pid}"), "{server}");
        let port = s.port();
        let out = gdb(
            &[
                format!("target remote 127.0.0.1:{port}"),
                "info inferiors".into(),
                "detach".into(),
            ],
            None,
        );
        assert!(out.contains(&format!("process {pid}")), "{server}: {out}");
        assert!(out.contains("detached]"), "{server}: {out}");
        let (code, _, _) = s.finish();
        assert_eq!(code, Some(0), "{server}");
        assert!(
            sleeper.try_wait().unwrap().is_none(),
            "{server}: detached process died"
        );
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}

/// Without `--once` (and without `--multi`), a disconnect keeps the
/// process for the next connection; the server exits when the process is
/// gone. `::1:PORT` (IPv6 without brackets) is accepted.
#[test]
fn reopens_after_disconnect_and_ipv6_form() {
    let (dir, exe) = argv_fixture();
    for server in SERVERS {
        let mut s = Server::start(server, &["::1:0", "argv", "one"], &dir);
        let port = s.port();
        let out = gdb(
            &[
                format!("target remote [::1]:{port}"),
                "break main".into(),
                "continue".into(),
                "disconnect".into(),
            ],
            Some(&exe),
        );
        assert!(out.contains("Breakpoint 1, main"), "{server}: {out}");
        s.wait_line("Remote side has terminated connection");
        let out = gdb(
            &[
                format!("target remote [::1]:{port}"),
                "info frame".into(),
                "continue".into(),
            ],
            Some(&exe),
        );
        assert!(out.contains("in main"), "{server}: second client: {out}");
        assert!(out.contains("exited normally"), "{server}: {out}");
        let (code, _, stdout) = s.finish();
        assert_eq!(code, Some(0), "{server}");
        assert_eq!(arg_lines(&stdout), ["arg1=<one>"], "{server}");
    }
}

/// gdbserver's `--wrapper WRAPPER --`: the wrapper starts the program.
#[test]
fn wrapper_runs_the_program() {
    let (dir, exe) = argv_fixture();
    let mut outs = Vec::new();
    for server in SERVERS {
        let mut s = Server::start(
            server,
            &[
                "--wrapper",
                "env",
                "WT13=1",
                "--",
                "--once",
                "127.0.0.1:0",
                "argv",
                "w",
            ],
            &dir,
        );
        let port = s.port();
        let out = gdb(
            &[
                format!("target remote 127.0.0.1:{port}"),
                "break main".into(),
                "continue".into(),
                "print (char*)getenv(\"WT13\")".into(),
                "continue".into(),
            ],
            Some(&exe),
        );
        assert!(out.contains("\"1\""), "{server}: {out}");
        let (_, _, stdout) = s.finish();
        outs.push(arg_lines(&stdout));
    }
    assert_eq!(outs[0], outs[1]);
}

/// gdb's lines that differ between any two servers only by pids and
/// gdbserver's own diagnostics, dropped: what is left is compared.
fn normalise(out: &str) -> Vec<String> {
    let mut v = Vec::new();
    for l in out.lines() {
        if l.starts_with("Reading ")
            || l.starts_with("warning: File transfers")
            || l.starts_with("gdbserver:")
            || l.starts_with("Detaching from process")
            || l.starts_with("Process ")
            || l.starts_with("Remote debugging")
            || l.starts_with("stdin/stdout")
            || l.contains("Description")
            || l.trim().is_empty()
        {
            continue;
        }
        let mut w = String::new();
        for tok in l.split_inclusive(|c: char| !c.is_ascii_alphanumeric()) {
            let digits = tok.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            if digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
                w.push_str("PID");
                w.push_str(&tok[digits.len()..]);
            } else {
                w.push_str(tok);
            }
        }
        // Pids of any width after "process " and in "Thread PID.TID" (low
        // pids have 3 digits: after the pid counter wraps).
        for prefix in ["process ", "Thread "] {
            let mut from = 0;
            while let Some(i) = w[from..].find(prefix).map(|i| from + i + prefix.len()) {
                let mut end = i;
                loop {
                    let n = w[end..].bytes().take_while(u8::is_ascii_digit).count();
                    if n == 0 {
                        break;
                    }
                    w.replace_range(end..end + n, "PID");
                    end += "PID".len();
                    if w[end..].starts_with('.') {
                        end += 1;
                    } else {
                        break;
                    }
                }
                from = end;
            }
        }
        // The connection column of `info inferiors` names the server.
        if let Some(i) = w.find("(remote |") {
            w.truncate(i);
        }
        // `info inferiors` pads its columns to the longest pid: a pid of
        // another width moves the columns.
        if w.contains("process PID") {
            w = w.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        v.push(w.trim_end().to_string());
    }
    v
}

/// Run the same gdb script against both servers over stdio
/// (`target remote | SERVER - PROG ARGS`); returns the normalised outputs.
fn same_script(prog: &str, args: &str, script: &[&str]) -> [Vec<String>; 2] {
    let dir = fixture_dir();
    let exe = dir.join(prog);
    let run = |server: &str| {
        let extra = if server == GDBMUX { " --no-gpu" } else { "" };
        let mut cmds = vec![format!(
            "target remote | {STDIO_GUARD} {server}{extra} - {} {args}",
            exe.display()
        )];
        cmds.extend(script.iter().map(|c| c.to_string()));
        normalise(&gdb(&cmds, Some(&exe)))
    };
    [run(GDBSERVER), run(GDBMUX)]
}

/// `catch exec` stops at the exec with gdb's "executing new program", and
/// the program runs on to its exit: the same session as with gdbserver.
#[test]
fn gdb_catch_exec_matches_gdbserver() {
    let [a, b] = same_script("execer", "", &["catch exec", "continue", "continue"]);
    let text = b.join("\n");
    assert!(text.contains("is executing new program"), "{text}");
    assert!(text.contains("Catchpoint 1 (exec'd"), "{text}");
    assert!(text.contains("exited with code 05"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// vfork with follow-fork-mode child: gdb follows the child, which stops
/// at the breakpoint (vfork and vforkdone events); then both run to their
/// ends. The same session as with gdbserver.
#[test]
fn gdb_vfork_follow_child_matches_gdbserver() {
    let [a, b] = same_script(
        "forker",
        "v",
        &[
            "set follow-fork-mode child",
            "break child_work",
            "continue",
            "info inferiors",
            "continue",
        ],
    );
    let text = b.join("\n");
    assert!(text.contains("vfork to child"), "{text}");
    assert!(text.contains("hit Breakpoint 1, child_work"), "{text}");
    assert!(text.contains("is vfork child of inferior 1"), "{text}");
    assert!(text.contains("exited with code 052"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// `next` over vfork with follow-fork-mode child (gdb testsuite
/// foll-vfork "step over vfork"): gdb takes its step-resume breakpoint out
/// of the parent and inserts it in the child, which shares the parent's
/// memory; the child stops on the next line, as with gdbserver, instead of
/// running on unchecked.
#[test]
fn gdb_next_over_vfork_into_child_matches_gdbserver() {
    let [a, b] = same_script(
        "forker",
        "v",
        &[
            "break 14",
            "continue",
            "set follow-fork-mode child",
            "next",
            "info inferiors",
            "continue",
        ],
    );
    let text = b.join("\n");
    assert!(text.contains("vfork to child"), "{text}");
    assert!(text.contains("15\t    if (p == 0) {"), "{text}");
    assert!(text.contains("is vfork child of inferior 1"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// Run lldb in batch mode with `cmds` on `exe`; returns its stdout.
fn lldb(cmds: &[String], exe: &Path) -> String {
    compare_support::lldb_batch(cmds, exe)
}

/// lldb sees an exec as "stop reason = exec" and the new image runs to
/// its exit: the same lldb session against lldb-server and gdbmux.
#[test]
fn lldb_stops_at_exec_as_lldb_server() {
    let dir = fixture_dir();
    let exe = dir.join("execer");
    let script = |port: u16| {
        vec![
            format!("gdb-remote 127.0.0.1:{port}"),
            "continue".to_string(),
            "thread list".to_string(),
            "continue".to_string(),
        ]
    };
    let (mut ls, port) = compare_support::start_lldb_server(&dir, &["--", "./execer"]);
    let reference = lldb(&script(port), &exe);
    let _ = ls.kill();
    let _ = ls.wait();
    let mut s = Server::start(GDBMUX, &["--once", "127.0.0.1:0", "execer"], &dir);
    let port = s.port();
    let out = lldb(&script(port), &exe);
    let (code, _, _) = s.finish();
    assert_eq!(code, Some(0));
    let key = |o: &str| -> Vec<String> {
        o.lines()
            .filter(|l| l.contains("stop reason") || l.contains("exited with status"))
            .map(|l| {
                l.split_whitespace()
                    .filter(|w| !w.chars().all(|c| c.is_ascii_digit() || c == ','))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    assert!(out.contains("stop reason = exec"), "{out}");
    assert!(out.contains("exited with status = 5"), "{out}");
    assert_eq!(
        key(&reference),
        key(&out),
        "lldb-server:\n{reference}\ngdbmux:\n{out}"
    );
}

/// Two threads get a signal each at the same moment; gdb passes both
/// (`handle … pass`). Both must be delivered: the second, held while the
/// first is reported, is not lost (the program exits 0 only then).
#[test]
fn gdb_passes_signals_of_two_threads() {
    let [a, b] = same_script(
        "sigthreads",
        "",
        &[
            "handle SIGUSR1 stop print pass",
            "handle SIGUSR2 stop print pass",
            "continue",
            "continue",
            "continue",
        ],
    );
    for (who, out) in [("gdbserver", &a), ("gdbmux", &b)] {
        let text = out.join("\n");
        assert!(text.contains("received signal SIGUSR1"), "{who}: {text}");
        assert!(text.contains("received signal SIGUSR2"), "{who}: {text}");
        assert!(text.contains("seen 10 12"), "{who}: {text}");
        assert!(text.contains("exited normally"), "{who}: {text}");
    }
}

/// A signal gdb passes silently (`handle SIGUSR1 nostop noprint pass`)
/// that stops a thread gdb single-steps is reported all the same, as
/// gdbserver reports it (linux-low.cc ignores a passed signal only for a
/// thread not resumed with `resume_step`): gdb runs the handler under a
/// step-resume breakpoint, and `stepi` ends at main's next instruction
/// with the handler run once. gdbmux passed it on with the step before,
/// and `stepi` ended at the handler's first instruction. The second
/// `stepi` takes the SIGUSR1 that the raw `kill` left pending, from a
/// breakpoint: in non-stop mode gdb steps over that breakpoint out of
/// line (displaced stepping) and relocates the pc back when the step ends
/// with a signal. The same session as with gdbserver in both modes.
#[test]
fn gdb_step_with_a_passed_signal_matches_gdbserver() {
    let dir = fixture_dir();
    let exe = dir.join("stepsig");
    let script = [
        "handle SIGUSR1 nostop noprint pass",
        "break *raw_kill",
        "break *after_kill",
        "continue",
        "stepi",
        "print hits",
        "stepi",
        "x/i $pc",
        "print hits",
        "next",
        "print hits",
        "next",
        "print hits",
        "continue",
    ];
    for mode in ["off", "on"] {
        let run = |server: &str| {
            let extra = if server == GDBMUX { " --no-gpu" } else { "" };
            let mut cmds = vec![
                format!("set non-stop {mode}"),
                format!(
                    "target remote | {STDIO_GUARD} {server}{extra} - {}",
                    exe.display()
                ),
            ];
            cmds.extend(script.iter().map(|c| c.to_string()));
            normalise(&gdb(&cmds, Some(&exe)))
        };
        let [a, b] = [run(GDBSERVER), run(GDBMUX)];
        let text = b.join("\n");
        assert!(text.contains("$2 = 1"), "non-stop {mode}: {text}");
        assert!(!text.contains("on_usr1 ("), "non-stop {mode}: {text}");
        assert!(
            text.contains("exited with code 02"),
            "non-stop {mode}: {text}"
        );
        assert_eq!(a, b, "non-stop {mode}: gdbserver vs gdbmux");
    }
}

/// Thread-local variables (`qGetTLSAddr`), of the program and of libc
/// (`errno`), in the main thread and another: the same values as with
/// gdbserver.
#[test]
fn gdb_reads_thread_local_variables_as_gdbserver() {
    let [a, b] = same_script(
        "tlsvars",
        "",
        &[
            "break at_stop",
            "continue",
            "print tls_value",
            "print tls_name",
            "print errno",
            "continue",
            "print tls_value",
            "print tls_name",
            "print errno",
            "thread 1",
            "print tls_value",
        ],
    );
    let values = |v: &[String]| -> Vec<String> {
        v.iter().filter(|l| l.starts_with('$')).cloned().collect()
    };
    assert_eq!(
        values(&b),
        [
            "$1 = 11",
            "$2 = \"main\\000\\000\\000\"",
            "$3 = 3",
            "$4 = 22",
            "$5 = \"Wain\\000\\000\\000\"",
            "$6 = 7",
            "$7 = 11"
        ],
        "{b:?}"
    );
    assert_eq!(values(&a), values(&b), "gdbserver vs gdbmux");
}

/// `monitor set libthread-db-search-path`: gdbserver's message; a path
/// with no libthread_db turns thread-local storage off ("Remote target
/// failed to process qGetTLSAddr request", gdb.server/no-thread-db.exp), a
/// directory that holds the system's libthread_db (no built-in fallback
/// with a path the client set) and `$sdir` give the values; an empty path
/// is the default. The same sessions as with gdbserver.
#[test]
fn gdb_libthread_db_search_path_matches_gdbserver() {
    let libdir = [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
    ]
    .into_iter()
    .find(|d| Path::new(d).join("libthread_db.so.1").exists())
    .expect("the system's libthread_db.so.1 (libc6)");
    let cases: [(&str, bool); 4] = [
        ("/foo/bar", false),
        (libdir, true),
        ("/foo/bar:$sdir", true),
        ("", true),
    ];
    for (path, works) in cases {
        let set = format!("monitor set libthread-db-search-path {path}");
        let [a, b] = same_script(
            "tlsvars",
            "",
            &[
                &set,
                "break at_stop",
                "continue",
                "print tls_value",
                "print errno",
            ],
        );
        let text = b.join("\n");
        let shown = if path.is_empty() { "$sdir:$pdir" } else { path };
        assert!(
            text.contains(&format!("libthread-db-search-path set to `{shown}'")),
            "{path}: {text}"
        );
        if works {
            assert!(
                text.contains("$1 = 11") && text.contains("$2 = 3"),
                "{path}: {text}"
            );
        } else {
            assert!(
                text.contains("Cannot find thread-local storage for Thread")
                    && text.contains("Remote target failed to process qGetTLSAddr request")
                    && !text.contains("$1 = 11"),
                "{path}: {text}"
            );
        }
        assert_eq!(a, b, "{path}: gdbserver vs gdbmux");
    }
}

/// `gdbmux --selftest` in gdbserver's shape (gdb.server/unittest.exp
/// matches "Ran N unit tests, 0 failed"); a failing check is reported by
/// name, counted, and makes the exit status 1; filters select checks;
/// an empty filter is gdbserver's error.
#[test]
fn selftest_mode_reports_as_gdbserver() {
    let run = |args: &[&str], canary: bool| {
        let mut c = Command::new(GDBMUX);
        c.args(args).stdin(Stdio::null());
        if canary {
            c.env("GDBMUX_SELFTEST_CANARY", "1");
        } else {
            c.env_remove("GDBMUX_SELFTEST_CANARY");
        }
        let o = c.output().expect("run gdbmux --selftest");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--selftest"], false);
    assert_eq!(code, Some(0), "{err}");
    let last = err.lines().last().unwrap_or_default().to_string();
    let n: usize = last
        .strip_prefix("Ran ")
        .and_then(|r| r.strip_suffix(" unit tests, 0 failed"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("last line {last:?}"));
    assert!(n >= 10, "{err}");
    assert_eq!(err.matches("Running selftest ").count(), n, "{err}");
    assert!(
        err.contains("Running selftest thread-db-proc-service-exports."),
        "{err}"
    );
    assert!(!err.contains("Self test failed"), "{err}");

    let (code, err) = run(&["--selftest"], true);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("Running selftest selftest-canary.\nSelf test failed: selftest-canary"),
        "{err}"
    );
    assert!(
        err.ends_with(&format!("Ran {} unit tests, 1 failed\n", n + 1)),
        "{err}"
    );

    let (code, err) = run(&["--selftest=wire-", "--selftest=agent"], false);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("Running selftest wire-rle.") && err.contains("Running selftest agent-expr.")
    );
    assert!(!err.contains("packet-parse"), "{err}");

    let (code, err) = run(&["--selftest="], false);
    assert_eq!(
        (code, err.as_str()),
        (Some(1), "Error: selftest filter is empty.\n")
    );
}

/// `catch syscall` (QCatchSyscalls): the call and the return of a caught
/// system call stop, others do not; the same session as with gdbserver.
#[test]
fn gdb_catch_syscall_matches_gdbserver() {
    let [a, b] = same_script(
        "argv",
        "x",
        &[
            "catch syscall write",
            "catch syscall exit_group",
            "continue",
            "continue",
            "continue",
            "continue",
        ],
    );
    let text = b.join("\n");
    assert!(
        text.contains("Catchpoint 1 (call to syscall write)"),
        "{text}"
    );
    assert!(
        text.contains("Catchpoint 1 (returned from syscall write)"),
        "{text}"
    );
    assert!(
        text.contains("Catchpoint 2 (call to syscall exit_group)"),
        "{text}"
    );
    assert!(text.contains("exited normally"), "{text}");
    // The program's stack= line differs (environment); the rest is equal.
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.starts_with("stack="))
            .cloned()
            .collect()
    };
    assert_eq!(strip(&a), strip(&b), "gdbserver vs gdbmux");
}

/// A 16-byte hardware watchpoint (two debug registers, `Z2,addr,10`)
/// triggers on writes to either half: the same session as gdbserver.
#[test]
fn gdb_wide_hardware_watchpoint_matches_gdbserver() {
    let [a, b] = same_script(
        "watchwide",
        "",
        &[
            "break main",
            "continue",
            "watch pair",
            "continue",
            "continue",
            "continue",
        ],
    );
    let text = b.join("\n");
    assert!(text.contains("Hardware watchpoint 2: pair"), "{text}");
    assert!(
        text.contains("New value = {first = 1, second = 0}"),
        "{text}"
    );
    assert!(
        text.contains("New value = {first = 1, second = 2}"),
        "{text}"
    );
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// `R` (restart): with gdb's run-packet off and no exec-file, `run` of a
/// running program restarts it with `R`; it stops at main again and runs
/// to its end, as with gdbserver.
#[test]
fn gdb_restart_with_r_packet_matches_gdbserver() {
    let (dir, exe) = argv_fixture();
    let mut outs = Vec::new();
    for server in SERVERS {
        let mut s = Server::start(server, &["--once", "--multi", "127.0.0.1:0"], &dir);
        let port = s.port();
        let out = gdb(
            &[
                "set sysroot".into(),
                format!("target extended-remote 127.0.0.1:{port}"),
                format!("set remote exec-file {}", exe.display()),
                "break main".into(),
                "run".into(),
                "set remote run-packet off".into(),
                "set remote exec-file".into(),
                "run".into(),
                "continue".into(),
                "monitor exit".into(),
            ],
            Some(&exe),
        );
        assert_eq!(
            out.matches("Breakpoint 1, main").count(),
            2,
            "{server}: {out}"
        );
        assert!(out.contains("exited normally"), "{server}: {out}");
        s.finish();
        outs.push(normalise(&out));
    }
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.contains("argv=0x") && !l.starts_with("stack="))
            .cloned()
            .collect()
    };
    assert_eq!(strip(&outs[0]), strip(&outs[1]), "gdbserver vs gdbmux");
}

/// `info os` and `info os processes` (qXfer:osdata): the table of tables
/// and the process list with gdbserver's columns, pid 1 included.
#[test]
fn gdb_info_os_processes() {
    let (dir, _exe) = argv_fixture();
    for server in SERVERS {
        let mut s = Server::start(server, &["--once", "--multi", "127.0.0.1:0"], &dir);
        let port = s.port();
        let out = gdb(
            &[
                format!("target extended-remote 127.0.0.1:{port}"),
                "info os".into(),
                "info os processes".into(),
                "monitor exit".into(),
            ],
            None,
        );
        assert!(
            out.contains("processes  Listing of all processes"),
            "{server}: {out}"
        );
        let header = out
            .lines()
            .find(|l| l.starts_with("pid "))
            .unwrap_or_else(|| panic!("{server}: no process table: {out}"));
        let cols: Vec<&str> = header.split_whitespace().collect();
        assert_eq!(cols, ["pid", "user", "command", "cores"], "{server}");
        assert!(out.lines().any(|l| l.starts_with("1 ")), "{server}: {out}");
        s.finish();
    }
}

/// `$_siginfo` assignments (qXfer:siginfo:write) reach the program's
/// SA_SIGINFO handler, as with gdbserver.
#[test]
fn gdb_siginfo_write_matches_gdbserver() {
    let [a, b] = same_script(
        "sigwrite",
        "",
        &[
            "continue",
            "p $_siginfo.si_errno = 666",
            "p $_siginfo.si_code = 999",
            "continue",
        ],
    );
    let text = b.join("\n");
    assert!(text.contains("handler sig=10 errno=666 code=999"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// gdbserver's monitor commands the testsuite uses: `monitor set debug`
/// and `monitor set remote-debug` switch the debug output, `monitor set
/// debug-format` the timestamps on it (gdb.server/server-mon.exp), an
/// empty or unknown command is an error after "Unknown monitor command.".
#[test]
fn gdb_monitor_set_debug_matches_gdbserver() {
    let [a, b] = same_script(
        "argv",
        "",
        &[
            "monitor set debug 1",
            "monitor set debug 0",
            "monitor set remote-debug 1",
            "monitor set remote-debug 0",
            "monitor set debug-format all",
            "monitor set debug-format none",
            "monitor set debug-format timestamp",
            "monitor set debug-format bogus",
            "monitor",
            "kill",
        ],
    );
    for (who, out) in [("gdbserver", &a), ("gdbmux", &b)] {
        let text = out.join("\n");
        for line in [
            "Debug output enabled.",
            "Debug output disabled.",
            "Protocol debug output enabled.",
            "Protocol debug output disabled.",
            "All extra debug format options enabled.",
            "All extra debug format options disabled.",
            "Timestamps will be added to debug output.",
            "Unknown debug-format argument: \"bogus\"",
            "Unknown monitor command.",
            "Protocol error with Rcmd",
        ] {
            assert!(text.contains(line), "{who}: no {line:?} in {text}");
        }
    }
}

/// Target-side breakpoint conditions (`ConditionalBreakpoints+`, agent
/// expressions): `break f if x == 1000` with condition-evaluation target
/// stops once in 2000 calls, and gdb receives as few stop replies as with
/// gdbserver (the 1999 false hits never reach it); the program's result
/// shows every call ran.
#[test]
fn gdb_target_side_condition_matches_gdbserver() {
    let [a, b] = same_script(
        "condloop",
        "",
        &[
            "set breakpoint condition-evaluation target",
            "break f if x == 1000",
            "set debug remote 1",
            "continue",
            "set debug remote 0",
            "print x",
            "info breakpoints",
            "continue",
        ],
    );
    let stops = |v: &[String]| {
        v.iter()
            .filter(|l| l.contains("Packet received: T05"))
            .count()
    };
    let sent_cond = |v: &[String]| {
        v.iter()
            .any(|l| l.contains("Sending packet: $Z0,") && l.contains(";X"))
    };
    assert!(sent_cond(&b), "gdb sent no condition: {b:?}");
    assert_eq!(stops(&a), stops(&b), "stop replies: gdbserver vs gdbmux");
    assert!(stops(&b) < 10, "false hits were reported: {}", stops(&b));
    let keep = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.contains("[remote]"))
            .cloned()
            .collect()
    };
    let (a, b) = (keep(&a), keep(&b));
    let text = b.join("\n");
    // (normalise writes 4-digit numbers as PID: x=1000, the sum.)
    assert!(text.contains("Breakpoint 1, f (x=PID)"), "{text}");
    assert!(text.contains("(target evals)"), "{text}");
    assert!(text.contains("breakpoint already hit 1 time"), "{text}");
    assert!(text.contains("sum PID"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// A program run through the dynamic loader (`SERVER - /lib64/ld.so PROG`,
/// gdb testsuite gdb.server/solib-list.exp): the kernel's auxv describes
/// ld.so, which has no `PT_PHDR`, so `qXfer:libraries-svr4:read` answers
/// an error as gdbserver does, and gdb walks the loader's list itself: it
/// lists libc, and `bt` goes through libc's `raise` (with an empty list,
/// gdb knew no library but ld.so). The same session as with gdbserver.
#[test]
fn gdb_program_run_through_ld_so_matches_gdbserver() {
    let dir = fixture_dir();
    let exe = dir.join("sig");
    let interp = "/lib64/ld-linux-x86-64.so.2";
    let run = |server: &str| {
        let extra = if server == GDBMUX { " --no-gpu" } else { "" };
        let cmds = [
            "set sysroot".to_string(),
            format!(
                "target remote | {STDIO_GUARD} {server}{extra} - {interp} {}",
                exe.display()
            ),
            "continue".into(),
            "info sharedlibrary".into(),
            "bt".into(),
        ];
        normalise(&gdb(&cmds, Some(&exe)))
    };
    let [a, b] = [run(GDBSERVER), run(GDBMUX)];
    let text = b.join("\n");
    assert!(text.contains("received signal SIGUSR1"), "{text}");
    assert!(text.contains("libc.so.6"), "{text}");
    assert!(text.contains("__GI_raise (sig=10)"), "{text}");
    assert_eq!(a, b, "gdbserver vs gdbmux");
}

/// Target-side conditions with four threads hitting the same breakpoint:
/// in all-stop a false hit's step-over stops the other threads first (as
/// gdbserver does), so a thread reaching the breakpoint meanwhile still
/// traps: `break f if x == 2999` stops once per thread, as with gdbserver,
/// and the program runs to its end.
#[test]
fn gdb_target_side_condition_with_threads_matches_gdbserver() {
    let script = [
        "set breakpoint condition-evaluation target",
        "break f if x == 2999",
        "continue",
        "continue",
        "continue",
        "continue",
        "continue",
    ];
    for (who, out) in SERVERS.iter().zip(same_script("condthreads", "", &script)) {
        let text = out.join("\n");
        let hits = text.matches("Breakpoint 1, f (x=").count();
        assert_eq!(hits, 4, "{who}: breakpoint stops:\n{text}");
        assert!(text.contains("sum PID"), "{who}: {text}");
        assert!(text.contains("exited normally"), "{who}: {text}");
    }
}

/// The same in non-stop mode (`set non-stop on`, `continue -a`): a false
/// hit's step-over stops the other threads there too, as gdbserver's
/// `start_step_over` does, unseen by gdb, so no thread runs through the
/// breakpoint while its original byte is back: each thread stops once
/// with x == 2999 and the program runs to its end.
#[test]
fn gdb_target_side_condition_non_stop_matches_gdbserver() {
    let dir = fixture_dir();
    let exe = dir.join("condthreads");
    for server in SERVERS {
        let extra = if server == GDBMUX { " --no-gpu" } else { "" };
        let mut cmds = vec![
            "set non-stop on".to_string(),
            format!(
                "target remote | {STDIO_GUARD} {server}{extra} - {}",
                exe.display()
            ),
            "set breakpoint condition-evaluation target".into(),
            "break f if x == 2999".into(),
        ];
        // One `continue -a` per stop at most: four hits, then the exit.
        cmds.extend(std::iter::repeat_n("continue -a".to_string(), 5));
        let text = gdb(&cmds, Some(&exe));
        let hits = text.matches("hit Breakpoint 1, f (x=2999)").count();
        assert_eq!(hits, 4, "{server}: breakpoint stops:\n{text}");
        assert!(text.contains("exited normally"), "{server}: {text}");
    }
}

/// Attach to a single-threaded process whose SIGALRM handler raises the
/// next SIGALRM (gdb testsuite attach-into-signal, nonthreaded): when the
/// signal comes before the attach SIGSTOP, the attach stop is that signal
/// ("Program received signal SIGALRM"), as gdbserver reports it, and a
/// detach delivers it (gdbserver's `get_detach_signal`): the chain goes on
/// and the process is alive after every round. Which signal comes first is
/// timing; that none is lost is asserted.
#[test]
fn attach_reports_the_signal_that_came_first() {
    let dir = fixture_dir();
    for server in SERVERS {
        let mut chain = Command::new(dir.join("sigchain"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(chain.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let pid = chain.id().to_string();
        let mut signalled = 0;
        for round in 0..10 {
            let mut s = Server::start(server, &["--once", "--multi", "127.0.0.1:0"], &dir);
            let port = s.port();
            let out = gdb(
                &[
                    "handle SIGALRM stop print pass".into(),
                    format!("target extended-remote 127.0.0.1:{port}"),
                    format!("attach {pid}"),
                    "detach".into(),
                    "monitor exit".into(),
                ],
                None,
            );
            let alive = chain.try_wait().unwrap().is_none();
            let (code, _, _) = s.finish();
            if !alive || !out.contains("detached]") {
                let _ = chain.kill();
                panic!("{server} round {round}: alive {alive}, exit {code:?}: {out}");
            }
            if out.contains("received signal SIGALRM") {
                signalled += 1;
            }
        }
        chain.kill().unwrap();
        chain.wait().unwrap();
        // Whether a SIGALRM beats the attach SIGSTOP depends on timing: CI
        // once saw gdbserver report it in none of ten rounds. The property
        // that holds for both servers every time is the one above: no
        // signal is lost (the chain aborts on a lost SIGALRM), so the
        // process is alive after every detach. The count is printed.
        eprintln!("{server}: {signalled} of 10 attach stops were SIGALRM");
    }
}

/// Attach under a signal storm (gdb testsuite attach-into-signal): ten
/// attach/detach rounds with each server against a process whose two
/// threads raise SIGALRM without pause. No round hangs, and after every
/// detach from gdbmux the process runs on (not left stopped by a stray
/// SIGSTOP).
#[test]
fn repeated_attach_under_a_signal_storm() {
    let dir = fixture_dir();
    for server in SERVERS {
        let mut storm = Command::new(dir.join("sigstorm"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(storm.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let pid = storm.id().to_string();
        for round in 0..10 {
            let mut s = Server::start(server, &["--once", "--attach", "127.0.0.1:0", &pid], &dir);
            let port = s.port();
            let out = gdb(
                &[
                    "handle SIGALRM stop print pass".into(),
                    format!("target remote 127.0.0.1:{port}"),
                    "info threads".into(),
                    "detach".into(),
                ],
                None,
            );
            assert!(out.contains("detached]"), "{server} round {round}: {out}");
            let (code, _, _) = s.finish();
            assert_eq!(code, Some(0), "{server} round {round}");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            // gdbserver 13.1 itself sometimes leaves it stopped (state T:
            // its attach SIGSTOP delivered after the detach), so only
            // gdbmux is held to it.
            assert!(
                server != GDBMUX || matches!(state, Some("R") | Some("S")),
                "{server} round {round}: process left in state {state:?}"
            );
        }
        storm.kill().unwrap();
        storm.wait().unwrap();
    }
}
