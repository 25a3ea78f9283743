//! Fault injection against the `gdbmux` binary: clients that vanish (while
//! stopped, mid-packet, during a resume), an inferior killed from outside,
//! clients that stop reading, and connection floods. Every wait is on an
//! event (a reply, a log line, a process exit) with a deadline.

mod gpu_support;
mod harden_support;

use harden_support::*;
use protocol_tests::framing::encode_packet;

fn spin_server(extra: &[&str]) -> (Gdbmux, std::path::PathBuf) {
    let spin = helper("spin");
    let mut args = vec!["--no-gpu"];
    args.extend_from_slice(extra);
    args.push("127.0.0.1:0");
    args.push("--");
    let prog = spin.display().to_string();
    args.push(&prog);
    (Gdbmux::start(&args), spin)
}

fn question(c: &mut RspClient) -> Vec<u8> {
    c.request(b"?").expect("? reply")
}

fn set_done(c: &mut RspClient, spin: &std::path::Path) {
    let done = sym(spin, "g_done");
    c.expect_ok(&format!("M{done:x},4:01000000"))
        .expect("write g_done");
}

/// `--multi`: a client that vanishes while the process is stopped (after a
/// breakpoint hit), then one that vanishes mid-packet: each next client
/// takes the session over and `?` replays the same bytes; it can continue.
#[test]
fn multi_client_vanishes_while_stopped_and_mid_packet() {
    let (mut g, spin) = spin_server(&["--multi"]);
    let tick = sym(&spin, "tick");

    let mut c1 = g.connect();
    c1.handshake_gdb().unwrap();
    c1.expect_ok(&format!("Z0,{tick:x},1")).unwrap();
    let (stop, _) = c1.stop_reply("vCont;c").unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    let at_tick = c1.last_reply_raw().to_vec();
    let q1 = question(&mut c1);
    assert_eq!(q1, question(&mut c1), "replay is stable");
    drop(c1);
    g.wait_line("client vanished while stopped");

    let mut c2 = g.connect();
    c2.handshake_gdb().unwrap();
    assert_eq!(question(&mut c2), q1, "the next client gets the same stop");
    assert_eq!(c2.last_reply_raw(), at_tick.as_slice());
    // Vanish in the middle of a packet.
    c2.send_raw(b"$qSupported:multiprocess+;swbre").unwrap();
    drop(c2);
    g.wait_line("client vanished while stopped");

    let mut c3 = g.connect();
    c3.handshake_gdb().unwrap();
    assert_eq!(question(&mut c3), q1, "a half-sent packet leaves no trace");
    c3.expect_ok(&format!("z0,{tick:x},1")).unwrap();
    set_done(&mut c3, &spin);
    let (stop, _) = c3.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Exited { code: 3, .. }),
        "{stop:?}"
    );
    assert!(g.alive(), "the --multi server keeps serving");
}

/// `--multi`: the client vanishes while the process runs. The server stops
/// it, journals that stop, and the next client's `?` reports it (twice, the
/// same bytes); the process can then be continued to its end.
#[test]
fn multi_client_vanishes_during_resume() {
    let (mut g, spin) = spin_server(&["--multi"]);
    let mut c1 = g.connect();
    c1.handshake_gdb().unwrap();
    question(&mut c1);
    c1.send_packet(b"vCont;c").unwrap();
    drop(c1);
    g.wait_line("stop journaled for the next client");

    let mut c2 = g.connect();
    c2.handshake_gdb().unwrap();
    let q = question(&mut c2);
    let stop = StopReply::parse(&q).expect("stop reply");
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    assert_eq!(question(&mut c2), q);
    set_done(&mut c2, &spin);
    let (stop, _) = c2.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Exited { code: 3, .. }),
        "{stop:?}"
    );
}

/// The inferior is SIGKILLed from outside while stopped: the session learns
/// it from SIGCHLD; `?` and a later resume report `X09`.
#[test]
fn killed_from_outside_while_stopped() {
    let (mut g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    question(&mut c);
    let pid = inferior_pid(&g);
    // SAFETY: plain kill(2) of our grandchild.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    g.wait_line("stopped process was killed from outside");
    let stop = StopReply::parse(&question(&mut c)).unwrap();
    assert!(
        matches!(stop, StopReply::Terminated { sig: 9, .. }),
        "{stop:?}"
    );
    let (stop, _) = c.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Terminated { sig: 9, .. }),
        "{stop:?}"
    );
}

/// Killed from outside while running: the pending resume ends with `X09`.
#[test]
fn killed_from_outside_while_running() {
    let (g, _) = spin_server(&[]);
    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    question(&mut c);
    let pid = inferior_pid(&g);
    c.send_packet(b"vCont;c").unwrap();
    // SAFETY: plain kill(2) of our grandchild.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let (stop, _) = c.wait_stop("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Terminated { sig: 9, .. }),
        "{stop:?}"
    );
}

/// A client that sends requests but never reads: once its queue passes the
/// limit the session is closed with a logged error (memory stays bounded);
/// with `--multi` the next client takes the process over.
#[test]
fn client_that_stops_reading_is_disconnected() {
    let (mut g, _) = spin_server(&["--multi", "--max-pending-output", "0"]);
    let mut c1 = g.connect();
    c1.handshake_gdb().unwrap();
    let q = question(&mut c1);
    // 4000 reads of 4 KiB: 32 MiB of replies, far over the 2 MiB floor of
    // the limit plus what the kernel's socket buffers hold.
    let mut burst = Vec::new();
    for _ in 0..4000 {
        burst.extend_from_slice(&encode_packet(b"m400000,1000"));
    }
    c1.send_raw(&burst).unwrap();
    g.wait_line("output queue limit exceeded");
    drop(c1);
    let mut c2 = g.connect();
    c2.handshake_gdb().unwrap();
    assert_eq!(question(&mut c2), q);
}

/// The connection limit: with `--max-connections 3`, a CPU session and two
/// idle connections fill it; the fourth is answered with an error at once.
/// A slot frees when a refused connection has been answered and closed.
#[test]
fn connection_limit_answers_with_an_error() {
    let (mut g, _) = spin_server(&["--multi", "--max-connections", "3"]);
    let mut cpu = g.connect();
    cpu.handshake_gdb().unwrap();
    let mut idle1 = g.connect();
    let _idle2 = g.connect();
    let mut over = g.connect();
    over.set_ack_mode(false);
    let r = over.recv_packet().expect("an error packet, unasked");
    let text = error_text(&r);
    assert!(r.starts_with(b"E"), "{}", String::from_utf8_lossy(&r));
    assert!(text.contains("limit of 3"), "{text}");
    g.wait_line("simultaneous connections is reached");
    // idle1 gets the ordinary refusal and is closed by the server.
    idle1.send_ack().unwrap();
    let r = idle1.request(b"qSupported").expect("refusal");
    assert!(error_text(&r).contains("already active"), "{r:?}");
    assert!(idle1.recv_packet().is_err(), "closed after the refusal");
    // Now there is room again: a new connection gets the ordinary refusal.
    let mut next = g.connect();
    next.send_ack().unwrap();
    let r = next.request(b"qSupported").expect("refusal");
    assert!(error_text(&r).contains("already active"), "{r:?}");
    // The CPU session is untouched.
    question(&mut cpu);
}

/// The inferior is SIGKILLed from outside while a CPU and a GPU session
/// (lldb dialect, raw client) are connected: both report the end.
#[test]
fn gpu_and_cpu_sessions_see_the_inferior_killed_from_outside() {
    let Some(env) = gpu_support::GpuEnv::get() else {
        return;
    };
    let sample = env.sample("vector_add");
    let g = Gdbmux::start(&["127.0.0.1:0", "--", sample.to_str().unwrap()]);
    let mut cpu = g.connect();
    cpu.handshake_lldb().unwrap();
    let pid = inferior_pid(&g);
    run_to_gpu_launch(&mut cpu, pid, &sample, &env.bin_dir.join("libsimgpu_rt.so"));
    let url = offer_url(&mut cpu);
    let mut gpu = RspClient::connect(url.trim_start_matches("connect://")).unwrap();
    gpu.handshake_lldb().unwrap();
    let stop = StopReply::parse(&gpu.request(b"?").unwrap()).unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");

    // SAFETY: plain kill(2) of our grandchild.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_pid_exit(pid);
    // The exit is seen at once; the server reaps it on its next SIGCHLD
    // turn. `?` is a pure replay, so asking again is harmless.
    let deadline = std::time::Instant::now() + WAIT;
    let cpu_end = loop {
        let stop = StopReply::parse(&question(&mut cpu)).unwrap();
        if !matches!(stop, StopReply::Signal(_)) {
            break stop;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no exit on the CPU session"
        );
    };
    assert!(
        matches!(cpu_end, StopReply::Terminated { sig: 9, .. }),
        "{cpu_end:?}"
    );
    let gpu_end = StopReply::parse(&question(&mut gpu)).unwrap();
    assert!(
        matches!(
            gpu_end,
            StopReply::Terminated { .. } | StopReply::Exited { .. }
        ),
        "GPU session: {gpu_end:?}"
    );
}
