//! Non-stop mode (`QNonStop:1`) handles gdbmux's internal stops out of the
//! client's sight, as all-stop does (docs/architecture.md, "Interrupts and
//! internal stops").
//!
//! `samples/reload_loop.c 3` loads, launches and unloads a code object
//! three times, then exits: each load and unload hits the GPU runtime's
//! loader hook, a breakpoint of the GPU library's, never of the client's.
//!
//! - `nonstop_client_sees_no_hook_stop`: a raw non-stop client continues
//!   the program to its exit; the only stop it is told of is the exit.
//!   Before the fix, the first hook hit reached it as a
//!   `%Stop:T05…swbreak:` at a breakpoint it never set.
//! - `nonstop_stop_request_while_held_is_honoured`: the simulated library
//!   says HALT at the first load and sends its BREAKPOINT_RESUME late and
//!   quietly (`SIMGPU_QUIET_RESUME=1`: only a later poll, the client's
//!   `monitor gpu`, takes it in), so the client's `vCont;t` certainly comes
//!   while gdbmux holds the thread at the hook: the thread is reported
//!   stopped (`T00`, as any stop the client asked for) at once; the
//!   client's continue while the library still holds it waits for the
//!   library, and a second `vCont;t` is answered at once too; the
//!   library's resume taken in meanwhile leaves it stopped; the client's
//!   continue steps it off the hook and runs it to the exit.
//! - `vanished_nonstop_client_leaves_the_hold_to_all_stop`: the non-stop
//!   client vanishes while the thread is held; the next, all-stop, client's
//!   continue waits for the library's resume, then runs to the exit.
//! - `gdb_non_stop_runs_through_loads_to_the_exit`: stock gdb 13 with `set
//!   non-stop on` continues through the loads and unloads to the exit and
//!   prints no stop on the way.

mod gpu_support;

use std::process::Command;

use gpu_support::*;
use protocol_tests::client::RspClient;

/// `samples/reload_loop.c`, built once for the tests of this file.
fn reload_loop() -> std::path::PathBuf {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| GpuEnv::get().build_sample("reload_loop"))
        .clone()
}

/// gdbmux serving `reload_loop 3` (the library's first resume late and
/// quiet when `quiet`).
fn server(exe: &std::path::Path, quiet: bool) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(exe)
        .arg("3");
    if quiet {
        cmd.env("SIMGPU_QUIET_RESUME", "1");
    }
    Server::start(cmd)
}

/// A gdb-dialect client in non-stop mode, its process at its first stop
/// (the runtime is not loaded yet); returns it and the pid.
fn nonstop_client(server: &Server) -> (RspClient, u64) {
    let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    c.handshake_gdb().expect("gdb handshake");
    assert_eq!(c.request_str("QNonStop:1").expect("QNonStop:1"), "OK");
    let first = c.request_str("?").expect("?");
    assert!(first.starts_with("T05"), "?: {first}");
    assert_eq!(c.request_str("vStopped").expect("vStopped"), "OK");
    let stop = signal_stop(
        protocol_tests::reply::StopReply::parse(first.as_bytes()).expect("stop reply"),
        "?",
    );
    let pid = stop_pid(&stop);
    (c, pid)
}

fn notification(c: &mut RspClient, server: &Server, what: &str) -> String {
    let n = c.recv_notification().unwrap_or_else(|e| {
        panic!(
            "{what}: no notification: {e}\n--- gdbmux log ---\n{}",
            server.log()
        )
    });
    let n = protocol_tests::framing::rle_decode(&n).expect("notification framing");
    String::from_utf8_lossy(&n).into_owned()
}

#[test]
fn nonstop_client_sees_no_hook_stop() {
    let exe = reload_loop();
    let server = server(&exe, false);
    let (mut c, pid) = nonstop_client(&server);
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    let n = notification(&mut c, &server, "to the exit");
    assert_eq!(
        n,
        format!("Stop:W00;process:{pid:x}"),
        "the only stop is the exit\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert_eq!(c.request_str("vStopped").expect("vStopped"), "OK");
    // The hook was hit (and handled out of the client's sight).
    server.wait_log("reported host breakpoint hit", 30);
}

/// gdb's `interrupt` in non-stop mode (`vCont;t` for the process's
/// thread): requires its `T00` notification for that thread, acknowledges
/// it with `vStopped`, and returns the notification.
fn stop_request_answered(c: &mut RspClient, server: &Server, pid: u64, what: &str) -> String {
    assert_eq!(
        c.request_str(&format!("vCont;t:p{pid:x}.{pid:x}"))
            .expect("vCont;t"),
        "OK"
    );
    let n = notification(c, server, what);
    assert!(
        n.starts_with("Stop:T00") && n.contains(&format!("thread:p{pid:x}.{pid:x};")),
        "the stop asked for: {n}\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert_eq!(c.request_str("vStopped").expect("vStopped"), "OK");
    n
}

#[test]
fn nonstop_stop_request_while_held_is_honoured() {
    let env = GpuEnv::get();
    let exe = reload_loop();
    let server = server(&exe, true);
    let (mut c, pid) = nonstop_client(&server);
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    server.wait_log("held until the library's BREAKPOINT_RESUME", 60);
    // gdb's `interrupt`: the thread is stopped by gdbmux already.
    let n = stop_request_answered(&mut c, &server, pid, "vCont;t while held at the hook");
    assert!(!n.contains("swbreak"), "{n}");
    let hook =
        load_base(pid, "libsimgpu_rt.so") + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);
    let r = c.request_str("p10").expect("p10");
    let rip = protocol_tests::reply::decode_hex(r.as_bytes())
        .filter(|b| b.len() == 8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .unwrap_or_else(|| panic!("p10: {r}"));
    assert_eq!(rip, hook, "stopped at the hook");
    // The client continues while the library still holds the thread: it
    // waits for the library (it does not run into the hook again), and a
    // second stop request is answered at once, at the same place.
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    server.wait_log(
        "non-stop: resume while held at the library's breakpoint",
        30,
    );
    stop_request_answered(&mut c, &server, pid, "vCont;t after a resume while held");
    let r = c.request_str("p10").expect("p10");
    assert_eq!(
        protocol_tests::reply::decode_hex(r.as_bytes()),
        Some(rip.to_le_bytes().to_vec()),
        "still at the hook"
    );
    // The library's late resume, taken in while the client has the thread
    // stopped: it stays stopped.
    let out = monitor(&mut c, "gpu");
    assert!(out.contains("GPU state"), "monitor gpu: {out}");
    server.wait_log(
        "BREAKPOINT_RESUME while the client has the thread stopped",
        30,
    );
    // The client's continue steps it off the hook and on to the exit.
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    let n = notification(&mut c, &server, "to the exit");
    assert_eq!(
        n,
        format!("Stop:W00;process:{pid:x}"),
        "the only stop is the exit\n--- gdbmux log ---\n{}",
        server.log()
    );
}

#[test]
fn gdb_non_stop_runs_through_loads_to_the_exit() {
    let exe = reload_loop();
    let server = server(&exe, false);
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx", "-ex", "set non-stop on"])
        .args(["-ex", &format!("target remote 127.0.0.1:{}", server.port)])
        .args(["-ex", "continue"])
        .arg(&exe);
    let out = run_with_timeout(&mut gdb, 120);
    let log = server.log();
    assert!(
        out.contains("exited normally"),
        "gdb continued to the exit:\n{out}\n--- gdbmux log ---\n{log}"
    );
    // The one stop gdb reports is the connection's ("Program stopped.").
    assert_eq!(
        out.matches("stopped").count(),
        1,
        "no stop on the way:\n{out}\n--- gdbmux log ---\n{log}"
    );
    for spurious in ["SIGTRAP", "received signal", "Breakpoint"] {
        assert!(
            !out.contains(spurious),
            "no stop on the way ({spurious}):\n{out}\n--- gdbmux log ---\n{log}"
        );
    }
    // Three loads and three unloads, at least: each a hook hit handled
    // out of gdb's sight.
    server.wait_log("reported host breakpoint hit", 30);
    let hits = server.log().matches("reported host breakpoint hit").count();
    assert!(hits >= 6, "hook hits: {hits}\n{log}");
}

/// A non-stop client continues `reload_loop` (the library's resume late
/// and quiet) and vanishes while gdbmux holds its thread at the hook;
/// returns the pid once gdbmux has seen it go.
fn hold_left_by_a_vanished_nonstop_client(server: &Server) -> u64 {
    let (mut c, pid) = nonstop_client(server);
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    server.wait_log("held until the library's BREAKPOINT_RESUME", 60);
    drop(c);
    server.wait_log("CPU client gone", 30);
    pid
}

/// A non-stop client vanishes while gdbmux holds its thread at the hook:
/// the next (all-stop) client's continue still waits for the library's
/// BREAKPOINT_RESUME (before, all-stop knew nothing of the hold and ran the
/// thread on while the library held it), and the program then runs to
/// its exit.
#[test]
fn vanished_nonstop_client_leaves_the_hold_to_all_stop() {
    let exe = reload_loop();
    let server = server(&exe, true);
    let pid = hold_left_by_a_vanished_nonstop_client(&server);
    let mut next = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    next.handshake_gdb().expect("gdb handshake");
    next.stop_reply("?").expect("?");
    next.send_packet(b"vCont;c").expect("vCont;c");
    server.wait_log("resume while held at the library's breakpoint", 30);
    // The interrupt is answered at once (held); `monitor gpu` takes the
    // library's late resume in; the continue then runs to the exit.
    next.interrupt().expect("interrupt");
    let (stop, _) = next
        .wait_stop("\\x03 while held")
        .unwrap_or_else(|e| panic!("no stop: {e}\n--- gdbmux log ---\n{}", server.log()));
    assert_eq!(signal_stop(stop, "interrupt").signo, 2);
    let out = monitor(&mut next, "gpu");
    assert!(out.contains("GPU state"), "monitor gpu: {out}");
    server.wait_log("BREAKPOINT_RESUME while the client is stopped", 30);
    let (stop, _) = next.stop_reply("vCont;c").expect("to the exit");
    assert_eq!(
        stop,
        protocol_tests::reply::StopReply::Exited {
            code: 0,
            pid: Some(pid)
        },
        "--- gdbmux log ---\n{}",
        server.log()
    );
}

/// `tests/fixtures/hookcalls.c`: two threads call the runtime's loader hook
/// (the library's host breakpoint) `CALLS` times each. In non-stop mode
/// gdbmux steps a thread off the hook with the other threads stopped, as
/// gdbserver steps over a breakpoint, so every call reaches the library:
/// `monitor gpu` counts at least 2 × `CALLS` host breakpoint hits when main
/// reaches `done()` (a thread that waited at the hook during another's
/// step hits it again: a second hit of one call). Before, the other
/// threads ran on while the hook's original byte was back, and calls
/// passed it unseen (hundreds of the 1000 in a debug build).
#[test]
fn nonstop_step_off_the_hook_stops_the_other_threads() {
    const CALLS: u64 = 500;
    let env = GpuEnv::get();
    let dir = env.bin_dir.join("gpu_nonstop_internal");
    std::fs::create_dir_all(&dir).expect("dir");
    let exe = dir.join("hookcalls");
    env.build_host(
        &env.root.join("stub/tests/fixtures/hookcalls.c"),
        &exe,
        &["-O1", "-pthread"],
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(&exe)
        .arg(CALLS.to_string());
    let server = Server::start(cmd);
    let (mut c, pid) = nonstop_client(&server);
    let done = load_base(pid, "hookcalls") + nm(&exe, "done", false);
    c.expect_ok(&format!("Z0,{done:x},1")).expect("Z0 done");
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    let n = notification(&mut c, &server, "to done()");
    assert!(
        n.starts_with("Stop:T05") && n.contains("swbreak"),
        "the stop at done(): {n}\n--- gdbmux log ---\n{}",
        server.log()
    );
    assert_eq!(c.request_str("vStopped").expect("vStopped"), "OK");
    let info = monitor(&mut c, "gpu");
    let hits: u64 = info
        .lines()
        .find_map(|l| l.split("host breakpoint hits: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no host breakpoint hits in:\n{info}"));
    assert!(
        hits >= 2 * CALLS,
        "{hits} host breakpoint hits for {} calls of the hook\n{info}",
        2 * CALLS
    );
    c.expect_ok(&format!("z0,{done:x},1")).expect("z0 done");
    assert_eq!(c.request_str("vCont;c").expect("vCont;c"), "OK");
    let n = notification(&mut c, &server, "to the exit");
    assert_eq!(n, format!("Stop:W00;process:{pid:x}"));
}

/// The other way: a client finds its process with a thread all-stop holds
/// at the hook (the previous, non-stop, client vanished while the library
/// held it) and switches to non-stop (`QNonStop:1`). The hold becomes the
/// thread's own: the client's continue of it waits for the library's
/// resume (`monitor gpu` takes the quiet one in), then steps it off the
/// hook and on to the exit. Before, non-stop mode did not know of the hold:
/// the continue ran the thread into the hook again.
#[test]
fn nonstop_begun_while_all_stop_holds_a_thread_takes_the_hold() {
    let exe = reload_loop();
    let server = server(&exe, true);
    let pid = hold_left_by_a_vanished_nonstop_client(&server);
    server.wait_log("non-stop ends while the library holds a thread", 30);
    let (mut next, pid2) = nonstop_client(&server);
    assert_eq!(pid2, pid);
    assert_eq!(next.request_str("vCont;c").expect("vCont;c"), "OK");
    server.wait_log(
        "non-stop: resume while held at the library's breakpoint",
        30,
    );
    let out = monitor(&mut next, "gpu");
    assert!(out.contains("GPU state"), "monitor gpu: {out}");
    let n = notification(&mut next, &server, "to the exit");
    assert_eq!(
        n,
        format!("Stop:W00;process:{pid:x}"),
        "the only stop is the exit\n--- gdbmux log ---\n{}",
        server.log()
    );
}
