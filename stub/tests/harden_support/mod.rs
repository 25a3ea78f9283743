//! Shared helpers for the fault and container tests: gdbmux as a child
//! process whose log lines can be awaited (channel with a deadline, no
//! sleeps), small C helpers built once, and a raw RSP client.
#![allow(dead_code)]

#[path = "../fixture_support/mod.rs"]
mod fixture_support;

use std::io::BufRead;
use std::io::BufReader;
use std::io::Read;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

pub use protocol_tests::client::RspClient;
pub use protocol_tests::reply::StopReply;

/// Deadline for any single awaited event.
pub const WAIT: Duration = Duration::from_secs(20);

const HELPERS: &[&str] = &["waiter", "tracer", "spin", "gate"];

/// Path of a helper program, built once per test binary with gcc.
pub fn helper(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("harden-fixtures");
        fixture_support::build_c(&out, HELPERS, &["-O0", "-no-pie"]);
        out
    });
    assert!(HELPERS.contains(&name), "unknown helper {name}");
    dir.join(name)
}

/// gdbmux (no GPU, `extra` options) on a free port serving the `spin`
/// helper; and the helper's path.
pub fn spin_server(extra: &[&str]) -> (Gdbmux, PathBuf) {
    let spin = helper("spin");
    let mut args = vec!["--no-gpu"];
    args.extend_from_slice(extra);
    args.push("127.0.0.1:0");
    args.push("--");
    let prog = spin.display().to_string();
    args.push(&prog);
    (Gdbmux::start(&args), spin)
}

/// Address of a symbol of a non-PIE helper (`nm`). Every test that uses
/// this module declares `mod gpu_support` too.
pub fn sym(prog: &Path, symbol: &str) -> u64 {
    crate::gpu_support::nm(prog, symbol, false)
}

/// A running gdbmux (or a wrapper around it) with its stderr captured.
pub struct Gdbmux {
    child: Child,
    /// The address it listens on (`Listening on …`).
    pub addr: String,
    lines: mpsc::Receiver<String>,
    log: Arc<Mutex<String>>,
}

/// The gdbmux binary under test.
pub fn gdbmux_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gdbmux"))
}

impl Gdbmux {
    /// Start gdbmux with `args`, logging `mux`/`session` at info.
    pub fn start(args: &[&str]) -> Gdbmux {
        let mut cmd = Command::new(gdbmux_bin());
        cmd.args(args);
        Gdbmux::spawn(cmd)
    }

    /// Start an arbitrary command that ends up running gdbmux; wait for its
    /// "Listening on" line (fails after [`WAIT`]).
    pub fn spawn(cmd: Command) -> Gdbmux {
        Gdbmux::spawn_until(cmd, "Listening on ")
    }

    /// Start a command and wait for a stderr line with `needle`; what
    /// follows the needle on that line is [`Gdbmux::addr`].
    pub fn spawn_until(mut cmd: Command, needle: &str) -> Gdbmux {
        cmd.env("GDBMUX_LOG", "warn,mux=info,session=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start gdbmux");
        let (tx, rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(String::new()));
        let l2 = log.clone();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut l) = l2.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
                let _ = tx.send(line);
            }
        });
        let mut g = Gdbmux {
            child,
            addr: String::new(),
            lines: rx,
            log,
        };
        let line = g.wait_line(needle);
        g.addr = line
            .split(needle)
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string();
        g
    }

    /// Wait for a log line containing `needle` (fails loudly after [`WAIT`]).
    pub fn wait_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!(
                    "no log line with {needle:?} within {WAIT:?}:\n{}",
                    self.log()
                ),
            }
        }
    }

    /// Everything logged so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Pid of the gdbmux child (or its wrapper).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A fresh client.
    pub fn connect(&self) -> RspClient {
        RspClient::connect(self.addr.as_str()).expect("connect to gdbmux")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Gdbmux {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run a command to completion with a deadline; returns (status, stderr).
pub fn run_to_end(mut cmd: Command) -> (std::process::ExitStatus, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut err = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    let text = match rx.recv_timeout(WAIT) {
        Ok(t) => t,
        Err(_) => {
            let _ = child.kill();
            panic!("command did not finish within {WAIT:?}: {cmd:?}");
        }
    };
    let st = child.wait().expect("wait");
    (st, text)
}

/// A helper program with piped stdout; [`Helper::line`] reads what it
/// prints (its readiness), with a deadline.
pub struct Helper {
    /// The child.
    pub child: Child,
    lines: mpsc::Receiver<String>,
}

impl Helper {
    /// Spawn and keep stdin open (the helpers exit when it closes).
    pub fn spawn(mut cmd: Command) -> Helper {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn helper");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Helper { child, lines: rx }
    }

    /// Next line printed (fails after [`WAIT`]).
    pub fn line(&self) -> String {
        self.lines
            .recv_timeout(WAIT)
            .expect("helper printed nothing in time")
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Decode the text of an `Exx;HEX` error reply (lldb error strings) or an
/// `E.text` one (refusals).
pub fn error_text(reply: &[u8]) -> String {
    if let Some(text) = reply.strip_prefix(b"E.") {
        return String::from_utf8_lossy(text).into_owned();
    }
    let s = String::from_utf8_lossy(reply);
    let Some((_, hex)) = s.split_once(';') else {
        return s.into_owned();
    };
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Hex-encode bytes (for `vFile` paths and `vAttach`).
pub fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Wait until `pid` has exited (pidfd readable), failing after [`WAIT`].
pub fn wait_pid_exit(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return; // Already gone.
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut pfd, 1, WAIT.as_millis() as i32) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    assert!(r == 1, "process {pid} did not exit within {WAIT:?}");
}

/// Pid of the launched inferior, from gdbmux's "created; pid = N" line.
pub fn inferior_pid(g: &Gdbmux) -> i32 {
    g.log()
        .lines()
        .find_map(|l| l.split("created; pid = ").nth(1)?.trim().parse().ok())
        .expect("gdbmux printed the inferior's pid")
}

/// Drive a GPU sample (on a CPU session, any dialect) to the entry of
/// `simgpu_launch` in the runtime library `rt`: the GPU runtime is up and
/// the kernel's code object loaded.
pub fn run_to_gpu_launch(c: &mut RspClient, pid: i32, sample: &Path, rt: &Path) {
    use protocol_tests::transcript::symbol_address;
    let main = symbol_address(sample, pid as u64, "main").expect("main");
    c.expect_ok(&format!("Z0,{main:x},1")).unwrap();
    let (stop, _) = c.stop_reply("vCont;c").unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    c.expect_ok(&format!("z0,{main:x},1")).unwrap();
    let launch = symbol_address(rt, pid as u64, "simgpu_launch").expect("simgpu_launch");
    c.expect_ok(&format!("Z0,{launch:x},1")).unwrap();
    let (stop, _) = c.stop_reply("vCont;c").unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    c.expect_ok(&format!("z0,{launch:x},1")).unwrap();
}

/// `jAcceleratorPluginInitialize` on the CPU session: the offer's URL.
pub fn offer_url(c: &mut RspClient) -> String {
    let r = c.request(b"jAcceleratorPluginInitialize").unwrap();
    let actions = protocol_tests::reply::parse_accelerator_actions(&r)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r)));
    actions
        .into_iter()
        .find_map(|a| a.connect_info)
        .unwrap_or_else(|| panic!("no connect_info in {}", String::from_utf8_lossy(&r)))
        .connect_url
}

/// From a CPU session `cpu` (handshake done) of `g` serving the GPU sample
/// `sample`: run to `simgpu_launch` (in the runtime library `rt`), claim
/// the offer with a new lldb-dialect connection and check its first `?` is
/// a `T` stop. Returns the inferior's pid, the offer's URL and the GPU
/// session.
pub fn claim_gpu_at_launch(
    g: &Gdbmux,
    cpu: &mut RspClient,
    sample: &Path,
    rt: &Path,
) -> (i32, String, RspClient) {
    let pid = inferior_pid(g);
    run_to_gpu_launch(cpu, pid, sample, rt);
    let url = offer_url(cpu);
    let (url, gpu) = claim_offered(&url);
    (pid, url, gpu)
}

/// Claim the offer made at `url` with a new lldb-dialect connection from
/// this process and check its first `?` is a `T` stop. Returns the URL and
/// the GPU session.
pub fn claim_offered(url: &str) -> (String, RspClient) {
    let mut gpu = RspClient::connect(url.trim_start_matches("connect://")).unwrap();
    gpu.handshake_lldb().unwrap();
    let stop = StopReply::parse(&gpu.request(b"?").unwrap()).unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    (url.to_string(), gpu)
}
