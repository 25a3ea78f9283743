//! gdb's report of a GPU stop lands on the CPU thread that launched the
//! dispatch: `threads.c` (compiled here) has two idle threads, a third
//! that launches the kernel (and prints its thread id first) and a main
//! thread joining it. Stock gdb 13 stops a wave at `monitor gpu break
//! negate`; its current thread must be the launcher (crate::gpu::launcher),
//! shown in the runtime's wait for the dispatch with that source line.

mod gpu_support;

use std::process::Command;

use gpu_support::*;

#[test]
fn gdb_gpu_stop_lands_on_the_launching_thread() {
    let env = GpuEnv::get();
    let (host, out) = env.build_typed(
        "gpu-launch-thread",
        "gdb",
        "threads.c",
        &["negate"],
        &["-O0", "-pthread"],
    );
    let server = env.serve_program(&host, &out);
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
    // What the person sees at the stop: frame 0 is the runtime's wait for
    // the dispatch, with its source line, not a libc frame whose source
    // is missing (`recv.c: No such file or directory`).
    assert!(
        text.contains("gdb shows this stop on the CPU thread that launched the dispatch"),
        "{text}"
    );
    let frame0 = text
        .lines()
        .skip_while(|l| !l.starts_with("[Switching to Thread"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        frame0.contains("simgpu_rt::wait::wait_for_dispatch") && frame0.contains("wait.rs:"),
        "frame 0 at the stop: {frame0:?}\n{text}"
    );
    assert!(
        text.contains("this thread launched a dispatch: wait for its end"),
        "the source line of frame 0:\n{text}"
    );
    assert!(!text.contains("No such file or directory"), "{text}");
    assert!(
        text.contains("launch_thread"),
        "its backtrace reaches the launching function:\n{text}"
    );
    assert!(text.contains("exited normally"), "{text}\n{log}");
    assert!(log.contains("[inferior] threads: PASS"), "{log}");
}
