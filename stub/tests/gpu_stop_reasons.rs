//! A GPU wave's stop reason reaches stock gdb 13 as text: the `fault`
//! sample's kernel stores through a bad pointer, the simulated GPU stops the
//! wave with MEMORY_VIOLATION, and gdbmux stops the CPU session with a
//! console line naming the reason (`gpu_target::model::StopReasons::TABLE`).
//! lldb's side (a SIGSEGV stop whose description names the reason) is
//! `gpu_lldb::lldb_sees_a_gpu_memory_fault_as_sigsegv`.

mod gpu_support;

use std::process::Command;

use gpu_support::run_with_timeout;
use gpu_support::GpuEnv;

#[test]
fn gdb_shows_the_gpu_stop_reason() {
    let env = GpuEnv::get();
    let server = env.serve(&["fault"]);
    let out = run_with_timeout(
        Command::new("gdb").args([
            "-batch",
            "-nx",
            "-ex",
            &format!("target remote 127.0.0.1:{}", server.port),
            "-ex",
            "continue",
            "-ex",
            "monitor gpu",
            env.sample("fault").to_str().unwrap_or_default(),
        ]),
        120,
    );
    assert!(
        out.contains("stopped at memory violation in kernel fault"),
        "gdb shows the reason:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert!(
        out.contains("GPU runtime: loaded (LOADED_SUCCESS)"),
        "monitor gpu shows the runtime state:\n{out}"
    );
}

/// The runtime state reaches gdb's console while the program runs: the
/// `lifecycle` sample brings its GPU runtime up and down twice; the first
/// unload (while the program runs on) is announced, and the program runs to
/// its exit (the second unload may race the exit, which ends the session).
#[test]
fn gdb_is_told_when_the_gpu_runtime_unloads() {
    let env = GpuEnv::get();
    let exe = env.build_sample("lifecycle");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(&exe);
    let server = gpu_support::Server::start(cmd);
    let out = run_with_timeout(
        Command::new("gdb").args([
            "-batch",
            "-nx",
            "-ex",
            &format!("target remote 127.0.0.1:{}", server.port),
            "-ex",
            "continue",
            exe.to_str().unwrap_or_default(),
        ]),
        120,
    );
    assert!(
        out.contains("gdbmux: GPU runtime: unloaded (UNLOADED)"),
        "gdb is told of the unload:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert!(out.contains("exited normally"), "{out}");
}
