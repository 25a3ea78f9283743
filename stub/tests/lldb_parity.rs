//! Stock lldb 23.1 against lldb-server and gdbmux: the same lldb script
//! on the same program (compiled at test time), outputs normalised and
//! compared (issue 13, lldb items): program output forwarded as `O`
//! packets, register names, numbers and sets, fault descriptions, every
//! thread's stop reason in one stop, SIGSTOP on every thread after attach.
//!
//! Needs `lldb` and `lldb-server` (pip `lldb-for-pwndbg`; tools/test-all.sh
//! installs it) and gcc.

mod compare_support;

use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::OnceLock;

/// The fixtures, built once; returns their directory.
fn fixture_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| compare_support::build_fixtures("lldb-parity", &["lldbparity", "sleepers"]))
        .clone()
}

/// lldb in batch mode: connect to `port`, run `cmds`.
fn lldb(port: u16, cmds: &[&str], exe: &Path) -> String {
    let mut all = vec![format!("gdb-remote 127.0.0.1:{port}")];
    all.extend(cmds.iter().map(|c| c.to_string()));
    compare_support::lldb_batch(&all, exe)
}

/// Which server.
#[derive(Clone, Copy, Debug)]
enum Server {
    LldbServer,
    Gdbmux,
}

/// A started server and the port it listens on.
struct Started {
    child: Child,
    port: u16,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `server` on `target` (`["--", "./prog", args…]` or
/// `["--attach", pid]`) in `dir`; its port read from its announcement
/// (lldb-server: the `--named-pipe` FIFO; gdbmux: its stderr line).
fn start(server: Server, dir: &Path, target: &[&str]) -> Started {
    match server {
        Server::LldbServer => {
            let (child, port) = compare_support::start_lldb_server(dir, target);
            Started { child, port }
        }
        Server::Gdbmux => {
            // gdbserver's forms: `--attach COMM PID`, `COMM -- PROG ARGS`.
            let args: Vec<&str> = match target {
                ["--attach", pid] => vec!["--attach", "127.0.0.1:0", pid],
                _ => [&["127.0.0.1:0"][..], target].concat(),
            };
            let (child, port) = compare_support::start_gdbmux(dir, &args);
            Started { child, port }
        }
    }
}

/// The same script against both servers launching `prog args`.
fn both_launch(prog: &str, args: &[&str], cmds: &[&str]) -> [String; 2] {
    let dir = fixture_dir();
    let exe = dir.join(prog);
    let run = |server| {
        let mut target = vec!["--", prog];
        target.extend_from_slice(args);
        let prog_path = format!("./{prog}");
        target[1] = &prog_path;
        let s = start(server, &dir, &target);
        let out = lldb(s.port, cmds, &exe);
        drop(s);
        out
    };
    [run(Server::LldbServer), run(Server::Gdbmux)]
}

/// Lines without what differs between any two runs: pids, ports, tids,
/// the values of `masked` registers (the stack: the servers start the
/// program with different environments).
fn normalise(out: &str, masked: &[&str]) -> Vec<String> {
    out.lines()
        .filter(|l| !l.contains("gdb-remote 127.0.0.1"))
        .map(|l| {
            let mut w = String::new();
            for tok in l.split_inclusive(|c: char| !c.is_ascii_alphanumeric()) {
                let core = tok.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
                if core.len() >= 3 && core.bytes().all(|b| b.is_ascii_digit()) {
                    w.push('N');
                    w.push_str(&tok[core.len()..]);
                } else {
                    w.push_str(tok);
                }
            }
            let name = w.split('=').next().unwrap_or("").trim().to_string();
            if masked.contains(&name.as_str()) {
                w = format!("{name} = <masked>");
            }
            // Stack addresses in frame lines (argv=0x7fff…).
            if w.contains("argv=0x") {
                w = w.split("argv=").next().unwrap_or("").to_string();
            }
            w.trim_end().to_string()
        })
        .collect()
}

fn assert_same(a: &[String], b: &[String], what: &str) {
    assert_eq!(
        a,
        b,
        "{what}: lldb-server (left) vs gdbmux (right)\n--- lldb-server\n{}\n--- gdbmux\n{}",
        a.join("\n"),
        b.join("\n")
    );
}

/// The program's stdout and stderr reach lldb while it runs, before the
/// exit is reported (lldb-server's `O` packets), in the same order.
#[test]
fn program_output_reaches_lldb_as_with_lldb_server() {
    let [a, b] = both_launch("lldbparity", &[], &["continue"]);
    let text = b.clone();
    let pos = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{text}"))
    };
    assert!(pos("hello stdout") < pos("hello stderr"));
    assert!(pos("bye 0") < pos("exited with status = 0"));
    assert_same(&normalise(&a, &[]), &normalise(&b, &[]), "program output");
}

/// `register read` and `register read --all`: the same names, order,
/// sets ("General Purpose Registers" with rflags, fs_base and gs_base,
/// "Floating Point Registers", "Advanced Vector Extensions"), widths and
/// values; writes of a 64-bit register and a sub-register read back the
/// same.
#[test]
fn registers_as_lldb_server() {
    let cmds = [
        "register read",
        "register read --all",
        "register write rflags 0x246",
        "register write ah 0x12",
        "register write ymm1 '{0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08 0x09 0x0a 0x0b 0x0c 0x0d 0x0e 0x0f 0x10 0x11 0x12 0x13 0x14 0x15 0x16 0x17 0x18 0x19 0x1a 0x1b 0x1c 0x1d 0x1e 0x1f 0x20}'",
        "register read rflags rax eax ah al ymm1 xmm1 fip fiseg mxcsr mxcsrmask",
    ];
    let [a, b] = both_launch("lldbparity", &[], &cmds);
    assert!(b.contains("General Purpose Registers:"), "{b}");
    assert!(b.contains("rflags = 0x0000000000000246"), "{b}");
    assert!(b.contains("ah = 0x12"), "{b}");
    let masked = ["rsp", "esp", "sp", "spl"];
    assert_same(
        &normalise(&a, &masked),
        &normalise(&b, &masked),
        "registers",
    );
}

/// A SIGSEGV stop carries lldb-server's fault description.
#[test]
fn segv_description_as_lldb_server() {
    let [a, b] = both_launch("lldbparity", &["s"], &["continue"]);
    assert!(
        b.contains(
            "stop reason = signal SIGSEGV: address not mapped to object (fault address=0x0)"
        ),
        "{b}"
    );
    assert_same(&normalise(&a, &[]), &normalise(&b, &[]), "SIGSEGV stop");
}

/// Threads that hit a breakpoint while the process stops for another's
/// hit show it in the same stop, as with lldb-server: in every `thread
/// list`, each thread stopped at the breakpoint has the reason, and every
/// hit is shown exactly once over the run (which threads hit together
/// depends on scheduling, so the property is compared, not the lines).
#[test]
fn threads_hitting_breakpoints_together_all_show_the_reason() {
    let mut cmds = vec!["breakpoint set -n hit"];
    for _ in 0..3 {
        cmds.extend(["continue", "thread list"]);
    }
    cmds.extend(["breakpoint delete 1", "continue"]);
    let outs = both_launch("lldbparity", &["t"], &cmds);
    for (who, out) in ["lldb-server", "gdbmux"].iter().zip(&outs) {
        let bp = out
            .split("address = ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("{who}: no breakpoint address\n{out}"));
        let mut shown = std::collections::BTreeSet::new();
        let mut listed = 0;
        for l in out
            .lines()
            .filter(|l| l.contains("thread #") && l.contains("tid = "))
        {
            listed += 1;
            // Stopped at the breakpoint's address (a thread lldb stepped
            // over it is further on, without a reason).
            let at_bp = l.contains(&format!("{bp} lldbparity`hit("));
            let reason = l.contains("stop reason = breakpoint 1.1");
            assert_eq!(
                at_bp, reason,
                "{who}: a thread at the breakpoint without its reason:\n{out}"
            );
            if reason {
                let tid = l
                    .split("tid = ")
                    .nth(1)
                    .and_then(|r| r.split(',').next())
                    .unwrap();
                shown.insert(tid.to_string());
            }
        }
        assert!(listed > 0, "{who}: no thread list\n{out}");
        assert_eq!(
            shown.len(),
            3,
            "{who}: each thread's hit shown once:\n{out}"
        );
        assert!(out.contains("bye 6"), "{who}: {out}");
        assert!(out.contains("exited with status = 0"), "{who}: {out}");
    }
}

/// A program the test starts; killed when dropped.
struct Victim(Child);

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sleepers` with its threads created (it says "ready").
fn sleepers() -> Victim {
    let mut c = Command::new(fixture_dir().join("sleepers"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(c.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    Victim(c)
}

/// After an attach every thread shows "stop reason = signal SIGSTOP".
#[test]
fn attach_shows_sigstop_on_every_thread_as_lldb_server() {
    let dir = fixture_dir();
    let exe = dir.join("sleepers");
    let key = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.contains("thread #"))
            .map(|l| {
                let n = l
                    .split(':')
                    .next()
                    .unwrap_or(l)
                    .split(',')
                    .next()
                    .unwrap_or(l);
                let reason = l.split("stop reason = ").nth(1).unwrap_or("none");
                format!("{} {}", n.trim().trim_start_matches("* "), reason)
            })
            .collect()
    };
    let mut outs = Vec::new();
    for server in [Server::LldbServer, Server::Gdbmux] {
        let v = sleepers();
        let pid = v.0.id().to_string();
        let s = start(server, &dir, &["--attach", &pid]);
        outs.push(key(&lldb(s.port, &["thread list", "process detach"], &exe)));
        drop(s);
        drop(v);
    }
    assert_eq!(
        outs[1]
            .iter()
            .filter(|l| l.ends_with("signal SIGSTOP"))
            .count(),
        6,
        "{:?}",
        outs[1]
    );
    assert_eq!(outs[0], outs[1], "lldb-server vs gdbmux");
}
