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

use gpu_support::*;

const REASON: &str = "simgpu: the runtime's r_debug version 7 is not supported (8 to 10 are)";

fn serve(host: &Path, dir: &Path) -> Server {
    GpuEnv::get().serve_program_with(host, dir, &[("SIMGPU_RUNTIME_RESTRICTION", REASON)])
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
    let text = gdb_batch(
        server.port,
        &[
            "monitor gpu break negate",
            "break simgpu_launch",
            "continue",
            "monitor gpu",
            "delete",
            "continue",
        ],
        &host,
    );
    let log = server.log();
    assert_told(&text, &log);
    // gdb names the frame from the runtime's DWARF: `simgpu_launch` where
    // it has line tables only (the dev profile), the Rust path
    // `simgpu_rt::ffi::simgpu_launch` where it has full function entries
    // (the release profile's `debug = 1`).
    assert!(
        text.lines().any(|l| l.starts_with("Breakpoint 1, ")
            && (l.contains(", simgpu_launch (") || l.contains("::simgpu_launch ("))),
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
    let text = env.lldb_batch(
        server.port,
        &[
            "breakpoint set -n simgpu_launch",
            "process continue",
            "process plugin packet monitor gpu",
            "target list",
            "breakpoint delete --force",
            "process continue",
        ],
        &host,
    );
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
