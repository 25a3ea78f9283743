//! README's main job, exactly as a person runs it: `gdbmux demo`, then the
//! gdb or lldb line its banner prints, pasted into a shell (batch mode
//! added), running the GPU sample to its end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use std::process::Command;

use harden_support::*;

/// Start `gdbmux demo` and return it with its banner line for `client`.
fn demo_line(client: &str) -> (Gdbmux, String) {
    let mut cmd = Command::new(gdbmux_bin());
    cmd.arg("demo");
    let mut g = Gdbmux::spawn(cmd);
    let line = g.wait_line(&format!("  {client} "));
    (g, line.trim().to_string())
}

/// Run a pasted shell line with a deadline; stdout and stderr together.
fn sh(line: &str) -> String {
    let out = Command::new("timeout")
        .args(["120", "sh", "-c", line])
        .output()
        .expect("run the pasted line");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn demo_banner_gdb_line_runs_the_sample() {
    let (g, line) = demo_line("gdb");
    assert!(line.contains("target remote"), "{line}");
    let pasted = line.replacen("gdb ", "gdb -batch -nx ", 1) + " -ex 'monitor gpu' -ex 'continue'";
    let out = sh(&pasted);
    assert!(
        out.contains("GPU state"),
        "monitor gpu:\n{out}\n{}",
        g.log()
    );
    assert!(
        out.contains("exited normally"),
        "the sample did not run to its end:\n{out}\n{}",
        g.log()
    );
}

#[test]
fn demo_banner_lldb_line_runs_the_sample() {
    let (g, line) = demo_line("lldb");
    assert!(line.contains("command script import"), "{line}");
    assert!(line.contains("gdb-remote"), "{line}");
    let pasted = line.replacen("lldb ", "lldb -b ", 1) + " -o 'process continue'";
    let out = sh(&pasted);
    assert!(
        out.contains("exited with status = 0"),
        "the sample did not run to its end:\n{out}\n{}",
        g.log()
    );
}

/// The banner of one `gdbmux demo`: its gdb and lldb connect lines and the
/// command lines it tells a person to type in each client.
struct Banner {
    gdb: String,
    lldb: String,
    gdb_typed: Vec<String>,
    lldb_typed: Vec<String>,
}

fn banner(g: &mut Gdbmux) -> Banner {
    g.wait_line("Ctrl-C ends the demo");
    let log = g.log();
    let mut b = Banner {
        gdb: String::new(),
        lldb: String::new(),
        gdb_typed: vec![],
        lldb_typed: vec![],
    };
    let mut section = "";
    for l in log.lines() {
        let t = l.trim();
        if l.starts_with("  gdb ") {
            b.gdb = t.to_string();
        } else if l.starts_with("  lldb ") {
            b.lldb = t.to_string();
        } else if l.starts_with("Then type, in gdb") {
            section = "gdb";
        } else if l.starts_with("or in lldb") {
            section = "lldb";
        } else if l.starts_with("    ") && section == "gdb" {
            b.gdb_typed.push(t.to_string());
        } else if l.starts_with("    ") && section == "lldb" {
            b.lldb_typed.push(t.to_string());
        } else if !l.starts_with("    ") {
            section = "";
        }
    }
    assert!(
        !b.gdb.is_empty()
            && !b.lldb.is_empty()
            && !b.gdb_typed.is_empty()
            && !b.lldb_typed.is_empty(),
        "the banner names both clients and what to type:\n{log}"
    );
    b
}

/// lldb's arguments from the banner's line `lldb -o 'A' -o 'B' PROGRAM`.
fn lldb_args(line: &str) -> Vec<String> {
    let parts: Vec<&str> = line.split('\'').collect();
    assert!(parts.len() >= 5, "lldb line: {line}");
    vec![
        "-o".into(),
        parts[1].into(),
        "-o".into(),
        parts[3].into(),
        parts[4].trim().into(),
    ]
}

/// What lldb must print for each line the banner gives it.
fn lldb_expect(command: &str) -> &'static str {
    match command {
        c if c.starts_with("breakpoint set") => r"pending",
        "process continue" => {
            r"stop reason = one-shot breakpoint.*vector_add\.hsaco`vector_add|exited with status = 0"
        }
        "thread step-over" => r"stop reason = step over.*vector_add\.hsaco`vector_add",
        c if c.starts_with("register read") => {
            r"pc = 0x[0-9a-f]+ vector_add\.hsaco`vector_add.*v0 = \{(-?\d+ ){63}-?\d+\}"
        }
        _ => r"\(lldb\) ",
    }
}

/// ONE `gdbmux demo`, three clients one after another, each typing exactly
/// the lines of the banner: stock gdb 13 (its commands on stdin, as typed),
/// interactive lldb 23.1 through a pseudo-terminal, and `lldb -b`. Each
/// reaches the kernel breakpoint and runs the freshly launched program to
/// its end.
#[test]
fn demo_serves_gdb_then_lldb_each_typing_the_banner() {
    let env = gpu_support::GpuEnv::get();
    let mut cmd = Command::new(gdbmux_bin());
    cmd.arg("demo");
    let mut g = Gdbmux::spawn(cmd);
    let b = banner(&mut g);

    // gdb: the connect line pasted into a shell, the typed lines on stdin.
    let mut gdb = Command::new("timeout");
    gdb.args(["120", "sh", "-c", &b.gdb])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = gdb.spawn().expect("gdb");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        for l in &b.gdb_typed {
            writeln!(stdin, "{l}").expect("type into gdb");
        }
    }
    let out = child.wait_with_output().expect("gdb ends");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.contains("stopped at a breakpoint in kernel vector_add"),
        "gdb reached no kernel breakpoint:\n{out}\n{}",
        g.log()
    );
    assert!(
        out.contains("simgpu_rt::wait::wait_for_dispatch")
            && !out.contains("No such file or directory"),
        "gdb's frame at the GPU stop is the runtime's wait, with its source:\n{out}"
    );
    assert!(out.contains("exited normally"), "gdb:\n{out}\n{}", g.log());

    // Interactive lldb, on the same demo: a fresh program.
    let args = lldb_args(&b.lldb);
    let script: Vec<[&str; 2]> = b
        .lldb_typed
        .iter()
        .map(|c| [c.as_str(), lldb_expect(c)])
        .collect();
    let out = gpu_support::run_python(
        &env.root.join("stub/tests/gpu/lldb_pty.py"),
        &[
            &serde_json::to_string(&args).expect("json"),
            &serde_json::to_string(&script).expect("json"),
        ],
    );
    assert!(
        out.contains("PTY ALL EXPECTATIONS MET") && out.contains("exited with status = 0"),
        "interactive lldb:\n{out}\n--- gdbmux ---\n{}",
        g.log()
    );

    // lldb -b, the same lines: ends by itself.
    // Through timeout(1), so that a hang still shows what lldb printed and
    // what the helper decided (GDBMUX_LLDB_TRACE).
    let trace = env.bin_dir.join("demo-lldb-trace.txt");
    let _ = std::fs::remove_file(&trace);
    let mut lldb = Command::new("timeout");
    lldb.args(["-s", "KILL", "120", "lldb", "-b"])
        .env("GDBMUX_LLDB_TRACE", &trace);
    let (prog, pre) = args.split_last().expect("args");
    lldb.args(pre);
    for c in &b.lldb_typed {
        lldb.args(["-o", c]);
    }
    lldb.arg(prog);
    let o = lldb.output().expect("lldb -b");
    let out = format!(
        "{}{}\n--- exit: {:?}; helper trace ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        o.status.code(),
        std::fs::read_to_string(&trace).unwrap_or_default()
    );
    assert!(
        out.contains("stop reason = one-shot breakpoint")
            && out.contains("stop reason = step over")
            && out.contains("exited with status = 0"),
        "lldb -b:\n{out}\n--- gdbmux ---\n{}",
        g.log()
    );
}
