//! `rsp-bench`: runs the same program under gdbmux, gdbserver and
//! lldb-server in one run and prints each figure with its ratio to the best
//! peer.
//!
//! Measured (as in research/client-traces.md §12): `qC` round trip (median
//! of N) and the server's CPU time per `qC`; syscalls per `qC` (`strace -c
//! -f` attached for 200 round trips, where strace exists); heap allocations
//! per `qC` (`perf stat` on uprobes of libc's `malloc`/`calloc`/`realloc`,
//! where perf runs as root); gdbmux again
//! with busy polling off (`--busy-poll-us 0`), and the CPU-for-latency
//! figure of the busy-poll default; reading 16 MiB of inferior memory in the
//! largest packets each server allows (`m` and, where offered, binary `x`),
//! then 1 MiB and 256 MiB in the better mode (how the rate grows with the
//! length; a super-linear growth is flagged) with the server's CPU per MiB,
//! next to the physical limits (`process_vm_readv` alone, loopback TCP
//! alone, and the two one after the other, which is the best a server that
//! reads a whole reply before it sends any of it can do) measured in the
//! same round; single steps per second
//! (`vCont;s`), and breakpoint cycles per second (hit, `z0`, step, `Z0`,
//! continue — the client step-over both gdb and lldb do).
//!
//! The `qC` round trip is measured three ways, because on a VM it depends
//! mostly on where the scheduler puts the client and the server: wherever
//! the scheduler puts them, both pinned to one CPU, and pinned to two
//! different CPUs. Next to each pinned figure the tool measures a floor: a
//! do-nothing server (blocking `read`/`write`, no parsing, in this binary)
//! in the same placement, the fastest any socket server can answer.
//!
//! ```text
//! cargo run --release -p bench -- [--gdbmux target/release/gdbmux] [--steps 5000] [--bp 2000]
//!     [--no-256] [--prog PREBUILT_FIXTURE]
//! ```
#![forbid(unsafe_code)]

mod gpu;

/// The median of `v` (NaN for none).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|x, y| x.total_cmp(y));
    v[v.len() / 2]
}

/// The gdbmux binary `stub` runs: `--baseline`'s for `gdbmux-baseline`.
fn binary_for<'a>(stub: &str, gdbmux: &'a Path, a: &'a Args) -> &'a Path {
    match (stub, &a.baseline) {
        ("gdbmux-baseline", Some(b)) => b,
        _ => gdbmux,
    }
}

/// Figure `i` of each stub's medians as table cells (3 decimals), and
/// gdbmux's value ÷ the best (lowest) peer's ("-" without one).
fn figure_cells<F: AsRef<[f64]>>(med: &[(&str, F)], i: usize) -> (String, String) {
    let at = |f: &F| f.as_ref()[i];
    let g = med.iter().find(|(n, _)| *n == "gdbmux").map(|(_, f)| at(f));
    let best = med
        .iter()
        .filter(|(n, _)| !n.starts_with("gdbmux"))
        .map(|(_, f)| at(f))
        .reduce(f64::min);
    let mut ratio = match (g, best) {
        (Some(g), Some(b)) if b > 0.0 => format!("{:.2}", g / b),
        _ => "-".into(),
    };
    let base = med
        .iter()
        .find(|(n, _)| *n == "gdbmux-baseline")
        .map(|(_, f)| at(f));
    if let (Some(base), Some(b)) = (base, best) {
        if b > 0.0 {
            ratio = format!("{ratio} (baseline {:.2})", base / b);
        }
    }
    let cells = med
        .iter()
        .map(|(_, f)| format!("{:.3}", at(f)))
        .collect::<Vec<_>>()
        .join(" | ");
    (cells, ratio)
}
mod lldb;

use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use anyhow::bail;
use anyhow::Context;
use anyhow::Result;
use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Rounds: every stub is measured this many times, interleaved
    /// (gdbmux, gdbserver, lldb-server, gdbmux, …), and each figure is the
    /// median over the rounds (this 2-vCPU machine is noisy).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// gdbmux binary.
    #[arg(long)]
    gdbmux: Option<PathBuf>,
    /// Round trips for the latency figure.
    #[arg(long, default_value_t = 2000)]
    latency: usize,
    /// Single steps.
    #[arg(long, default_value_t = 5000)]
    steps: usize,
    /// Breakpoint hit/step-over/continue cycles.
    #[arg(long, default_value_t = 2000)]
    bp: usize,
    /// Only these stubs (comma list of gdbmux,gdbserver,lldb-server).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Extra gdbmux options (space-separated), e.g. `--busy-poll-us 0`.
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    gdbmux_args: String,
    /// Skip the 256 MiB read (a slow peer takes seconds per round on it).
    #[arg(long)]
    no_256: bool,
    /// A prebuilt fixture (`gcc -g -O0 -no-pie fixtures/bench.c`) instead
    /// of compiling it (a machine without gcc).
    #[arg(long)]
    prog: Option<PathBuf>,
    /// Real-client mode: stock gdb, then stock lldb (where it is
    /// installed), drive each stub (session set-up to the first
    /// breakpoint, `stepi`/`si` N, breakpoint hits M) instead of the raw
    /// client figures.
    #[arg(long)]
    clients: bool,
    /// Real-client mode: `stepi` count.
    #[arg(long, default_value_t = 3000)]
    client_steps: usize,
    /// Real-client mode: breakpoint hits.
    #[arg(long, default_value_t = 1500)]
    client_hits: usize,
    /// GPU scale (issue 15 item 4): a simulated-GPU program with N resident
    /// waves through gdbmux (lldb's wire dialect): wave list, stop-all,
    /// jThreadsInfo; needs clang-19 and cc unless --gpu-prog/--gpu-hsaco.
    #[arg(long)]
    gpu_scale: bool,
    /// GPU scale: the wave counts (comma list; default 1000,10000).
    #[arg(long, value_delimiter = ',')]
    gpu_waves: Vec<usize>,
    /// GPU scale: a prebuilt `fixtures/gpu_spin.c` (linked against
    /// libsimgpu_rt.so).
    #[arg(long)]
    gpu_prog: Option<PathBuf>,
    /// GPU scale: a prebuilt `fixtures/gpu_spin.cl` code object.
    #[arg(long)]
    gpu_hsaco: Option<PathBuf>,
    /// GPU scale: resume + interrupt cycles for the stop-all of running
    /// waves, per round (the median is printed; more cycles give a profiler
    /// more of the stop-all to sample).
    #[arg(long, default_value_t = 3)]
    gpu_stop_cycles: usize,
    /// GPU scale: wave lists timed per figure (running, stopped), per
    /// round (more give a profiler or tracer more lists to see).
    #[arg(long, default_value_t = 200)]
    gpu_list_samples: usize,
    /// lldb mode: stock lldb 23.1 against each stub with programs of these
    /// many threads (comma list, e.g. 100,1000: `thread list`, stop of all
    /// threads, and how each grows with the thread count).
    #[arg(long, value_delimiter = ',')]
    lldb_threads: Vec<usize>,
    /// lldb mode: a prebuilt `fixtures/threads.c` (`gcc -pthread`).
    #[arg(long)]
    threads_prog: Option<PathBuf>,
    /// A second gdbmux binary (an earlier build) measured as the stub
    /// `gdbmux-baseline` in the same interleaved rounds (the raw figures,
    /// `--clients`, `--lldb-threads` and `--gpu-scale`, which prints an A/B
    /// table and loads the simulated GPU library next to each binary): an
    /// A/B of a change in one run, its ratio to the peers printed beside
    /// gdbmux's (the raw table prints its column; the peers' best excludes
    /// it).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Internal: run the do-nothing floor server on this port.
    #[arg(long, hide = true)]
    echo_server: Option<u16>,
    /// Internal: the floor server answers `qfThreadInfo` with a prebuilt
    /// list of this many thread ids (lldb's form) and `qsThreadInfo` with
    /// `l` (the GPU scale's floor for the wave list).
    #[arg(long, hide = true)]
    echo_list: Option<usize>,
}

/// Where the client and the server run for a latency figure.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Placement {
    /// Both pinned to CPU 0.
    Same,
    /// Client on CPU 0, server on CPU 1.
    Split,
}

impl Placement {
    fn cpus(self) -> (Option<usize>, Option<usize>) {
        match self {
            Placement::Same => (Some(0), Some(0)),
            Placement::Split => (Some(0), Some(1)),
        }
    }
}

/// Pin this thread (and what it spawns from now on) to `cpu`, or let it
/// run anywhere.
fn pin(cpu: Option<usize>) -> Result<()> {
    let set = match cpu {
        Some(c) => {
            let mut set = nix::sched::CpuSet::new();
            set.set(c)?;
            set
        }
        None => *START_AFFINITY.get_or_init(start_affinity),
    };
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)?;
    Ok(())
}

/// The CPUs this tool could run on when it started.
static START_AFFINITY: std::sync::OnceLock<nix::sched::CpuSet> = std::sync::OnceLock::new();

fn start_affinity() -> nix::sched::CpuSet {
    nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap_or_default()
}

/// The floor server: answers every `#xx`-terminated packet with a fixed
/// `qC` reply, blocking reads and writes, no parsing beyond that. With
/// `list` (`--echo-list N`) it answers `qfThreadInfo` with a list of N
/// thread ids framed once at the start (`mp<pid>.2,3,…`, the pid on the
/// first id only, as gdbmux answers lldb) and `qsThreadInfo` with `l`:
/// what a wave list costs with nothing to do but the two reads and writes.
fn echo_server(port: u16, list: Option<usize>) -> Result<()> {
    let l = std::net::TcpListener::bind(("127.0.0.1", port))?;
    eprintln!("Listening on port {}", l.local_addr()?.port());
    echo_serve(l, list)
}

/// [`echo_server`] on a bound listener: one client, until it closes.
fn echo_serve(l: std::net::TcpListener, list: Option<usize>) -> Result<()> {
    let (mut s, _) = l.accept()?;
    s.set_nodelay(true)?;
    let framed_list = list.map(|n| {
        let mut body = format!("mp{:x}.2", std::process::id());
        for tid in 3..n as u64 + 2 {
            body.push_str(&format!(",{tid:x}"));
        }
        format!("${body}#{:02x}", checksum(body.as_bytes())).into_bytes()
    });
    let mut buf = [0u8; 4096];
    let mut tail = 0usize;
    // The start of the packet's body, enough to tell the two list packets.
    let mut head = [0u8; 12];
    let mut head_len = 0usize;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        for b in &buf[..n] {
            if tail > 0 {
                tail -= 1;
                if tail == 0 {
                    match (&framed_list, &head[..head_len]) {
                        (Some(f), b"qfThreadInfo") => s.write_all(f)?,
                        (Some(_), b"qsThreadInfo") => s.write_all(b"$l#6c")?,
                        _ => s.write_all(b"$QCp1.1#94")?,
                    }
                }
            } else if *b == b'#' {
                tail = 2;
            } else if *b == b'$' {
                head_len = 0;
            } else if head_len < head.len() {
                head[head_len] = *b;
                head_len += 1;
            }
        }
    }
}

/// Median `qC` round trip (µs) over `n` requests on a connected client.
fn qc_latency(c: &mut Rsp, n: usize) -> Result<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.ask("qC")?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    v.sort_by(|x, y| x.total_cmp(y));
    Ok(v[v.len() / 2])
}

/// `qC` round trip of one stub (or of the floor server, `stub == "floor"`)
/// in a placement: a fresh server, the same handshake as the main run.
fn placed_latency(
    stub: &str,
    gdbmux: &Path,
    prog: &Path,
    a: &Args,
    placement: Placement,
) -> Result<f64> {
    let (client_cpu, server_cpu) = placement.cpus();
    pin(server_cpu)?;
    let started = start(stub, gdbmux, &a.gdbmux_args, prog);
    pin(client_cpu)?;
    let (mut child, port) = started?;
    let r = (|| -> Result<f64> {
        let mut c = Rsp::connect(port)?;
        if stub != "floor" {
            c.handshake()?;
        } else {
            c.noack = true;
        }
        let r = qc_latency(&mut c, a.latency);
        // Kill the inferior through the stub: a stub killed from outside
        // would leave it running (a detached busy loop skews what follows).
        if stub != "floor" {
            let _ = c.send(b"k");
            let _ = c.recv();
        }
        r
    })();
    pin(None)?;
    let _ = child.kill();
    let _ = child.wait();
    r
}

/// CPU per request (µs) of the floor server in the scheduler's placement,
/// measured as the stubs' "server CPU per qC" is: what a server with the
/// fewest possible system calls per request (one blocking `read`, one
/// `write`, no readiness call) costs the machine, so that the figure's
/// target can be set against it.
fn floor_cpu(gdbmux: &Path, prog: &Path, a: &Args) -> Result<f64> {
    pin(None)?;
    let (mut child, port) = start("floor", gdbmux, &a.gdbmux_args, prog)?;
    let r = (|| -> Result<f64> {
        let mut c = Rsp::connect(port)?;
        c.noack = true;
        // Warm the connection as the stubs' handshake does.
        qc_latency(&mut c, 100)?;
        let cpu0 = server_cpu_ns(child.id());
        qc_latency(&mut c, a.latency)?;
        Ok((server_cpu_ns(child.id()).saturating_sub(cpu0)) as f64 / 1000.0 / a.latency as f64)
    })();
    let _ = child.kill();
    let _ = child.wait();
    r
}

/// Minimal no-ack RSP client (the tool measures servers, it does not test
/// them; protocol-tests has the full client).
///
/// A fair client for large replies: the socket is read straight into one
/// buffer (no copy from a scratch buffer), `$`/`#` are found with `memchr`,
/// and each read's part of the frame is decoded at once into a reused
/// output buffer ([`Rsp::recv_into`]), its checksum checked. The read
/// buffer is reset whenever it has been consumed to its end; at most the
/// two bytes of an escape cut by a read, or a split `#cc`, are moved.
struct Rsp {
    s: TcpStream,
    /// Received bytes are `buf[pos..filled]`.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    noack: bool,
    /// When the last `read` returned (the GPU wave list's per-part
    /// figures: the read that completed a reply).
    read_at: Instant,
}

/// The receive buffer (frames are decoded as they arrive, so it never
/// holds more than one read and a few bytes).
const RECV_BUF: usize = 2 << 20;
/// Read at least this much per `read` call: the client's 1 MiB reads, the
/// same as the loopback limit's.
const READ_CHUNK: usize = 1 << 20;

impl Rsp {
    fn connect(port: u16) -> Result<Self> {
        let s = TcpStream::connect(("127.0.0.1", port))
            .with_context(|| format!("connect to port {port}"))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Rsp {
            s,
            buf: vec![0; RECV_BUF],
            pos: 0,
            filled: 0,
            noack: false,
            read_at: Instant::now(),
        })
    }

    fn send(&mut self, p: &[u8]) -> Result<()> {
        let cs = p.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        let mut out = Vec::with_capacity(p.len() + 4);
        out.push(b'$');
        out.extend_from_slice(p);
        out.extend_from_slice(format!("#{cs:02x}").as_bytes());
        self.s.write_all(&out)?;
        Ok(())
    }

    fn recv(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.recv_into(&mut out)?;
        Ok(out)
    }

    /// Receive one packet, decoded into `out` (cleared first), its
    /// checksum checked (a mismatch is an error). The body is decoded as
    /// it arrives, after each read, as gdb's `read_frame` (remote.c) takes
    /// each byte as it is read: the decoding of a large reply overlaps the
    /// server's sending of the rest, instead of following the last byte
    /// (until 2026-12-02 this client decoded the whole frame after its
    /// `#`, a wait of about 0.4 ms per MiB here in which no server could
    /// send anything). A `}` or `*` that ends a read waits for the byte
    /// after it. The checksum is summed over the same raw bytes as they
    /// are decoded (a vectorised pass over bytes already in cache).
    fn recv_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let mut in_frame = false;
        let mut sum = 0u8;
        loop {
            if !in_frame {
                match memchr::memchr(b'$', &self.buf[self.pos..self.filled]) {
                    Some(start) => {
                        self.pos += start + 1;
                        in_frame = true;
                    }
                    None => self.pos = self.filled,
                }
            }
            if in_frame {
                let pending = &self.buf[self.pos..self.filled];
                // `#` never occurs in a body (it is escaped), nor after an
                // escape or a run's `*`.
                match memchr::memchr(b'#', pending) {
                    Some(h) => {
                        let used = decode_into(&pending[..h], out);
                        sum = sum.wrapping_add(checksum(&pending[..used]));
                        self.pos += used;
                        if used < h {
                            bail!("a frame ends inside an escape or a run");
                        }
                        if self.filled - self.pos >= 3 {
                            let cc = &self.buf[self.pos + 1..self.pos + 3];
                            let got = std::str::from_utf8(cc)
                                .ok()
                                .and_then(|t| u8::from_str_radix(t, 16).ok());
                            if got != Some(sum) {
                                bail!(
                                    "checksum {} of a {}-byte reply, computed {sum:02x}",
                                    String::from_utf8_lossy(cc),
                                    out.len()
                                );
                            }
                            self.pos += 3;
                            if self.pos == self.filled {
                                self.pos = 0;
                                self.filled = 0;
                            }
                            if !self.noack {
                                self.s.write_all(b"+")?;
                            }
                            return Ok(());
                        }
                    }
                    None => {
                        let used = decode_into(pending, out);
                        sum = sum.wrapping_add(checksum(&pending[..used]));
                        self.pos += used;
                    }
                }
            }
            // At most a `}`, a `*` or a part of `#cc` is left: move it to
            // the front, and read.
            if self.pos == self.filled {
                self.pos = 0;
                self.filled = 0;
            } else if self.buf.len() - self.filled < READ_CHUNK {
                self.buf.copy_within(self.pos..self.filled, 0);
                self.filled -= self.pos;
                self.pos = 0;
            }
            let n = self.s.read(&mut self.buf[self.filled..])?;
            self.read_at = Instant::now();
            if n == 0 {
                bail!("connection closed");
            }
            self.filled += n;
        }
    }

    /// `+`, `qSupported`, no-ack mode where offered, `?`: returns the
    /// qSupported reply and the stop.
    fn handshake(&mut self) -> Result<(String, String)> {
        self.s.write_all(b"+")?;
        let sup = self.ask_s("qSupported:multiprocess+;swbreak+;hwbreak+;vContSupported+")?;
        if self.ask_s("QStartNoAckMode")? == "OK" {
            self.noack = true;
        }
        let stop = self.ask_s("?")?;
        Ok((sup, stop))
    }

    fn ask(&mut self, p: &str) -> Result<Vec<u8>> {
        self.send(p.as_bytes())?;
        self.recv()
    }

    fn ask_s(&mut self, p: &str) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.ask(p)?).into_owned())
    }
}

/// Bit `i` set where `block[i]` is `}` or `*` (written so that the
/// compares compile to vector instructions and the bits are gathered with
/// eight multiplies, as the server's encoder does).
fn marks(block: &[u8; 64]) -> u64 {
    let mut flags = [0u8; 64];
    for (f, &b) in flags.iter_mut().zip(block) {
        *f = u8::from((b == b'}') | (b == b'*'));
    }
    let mut mask = 0u64;
    for (i, eight) in flags.chunks_exact(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(eight);
        mask |= (u64::from_le_bytes(w).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * i);
    }
    mask
}

/// Blocks without an escape or a run, in a row, after which
/// [`decode_into`] searches for the next one with `memchr2` (binary data
/// rarely has four: a block is free of the two bytes about a third of the
/// time).
const PLAIN_BLOCKS: u32 = 4;

/// Undo `}` escapes and RLE, appending to `out`: 64 bytes at a time, a
/// block without `}` or `*` copied whole, otherwise the plain bytes up to
/// the first one copied in one go. Binary memory has an escape every 64
/// bytes or so: a search that restarts at each one (`memchr2`) decoded at
/// about 1 GB/s here and capped the read figures; this runs about three
/// times faster. But text with no escape at all (a thread list's 45 KB of
/// ids) went at the blocks' pace too, 6 µs for such a list here: after
/// [`PLAIN_BLOCKS`] blocks in a row without one, the rest up to the next
/// `}` or `*` is found with `memchr2` and copied in one go (1.6 µs for that
/// list). Returns how many bytes of `raw` it took: all but a `}` or `*`
/// that ends it, whose second byte has not arrived yet.
fn decode_into(raw: &[u8], out: &mut Vec<u8>) -> usize {
    out.reserve(raw.len());
    let mut i = 0;
    let mut plain_blocks = 0;
    while i < raw.len() {
        let block = raw
            .get(i..i + 64)
            .and_then(|s| <&[u8; 64]>::try_from(s).ok());
        let plain = match block {
            Some(block) if plain_blocks < PLAIN_BLOCKS => {
                let m = marks(block);
                if m == 0 {
                    out.extend_from_slice(block);
                    i += 64;
                    plain_blocks += 1;
                    continue;
                }
                m.trailing_zeros() as usize
            }
            _ => memchr::memchr2(b'}', b'*', &raw[i..]).unwrap_or(raw.len() - i),
        };
        plain_blocks = 0;
        out.extend_from_slice(&raw[i..i + plain]);
        i += plain;
        match &raw[i..] {
            [b'}', x, ..] => {
                out.push(x ^ 0x20);
                i += 2;
            }
            [b'*', n, ..] if !out.is_empty() => {
                let last = *out.last().unwrap_or(&0);
                out.extend(std::iter::repeat_n(last, n.saturating_sub(29) as usize));
                i += 2;
            }
            [b'}'] | [b'*'] if !out.is_empty() || raw[i] == b'}' => return i,
            [b, ..] => {
                out.push(*b);
                i += 1;
            }
            [] => {}
        }
    }
    i
}

/// The RSP checksum of `raw` (the sum of its bytes modulo 256): written
/// so that it compiles to a vector loop.
fn checksum(raw: &[u8]) -> u8 {
    raw.iter().fold(0u8, |a, b| a.wrapping_add(*b))
}

/// How many times `needle` occurs in `hay`, 64 bytes at a time with a byte
/// counter per block (vector compares and adds). The plain
/// `filter(..).count()` of every byte compiled to four bytes per step with
/// 64-bit counters here: 15 µs for the 45 KB of a 10,000-wave list, a
/// third of that list's whole round trip on this VM; this takes about 1 µs.
fn count_byte(hay: &[u8], needle: u8) -> usize {
    let mut blocks = hay.chunks_exact(64);
    let mut n = 0;
    for block in &mut blocks {
        let mut k = 0u8;
        for &b in block {
            k += u8::from(b == needle);
        }
        n += usize::from(k);
    }
    n + blocks.remainder().iter().filter(|&&b| b == needle).count()
}

/// Hex text to bytes (pairs; a bad digit reads as 0).
fn unhex(text: &[u8]) -> Vec<u8> {
    fn nib(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => 0,
        }
    }
    text.chunks_exact(2)
        .map(|p| (nib(p[0]) << 4) | nib(p[1]))
        .collect()
}

/// Address of `sym` in the (non-PIE) fixture, from its ELF symbol table.
fn nm(bin: &Path, sym: &str) -> Result<u64> {
    use object::Object as _;
    use object::ObjectSymbol as _;
    let data = std::fs::read(bin).with_context(|| format!("reading {}", bin.display()))?;
    let file = object::File::parse(&*data).context("parsing the fixture")?;
    file.symbols()
        .find(|s| s.name() == Ok(sym))
        .map(|s| s.address())
        .with_context(|| format!("symbol {sym} not found in {}", bin.display()))
}

struct Figures {
    qc_us: f64,
    qc_same_us: f64,
    qc_split_us: f64,
    qc_py_us: f64,
    qc_cpu_us: f64,
    /// Syscalls per `qC` (strace), total and by name.
    syscalls: Option<Syscalls>,
    /// Heap allocations per `qC` (perf uprobes), where measurable.
    allocs: Option<f64>,
    /// 16 MiB read, the best of `m` and `x`.
    mread_mibs: f64,
    /// 1 MiB and 256 MiB reads in the same mode (scaling).
    mread_1_mibs: f64,
    mread_256_mibs: f64,
    /// Server CPU per MiB of the 256 MiB read (µs).
    mread_cpu_us_per_mib: f64,
    /// Server CPU per MiB of the 16 MiB read in the same mode (µs).
    mread_cpu16_us_per_mib: f64,
    /// Syscalls per MiB of a 4 MiB read in the same mode (strace), total
    /// and by name.
    mread_syscalls: Option<Syscalls>,
    mread_how: String,
    /// The physical limits, measured in the same round: 16 MiB of the
    /// inferior's buffer through `process_vm_readv` alone (1 MiB a call),
    /// and 16 MiB through a loopback TCP connection alone (1 MiB writes,
    /// the client's 1 MiB reads).
    vm_readv_mibs: f64,
    loopback_mibs: f64,
    steps_s: f64,
    bp_s: f64,
}

/// Start a stub on a port it picks and wait for it to say where it
/// listens: gdbmux and gdbserver print `Listening on …PORT` on stderr,
/// lldb-server writes the port to a named pipe (`--named-pipe`), the floor
/// server prints like gdbserver. No connect-and-retry loop.
fn start(stub: &str, gdbmux: &Path, extra: &str, prog: &Path) -> Result<(Child, u16)> {
    start_args(stub, gdbmux, extra, prog, &[], &[])
}

/// [`start`] with arguments and environment for the program.
fn start_args(
    stub: &str,
    gdbmux: &Path,
    extra: &str,
    prog: &Path,
    args: &[String],
    env: &[(String, String)],
) -> Result<(Child, u16)> {
    const ADDR: &str = "127.0.0.1:0";
    let fifo = std::env::temp_dir().join(format!("gdbmux-bench-{}.port", std::process::id()));
    let mut cmd = match stub {
        "gdbmux" | "gdbmux-baseline" => {
            let mut c = Command::new(gdbmux);
            c.args(extra.split_whitespace());
            c.args([ADDR, "--"]).arg(prog);
            c
        }
        "gdbserver" => {
            let mut c = Command::new("gdbserver");
            c.arg(ADDR).arg(prog);
            c
        }
        "floor" => {
            let mut c = Command::new(std::env::current_exe()?);
            c.args(["--echo-server", "0"]);
            c
        }
        _ => {
            let _ = std::fs::remove_file(&fifo);
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)?;
            let mut c = Command::new("lldb-server");
            c.args(["gdbserver", "--named-pipe"])
                .arg(&fifo)
                .args([ADDR, "--"])
                .arg(prog);
            c
        }
    };
    cmd.args(args);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().with_context(|| format!("starting {stub}"))?;
    let (tx, rx) = std::sync::mpsc::channel::<u16>();
    let stderr = child.stderr.take().context("stub stderr")?;
    if stub == "lldb-server" {
        let tx = tx.clone();
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // Opening blocks until lldb-server opens its end; it writes the
            // port as decimal text and a NUL.
            if let Ok(text) = std::fs::read(&fifo) {
                let digits: String = text
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .map(|b| *b as char)
                    .collect();
                if let Ok(p) = digits.parse() {
                    let _ = tx.send(p);
                }
            }
        });
    }
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        // Read to the end so the stub never blocks on a full pipe.
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(|l| l.ok())
        {
            if let Some(rest) = line.split("Listening on").nth(1) {
                let digits: String = rest
                    .rsplit(|c: char| !c.is_ascii_digit())
                    .find(|d| !d.is_empty())
                    .unwrap_or_default()
                    .to_string();
                if let Ok(p) = digits.parse() {
                    let _ = tx.send(p);
                }
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(port) => {
            let _ = std::fs::remove_file(&fifo);
            Ok((child, port))
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&fifo);
            bail!("{stub} did not say where it listens within 20 s")
        }
    }
}

/// The research's client (research/client-traces.md §12, `rspbench.py`):
/// a stdlib-only Python raw-socket client, `+`/qSupported in ack mode, then
/// no-ack, then the median of N `qC` round trips.
const PY_LATENCY: &str = r##"
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def pkt(p):
    return ("$%s#%02x" % (p, sum(p.encode()) & 0xff)).encode()
buf = b""
def rd():
    global buf
    while True:
        i = buf.find(b"$"); j = buf.find(b"#", i + 1) if i >= 0 else -1
        if j >= 0 and len(buf) >= j + 3:
            r = buf[i + 1:j]; buf = buf[j + 3:]; return r
        buf += s.recv(65536)
s.send(b"+" + pkt("qSupported:multiprocess+;swbreak+;hwbreak+;vContSupported+")); rd(); s.send(b"+")
s.send(pkt("QStartNoAckMode")); rd(); s.send(b"+")
buf = buf.lstrip(b"+")
q = pkt("qC"); v = []
for _ in range(n):
    t = time.perf_counter(); s.send(q); rd(); v.append((time.perf_counter() - t) * 1e6)
v.sort(); print(v[len(v) // 2])
s.send(pkt("k"))
"##;

/// Syscalls per `qC`: the total, and `name count` by syscall.
type Syscalls = (f64, String);
/// gdbmux without busy polling: `qC` round trip (µs), server CPU per `qC`
/// (µs), syscalls per `qC`, heap allocations per `qC`.
type NoPoll = (f64, f64, Option<Syscalls>, Option<f64>);

/// Syscalls per `qC` of the server `pid` (all its threads): `strace -c -f
/// -p` attached for `n` round trips, then interrupted. `None` without
/// strace. Returns the total and the per-syscall counts, per `qC`.
fn syscalls_per_qc(c: &mut Rsp, pid: u32, n: usize) -> Result<Option<Syscalls>> {
    strace_per(pid, n as f64, || {
        for _ in 0..n {
            c.ask("qC")?;
        }
        Ok(())
    })
}

/// Syscalls per MiB of the server `pid` (all threads) while it serves a
/// 4 MiB read of the fixture's buffer at `big` in `mode` and `chunk`-byte
/// requests (under strace: the count, not the time, is the figure).
fn syscalls_per_read(
    c: &mut Rsp,
    pid: u32,
    mode: &str,
    chunk: usize,
    big: u64,
) -> Result<Option<Syscalls>> {
    const MIB: usize = 4;
    strace_per(pid, MIB as f64, || {
        read_rate(c, mode, chunk, big, MIB << 20).map(|_| ())
    })
}

/// `strace -c -f -p pid` attached while `work` runs; the calls it counted
/// divided by `per` (the total, and those of at least 0.05 by name).
/// `None` without strace.
fn strace_per(pid: u32, per: f64, work: impl FnOnce() -> Result<()>) -> Result<Option<Syscalls>> {
    use std::io::BufRead as _;
    let file = std::env::temp_dir().join(format!("gdbmux-bench-strace-{}", std::process::id()));
    let Ok(mut st) = Command::new("strace")
        .args(["-c", "-f", "-p", &pid.to_string(), "-o"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return Ok(None);
    };
    // strace says `Process N attached` once it traces the server.
    let mut err = std::io::BufReader::new(st.stderr.take().context("strace stderr")?);
    let mut line = String::new();
    while err.read_line(&mut line)? > 0 && !line.contains("attached") {
        line.clear();
    }
    let worked = work();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(st.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )?;
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    st.wait()?;
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    let mut total = f64::NAN;
    let mut each = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        // `% time  seconds  usecs/call  calls  [errors]  syscall`
        let (Some(name), Some(calls)) = (f.last(), f.get(3).and_then(|c| c.parse::<f64>().ok()))
        else {
            continue;
        };
        if *name == "total" {
            total = calls / per;
        } else if calls / per >= 0.05 {
            each.push(format!("{name} {:.1}", calls / per));
        }
    }
    worked?;
    Ok(Some((total, each.join(", "))))
}

/// Heap allocations per `qC` of the server `pid` (all threads): calls of
/// libc's `malloc`, `calloc` and `realloc`, counted with `perf stat` on
/// uprobes for `n` round trips. The probes are added for the count (and
/// removed after) unless they exist already; `None` where perf or the
/// probes are not available (not root, no perf). Rust's and C++'s
/// allocators end in these calls in all three servers.
fn allocs_per_qc(c: &mut Rsp, pid: u32, n: usize) -> Result<Option<f64>> {
    const EVENTS: &str = "probe_libc:malloc,probe_libc:calloc,probe_libc:realloc";
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let Some(libc) = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so"))
        .map(str::to_string)
    else {
        return Ok(None);
    };
    let listed = Command::new("perf")
        .args(["probe", "-l"])
        .stderr(Stdio::null())
        .output();
    let Ok(listed) = listed else {
        return Ok(None);
    };
    let have =
        |f: &str| String::from_utf8_lossy(&listed.stdout).contains(&format!("probe_libc:{f} "));
    let missing: Vec<&str> = ["malloc", "calloc", "realloc"]
        .into_iter()
        .filter(|f| !have(f))
        .collect();
    for f in &missing {
        let ok = Command::new("perf")
            .args(["probe", "-q", "-x", &libc, "-a", f])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Ok(None);
        }
    }
    let remove = || {
        for f in &missing {
            let _ = Command::new("perf")
                .args(["probe", "-q", "-d", &format!("probe_libc:{f}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    };
    let Ok(mut st) = Command::new("perf")
        .args(["stat", "-x", ",", "-e", EVENTS, "-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    else {
        remove();
        return Ok(None);
    };
    // perf stat says nothing when it starts counting: give it time to
    // attach (the server is idle meanwhile and adds nothing to the count).
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..n {
        c.ask("qC")?;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(st.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )?;
    let mut err = String::new();
    if let Some(mut e) = st.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let _ = st.wait();
    remove();
    let total: f64 = err
        .lines()
        .filter(|l| l.contains("probe_libc:"))
        .filter_map(|l| l.split(',').next()?.trim().parse::<f64>().ok())
        .sum();
    let counted = err.lines().filter(|l| l.contains("probe_libc:")).count();
    Ok((counted == 3).then_some(total / n as f64))
}

/// gdbmux with busy polling off (`--busy-poll-us 0`): `qC` round trip,
/// server CPU per `qC`, and syscalls per `qC`.
fn measure_no_poll(gdbmux: &Path, prog: &Path, a: &Args) -> Result<NoPoll> {
    let extra = format!("{} --busy-poll-us 0", a.gdbmux_args);
    let (mut child, port) = start("gdbmux", gdbmux, &extra, prog)?;
    let r = (|| -> Result<NoPoll> {
        let mut c = Rsp::connect(port)?;
        c.handshake()?;
        let pid = child.id();
        let cpu0 = server_cpu_ns(pid);
        let lat = qc_latency(&mut c, a.latency)?;
        let cpu = server_cpu_ns(pid).saturating_sub(cpu0) as f64 / 1000.0 / a.latency as f64;
        let sys = syscalls_per_qc(&mut c, pid, 200)?;
        let allocs = allocs_per_qc(&mut c, pid, 2000)?;
        let _ = c.send(b"k");
        let _ = c.recv();
        Ok((lat, cpu, sys, allocs))
    })();
    let _ = child.kill();
    let _ = child.wait();
    r
}

/// Stock gdb against one stub: seconds from `target remote` to the first
/// breakpoint stop, for `stepi N`, and for M breakpoint hits (`ignore`
/// makes gdb resume M times itself, one stop round trip each); then the
/// part of the set-up gdb spent waiting (the set-up less the CPU time of
/// gdb's main thread over it, `thread_time`: the stub's replies, the
/// transport, the wake-ups; gdb's symbol-reading worker threads overlap
/// the main thread, and where libraries have separate debug info their
/// CPU alone can exceed the set-up's wall time).
fn gdb_session(stub: &str, gdbmux: &Path, prog: &Path, a: &Args) -> Result<[f64; 5]> {
    let (mut child, port) = start(stub, binary_for(stub, gdbmux, a), &a.gdbmux_args, prog)?;
    let script = format!(
        "set confirm off\n\
         set pagination off\n\
         python import time; t0 = time.perf_counter(); c0 = time.thread_time()\n\
         target remote 127.0.0.1:{port}\n\
         break bench_func\n\
         continue\n\
         python t1 = time.perf_counter(); print('SETUP', t1 - t0); print('SETUPWAIT', t1 - t0 - (time.thread_time() - c0))\n\
         disable 1\n\
         python s0 = int(gdb.parse_and_eval('g_hits')); t1 = time.perf_counter()\n\
         stepi {steps}\n\
         python t2 = time.perf_counter(); print('STEPI', t2 - t1)\n\
         python print('STEPLOOPS', int(gdb.parse_and_eval('g_hits')) - s0)\n\
         enable 1\n\
         python h0 = gdb.breakpoints()[0].hit_count; t2 = time.perf_counter()\n\
         ignore 1 {hits}\n\
         continue\n\
         python t3 = time.perf_counter(); print('HITS', t3 - t2)\n\
         python print('HITCOUNT', gdb.breakpoints()[0].hit_count - h0)\n\
         delete\n\
         python c0 = int(gdb.parse_and_eval('g_hits')); gdb.execute('break bench_func if g_hits == %d' % (c0 + {hits})); t3 = time.perf_counter()\n\
         continue\n\
         python t4 = time.perf_counter(); print('CONDHITS', t4 - t3)\n\
         python print('CONDCOUNT', int(gdb.parse_and_eval('g_hits')) - c0)\n\
         kill\n",
        steps = a.client_steps,
        hits = a.client_hits,
    );
    let file = std::env::temp_dir().join(format!("gdbmux-bench-{}.gdb", std::process::id()));
    std::fs::write(&file, script)?;
    let out = Command::new("gdb")
        .args(["-nx", "-batch", "-x"])
        .arg(&file)
        .arg(prog)
        .stdin(Stdio::null())
        .output();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&file);
    let out = out.context("running gdb")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let get = |k: &str| -> Result<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse().ok()))
            .with_context(|| format!("gdb on {stub}: no {k} in its output: {text}"))
    };
    // `stepi N` stops early at an enabled breakpoint (one loop turn): the
    // breakpoint is disabled for it, and the loop turns it stepped through
    // (about 13 instructions each) prove it ran the N steps.
    let loops = get("STEPLOOPS ")?;
    if loops < (a.client_steps / 32) as f64 {
        bail!(
            "gdb on {stub}: stepi {} went through {loops} loop turns only",
            a.client_steps
        );
    }
    let hits = get("HITCOUNT ")?;
    if hits as usize != a.client_hits + 1 {
        bail!(
            "gdb on {stub}: {hits} breakpoint hits, expected {}",
            a.client_hits + 1
        );
    }
    // The conditional breakpoint: the stub evaluates the condition
    // (gdb's `condition-evaluation auto` sends it with `Z0` to a stub that
    // offers `ConditionalBreakpoints`, as gdbserver and gdbmux do) and
    // reports only the hit where it holds, `hits` calls on.
    let cond = get("CONDCOUNT ")?;
    if cond as usize != a.client_hits {
        bail!(
            "gdb on {stub}: the conditional breakpoint stopped after {cond} calls, expected {}",
            a.client_hits
        );
    }
    Ok([
        get("SETUP ")?,
        get("STEPI ")?,
        get("HITS ")?,
        get("CONDHITS ")?,
        get("SETUPWAIT ")?,
    ])
}

/// `--clients`: gdb sessions against every stub, interleaved rounds,
/// medians, ratios to the best peer (lower is better).
fn clients_mode(stubs: &[&str], gdbmux: &Path, prog: &Path, a: &Args) -> Result<()> {
    // The stubs pass their environment to the fixture: skip its 256 MiB
    // fill, which would be most of the set-up time.
    std::env::set_var("RSP_BENCH_NOFILL", "1");
    let mut runs: Vec<(&str, Vec<[f64; 5]>)> = stubs.iter().map(|s| (*s, Vec::new())).collect();
    for round in 0..a.rounds.max(1) {
        for (s, v) in runs.iter_mut() {
            eprintln!("round {} : gdb against {s} …", round + 1);
            match gdb_session(s, gdbmux, prog, a) {
                Ok(f) => {
                    // Each round's figures, to judge the medians' spread.
                    eprintln!(
                        "  {s}: set-up {:.3} (gdb waited {:.4}), stepi {:.3}, hits {:.3}, conditional {:.3}",
                        f[0], f[4], f[1], f[2], f[3]
                    );
                    v.push(f)
                }
                Err(e) => eprintln!("  {s}: {e:#}"),
            }
        }
    }
    let med: Vec<(&str, [f64; 5])> = runs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(s, v)| {
            (
                *s,
                [0, 1, 2, 3, 4].map(|i| median(v.iter().map(|f| f[i]).collect())),
            )
        })
        .collect();
    println!(
        "stock gdb, medians of {} interleaved rounds (seconds)",
        a.rounds.max(1)
    );
    println!(
        "| figure | {} | gdbmux ÷ best peer | target |",
        med.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|{}---|---|", "---|".repeat(med.len()));
    let names = [
        ("session set-up to the first breakpoint", "≤ 0.9"),
        ("stepi", "≤ 0.7"),
        ("breakpoint hits", "≤ 0.6"),
        (
            "calls to a breakpoint whose condition the stub evaluates",
            "≤ 0.6",
        ),
        // Most of a set-up is gdb's own CPU (reading symbols), which no
        // stub changes and which spreads by a quarter between rounds: this
        // row is the rest, the part a stub can shorten.
        ("set-up less gdb's main-thread CPU (gdb waiting)", "-"),
    ];
    for (i, (name, target)) in names.iter().enumerate() {
        let label = match i {
            1 => format!("{} {name}", a.client_steps),
            2 | 3 => format!("{} {name}", a.client_hits),
            _ => name.to_string(),
        };
        let (cells, ratio) = figure_cells(&med, i);
        println!("| {label} | {cells} | {ratio} | {target} |");
    }
    // The same figures with stock lldb, where its Python module is there.
    let has_lldb = Command::new("lldb")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_lldb {
        lldb::clients(stubs, gdbmux, prog, a)?;
    } else {
        eprintln!("lldb not found: no lldb rows");
    }
    Ok(())
}

fn measure(stub: &str, gdbmux: &Path, prog: &Path, a: &Args) -> Result<Figures> {
    let (mut child, port) = start(stub, gdbmux, &a.gdbmux_args, prog)?;
    let r = measure_on(port, prog, a, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let mut f = r?;
    // A fresh server for the Python client (gdbserver serves one session).
    let (mut child, port) = start(stub, gdbmux, &a.gdbmux_args, prog)?;
    let out = Command::new("python3")
        .args(["-c", PY_LATENCY, &port.to_string(), &a.latency.to_string()])
        .output();
    let _ = child.kill();
    let _ = child.wait();
    let out = out.context("running python3")?;
    f.qc_py_us = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(f64::NAN);
    if two_cpus() {
        f.qc_same_us = placed_latency(stub, gdbmux, prog, a, Placement::Same)?;
        f.qc_split_us = placed_latency(stub, gdbmux, prog, a, Placement::Split)?;
    }
    Ok(f)
}

/// One scaling line: how a figure measured at two sizes grows per unit of
/// size (`unit`: MiB, thread, wave); above ×1.25 is flagged SUPER-LINEAR.
fn scaling_line(what: &str, unit: &str, n0: f64, v0: f64, n1: f64, v1: f64) {
    let (p0, p1) = (v0 / n0, v1 / n1);
    let growth = p1 / p0;
    println!(
        "- scaling, {what}: per {unit} {p0:.4} at {n0} → {p1:.4} at {n1}: ×{growth:.2}{}",
        if growth > 1.25 {
            " SUPER-LINEAR"
        } else {
            " (linear or better)"
        }
    );
}

fn two_cpus() -> bool {
    let set = START_AFFINITY.get_or_init(start_affinity);
    set.is_set(0).unwrap_or(false) && set.is_set(1).unwrap_or(false)
}

/// CPU time (ns) the server has used so far, all threads: from
/// /proc/PID/task/*/schedstat (nanosecond resolution, unlike utime/stime).
fn server_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

/// MiB/s of `process_vm_readv` alone: `total` bytes at `addr` of `pid`,
/// 1 MiB a call (the size of one `x` packet).
fn vm_readv_limit(pid: i32, addr: u64, total: usize) -> Result<f64> {
    use nix::sys::uio::process_vm_readv;
    use nix::sys::uio::RemoteIoVec;
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    let t = Instant::now();
    let mut off = 0;
    while off < total {
        let n = CHUNK.min(total - off);
        let remote = RemoteIoVec {
            base: addr as usize + off,
            len: n,
        };
        let mut local = [std::io::IoSliceMut::new(&mut buf[..n])];
        let got = process_vm_readv(nix::unistd::Pid::from_raw(pid), &mut local, &[remote])?;
        if got == 0 {
            bail!("process_vm_readv read nothing at offset {off}");
        }
        off += got;
    }
    Ok(total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

/// MiB/s of loopback TCP alone: a thread writes `total` bytes in 1 MiB
/// writes, this thread reads them with the bench client's 1 MiB reads.
fn loopback_limit(total: usize) -> Result<f64> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = l.local_addr()?.port();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        let chunk = vec![0x5au8; 1 << 20];
        let mut off = 0;
        while off < total {
            let n = chunk.len().min(total - off);
            s.write_all(&chunk[..n])?;
            off += n;
        }
        Ok(())
    });
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    let mut tmp = vec![0u8; 1 << 20];
    let t = Instant::now();
    let mut got = 0;
    while got < total {
        let n = s.read(&mut tmp)?;
        if n == 0 {
            bail!("loopback closed after {got} bytes");
        }
        got += n;
    }
    let mibs = total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64();
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("loopback writer panicked"))??;
    Ok(mibs)
}

/// MiB/s of reading `total` bytes of the fixture's buffer at `big` with
/// `mode` (`m` or `x`) in `chunk`-byte requests; every reply's first and
/// last byte are checked against the fixture's pattern.
fn read_rate(c: &mut Rsp, mode: &str, chunk: usize, big: u64, total: usize) -> Result<f64> {
    let expect = |i: usize| (i.wrapping_mul(7).wrapping_add(0x11)) as u8;
    let mut raw = Vec::with_capacity(chunk + 64);
    let mut hex = Vec::new();
    let t = Instant::now();
    let mut off = 0;
    while off < total {
        let n = chunk.min(total - off);
        c.send(format!("{mode}{:x},{n:x}", big + off as u64).as_bytes())?;
        c.recv_into(&mut raw)?;
        let data = if mode == "m" {
            hex.clear();
            hex.extend(unhex(&raw));
            &hex
        } else {
            &raw
        };
        let (Some(first), Some(last)) = (data.first(), data.last()) else {
            bail!("{mode} read returned nothing at offset {off}");
        };
        if *first != expect(off) || *last != expect(off + data.len() - 1) {
            bail!("{mode} read: wrong data at offset {off}");
        }
        off += data.len();
    }
    Ok(total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

fn measure_on(port: u16, prog: &Path, a: &Args, server_pid: u32) -> Result<Figures> {
    let mut c = Rsp::connect(port)?;
    let (sup, stop) = c.handshake()?;
    let psize = sup
        .split(';')
        .find_map(|f| f.strip_prefix("PacketSize="))
        .and_then(|v| usize::from_str_radix(v, 16).ok())
        .unwrap_or(4096);
    let tid = stop
        .get(3..)
        .unwrap_or_default()
        .split(';')
        .find_map(|k| k.strip_prefix("thread:"))
        .map(|s| s.to_string())
        .context("no thread in stop reply")?;
    let func = nm(prog, "bench_func")?;
    let big = nm(prog, "g_big")?;
    let hits = nm(prog, "g_hits")?;
    // Run to bench_func: the buffer is filled by then.
    c.ask_s(&format!("Z0,{func:x},1"))?;
    let s = c.ask_s("vCont;c")?;
    if !s.starts_with('T') {
        bail!("expected a stop, got {s}");
    }

    // qC latency.
    let cpu0 = server_cpu_ns(server_pid);
    let qc_us = qc_latency(&mut c, a.latency)?;
    let qc_cpu_us =
        (server_cpu_ns(server_pid).saturating_sub(cpu0)) as f64 / 1000.0 / a.latency as f64;
    let syscalls = syscalls_per_qc(&mut c, server_pid, 200)?;
    let allocs = allocs_per_qc(&mut c, server_pid, 2000)?;

    // Memory: 16 MiB with m in the largest chunk and with x where offered;
    // then the best of them for the other sizes (how the rate grows with
    // the length).
    let m_chunk = (psize.saturating_sub(8) / 2).max(1);
    let x_ok = c.ask_s("x0,0")? == "OK";
    let mut modes = vec![("m", m_chunk)];
    if x_ok {
        modes.push(("x", psize.saturating_sub(8).max(1)));
    }
    let mut best = (0.0f64, "m", m_chunk, f64::NAN);
    for (mode, chunk) in modes {
        let cpu0 = server_cpu_ns(server_pid);
        let mibs = read_rate(&mut c, mode, chunk, big, 16 << 20)?;
        let cpu = server_cpu_ns(server_pid).saturating_sub(cpu0) as f64 / 1000.0 / 16.0;
        if mibs > best.0 {
            best = (mibs, mode, chunk, cpu);
        }
    }
    let (mread_mibs, mode, chunk, mread_cpu16_us_per_mib) = best;
    let mread_how = format!("{mode} {chunk} B");
    let mread_1_mibs = read_rate(&mut c, mode, chunk, big, 1 << 20)?;
    let cpu0 = server_cpu_ns(server_pid);
    let mread_256_mibs = if a.no_256 {
        f64::NAN
    } else {
        read_rate(&mut c, mode, chunk, big, 256 << 20)?
    };
    let mread_cpu_us_per_mib = if a.no_256 {
        f64::NAN
    } else {
        server_cpu_ns(server_pid).saturating_sub(cpu0) as f64 / 1000.0 / 256.0
    };
    const TOTAL: usize = 16 << 20;
    let mread_syscalls = syscalls_per_read(&mut c, server_pid, mode, chunk, big)?;

    // The physical limits of the same read, measured now (same load).
    let inferior = c.ask_s("qC")?;
    let vm_readv_mibs = inferior
        .strip_prefix("QC")
        .map(|r| r.strip_prefix('p').unwrap_or(r))
        .and_then(|r| r.split('.').next())
        .and_then(|p| i32::from_str_radix(p, 16).ok())
        .map_or(Ok(f64::NAN), |pid| vm_readv_limit(pid, big, TOTAL))?;
    let loopback_mibs = loopback_limit(TOTAL)?;

    // Single steps.
    c.ask_s(&format!("z0,{func:x},1"))?;
    let t = Instant::now();
    for _ in 0..a.steps {
        let s = c.ask_s(&format!("vCont;s:{tid}"))?;
        if !s.starts_with('T') {
            bail!("step: {s}");
        }
    }
    let steps_s = a.steps as f64 / t.elapsed().as_secs_f64();

    // Breakpoint cycles: continue to the bp, then client step-over.
    let read_hits = |c: &mut Rsp| -> Result<u64> {
        let r = c.ask_s(&format!("m{hits:x},8"))?;
        let b: Vec<u8> = (0..8)
            .map(|i| u8::from_str_radix(&r[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect();
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    c.ask_s(&format!("Z0,{func:x},1"))?;
    let s = c.ask_s("vCont;c")?;
    if !s.starts_with('T') {
        bail!("continue: {s}");
    }
    // gdbserver/lldb-server do not rewind the PC in a way we rely on; the
    // client step-over is the same for all three.
    let before = read_hits(&mut c)?;
    let t = Instant::now();
    for _ in 0..a.bp {
        c.ask_s(&format!("z0,{func:x},1"))?;
        c.ask_s(&format!("vCont;s:{tid}"))?;
        c.ask_s(&format!("Z0,{func:x},1"))?;
        let s = c.ask_s("vCont;c")?;
        if !s.starts_with('T') {
            bail!("bp cycle: {s}");
        }
    }
    let bp_s = a.bp as f64 / t.elapsed().as_secs_f64();
    let after = read_hits(&mut c)?;
    if after.saturating_sub(before) != a.bp as u64 {
        bail!(
            "breakpoint cycles advanced the loop {} times, expected {}",
            after - before,
            a.bp
        );
    }
    let _ = c.send(b"k");
    let _ = c.recv();
    Ok(Figures {
        qc_us,
        qc_same_us: f64::NAN,
        qc_split_us: f64::NAN,
        qc_py_us: f64::NAN,
        qc_cpu_us,
        syscalls,
        allocs,
        mread_mibs,
        mread_1_mibs,
        mread_256_mibs,
        mread_cpu_us_per_mib,
        mread_cpu16_us_per_mib,
        mread_syscalls,
        mread_how,
        vm_readv_mibs,
        loopback_mibs,
        steps_s,
        bp_s,
    })
}

/// The run's fixture directory, removed when the run ends.
struct OutDir(PathBuf);

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() -> Result<()> {
    let a = Args::parse();
    START_AFFINITY.get_or_init(start_affinity);
    if let Some(port) = a.echo_server {
        return echo_server(port, a.echo_list);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // The fixtures are built per run: two benches at once (two engineers'
    // A/Bs on one machine) no longer overwrite each other's programs.
    let out_dir = OutDir(std::env::temp_dir().join(format!("gdbmux-bench-{}", std::process::id())));
    let out = out_dir.0.clone();
    std::fs::create_dir_all(&out)?;
    let gdbmux = a
        .gdbmux
        .clone()
        .unwrap_or_else(|| root.join("../../target/release/gdbmux"));
    if a.gpu_scale {
        return gpu::mode(&a, &root, &out, &gdbmux);
    }
    let mut stubs: Vec<&str> = ["gdbmux", "gdbserver", "lldb-server"]
        .into_iter()
        .filter(|s| a.only.is_empty() || a.only.iter().any(|o| o == s))
        .collect();
    if a.baseline.is_some() {
        stubs.insert(1, "gdbmux-baseline");
    }
    if !a.lldb_threads.is_empty() {
        let prog = lldb::fixture(&a, &root, &out)?;
        return lldb::mode(&stubs, &gdbmux, &prog, &a);
    }
    let prog = match &a.prog {
        Some(p) => p.clone(),
        None => {
            let prog = out.join("bench");
            let st = Command::new("gcc")
                .args(["-g", "-O0", "-no-pie", "-o"])
                .arg(&prog)
                .arg(root.join("fixtures/bench.c"))
                .status()
                .context("running gcc (or pass --prog)")?;
            if !st.success() {
                bail!("gcc failed");
            }
            prog
        }
    };
    if a.clients {
        return clients_mode(&stubs, &gdbmux, &prog, &a);
    }

    let mut runs: Vec<(&str, Vec<Figures>)> = stubs.iter().map(|s| (*s, Vec::new())).collect();
    let mut floor: Vec<(f64, f64)> = Vec::new();
    let mut floor_cpus: Vec<f64> = Vec::new();
    let mut no_poll: Vec<NoPoll> = Vec::new();
    // The same for `--baseline` (the A/B of the figure busy polling hides).
    let mut no_poll_base: Vec<NoPoll> = Vec::new();
    for round in 0..a.rounds.max(1) {
        for (s, v) in runs.iter_mut() {
            eprintln!("round {} : measuring {s} …", round + 1);
            match measure(s, binary_for(s, &gdbmux, &a), &prog, &a) {
                Ok(f) => v.push(f),
                Err(e) => eprintln!("  {s}: {e:#}"),
            }
        }
        if stubs.contains(&"gdbmux") {
            eprintln!("round {} : measuring gdbmux --busy-poll-us 0 …", round + 1);
            match measure_no_poll(&gdbmux, &prog, &a) {
                Ok(r) => no_poll.push(r),
                Err(e) => eprintln!("  gdbmux --busy-poll-us 0: {e:#}"),
            }
        }
        if let Some(base) = &a.baseline {
            eprintln!(
                "round {} : measuring gdbmux-baseline --busy-poll-us 0 …",
                round + 1
            );
            match measure_no_poll(base, &prog, &a) {
                Ok(r) => no_poll_base.push(r),
                Err(e) => eprintln!("  gdbmux-baseline --busy-poll-us 0: {e:#}"),
            }
        }
        if two_cpus() {
            let same = placed_latency("floor", &gdbmux, &prog, &a, Placement::Same)?;
            let split = placed_latency("floor", &gdbmux, &prog, &a, Placement::Split)?;
            floor.push((same, split));
        }
        match floor_cpu(&gdbmux, &prog, &a) {
            Ok(c) => floor_cpus.push(c),
            Err(e) => eprintln!("  floor CPU: {e:#}"),
        }
    }
    let median = |mut v: Vec<f64>| -> f64 {
        v.retain(|x| x.is_finite());
        median(v)
    };
    let results: Vec<(&str, Figures)> = runs
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(s, v)| {
            let pick = |g: fn(&Figures) -> f64| median(v.iter().map(g).collect());
            let how = v.first().map(|f| f.mread_how.clone()).unwrap_or_default();
            let syscalls = v.iter().find_map(|f| f.syscalls.clone());
            let allocs = median(v.iter().filter_map(|f| f.allocs).collect());
            (
                s,
                Figures {
                    qc_us: pick(|f| f.qc_us),
                    qc_same_us: pick(|f| f.qc_same_us),
                    qc_split_us: pick(|f| f.qc_split_us),
                    qc_py_us: pick(|f| f.qc_py_us),
                    qc_cpu_us: pick(|f| f.qc_cpu_us),
                    syscalls,
                    allocs: allocs.is_finite().then_some(allocs),
                    mread_mibs: pick(|f| f.mread_mibs),
                    mread_1_mibs: pick(|f| f.mread_1_mibs),
                    mread_256_mibs: pick(|f| f.mread_256_mibs),
                    mread_cpu_us_per_mib: pick(|f| f.mread_cpu_us_per_mib),
                    mread_cpu16_us_per_mib: pick(|f| f.mread_cpu16_us_per_mib),
                    mread_syscalls: v.iter().find_map(|f| f.mread_syscalls.clone()),
                    mread_how: how,
                    vm_readv_mibs: pick(|f| f.vm_readv_mibs),
                    loopback_mibs: pick(|f| f.loopback_mibs),
                    steps_s: pick(|f| f.steps_s),
                    bp_s: pick(|f| f.bp_s),
                },
            )
        })
        .collect();
    println!("medians of {} interleaved rounds", a.rounds.max(1));
    let peer_best = |f: &dyn Fn(&Figures) -> f64, lower_better: bool| -> Option<f64> {
        let it = results
            .iter()
            .filter(|(n, _)| !n.starts_with("gdbmux"))
            .map(|(_, x)| f(x));
        if lower_better {
            it.reduce(f64::min)
        } else {
            it.reduce(f64::max)
        }
    };
    type Getter = fn(&Figures) -> f64;
    let rows: Vec<(&str, Getter, bool, &str)> = vec![
        (
            "qC round trip, Rust client, scheduler's placement (µs, median)",
            |f| f.qc_us,
            true,
            "≤ 0.8",
        ),
        (
            "qC round trip, client and server on one CPU (µs)",
            |f| f.qc_same_us,
            true,
            "≤ 0.8",
        ),
        (
            "qC round trip, client and server on two CPUs (µs)",
            |f| f.qc_split_us,
            true,
            "≤ 0.8",
        ),
        (
            "qC round trip, Python client as in research §12 (µs, median)",
            |f| f.qc_py_us,
            true,
            "≤ 0.8",
        ),
        ("server CPU per qC (µs)", |f| f.qc_cpu_us, true, "-"),
        ("read 1 MiB (MiB/s)", |f| f.mread_1_mibs, false, "-"),
        ("read 16 MiB (MiB/s)", |f| f.mread_mibs, false, "≥ 1024"),
        (
            "read 256 MiB (MiB/s)",
            |f| f.mread_256_mibs,
            false,
            "≥ 1024",
        ),
        (
            "server CPU per MiB read (µs, 256 MiB read)",
            |f| f.mread_cpu_us_per_mib,
            true,
            "-",
        ),
        ("single steps/s", |f| f.steps_s, false, "≥ 1.2"),
        ("bp hit+step-over cycles/s", |f| f.bp_s, false, "≥ 1.2"),
    ];
    println!(
        "| metric | {} | gdbmux ÷ best peer | target |",
        results
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}---|---|", "---|".repeat(results.len()));
    for (name, get, lower, target) in rows {
        let vals: Vec<String> = results
            .iter()
            .map(|(_, f)| format!("{:.1}", get(f)))
            .collect();
        let ratio = match (
            results.iter().find(|(n, _)| *n == "gdbmux"),
            peer_best(&get, lower),
        ) {
            (Some((_, g)), Some(p)) if p > 0.0 => format!("{:.2}", get(g) / p),
            _ => "-".into(),
        };
        println!("| {name} | {} | {ratio} | {target} |", vals.join(" | "));
    }
    for (n, f) in &results {
        // Reading all of a reply and then sending it (no overlap) can at
        // best take the two limits' times one after the other.
        let series = 1.0 / (1.0 / f.vm_readv_mibs + 1.0 / f.loopback_mibs);
        println!(
            "- {n}: memory read used {}; in the same rounds process_vm_readv alone \
             {:.0} MiB/s, loopback TCP alone {:.0} MiB/s (the two one after the other, \
             no overlap: {:.0} MiB/s): the 16 MiB read ran at {:.0}% and {:.0}% of them \
             ({:.0}% of the one after the other), the 256 MiB read at {:.0}% and {:.0}%",
            f.mread_how,
            f.vm_readv_mibs,
            f.loopback_mibs,
            series,
            100.0 * f.mread_mibs / f.vm_readv_mibs,
            100.0 * f.mread_mibs / f.loopback_mibs,
            100.0 * f.mread_mibs / series,
            100.0 * f.mread_256_mibs / f.vm_readv_mibs,
            100.0 * f.mread_256_mibs / f.loopback_mibs,
        );
    }
    let best_peer_cpu = peer_best(&|f: &Figures| f.qc_cpu_us, true);
    if let (Some((_, g)), false) = (
        results.iter().find(|(n, _)| *n == "gdbmux"),
        no_poll.is_empty(),
    ) {
        let lat_off = median(no_poll.iter().map(|r| r.0).collect());
        let cpu_off = median(no_poll.iter().map(|r| r.1).collect());
        println!(
            "- busy-poll off (`--busy-poll-us 0`): qC round trip {lat_off:.1} µs, server CPU per qC \
             {cpu_off:.1} µs = {} × the best peer's (target ≤ 0.7)",
            best_peer_cpu.map_or("-".into(), |p| format!("{:.2}", cpu_off / p))
        );
        let saved = lat_off - g.qc_us;
        let spent = g.qc_cpu_us - cpu_off;
        println!(
            "- busy-poll on (default) vs off: the round trip is {saved:.1} µs shorter for \
             {spent:.1} µs more server CPU per qC: {} µs of CPU per µs of latency saved",
            if saved > 0.0 {
                format!("{:.2}", spent / saved)
            } else {
                "- (no latency saved in this run)".into()
            }
        );
        if !no_poll_base.is_empty() {
            let base_off = median(no_poll_base.iter().map(|r| r.1).collect());
            println!(
                "- busy-poll off, gdbmux-baseline: server CPU per qC {base_off:.1} µs = {} × the \
                 best peer's; gdbmux ÷ gdbmux-baseline {:.2}",
                best_peer_cpu.map_or("-".into(), |p| format!("{:.2}", base_off / p)),
                cpu_off / base_off
            );
        }
        if let Some((total, each)) = no_poll.iter().find_map(|r| r.2.clone()) {
            println!("- syscalls per qC (strace -c -f), gdbmux busy-poll off: {total:.1} ({each})");
        }
        if let Some(n) = no_poll.iter().find_map(|r| r.3) {
            println!(
                "- heap allocations per qC (perf uprobes on libc malloc/calloc/realloc), \
                 gdbmux busy-poll off: {n:.2}"
            );
        }
    }
    for (n, f) in &results {
        if let Some((total, each)) = &f.syscalls {
            println!("- syscalls per qC (strace -c -f), {n}: {total:.1} ({each})");
        }
        match f.allocs {
            Some(a) => println!(
                "- heap allocations per qC (perf uprobes on libc malloc/calloc/realloc), {n}: {a:.2}"
            ),
            None => println!(
                "- heap allocations per qC, {n}: not measured (needs perf and root for uprobes)"
            ),
        }
    }
    for (n, f) in &results {
        if let Some((total, each)) = &f.mread_syscalls {
            println!(
                "- syscalls per MiB of a 4 MiB read ({}, strace -c -f), {n}: {total:.1} ({each})",
                f.mread_how
            );
        }
    }
    // Scaling: server-side time per MiB from its rate at each length.
    for (n, f) in &results {
        let growth = f.mread_cpu_us_per_mib / f.mread_cpu16_us_per_mib;
        println!(
            "- scaling, {n}: server CPU per MiB read at 16 / 256 MiB: {:.0} / {:.0} µs; \
             16 → 256 MiB ×{growth:.2}{}",
            f.mread_cpu16_us_per_mib,
            f.mread_cpu_us_per_mib,
            if growth > 1.25 {
                " SUPER-LINEAR"
            } else {
                " (linear)"
            }
        );
        let per = |mibs: f64| 1e6 / mibs;
        let (a1, a16, a256) = (
            per(f.mread_1_mibs),
            per(f.mread_mibs),
            per(f.mread_256_mibs),
        );
        let growth = a256 / a16;
        println!(
            "- scaling, {n}: memory read µs per MiB at 1 / 16 / 256 MiB: {a1:.0} / {a16:.0} / \
             {a256:.0}; 16 → 256 MiB ×{growth:.2}{}",
            if growth > 1.25 {
                " SUPER-LINEAR"
            } else {
                " (linear)"
            }
        );
    }
    if !floor.is_empty() {
        let same = median(floor.iter().map(|f| f.0).collect());
        let split = median(floor.iter().map(|f| f.1).collect());
        println!(
            "- floor (do-nothing blocking read/write server, same client): \
             one CPU {same:.1} µs, two CPUs {split:.1} µs"
        );
    }
    if !floor_cpus.is_empty() {
        let cpu = median(floor_cpus.clone());
        println!(
            "- floor server CPU per request (one blocking read and one write, the scheduler's \
             placement): {cpu:.1} µs = {} × the best peer's server CPU per qC (the busy-poll-off \
             target is 0.7 × the best peer's)",
            best_peer_cpu.map_or("-".into(), |p| format!("{:.2}", cpu / p))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::decode_into;

    /// `data` with the RSP binary escapes (`}` then the byte xor 0x20 for
    /// `#`, `$`, `}` and `*`).
    fn escaped(data: &[u8]) -> Vec<u8> {
        let mut raw = Vec::new();
        for &b in data {
            if matches!(b, b'#' | b'$' | b'}' | b'*') {
                raw.extend([b'}', b ^ 0x20]);
            } else {
                raw.push(b);
            }
        }
        raw
    }

    /// Escapes decode wherever they fall against the 64-byte blocks (an
    /// escape every 64 bytes or so), appended after what `out` held; a run
    /// repeats the byte before it.
    #[test]
    fn decode_matches_a_byte_by_byte_decoder() {
        let data: Vec<u8> = (0..5000usize).map(|i| (i * 7 + 0x11) as u8).collect();
        let raw = escaped(&data);
        for cut in [0, 1, 63, 64, 65, 200] {
            let mut out = data[..cut].to_vec();
            decode_into(&raw, &mut out);
            assert_eq!(&out[cut..], &data[..], "after {cut} bytes");
        }
        // `*` + count: the previous byte repeated count - 29 times.
        let mut out = Vec::new();
        decode_into(b"a*\"b", &mut out);
        assert_eq!(out, b"aaaaaab");
        // Long stretches without an escape (`memchr2` after four plain
        // blocks), an escape now and then, one right after the stretch.
        let text: Vec<u8> = (0..20_000usize)
            .map(|i| match i % 700 {
                0 => b'#',
                1 => b'}',
                _ => b"0123456789abcdef,"[i % 17],
            })
            .collect();
        for cut in [0, 5, 64] {
            let mut out = text[..cut].to_vec();
            assert_eq!(decode_into(&escaped(&text), &mut out), escaped(&text).len());
            assert_eq!(&out[cut..], &text[..], "after {cut} bytes");
        }
    }

    /// Decoded read by read (as `Rsp::recv_into` does): an escape or a run
    /// cut by a read waits for its second byte, wherever the cut falls.
    #[test]
    fn decode_in_pieces_matches_decode_whole() {
        let binary: Vec<u8> = (0..3000usize).map(|i| (i * 7 + 0x11) as u8).collect();
        // Text: escapes far apart (the `memchr2` stretches).
        let text: Vec<u8> = (0..3000usize)
            .map(|i| {
                if i % 900 == 0 {
                    b'$'
                } else {
                    b"0123456789abcdef,"[i % 17]
                }
            })
            .collect();
        for data in [binary, text] {
            let mut raw = escaped(&data);
            raw.extend(b"z*\"");
            let mut whole = Vec::new();
            assert_eq!(decode_into(&raw, &mut whole), raw.len());
            for piece in [1, 2, 63, 64, 65, 127, 500] {
                let mut out = Vec::new();
                let (mut pos, mut end) = (0, 0);
                while end < raw.len() {
                    end = (end + piece).min(raw.len());
                    pos += decode_into(&raw[pos..end], &mut out);
                }
                assert_eq!(pos, raw.len(), "pieces of {piece}");
                assert_eq!(out, whole, "pieces of {piece}");
            }
        }
        let mut out = b"a".to_vec();
        assert_eq!(decode_into(b"b}", &mut out), 1);
        assert_eq!(decode_into(b"b*", &mut out), 1);
    }

    #[test]
    fn count_byte_matches_a_plain_count() {
        let data: Vec<u8> = (0..1000usize).map(|i| b",0a,"[(i * 7) % 4]).collect();
        for len in [0, 1, 63, 64, 65, 127, 128, 129, 1000] {
            let plain = data[..len].iter().filter(|&&b| b == b',').count();
            assert_eq!(super::count_byte(&data[..len], b','), plain, "{len} bytes");
        }
        // 64 of them in one block (the block's byte counter at its most).
        assert_eq!(super::count_byte(&[b','; 64 * 3 + 5], b','), 64 * 3 + 5);
    }

    /// A client connected to a server socket that this test writes to.
    fn pair() -> (super::Rsp, std::net::TcpStream) {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let mut c = super::Rsp::connect(port).unwrap();
        c.noack = true;
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    /// Replies are checked against their checksums, escapes and runs
    /// included (the sum is over the bytes as sent), in one read or cut
    /// across reads; a wrong one is an error.
    #[test]
    fn replies_are_checked_against_their_checksums() {
        use std::io::Write as _;
        let (mut c, mut s) = pair();
        let mut out = Vec::new();
        let body = b"m1,2,}\x03a*\"";
        let sum = super::checksum(body);
        let mut frame = b"$".to_vec();
        frame.extend_from_slice(body);
        frame.extend(format!("#{sum:02x}").bytes());
        s.write_all(&frame).unwrap();
        c.recv_into(&mut out).unwrap();
        assert_eq!(out, b"m1,2,#aaaaaa");
        // Written in three pieces (after the `}`, then inside `#cc`), which
        // the client may read cut there or not: the same reply either way.
        s.write_all(&frame[..7]).unwrap();
        let (rest, tail) = frame[7..].split_at(frame.len() - 8);
        let writer = std::thread::spawn({
            let mut s = s.try_clone().unwrap();
            let (rest, tail) = (rest.to_vec(), tail.to_vec());
            move || {
                s.write_all(&rest).unwrap();
                s.write_all(&tail).unwrap();
            }
        });
        c.recv_into(&mut out).unwrap();
        writer.join().unwrap();
        assert_eq!(out, b"m1,2,#aaaaaa");
        let last = frame.len() - 1;
        frame[last] ^= 1;
        s.write_all(&frame).unwrap();
        let e = c.recv_into(&mut out).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
    }

    /// The floor server's list: the ids it was asked for, in lldb's form,
    /// counted by the bench's own list reader; then `l`.
    #[test]
    fn the_floor_server_lists_its_ids() {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || super::echo_serve(l, Some(3000)));
        let mut c = super::Rsp::connect(port).unwrap();
        c.noack = true;
        let mut buf = Vec::new();
        for _ in 0..3 {
            assert_eq!(c.list_threads(&mut buf).unwrap().0, 3000);
        }
        assert_eq!(c.ask("qC").unwrap(), b"QCp1.1");
        drop(c);
        server.join().unwrap().unwrap();
    }
}
