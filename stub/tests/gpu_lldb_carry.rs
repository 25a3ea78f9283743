//! Issue 10: a code object loads while the user's synchronous `process
//! continue` of the GPU target runs (the helper runs the CPU on), and a
//! breakpoint typed on the CPU target for one of its kernels waits to be
//! set in the GPU target. lldb 23.1 sets a breakpoint only while no
//! command holds the target, so that command must end: all-stop covers it.
//! gdbmux stops the GPU target with a stop of its own, the helper's GPU
//! stop hook sets the breakpoint, the CPU stops as it leaves the loader
//! hook, and the command ends with both targets stopped; `process continue`
//! runs both on (docs/gpu-lldb.md, finding 16). `reload.c` and its kernels
//! are compiled here, at test time. Driven through `lldb -b` and
//! interactive lldb in a pseudo-terminal.

mod gpu_support;

use gpu_support::*;

/// What a person types, each with what lldb must print in answer.
/// `lldb -b`: the command waits on the GPU target, so the load stops both
/// targets. Interactive lldb: `process continue` returns at once and holds
/// nothing, so the breakpoint is set as the code object loads and the
/// program runs on to the next wave stop.
fn session(pty: bool) -> Vec<(&'static str, &'static str)> {
    let mut s = vec![
        ("breakpoint set -n negate", "pending"),
        (
            "process continue",
            r"stop reason = breakpoint.*negate\.hsaco`negate",
        ),
        (
            "target select 0",
            r"\* target #0: \S+reload .*state=stopped",
        ),
        // saxpy.hsaco is not loaded yet: pending on the CPU target.
        ("breakpoint set -n saxpy", "pending"),
        ("target select 1", r"\* target #1: "),
    ];
    if pty {
        s.push((
            "process continue",
            r"resolved in the GPU target as breakpoint.*stop reason = breakpoint.*negate\.hsaco`negate",
        ));
    } else {
        // The program unloads negate.hsaco and loads saxpy.hsaco while
        // this command waits on the GPU.
        s.extend([
            (
                "process continue",
                r"resolved in the GPU target as breakpoint.*stop reason = gdbmux all-stop: a GPU code object loaded",
            ),
            (
                "target list",
                r"target #0: \S+reload .*state=stopped \)\n\* target #1: .*state=stopped \)",
            ),
            // negate.hsaco loads again and its kernel runs: its
            // breakpoint stops the wave.
            (
                "process continue",
                r"stop reason = breakpoint.*negate\.hsaco`negate",
            ),
        ]);
    }
    s.extend([
        (
            "target list",
            r"target #0: \S+reload .*state=stopped \)\n\* target #1: .*state=stopped \)",
        ),
        ("breakpoint list", r"saxpy.*locations = 1, resolved = 1"),
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
            r"target #0: \S+reload .*state=exited \)\n\* target #1: .*state=exited \)",
        ),
    ]);
    s
}

#[test]
fn lldb_batch_code_object_loaded_under_a_gpu_continue_stops_both_targets() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-carry",
        "batch",
        "reload.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = env.serve_program(&host, &dir);
    let session = session(false);
    let cmds: Vec<&str> = session.iter().map(|(c, _)| *c).collect();
    // Ends by itself, or run_with_timeout fails the test.
    let out = env.lldb_batch(server.port, &cmds, &host);
    assert_batch_session(&out, &session, &server);
    let log = server.wait_log("[inferior] reload: PASS", 10);
    assert!(
        log.contains("all-stop: stopping the GPU process for the helper's update"),
        "gdbmux stopped the GPU for the update:\n{log}"
    );
}

#[test]
fn interactive_code_object_loaded_under_a_gpu_continue() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-carry",
        "pty",
        "reload.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = env.serve_program(&host, &dir);
    let args = env.lldb_connect_args(server.port, &host);
    env.lldb_pty(&args, &session(true), &server);
    server.wait_log("[inferior] reload: PASS", 10);
}
