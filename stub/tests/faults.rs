//! Fault injection against the `gdbmux` binary: clients that vanish (while
//! stopped, mid-packet, during a resume), an inferior killed from outside,
//! clients that stop reading, and connection floods. Every wait is on an
//! event (a reply, a log line, a process exit) with a deadline.

mod gpu_support;
mod harden_support;

use harden_support::*;
use protocol_tests::framing::encode_packet;

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

/// A `gate` inferior under `gdbmux --multi`, and the FIFO that gates it
/// (held open read-write here, so the inferior's open never blocks and its
/// read waits for [`Gate::open`]).
struct Gate {
    g: Gdbmux,
    prog: std::path::PathBuf,
    fifo: std::fs::File,
    pid: i32,
    dir: std::path::PathBuf,
}

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Gate {
    fn start(name: &str) -> Gate {
        use std::os::unix::ffi::OsStrExt as _;
        let prog = helper("gate");
        let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("gate-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("fifo dir");
        let path = dir.join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("fifo path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open fifo");
        let g = Gdbmux::start(&[
            "--no-gpu",
            "--multi",
            "127.0.0.1:0",
            "--",
            prog.to_str().expect("utf-8 path"),
            path.to_str().expect("utf-8 path"),
        ]);
        let pid = inferior_pid(&g);
        Gate {
            g,
            prog,
            fifo,
            pid,
            dir,
        }
    }

    /// Let the inferior past its read (it may be stopped meanwhile: the
    /// byte waits in the pipe).
    fn open(&mut self) {
        use std::io::Write as _;
        self.fifo.write_all(b"x").expect("write fifo");
    }

    /// The byte really in the inferior's memory (not what gdbmux shows).
    fn mem_byte(&self, addr: u64) -> u8 {
        use std::os::unix::fs::FileExt as _;
        let f = std::fs::File::open(format!("/proc/{}/mem", self.pid)).expect("open /proc/PID/mem");
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, addr).expect("read /proc/PID/mem");
        b[0]
    }
}

/// Wait for the log line saying A's two insertions were taken out, and
/// check the program's byte at `tick` is back.
fn expect_a_breakpoints_removed(gate: &mut Gate, tick: u64, orig: u8) {
    let line = gate
        .g
        .wait_line("the vanished client's breakpoints and watchpoints are out");
    assert!(
        line.contains("removed=2") && line.contains("failed=0"),
        "{line}"
    );
    assert_eq!(gate.mem_byte(tick), orig, "the int3 is gone");
}

/// Client A's breakpoint at `tick` and write watchpoint on `g_count`.
fn insert_a_breakpoints(c: &mut RspClient, gate: &Gate) -> (u64, u64) {
    let tick = sym(&gate.prog, "tick");
    let count = sym(&gate.prog, "g_count");
    c.expect_ok(&format!("Z0,{tick:x},1")).unwrap();
    // Sent twice, as gdb may: still one breakpoint, removed once.
    c.expect_ok(&format!("Z0,{tick:x},1")).unwrap();
    c.expect_ok(&format!("Z2,{count:x},8")).unwrap();
    assert_eq!(gate.mem_byte(tick), 0xcc, "Z0 patched the program");
    (tick, count)
}

/// `--multi`: client A inserts a breakpoint and a watchpoint, hits the
/// breakpoint and vanishes while stopped. They are taken out of the
/// process: client B replays the same stop with `?`, the program's own
/// byte is back at the breakpoint, and B's continue runs to the exit
/// although the program calls the function and writes the variable 100
/// times.
#[test]
fn multi_vanished_client_breakpoints_are_removed_while_stopped() {
    let mut gate = Gate::start("stopped");
    let tick = sym(&gate.prog, "tick");
    let orig = gate.mem_byte(tick);
    assert_ne!(orig, 0xcc);

    let mut a = gate.g.connect();
    a.handshake_gdb().unwrap();
    insert_a_breakpoints(&mut a, &gate);
    let m = a.request_str(&format!("m{tick:x},1")).unwrap();
    assert_eq!(m, format!("{orig:02x}"), "reads show the program's byte");
    gate.open();
    let (stop, _) = a.stop_reply("vCont;c").unwrap();
    let StopReply::Signal(sig) = &stop else {
        panic!("{stop:?}")
    };
    assert!(sig.is_swbreak(), "{stop:?}");
    assert_eq!(
        sig.register_u64(16),
        Some(tick),
        "stopped at tick: {stop:?}"
    );
    let qa = question(&mut a);
    drop(a);
    gate.g.wait_line("client vanished while stopped");
    expect_a_breakpoints_removed(&mut gate, tick, orig);

    let mut b = gate.g.connect();
    b.handshake_gdb().unwrap();
    assert_eq!(question(&mut b), qa, "the stop replays byte for byte");
    assert_eq!(question(&mut b), qa);
    let m = b.request_str(&format!("m{tick:x},1")).unwrap();
    assert_eq!(m, format!("{orig:02x}"));
    let (stop, _) = b.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "no stop at A's breakpoint or watchpoint: {stop:?}"
    );
    assert!(gate.g.alive());
}

/// `--multi`: client A inserts a breakpoint and a watchpoint, continues and
/// vanishes while the program runs (blocked before reaching them). Once
/// the interrupt's stop is journaled they are taken out; client B gets that
/// stop with `?` and continues to the exit without a stop at A's
/// breakpoint or watchpoint.
#[test]
fn multi_vanished_client_breakpoints_are_removed_after_resume() {
    let mut gate = Gate::start("running");
    let tick = sym(&gate.prog, "tick");
    let orig = gate.mem_byte(tick);

    let mut a = gate.g.connect();
    a.handshake_gdb().unwrap();
    insert_a_breakpoints(&mut a, &gate);
    a.send_packet(b"vCont;c").unwrap();
    drop(a);
    let line = gate.g.wait_line("client vanished during a resume");
    assert!(line.contains("breakpoints=2"), "{line}");
    gate.g.wait_line("stop journaled for the next client");
    expect_a_breakpoints_removed(&mut gate, tick, orig);

    let mut b = gate.g.connect();
    b.handshake_gdb().unwrap();
    let q = question(&mut b);
    let stop = StopReply::parse(&q).expect("stop reply");
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    assert_eq!(question(&mut b), q, "the stop replays byte for byte");
    gate.open();
    let (stop, _) = b.stop_reply("vCont;c").unwrap();
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "no stop at A's breakpoint or watchpoint: {stop:?}"
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
    let env = gpu_support::GpuEnv::get();
    let sample = env.sample("vector_add");
    let g = Gdbmux::start(&["127.0.0.1:0", "--", sample.to_str().unwrap()]);
    let mut cpu = g.connect();
    cpu.handshake_lldb().unwrap();
    let (pid, _, mut gpu) =
        claim_gpu_at_launch(&g, &mut cpu, &sample, &env.bin_dir.join("libsimgpu_rt.so"));

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
