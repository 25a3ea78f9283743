//! `rsp-bench --gpu-scale`: the GPU end to end through gdbmux (issue 15
//! item 4). The host program `fixtures/gpu_spin.c` launches the `spin`
//! kernel of `fixtures/gpu_spin.cl` on the simulated GPU with N waves that
//! stay resident; the bench drives gdbmux as lldb 23.1 does on the wire:
//! a CPU session in lldb's dialect stops the program once the runtime is
//! up, `jAcceleratorPluginInitialize` hands out the GPU offer, a second
//! connection claims it and becomes the GPU session. Then, with N waves
//! resident, it measures on the GPU session:
//!
//! - the wave list (`qfThreadInfo` + `qsThreadInfo` to the end), median and
//!   p99, while the waves run and once they are stopped, with its parts
//!   ([`ListParts`]), and the same list from a floor server
//!   ([`floor_list`]) beside it;
//! - stop-all: from the `\x03` that interrupts the GPU session to its stop
//!   reply, every wave stopped (checked: each wave's pc is readable), sent
//!   right after `vCont;c` (resume and stop) and, from running waves, after
//!   the resume was given time to be served, with the CPU time gdbmux's
//!   loop thread spent on that stop (its `schedstat`);
//! - `jThreadsInfo` with the expedited registers (pc, exec…) of every wave.
//!
//! Then, where stock lldb 23.1's Python module is installed, the same
//! program under lldb itself: lldb connects, the GPU target appears by
//! itself, both processes run, and with N waves resident the GPU process is
//! stopped (`SBProcess.Stop` to the stopped event) and `thread list` is
//! timed (checked: N waves listed).
//!
//! The loop thread's CPU time (its `schedstat`) is also printed per
//! `jThreadsInfo` and per wave list: on a shared machine it moves far less
//! than the wall-clock figures. The lldb run logs lldb's `gdb-remote
//! packets` during `thread list` and prints what it sent.
//!
//! Each figure is printed for every wave count asked for (`--gpu-waves
//! 1000,3000,10000`), then its per-wave cost growth between each pair of
//! consecutive counts and from the smallest to the largest (above ×1.25 is
//! flagged SUPER-LINEAR).

use std::io::Write as _;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::bail;
use anyhow::Context;
use anyhow::Result;

use super::nm;
use super::start_args;
use super::Args;
use super::Rsp;

/// lldb 23.1's `qSupported` (research/client-traces.md §4): gdbmux picks
/// lldb's dialect from it.
const LLDB_QSUPPORTED: &str = "qSupported:xmlRegisters=i386,arm,mips,arc;multiprocess+;fork-events+;vfork-events+;swbreak+;hwbreak+;qXfer:libraries:read+;qXfer:libraries-svr4:read+";

/// `jThreadsInfo` samples (the median is printed).
const JTI_SAMPLES: usize = 11;
/// How long a resume of every wave is given before the interrupt (the
/// resume has no reply to wait for; a benchmark figure, not a test).
const RESUME_SETTLE: Duration = Duration::from_millis(300);

/// lldb's Python driver for the GPU `thread list` figure: `python3 -c
/// DRIVER PORT PROG WAVES`. Prints `GPUSTOP s`, `GPULIST s count` and
/// `GPUPKTS n KIND=n…`, the packets lldb sent during `thread list` (from
/// its `gdb-remote packets` log).
const LLDB_DRIVER: &str = r#"
import os, sys, time, lldb
port, exe, waves = sys.argv[1], sys.argv[2], int(sys.argv[3])
dbg = lldb.SBDebugger.Create()
dbg.SetAsync(False)
ci = dbg.GetCommandInterpreter()
def run(c):
    r = lldb.SBCommandReturnObject()
    ci.HandleCommand(c, r)
    if not r.Succeeded():
        raise Exception(c + ": " + r.GetError())
    return r.GetOutput()
def wait(proc, state):
    ev = lldb.SBEvent()
    deadline = time.monotonic() + 120
    while proc.GetState() != state:
        if time.monotonic() > deadline:
            raise Exception("state %d not reached (%d)" % (state, proc.GetState()))
        dbg.GetListener().WaitForEvent(1, ev)
run("settings set stop-disassembly-display never")
cpu_t = dbg.CreateTarget(exe)
err = lldb.SBError()
cpu = cpu_t.ConnectRemote(dbg.GetListener(), "connect://127.0.0.1:" + port, "gdb-remote", err)
if not err.Success():
    raise Exception("connect: " + str(err))
cpu_t.BreakpointCreateByName("bench_gpu_ready")
cpu.Continue()
if dbg.GetNumTargets() != 2:
    raise Exception("no GPU target (%d targets)" % dbg.GetNumTargets())
gpu_t = dbg.GetTargetAtIndex(1)
gpu = gpu_t.GetProcess()
cpu_t.DeleteAllBreakpoints()
dbg.SetAsync(True)
gpu.Continue()
cpu.Continue()
wait(cpu, lldb.eStateRunning)
# Every wave is made resident at the launch; the first stop may come
# before the launch: stop, count, run on until all are listed.
for attempt in range(60):
    time.sleep(0.5)
    wait(gpu, lldb.eStateRunning)
    t = time.perf_counter()
    gpu.Stop()
    wait(gpu, lldb.eStateStopped)
    stop = time.perf_counter() - t
    dbg.SetSelectedTarget(gpu_t)
    dbg.SetAsync(False)
    log = "/tmp/gdbmux-bench-lldb-%d.log" % os.getpid()
    run("log enable -f " + log + " gdb-remote packets")
    t = time.perf_counter()
    out = run("thread list")
    took = time.perf_counter() - t
    run("log disable gdb-remote packets")
    # Packets lldb sent for the listing (the log starts with lldb's
    # packet history, lines marked "history[").
    kinds = {}
    for l in open(log, errors="replace"):
        if "send packet: $" in l and "history[" not in l:
            k = l.split("send packet: $", 1)[1][:12].split(":")[0].split(";")[0]
            kinds[k] = kinds.get(k, 0) + 1
    os.unlink(log)
    dbg.SetAsync(True)
    n = sum(1 for l in out.splitlines() if l.lstrip("* ").startswith("thread #"))
    if n >= waves:
        print("GPUSTOP", stop)
        print("GPULIST", took, n)
        print("GPUPKTS", sum(kinds.values()), " ".join("%s=%d" % kv for kv in sorted(kinds.items())) or "-")
        break
    gpu.Continue()
cpu.Kill()
"#;

/// `lldb thread list` of the GPU process with `waves` waves, and the
/// `SBProcess.Stop` before it (s): `None` when lldb's Python module is not
/// installed (the figure is then reported as not measured).
fn lldb_thread_list(
    gdbmux: &Path,
    fx: &GpuFixture,
    a: &Args,
    waves: usize,
) -> Result<Option<(f64, f64, String)>> {
    let have = Command::new("python3")
        .args(["-c", "import lldb"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        return Ok(None);
    }
    let args = [
        waves.to_string(),
        fx.hsaco.display().to_string(),
        "1".to_string(),
    ];
    let (mut child, port) = start_args("gdbmux", gdbmux, &a.gdbmux_args, &fx.prog, &args, &[])?;
    let out = Command::new("python3")
        .args(["-c", LLDB_DRIVER, &port.to_string()])
        .arg(&fx.prog)
        .arg(waves.to_string())
        .stdin(std::process::Stdio::null())
        .output();
    let _ = child.kill();
    let _ = child.wait();
    let out = out.context("running python3 with lldb")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let field = |k: &str, i: usize| -> Option<f64> {
        text.lines().find_map(|l| {
            l.strip_prefix(k)
                .and_then(|v| v.split_whitespace().nth(i))
                .and_then(|v| v.parse().ok())
        })
    };
    match (
        field("GPUSTOP ", 0),
        field("GPULIST ", 0),
        field("GPULIST ", 1),
    ) {
        (Some(stop), Some(list), Some(n)) if n as usize >= waves => {
            let pkts = text
                .lines()
                .find_map(|l| l.strip_prefix("GPUPKTS "))
                .unwrap_or("not logged")
                .to_string();
            Ok(Some((stop, list, pkts)))
        }
        _ => {
            let tail: String = text
                .chars()
                .rev()
                .take(1500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            bail!("lldb GPU thread list with {waves} waves: …{tail}")
        }
    }
}

/// The fixture: host program and code object.
pub struct GpuFixture {
    pub prog: PathBuf,
    pub hsaco: PathBuf,
}

/// Build `gpu_spin` (cc, against `libsimgpu_rt.so` next to gdbmux) and
/// `gpu_spin.hsaco` (clang-19), or take prebuilt ones.
pub fn fixture(a: &Args, root: &Path, out: &Path, gdbmux: &Path) -> Result<GpuFixture> {
    if let (Some(prog), Some(hsaco)) = (&a.gpu_prog, &a.gpu_hsaco) {
        return Ok(GpuFixture {
            prog: prog.clone(),
            hsaco: hsaco.clone(),
        });
    }
    let hsaco = out.join("gpu_spin.hsaco");
    let st = Command::new("clang-19")
        .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O1", "-g"])
        .args(["-nogpulib", "-cl-std=CL2.0", "-x", "cl", "-I"])
        .arg(root.join("../../samples/kernels"))
        .arg(root.join("fixtures/gpu_spin.cl"))
        .arg("-o")
        .arg(&hsaco)
        .status()
        .context("running clang-19 (or pass --gpu-prog and --gpu-hsaco)")?;
    if !st.success() {
        bail!("clang-19 failed on gpu_spin.cl");
    }
    let lib = gdbmux.parent().context("gdbmux has no directory")?;
    let prog = out.join("gpu_spin");
    let st = Command::new("cc")
        .args(["-g", "-O1", "-no-pie", "-I"])
        .arg(root.join("../../samples/include"))
        .arg(root.join("fixtures/gpu_spin.c"))
        .arg("-o")
        .arg(&prog)
        .arg(format!("-L{}", lib.display()))
        .arg("-lsimgpu_rt")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .context("running cc")?;
    if !st.success() {
        bail!("cc failed on gpu_spin.c");
    }
    Ok(GpuFixture { prog, hsaco })
}

impl Rsp {
    /// lldb 23.1's handshake: `+`, `QStartNoAckMode`, its `qSupported`,
    /// `QThreadSuffixSupported`, `QListThreadsInStopReply`, `?`.
    fn handshake_lldb(&mut self) -> Result<String> {
        self.s.write_all(b"+")?;
        if self.ask_s("QStartNoAckMode")? == "OK" {
            self.noack = true;
        }
        self.ask_s(LLDB_QSUPPORTED)?;
        self.ask_s("QThreadSuffixSupported")?;
        self.ask_s("QListThreadsInStopReply")?;
        self.ask_s("?")
    }

    /// Interrupt the running session: its stop reply. With `echo` the
    /// second stop reply gdbmux sends to lldb's dialect after an interrupt
    /// (as lldb reads it, `GDBRemoteClientBase::ShouldStop`) is read too.
    fn interrupt(&mut self, echo: bool) -> Result<String> {
        self.s.write_all(b"\x03")?;
        let stop = self.recv_stop()?;
        if echo && (stop.starts_with('T') || stop.starts_with('S')) {
            let again = self.recv()?;
            if !matches!(again.first(), Some(b'T' | b'S')) {
                bail!(
                    "the second stop reply to the interrupt: {}",
                    String::from_utf8_lossy(&again)
                );
            }
        }
        Ok(stop)
    }

    /// The next reply that is not console output (`O…`).
    fn recv_stop(&mut self) -> Result<String> {
        loop {
            let r = self.recv()?;
            if r.first() == Some(&b'O') && r.len() > 1 && r != b"OK" {
                continue;
            }
            return Ok(String::from_utf8_lossy(&r).into_owned());
        }
    }

    /// The whole thread list (`qfThreadInfo`, then `qsThreadInfo` until
    /// `l`): the number of threads.
    fn thread_count(&mut self) -> Result<usize> {
        Ok(self.list_threads(&mut Vec::new())?.0)
    }

    /// The whole thread list, each reply decoded into `buf` (reused, as a
    /// client keeps its packet buffer) and its checksum checked, every id
    /// counted: the number of threads, and the list's [`ListParts`].
    pub(super) fn list_threads(&mut self, buf: &mut Vec<u8>) -> Result<(usize, ListParts)> {
        let mut n = 0;
        let t0 = Instant::now();
        self.send(b"qfThreadInfo")?;
        self.recv_into(buf)?;
        let t1 = self.read_at;
        let mut t2 = None;
        loop {
            match buf.split_first() {
                Some((b'm', ids)) => n += super::count_byte(ids, b',') + 1,
                Some((b'l', _)) => {
                    let end = Instant::now();
                    let t2 = t2.unwrap_or(end);
                    let us = |a: Instant, b: Instant| b.duration_since(a).as_secs_f64() * 1e6;
                    let parts = ListParts {
                        first: us(t0, t1),
                        client: us(t1, t2),
                        rest: us(t2, end),
                    };
                    return Ok((n, parts));
                }
                _ => bail!("thread list: {}", String::from_utf8_lossy(buf)),
            }
            t2.get_or_insert_with(Instant::now);
            self.send(b"qsThreadInfo")?;
            self.recv_into(buf)?;
        }
    }
}

/// Where one wave list's time goes, as the client sees it (µs): the three
/// add up to the list's time.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListParts {
    /// `qfThreadInfo` sent → the `read` that completed the first reply
    /// returned: gdbmux's turn, the reply's way through loopback, and this
    /// client's wake-up.
    pub first: f64,
    /// That `read` → `qsThreadInfo` sent: this client's decoding, checksum
    /// and id count of the first reply.
    pub client: f64,
    /// `qsThreadInfo` sent → the `l` read and decoded: the second round
    /// trip (and any further `m` replies).
    pub rest: f64,
}

/// Figures for one wave count.
pub struct GpuFigures {
    pub waves: usize,
    /// Wave list while the waves run: median, p99 (µs).
    pub list_running: (f64, f64),
    /// Wave list with every wave stopped: median, p99 (µs).
    pub list_stopped: (f64, f64),
    /// `\x03` to the stop reply, sent right after `vCont;c` (ms).
    pub stop_all_ms: f64,
    /// `\x03` to the stop reply, the resume served first (ms).
    pub stop_running_ms: f64,
    /// CPU time of gdbmux's loop thread over that stop-all (ms): what the
    /// stop costs the server, whatever else the machine runs.
    pub stop_running_cpu_ms: f64,
    /// `jThreadsInfo`, median (ms), and its size (bytes).
    pub jti_ms: f64,
    /// CPU time of gdbmux's loop thread per `jThreadsInfo`, median (ms).
    pub jti_cpu_ms: f64,
    /// CPU time of gdbmux's loop thread per wave list, mean over the
    /// samples, running and stopped (µs).
    pub list_cpu_us: (f64, f64),
    /// The wave list's parts ([`ListParts`]: first reply, client, rest),
    /// median and p99 of each (µs), running and stopped.
    pub list_parts: [PartQuantiles; 2],
    pub jti_bytes: usize,
    /// lldb: `SBProcess.Stop` of the GPU process, then `thread list` (ms;
    /// NaN when not measured).
    pub lldb_stop_ms: f64,
    pub lldb_list_ms: f64,
    /// The packets lldb sent during that `thread list` (count, by kind).
    pub lldb_list_packets: String,
}

fn quantiles(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(|x, y| x.total_cmp(y));
    let p99 = ((v.len() * 99).div_ceil(100)).clamp(1, v.len()) - 1;
    (v[v.len() / 2], v[p99])
}

/// Median and p99 (µs) of each [`ListParts`] field: first reply, client,
/// rest.
pub type PartQuantiles = [(f64, f64); 3];

/// Wave list figures: (median, p99) wall-clock µs, the loop thread's mean
/// CPU µs per listing, and the parts' quantiles.
fn timed_list(
    g: &mut Rsp,
    n: usize,
    expect: usize,
    pid: u32,
) -> Result<((f64, f64), f64, PartQuantiles)> {
    let mut v = Vec::with_capacity(n);
    let mut parts: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(n));
    let mut buf = Vec::new();
    let c0 = thread_cpu_ns(pid, pid)?;
    for _ in 0..n {
        let t = Instant::now();
        let (got, p) = g.list_threads(&mut buf)?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
        if got != expect {
            bail!("wave list: {got} waves, expected {expect}");
        }
        for (q, x) in parts.iter_mut().zip([p.first, p.client, p.rest]) {
            q.push(x);
        }
    }
    let cpu = thread_cpu_ns(pid, pid)?.saturating_sub(c0) as f64 / 1e3 / n as f64;
    Ok((quantiles(v), cpu, parts.map(quantiles)))
}

/// `connect://HOST:PORT` of the Initialize reply's offer.
fn offer_port(init: &[u8]) -> Result<u16> {
    let v: serde_json::Value =
        serde_json::from_slice(init).context("jAcceleratorPluginInitialize reply")?;
    let url = v
        .get(0)
        .and_then(|a| a.get("connect_info"))
        .and_then(|c| c.get("connect_url"))
        .and_then(|u| u.as_str())
        .with_context(|| {
            format!(
                "no GPU offer in the Initialize reply: {}",
                String::from_utf8_lossy(init)
            )
        })?;
    url.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("offer URL {url}"))
}

/// One gdbmux, one program with `waves` waves: the figures.
pub fn measure(gdbmux: &Path, fx: &GpuFixture, a: &Args, waves: usize) -> Result<GpuFigures> {
    let args = [
        waves.to_string(),
        fx.hsaco.display().to_string(),
        "1".to_string(),
    ];
    // The baseline may predate the interrupt echo as the default, and
    // takes `--lldb-interrupt-echo` as the current build does: both echo,
    // unless the run turns it off, and the client reads the echo.
    let echo = !a
        .gdbmux_args
        .split_whitespace()
        .any(|w| w == "--no-lldb-interrupt-echo");
    let extra = if echo {
        format!("--lldb-interrupt-echo {}", a.gdbmux_args)
    } else {
        a.gdbmux_args.clone()
    };
    let (mut child, port) = start_args("gdbmux", gdbmux, &extra, &fx.prog, &args, &[])?;
    let r = measure_on(port, fx, waves, child.id(), a, echo);
    let _ = child.kill();
    let _ = child.wait();
    let mut r = r?;
    match lldb_thread_list(gdbmux, fx, a, waves) {
        Ok(Some((stop, list, pkts))) => {
            r.lldb_stop_ms = stop * 1e3;
            r.lldb_list_ms = list * 1e3;
            r.lldb_list_packets = pkts;
        }
        Ok(None) => eprintln!("  lldb's Python module not found: no lldb `thread list` figure"),
        Err(e) => eprintln!("  {e:#}"),
    }
    Ok(r)
}

/// Nanoseconds on a CPU of thread `tid` of `pid` so far (the first field
/// of `/proc/PID/task/TID/schedstat`); the loop thread is the main one.
fn thread_cpu_ns(pid: u32, tid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/task/{tid}/schedstat");
    let text = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("{path}: {text}"))
}

fn measure_on(
    port: u16,
    fx: &GpuFixture,
    waves: usize,
    pid: u32,
    a: &Args,
    echo: bool,
) -> Result<GpuFigures> {
    let stop_cycles = a.gpu_stop_cycles.max(1);
    let list_samples = a.gpu_list_samples.max(1);
    let mut cpu = Rsp::connect(port)?;
    cpu.handshake_lldb()?;
    let ready = nm(&fx.prog, "bench_gpu_ready")?;
    cpu.ask_s(&format!("Z0,{ready:x},1"))?;
    cpu.send(b"vCont;c")?;
    let s = cpu.recv_stop()?;
    if !s.starts_with('T') {
        bail!("expected the stop at bench_gpu_ready, got {s}");
    }
    cpu.ask_s(&format!("z0,{ready:x},1"))?;
    let init = cpu.ask("jAcceleratorPluginInitialize")?;
    let gport = offer_port(&init)?;
    let mut g = Rsp::connect(gport)?;
    g.handshake_lldb()?;
    // The CPU runs on into the launch; the waves come up.
    cpu.send(b"vCont;c")?;
    let t = Instant::now();
    loop {
        if g.thread_count()? >= waves {
            break;
        }
        if t.elapsed() > Duration::from_secs(120) {
            bail!("{waves} waves did not become resident within 120 s");
        }
    }
    let (list_running, list_running_cpu, parts_running) =
        timed_list(&mut g, list_samples, waves, pid)?;

    // Stop-all: resume the GPU session and interrupt it at once. gdbmux
    // serves the resume before it reads the interrupt, so the figure is an
    // upper bound (it may include part of the resume).
    g.send(b"vCont;c")?;
    let t = Instant::now();
    let stop = g.interrupt(echo)?;
    let stop_all_ms = t.elapsed().as_secs_f64() * 1e3;
    if !stop.starts_with('T') && !stop.starts_with('S') {
        bail!("GPU interrupt: {stop}");
    }

    // jThreadsInfo with expedited registers; every wave must show its pc.
    let mut jti = Vec::new();
    let mut jti_cpu = Vec::new();
    let mut jti_bytes = 0;
    for _ in 0..JTI_SAMPLES {
        let c = thread_cpu_ns(pid, pid)?;
        let t = Instant::now();
        let r = g.ask("jThreadsInfo")?;
        jti.push(t.elapsed().as_secs_f64() * 1e3);
        jti_cpu.push(thread_cpu_ns(pid, pid)?.saturating_sub(c) as f64 / 1e6);
        jti_bytes = r.len();
        let v: serde_json::Value = serde_json::from_slice(&r).with_context(|| {
            format!(
                "jThreadsInfo reply: {}",
                String::from_utf8_lossy(&r[..r.len().min(200)])
            )
        })?;
        let list = v.as_array().context("jThreadsInfo is no array")?;
        let with_regs = list
            .iter()
            .filter(|t| {
                t.get("registers")
                    .and_then(|r| r.as_object())
                    .is_some_and(|r| !r.is_empty())
            })
            .count();
        if list.len() != waves || with_regs != waves {
            bail!(
                "jThreadsInfo: {} threads, {with_regs} with registers, expected {waves}",
                list.len()
            );
        }
    }
    let jti_ms = quantiles(jti).0;
    let jti_cpu_ms = quantiles(jti_cpu).0;
    let (list_stopped, list_stopped_cpu, parts_stopped) =
        timed_list(&mut g, list_samples, waves, pid)?;

    // Stop-all of waves that run: resume every stopped wave, give the
    // resume time to be served (nothing on the wire says when it was), then
    // interrupt. `--gpu-stop-cycles` cycles (3), the median.
    let mut stops = Vec::new();
    let mut stop_cpu = Vec::new();
    for _ in 0..stop_cycles {
        g.send(b"vCont;c")?;
        std::thread::sleep(RESUME_SETTLE);
        let c = thread_cpu_ns(pid, pid)?;
        let t = Instant::now();
        let stop = g.interrupt(echo)?;
        stops.push(t.elapsed().as_secs_f64() * 1e3);
        stop_cpu.push(thread_cpu_ns(pid, pid)?.saturating_sub(c) as f64 / 1e6);
        if !stop.starts_with('T') && !stop.starts_with('S') {
            bail!("GPU interrupt: {stop}");
        }
    }
    let stop_running_ms = quantiles(stops).0;
    let stop_running_cpu_ms = quantiles(stop_cpu).0;

    // End: stop the CPU and kill the program through the stub.
    let _ = cpu.interrupt(echo);
    let _ = cpu.send(b"k");
    let _ = cpu.recv();
    Ok(GpuFigures {
        waves,
        list_running,
        list_stopped,
        stop_all_ms,
        stop_running_ms,
        stop_running_cpu_ms,
        jti_ms,
        jti_cpu_ms,
        list_cpu_us: (list_running_cpu, list_stopped_cpu),
        list_parts: [parts_running, parts_stopped],
        jti_bytes,
        lldb_stop_ms: f64::NAN,
        lldb_list_ms: f64::NAN,
        lldb_list_packets: String::new(),
    })
}

/// `--gpu-scale`: rounds over the wave counts, medians, the table and the
/// scaling lines.
pub fn mode(a: &Args, root: &Path, out: &Path, gdbmux: &Path) -> Result<()> {
    let fx = fixture(a, root, out, gdbmux)?;
    let counts = if a.gpu_waves.is_empty() {
        vec![1000, 10000]
    } else {
        a.gpu_waves.clone()
    };
    // `--baseline`: the earlier build runs in the same rounds, alternating
    // with gdbmux (which goes first alternates too), so both see the
    // machine in the same state.
    let mut bins: Vec<(&str, &Path)> = vec![("gdbmux", gdbmux)];
    if let Some(b) = &a.baseline {
        bins.push(("gdbmux-baseline", b.as_path()));
    }
    let mut runs: Vec<Vec<Vec<GpuFigures>>> = bins
        .iter()
        .map(|_| counts.iter().map(|_| Vec::new()).collect())
        .collect();
    let mut floors: Vec<Vec<FloorList>> = counts.iter().map(|_| Vec::new()).collect();
    for round in 0..a.rounds.max(1) {
        for (i, n) in counts.iter().enumerate() {
            for k in 0..bins.len() {
                let b = (k + round) % bins.len();
                let (name, bin) = bins[b];
                eprintln!("round {} : {name}, {n} GPU waves …", round + 1);
                match measure(bin, &fx, a, *n) {
                    Ok(f) => runs[b][i].push(f),
                    Err(e) => eprintln!("  {name}, {n} waves: {e:#}"),
                }
            }
            eprintln!("round {} : floor server, a list of {n} ids …", round + 1);
            match floor_list(gdbmux, &fx, a, *n) {
                Ok(f) => floors[i].push(f),
                Err(e) => eprintln!("  floor server, {n} ids: {e:#}"),
            }
        }
    }
    let reports: Vec<Vec<GpuFigures>> = runs.into_iter().map(medians).collect();
    for ((name, _), rows) in bins.iter().zip(&reports) {
        report(name, rows, a)?;
    }
    if let [new, base] = reports.as_slice() {
        ab_table(new, base);
    }
    floor_table(&counts, floors);
    Ok(())
}

/// The floor server's wave list ([`floor_list`]).
struct FloorList {
    /// Median and p99 (µs).
    list: (f64, f64),
    /// The floor server's CPU per list (µs).
    cpu: f64,
    parts: PartQuantiles,
}

/// The wave list from the floor server (`rsp-bench --echo-server 0
/// --echo-list N`: blocking reads and writes, the list of `waves` ids
/// framed once at its start, `l` for `qsThreadInfo`), timed by the same
/// client as gdbmux's: what the list costs with no server work but its
/// two reads and writes, the kernel's loopback and this client.
fn floor_list(gdbmux: &Path, fx: &GpuFixture, a: &Args, waves: usize) -> Result<FloorList> {
    let args = ["--echo-list".to_string(), waves.to_string()];
    let (mut child, port) = start_args("floor", gdbmux, "", &fx.prog, &args, &[])?;
    let r = (|| -> Result<FloorList> {
        let mut c = Rsp::connect(port)?;
        c.noack = true;
        // Warm the connection as gdbmux's lists are (it has served many).
        for _ in 0..20 {
            c.thread_count()?;
        }
        let (list, cpu, parts) = timed_list(&mut c, a.gpu_list_samples.max(1), waves, child.id())?;
        Ok(FloorList { list, cpu, parts })
    })();
    let _ = child.kill();
    let _ = child.wait();
    r
}

/// The floor server's wave-list figures per wave count, medians over the
/// rounds.
fn floor_table(counts: &[usize], floors: Vec<Vec<FloorList>>) {
    let med = |v: Vec<f64>| quantiles(v).0;
    println!();
    println!(
        "Floor server's wave list (blocking read and write, the reply framed once; the same \
         client), medians over the rounds, µs"
    );
    println!("| ids | median | p99 | server CPU per list | first reply median / p99 | client median / p99 | qsThreadInfo round trip median / p99 |");
    println!("|---|---|---|---|---|---|---|");
    for (n, f) in counts.iter().zip(floors) {
        if f.is_empty() {
            continue;
        }
        let part = |k: usize| {
            (
                med(f.iter().map(|x| x.parts[k].0).collect()),
                med(f.iter().map(|x| x.parts[k].1).collect()),
            )
        };
        let (p0, p1, p2) = (part(0), part(1), part(2));
        println!(
            "| {n} | {:.1} | {:.1} | {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} |",
            med(f.iter().map(|x| x.list.0).collect()),
            med(f.iter().map(|x| x.list.1).collect()),
            med(f.iter().map(|x| x.cpu).collect()),
            p0.0,
            p0.1,
            p1.0,
            p1.1,
            p2.0,
            p2.1
        );
    }
}

/// Each wave count's figures, the median over its rounds.
fn medians(runs: Vec<Vec<GpuFigures>>) -> Vec<GpuFigures> {
    let med = |v: Vec<f64>| quantiles(v).0;
    runs.iter()
        .filter(|v| !v.is_empty())
        .map(|v| GpuFigures {
            waves: v[0].waves,
            list_running: (
                med(v.iter().map(|f| f.list_running.0).collect()),
                med(v.iter().map(|f| f.list_running.1).collect()),
            ),
            list_stopped: (
                med(v.iter().map(|f| f.list_stopped.0).collect()),
                med(v.iter().map(|f| f.list_stopped.1).collect()),
            ),
            stop_all_ms: med(v.iter().map(|f| f.stop_all_ms).collect()),
            stop_running_ms: med(v.iter().map(|f| f.stop_running_ms).collect()),
            stop_running_cpu_ms: med(v.iter().map(|f| f.stop_running_cpu_ms).collect()),
            jti_ms: med(v.iter().map(|f| f.jti_ms).collect()),
            jti_cpu_ms: med(v.iter().map(|f| f.jti_cpu_ms).collect()),
            list_cpu_us: (
                med(v.iter().map(|f| f.list_cpu_us.0).collect()),
                med(v.iter().map(|f| f.list_cpu_us.1).collect()),
            ),
            list_parts: std::array::from_fn(|state| {
                std::array::from_fn(|part| {
                    (
                        med(v.iter().map(|f| f.list_parts[state][part].0).collect()),
                        med(v.iter().map(|f| f.list_parts[state][part].1).collect()),
                    )
                })
            }),
            jti_bytes: v[0].jti_bytes,
            lldb_stop_ms: med(v
                .iter()
                .map(|f| f.lldb_stop_ms)
                .filter(|x| !x.is_nan())
                .collect()),
            lldb_list_ms: med(v
                .iter()
                .map(|f| f.lldb_list_ms)
                .filter(|x| !x.is_nan())
                .collect()),
            lldb_list_packets: v
                .iter()
                .map(|f| f.lldb_list_packets.as_str())
                .find(|p| !p.is_empty())
                .unwrap_or("")
                .to_string(),
        })
        .collect()
}

/// The figures of one binary: the table, the growth per wave, the scaling
/// lines.
fn report(name: &str, rows: &[GpuFigures], a: &Args) -> Result<()> {
    println!();
    let title = if name == "gdbmux" {
        String::new()
    } else {
        format!(" ({name})")
    };
    println!(
        "GPU scale through gdbmux{title} (simulated gfx90a), medians of {} rounds",
        a.rounds.max(1)
    );
    println!("| figure | {} | target (10,000 waves) |", {
        rows.iter()
            .map(|r| format!("{} waves", r.waves))
            .collect::<Vec<_>>()
            .join(" | ")
    });
    println!("|---|{}---|", "---|".repeat(rows.len()));
    let table = &TABLE;
    print_rows(rows, table);
    if let Some(r) = rows.last() {
        println!(
            "- jThreadsInfo reply for {} waves: {} bytes",
            r.waves, r.jti_bytes
        );
    }
    for r in rows {
        for (state, q) in ["running", "stopped"].iter().zip(&r.list_parts) {
            println!(
                "- wave list of {} waves, {state}, median / p99 (µs): first reply {:.1} / {:.1}, \
                 client {:.1} / {:.1}, qsThreadInfo round trip {:.1} / {:.1}",
                r.waves, q[0].0, q[0].1, q[1].0, q[1].1, q[2].0, q[2].1
            );
        }
    }
    for r in rows.iter().filter(|r| !r.lldb_list_packets.is_empty()) {
        println!(
            "- packets lldb sent during `thread list` of {} waves: {}",
            r.waves, r.lldb_list_packets
        );
    }
    growth_table(rows, table);
    if let (Some(lo), Some(hi)) = (rows.first(), rows.last()) {
        if hi.waves > lo.waves {
            for (name, get, _) in table {
                super::scaling_line(
                    &format!("GPU {name}"),
                    "wave",
                    lo.waves as f64,
                    get(lo),
                    hi.waves as f64,
                    get(hi),
                );
            }
        }
    }
    Ok(())
}

/// The table's rows: name, figure, target at 10,000 waves.
const TABLE: [Row<'static>; 13] = [
    (
        "lldb 23.1 `thread list` of the stopped GPU process (ms)",
        |f| f.lldb_list_ms,
        "< 1000",
    ),
    (
        "lldb 23.1 `SBProcess.Stop` of the running GPU process (ms)",
        |f| f.lldb_stop_ms,
        "-",
    ),
    (
        "jThreadsInfo, registers expedited (ms)",
        |f| f.jti_ms,
        "< 50",
    ),
    (
        "gdbmux loop thread CPU per jThreadsInfo (ms)",
        |f| f.jti_cpu_ms,
        "-",
    ),
    (
        "stop-all of running waves, \\x03 to the stop reply (ms)",
        |f| f.stop_running_ms,
        "< 10",
    ),
    (
        "gdbmux loop thread CPU in that stop-all (ms)",
        |f| f.stop_running_cpu_ms,
        "-",
    ),
    (
        "resume + stop-all, \\x03 right after vCont;c (ms)",
        |f| f.stop_all_ms,
        "-",
    ),
    (
        "wave list (qfThreadInfo…), running, median (µs)",
        |f| f.list_running.0,
        "-",
    ),
    (
        "wave list, running, p99 (µs)",
        |f| f.list_running.1,
        "< 100",
    ),
    (
        "gdbmux loop thread CPU per wave list, running (µs)",
        |f| f.list_cpu_us.0,
        "-",
    ),
    ("wave list, stopped, median (µs)", |f| f.list_stopped.0, "-"),
    (
        "wave list, stopped, p99 (µs)",
        |f| f.list_stopped.1,
        "< 100",
    ),
    (
        "gdbmux loop thread CPU per wave list, stopped (µs)",
        |f| f.list_cpu_us.1,
        "-",
    ),
];

fn print_rows(rows: &[GpuFigures], table: &[Row]) {
    for (name, get, target) in table {
        println!(
            "| {name} | {} | {target} |",
            rows.iter()
                .map(|r| format!("{:.1}", get(r)))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
}

/// `--baseline`: each figure of the baseline and of gdbmux side by side
/// (same rounds, alternating), with gdbmux ÷ baseline.
fn ab_table(new: &[GpuFigures], base: &[GpuFigures]) {
    println!();
    println!("A/B, same rounds: baseline → gdbmux (gdbmux ÷ baseline)");
    println!(
        "| figure | {} |",
        new.iter()
            .map(|r| format!("{} waves", r.waves))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(new.len()));
    for (name, get, _) in &TABLE {
        let cells: Vec<String> = new
            .iter()
            .map(|n| match base.iter().find(|b| b.waves == n.waves) {
                Some(b) => format!("{:.1} → {:.1} (×{:.2})", get(b), get(n), get(n) / get(b)),
                None => format!("- → {:.1}", get(n)),
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}

/// Per-wave cost growth between each pair of consecutive wave counts, for
/// every figure: (figure ÷ waves at the larger count) ÷ (figure ÷ waves at
/// the smaller one). 1.0 is linear; above [`SUPER_LINEAR`] is flagged.
/// A table row: figure name, how to get it, target.
type Row<'a> = (&'a str, fn(&GpuFigures) -> f64, &'a str);

fn growth_table(rows: &[GpuFigures], table: &[Row]) {
    if rows.len() < 2 {
        return;
    }
    let pairs: Vec<(&GpuFigures, &GpuFigures)> = rows.iter().zip(rows.iter().skip(1)).collect();
    println!();
    println!("Per-wave cost growth between consecutive wave counts (1.00 = linear; above ×{SUPER_LINEAR:.2}: SUPER-LINEAR)");
    println!(
        "| figure | {} |",
        pairs
            .iter()
            .map(|(a, b)| format!("{} → {} waves", a.waves, b.waves))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(pairs.len()));
    for (name, get, _) in table {
        let cells: Vec<String> = pairs
            .iter()
            .map(|(a, b)| {
                let g = growth(a.waves, get(a), b.waves, get(b));
                if g.is_nan() {
                    "-".to_string()
                } else if g > SUPER_LINEAR {
                    format!("×{g:.2} SUPER-LINEAR")
                } else {
                    format!("×{g:.2}")
                }
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}

/// Growth above which a per-wave cost counts as super-linear (noise on a
/// shared machine stays below it for linear figures).
const SUPER_LINEAR: f64 = 1.25;

/// Per-wave cost at `n1` over the one at `n0` (NaN when either is not a
/// measured, positive figure).
fn growth(n0: usize, v0: f64, n1: usize, v1: f64) -> f64 {
    if !(v0 > 0.0 && v1 > 0.0) || n0 == 0 || n1 == 0 {
        return f64::NAN;
    }
    (v1 / n1 as f64) / (v0 / n0 as f64)
}

#[cfg(test)]
mod tests {
    use super::growth;

    #[test]
    fn growth_is_per_wave_cost_ratio() {
        assert!((growth(1000, 10.0, 10000, 100.0) - 1.0).abs() < 1e-12);
        assert!((growth(1000, 10.0, 3000, 60.0) - 2.0).abs() < 1e-12);
        assert!(growth(1000, f64::NAN, 3000, 1.0).is_nan());
        assert!(growth(1000, 0.0, 3000, 1.0).is_nan());
    }
}
