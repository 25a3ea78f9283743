//! A GPU stop costs lldb no round trip per wave: the GPU session's stop
//! replies carry `jstopinfo` with the waves that have a stop reason (as
//! lldb-server lists only threads with a reason), and lldb takes every
//! other wave as one without a reason instead of asking `qThreadStopInfo`
//! of each (ProcessGDBRemote::CalculateThreadStopInfo). Stock lldb 23.1,
//! typed program and kernels compiled at test time, lldb's own packet log.

mod gpu_support;

use std::process::Command;

use gpu_support::*;

#[test]
fn gpu_stop_needs_no_stop_info_per_wave() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-typed",
        "stopinfo",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = env.serve_program(&host, &dir);
    let log = server.wait_log("  lldb -o", 20);
    let line = log
        .lines()
        .find(|l| l.trim_start().starts_with("lldb -o"))
        .expect("lldb connect line");
    let parts: Vec<&str> = line.split('\'').collect();
    assert!(parts.len() >= 5, "connect line: {line}");
    let packets = tempfile_path("gpu-stopinfo-packets.log");
    let _ = std::fs::remove_file(&packets);
    let mut cmd = Command::new("lldb");
    cmd.arg("-b")
        .args([
            "-o",
            &format!("log enable -f {} gdb-remote packets", packets.display()),
        ])
        .args(["-o", parts[1], "-o", parts[3]])
        .args(["-o", "breakpoint set -o true -n saxpy"])
        .args(["-o", "process continue"])
        .args(["-o", "thread list"])
        .args(["-o", "process continue"])
        .arg(parts[4].trim());
    let out = run_with_timeout(&mut cmd, 120);
    // The stop, and all four waves of the 256-item dispatch listed, with
    // only the reporting one stopped at the breakpoint.
    assert!(
        out.contains("stop reason = one-shot breakpoint") && out.contains("saxpy"),
        "no GPU stop:\n{out}\n--- gdbmux ---\n{}",
        server.log()
    );
    let listed = out
        .lines()
        .filter(|l| l.contains("saxpy.hsaco`saxpy"))
        .count();
    assert!(listed >= 4, "waves listed: {listed}\n{out}");
    let text = std::fs::read_to_string(&packets).expect("lldb's packet log");
    let _ = std::fs::remove_file(&packets);
    // The GPU stop reply carried the reporting wave's stop info.
    assert!(
        text.lines()
            .any(|l| l.contains("read packet: $T") && l.contains("jstopinfo:")),
        "no stop reply with jstopinfo in lldb's log"
    );
    let asked = text
        .lines()
        .filter(|l| l.contains("send packet: $qThreadStopInfo"))
        .count();
    assert_eq!(asked, 0, "lldb asked qThreadStopInfo {asked} times:\n{out}");
    server.wait_log("[inferior] host: PASS", 30);
}

/// A path under the system's temporary directory, unique to this process.
fn tempfile_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{}-{name}", std::process::id()))
}
