//! Agents of two architectures in one process (issue 12, "several agents,
//! mixed"): the simulated library presents `SIMGPU_AGENTS=gfx908,gfx90a`,
//! an MI100 and an MI210. The program (`stub/tests/gpu/typed/host.c`,
//! built at test time) loads `saxpy.hsaco`, compiled here by clang-19 for
//! gfx908, and `negate.hsaco`, compiled for gfx90a: the runtime dispatches
//! each kernel to the agent of its code object's architecture.
//!
//! Stock gdb 13 (`monitor gpu`) and stock lldb 23.1 (`lldb -b`, and
//! interactive lldb typed through a pseudo-terminal) stop a wave in each
//! kernel; each wave names its own agent and architecture, reads its
//! registers through its own architecture's register list (a gfx908 wave
//! has gfx908's vector register count: a granule of 4 where gfx90a's is 8),
//! and the program runs to exit 0 with correct results.

mod gpu_support;

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use gpu_support::*;

const AGENTS: &str = "gfx908,gfx90a";

/// Compile `stub/tests/gpu/typed/KERNEL.cl` with clang-19 for `mcpu`
/// (with DWARF) into `dir/KERNEL.hsaco`.
fn build_kernel_for(env: &GpuEnv, kernel: &str, mcpu: &str, dir: &Path) {
    let src = env.root.join("stub/tests/gpu/typed");
    let st = Command::new("clang-19")
        .args(["-target", "amdgcn-amd-amdhsa"])
        .arg(format!("-mcpu={mcpu}"))
        .args(["-O1", "-g", "-nogpulib", "-cl-std=CL2.0", "-x", "cl"])
        .arg(format!("-I{}", env.root.join("samples/kernels").display()))
        .arg(src.join(format!("{kernel}.cl")))
        .arg("-o")
        .arg(dir.join(format!("{kernel}.hsaco")))
        .status()
        .expect("clang-19");
    assert!(st.success(), "compiling {kernel} for {mcpu}");
}

/// The typed host program with saxpy built for gfx908 and negate for
/// gfx90a, in its own directory. Returns (program, directory).
fn build(test: &str) -> (PathBuf, PathBuf) {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed("gpu-mixed", test, "host.c", &[], &["-O1"]);
    build_kernel_for(env, "saxpy", "gfx908", &dir);
    build_kernel_for(env, "negate", "gfx90a", &dir);
    (host, dir)
}

fn serve(host: &Path, dir: &Path) -> Server {
    GpuEnv::get().serve_program_with(host, dir, &[("SIMGPU_AGENTS", AGENTS)])
}

/// The `monitor gpu waves` line of the first wave stopped at a breakpoint.
fn stopped_wave_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("wave ") && l.contains("stop=(breakpoint)"))
        .unwrap_or_else(|| panic!("a wave stopped at a breakpoint:\n{text}"))
}

#[test]
fn gdb_stops_a_wave_on_each_architecture() {
    let (host, dir) = build("gdb");
    let server = serve(&host, &dir);
    let text = gdb_batch(
        server.port,
        &[
            "monitor gpu break saxpy",
            "monitor gpu break negate",
            "continue",
            "monitor gpu",
            "monitor gpu waves",
            // Each breakpoint is deleted at its first stop. Every wave of
            // the kernel stops at it, and a wave its device thread has not
            // run yet when the first stop is reported (a loaded machine;
            // `monitor gpu waves` shows it Running) may reach the
            // breakpoint before the delete: one more stop in that kernel,
            // and the exit one `continue` later than here.
            "monitor gpu delete saxpy",
            "monitor gpu continue",
            "continue",
            "monitor gpu waves",
            "monitor gpu delete negate",
            "monitor gpu continue",
            "continue",
        ],
        &host,
    );
    let log = server.log();
    let ctx = format!("{text}\n--- gdbmux ---\n{log}");
    // Both agents are debuggable, each with its own architecture.
    assert!(
        text.contains("AMD Instinct MI100 (simgpu, agent 0) (gfx908)")
            && text.contains("AMD Instinct MI210 (simgpu) (gfx90a)"),
        "both agents listed with their architectures:\n{ctx}"
    );
    assert!(
        text.contains("register table: the union of gfx908, gfx90a (734 registers"),
        "one table for both architectures (their real lists are equal):\n{ctx}"
    );
    let saxpy_at = text
        .find("stopped at a breakpoint in kernel saxpy")
        .unwrap_or_else(|| panic!("a wave stops in saxpy:\n{ctx}"));
    let negate_at = text
        .find("stopped at a breakpoint in kernel negate")
        .unwrap_or_else(|| panic!("a wave stops in negate:\n{ctx}"));
    assert!(saxpy_at < negate_at, "saxpy runs first:\n{ctx}");
    let first = stopped_wave_line(&text[saxpy_at..]);
    assert!(
        first.ends_with("(gfx908)"),
        "the saxpy wave is on the gfx908 agent: {first}\n{ctx}"
    );
    let second = stopped_wave_line(&text[negate_at..]);
    assert!(
        second.ends_with("(gfx90a)"),
        "the negate wave is on the gfx90a agent: {second}\n{ctx}"
    );
    assert!(text.contains("exited normally"), "{ctx}");
    server.wait_log("[inferior] host: PASS", 10);
}

#[test]
fn lldb_reads_each_wave_through_its_architecture() {
    let env = GpuEnv::get();
    let (host, dir) = build("lldb");
    let server = serve(&host, &dir);
    let text = env.lldb_batch(
        server.port,
        &[
            "breakpoint set -o true -n saxpy",
            "breakpoint set -o true -n negate",
            "process continue",
            "register read pc v0",
            "register read v3",
            "register read v4",
            "process plugin packet monitor gpu waves",
            "process continue",
            "register read pc v0",
            "register read v4",
            "process plugin packet monitor gpu waves",
            "process continue",
        ],
        &host,
    );
    let log = server.log();
    let ctx = format!("{text}\n--- gdbmux ---\n{log}");
    let saxpy_at = text
        .find("saxpy.hsaco`saxpy")
        .unwrap_or_else(|| panic!("a wave stops in saxpy:\n{ctx}"));
    let negate_at = text[saxpy_at..]
        .find("negate.hsaco`negate")
        .map(|i| i + saxpy_at)
        .unwrap_or_else(|| panic!("then a wave stops in negate:\n{ctx}"));
    let (gfx908, gfx90a) = (&text[saxpy_at..negate_at], &text[negate_at..]);
    // v0 holds the work-item ids on both architectures (64 lanes).
    for part in [gfx908, gfx90a] {
        assert!(
            part.contains("v0 = {0 1 2 3 4 5 6 7 8 9 10"),
            "v0 read as 64 lanes of work-item ids:\n{part}\n{ctx}"
        );
    }
    // Each wave has its own architecture's VGPR allocation from the same
    // kernel descriptor field (GRANULATED_WORKITEM_VGPR_COUNT 0 for both
    // kernels, which need at most 4): 4 registers on gfx908 (granule 4),
    // 8 on gfx90a (granule 8). So v4 is a register of the gfx90a wave only.
    assert!(gfx908.contains("v3 = {"), "v3 allocated on gfx908:\n{ctx}");
    let v4 = gfx908
        .lines()
        .skip_while(|l| !l.contains("register read v4"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        v4.contains("v4") && v4.contains("unavailable"),
        "v4 is not allocated in the gfx908 wave:\n{v4}\n{ctx}"
    );
    assert!(gfx90a.contains("v4 = {"), "v4 allocated on gfx90a:\n{ctx}");
    assert!(
        gfx908
            .lines()
            .any(|l| l.contains("stop=(breakpoint)") && l.ends_with("(gfx908)")),
        "the saxpy waves' agent:\n{ctx}"
    );
    assert!(
        gfx90a
            .lines()
            .any(|l| l.contains("stop=(breakpoint)") && l.ends_with("(gfx90a)")),
        "the negate wave's agent:\n{ctx}"
    );
    assert!(text.contains("exited with status = 0"), "{ctx}");
    server.wait_log("[inferior] host: PASS", 10);
}

#[test]
fn interactive_lldb_stops_on_both_architectures() {
    let env = GpuEnv::get();
    let (host, dir) = build("pty");
    let server = serve(&host, &dir);
    let args = env.lldb_connect_args(server.port, &host);
    let script = [
        (
            "process plugin packet monitor gpu",
            r"agent \d+: AMD Instinct MI100 \(simgpu, agent 0\) \(gfx908\)\nagent \d+: AMD Instinct MI210 \(simgpu\) \(gfx90a\)",
        ),
        ("breakpoint set -o true -n saxpy", "pending"),
        ("breakpoint set -o true -n negate", "pending"),
        (
            "process continue",
            r"stop reason = one-shot breakpoint.*saxpy\.hsaco`saxpy",
        ),
        ("register read v0 v3", r"v0 = \{0 1 2 3 .*\n.*v3 = \{"),
        ("register read v4", r"v4 .*= error: unavailable"),
        (
            "process continue",
            r"stop reason = one-shot breakpoint.*negate\.hsaco`negate",
        ),
        ("register read v0 v4", r"v0 = \{0 1 2 3 .*\n.*v4 = \{"),
        ("process continue", "exited with status = 0"),
    ];
    env.lldb_pty(&args, &script, &server);
    server.wait_log("[inferior] host: PASS", 10);
}
