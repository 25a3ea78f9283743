//! Issue 10: in `lldb -b`, `target list` right after the program's exit
//! shows both targets `state=exited`, every time.
//!
//! lldb 23.1 takes each target's exit in on its own thread: after a wave
//! stop the helper runs the CPU on from a worker thread (a synchronous
//! `SBProcess.Continue`), and the last `process continue` waits on the GPU
//! target. gdbmux used to send both exits at once, so the command could end
//! (GPU exited) and the next one run before the worker had taken the CPU's
//! exit in: `target list` read the CPU `state=running` in 2 of 3 runs on a
//! loaded machine. Now the helper asks gdbmux, at the runtime's last unload,
//! to hold the GPU's end until it interrupts the GPU, which its worker does
//! once it has the CPU's exit (docs/gpu-lldb.md, finding 12).
//!
//! The session is run [`RUNS`] times, each on a fresh gdbmux and program
//! (compiled here, at test time).

mod gpu_support;

use gpu_support::*;

/// Sessions per test.
const RUNS: usize = 4;

/// `lldb -b` with the helper: stop a wave in each kernel, run to the end,
/// `target list` at once. Returns lldb's output and gdbmux's log.
fn run_once(env: &GpuEnv, test: &str, cmds: &[&str]) -> (String, String) {
    let (host, dir) = env.build_typed(
        "gpu-exit-states",
        test,
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = env.serve_program(&host, &dir);
    let out = env.lldb_batch(server.port, cmds, &host);
    server.wait_log("[inferior] host: PASS", 10);
    (out, server.log())
}

/// The text lldb printed for the last `target list`.
fn last_target_list(out: &str) -> &str {
    let at = out
        .rfind("(lldb) target list\n")
        .unwrap_or_else(|| panic!("target list not run:\n{out}"));
    let rest = &out[at..];
    let end = rest[1..].find("(lldb) ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

fn assert_both_exited(out: &str, log: &str, run: usize) {
    let list = last_target_list(out);
    let states: Vec<&str> = list
        .lines()
        .filter(|l| l.contains("target #"))
        .filter_map(|l| l.split("state=").nth(1))
        .map(|s| s.trim_end_matches(" )").trim())
        .collect();
    assert_eq!(
        states,
        ["exited", "exited"],
        "run {run}: both targets exited right after the exit:\n{list}\n--- whole session ---\n{out}\n--- gdbmux ---\n{log}"
    );
}

#[test]
fn target_list_after_the_exit_shows_both_targets_exited() {
    let env = GpuEnv::get();
    for run in 0..RUNS {
        let (out, log) = run_once(
            env,
            &format!("waves{run}"),
            &[
                "breakpoint set -o true -n saxpy",
                "breakpoint set -o true -n negate",
                "process continue",
                "process continue",
                "process continue",
                "target list",
            ],
        );
        assert!(
            out.contains("exited with status = 0") && !out.contains("lost connection"),
            "run {run}:\n{out}\n--- gdbmux ---\n{log}"
        );
        assert!(
            log.contains("the GPU process's end waits for the client's interrupt"),
            "run {run}: the helper had the GPU's end held:\n{out}\n--- gdbmux ---\n{log}"
        );
        assert_both_exited(&out, &log, run);
    }
}

/// Issue 10: the same in interactive lldb, typed through a pseudo-terminal:
/// `target list` typed as soon as the exits are printed shows both targets
/// `state=exited`. Interactive lldb takes each process's events on its
/// event thread (and the helper's listeners); the GPU's end is held until
/// the helper's CPU listener has taken the CPU's exit in, so once both
/// exits are printed both targets have ended (docs/gpu-lldb.md, finding 12).
#[test]
fn interactive_target_list_after_the_exit_shows_both_targets_exited() {
    let env = GpuEnv::get();
    for run in 0..RUNS {
        let (host, dir) = env.build_typed(
            "gpu-exit-states",
            &format!("pty{run}"),
            "host.c",
            &["saxpy", "negate"],
            &["-O1"],
        );
        let server = env.serve_program(&host, &dir);
        let args = env.lldb_connect_args(server.port, &host);
        let script = [
            ("breakpoint set -o true -n saxpy", "pending"),
            ("breakpoint set -o true -n negate", "pending"),
            (
                "process continue",
                r"stop reason = one-shot breakpoint.*saxpy\.hsaco`saxpy",
            ),
            (
                "process continue",
                r"stop reason = one-shot breakpoint.*negate\.hsaco`negate",
            ),
            (
                "process continue",
                r"exited with status = 0.*exited with status = 0",
            ),
            (
                "target list",
                r"target #0: \S+host .*state=exited \)\n\* target #1: .*state=exited \)",
            ),
        ];
        env.lldb_pty(&args, &script, &server);
        server.wait_log("[inferior] host: PASS", 10);
    }
}
