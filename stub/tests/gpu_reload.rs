//! GPU breakpoints across a code object's unload and reload, with stock
//! clients: `reload.c` (compiled here, with its kernels) launches `negate`,
//! unloads its code object, loads another one, loads `negate` again and
//! launches it once more. A breakpoint set by name before anything is
//! loaded stops the wave of both launches: gdb's `monitor gpu break negate`
//! goes back to pending when the code object unloads and resolves again on
//! the reload; lldb's `breakpoint set -n negate` does too.

mod gpu_support;

use std::path::PathBuf;
use std::process::Command;

use gpu_support::*;

/// gdbmux serving `reload.c` and its kernels, built for one test (tests
/// run in parallel); and the host executable.
fn serve(env: &GpuEnv, test: &str) -> (Server, PathBuf) {
    let (host, dir) = env.build_typed(
        "gpu-reload",
        test,
        "reload.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    (env.serve_program(&host, &dir), host)
}

#[test]
fn gdb_kernel_breakpoint_is_pending_again_after_unload_and_resolves_on_reload() {
    let env = GpuEnv::get();
    let (server, host) = serve(env, "gdb");
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx"])
        .args(["-ex", &format!("target remote 127.0.0.1:{}", server.port)])
        .args(["-ex", "monitor gpu break negate"])
        .args(["-ex", "continue"])
        .args(["-ex", "monitor gpu continue"])
        .args(["-ex", "continue"])
        .args(["-ex", "monitor gpu breaks"])
        .args(["-ex", "monitor gpu continue"])
        .args(["-ex", "continue"])
        .arg(&host);
    let out = run_with_timeout(&mut gdb, 120);
    let stops = out
        .matches("stopped at a breakpoint in kernel negate")
        .count();
    assert_eq!(
        stops,
        2,
        "both launches stop at the breakpoint:\n{out}\n--- gdbmux ---\n{}",
        server.log()
    );
    assert!(
        out.contains("GPU breakpoint negate (was at")
            && out.contains("is pending again: its code object unloaded"),
        "the unload puts the breakpoint back to pending:\n{out}"
    );
    assert!(
        out.matches("pending GPU breakpoint negate resolved at")
            .count()
            >= 2,
        "resolved on the load and again on the reload:\n{out}"
    );
    assert!(out.contains("exited normally"), "{out}");
    server.wait_log("[inferior] reload: PASS", 10);
}

#[test]
fn lldb_kernel_breakpoint_stops_both_loads() {
    let env = GpuEnv::get();
    let (server, host) = serve(env, "lldb");
    let helper = env.root.join("tools/lldb/gdbmux_lldb.py");
    let mut lldb = Command::new("lldb");
    lldb.arg("-b")
        .args(["-o", &format!("command script import {}", helper.display())])
        .args(["-o", &format!("gdb-remote 127.0.0.1:{}", server.port)])
        .args(["-o", "breakpoint set -n negate"])
        .args(["-o", "process continue"])
        .args(["-o", "process continue"])
        .args(["-o", "process continue"])
        .arg(&host);
    let out = run_with_timeout(&mut lldb, 120);
    // One wave per launch: a stop in each (lldb's location moved with the
    // module, or gdbmux wrote the dormant breakpoint again).
    assert!(
        out.matches("stop reason = breakpoint").count() >= 2
            && out.matches("negate.hsaco`negate at ").count() >= 2,
        "both launches stop at the breakpoint:\n{out}\n--- gdbmux ---\n{}",
        server.log()
    );
    assert!(
        out.contains("exited with status = 0"),
        "{out}\n--- gdbmux ---\n{}",
        server.log()
    );
}
