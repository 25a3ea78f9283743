//! Issue 10: at a GPU wave stop (both targets stopped, all-stop), the user
//! selects the CPU target to look at it and types `process continue`
//! there. The whole program runs on, the GPU included, to the next wave
//! stop and then to its exit; `lldb -b` ends by itself, and `target list`
//! shows both targets' states right after each command
//! (docs/gpu-lldb.md, finding 15). The host program and both kernels are
//! compiled here, at test time (`tests/gpu/typed/`). Driven through
//! `lldb -b` and interactive lldb in a pseudo-terminal.

mod gpu_support;

use gpu_support::*;

/// What a person types, each with what lldb must print in answer.
fn session(pty: bool) -> Vec<(&'static str, &'static str)> {
    vec![
        ("breakpoint set -o true -n saxpy", "pending"),
        ("breakpoint set -o true -n negate", "pending"),
        (
            "process continue",
            r"stop reason = one-shot breakpoint.*saxpy\.hsaco`saxpy",
        ),
        ("target select 0", r"\* target #0: \S+host .*state=stopped"),
        // The CPU target's continue runs the GPU on too: the wave in the
        // second kernel stops, and the CPU with it.
        (
            "process continue",
            if pty {
                r"stop reason = one-shot breakpoint.*negate\.hsaco`negate"
            } else {
                r"stop reason = one-shot breakpoint.*negate\.hsaco`negate.*Target 0: \(\S*host\) stopped"
            },
        ),
        (
            "target list",
            r"target #0: \S+host .*state=stopped \)\n\* target #1: .*state=stopped \)",
        ),
        ("target select 0", r"\* target #0: \S+host .*state=stopped"),
        (
            "process continue",
            if pty {
                r"exited with status = 0.*exited with status = 0"
            } else {
                r"exited with status = 0"
            },
        ),
        (
            "target list",
            r"target #0: \S+host .*state=exited \)\n(\* )?\s*target #1: .*state=exited \)\n(?!.*target #2)",
        ),
    ]
}

/// The host program and both kernels built for one test (`tag`), served
/// by a fresh gdbmux.
fn served(tag: &str) -> (&'static GpuEnv, std::path::PathBuf, Server) {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-cpu-continue",
        tag,
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = env.serve_program(&host, &dir);
    (env, host, server)
}

#[test]
fn lldb_batch_cpu_continue_at_a_wave_stop_runs_the_gpu_too() {
    let (env, host, server) = served("batch");
    let session = session(false);
    let cmds: Vec<&str> = session.iter().map(|(c, _)| *c).collect();
    // Ends by itself, or run_with_timeout fails the test.
    let out = env.lldb_batch(server.port, &cmds, &host);
    assert_batch_session(&out, &session, &server);
    let log = server.wait_log("[inferior] host: PASS", 10);
    assert!(
        log.contains("all-stop: telling the client to continue the GPU")
            && log.contains("the CPU process's end waits for the client's interrupt"),
        "gdbmux ran the GPU on the CPU's continue and held the CPU's end:\n{log}"
    );
}

#[test]
fn interactive_cpu_continue_at_a_wave_stop_runs_the_gpu_too() {
    let (env, host, server) = served("pty");
    let args = env.lldb_connect_args(server.port, &host);
    let out = env.lldb_pty(&args, &session(true), &server);
    // Each wave stop is printed once, in full (docs/gpu-lldb.md, finding 14).
    assert_eq!(
        wave_stops_printed(&out),
        2,
        "each wave stop printed once:\n{out}"
    );
    server.wait_log("[inferior] host: PASS", 10);
}

/// A CPU stop of its own (a breakpoint on `puts`) while the GPU runs on the
/// CPU target's continue: the GPU target stops with it (gdbmux's stop,
/// `monitor gpu all-stop-gpu join`), `target list` shows both stopped, the
/// next `process continue` runs both to the exit, and `lldb -b` ends by
/// itself (it hung at its end while the helper's GPU continue still waited).
fn own_stop_session(pty: bool) -> Vec<(&'static str, &'static str)> {
    vec![
        ("breakpoint set -o true -n saxpy", "pending"),
        (
            "process continue",
            r"stop reason = one-shot breakpoint.*saxpy\.hsaco`saxpy",
        ),
        ("target select 0", r"\* target #0: \S+host .*state=stopped"),
        ("breakpoint set -n puts", r"Breakpoint \d+: where = "),
        (
            "process continue",
            if pty {
                r"(?=.*stop reason = breakpoint \d+\.1.*puts)(?=.*(Target 1: \(saxpy\.hsaco\) stopped|the GPU target stopped with it))"
            } else {
                r"stop reason = breakpoint \d+\.1.*puts"
            },
        ),
        (
            "target list",
            r"target #0: \S+host .*state=stopped \)\n.*target #1: .*state=stopped \)",
        ),
        (
            "process continue",
            if pty {
                r"exited with status = 0.*exited with status = 0"
            } else {
                r"exited with status = 0"
            },
        ),
        (
            "target list",
            r"target #0: \S+host .*state=exited \)\n(\* )?\s*target #1: .*state=exited \)",
        ),
    ]
}

#[test]
fn lldb_batch_cpu_stop_of_its_own_stops_the_gpu_run_on_the_cpu_continue() {
    let (env, host, server) = served("own-batch");
    let session = own_stop_session(false);
    let cmds: Vec<&str> = session.iter().map(|(c, _)| *c).collect();
    let out = env.lldb_batch(server.port, &cmds, &host);
    assert_batch_session(&out, &session, &server);
    server.wait_log("[inferior] host: PASS", 10);
}

#[test]
fn interactive_cpu_stop_of_its_own_stops_the_gpu_run_on_the_cpu_continue() {
    let (env, host, server) = served("own-pty");
    let args = env.lldb_connect_args(server.port, &host);
    env.lldb_pty(&args, &own_stop_session(true), &server);
    server.wait_log("[inferior] host: PASS", 10);
}
