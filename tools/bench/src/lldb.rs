//! `rsp-bench --lldb-threads`: stock lldb 23.1 against each stub with a
//! program of N threads (`fixtures/threads.c`, every thread blocked in a
//! `read`): lldb stops at `threads_ready` (all N threads exist), then the
//! bench times `thread list`, a stop of all N threads from running
//! (`SBProcess.Stop` to the stopped event) and `thread list` again after
//! that stop. Driven through lldb's Python API inside `lldb -b`, timed with
//! `perf_counter`; the number of threads listed is checked. lldb's own CPU
//! time over each `thread list` (`process_time`) is printed beside it: with
//! gdbmux lldb sends no packet during the listing (every stack read is in
//! `jThreadsInfo`), so the listing is all lldb CPU, and on a machine whose
//! CPUs are busy with other work it gets a share of a CPU, while with
//! lldb-server it sleeps on a thousand `x` round trips and is woken ahead
//! of CPU-bound tasks: the wall-clock ratio then measures the scheduler,
//! the CPU row what lldb did.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;

use anyhow::bail;
use anyhow::Context;
use anyhow::Result;

use super::median;
use super::start_args;
use super::Args;

/// Build the fixture (gcc), or take `--threads-prog`.
pub fn fixture(a: &Args, root: &Path, out: &Path) -> Result<PathBuf> {
    if let Some(p) = &a.threads_prog {
        return Ok(p.clone());
    }
    let prog = out.join("threads");
    let st = Command::new("gcc")
        .args(["-g", "-O0", "-no-pie", "-pthread", "-o"])
        .arg(&prog)
        .arg(root.join("fixtures/threads.c"))
        .status()
        .context("running gcc (or pass --threads-prog)")?;
    if !st.success() {
        bail!("gcc failed on threads.c");
    }
    Ok(prog)
}

/// The lldb Python driver, run once lldb is stopped at `threads_ready`.
const DRIVER: &str = r#"
import lldb, time
dbg = lldb.debugger
ci = dbg.GetCommandInterpreter()
def run(cmd):
    r = lldb.SBCommandReturnObject()
    ci.HandleCommand(cmd, r)
    if not r.Succeeded():
        raise Exception(cmd + ": " + r.GetError())
    return r.GetOutput()
def listed(text):
    return sum(1 for l in text.splitlines() if l.lstrip("* ").startswith("thread #"))
def named(text):
    # Frames lldb could name (`module`function`): a stub that gives lldb no
    # library list leaves the other threads' frames as bare addresses.
    return sum(1 for l in text.splitlines() if l.lstrip("* ").startswith("thread #") and "`" in l)
t = time.perf_counter(); c = time.process_time()
out = run("thread list")
print("LIST", time.perf_counter() - t, listed(out), named(out), time.process_time() - c)
proc = dbg.GetSelectedTarget().GetProcess()
listener = lldb.SBListener("rsp-bench")
proc.GetBroadcaster().AddListener(listener, lldb.SBProcess.eBroadcastBitStateChanged)
def wait_state(want):
    ev = lldb.SBEvent()
    while listener.WaitForEvent(60, ev):
        if lldb.SBProcess.EventIsProcessEvent(ev) and lldb.SBProcess.GetStateFromEvent(ev) == want:
            return True
    return False
# The breakpoint at threads_ready is disabled first: continuing from it
# would step the main thread over it alone before resuming all threads,
# and a stop requested during that step finds the other threads still
# stopped (no stop of all at all; whether it came in time was a race).
# The 0.3 s after the running event let the stub resume every thread.
run("breakpoint disable")
dbg.SetAsync(True)
proc.Continue()
if not wait_state(lldb.eStateRunning):
    raise Exception("no running event")
time.sleep(0.3)
t = time.perf_counter()
proc.Stop()
if not wait_state(lldb.eStateStopped):
    raise Exception("no stopped event")
print("STOPALL", time.perf_counter() - t)
dbg.SetAsync(False)
t = time.perf_counter(); c = time.process_time()
out = run("thread list")
print("LIST2", time.perf_counter() - t, listed(out), named(out), time.process_time() - c)
proc.Kill()
"#;

/// One lldb session against `stub`: [set-up, thread list, stop-all,
/// thread list after the stop] in seconds, then the number of threads
/// whose frame lldb named (`module`function`) in each listing, then lldb's
/// CPU seconds in each listing.
pub fn session(stub: &str, gdbmux: &Path, prog: &Path, a: &Args, n: usize) -> Result<[f64; 8]> {
    let (mut child, port) = start_args(
        stub,
        super::binary_for(stub, gdbmux, a),
        &a.gdbmux_args,
        prog,
        &[n.to_string()],
        &[],
    )?;
    let script = DRIVER;
    let file = std::env::temp_dir().join(format!("gdbmux-bench-{}.py", std::process::id()));
    std::fs::write(&file, script)?;
    // Connecting and the first stop from lldb's command line (its Python
    // `HandleCommand("gdb-remote …")` leaves no selected target behind).
    let out = Command::new("lldb")
        .args(["-b", "--no-lldbinit"])
        .args(["-o", &format!("target create {}", prog.display())])
        .args(["-o", "script import time; t0 = time.perf_counter()"])
        .args(["-o", &format!("gdb-remote 127.0.0.1:{port}")])
        .args(["-o", "breakpoint set -n threads_ready"])
        .args(["-o", "process continue"])
        .args(["-o", "script print('SETUP', time.perf_counter() - t0)"])
        .arg("-o")
        .arg(format!("script exec(open('{}').read())", file.display()))
        .stdin(Stdio::null())
        .output();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&file);
    let out = out.context("running lldb")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let field = |k: &str, i: usize| -> Result<f64> {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(k)
                    .and_then(|v| v.split_whitespace().nth(i))
                    .and_then(|v| v.parse().ok())
            })
            .with_context(|| {
                let tail: String = text
                    .chars()
                    .rev()
                    .take(2000)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect();
                format!("lldb on {stub}: no {k} in its output: …{tail}")
            })
    };
    for k in ["LIST ", "LIST2 "] {
        let listed = field(k, 1)? as usize;
        if listed != n + 1 {
            bail!(
                "lldb on {stub}: `thread list` showed {listed} threads, expected {}",
                n + 1
            );
        }
    }
    Ok([
        field("SETUP ", 0)?,
        field("LIST ", 0)?,
        field("STOPALL ", 0)?,
        field("LIST2 ", 0)?,
        field("LIST ", 2)?,
        field("LIST2 ", 2)?,
        field("LIST ", 3)?,
        field("LIST2 ", 3)?,
    ])
}

/// Per stub: set-up, `thread list`, stop-all, `thread list` again (s).
type StubFigures<'a> = Vec<(&'a str, [f64; 8])>;

/// `--lldb-threads N,…`: lldb sessions against every stub for each thread
/// count, interleaved rounds, medians, ratios to the best peer (lower is
/// better), then how each figure grows with the thread count.
pub fn mode(stubs: &[&str], gdbmux: &Path, prog: &Path, a: &Args) -> Result<()> {
    let mut counts = a.lldb_threads.clone();
    counts.sort_unstable();
    let mut all: Vec<(usize, StubFigures)> = Vec::new();
    for &n in &counts {
        all.push((n, one_count(stubs, gdbmux, prog, a, n)));
    }
    let names = [
        ("gdb-remote + continue to the breakpoint", "-"),
        ("`thread list` at the breakpoint stop", "≤ 0.5"),
        ("stop of all threads (SBProcess.Stop to stopped)", "≤ 0.5"),
        ("`thread list` after that stop", "≤ 0.5"),
    ];
    for (n, med) in &all {
        println!(
            "stock lldb 23.1, {n} threads + main, medians of {} interleaved rounds (seconds)",
            a.rounds.max(1)
        );
        println!(
            "| figure | {} | gdbmux ÷ best peer | target |",
            med.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(" | ")
        );
        println!("|---|{}---|---|", "---|".repeat(med.len()));
        for (i, (name, target)) in names.iter().enumerate() {
            let (cells, ratio) = super::figure_cells(med, i);
            println!("| {name} | {cells} | {ratio} | {target} |");
        }
        for (i, name) in [
            (6, "lldb's CPU in `thread list` at the breakpoint stop"),
            (7, "lldb's CPU in `thread list` after that stop"),
        ] {
            let (cells, ratio) = super::figure_cells(med, i);
            println!("| {name} | {cells} | {ratio} | - |");
        }
        same_listing(med, &names);
    }
    if let (Some((n0, lo)), Some((n1, hi))) = (all.first(), all.last()) {
        if n1 > n0 {
            for (s, f0) in lo {
                let Some((_, f1)) = hi.iter().find(|(x, _)| x == s) else {
                    continue;
                };
                for (i, (name, _)) in names.iter().enumerate() {
                    super::scaling_line(
                        &format!("lldb, {s}, {name}"),
                        "thread",
                        *n0 as f64,
                        f0[i],
                        *n1 as f64,
                        f1[i],
                    );
                }
            }
        }
    }
    Ok(())
}

/// How many threads' frames lldb could name in each listing, per stub,
/// and gdbmux's ratios to the best peer whose listings named as many: a
/// stub that gives lldb no library list (gdbserver: lldb asks it for none)
/// gets a listing of bare addresses, which costs lldb far less than
/// symbolizing every frame with its arguments.
fn same_listing(med: &StubFigures, names: &[(&str, &str)]) {
    let named = |f: &[f64; 8]| format!("{:.0} / {:.0}", f[4], f[5]);
    println!(
        "threads whose frame lldb named (`thread list` at the breakpoint stop / after the stop): {}",
        med.iter()
            .map(|(s, f)| format!("{s} {}", named(f)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let Some((_, g)) = med.iter().find(|(s, _)| *s == "gdbmux") else {
        return;
    };
    let peers: Vec<&(&str, [f64; 8])> = med
        .iter()
        .filter(|(s, f)| !s.starts_with("gdbmux") && f[4] >= g[4] && f[5] >= g[5])
        .collect();
    if peers.is_empty() {
        println!("no peer named as many frames as gdbmux: no like-for-like ratio");
        return;
    }
    for (i, (name, target)) in names.iter().enumerate().skip(1) {
        let best = peers
            .iter()
            .map(|(_, f)| f[i])
            .fold(f64::INFINITY, f64::min);
        let who: Vec<&str> = peers
            .iter()
            .filter(|(_, f)| f[i] == best)
            .map(|(s, _)| *s)
            .collect();
        println!(
            "{name}: gdbmux ÷ best peer with the same listing ({}) {:.2} (target {target})",
            who.join(", "),
            g[i] / best
        );
    }
}

/// The medians of every stub for one thread count.
fn one_count<'a>(
    stubs: &[&'a str],
    gdbmux: &Path,
    prog: &Path,
    a: &Args,
    n: usize,
) -> StubFigures<'a> {
    let mut runs: Vec<(&str, Vec<[f64; 8]>)> = stubs.iter().map(|s| (*s, Vec::new())).collect();
    for round in 0..a.rounds.max(1) {
        for (s, v) in runs.iter_mut() {
            eprintln!("round {} : lldb against {s}, {n} threads …", round + 1);
            match session(s, gdbmux, prog, a, n) {
                Ok(f) => {
                    eprintln!(
                        "  {s}: set-up {:.3}, list {:.3} (lldb CPU {:.3}), stop-all {:.3}, list after {:.3} (lldb CPU {:.3})",
                        f[0], f[1], f[6], f[2], f[3], f[7]
                    );
                    v.push(f)
                }
                Err(e) => eprintln!("  {s}: {e:#}"),
            }
        }
    }
    runs.iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(s, v)| {
            (
                *s,
                [0, 1, 2, 3, 4, 5, 6, 7].map(|i| median(v.iter().map(|f| f[i]).collect())),
            )
        })
        .collect()
}

/// The lldb Python driver of `--clients`, run once lldb is stopped at the
/// first `bench_func` breakpoint: `thread step-inst` N times with the
/// breakpoint disabled (`SBThread.StepInstruction`, synchronous, as
/// `thread step-inst` and lldb's `si` alias do), then M breakpoint hits
/// through lldb's ignore count (lldb continues past each hit itself: one
/// stop round trip each, as gdb's `ignore`). The loop turns stepped
/// through and the hits are checked by the caller.
const CLIENT_DRIVER: &str = r#"
import lldb, time
dbg = lldb.debugger
dbg.SetAsync(False)
tgt = dbg.GetSelectedTarget()
proc = tgt.GetProcess()
th = proc.GetSelectedThread()
bp = tgt.GetBreakpointAtIndex(0)
def hits():
    return tgt.FindFirstGlobalVariable("g_hits").GetValueAsUnsigned()
print("MODULES", tgt.GetNumModules())
bp.SetEnabled(False)
h0 = hits()
t = time.perf_counter()
for _ in range(STEPS):
    th.StepInstruction(False)
print("STEPI", time.perf_counter() - t)
print("STEPLOOPS", hits() - h0)
bp.SetEnabled(True)
c0 = bp.GetHitCount()
bp.SetIgnoreCount(HITS)
t = time.perf_counter()
proc.Continue()
print("HITS", time.perf_counter() - t)
print("HITCOUNT", bp.GetHitCount() - c0)
proc.Kill()
"#;

/// One lldb session of `--clients` against `stub`: [set-up (`gdb-remote`
/// to the first `bench_func` stop), N `si`, M breakpoint hits] in seconds,
/// and the modules lldb had loaded at the first stop.
pub fn client_session(stub: &str, gdbmux: &Path, prog: &Path, a: &Args) -> Result<[f64; 4]> {
    let (mut child, port) = start_args(
        stub,
        super::binary_for(stub, gdbmux, a),
        &a.gdbmux_args,
        prog,
        &[],
        &[],
    )?;
    let script = CLIENT_DRIVER
        .replace("STEPS", &a.client_steps.to_string())
        .replace("(HITS)", &format!("({})", a.client_hits));
    let file = std::env::temp_dir().join(format!("gdbmux-bench-{}-c.py", std::process::id()));
    std::fs::write(&file, script)?;
    let out = Command::new("lldb")
        .args(["-b", "--no-lldbinit"])
        .args(["-o", &format!("target create {}", prog.display())])
        .args(["-o", "breakpoint set -n bench_func"])
        .args(["-o", "script import time; t0 = time.perf_counter()"])
        .args(["-o", &format!("gdb-remote 127.0.0.1:{port}")])
        .args(["-o", "process continue"])
        .args(["-o", "script print('SETUP', time.perf_counter() - t0)"])
        .arg("-o")
        .arg(format!("script exec(open('{}').read())", file.display()))
        .stdin(Stdio::null())
        .output();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&file);
    let out = out.context("running lldb")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let get = |k: &str| -> Result<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse().ok()))
            .with_context(|| {
                let tail: String = text
                    .chars()
                    .rev()
                    .take(2000)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("lldb on {stub}: no {k} in its output: …{tail}")
            })
    };
    // `thread step-inst` N times goes through the loop (about 13
    // instructions a turn) N/13 times: fewer means the steps did not run.
    let loops = get("STEPLOOPS ")?;
    if loops < (a.client_steps / 32) as f64 {
        bail!(
            "lldb on {stub}: {} `si` went through {loops} loop turns only",
            a.client_steps
        );
    }
    let hits = get("HITCOUNT ")?;
    if hits as usize != a.client_hits + 1 {
        bail!(
            "lldb on {stub}: {hits} breakpoint hits, expected {}",
            a.client_hits + 1
        );
    }
    Ok([
        get("SETUP ")?,
        get("STEPI ")?,
        get("HITS ")?,
        get("MODULES ")?,
    ])
}

/// `--clients`' lldb part: lldb sessions against every stub, interleaved
/// rounds, medians, ratios to the best peer. lldb asks gdbserver for no
/// library list (it loads the program alone: no `ld.so`, no libc), so its
/// set-up there is not the same work; the set-up ratio is also printed
/// against the best peer with which lldb had as many modules loaded.
pub fn clients(stubs: &[&str], gdbmux: &Path, prog: &Path, a: &Args) -> Result<()> {
    let mut runs: Vec<(&str, Vec<[f64; 4]>)> = stubs.iter().map(|s| (*s, Vec::new())).collect();
    for round in 0..a.rounds.max(1) {
        for (s, v) in runs.iter_mut() {
            eprintln!("round {} : lldb against {s} …", round + 1);
            match client_session(s, gdbmux, prog, a) {
                Ok(f) => {
                    eprintln!(
                        "  {s}: set-up {:.3} ({} modules), si {:.3}, hits {:.3}",
                        f[0], f[3], f[1], f[2]
                    );
                    v.push(f)
                }
                Err(e) => eprintln!("  {s}: {e:#}"),
            }
        }
    }
    let med: Vec<(&str, [f64; 4])> = runs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(s, v)| {
            (
                *s,
                [0, 1, 2, 3].map(|i| median(v.iter().map(|f| f[i]).collect())),
            )
        })
        .collect();
    println!(
        "stock lldb 23.1, medians of {} interleaved rounds (seconds)",
        a.rounds.max(1)
    );
    println!(
        "| figure | {} | gdbmux ÷ best peer | target |",
        med.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|{}---|---|", "---|".repeat(med.len()));
    for (i, label, target) in [
        (
            0,
            "session set-up to the first breakpoint".to_string(),
            "≤ 0.9",
        ),
        (1, format!("{} `si`", a.client_steps), "≤ 0.7"),
        (2, format!("{} breakpoint hits", a.client_hits), "≤ 0.6"),
        (3, "modules lldb loaded by the first stop".to_string(), "-"),
    ] {
        let (cells, mut ratio) = super::figure_cells(&med, i);
        if i == 3 {
            // A count, not a cost.
            ratio = "-".into();
        }
        println!("| {label} | {cells} | {ratio} | {target} |");
    }
    if let Some((_, g)) = med.iter().find(|(s, _)| *s == "gdbmux") {
        let same: Vec<&(&str, [f64; 4])> = med
            .iter()
            .filter(|(s, f)| !s.starts_with("gdbmux") && f[3] >= g[3])
            .collect();
        match same.iter().min_by(|x, y| x.1[0].total_cmp(&y.1[0])) {
            Some((s, f)) => println!(
                "set-up: gdbmux ÷ best peer with as many modules loaded ({s}) {:.2} (target ≤ 0.9)",
                g[0] / f[0]
            ),
            None => println!("set-up: no peer had as many modules loaded: no like-for-like ratio"),
        }
    }
    Ok(())
}
