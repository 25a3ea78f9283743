//! A GPU runtime the library cannot debug (issue 12: AMD's 0.77 refuses
//! Debian's ROCr, whose `r_debug` version is 7, with
//! `LOADED_ERROR_RESTRICTION`, which gdbmux used only to log). The
//! simulated library refuses the runtime the same way under
//! `SIMGPU_RUNTIME_RESTRICTION=REASON` (tools/simgpu-dbgapi/src/restriction.rs).
//! Stock gdb 13 and stock lldb 23.1 are told on their console while the
//! program runs, `monitor gpu` shows the state with the library's reason,
//! no GPU target is offered, and the program (a kernel compiled here, at
//! test time) runs to its end with the CPU debugged as usual.

mod gpu_support;

use std::path::Path;
use std::process::Command;

use gpu_support::*;

const REASON: &str = "simgpu: the runtime's r_debug version 7 is not supported (8 to 10 are)";

fn serve(host: &Path, dir: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.env("SIMGPU_RUNTIME_RESTRICTION", REASON)
        .args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(host)
        .arg(dir);
    Server::start(cmd)
}

/// The console line and `monitor gpu`'s runtime line both name the state
/// and the library's reason.
fn assert_told(text: &str, log: &str) {
    let state = format!("cannot debug it (LOADED_ERROR_RESTRICTION: {REASON})");
    assert!(
        text.matches(&state).count() >= 2,
        "the console message and `monitor gpu` name the state and the reason:\n{text}\n--- gdbmux ---\n{log}"
    );
}

#[test]
fn gdb_is_told_the_runtime_cannot_be_debugged() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-restriction",
        "gdb",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = serve(&host, &dir);
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx"])
        .args(["-ex", &format!("target remote 127.0.0.1:{}", server.port)])
        .args(["-ex", "monitor gpu break negate"])
        .args(["-ex", "break simgpu_launch"])
        .args(["-ex", "continue"])
        .args(["-ex", "monitor gpu"])
        .args(["-ex", "delete"])
        .args(["-ex", "continue"])
        .arg(&host);
    let text = run_with_timeout(&mut gdb, 120);
    let log = server.log();
    assert_told(&text, &log);
    assert!(
        text.contains("Breakpoint 1, simgpu_launch"),
        "the CPU is debugged:\n{text}"
    );
    assert!(
        !text.contains("stopped at a breakpoint in kernel"),
        "no GPU debugging for this runtime:\n{text}"
    );
    assert!(
        text.contains("exited normally"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    server.wait_log("[inferior] host: PASS", 10);
}

#[test]
fn lldb_is_told_the_runtime_cannot_be_debugged() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-restriction",
        "lldb",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = serve(&host, &dir);
    let helper = env.root.join("tools/lldb/gdbmux_lldb.py");
    let mut lldb = Command::new("lldb");
    lldb.arg("-b")
        .args(["-o", &format!("command script import {}", helper.display())])
        .args(["-o", &format!("gdb-remote 127.0.0.1:{}", server.port)])
        .args(["-o", "breakpoint set -n simgpu_launch"])
        .args(["-o", "process continue"])
        .args(["-o", "process plugin packet monitor gpu"])
        .args(["-o", "target list"])
        .args(["-o", "breakpoint delete --force"])
        .args(["-o", "process continue"])
        .arg(&host);
    let text = run_with_timeout(&mut lldb, 120);
    let log = server.log();
    assert_told(&text, &log);
    assert!(
        text.contains("stop reason = breakpoint ")
            && text.contains("libsimgpu_rt.so`simgpu_launch"),
        "the CPU is debugged:\n{text}\n--- gdbmux ---\n{log}"
    );
    assert!(
        !text.contains("target #1"),
        "no GPU target is offered for this runtime:\n{text}"
    );
    assert!(
        text.contains("exited with status = 0"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    server.wait_log("[inferior] host: PASS", 10);
}
