//! `soak`: random client sessions against `gdbmux --multi`, then a leak
//! check of the server's open fds and resident memory.
//!
//! Each session connects, shakes hands as gdb or lldb, runs a random list of
//! operations (stop queries, registers, memory, breakpoints, steps,
//! continue + interrupt, target XML, host I/O, kill + re-run, a refused
//! second connection) and ends in a random way (clean close, a half-sent
//! packet, vanishing while the process runs, `k`). The fd count and RSS of
//! gdbmux are sampled after a warm-up and at the end, each time with one
//! client connected and the process stopped, and compared with thresholds.
#![forbid(unsafe_code)]

use std::io::BufRead;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use anyhow::anyhow;
use anyhow::bail;
use anyhow::Context;
use anyhow::Result;
use clap::Parser;
use protocol_tests::client::RspClient;
use protocol_tests::reply::StopReply;

mod evidence;
mod gpu;

#[derive(Debug, Parser)]
#[command(
    name = "soak",
    about = "Random client sessions against gdbmux --multi, then fd/RSS leak checks"
)]
struct Cli {
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 600)]
    secs: u64,
    /// The gdbmux binary (default: next to this executable).
    #[arg(long)]
    gdbmux: Option<PathBuf>,
    /// Program the sessions debug (launched with `vRun`).
    #[arg(long, default_value = "/bin/sleep")]
    program: String,
    /// Its argument.
    #[arg(long, default_value = "100000")]
    arg: String,
    /// Random seed (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Allowed growth of the fd count.
    #[arg(long, default_value_t = 2)]
    max_fd_growth: i64,
    /// Allowed RSS growth in KiB.
    #[arg(long, default_value_t = 16 * 1024)]
    max_rss_growth_kib: i64,
    /// GPU sessions instead: serve this program (`samples/reload_loop.c`
    /// built) with the simulated GPU, and drive its GPU as gdb does.
    #[arg(long)]
    gpu: Option<PathBuf>,
}

/// xorshift64*: enough randomness for picking operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default)]
struct Stats {
    sessions: u64,
    packets: u64,
    errors: u64,
}

struct Soak {
    addr: String,
    program: String,
    arg: String,
    rng: Rng,
    stats: Stats,
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// `QCp<pid>.<tid>` → pid.
fn pid_of_qc(reply: &str) -> Option<u64> {
    let rest = reply.strip_prefix("QCp")?;
    u64::from_str_radix(rest.split('.').next()?, 16).ok()
}

fn is_exit(raw: &[u8]) -> bool {
    matches!(
        StopReply::parse(raw),
        Ok(StopReply::Exited { .. } | StopReply::Terminated { .. })
    )
}

impl Soak {
    fn connect(&self) -> Result<RspClient> {
        let mut c = RspClient::connect(self.addr.as_str()).context("connecting to gdbmux")?;
        c.set_timeout(Duration::from_secs(10));
        Ok(c)
    }

    fn req(&mut self, c: &mut RspClient, p: &str) -> Result<Vec<u8>> {
        self.stats.packets += 1;
        c.request(p.as_bytes())
            .with_context(|| format!("request {p}"))
    }

    /// Handshake, extended mode, and make sure a stopped process exists.
    fn start_session(&mut self, c: &mut RspClient) -> Result<()> {
        if self.rng.below(2) == 0 {
            c.handshake_gdb()?;
        } else {
            c.handshake_lldb()?;
        }
        self.stats.packets += 3;
        self.req(c, "!")?;
        let q = self.req(c, "?")?;
        if is_exit(&q) || q == b"W00" {
            self.run_program(c)?;
        }
        Ok(())
    }

    fn run_program(&mut self, c: &mut RspClient) -> Result<()> {
        let p = format!(
            "vRun;{};{}",
            hex(self.program.as_bytes()),
            hex(self.arg.as_bytes())
        );
        let r = self.req(c, &p)?;
        match StopReply::parse(&r) {
            Ok(StopReply::Signal(_)) => Ok(()),
            _ => bail!("vRun answered {}", String::from_utf8_lossy(&r)),
        }
    }

    fn pc(&mut self, c: &mut RspClient) -> Result<u64> {
        // x86-64: gdb register 16 is rip.
        let r = self.req(c, "p10")?;
        let bytes: Vec<u8> = (0..r.len() / 2)
            .filter_map(|i| {
                let s = std::str::from_utf8(r.get(2 * i..2 * i + 2)?).ok()?;
                u8::from_str_radix(s, 16).ok()
            })
            .collect();
        let mut v = [0u8; 8];
        for (d, s) in v.iter_mut().zip(bytes.iter()) {
            *d = *s;
        }
        Ok(u64::from_le_bytes(v))
    }

    /// Wait for a stop; a process that ended is re-run.
    fn after_stop(&mut self, c: &mut RspClient, what: &str) -> Result<()> {
        let (stop, _) = c.wait_stop(what)?;
        if matches!(
            stop,
            StopReply::Exited { .. } | StopReply::Terminated { .. }
        ) {
            self.run_program(c)?;
        }
        Ok(())
    }

    /// One random operation. `Ok(false)`: the session ended.
    fn operation(&mut self, c: &mut RspClient) -> Result<bool> {
        let op = self.rng.below(14);
        self.op(c, op).with_context(|| format!("operation {op}"))
    }

    fn op(&mut self, c: &mut RspClient, op: u64) -> Result<bool> {
        match op {
            0 => {
                self.req(c, "?")?;
            }
            1 => {
                self.req(c, "g")?;
            }
            2 => {
                self.req(c, "qfThreadInfo")?;
                self.req(c, "qsThreadInfo")?;
            }
            3 => {
                let pc = self.pc(c)?;
                let n = 1 + self.rng.below(4096);
                self.req(c, &format!("m{pc:x},{n:x}"))?;
            }
            4 => {
                let pc = self.pc(c)?;
                self.req(c, &format!("Z0,{pc:x},1"))?;
                self.req(c, &format!("z0,{pc:x},1"))?;
            }
            5 => {
                self.stats.packets += 1;
                c.send_packet(b"vCont;s")?;
                // A step inside a blocking system call only ends with it:
                // interrupt (ignored when the step already stopped).
                c.interrupt()?;
                self.after_stop(c, "vCont;s")?;
            }
            6 => {
                self.stats.packets += 1;
                c.send_packet(b"vCont;c")?;
                c.interrupt()?;
                self.after_stop(c, "vCont;c + interrupt")?;
            }
            7 => {
                let off = self.rng.below(8192);
                self.req(c, &format!("qXfer:features:read:target.xml:{off:x},800"))?;
            }
            8 => {
                let open = format!("vFile:open:{},0,0", hex(self.program.as_bytes()));
                let r = String::from_utf8_lossy(&self.req(c, &open)?).into_owned();
                if let Some(fd) = r.strip_prefix('F').and_then(|s| s.split(';').next()) {
                    if !fd.starts_with('-') {
                        self.req(c, &format!("vFile:pread:{fd},1000,0"))?;
                        self.req(c, &format!("vFile:close:{fd}"))?;
                    }
                }
            }
            9 => {
                let qc = String::from_utf8_lossy(&self.req(c, "qC")?).into_owned();
                if let Some(pid) = pid_of_qc(&qc) {
                    self.req(c, &format!("vKill;{pid:x}"))?;
                }
                self.run_program(c)?;
            }
            10 => {
                // A second connection is refused; this one is untouched.
                let mut extra = self.connect()?;
                extra.send_ack()?;
                self.stats.packets += 1;
                let r = extra.request(b"qSupported")?;
                if !r.starts_with(b"E") {
                    bail!(
                        "extra connection was not refused: {}",
                        String::from_utf8_lossy(&r)
                    );
                }
            }
            11 => {
                // Vanish mid-packet.
                c.send_raw(b"$qSupported:multipro")?;
                return Ok(false);
            }
            12 => {
                // Vanish while the process runs.
                self.stats.packets += 1;
                c.send_packet(b"vCont;c")?;
                return Ok(false);
            }
            _ => {
                self.req(c, "qXfer:threads:read::0,fff")?;
            }
        }
        Ok(true)
    }

    fn session(&mut self) -> Result<()> {
        self.stats.sessions += 1;
        let mut c = self.connect()?;
        self.start_session(&mut c).context("handshake")?;
        let ops = 1 + self.rng.below(30);
        for _ in 0..ops {
            if !self.operation(&mut c)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// A quiet moment to sample: one client connected, process stopped.
    fn settle(&mut self) -> Result<RspClient> {
        let mut c = self.connect()?;
        self.start_session(&mut c)?;
        self.req(&mut c, "?")?;
        Ok(c)
    }
}

fn fd_count(pid: u32) -> Result<i64> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))
        .context("reading gdbmux's fd table")?
        .count() as i64)
}

fn rss_kib(pid: u32) -> Result<i64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow!("no VmRSS for {pid}"))
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_gdbmux(bin: &PathBuf, args: &[&std::ffi::OsStr]) -> Result<(Server, String)> {
    let mut child = Command::new(bin)
        .args(args)
        .env("GDBMUX_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let err = child.stderr.take().context("gdbmux stderr")?;
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            if let Some(a) = line.strip_prefix("Listening on ") {
                let _ = tx.send(a.to_string());
            } else if line.contains("ERROR") || line.contains("panicked") {
                eprintln!("gdbmux: {line}");
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .context("gdbmux did not print 'Listening on' within 20 s")?;
    Ok((server, addr))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let bin = match &cli.gdbmux {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("no parent dir")?
            .join("gdbmux"),
    };
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1
    });
    if let Some(program) = &cli.gpu {
        return run_gpu(&cli, &bin, program, seed);
    }
    let (server, addr) = start_gdbmux(
        &bin,
        &["--multi", "--no-gpu", "127.0.0.1:0"].map(std::ffi::OsStr::new),
    )?;
    let pid = server.0.id();
    println!(
        "soak: gdbmux pid {pid} on {addr}, {} s, seed {seed}",
        cli.secs
    );
    let mut soak = Soak {
        addr,
        program: cli.program.clone(),
        arg: cli.arg.clone(),
        rng: Rng(seed),
        stats: Stats::default(),
    };
    // Warm-up, then the baseline.
    for _ in 0..20 {
        if let Err(e) = soak.session() {
            soak.stats.errors += 1;
            eprintln!("soak: warm-up session failed: {e:#}");
        }
    }
    let c = soak.settle()?;
    let (fd0, rss0) = (fd_count(pid)?, rss_kib(pid)?);
    drop(c);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(cli.secs);
    let mut last_report = start;
    while Instant::now() < deadline {
        if let Err(e) = soak.session() {
            soak.stats.errors += 1;
            eprintln!("soak: session {} failed: {e:#}", soak.stats.sessions);
        }
        if last_report.elapsed() >= Duration::from_secs(60) {
            last_report = Instant::now();
            println!(
                "soak: {:>4} s: {} sessions, {} packets, {} fds, RSS {} KiB",
                start.elapsed().as_secs(),
                soak.stats.sessions,
                soak.stats.packets,
                fd_count(pid)?,
                rss_kib(pid)?
            );
        }
    }
    let c = soak.settle()?;
    let (fd1, rss1) = (fd_count(pid)?, rss_kib(pid)?);
    drop(c);
    let fd_ok = fd1 - fd0 <= cli.max_fd_growth;
    let rss_ok = rss1 - rss0 <= cli.max_rss_growth_kib;
    let errors_ok = soak.stats.errors == 0;
    println!("sessions:   {}", soak.stats.sessions);
    println!("packets:    {}", soak.stats.packets);
    println!("errors:     {}", soak.stats.errors);
    println!(
        "fds:        start {fd0}, end {fd1} (allowed growth {}) {}",
        cli.max_fd_growth,
        if fd_ok { "ok" } else { "LEAK" }
    );
    println!(
        "RSS KiB:    start {rss0}, end {rss1} (allowed growth {}) {}",
        cli.max_rss_growth_kib,
        if rss_ok { "ok" } else { "LEAK" }
    );
    if fd_ok && rss_ok && errors_ok {
        println!("result:     PASS");
        Ok(())
    } else {
        println!("result:     FAIL");
        drop(server);
        bail!("leak or session errors (see the figures above)")
    }
}

/// Pass or fail on the growth of fds and RSS and on session errors.
fn verdict(cli: &Cli, (fd0, rss0): (i64, i64), (fd1, rss1): (i64, i64), errors: u64) -> Result<()> {
    let fd_ok = fd1 - fd0 <= cli.max_fd_growth;
    let rss_ok = rss1 - rss0 <= cli.max_rss_growth_kib;
    println!("errors:     {errors}");
    println!(
        "fds:        start {fd0}, end {fd1} (allowed growth {}) {}",
        cli.max_fd_growth,
        if fd_ok { "ok" } else { "LEAK" }
    );
    println!(
        "RSS KiB:    start {rss0}, end {rss1} (allowed growth {}) {}",
        cli.max_rss_growth_kib,
        if rss_ok { "ok" } else { "LEAK" }
    );
    if fd_ok && rss_ok && errors == 0 {
        println!("result:     PASS");
        Ok(())
    } else {
        println!("result:     FAIL");
        bail!("leak or session errors (see the figures above)")
    }
}

/// `--gpu PROGRAM`: GPU sessions (see `gpu`), then the same leak check.
fn run_gpu(cli: &Cli, bin: &PathBuf, program: &std::path::Path, seed: u64) -> Result<()> {
    let mut evidence = evidence::Evidence::new();
    let mut args = evidence.gdbmux_args();
    args.extend(["127.0.0.1:0".into(), "--".into(), program.into()]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (server, addr) = start_gdbmux(bin, &args)?;
    let pid = server.0.id();
    println!(
        "soak --gpu: gdbmux pid {pid} on {addr} serving {}, {} s, seed {seed}",
        program.display(),
        cli.secs
    );
    let mut rng = Rng(seed);
    let mut stats = gpu::GpuStats::default();
    let mut errors = 0u64;
    let connect = || -> Result<RspClient> {
        let mut c = RspClient::connect(addr.as_str()).context("connecting to gdbmux")?;
        c.set_timeout(Duration::from_secs(30));
        Ok(c)
    };
    let one =
        |rng: &mut Rng, stats: &mut gpu::GpuStats, ev: &mut evidence::Evidence| -> Result<()> {
            ev.session_begins();
            let mut c = connect()?;
            gpu::session(&mut c, rng, stats)
        };
    for _ in 0..3 {
        if let Err(e) = one(&mut rng, &mut stats, &mut evidence) {
            errors += 1;
            eprintln!("soak --gpu: warm-up session failed: {e:#}");
            evidence.failed(pid);
        }
    }
    let sample = || -> Result<(i64, i64)> {
        let mut c = connect()?;
        gpu::settle(&mut c)?;
        Ok((fd_count(pid)?, rss_kib(pid)?))
    };
    let first = match sample() {
        Ok(v) => v,
        Err(e) => {
            evidence.failed(pid);
            drop(server);
            evidence.print();
            return Err(e.context("sampling after the warm-up"));
        }
    };
    let start = Instant::now();
    let deadline = start + Duration::from_secs(cli.secs);
    let mut last_report = start;
    while Instant::now() < deadline {
        if let Err(e) = one(&mut rng, &mut stats, &mut evidence) {
            errors += 1;
            eprintln!("soak --gpu: session {} failed: {e:#}", stats.sessions);
            evidence.failed(pid);
            if errors > 10 {
                break;
            }
        }
        if last_report.elapsed() >= Duration::from_secs(60) {
            last_report = Instant::now();
            println!(
                "soak --gpu: {:>4} s: {} sessions, {} code-object updates, {} fds, RSS {} KiB",
                start.elapsed().as_secs(),
                stats.sessions,
                stats.code_object_updates,
                fd_count(pid)?,
                rss_kib(pid)?
            );
        }
    }
    let last = match sample() {
        Ok(v) => v,
        Err(e) => {
            evidence.failed(pid);
            drop(server);
            evidence.print();
            return Err(e.context("sampling at the end"));
        }
    };
    println!("sessions:   {}", stats.sessions);
    println!("packets:    {}", stats.packets);
    println!("GPU breakpoint stops: {}", stats.breakpoint_stops);
    println!("GPU single steps:     {}", stats.steps);
    println!(
        "code-object updates (loads + unloads): {}",
        stats.code_object_updates
    );
    let r = verdict(cli, first, last, errors);
    drop(server);
    if r.is_err() {
        evidence.print();
    } else {
        evidence.discard();
    }
    r
}
