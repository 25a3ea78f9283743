//! GPU breakpoints are not missed while a wave steps off one (ROCgdb's
//! way: amd-dbgapi displaced stepping). gdbmux steps a wave off a
//! breakpoint by executing a copy of the original instruction out of line
//! (the library's `displaced_stepping_start` / `_complete`), so the breakpoint's
//! `s_trap` never leaves memory and every other wave still stops there. The
//! lift-the-trap step-over it replaces let waves that ran through the
//! address meanwhile pass it (measured: 4 of 34 sessions under load lost 3
//! of saxpy's 4 waves).
//!
//! Stock gdb 13 drives a session through a Python script: a breakpoint at
//! saxpy's entry (every wave executes it), then `continue` and `monitor gpu
//! continue WAVE` for the wave just reported, until the program exits. Only
//! the reported wave is resumed each time, so every wave that reaches the
//! breakpoint is reported; each of saxpy's 4 waves must be reported exactly
//! once, whichever had started when the first stop was reported.
//!
//! The other tests: one displaced stepping buffer for the 4 waves
//! (`SIMGPU_DISPLACED_BUFFERS=1`: the waves wait in gdbmux's step-over
//! queue, none passes the breakpoint unreported, the trap is never
//! lifted), and `detach` / `kill` while a displaced step is under way or
//! queued (the program runs to its normal end with the right results; no
//! wave runs from the library's buffer or into a trap left in memory).

mod gpu_support;

use std::path::Path;
use std::path::PathBuf;

use gpu_support::*;

/// The typed host program (saxpy: 256 work-items in workgroups of 64, 4
/// waves; then negate) in its own directory. Returns (program, directory).
fn build(test: &str) -> (PathBuf, PathBuf) {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed("gpu-displaced", test, "host.c", &[], &["-O1"]);
    let src = env.root.join("stub/tests/gpu/typed");
    for kernel in ["saxpy", "negate"] {
        env.build_kernel(
            &src.join(format!("{kernel}.cl")),
            &dir.join(format!("{kernel}.hsaco")),
        );
    }
    (host, dir)
}

/// Reports each wave stopped at saxpy's entry breakpoint (`STOP x,y,z n`:
/// its workgroup and number in it) and resumes that wave alone.
const SCRIPT: &str = r#"
import re
gdb.execute("target remote 127.0.0.1:PORT")
gdb.execute("monitor gpu break saxpy")
stop = re.compile(r"GPU wave (\d+) stopped at a breakpoint in kernel saxpy .*?"
                  r"workgroup \((\d+),(\d+),(\d+)\), wave (\d+) in group")
for _ in range(16):
    out = gdb.execute("continue", to_string=True)
    print(out)
    m = stop.search(out)
    if m is None:
        break
    print("STOP %s,%s,%s %s" % m.group(2, 3, 4, 5))
    print(gdb.execute("monitor gpu continue " + m.group(1), to_string=True))
"#;

/// Runs the session; returns gdb's output and gdbmux's log.
fn session(test: &str, vars: &[(&str, &str)]) -> (String, String) {
    session_with(test, SCRIPT, vars)
}

/// Runs `script` (its `PORT` replaced) against gdbmux serving the typed
/// host program, waits for the program's `host: PASS` (saxpy's and
/// negate's results checked by the program itself); returns gdb's output
/// and gdbmux's log.
fn session_with(test: &str, script: &str, vars: &[(&str, &str)]) -> (String, String) {
    let (host, dir) = build(test);
    let server = GpuEnv::get().serve_program_with(&host, &dir, vars);
    run_script(server, &host, &dir, script)
}

/// [`session_with`] for a session that detaches: gdbmux runs with
/// `--multi`, so it outlives the detach and the client. The simulated GPU
/// lives in the simulated library inside gdbmux (the program's runtime
/// hands its dispatches to it), so a detached program's later dispatches
/// still need gdbmux running; on real hardware the GPU is the device's.
fn detached_session(test: &str, script: &str, vars: &[(&str, &str)]) -> (String, String) {
    let (host, dir) = build(test);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.envs(vars.iter().copied())
        .args([
            "--multi",
            "--log-channels",
            "mux,dbgapi",
            "127.0.0.1:0",
            "--",
        ])
        .arg(&host)
        .arg(&dir);
    run_script(Server::start(cmd), &host, &dir, script)
}

fn run_script(server: Server, host: &Path, dir: &Path, script: &str) -> (String, String) {
    let path = dir.join("displaced.py");
    std::fs::write(&path, script.replace("PORT", &server.port.to_string())).unwrap();
    let out = run_gdb(&path, host, &[]);
    server.wait_log("[inferior] host: PASS", 20);
    (out, server.log())
}

/// The waves reported stopped at the breakpoint, in order.
fn stops(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|l| l.strip_prefix("STOP "))
        .collect()
}

#[test]
fn every_wave_stops_at_the_breakpoint_exactly_once() {
    let (out, log) = session("all", &[]);
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    let mut seen = stops(&out);
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), n, "no wave reported twice:\n{ctx}");
    assert_eq!(
        seen,
        ["0,0,0 0", "1,0,0 0", "2,0,0 0", "3,0,0 0"],
        "each of saxpy's 4 waves stops at the breakpoint:\n{ctx}"
    );
    assert!(
        log.contains("stepping off a GPU breakpoint") && log.contains("displaced=true"),
        "the waves stepped off it out of line:\n{ctx}"
    );
    assert!(!log.contains("lifting the trap"), "{ctx}");
    assert!(out.contains("exited normally"), "{ctx}");
}

/// The same session with one displaced stepping buffer
/// (`SIMGPU_DISPLACED_BUFFERS=1`): a wave continued while another's step
/// still holds the buffer waits in the step-over queue instead of having
/// the trap lifted for it, so no wave passes the breakpoint unreported.
#[test]
fn every_wave_stops_exactly_once_with_one_buffer() {
    let (out, log) = session("one-buffer", &[("SIMGPU_DISPLACED_BUFFERS", "1")]);
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    let mut seen = stops(&out);
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), n, "no wave reported twice:\n{ctx}");
    assert_eq!(
        seen,
        ["0,0,0 0", "1,0,0 0", "2,0,0 0", "3,0,0 0"],
        "each of saxpy's 4 waves stops at the breakpoint:\n{ctx}"
    );
    assert!(!log.contains("lifting the trap"), "{ctx}");
    assert!(out.contains("exited normally"), "{ctx}");
}

/// A library without displaced stepping (NOT_IMPLEMENTED, as before 0.76):
/// gdbmux lifts the trap for the step instead, and the session still works
/// (how many waves stop depends on timing there: that is the window
/// displaced stepping closes).
#[test]
fn without_displaced_stepping_the_trap_is_lifted() {
    let (out, log) = session(
        "fallback",
        &[("SIMGPU_FAIL", "displaced_stepping_start=-3")],
    );
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    assert!(!stops(&out).is_empty(), "a wave stops:\n{ctx}");
    assert!(log.contains("lifting the trap"), "{ctx}");
    assert!(out.contains("exited normally"), "{ctx}");
}

/// The common head of the scripts below: connected, a breakpoint at
/// saxpy's entry, and `report()`: `continue` to the next wave stop there,
/// printed as `STOP x,y,z n`; returns the wave's number (`None`: no stop).
const HEAD: &str = r#"
import re
gdb.execute("target remote 127.0.0.1:PORT")
gdb.execute("monitor gpu break saxpy")
stop = re.compile(r"GPU wave (\d+) stopped at a breakpoint in kernel saxpy .*?"
                  r"workgroup \((\d+),(\d+),(\d+)\), wave (\d+) in group")
def report():
    out = gdb.execute("continue", to_string=True)
    print(out)
    m = stop.search(out)
    if m is None:
        return None
    print("STOP %s,%s,%s %s" % m.group(2, 3, 4, 5))
    return m.group(1)
"#;

/// One buffer for saxpy's 4 waves (`SIMGPU_DISPLACED_BUFFERS=1`): every
/// wave is reported at the breakpoint (none resumed meanwhile), then
/// `monitor gpu continue` resumes all 4 at once. The first takes the
/// buffer; the library answers BUFFER_NOT_AVAILABLE for the others, which
/// wait stopped on the breakpoint in gdbmux's step-over queue (ROCgdb's
/// way) and step off it one at a time as each step completes. The trap is
/// never lifted, no wave is reported twice (a wave resumed without
/// stepping off would stop there again), and the program's results are
/// right.
#[test]
fn one_buffer_queues_the_step_overs() {
    let script = format!(
        "{HEAD}{}",
        r#"
seen = 0
for _ in range(16):
    if report() is None:
        break
    seen += 1
    if seen == 4:
        break
print(gdb.execute("monitor gpu continue", to_string=True))
print(gdb.execute("continue", to_string=True))
"#
    );
    let (out, log) = session_with("queue", &script, &[("SIMGPU_DISPLACED_BUFFERS", "1")]);
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    let mut seen = stops(&out);
    seen.sort_unstable();
    assert_eq!(
        seen,
        ["0,0,0 0", "1,0,0 0", "2,0,0 0", "3,0,0 0"],
        "each of saxpy's 4 waves stops at the breakpoint exactly once:\n{ctx}"
    );
    assert_eq!(
        log.matches("step-over queued").count(),
        3,
        "3 waves waited for the one buffer:\n{ctx}"
    );
    assert_eq!(
        log.matches("queued step-over started").count(),
        3,
        "and each stepped off once it was free:\n{ctx}"
    );
    assert!(!log.contains("lifting the trap"), "{ctx}");
    assert!(out.contains("exited normally"), "{ctx}");
}

/// `detach` right after a wave's displaced step was started (`monitor gpu
/// continue W`): the step may be running, stopped and not yet handled, or
/// handled, when gdbmux gets the `D`. gdbmux lets go of the GPU first
/// (breakpoints out, stopped displaced waves completed, waves resumed) and
/// the library's detach stops and completes a step still running; the
/// program runs on undebugged to its normal end with the right results
/// (`host: PASS`): no wave ran from the library's buffer or into a trap
/// left in memory.
#[test]
fn detach_during_a_displaced_step() {
    let script = format!(
        "{HEAD}{}",
        r#"
w = report()
print(gdb.execute("monitor gpu continue " + w, to_string=True))
gdb.execute("detach")
print("DETACHED")
"#
    );
    let (out, log) = detached_session("detach", &script, &[]);
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    assert_eq!(stops(&out).len(), 1, "{ctx}");
    assert!(out.contains("DETACHED"), "{ctx}");
    assert!(log.contains("displaced=true"), "{ctx}");
    assert!(
        log.contains("letting go before the CPU process is detached"),
        "{ctx}"
    );
}

/// The same with one buffer and every wave resumed at once (`monitor gpu
/// continue`): one wave steps, the others wait in the queue when the
/// `detach` comes; queued waves are resumed normally (their breakpoint is
/// out of memory by then), and the program ends with the right results.
#[test]
fn detach_with_step_overs_queued() {
    let script = format!(
        "{HEAD}{}",
        r#"
seen = 0
for _ in range(16):
    if report() is None:
        break
    seen += 1
    if seen == 4:
        break
print(gdb.execute("monitor gpu continue", to_string=True))
gdb.execute("detach")
print("DETACHED")
"#
    );
    let (out, log) = detached_session(
        "detach-queued",
        &script,
        &[("SIMGPU_DISPLACED_BUFFERS", "1")],
    );
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    assert_eq!(stops(&out).len(), 4, "{ctx}");
    assert!(out.contains("DETACHED"), "{ctx}");
    assert!(log.contains("step-over queued"), "{ctx}");
}

/// `kill` right after a wave's displaced step was started: the process
/// and its waves are gone, the library's detach of an ended process is
/// trivial ("If the associated native operating system process has
/// already exited [...] then the process is trivially detached"), and
/// gdbmux forgets the step with the rest of the process's GPU state: it
/// answers the kill and exits cleanly (no process left, no `--multi`).
#[test]
fn kill_during_a_displaced_step() {
    let (host, dir) = build("kill");
    let mut server = GpuEnv::get().serve_program_with(&host, &dir, &[]);
    let script = format!(
        "{HEAD}{}",
        r#"
w = report()
print(gdb.execute("monitor gpu continue " + w, to_string=True))
gdb.execute("kill")
print("KILLED")
"#
    )
    .replace("PORT", &server.port.to_string());
    let path = dir.join("displaced.py");
    std::fs::write(&path, script).unwrap();
    let out = run_gdb(&path, &host, &[]);
    let status = server.wait_exit(20);
    let log = server.log();
    let ctx = format!("{out}\n--- gdbmux ---\n{log}");
    assert_eq!(stops(&out).len(), 1, "{ctx}");
    assert!(out.contains("KILLED"), "{ctx}");
    assert!(log.contains("displaced=true"), "{ctx}");
    assert!(status.success(), "gdbmux exit {status:?}:\n{ctx}");
    assert!(!log.contains("panicked"), "{ctx}");
}
