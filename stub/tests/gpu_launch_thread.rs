//! gdb's report of a GPU stop lands on the CPU thread that launched the
//! dispatch: `threads.c` (compiled here) has two idle threads, a third
//! that launches the kernel (and prints its thread id first) and a main
//! thread joining it. Stock gdb 13 stops a wave at `monitor gpu break
//! negate`; its current thread must be the launcher (crate::gpu::launcher).

mod gpu_support;

use std::process::Command;

use gpu_support::*;

#[test]
fn gdb_gpu_stop_lands_on_the_launching_thread() {
    let env = GpuEnv::get();
    let src = env.root.join("stub/tests/gpu/typed");
    let out = env.bin_dir.join("gpu-launch-thread");
    std::fs::create_dir_all(&out).expect("out dir");
    let st = Command::new("clang-19")
        .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O1", "-g"])
        .args(["-nogpulib", "-cl-std=CL2.0", "-x", "cl"])
        .arg(format!("-I{}", env.root.join("samples/kernels").display()))
        .arg(src.join("negate.cl"))
        .arg("-o")
        .arg(out.join("negate.hsaco"))
        .status()
        .expect("clang-19");
    assert!(st.success(), "compiling negate.cl");
    let host = out.join("threads");
    let st = Command::new("cc")
        .args(["-g", "-O0", "-Wall", "-pthread"])
        .arg(format!("-I{}", env.root.join("samples/include").display()))
        .arg(src.join("threads.c"))
        .arg("-o")
        .arg(&host)
        .arg(format!("-L{}", env.bin_dir.display()))
        .arg("-lsimgpu_rt")
        .arg(format!("-Wl,-rpath,{}", env.bin_dir.display()))
        .status()
        .expect("cc");
    assert!(st.success(), "building threads.c");

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux", "127.0.0.1:0", "--"]);
    cmd.arg(&host).arg(&out);
    let server = Server::start(cmd);
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx"])
        .args(["-ex", &format!("target remote 127.0.0.1:{}", server.port)])
        .args(["-ex", "monitor gpu break negate"])
        .args(["-ex", "continue"])
        .args(["-ex", "thread"])
        .args(["-ex", "bt"])
        .args(["-ex", "monitor gpu continue"])
        .args(["-ex", "continue"])
        .arg(&host);
    let text = run_with_timeout(&mut gdb, 120);
    let log = server.log();
    let tid: u32 = log
        .lines()
        .find_map(|l| l.strip_prefix("[inferior] launcher tid "))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no launcher tid printed:\n{log}\n{text}"));
    assert!(
        text.contains("stopped at a breakpoint in kernel negate"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    // `[Current thread is N (Thread PID.TID)]`.
    assert!(
        text.contains(&format!(".{tid})]")),
        "the stop is on the launching thread {tid}:\n{text}\n--- gdbmux ---\n{log}"
    );
    assert!(
        text.contains("launch_thread"),
        "its backtrace reaches the launching function:\n{text}"
    );
    assert!(text.contains("exited normally"), "{text}\n{log}");
    assert!(log.contains("[inferior] threads: PASS"), "{log}");
}
