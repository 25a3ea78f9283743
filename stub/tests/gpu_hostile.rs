//! A hung GPU kernel under a debugger (issue 16, hostile GPU programs):
//! `samples/hostile/hostile.c --hang` launches `hang` (OpenCL C, compiled
//! here by clang-19), which never ends. With gdbmux attached the runtime's
//! watchdog is off, even at 1 ms: stock gdb 13 stops the wave with `monitor
//! gpu stop`, reads its pc and registers and steps it, then kills the
//! program; the launch never returned a watchdog error. (Without a debugger
//! the watchdog ends it: tools/simgpu-rt/tests/hostile_kernels.rs.)

mod gpu_support;

use std::path::PathBuf;
use std::process::Command;

use gpu_support::*;

/// Builds hostile.hsaco and the hostile host program (against the
/// runtime's shared library, as the other samples).
fn build_hostile(env: &GpuEnv) -> (PathBuf, PathBuf) {
    let dir = env.samples.join("hostile");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = env.root.join("samples/hostile");
    env.build_kernel(&src.join("hostile.cl"), &dir.join("hostile.hsaco"));
    let exe = dir.join("hostile");
    env.build_host(&src.join("hostile.c"), &exe, &["-O1"]);
    (dir, exe)
}

#[test]
fn gdb_stops_and_inspects_a_hung_wave() {
    let env = GpuEnv::get();
    let (dir, exe) = build_hostile(env);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(&exe)
        .arg("--hang")
        .env("SIMGPU_KERNEL_DIR", &dir)
        .env("SIMGPU_WATCHDOG_MS", "1");
    let server = Server::start(cmd);
    let out = run_gdb(
        &env.root.join("stub/tests/gpu/gdb_hang.py"),
        &exe,
        &[("PORT", server.port.to_string())],
    );
    let log = server.log();
    assert!(
        out.contains("ALL CHECKS PASSED") && !out.contains("CHECK FAILED"),
        "gdb session failed:\n{out}\n--- gdbmux log ---\n{log}"
    );
    assert!(log.contains("launching hang"), "the program ran:\n{log}");
    assert!(
        !log.contains("hang launch:"),
        "the launch returned while the debugger held the wave:\n{log}"
    );
}
