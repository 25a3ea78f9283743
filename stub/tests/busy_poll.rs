//! The loop's busy-poll window (`--busy-poll-us`, docs/decisions.md §7)
//! against the `gdbmux` binary: it never outlives its window once the
//! client goes quiet, it never spins while the inferior runs (beyond the
//! short spin right after a resume, `busy::RESUME_SPIN`), and it can be
//! turned off. CPU time is read from the kernel (`/proc/PID/task/*/
//! schedstat`, nanoseconds), so a spin that ran on would show as hundreds
//! of milliseconds; a positive control with a huge window proves that the
//! measurement sees a spin.
//!
//! Each check lets a fixed stretch of wall time pass (`IDLE`) and measures
//! what gdbmux did in it: the stretch is the quantity under test, not a
//! wait for an event.

mod gpu_support;
mod harden_support;

use std::time::Duration;

use harden_support::*;

/// How long the client stays quiet while gdbmux's CPU time is measured.
const IDLE: Duration = Duration::from_millis(300);

/// gdbmux's CPU time so far (all its threads), in nanoseconds.
fn cpu_ns(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("gdbmux tasks");
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// gdbmux serving `spin` (stopped at its entry), with `extra` options, and
/// a client that has just sent a burst of 500 `qC`.
fn after_a_burst(extra: &[&str]) -> (Gdbmux, RspClient, std::path::PathBuf) {
    let spin = helper("spin");
    let prog = spin.display().to_string();
    let mut args = vec!["--no-gpu"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["127.0.0.1:0", "--", &prog]);
    let g = Gdbmux::start(&args);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    for _ in 0..500 {
        let r = c.request(b"qC").unwrap();
        assert!(r.starts_with(b"QC"), "{}", String::from_utf8_lossy(&r));
    }
    (g, c, spin)
}

/// CPU milliseconds gdbmux used while the client stayed quiet for `IDLE`.
fn idle_cpu_ms(g: &Gdbmux) -> f64 {
    let before = cpu_ns(g.pid());
    std::thread::sleep(IDLE);
    let ms = (cpu_ns(g.pid()) - before) as f64 / 1e6;
    eprintln!("gdbmux CPU in {IDLE:?}: {ms:.2} ms");
    ms
}

#[test]
fn a_quiet_client_costs_no_cpu_after_a_burst() {
    for extra in [&[][..], &["--busy-poll-us", "0"][..]] {
        let (g, mut c, _) = after_a_burst(extra);
        let ms = idle_cpu_ms(&g);
        // One window is 50 µs; allow scheduler and logging noise.
        assert!(
            ms < 15.0,
            "{extra:?}: gdbmux used {ms:.1} ms of CPU in {IDLE:?} of silence"
        );
        // And it still answers at once.
        assert!(c.request(b"qC").unwrap().starts_with(b"QC"));
    }
}

#[test]
fn a_huge_window_is_seen_spinning() {
    // Positive control: a 10 s window spins through the whole quiet
    // stretch, which the measurement above must be able to see.
    let (g, mut c, _) = after_a_burst(&["--busy-poll-us", "10000000"]);
    let ms = idle_cpu_ms(&g);
    assert!(
        ms > 30.0,
        "a 10 s window used only {ms:.1} ms of CPU in {IDLE:?}: the measurement is blind"
    );
    assert!(c.request(b"qC").unwrap().starts_with(b"QC"));
}

#[test]
fn no_spin_while_the_inferior_runs() {
    // Even with a huge window: a running inferior needs the CPU, and the
    // next event is its stop, not a client packet.
    let (g, mut c, spin) = after_a_burst(&["--busy-poll-us", "10000000"]);
    c.send_packet(b"vCont;c").unwrap();
    let ms = idle_cpu_ms(&g);
    assert!(
        ms < 15.0,
        "gdbmux used {ms:.1} ms of CPU in {IDLE:?} while the inferior ran"
    );
    c.interrupt().unwrap();
    let (stop, _) = c.wait_stop("\\x03").unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    let done = sym(&spin, "g_done");
    c.expect_ok(&format!("M{done:x},4:01000000")).unwrap();
    let (stop, _) = c.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Exited { code: 3, .. }),
        "{stop:?}"
    );
}
