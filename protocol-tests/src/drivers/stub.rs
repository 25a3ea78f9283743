//! Launching a stub under test from a command template.
//!
//! Templates are split on whitespace; the placeholders `{addr}`
//! (`127.0.0.1:PORT`), `{port}`, `{prog}`, `{args}` (zero or more words) and
//! `{pid}` are substituted. The port is chosen free beforehand; readiness is
//! detected by watching for a LISTEN socket on it in `/proc/net/tcp`, so no
//! probe connection is spent (lldb-server accepts exactly one).

use std::net::SocketAddr;
use std::net::TcpListener;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

use super::fixtures;
use super::fixtures::Fixture;
use super::process;
use crate::client::RspClient;

/// How long a stub may take to start listening.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// Which server family a stub behaves like, where the protocol allows choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// gdbmux (GDB signal numbers, gdb and lldb extensions).
    Gdbmux,
    /// GNU gdbserver 13.
    Gdbserver,
    /// lldb-server 23 in gdbserver mode (native signal numbers).
    LldbServer,
    /// A user template: expectations of the GDB dialect.
    Custom,
}

impl Dialect {
    /// Signal number of SIGUSR1 in this server's stop replies.
    pub fn sigusr1(self) -> u8 {
        match self {
            Self::LldbServer => 10,
            _ => 30,
        }
    }

    /// Signal numbers acceptable as the reply to an interrupt
    /// (gdbserver: GDB SIGINT 2; lldb-server: native SIGSTOP 0x13).
    pub fn interrupt_signals(self) -> &'static [u8] {
        match self {
            Self::Gdbserver => &[2],
            Self::LldbServer => &[0x13],
            Self::Gdbmux | Self::Custom => &[2, 0x11, 0x13, 0],
        }
    }

    /// Whether stock gdb 13 can debug through this server at all
    /// (gdb → lldb-server fails at connect: research §9).
    pub fn gdb_compatible(self) -> bool {
        self != Self::LldbServer
    }

    /// Whether stock lldb 23 can debug multi-threaded programs through it
    /// (lldb → gdbserver breaks on stale swbreak events: research §9).
    pub fn lldb_threads_compatible(self) -> bool {
        self != Self::Gdbserver
    }
}

/// Why a stub could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StubError {
    /// The gdbmux binary was not found and could not be built.
    #[error("gdbmux binary not found ({0}); set GDBMUX_BIN or build it with `cargo build -p stub --bin gdbmux`")]
    Missing(String),
    /// The template has no form for this mode.
    #[error("stub {name} has no template for {mode}")]
    NoTemplate {
        /// Stub name.
        name: String,
        /// Mode (multi/attach).
        mode: &'static str,
    },
    /// Spawning failed.
    #[error("cannot spawn {command}: {source}")]
    Spawn {
        /// Command line.
        command: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The stub exited or did not listen in time.
    #[error("stub `{command}` did not start listening on {addr} within {timeout:?}{exited}\n--- stub output ---\n{output}")]
    NotListening {
        /// Command line.
        command: String,
        /// Expected address.
        addr: SocketAddr,
        /// Deadline.
        timeout: Duration,
        /// Exit status text if it exited.
        exited: String,
        /// Captured output.
        output: String,
    },
    /// Local socket error.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// How to start a given stub, in its three modes.
#[derive(Debug, Clone)]
pub struct StubSpec {
    /// Name for reports (`gdbmux`, `gdbserver`, ...).
    pub name: String,
    /// Dialect for expectations.
    pub dialect: Dialect,
    /// Launch a program: uses `{addr}`, `{prog}`, `{args}`.
    pub launch: String,
    /// Multi-process server without a program (`target extended-remote`).
    pub multi: Option<String>,
    /// Attach to `{pid}`.
    pub attach: Option<String>,
}

/// Locate the gdbmux binary: `GDBMUX_BIN`, `$CARGO_TARGET_DIR/{debug,release}`,
/// `<workspace>/target/{debug,release}`; otherwise build it once with cargo
/// into `<target>/rsp-gdbmux-build` (a separate dir, so a running `cargo test`
/// does not hold the lock).
pub fn locate_gdbmux() -> Result<PathBuf, StubError> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("GDBMUX_BIN") {
                let p = PathBuf::from(p);
                return if p.is_file() {
                    Ok(p)
                } else {
                    Err(format!("GDBMUX_BIN={} does not exist", p.display()))
                };
            }
            let ws_target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
            let mut candidates = Vec::new();
            for dir in [fixtures::target_dir(), ws_target] {
                candidates.push(dir.join("debug/gdbmux"));
                candidates.push(dir.join("release/gdbmux"));
            }
            if let Some(p) = candidates.iter().find(|p| p.is_file()) {
                return Ok(p.clone());
            }
            let build_dir = fixtures::target_dir().join("rsp-gdbmux-build");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "stub", "--bin", "gdbmux"])
                .env("CARGO_TARGET_DIR", &build_dir)
                .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
                .output()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            let bin = build_dir.join("debug/gdbmux");
            if out.status.success() && bin.is_file() {
                Ok(bin)
            } else {
                let err = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<&str> = err.lines().rev().take(15).collect();
                Err(format!(
                    "searched {candidates:?}; cargo build failed:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                ))
            }
        })
        .clone()
        .map_err(StubError::Missing)
}

impl StubSpec {
    /// gdbmux from [`locate_gdbmux`].
    pub fn gdbmux() -> Result<Self, StubError> {
        let bin = locate_gdbmux()?;
        let b = bin.display();
        Ok(Self {
            name: "gdbmux".into(),
            dialect: Dialect::Gdbmux,
            launch: format!("{b} --once {{addr}} -- {{prog}} {{args}}"),
            multi: Some(format!("{b} --multi {{addr}}")),
            attach: Some(format!("{b} --once --attach {{pid}} {{addr}}")),
        })
    }

    /// GNU gdbserver from PATH.
    pub fn gdbserver() -> Self {
        Self {
            name: "gdbserver".into(),
            dialect: Dialect::Gdbserver,
            launch: "gdbserver --once {addr} {prog} {args}".into(),
            multi: Some("gdbserver --once --multi {addr}".into()),
            attach: Some("gdbserver --once --attach {addr} {pid}".into()),
        }
    }

    /// lldb-server from PATH.
    pub fn lldb_server() -> Self {
        Self {
            name: "lldb-server".into(),
            dialect: Dialect::LldbServer,
            launch: "lldb-server gdbserver {addr} -- {prog} {args}".into(),
            multi: Some("lldb-server gdbserver {addr}".into()),
            attach: Some("lldb-server gdbserver --attach {pid} {addr}".into()),
        }
    }

    /// A user template (launch form only).
    pub fn custom(template: &str) -> Self {
        Self {
            name: template
                .split_whitespace()
                .next()
                .unwrap_or("custom")
                .to_string(),
            dialect: Dialect::Custom,
            launch: template.to_string(),
            multi: None,
            attach: None,
        }
    }

    /// Parse a stub selector: `gdbmux`, `gdbserver`, `lldb-server` or a template.
    pub fn from_name(sel: &str) -> Result<Self, StubError> {
        match sel {
            "" | "gdbmux" => Self::gdbmux(),
            "gdbserver" => Ok(Self::gdbserver()),
            "lldb-server" | "lldb" => Ok(Self::lldb_server()),
            t => Ok(Self::custom(t)),
        }
    }

    /// The stub chosen by `RSP_STUB` (default gdbmux).
    pub fn from_env() -> Result<Self, StubError> {
        Self::from_name(&std::env::var("RSP_STUB").unwrap_or_default())
    }

    /// [`from_env`](Self::from_env), but a missing gdbmux binary is reported on
    /// stderr and gives `None` (the test is skipped), unless
    /// `RSP_REQUIRE_STUB=1`, in which case it panics.
    pub fn from_env_or_skip(test: &str) -> Option<Self> {
        match Self::from_env() {
            Ok(s) => Some(s),
            Err(e) => {
                if std::env::var_os("RSP_REQUIRE_STUB").is_some() {
                    panic!("{test}: {e}");
                }
                eprintln!("SKIPPED {test}: {e}");
                None
            }
        }
    }

    /// Launch a fixture under the stub.
    pub fn launch(&self, f: Fixture, args: &[&str]) -> Result<Stub, StubError> {
        let prog = fixtures::fixture(f);
        self.start(&self.launch, Some(&prog), args, None)
    }

    /// Start the stub in multi-process mode without a program.
    pub fn launch_multi(&self) -> Result<Stub, StubError> {
        let t = self.multi.as_ref().ok_or_else(|| StubError::NoTemplate {
            name: self.name.clone(),
            mode: "multi",
        })?;
        self.start(t, None, &[], None)
    }

    /// Start the stub attached to `pid`.
    pub fn launch_attach(&self, pid: u32) -> Result<Stub, StubError> {
        let t = self.attach.as_ref().ok_or_else(|| StubError::NoTemplate {
            name: self.name.clone(),
            mode: "attach",
        })?;
        self.start(t, None, &[], Some(pid))
    }

    fn start(
        &self,
        template: &str,
        prog: Option<&Path>,
        args: &[&str],
        pid: Option<u32>,
    ) -> Result<Stub, StubError> {
        let port = pick_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let argv = expand(template, addr, prog, args, pid);
        let command = argv.join(" ");
        let (exe, rest) = argv.split_first().ok_or_else(|| StubError::Spawn {
            command: command.clone(),
            source: std::io::Error::other("empty template"),
        })?;
        let mut child = Command::new(exe)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| StubError::Spawn {
                command: command.clone(),
                source,
            })?;
        let output = Arc::new(Mutex::new(Vec::new()));
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let sink = Arc::clone(&output);
            std::thread::spawn(move || copy_into(pipe, &sink));
        }
        let mut stub = Stub {
            child,
            addr,
            command,
            output,
            dialect: self.dialect,
            remembered: Vec::new(),
        };
        stub.wait_listening()?;
        Ok(stub)
    }
}

/// A free port for a stub, outside the kernel's ephemeral range (which
/// starts at 32768): `bind(0)` + close can hand the same port to two tests
/// running in parallel (seen in CI: one stub failed to bind and the test
/// reached the other one's listener). Ports come from a per-process
/// counter, offset by the pid so concurrent test binaries do not overlap,
/// and are checked free by binding.
fn pick_port() -> Result<u16, StubError> {
    use std::sync::atomic::AtomicU32;
    use std::sync::atomic::Ordering;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = 20_000 + (std::process::id() % 300) * 40;
    for _ in 0..4000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(base + n % 12_000).unwrap_or(20_000);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn copy_into(mut r: Box<dyn std::io::Read + Send>, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut s) = sink.lock() {
                    s.extend_from_slice(&buf[..n]);
                }
            }
        }
    }
}

fn expand(
    template: &str,
    addr: SocketAddr,
    prog: Option<&Path>,
    args: &[&str],
    pid: Option<u32>,
) -> Vec<String> {
    let prog = prog.map(|p| p.display().to_string()).unwrap_or_default();
    let pid = pid.map(|p| p.to_string()).unwrap_or_default();
    let mut out = Vec::new();
    for word in template.split_whitespace() {
        if word == "{args}" {
            out.extend(args.iter().map(|a| a.to_string()));
            continue;
        }
        out.push(
            word.replace("{addr}", &addr.to_string())
                .replace("{port}", &addr.port().to_string())
                .replace("{prog}", &prog)
                .replace("{pid}", &pid),
        );
    }
    out
}

/// True if `/proc/net/tcp` shows a LISTEN socket on 127.0.0.1 or 0.0.0.0 at `port`.
pub fn is_listening(port: u16) -> bool {
    let want = [
        format!("0100007F:{port:04X}"),
        format!("00000000:{port:04X}"),
    ];
    let check = |path: &str| {
        std::fs::read_to_string(path)
            .map(|t| {
                t.lines().skip(1).any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 3 && want.iter().any(|w| w == f[1]) && f[3] == "0A"
                })
            })
            .unwrap_or(false)
    };
    check("/proc/net/tcp")
        || std::fs::read_to_string("/proc/net/tcp6")
            .map(|t| {
                t.lines().skip(1).any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 3 && f[1].ends_with(&format!(":{port:04X}")) && f[3] == "0A"
                })
            })
            .unwrap_or(false)
}

/// A running stub; killed (with its descendants) on drop.
#[derive(Debug)]
pub struct Stub {
    child: Child,
    addr: SocketAddr,
    command: String,
    output: Arc<Mutex<Vec<u8>>>,
    dialect: Dialect,
    remembered: Vec<u32>,
}

impl Stub {
    /// Remember the stub's current descendants (its inferiors), so that
    /// drop kills them even if the stub exits first and orphans them
    /// (lldb-server exits when its client disconnects, leaving the
    /// inferior stopped or running). Call it while a client is connected.
    pub fn remember_descendants(&mut self) {
        for p in process::descendants(self.child.id()) {
            if !self.remembered.contains(&p) {
                self.remembered.push(p);
            }
        }
    }

    fn wait_listening(&mut self) -> Result<(), StubError> {
        // Polling with a deadline is the only portable readiness signal for an
        // arbitrary stub; the back-off keeps it cheap.
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut pause = Duration::from_millis(1);
        loop {
            let exited = self.child.try_wait()?;
            if exited.is_none() && is_listening(self.addr.port()) {
                return Ok(());
            }
            if exited.is_some() || Instant::now() >= deadline {
                // Let the pipe readers catch up with what it printed before dying.
                if exited.is_some() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Err(StubError::NotListening {
                    command: self.command.clone(),
                    addr: self.addr,
                    timeout: STARTUP_TIMEOUT,
                    exited: exited
                        .map(|s| format!(" (exited: {s})"))
                        .unwrap_or_default(),
                    output: self.output(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(25));
        }
    }

    /// `127.0.0.1:PORT`
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The stub's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Dialect of the spec it was started from.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The command line it was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Everything it printed so far (stdout and stderr interleaved).
    pub fn output(&self) -> String {
        self.output
            .lock()
            .map(|o| String::from_utf8_lossy(&o).into_owned())
            .unwrap_or_default()
    }

    /// Open a raw client connection.
    pub fn connect(&self) -> crate::client::Result<RspClient> {
        RspClient::connect(self.addr)
    }

    /// Whether the stub process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        for p in &self.remembered {
            // Only a process that still runs our fixture: the pid may have
            // been reused in between.
            let ours = std::fs::read_link(format!("/proc/{p}/exe"))
                .is_ok_and(|e| e.starts_with(fixtures::target_dir()));
            if ours {
                process::kill_pid(*p);
            }
        }
        process::kill_tree(&mut self.child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_expansion() {
        let addr: SocketAddr = "127.0.0.1:5".parse().unwrap();
        let v = expand(
            "x {addr} -- {prog} {args} --p={port} {pid}",
            addr,
            Some(Path::new("/p")),
            &["a", "b"],
            Some(7),
        );
        assert_eq!(v, ["x", "127.0.0.1:5", "--", "/p", "a", "b", "--p=5", "7"]);
        let v = expand(
            "x {addr} {prog} {args}",
            addr,
            Some(Path::new("/p")),
            &[],
            None,
        );
        assert_eq!(v, ["x", "127.0.0.1:5", "/p"]);
    }
}
