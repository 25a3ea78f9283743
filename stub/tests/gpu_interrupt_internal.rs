//! A client interrupt is never lost to an internal stop (the GPU runtime's
//! loader hook, a breakpoint of the GPU library's that gdbmux handles out
//! of the client's sight and then runs the process on from).
//!
//! `samples/reload_loop.c` loads, launches and unloads a code object
//! forever; each load and unload hits the hook. The simulated library is
//! started with `SIMGPU_QUIET_RESUME=1`: at the first code-object load it
//! says HALT and sends its BREAKPOINT_RESUME late and quietly (only a later
//! poll of the library, here the client's `monitor gpu`, takes it in), as
//! AMD's library may send it at a moment of its choosing. That makes the
//! interleaving certain, with no sleep and no timing luck:
//!
//! 1. The client continues; the program reaches the hook and gdbmux holds
//!    it there (its log says so). The client interrupts: the interrupt
//!    arrives while the internal stop is being handled. It must be
//!    answered at once, as the interrupt's stop (gdb: `T02`, SIGINT;
//!    lldb: `T13`, SIGSTOP). Before the fix it was never answered: the
//!    process was stopped already, so the interrupt did nothing, and the
//!    client waited (this test failed at its first `wait_stop`).
//!    The client continues while the thread is still held: it stays held
//!    (the resume waits for the library), and a second interrupt is
//!    answered at once, at the hook.
//! 2. `monitor gpu` takes the library's resume in while the client is
//!    stopped; the thread stays at the hook.
//! 3. The client sends `vCont;c` and `\x03` in one write: the resume starts
//!    with gdbmux's own step over the hook's breakpoint, and the interrupt
//!    arrives while the CPU is being resumed after the internal stop.
//! 4. The same, 30 times, while the program runs through loads and unloads
//!    (hook hits) at full speed: every interrupt is answered with the
//!    interrupt's stop.
//!
//! Each in the gdb dialect, in lldb's, and in lldb's with gdbmux's lldb
//! all-stop mode on (`monitor gpu all-stop`, as the shipped helper sends).
//!
//! The same stop is owed when the client vanishes during its resume (the
//! process is kept for the next client, gdbserver's default): held at the
//! hook, the process must be journaled as stopped at once, or the next
//! client's packets wait for a stop that never comes.

mod gpu_support;

use std::process::Command;

use gpu_support::*;
use protocol_tests::client::RspClient;
use protocol_tests::framing;
use protocol_tests::reply::StopReply;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Client {
    Gdb,
    Lldb,
    LldbAllStop,
}

fn interrupt_is_answered_at_internal_stops(client: Client) {
    let env = GpuEnv::get();
    let exe = reload_loop();
    let server = server(&exe);
    let (mut c, pid) = to_main(&server, &exe, client);
    // The interrupt's stop: SIGINT in GDB numbering for gdb, SIGSTOP in
    // Linux numbering for lldb (docs/decisions.md §1).
    let sig = if client == Client::Gdb { 2 } else { 19 };

    // 1. The interrupt arrives while gdbmux holds the process at the hook.
    c.send_packet(b"vCont;c").expect("vCont;c");
    server.wait_log("held until the library's BREAKPOINT_RESUME", 60);
    interrupt_answered(&mut c, &server, client, sig, "interrupt while held");
    let hook =
        load_base(pid, "libsimgpu_rt.so") + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);
    assert_eq!(pc(&mut c), hook, "{client:?}: stopped at the hook");

    // The client continues while the thread is still held: the thread
    // waits for the library (it does not run into the hook again), and a
    // second interrupt is answered at once too, at the same place.
    c.send_packet(b"vCont;c").expect("vCont;c while held");
    server.wait_log("resume while held at the library's breakpoint", 30);
    interrupt_answered(
        &mut c,
        &server,
        client,
        sig,
        "interrupt after a resume while held",
    );
    assert_eq!(pc(&mut c), hook, "{client:?}: still held at the hook");

    // 2. The library's late resume is taken in while the client is stopped.
    let out = monitor(&mut c, "gpu");
    assert!(out.contains("GPU state"), "monitor gpu: {out}");
    server.wait_log("BREAKPOINT_RESUME while the client is stopped", 30);

    // 3. and 4. `vCont;c` and `\x03` in one write: the first from the hook
    // (gdbmux steps over its breakpoint first), then through the program's
    // loads and unloads.
    let mut both = framing::encode_packet(b"vCont;c");
    both.push(framing::INTERRUPT);
    for round in 0..31 {
        c.send_raw(&both).expect("vCont;c + \\x03");
        let (stop, _) = c.wait_stop("vCont;c + \\x03").unwrap_or_else(|e| {
            panic!(
                "{client:?}: round {round}: no stop for the interrupt: {e}\n--- gdbmux log ---\n{}",
                server.log()
            )
        });
        match stop {
            StopReply::Signal(s) => assert_eq!(
                s.signo, sig,
                "{client:?}: round {round}: the interrupt's stop: {s:?}"
            ),
            other => panic!("{client:?}: round {round}: {other:?}"),
        }
    }
    // The program ran through code-object loads meanwhile (hook hits that
    // gdbmux handled), and it still runs: no interrupt was swallowed.
    let out = monitor(&mut c, "gpu");
    let updates = out
        .lines()
        .find(|l| l.starts_with("events: "))
        .and_then(|l| l.split(" code-object updates").next())
        .and_then(|b| b.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no code-object count in: {out}"));
    assert!(updates >= 1, "{client:?}: code-object updates: {out}");
    let _ = c.send_packet(b"k");
}

/// The stopped thread's pc: register 0x10 is rip in gdb's x86-64
/// numbering and in lldb-server's, which gdbmux gives lldb.
/// Sends `\x03` and requires its stop, with signal `sig`, in time (the
/// gdbmux log is shown when it does not come).
fn interrupt_answered(c: &mut RspClient, server: &Server, client: Client, sig: u8, what: &str) {
    c.interrupt().expect("interrupt");
    let (stop, _) = c.wait_stop(what).unwrap_or_else(|e| {
        panic!(
            "{client:?}: {what}: not answered: {e}\n--- gdbmux log ---\n{}",
            server.log()
        )
    });
    let s = signal_stop(stop, what);
    assert_eq!(s.signo, sig, "{client:?}: the interrupt's stop: {s:?}");
}

fn pc(c: &mut RspClient) -> u64 {
    let r = c.request(b"p10").expect("p10");
    let bytes = protocol_tests::reply::decode_hex(&r)
        .filter(|b| b.len() == 8)
        .unwrap_or_else(|| panic!("pc reply {}", framing::printable(&r)));
    let mut le = [0u8; 8];
    le.copy_from_slice(&bytes);
    u64::from_le_bytes(le)
}

/// `samples/reload_loop.c`, built once for the tests of this file (they
/// run in parallel: a rebuild under a running copy fails its exec).
fn reload_loop() -> std::path::PathBuf {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| GpuEnv::get().build_sample("reload_loop"))
        .clone()
}

/// gdbmux serving `reload_loop` with the library's first BREAKPOINT_RESUME
/// late and quiet (see the module comment).
fn server(exe: &std::path::Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(exe)
        .env("SIMGPU_QUIET_RESUME", "1");
    Server::start(cmd)
}

/// A client of the kind asked for, its program run to `main` (the GPU
/// runtime is not up yet); returns it and the pid.
fn to_main(server: &Server, exe: &std::path::Path, client: Client) -> (RspClient, u64) {
    let mut c = match client {
        Client::Gdb => {
            let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
            c.handshake_gdb().expect("gdb handshake");
            c
        }
        Client::Lldb | Client::LldbAllStop => lldb_client(server.port).0,
    };
    if client == Client::LldbAllStop {
        let out = monitor(&mut c, "gpu all-stop");
        assert!(out.contains("all-stop"), "monitor gpu all-stop: {out}");
    }
    let stop = signal_stop(c.stop_reply("?").expect("?").0, "?");
    let pid = stop_pid(&stop);
    let main = load_base(pid, "reload_loop") + nm(exe, "main", false);
    c.expect_ok(&format!("Z0,{main:x},1")).expect("Z0 main");
    c.stop_reply("vCont;c").expect("to main");
    c.expect_ok(&format!("z0,{main:x},1")).expect("z0 main");
    (c, pid)
}

/// The client vanishes while gdbmux holds its running process at the
/// hook: the next client's `?` is answered with the stop journaled for it
/// (before the fix the process was "interrupted" while already stopped,
/// no stop was ever journaled, and the next client's packets waited).
#[test]
fn vanished_client_while_held_at_the_hook_leaves_a_stop() {
    let exe = reload_loop();
    let server = server(&exe);
    let (mut c, _) = to_main(&server, &exe, Client::Gdb);
    c.send_packet(b"vCont;c").expect("vCont;c");
    server.wait_log("held until the library's BREAKPOINT_RESUME", 60);
    drop(c);
    server.wait_log("CPU client gone", 30);
    let mut next = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    next.handshake_gdb().expect("gdb handshake");
    let (stop, _) = next.stop_reply("?").unwrap_or_else(|e| {
        panic!(
            "the next client's ? was not answered: {e}\n--- gdbmux log ---\n{}",
            server.log()
        )
    });
    let s = signal_stop(stop, "? after the vanished client");
    assert_eq!(s.signo, 2, "the journaled stop is an interrupt's: {s:?}");
    let _ = next.send_packet(b"k");
}

#[test]
fn gdb_interrupt_is_answered_at_internal_stops() {
    interrupt_is_answered_at_internal_stops(Client::Gdb);
}

#[test]
fn lldb_interrupt_is_answered_at_internal_stops() {
    interrupt_is_answered_at_internal_stops(Client::Lldb);
}

#[test]
fn lldb_all_stop_interrupt_is_answered_at_internal_stops() {
    interrupt_is_answered_at_internal_stops(Client::LldbAllStop);
}

/// A resume gdbmux makes by itself after an internal stop carries out the
/// client's plan again, and must not deliver the plan's signal again:
/// `tests/fixtures/signal_hook.c` is continued from `ready()` with SIGUSR1;
/// in the same resume the runtime comes up and a code object loads and
/// unloads (four hits of the hook). The handler runs once: the exit status
/// is its count. Before the fix it ran once per internal resume (exit 5).
#[test]
fn a_signal_the_client_continues_with_is_delivered_once() {
    let env = GpuEnv::get();
    let dir = env.bin_dir.join("gpu_interrupt_internal");
    std::fs::create_dir_all(&dir).expect("dir");
    let exe = dir.join("signal_hook");
    let kernels = format!(
        "-DKERNEL_DIR=\"{}\"",
        env.root.join("samples/kernels").display()
    );
    env.build_host(
        &env.root.join("stub/tests/fixtures/signal_hook.c"),
        &exe,
        &["-O1", &kernels],
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(&exe);
    let server = Server::start(cmd);
    let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    c.handshake_gdb().expect("gdb handshake");
    let stop = signal_stop(c.stop_reply("?").expect("?").0, "?");
    let pid = stop_pid(&stop);
    let ready = load_base(pid, "signal_hook") + nm(&exe, "ready", false);
    c.expect_ok(&format!("Z0,{ready:x},1")).expect("Z0 ready");
    c.stop_reply("vCont;c").expect("to ready");
    c.expect_ok(&format!("z0,{ready:x},1")).expect("z0 ready");
    // SIGUSR1 is 30 (0x1e) in gdb's numbering.
    let (stop, _) = c
        .stop_reply(&format!("vCont;C1e:p{pid:x}.{pid:x};c"))
        .expect("continue with SIGUSR1");
    assert_eq!(
        stop,
        StopReply::Exited {
            code: 1,
            pid: Some(pid)
        },
        "the handler ran once (the exit status is its count)\n--- gdbmux log ---\n{}",
        server.log()
    );
    // The runtime's hook was hit in that resume (its hits were handled
    // out of the client's sight).
    server.wait_log("reported host breakpoint hit", 30);
}
