//! A hung GPU kernel under a debugger (issue 16, hostile GPU programs):
//! `samples/hostile/hostile.c --hang` launches `hang` (OpenCL C, compiled
//! here by clang-19), which never ends. With gdbmux attached the runtime's
//! watchdog is off, even at 1 ms: stock gdb 13 stops the wave with `monitor
//! gpu stop`, reads its pc and registers and steps it, then kills the
//! program; the launch never returned a watchdog error. (Without a debugger
//! the watchdog ends it: tools/simgpu-rt/tests/hostile_kernels.rs.)

mod gpu_support;

use gpu_support::*;

#[test]
fn gdb_stops_and_inspects_a_hung_wave() {
    let env = GpuEnv::get();
    let (server, exe) = env.hang_server("hostile", &[("SIMGPU_WATCHDOG_MS", "1")]);
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
