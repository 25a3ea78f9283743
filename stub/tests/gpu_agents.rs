//! A machine with several GPU agents, one of which the library cannot
//! debug (issue 12: an unsupported *first* agent, e.g. an integrated GPU,
//! used to make the whole GPU attach fail). The simulated library presents
//! `SIMGPU_AGENTS=gfx1036,gfx90a,gfx90a` (tools/simgpu-dbgapi/src/agents.rs):
//! an unsupported gfx1036 listed first, then the simulated gfx90a that runs
//! the kernels, then a second gfx90a. Stock gdb 13 and stock lldb 23.1
//! (`lldb -b`, and interactive lldb typed through a pseudo-terminal) see
//! all three agents in `monitor gpu`, each with its own architecture, the
//! unsupported one with the library's reason, and still stop a kernel
//! (compiled here, at test time) at a breakpoint and run the program to
//! its end.

mod gpu_support;

use std::path::Path;

use gpu_support::*;

const AGENTS: &str = "gfx1036,gfx90a,gfx90a";

/// gdbmux serving `host` on the simulated library presenting [`AGENTS`].
fn serve(host: &Path, dir: &Path) -> Server {
    GpuEnv::get().serve_program_with(host, dir, &[("SIMGPU_AGENTS", AGENTS)])
}

/// The three agents as `monitor gpu` lists them, in the library's order.
fn assert_agents(text: &str, log: &str) {
    let agents: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches("(gdb) "))
        .filter(|l| l.starts_with("agent "))
        .collect();
    assert_eq!(
        agents.len(),
        3,
        "three agents listed:\n{text}\n--- gdbmux ---\n{log}"
    );
    assert!(
        agents[0].contains("gfx1036")
            && agents[0].contains("not debuggable, skipped")
            && agents[0].contains("architecture not supported by this amd-dbgapi"),
        "the unsupported agent with the library's reason: {:?}\n{text}",
        agents[0]
    );
    for a in &agents[1..] {
        assert!(
            a.ends_with("(gfx90a)"),
            "a supported agent with its architecture: {a:?}\n{text}"
        );
    }
}

#[test]
fn gdb_debugs_a_kernel_beside_an_unsupported_agent() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-agents",
        "gdb",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = serve(&host, &dir);
    let text = gdb_batch(
        server.port,
        &[
            "monitor gpu break negate",
            "continue",
            "monitor gpu",
            "monitor gpu waves",
            "monitor gpu continue",
            "continue",
        ],
        &host,
    );
    let log = server.log();
    assert!(
        text.contains("stopped at a breakpoint in kernel negate"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    assert_agents(&text, &log);
    assert!(
        text.contains("exited normally"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    server.wait_log("[inferior] host: PASS", 10);
}

#[test]
fn lldb_debugs_a_kernel_beside_an_unsupported_agent() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-agents",
        "lldb",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = serve(&host, &dir);
    let text = env.lldb_batch(
        server.port,
        &[
            "process plugin packet monitor gpu",
            "breakpoint set -o true -n negate",
            "process continue",
            "register read pc",
            "process continue",
        ],
        &host,
    );
    let log = server.log();
    assert_agents(&text, &log);
    assert!(
        regex_like(
            &text,
            "stop reason = one-shot breakpoint",
            "negate.hsaco`negate"
        ),
        "a wave stops in negate:\n{text}\n--- gdbmux ---\n{log}"
    );
    assert!(
        text.contains("pc = 0x") && text.contains("exited with status = 0"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    server.wait_log("[inferior] host: PASS", 10);
}

/// `first` occurs, and `then` after it.
fn regex_like(text: &str, first: &str, then: &str) -> bool {
    text.find(first).is_some_and(|at| text[at..].contains(then))
}

#[test]
fn interactive_lldb_lists_the_agents_and_stops_the_kernel() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-agents",
        "pty",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let server = serve(&host, &dir);
    let args = env.lldb_connect_args(server.port, &host);
    let script = [
        (
            "process plugin packet monitor gpu",
            r"agent \d+: AMD Radeon Graphics \(gfx1036, simgpu\) \(not debuggable, skipped: architecture not supported by this amd-dbgapi.*\nagent \d+: .*\(gfx90a\)\nagent \d+: .*\(gfx90a\)",
        ),
        ("breakpoint set -o true -n negate", "pending"),
        (
            "process continue",
            r"stop reason = one-shot breakpoint.*negate\.hsaco`negate",
        ),
        ("process continue", "exited with status = 0"),
    ];
    env.lldb_pty(&args, &script, &server);
    server.wait_log("[inferior] host: PASS", 10);
}
