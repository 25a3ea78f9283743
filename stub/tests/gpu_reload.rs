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

/// (host executable, code-object directory), built for one test.
fn build(env: &GpuEnv, test: &str) -> (PathBuf, PathBuf) {
    let src = env.root.join("stub/tests/gpu/typed");
    let out = env.bin_dir.join("gpu-reload").join(test);
    std::fs::create_dir_all(&out).expect("out dir");
    for k in ["saxpy", "negate"] {
        let st = Command::new("clang-19")
            .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O1", "-g"])
            .args(["-nogpulib", "-cl-std=CL2.0", "-x", "cl"])
            .arg(format!("-I{}", env.root.join("samples/kernels").display()))
            .arg(src.join(format!("{k}.cl")))
            .arg("-o")
            .arg(out.join(format!("{k}.hsaco")))
            .status()
            .expect("clang-19");
        assert!(st.success(), "compiling {k}.cl");
    }
    let host = out.join("reload");
    let st = Command::new("cc")
        .args(["-g", "-O1", "-Wall"])
        .arg(format!("-I{}", env.root.join("samples/include").display()))
        .arg(src.join("reload.c"))
        .arg("-o")
        .arg(&host)
        .arg(format!("-L{}", env.bin_dir.display()))
        .arg("-lsimgpu_rt")
        .arg(format!("-Wl,-rpath,{}", env.bin_dir.display()))
        .status()
        .expect("cc");
    assert!(st.success(), "building reload.c");
    (host, out)
}

fn serve(env: &GpuEnv, test: &str) -> (Server, PathBuf) {
    let (host, dir) = build(env, test);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux", "127.0.0.1:0", "--"]);
    cmd.arg(&host).arg(&dir);
    (Server::start(cmd), host)
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
    assert!(
        server.log().contains("[inferior] reload: PASS"),
        "{}",
        server.log()
    );
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
