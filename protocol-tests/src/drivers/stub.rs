//! Launching a stub under test from a command template.
//!
//! Templates are split on whitespace; the placeholders `{addr}`
//! (`127.0.0.1:PORT`), `{port}`, `{prog}`, `{args}` (zero or more words),
//! `{pid}` and `{portpipe}` are substituted.
//!
//! Readiness is an event, never a probe connection (lldb-server accepts
//! exactly one) nor a poll:
//!
//! * Without `{portpipe}`, the port is chosen free beforehand and the stub
//!   must print a line containing `Listening on` once it listens (gdbmux:
//!   `Listening on 127.0.0.1:PORT`, gdbserver: `Listening on port PORT`).
//!   The threads copying its stdout and stderr notify a condition variable
//!   on every chunk and at end of file.
//! * With `{portpipe}` (the path of a FIFO the harness creates), `{addr}`
//!   and `{port}` stand for port 0, and the stub writes the port it listens
//!   on to the FIFO (`lldb-server gdbserver --named-pipe {portpipe}` writes
//!   it as decimal text ending in a NUL, after `listen()`). That port is the
//!   one connected to.
//!
//! Either way, the wait ends early, with the stub's output in the error,
//! when the stub exits (seen through a pidfd) and its output pipes reach end
//! of file, and it fails after [`STARTUP_TIMEOUT`].

use std::fs::File;
use std::io::Read;
use std::net::SocketAddr;
use std::net::TcpListener;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::OnceLock;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

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
    #[error("stub `{command}` did not start listening within {timeout:?} (waited for {waited_for}){exited}\n--- stub output ---\n{output}")]
    NotListening {
        /// Command line.
        command: String,
        /// The readiness event waited for (`Listening on` line, FIFO).
        waited_for: String,
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
///
/// Each template must make the stub announce that it listens (module docs):
/// print a `Listening on` line, or write its port to `{portpipe}`.
#[derive(Debug, Clone)]
pub struct StubSpec {
    /// Name for reports (`gdbmux`, `gdbserver`, ...).
    pub name: String,
    /// Dialect for expectations.
    pub dialect: Dialect,
    /// Launch a program: uses `{addr}` (or `{portpipe}`), `{prog}`, `{args}`.
    pub launch: String,
    /// Multi-process server without a program (`target extended-remote`).
    pub multi: Option<String>,
    /// Attach to `{pid}`.
    pub attach: Option<String>,
}

/// The newest modification time of the sources gdbmux is built from (the
/// `stub` and `gpu-target` crates and the lock file).
fn newest_source_mtime() -> Option<std::time::SystemTime> {
    fn walk(dir: &Path, newest: &mut Option<std::time::SystemTime>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, newest);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                if newest.is_none_or(|n| m > n) {
                    *newest = Some(m);
                }
            }
        }
    }
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut newest = None;
    for d in ["stub/src", "gpu-target/src"] {
        walk(&ws.join(d), &mut newest);
    }
    for f in ["Cargo.lock", "stub/Cargo.toml", "gpu-target/Cargo.toml"] {
        if let Ok(m) = std::fs::metadata(ws.join(f)).and_then(|m| m.modified()) {
            if newest.is_none_or(|n| m > n) {
                newest = Some(m);
            }
        }
    }
    newest
}

/// Locate the gdbmux binary: `GDBMUX_BIN`, then a `$CARGO_TARGET_DIR` or
/// `<workspace>/target` `{debug,release}` build that is newer than every
/// source (a stale one is never used); otherwise build it once with cargo
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
            // Only a binary newer than every source it is built from: a
            // stale one would test old code (and silently pass or fail).
            let newest = newest_source_mtime();
            for p in candidates.iter().filter(|p| p.is_file()) {
                let built = std::fs::metadata(p).and_then(|m| m.modified()).ok();
                match (built, newest) {
                    (Some(b), Some(n)) if b >= n => {
                        eprintln!("rsp: using gdbmux {}", p.display());
                        return Ok(p.clone());
                    }
                    _ => eprintln!(
                        "rsp: {} is older than the sources; building a fresh gdbmux",
                        p.display()
                    ),
                }
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

    /// lldb-server from PATH. It prints nothing when it listens, so it
    /// listens on port 0 and writes the port it got to `{portpipe}`.
    pub fn lldb_server() -> Self {
        Self {
            name: "lldb-server".into(),
            dialect: Dialect::LldbServer,
            launch: "lldb-server gdbserver --named-pipe {portpipe} {addr} -- {prog} {args}".into(),
            multi: Some("lldb-server gdbserver --named-pipe {portpipe} {addr}".into()),
            attach: Some(
                "lldb-server gdbserver --named-pipe {portpipe} --attach {pid} {addr}".into(),
            ),
        }
    }

    /// A user template (launch form only). The stub must print a line
    /// containing `Listening on` once it listens, or write its port to
    /// `{portpipe}`; an `lldb-server gdbserver` template without
    /// `{portpipe}` gets `--named-pipe {portpipe}` added, since lldb-server
    /// prints nothing.
    pub fn custom(template: &str) -> Self {
        let mut words: Vec<&str> = template.split_whitespace().collect();
        let is_lldb_server = words
            .first()
            .and_then(|w| Path::new(w).file_name())
            .is_some_and(|n| n == "lldb-server");
        let launch = if is_lldb_server
            && words.get(1).is_some_and(|w| w.starts_with('g'))
            && !template.contains("{portpipe}")
        {
            words.splice(2..2, ["--named-pipe", "{portpipe}"]);
            words.join(" ")
        } else {
            template.to_string()
        };
        Self {
            name: words.first().copied().unwrap_or("custom").to_string(),
            dialect: Dialect::Custom,
            launch,
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
                crate::record_skip(test, &e.to_string());
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
        let output = Arc::new(Output::default());
        // With {portpipe} the stub picks its port (0) and tells it through
        // the FIFO; otherwise we pick it and wait for `Listening on`.
        let mut port_pipe = if template.contains("{portpipe}") {
            Some(PortPipe::new()?)
        } else {
            None
        };
        let port = if port_pipe.is_some() { 0 } else { pick_port()? };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let argv = expand(
            template,
            addr,
            prog,
            args,
            pid,
            port_pipe.as_ref().map(|p| p.path.as_path()),
        );
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
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        // Opened (without blocking) before the stub could write to it; the
        // reader gives up at the deadline, so it never outlives it by much.
        if let Some(fifo) = port_pipe.as_mut().and_then(|p| p.reader.take()) {
            let out = Arc::clone(&output);
            std::thread::spawn(move || {
                let port = read_port(&fifo, deadline);
                out.update(|s| s.pipe_port = Some(port));
            });
        }
        // Opened before the child can be reaped, so it is the child's.
        match process::pidfd(child.id()) {
            Ok(Some(fd)) => {
                let out = Arc::clone(&output);
                std::thread::spawn(move || {
                    let r = process::wait_pidfd(&fd, None);
                    out.update(|s| match r {
                        Ok(_) => s.exited = true,
                        Err(e) => s.watch_error = Some(format!("pidfd poll: {e}")),
                    });
                });
            }
            Ok(None) => output.update(|s| s.exited = true),
            Err(e) => output.update(|s| s.watch_error = Some(format!("pidfd_open: {e}"))),
        }
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
            output.update(|s| s.open_pipes += 1);
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
        if let Some(port) = stub.wait_listening(port_pipe.as_ref(), deadline)? {
            stub.addr.set_port(port);
        }
        Ok(stub)
    }
}

/// A stub's captured stdout and stderr (interleaved) and what else the
/// start-up wait watches, with a condition variable notified on each change.
#[derive(Debug, Default)]
struct Output {
    state: Mutex<OutputState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct OutputState {
    /// Everything read from the pipes so far.
    bytes: Vec<u8>,
    /// Pipes not yet at end of file.
    open_pipes: usize,
    /// The stub process has exited (not necessarily reaped).
    exited: bool,
    /// Why the exit could not be watched.
    watch_error: Option<String>,
    /// What the `{portpipe}` reader got.
    pipe_port: Option<Result<u16, String>>,
}

impl Output {
    fn lock(&self) -> MutexGuard<'_, OutputState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, f: impl FnOnce(&mut OutputState)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    /// Wait until `done` gives a value (checked at once and after each
    /// change), or `deadline` passes (`None`).
    fn wait_until<T>(
        &self,
        deadline: Instant,
        mut done: impl FnMut(&OutputState) -> Option<T>,
    ) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some(v) = done(&s) {
                return Some(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Whether a complete line of `bytes` contains `Listening on`.
fn has_listening_line(bytes: &[u8]) -> bool {
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return false;
    };
    bytes[..end]
        .split(|&b| b == b'\n')
        .any(|line| contains(line, b"Listening on"))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// The FIFO behind `{portpipe}`, in a private temporary directory removed
/// on drop, with our read end already open (non-blocking: opening does not
/// wait for the writer).
#[derive(Debug)]
struct PortPipe {
    dir: PathBuf,
    path: PathBuf,
    reader: Option<File>,
}

impl PortPipe {
    fn new() -> Result<Self, StubError> {
        use std::sync::atomic::AtomicU32;
        use std::sync::atomic::Ordering;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("rsp-portpipe-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                // A leftover of a killed process with the same pid: next name.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
            // Owns the directory from here on: removed on any error below.
            let mut pipe = Self {
                path: dir.join("port"),
                dir,
                reader: None,
            };
            nix::unistd::mkfifo(&pipe.path, Mode::S_IRUSR | Mode::S_IWUSR)
                .map_err(std::io::Error::from)?;
            pipe.reader = Some(
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(OFlag::O_NONBLOCK.bits())
                    .open(&pipe.path)?,
            );
            return Ok(pipe);
        }
        Err(StubError::Io(std::io::Error::other(
            "no free name for a port FIFO directory in the temp dir",
        )))
    }
}

impl Drop for PortPipe {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Read the port a stub writes to the `{portpipe}` FIFO: decimal text,
/// ended by a NUL (lldb-server), a newline or the writer's close.
fn read_port(fifo: &File, deadline: Instant) -> Result<u16, String> {
    let mut text = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        // Before any writer has opened it, the FIFO polls neither readable
        // nor hung up; afterwards, data or the writer's close wake us.
        match process::poll_readable(fifo, Some(deadline)) {
            Ok(true) => {}
            Ok(false) => return Err("nothing written to the port FIFO".into()),
            Err(e) => return Err(format!("poll port FIFO: {e}")),
        }
        match (&*fifo).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if text.iter().any(|&b| b == 0 || b == b'\n') {
                    break;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read port FIFO: {e}")),
        }
    }
    let end = text
        .iter()
        .position(|&b| b == 0 || b == b'\n')
        .unwrap_or(text.len());
    let word = String::from_utf8_lossy(&text[..end]).trim().to_string();
    match word.parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!(
            "port FIFO gave {:?}, not a port",
            String::from_utf8_lossy(&text)
        )),
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

/// Copy a pipe into `out` until end of file, notifying each chunk and the end.
fn copy_into(mut r: Box<dyn std::io::Read + Send>, out: &Output) {
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.update(|s| s.bytes.extend_from_slice(&buf[..n])),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out.update(|s| s.open_pipes -= 1);
}

fn expand(
    template: &str,
    addr: SocketAddr,
    prog: Option<&Path>,
    args: &[&str],
    pid: Option<u32>,
    port_pipe: Option<&Path>,
) -> Vec<String> {
    let prog = prog.map(|p| p.display().to_string()).unwrap_or_default();
    let pid = pid.map(|p| p.to_string()).unwrap_or_default();
    let port_pipe = port_pipe
        .map(|p| p.display().to_string())
        .unwrap_or_default();
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
                .replace("{pid}", &pid)
                .replace("{portpipe}", &port_pipe),
        );
    }
    out
}

/// A running stub; killed (with its descendants) on drop.
#[derive(Debug)]
pub struct Stub {
    child: Child,
    addr: SocketAddr,
    command: String,
    output: Arc<Output>,
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

    /// Wait for the readiness event (module docs) until `deadline`; the
    /// port from `{portpipe}` if there is one.
    fn wait_listening(
        &mut self,
        port_pipe: Option<&PortPipe>,
        deadline: Instant,
    ) -> Result<Option<u16>, StubError> {
        let ready = self.output.wait_until(deadline, |s| {
            if let Some(p) = &s.pipe_port {
                return Some(p.clone().map(Some));
            }
            if let Some(e) = &s.watch_error {
                return Some(Err(e.clone()));
            }
            // Exited, and the pipe readers have everything it printed.
            if s.exited && s.open_pipes == 0 {
                return Some(Err(String::new()));
            }
            if port_pipe.is_none() && !s.exited && has_listening_line(&s.bytes) {
                return Some(Ok(None));
            }
            None
        });
        let why = match ready {
            Some(Ok(port)) => return Ok(port),
            Some(Err(why)) => why,
            None => String::new(),
        };
        let exited = self.child.try_wait()?;
        Err(StubError::NotListening {
            command: self.command.clone(),
            waited_for: match port_pipe {
                Some(p) => format!("its port on the FIFO {}", p.path.display()),
                None => "a line containing `Listening on` (custom templates: print it, \
                         or write the port to {portpipe})"
                    .into(),
            },
            timeout: STARTUP_TIMEOUT,
            exited: [
                exited
                    .map(|s| format!(" (exited: {s})"))
                    .unwrap_or_default(),
                if why.is_empty() {
                    why
                } else {
                    format!(" ({why})")
                },
            ]
            .concat(),
            output: self.output(),
        })
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
        String::from_utf8_lossy(&self.output.lock().bytes).into_owned()
    }

    /// Wait until its output contains `needle`: true, or false once
    /// `timeout` passes or its output pipes are at end of file without it.
    /// Woken by each chunk the pipe readers copy, not by polling.
    pub fn wait_output(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        self.output
            .wait_until(deadline, |s| {
                if contains(&s.bytes, needle.as_bytes()) {
                    Some(true)
                } else if s.open_pipes == 0 {
                    Some(false)
                } else {
                    None
                }
            })
            .unwrap_or(false)
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
            None,
        );
        assert_eq!(v, ["x", "127.0.0.1:5", "--", "/p", "a", "b", "--p=5", "7"]);
        let v = expand(
            "x {addr} {prog} {args} --named-pipe {portpipe}",
            addr,
            Some(Path::new("/p")),
            &[],
            None,
            Some(Path::new("/t/port")),
        );
        assert_eq!(v, ["x", "127.0.0.1:5", "/p", "--named-pipe", "/t/port"]);
    }

    #[test]
    fn custom_lldb_server_gets_port_pipe() {
        let s = StubSpec::custom("/x/lldb-server gdbserver {addr} -- {prog}");
        assert_eq!(
            s.launch,
            "/x/lldb-server gdbserver --named-pipe {portpipe} {addr} -- {prog}"
        );
        assert_eq!(s.name, "/x/lldb-server");
        for t in [
            "lldb-server gdbserver --named-pipe {portpipe} {addr} -- {prog}",
            "lldb-server platform {addr}",
            "gdbserver {addr} {prog}",
        ] {
            assert_eq!(StubSpec::custom(t).launch, t);
        }
    }

    #[test]
    fn listening_line_must_be_complete() {
        assert!(!has_listening_line(b"Listening on port 5"));
        assert!(has_listening_line(
            b"Process x created\nListening on port 5\n"
        ));
        assert!(has_listening_line(b"Listening on 127.0.0.1:5\npartial"));
        assert!(!has_listening_line(b"Process x created\n"));
    }

    /// A fake stub: `sh` runs `script` (so no freshly written file is
    /// executed, which can fail with ETXTBSY while another thread forks).
    fn fake(name: &str, script: &str, args: &str) -> (PathBuf, String) {
        let path =
            std::env::temp_dir().join(format!("rsp-fake-stub-{}-{name}.sh", std::process::id()));
        std::fs::write(&path, script).unwrap();
        let template = format!("sh {} {args}", path.display());
        (path, template)
    }

    #[test]
    fn ready_on_listening_line() {
        let (path, t) = fake(
            "line",
            "echo Process created\necho \"Listening on port $1\" >&2\nexec sleep 60\n",
            "{port}",
        );
        let spec = StubSpec::custom(&t);
        let start = Instant::now();
        let stub = spec.start(&spec.launch, None, &[], None);
        let _ = std::fs::remove_file(&path);
        let stub = stub.unwrap();
        assert!(start.elapsed() < STARTUP_TIMEOUT / 2);
        assert!(stub.output().contains("Listening on port"));
        assert!(stub.wait_output("Process created", Duration::from_secs(10)));
        assert!(stub
            .output()
            .contains(&format!("port {}", stub.addr().port())));
    }

    #[test]
    fn ready_on_port_pipe() {
        // Like lldb-server: decimal text and a NUL; {port} stands for 0.
        let (path, t) = fake(
            "pipe",
            "test \"$2\" = 0 || exit 3\nprintf '4242\\000' > \"$1\"\nexec sleep 60\n",
            "{portpipe} {port}",
        );
        let spec = StubSpec::custom(&t);
        let stub = spec.start(&spec.launch, None, &[], None);
        let _ = std::fs::remove_file(&path);
        let stub = stub.unwrap();
        assert_eq!(stub.addr(), SocketAddr::from(([127, 0, 0, 1], 4242)));
    }

    #[test]
    fn exit_before_listening_fails_at_once() {
        let (path, t) = fake("exit", "echo no luck >&2\nexit 7\n", "{addr}");
        let spec = StubSpec::custom(&t);
        let start = Instant::now();
        let err = spec.start(&spec.launch, None, &[], None).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(start.elapsed() < STARTUP_TIMEOUT / 2, "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("exit status: 7") && msg.contains("no luck"),
            "{msg}"
        );
    }

    #[test]
    fn wait_output_ends_at_eof() {
        let (path, t) = fake("eof", "echo Listening on x\nexec sleep 60 >&- 2>&-\n", "");
        let spec = StubSpec::custom(&t);
        let stub = spec.start(&spec.launch, None, &[], None);
        let _ = std::fs::remove_file(&path);
        let stub = stub.unwrap();
        let start = Instant::now();
        assert!(!stub.wait_output("never printed", STARTUP_TIMEOUT));
        assert!(start.elapsed() < STARTUP_TIMEOUT / 2);
    }
}
