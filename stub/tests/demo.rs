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
