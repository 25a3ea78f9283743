//! The server: one mio loop that owns every piece of debugger state.
//!
//! Registered fds: the listener, each client connection, the process-wide
//! SIGCHLD signalfd (ptrace stops of every tracee), and the GPU library's
//! notifier and stop timer. Edge-triggered readiness is consumed fully:
//! the listener is accepted from until `WouldBlock`; a connection is read
//! until `WouldBlock` or a short read (which drained the socket, so the
//! next arrival raises a new edge); the signalfd is read in one go. mio's
//! rules hold (events are hints, spurious wake-ups happen), and the loop
//! never sleeps or blocks.
//!
//! Connection policy is the multiplexer's ([`crate::mux`], "Accept
//! policy"): the server only gathers the facts it needs (the URL that
//! reaches this listener, and a claim proof from [`peer`]), carries out the
//! decision, and reports sessions' ends back ([`crate::mux::MuxEvent`]).
//!
//! Limits (README "Security and limits"): at most
//! [`ServerConfig::max_connections`] connections are open at once (CPU, GPU
//! and refused ones still being answered); one more is answered with an
//! error packet at once and closed. A session whose client leaves more than
//! [`ServerConfig::max_pending_output`] bytes unread is closed with a logged
//! error. Packets are bounded by the framer ([`crate::session::MAX_PACKET`]).
//!
//! Disconnect policy: without `--multi`, a vanished CPU client takes its
//! processes with it (launched: killed, attached: detached). With `--multi`
//! its session is kept: a process stays stopped (a resume in flight is
//! interrupted and that stop journaled), the breakpoints and watchpoints its
//! client inserted are taken out, and the next connection becomes the CPU
//! session with the same processes and journal (docs/decisions.md §6).

pub mod busy;
mod output;
pub mod peer;
mod relaunch;
mod tokens;
pub mod transport;
pub mod turns;

use std::io;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::time::Duration;
use std::time::Instant;

use mio::unix::SourceFd;
use mio::Events;
use mio::Interest;
use mio::Poll;
use mio::Token;
pub use transport::Conn;
pub use transport::ListenAddr;
pub use transport::Listener;

use std::path::PathBuf;

use busy::BusyPoll;
use tokens::IdMap;

use crate::gpu::GpuController;
use crate::gpu::GpuTarget;
use crate::mux::Accept;
use crate::mux::Arrival;
use crate::mux::Mux;
use crate::mux::MuxAction;
use crate::mux::MuxEvent;
use crate::mux::MuxHandle;
use crate::native;
use crate::native::LinuxProcess;
use crate::refusal::refusal_frames;
use crate::refusal::Refusal;
use crate::session::AnySession;
use crate::session::CpuRole;
use crate::session::GpuRole;
use crate::session::LaunchDefaults;
use crate::session::Session;
use crate::session::SessionControl;
use crate::stop::StopEvent;
use crate::target::Pid;
use crate::target::Target;

const LISTENER: Token = Token(0);
const SIGCHLD: Token = Token(1);
const GPU_NOTIFIER: Token = Token(2);
const TARGET_FD: Token = Token(3);
/// A vFile reply is ready (`crate::hostio::offload`).
const HOSTIO_DONE: Token = Token(4);
/// The launched programs' output terminal (`server::output`).
const PROGRAM_OUTPUT: Token = Token(5);
const FIRST_CONN: usize = 16;
const READ_CHUNK: usize = 256 * 1024;

/// Default limit on simultaneous connections (sessions and refused
/// connections still being answered).
pub const MAX_CONNECTIONS: usize = 64;

/// How long the server lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifetime {
    /// Exit when the first session ends (gdbserver default).
    #[default]
    Once,
    /// Keep serving new sessions (extended-remote, `--multi`).
    Multi,
    /// gdbserver without `--once` or `--multi`: after a disconnect, keep
    /// the process and listen again; exit once no process is left.
    Reopen,
    /// Keep serving, one client after another, each with the program
    /// freshly launched (`gdbmux demo`; see [`relaunch`]).
    Relaunch,
}

/// What to debug when the server starts.
#[derive(Debug, Clone, Default)]
pub enum Inferior {
    /// Nothing yet (extended mode: the client uses vRun/vAttach).
    #[default]
    None,
    /// Launch the program in `LaunchDefaults::program`.
    Launch,
    /// Attach to a pid.
    Attach(Pid),
}

/// GPU settings.
#[derive(Debug, Clone, Default)]
pub struct GpuConfig {
    /// Load a GPU library at all.
    pub enabled: bool,
    /// Path of the amd-dbgapi library; `None` = the simulated library next
    /// to the executable, `$GDBMUX_DBGAPI`, or `librocm-dbgapi.so.0`.
    pub library: Option<PathBuf>,
    /// Whether `library` was given explicitly (failure is then fatal).
    pub explicit: bool,
    /// The runtime's debugger hook symbol.
    pub hook: Option<String>,
    /// Report GPU stops to the CPU session (gdb) or only log them.
    pub report_stops: bool,
}

/// Server configuration (the builder's product).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Listen address.
    pub listen: ListenAddr,
    /// Lifetime.
    pub lifetime: Lifetime,
    /// Initial inferior.
    pub inferior: Inferior,
    /// Launch settings.
    pub launch: LaunchDefaults,
    /// GPU settings.
    pub gpu: GpuConfig,
    /// `HOST:PORT` to advertise in GPU connection offers (for clients that
    /// reach us through a forwarded port).
    pub advertise: Option<String>,
    /// Most connections open at once (default [`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Most bytes a session may leave unread by its client (default
    /// [`crate::session::MAX_PENDING_OUTPUT`]).
    pub max_pending_output: usize,
    /// Most time the loop keeps polling (zero timeout) after client input
    /// before it blocks; zero disables it (see [`busy`]; default
    /// [`busy::DEFAULT_BUSY_POLL`]).
    pub busy_poll: Duration,
    /// Print gdbserver's connection messages on stderr ("Remote debugging
    /// from host H, port P", "Remote side has terminated connection…"):
    /// the gdb testsuite and scripts written for gdbserver wait on them.
    pub announce: bool,
}

/// Builder for an embedded server.
///
/// ```no_run
/// use stub::server::ServerBuilder;
/// let server = ServerBuilder::new("127.0.0.1:0")
///     .unwrap()
///     .launch("/bin/true", &[])
///     .build()
///     .unwrap();
/// eprintln!("listening on {}", server.local_address());
/// server.run().unwrap();
/// ```
pub struct ServerBuilder {
    cfg: ServerConfig,
    custom: Option<(Box<dyn Target>, StopEvent)>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("cfg", &self.cfg)
            .field("custom_target", &self.custom.is_some())
            .finish()
    }
}

impl ServerBuilder {
    /// Start from a listen address (`HOST:PORT`, `:PORT`, `unix:PATH`, `-`).
    pub fn new(listen: &str) -> Result<Self, String> {
        Ok(ServerBuilder {
            cfg: ServerConfig {
                listen: ListenAddr::parse(listen)?,
                lifetime: Lifetime::Once,
                inferior: Inferior::None,
                // gdbserver's default: ASLR off for launched programs.
                launch: LaunchDefaults {
                    disable_aslr: true,
                    ..LaunchDefaults::default()
                },
                gpu: GpuConfig::default(),
                advertise: None,
                max_connections: MAX_CONNECTIONS,
                max_pending_output: crate::session::MAX_PENDING_OUTPUT,
                busy_poll: busy::DEFAULT_BUSY_POLL,
                announce: false,
            },
            custom: None,
        })
    }

    /// Serve any [`Target`] (for example a `gdbstub` target through
    /// `stub::adapters::gdbstub`), stopped at `stop`, to the first client.
    /// If the target has its own [`Target::event_fd`], the loop watches it.
    pub fn target(mut self, target: Box<dyn Target>, stop: StopEvent) -> Self {
        self.custom = Some((target, stop));
        self
    }

    /// Serve the GPU through an amd-dbgapi library (`None` = default
    /// search: the simulated GPU next to the executable first).
    pub fn gpu(mut self, library: Option<PathBuf>) -> Self {
        self.cfg.gpu.enabled = true;
        self.cfg.gpu.explicit = library.is_some();
        self.cfg.gpu.library = library;
        self.cfg.gpu.report_stops = true;
        self
    }

    /// Symbol of the GPU runtime's debugger hook.
    pub fn gpu_hook(mut self, symbol: Option<String>) -> Self {
        self.cfg.gpu.hook = symbol;
        self
    }

    /// Report GPU wave stops to the CPU session (default) or only log them.
    pub fn gpu_report_stops(mut self, on: bool) -> Self {
        self.cfg.gpu.report_stops = on;
        self
    }

    /// Address to advertise in GPU offers.
    pub fn advertise(mut self, addr: Option<String>) -> Self {
        self.cfg.advertise = addr;
        self
    }

    /// Most connections open at once; one more is answered with an error
    /// and closed (at least 1).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.cfg.max_connections = n.max(1);
        self
    }

    /// Most bytes a session may leave unread by its client before it is
    /// closed (at least two maximal packets).
    pub fn max_pending_output(mut self, bytes: usize) -> Self {
        self.cfg.max_pending_output = bytes;
        self
    }

    /// Most time the loop keeps polling after a client's packet before it
    /// blocks (an adaptive window, see [`busy`]); `Duration::ZERO` turns
    /// busy polling off.
    pub fn busy_poll(mut self, max: Duration) -> Self {
        self.cfg.busy_poll = max;
        self
    }

    /// Launch `program args…` before accepting the client.
    pub fn launch(mut self, program: &str, args: &[String]) -> Self {
        self.cfg.launch.program = Some(program.into());
        self.cfg.launch.args = args.to_vec();
        self.cfg.inferior = Inferior::Launch;
        self
    }

    /// Attach to `pid` before accepting the client.
    pub fn attach(mut self, pid: Pid) -> Self {
        self.cfg.inferior = Inferior::Attach(pid);
        self
    }

    /// Keep serving after the first session (`--multi`).
    pub fn multi(mut self, on: bool) -> Self {
        self.cfg.lifetime = if on { Lifetime::Multi } else { Lifetime::Once };
        self
    }

    /// How long the server lives (overrides [`ServerBuilder::multi`]).
    pub fn lifetime(mut self, lifetime: Lifetime) -> Self {
        self.cfg.lifetime = lifetime;
        self
    }

    /// Start programs through the shell (gdbserver's default).
    pub fn startup_with_shell(mut self, on: bool) -> Self {
        self.cfg.launch.startup_with_shell = on;
        self
    }

    /// Print gdbserver's connection messages on stderr.
    pub fn announce(mut self, on: bool) -> Self {
        self.cfg.announce = on;
        self
    }

    /// gdbserver's `--disable-packet=` names (`vCont`, `T`, `Tthread`, `qC`,
    /// `qfThreadInfo`, `threads`); unknown names are ignored (the command
    /// line checks them).
    pub fn disable_packets(mut self, names: &[String]) -> Self {
        for n in names {
            self.cfg.launch.disabled.disable(n);
        }
        self
    }

    /// Send the stop reply to an lldb client's interrupt twice, as
    /// debugserver does (lldb waits up to 100 ms for the second one,
    /// `GDBRemoteClientBase::ShouldStop`): on by default;
    /// `--no-lldb-interrupt-echo` turns it off.
    pub fn lldb_interrupt_echo(mut self, on: bool) -> Self {
        self.cfg.launch.no_lldb_interrupt_echo = !on;
        self
    }

    /// gdbserver's `--wrapper WRAPPER --`.
    pub fn wrapper(mut self, wrapper: Option<String>) -> Self {
        self.cfg.launch.wrapper = wrapper;
        self
    }

    /// Disable ASLR for launched programs (the default).
    pub fn disable_aslr(mut self, on: bool) -> Self {
        self.cfg.launch.disable_aslr = on;
        self
    }

    /// Bind, launch/attach, and return the ready server.
    pub fn build(self) -> Result<Server, ServerError> {
        Server::new(self.cfg, self.custom)
    }
}

/// Errors that stop the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// I/O on the listener or poll.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// Cause.
        source: io::Error,
    },
    /// Launch or attach failed.
    #[error("{0}")]
    Native(#[from] native::NativeError),
    /// The GPU library could not be loaded.
    #[error("{0}")]
    Gpu(crate::gpu::controller::GpuFault),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ServerError {
    let what = what.into();
    move |source| ServerError::Io { what, source }
}

/// gdbserver's line for a new connection (remote-utils.cc: numeric host
/// and port of the peer).
fn announce_peer(peer: &str) {
    match peer.parse::<std::net::SocketAddr>() {
        Ok(a) => eprintln!("Remote debugging from host {}, port {}", a.ip(), a.port()),
        Err(_) => eprintln!("Remote debugging using {peer}"),
    }
}

fn refused(reason: String) -> ClientKind {
    ClientKind::Refused(Box::new(Refusal::new(reason, Instant::now())))
}

fn load_gpu(cfg: &GpuConfig) -> Result<Option<GpuController>, ServerError> {
    let path = cfg
        .library
        .clone()
        .or_else(|| std::env::var_os("GDBMUX_DBGAPI").map(PathBuf::from))
        .or_else(|| {
            let sim = std::env::current_exe()
                .ok()?
                .parent()?
                .join("libsimgpu_dbgapi.so");
            sim.exists().then_some(sim)
        });
    match GpuController::load(path.as_deref()) {
        Ok(g) => Ok(Some(g)),
        Err(e) if cfg.explicit => Err(ServerError::Gpu(e)),
        Err(e) => {
            tracing::warn!(target: "dbgapi", "no GPU support: {e}");
            Ok(None)
        }
    }
}

struct Client {
    conn: Conn,
    kind: ClientKind,
    writable: bool,
    /// Bytes at the front of the pending output already written. The
    /// written prefix is dropped once it is at least half the buffer (or
    /// all of it), so a 1 MiB reply that the socket takes in 64 KiB pieces
    /// is moved O(1) times rather than once per piece; the buffer stays
    /// bounded by twice the unwritten output.
    sent: usize,
}

enum ClientKind {
    Session(AnySession),
    /// Refused: answer the first packet with an error, then close; read
    /// within a budget (see [`Refusal`]).
    Refused(Box<Refusal>),
}

/// A ready-to-run server.
pub struct Server {
    cfg: ServerConfig,
    poll: Poll,
    listener: Option<Listener>,
    sigchld: native::SigchldFd,
    clients: IdMap<Token, Client>,
    next_token: usize,
    cpu_session: Option<Token>,
    /// `--multi`: the CPU session whose client vanished, kept for the next
    /// connection.
    orphan: Option<Box<Session<CpuRole>>>,
    /// Connections turned away by the connection limit (for log pacing).
    over_limit: u64,
    initial: Option<(Box<dyn Target>, StopEvent)>,
    /// Pid of `initial` (kept after a session adopted it).
    initial_pid: Option<Pid>,
    mux: MuxHandle,
    session_tokens: IdMap<u64, Token>,
    exit_requested: bool,
    read_buf: Vec<u8>,
    /// Loop turns so far (the refused connections' per-turn budgets).
    turn: u64,
    /// What each turn did, counted (`monitor loop`, [`turns`]).
    turns: turns::TurnCounter,
    /// Refused connections that used their budget of this turn with input
    /// left: read again next turn (edge-triggered: no new event comes).
    refused_backlog: Vec<Token>,
    /// vFile operations run here, off the loop.
    hostio: crate::hostio::offload::Offload,
    /// The launched programs' output terminal (not in stdio mode).
    output: Option<native::SharedProgramOutput>,
    /// The last turn that read a session's client input (the busy-poll
    /// window also follows a resume: see [`Server::serve`]).
    client_input_turn: u64,
}

/// A panic in the loop is the fatal tier too: while it unwinds, every
/// process is detached and left stopped before the sessions are dropped
/// (dropping a launched process would kill it, and so would the tracer's
/// exit through `PTRACE_O_EXITKILL`).
impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(target: "mux", "fatal: gdbmux panicked; leaving every process stopped and detached");
            self.abandon_all();
        }
    }
}

impl Server {
    fn new(
        mut cfg: ServerConfig,
        custom: Option<(Box<dyn Target>, StopEvent)>,
    ) -> Result<Self, ServerError> {
        cfg.launch.protocol_on_stdio = cfg.listen == ListenAddr::Stdio;
        let output = if cfg.launch.protocol_on_stdio {
            None
        } else {
            match native::OutputTerminal::open() {
                Ok(t) => Some(std::rc::Rc::new(std::cell::RefCell::new(
                    native::ProgramOutput::new(t),
                ))),
                Err(e) => {
                    tracing::warn!(target: "mux", "no output terminal ({e}): launched programs inherit gdbmux's stdout and stderr");
                    None
                }
            }
        };
        cfg.launch.output_fd = output.as_ref().map(|o| o.borrow().term.slave_fd());
        native::block_sigchld()?;
        let poll = Poll::new().map_err(io_err("creating poll"))?;
        let sigchld = native::SigchldFd::new()?;
        poll.registry()
            .register(
                &mut SourceFd(&sigchld.as_raw_fd()),
                SIGCHLD,
                Interest::READABLE,
            )
            .map_err(io_err("registering SIGCHLD fd"))?;
        let initial: Option<(Box<dyn Target>, StopEvent)> = match &cfg.inferior {
            _ if custom.is_some() => custom,
            Inferior::None => None,
            Inferior::Launch => {
                let program = cfg.launch.program.clone().unwrap_or_default();
                let opts = cfg.launch.options(program, cfg.launch.args.clone());
                let (p, stop) = LinuxProcess::launch(&opts)?;
                Some((Box::new(p), stop))
            }
            Inferior::Attach(pid) => {
                let (p, stop) = LinuxProcess::attach(*pid)?;
                Some((Box::new(p), stop))
            }
        };
        let stdio = cfg.listen == ListenAddr::Stdio;
        let mut listener = if stdio {
            None
        } else {
            Some(Listener::bind(&cfg.listen).map_err(io_err(format!("binding {:?}", cfg.listen)))?)
        };
        if let Some(fd) = initial.as_ref().and_then(|(t, _)| t.event_fd()) {
            poll.registry()
                .register(&mut SourceFd(&fd), TARGET_FD, Interest::READABLE)
                .map_err(io_err("registering the target's event fd"))?;
        }
        if let Some(l) = listener.as_mut() {
            poll.registry()
                .register(l.source(), LISTENER, Interest::READABLE)
                .map_err(io_err("registering listener"))?;
        }
        if let Some(o) = &output {
            poll.registry()
                .register(
                    &mut SourceFd(&o.borrow().term.master_fd()),
                    PROGRAM_OUTPUT,
                    Interest::READABLE,
                )
                .map_err(io_err("registering the output terminal"))?;
        }
        let gpu = if cfg.gpu.enabled {
            load_gpu(&cfg.gpu)?
        } else {
            None
        };
        let hook = cfg.gpu.hook.clone().unwrap_or_else(|| {
            let sim = gpu
                .as_ref()
                .is_some_and(|g: &GpuController| g.library().contains("simgpu"));
            if sim {
                "_simgpu_loader_debug_state".to_string()
            } else {
                // ROCr's rendezvous hook (rocr::_loader_debug_state()).
                "_ZN4rocr19_loader_debug_stateEv".to_string()
            }
        });
        let mux = Mux::new(
            gpu.map(|g| std::rc::Rc::new(std::cell::RefCell::new(g))),
            hook,
            // Without --multi a vacant CPU slot is not filled again (with
            // Lifetime::Reopen only a kept session is taken over).
            !matches!(cfg.lifetime, Lifetime::Multi | Lifetime::Relaunch),
            cfg.gpu.report_stops,
        );
        let mux = std::rc::Rc::new(std::cell::RefCell::new(mux));
        let hostio = mio::Waker::new(poll.registry(), HOSTIO_DONE)
            .and_then(crate::hostio::offload::Offload::start)
            .map_err(io_err("starting the vFile workers"))?;
        let mut s = Server {
            hostio,
            cfg,
            mux,
            session_tokens: IdMap::default(),
            poll,
            listener,
            sigchld,
            clients: IdMap::default(),
            next_token: FIRST_CONN,
            cpu_session: None,
            orphan: None,
            over_limit: 0,
            initial_pid: initial.as_ref().map(|(t, _)| t.pid()),
            initial,
            exit_requested: false,
            read_buf: vec![0; READ_CHUNK],
            turn: 0,
            turns: Default::default(),
            refused_backlog: Vec::new(),
            output,
            client_input_turn: 0,
        };
        if stdio {
            nix::fcntl::fcntl(
                0,
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            )
            .map_err(|e| ServerError::Io {
                what: "stdin non-blocking".into(),
                source: e.into(),
            })?;
            s.add_client(Conn::Stdio, "stdio".into())?;
        }
        Ok(s)
    }

    /// Where the server listens (`127.0.0.1:PORT`, `unix:PATH`, `stdio`).
    pub fn local_address(&self) -> String {
        self.listener
            .as_ref()
            .map(|l| l.describe())
            .unwrap_or_else(|| "stdio".into())
    }

    /// Pid of the initially launched/attached process, if any.
    pub fn initial_pid(&self) -> Option<Pid> {
        self.initial_pid
    }

    /// Run until the lifetime ends. On a fatal error every process is
    /// detached and left stopped (the fatal tier, [`crate::error`]).
    pub fn run(mut self) -> Result<(), ServerError> {
        let r = self.serve();
        if let Err(e) = &r {
            tracing::error!(target: "mux", "fatal: {e}; leaving every process stopped and detached");
            self.abandon_all();
        }
        r
    }

    /// The fatal tier for every process this server holds (the kept
    /// `--multi` session, live sessions, a process no client took yet).
    fn abandon_all(&mut self) {
        if let Some(s) = self.orphan.as_mut() {
            s.abandon();
        }
        for c in self.clients.values_mut() {
            if let ClientKind::Session(s) = &mut c.kind {
                s.abandon();
            }
        }
        if let Some((mut t, _)) = self.initial.take() {
            let _ = t.abandon();
        }
    }

    fn serve(&mut self) -> Result<(), ServerError> {
        let mut events = Events::with_capacity(128);
        let mut busy = BusyPoll::for_this_machine(self.cfg.busy_poll);
        loop {
            self.turn += 1;
            let timeout = self.refused_timeout(busy.timeout_now());
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    self.end_turn();
                    continue;
                }
                Err(e) => return Err(io_err("poll")(e)),
            }
            self.refused_turn();
            if timeout.is_some() && events.is_empty() {
                self.end_turn();
                // Spinning with nothing to do: let a client that runs on
                // this CPU go first (it is what we are waiting for).
                std::thread::yield_now();
                continue;
            }
            // Whether a target ran before this turn's events: only a turn
            // whose client input resumed a stopped target spins briefly
            // after it (a packet answered while a target runs, such as a
            // wave list of a running GPU, does not).
            let ran_before = busy.enabled() && self.any_running();
            let mut output_ready = events.iter().any(|e| e.token() == PROGRAM_OUTPUT);
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept_all()?,
                    GPU_NOTIFIER => self.on_gpu_notifier(),
                    TARGET_FD => self.on_target_events(true),
                    HOSTIO_DONE => self.on_hostio_done(),
                    PROGRAM_OUTPUT if output_ready => {
                        output_ready = false;
                        self.pump_output();
                    }
                    PROGRAM_OUTPUT => {}
                    SIGCHLD => {
                        // What the program wrote before it stopped goes
                        // out before the stop reply: the lldb session reads
                        // the terminal itself before its reply
                        // (`Session::forward_program_output`), and a gdb
                        // client gets none of it, so the terminal is read
                        // here only when the poll said it is readable (no
                        // read that ends in EAGAIN at every stop).
                        if output_ready {
                            output_ready = false;
                            self.pump_output();
                        }
                        let maybe_death = self.sigchld.drain();
                        self.on_target_events(maybe_death);
                    }
                    t => {
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.on_readable(t, ev.is_read_closed() || ev.is_error());
                        }
                        if ev.is_writable() {
                            self.flush(t);
                        }
                    }
                }
            }
            // Spin only while every target is stopped: the next event is
            // then the client's, and a running inferior (or simulated GPU)
            // needs the CPU more than we do.
            if self.output_held() {
                self.pump_output();
            }
            // Also, briefly, right after client input that set a stopped
            // target running (a resume): a single step, or a continue to a
            // breakpoint a few instructions on, stops within microseconds,
            // and the spin takes its SIGCHLD without the wake-up from a
            // blocking wait (`rsp-bench --clients`). Events of a running
            // target alone never start one.
            // Both need busy polling on (`--busy-poll-us 0` reads no clock).
            // And after a reply whose follow-up packet the protocol makes
            // the client send at once (a thread list's `qsThreadInfo`),
            // also while a target runs: its wake-up was most of a running
            // GPU's wave-list round trip, and the spin is as short.
            if busy.enabled() {
                let input = self.client_input_turn == self.turn;
                let follow_up = self.take_follow_ups() && input;
                if input && (follow_up || !ran_before && self.any_running()) {
                    busy.after_resume(Instant::now());
                } else {
                    busy.after_events(Instant::now(), !self.any_running());
                }
            }
            self.sync_mux();
            self.end_turn();
            if self.should_exit() {
                tracing::info!(target: "mux", "server exiting");
                // Programs that outlive gdbmux (detached, left running)
                // keep their output reaching gdbmux's stdout.
                if let Some(out) = self.output.clone() {
                    self.pump_output();
                    out.borrow().term.relay_after_exit();
                }
                return Ok(());
            }
        }
    }

    /// Close the loop turn's counts ([`turns`]): the refused connections
    /// open, and the sessions' sockets to check for unread input.
    fn end_turn(&mut self) {
        let refused_open = self
            .clients
            .values()
            .filter(|c| matches!(c.kind, ClientKind::Refused(_)))
            .count();
        // The sessions are only looked at with refused connections open:
        // no list (no allocation) on an ordinary turn.
        let mut sessions = Vec::new();
        if refused_open > 0 {
            for (t, c) in &self.clients {
                match (&c.kind, &c.conn) {
                    (ClientKind::Refused(_), _) => {}
                    (ClientKind::Session(_), Conn::Stdio) => sessions.push((*t, None)),
                    (ClientKind::Session(_), conn) => sessions.push((*t, Some(conn.read_fd()))),
                }
            }
        }
        self.turns.end_turn(self.turn, refused_open, &sessions);
    }

    /// The poll timeout with the refused connections in mind: none when
    /// some have input left from the last turn, else no later than the
    /// first refusal deadline.
    fn refused_timeout(&self, busy: Option<Duration>) -> Option<Duration> {
        if !self.refused_backlog.is_empty() {
            return Some(Duration::ZERO);
        }
        let Some(first) = self
            .clients
            .values()
            .filter_map(|c| match &c.kind {
                ClientKind::Refused(r) => r.deadline(),
                ClientKind::Session(_) => None,
            })
            .min()
        else {
            // No refused connection: the busy-poll window alone decides.
            return busy;
        };
        let left = first.saturating_duration_since(Instant::now());
        Some(busy.map_or(left, |b| b.min(left)))
    }

    /// Once per loop turn: refused connections with input left from the
    /// last turn get this turn's budget; those past their deadline are
    /// answered and closed.
    fn refused_turn(&mut self) {
        for t in std::mem::take(&mut self.refused_backlog) {
            self.on_readable(t, false);
        }
        // The clock is read only when a refused connection is open (a
        // `qC` turn reads it not at all with busy polling off).
        let mut now = None;
        let expired: Vec<Token> = self
            .clients
            .iter_mut()
            .filter_map(|(t, c)| match &mut c.kind {
                ClientKind::Refused(r) if r.deadline().is_some() => r
                    .on_tick(*now.get_or_insert_with(Instant::now))
                    .then_some(*t),
                _ => None,
            })
            .collect();
        for t in expired {
            self.flush(t);
            self.close(t);
        }
    }

    /// Let every session (and a kept `--multi` session without a client)
    /// collect its targets' events.
    ///
    /// `maybe_death`: whether the wake-up may be a stopped process killed
    /// from outside (see [`crate::native::SigchldFd::drain`]).
    fn on_target_events(&mut self, maybe_death: bool) {
        if let Some(s) = self.orphan.as_mut() {
            s.on_target_wakeup(maybe_death);
        }
        let tokens: Vec<Token> = self.clients.keys().copied().collect();
        for t in tokens {
            let close = match self.clients.get_mut(&t) {
                Some(Client {
                    kind: ClientKind::Session(s),
                    ..
                }) => {
                    s.on_target_wakeup(maybe_death);
                    s.wants_close()
                }
                _ => false,
            };
            self.flush(t);
            if close {
                self.close(t);
            }
        }
    }

    /// Whether some session waits for a running target's stop.
    /// Whether a session's reply this turn makes its client send the next
    /// packet at once ([`Session::take_follow_up_due`]); clears the marks.
    fn take_follow_ups(&mut self) -> bool {
        let mut any = false;
        for c in self.clients.values_mut() {
            if let ClientKind::Session(s) = &mut c.kind {
                any |= s.take_follow_up_due();
            }
        }
        any
    }

    fn any_running(&self) -> bool {
        self.clients.values().any(|c| match &c.kind {
            ClientKind::Session(s) => s.is_running(),
            ClientKind::Refused { .. } => false,
        })
    }

    fn should_exit(&self) -> bool {
        if self.exit_requested {
            return true;
        }
        self.mux.borrow().lifetime_over()
    }

    /// The URL a client should use to reach this listener again: the
    /// `--advertise` address, else the address the CPU client connected to
    /// (right behind port forwarding on the same host), else the socket.
    fn offer_url(&self, conn: &Conn) -> String {
        if let Some(a) = &self.cfg.advertise {
            return format!("connect://{a}");
        }
        if let Some(a) = conn.local_addr() {
            return format!("connect://{a}");
        }
        match &self.cfg.listen {
            ListenAddr::Unix(p) => format!("unix-connect://{}", p.display()),
            ListenAddr::Tcp(a) => format!("connect://{a}"),
            ListenAddr::Stdio => "stdio".to_string(),
        }
    }

    /// Carry out what the multiplexer asks: watch GPU fds, tell the GPU
    /// session that its process ended.
    fn sync_mux(&mut self) {
        let actions = self.mux.borrow_mut().take_actions();
        for action in actions {
            match action {
                MuxAction::WatchGpuFd(fd) => {
                    if let Err(e) = self.poll.registry().register(
                        &mut SourceFd(&fd),
                        GPU_NOTIFIER,
                        Interest::READABLE,
                    ) {
                        tracing::warn!(target: "mux", fd, "watching a GPU fd: {e}");
                    }
                }
                MuxAction::EndGpuSession { session, stop } => {
                    let Some(tok) = self.session_tokens.get(&session).copied() else {
                        continue;
                    };
                    let close = match self.clients.get_mut(&tok) {
                        Some(Client {
                            kind: ClientKind::Session(AnySession::Gpu(s)),
                            ..
                        }) => {
                            s.on_peer_exit(&stop);
                            s.wants_close()
                        }
                        _ => false,
                    };
                    self.flush(tok);
                    if close {
                        self.close(tok);
                    }
                }
                MuxAction::ShareGpuNews { from, news } => self.share_gpu_news(from, &news),
            }
        }
    }

    /// GPU news a session took in itself reaches every other session (and
    /// a kept `--multi` session) as if the notifier had fired.
    fn share_gpu_news(&mut self, from: u64, news: &crate::gpu::GpuNews) {
        if let Some(s) = self.orphan.as_mut().filter(|s| s.id() != from) {
            s.on_gpu_notifier(news);
        }
        let tokens: Vec<Token> = self.clients.keys().copied().collect();
        for t in tokens {
            let close = match self.clients.get_mut(&t) {
                Some(Client {
                    kind: ClientKind::Session(s),
                    ..
                }) if s.id() != from => {
                    s.on_gpu_notifier(news);
                    s.wants_close()
                }
                _ => continue,
            };
            self.flush(t);
            if close {
                self.close(t);
            }
        }
    }

    fn on_gpu_notifier(&mut self) {
        let news = self.mux.borrow_mut().pump_gpu();
        if let Some(s) = self.orphan.as_mut() {
            s.on_gpu_notifier(&news);
        }
        let tokens: Vec<Token> = self.clients.keys().copied().collect();
        for t in tokens {
            if let Some(Client {
                kind: ClientKind::Session(s),
                ..
            }) = self.clients.get_mut(&t)
            {
                s.on_gpu_notifier(&news);
            }
            self.flush(t);
        }
    }

    /// vFile replies are ready: deliver each to its session (a session
    /// that is gone, or kept without a client, drops it).
    fn on_hostio_done(&mut self) {
        for done in self.hostio.take_done() {
            let Some(&token) = self.session_tokens.get(&done.session) else {
                continue;
            };
            let control = match self.clients.get_mut(&token) {
                Some(Client {
                    kind: ClientKind::Session(s),
                    ..
                }) if s.id() == done.session => s.on_vfile_done(done.seq, &done.reply),
                _ => continue,
            };
            self.flush(token);
            match control {
                SessionControl::Continue => {}
                SessionControl::Close => self.close(token),
                SessionControl::ExitServer => {
                    self.exit_requested = true;
                    self.close(token);
                }
            }
        }
    }

    fn accept_all(&mut self) -> Result<(), ServerError> {
        loop {
            let Some(l) = self.listener.as_ref() else {
                return Ok(());
            };
            match l.accept() {
                Ok((conn, peer)) if self.clients.len() >= self.cfg.max_connections => {
                    self.turn_away(conn, &peer)
                }
                Ok((conn, peer)) => self.add_client(conn, peer)?,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => {
                    tracing::warn!(target: "mux", "accept failed: {e}");
                    return Ok(());
                }
            }
        }
    }

    /// The connection limit is reached: answer at once with an error
    /// packet (best effort, non-blocking) and close.
    fn turn_away(&mut self, mut conn: Conn, peer: &str) {
        self.over_limit += 1;
        let reason = format!(
            "gdbmux: connection refused: the server's limit of {} simultaneous connections is reached",
            self.cfg.max_connections
        );
        // Pace the log under a connection flood: the first, then every 1000th.
        if self.over_limit % 1000 == 1 {
            tracing::warn!(target: "mux", %peer, turned_away = self.over_limit, "{reason}");
        }
        let _ = conn.write(&refusal_frames(&reason));
    }

    fn add_client(&mut self, conn: Conn, peer: String) -> Result<(), ServerError> {
        // A client that reconnects right after closing: its old connection's
        // end-of-file may sit unread in this same batch of events. Read it
        // now, so the new connection is not refused by a session that is
        // already gone.
        if let Some(old) = self.cpu_session {
            self.on_readable(old, true);
        }
        let token = Token(self.next_token);
        self.next_token += 1;
        let wants_proof = self.mux.borrow().wants_claim_proof();
        let proof = match self.cpu_session.and_then(|t| self.clients.get(&t)) {
            Some(cpu) if wants_proof => Some(peer::claim_proof(
                &cpu.conn,
                &conn,
                self.cfg.advertise.is_some(),
            )),
            _ => None,
        };
        let arrival = Arrival {
            offer_url: self.offer_url(&conn),
            proof,
        };
        let decision = self.mux.borrow_mut().accept(&arrival);
        let kind = match decision {
            Accept::Cpu { session, takeover } => {
                let s = match self.orphan.take() {
                    Some(mut s) if takeover => {
                        s.on_reconnect();
                        tracing::info!(target: "mux", session = s.id(), %peer, "accepted CPU session: it takes over the kept session");
                        s
                    }
                    _ => {
                        let mut s = Session::new(session, self.cfg.launch.clone())
                            .with_mux(self.mux.clone())
                            .with_program_output(self.output.clone())
                            .with_output_limit(self.cfg.max_pending_output);
                        if let Some((t, stop)) = self.initial.take() {
                            s.adopt(t, stop);
                        } else if let Some((t, stop)) = self.relaunch_for_new_client() {
                            s.adopt(t, stop);
                        }
                        tracing::info!(target: "mux", session, %peer, "accepted CPU session");
                        Box::new(s)
                    }
                };
                if self.cfg.announce {
                    announce_peer(&peer);
                }
                self.cpu_session = Some(token);
                self.session_tokens.insert(s.id(), token);
                ClientKind::Session(AnySession::Cpu(s))
            }
            Accept::Gpu {
                session,
                offer,
                cpu_pid,
            } => {
                let gpu = self.mux.borrow().gpu();
                match gpu {
                    Some(gpu) => {
                        let mut t = GpuTarget::new(gpu, cpu_pid);
                        let stop = t.initial_stop();
                        let mut s = Session::<GpuRole>::new_gpu(session, offer, cpu_pid)
                            .with_mux(self.mux.clone())
                            .with_output_limit(self.cfg.max_pending_output);
                        s.adopt(Box::new(t), stop);
                        self.session_tokens.insert(session, token);
                        let proof = arrival.proof.as_ref().map(|p| p.to_string());
                        let proof = proof.as_deref().unwrap_or("none");
                        tracing::info!(target: "mux", session, offer, %peer, "accepted GPU session (claim from {proof})");
                        ClientKind::Session(AnySession::Gpu(Box::new(s)))
                    }
                    None => refused("gdbmux: connection refused: no GPU library".into()),
                }
            }
            Accept::Refuse(reason) => {
                tracing::warn!(target: "mux", %peer, "refused connection: {reason}");
                refused(reason)
            }
        };
        let mut kind = kind;
        match &mut kind {
            ClientKind::Session(s) => {
                s.set_hostio_offload(self.hostio.handle());
                s.set_loop_stats(self.turns.shared());
            }
            ClientKind::Refused(_) => self.turns.refused_opened(),
        }
        let fd = conn.read_fd();
        self.poll
            .registry()
            .register(&mut SourceFd(&fd), token, Interest::READABLE)
            .map_err(io_err("registering connection"))?;
        self.clients.insert(
            token,
            Client {
                conn,
                kind,
                writable: false,
                sent: 0,
            },
        );
        Ok(())
    }

    /// Read what the client sent. `hangup`: the event already reported the
    /// peer's close, so read on to the end-of-file even after a short read
    /// (edge-triggered: no further edge would come for it).
    fn on_readable(&mut self, token: Token, hangup: bool) {
        let mut buf = std::mem::take(&mut self.read_buf);
        if buf.len() < READ_CHUNK {
            buf.resize(READ_CHUNK, 0);
        }
        let mut closed = false;
        let mut control = SessionControl::Continue;
        // This turn's reads, for the counts ([`turns`]).
        let mut refused_reads: Vec<usize> = Vec::new();
        let mut session_read = false;
        while let Some(c) = self.clients.get_mut(&token) {
            let limit = match &mut c.kind {
                ClientKind::Refused(r) => r.allowance(self.turn),
                ClientKind::Session(_) => buf.len(),
            };
            if limit == 0 {
                // Over this turn's budget: the rest waits for the next.
                if !self.refused_backlog.contains(&token) {
                    self.refused_backlog.push(token);
                }
                break;
            }
            let refused = matches!(c.kind, ClientKind::Refused(_));
            let got = c.conn.read(buf.get_mut(..limit).unwrap_or_default());
            if refused {
                refused_reads.push(*got.as_ref().unwrap_or(&0));
            }
            match got {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    let short = n < buf.len();
                    let data = buf.get(..n).unwrap_or_default();
                    match &mut c.kind {
                        ClientKind::Session(s) => {
                            session_read = true;
                            control = s.on_input(data);
                            if control != SessionControl::Continue {
                                break;
                            }
                            // A short read drained the socket: the next
                            // arrival raises a new edge, so no extra
                            // read() is needed to reach WouldBlock.
                            if short && !hangup {
                                break;
                            }
                        }
                        ClientKind::Refused(r) => {
                            if r.on_input(self.turn, Instant::now(), data) {
                                control = SessionControl::Close;
                                break;
                            }
                            // One read a turn: a short one drained the
                            // socket (a new arrival raises a new edge); a
                            // full one used the turn's budget, and the next
                            // pass puts the connection in the backlog.
                            if n < limit && !hangup {
                                break;
                            }
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::debug!(target: "mux", "read error: {e}");
                    closed = true;
                    break;
                }
            }
        }
        self.read_buf = buf;
        for n in refused_reads {
            self.turns.refused_read(token, n);
        }
        if session_read {
            self.turns.session_read(token);
            self.client_input_turn = self.turn;
        }
        if !self.clients.contains_key(&token) {
            return;
        }
        self.flush(token);
        match control {
            SessionControl::Continue => {}
            SessionControl::Close => closed = true,
            SessionControl::ExitServer => {
                closed = true;
                self.exit_requested = true;
            }
        }
        if closed {
            self.close(token);
        }
    }

    fn flush(&mut self, token: Token) {
        let Some(c) = self.clients.get_mut(&token) else {
            return;
        };
        // The session only appends to its output (a reconnect replaces it
        // together with the Client), but never trust a stale offset.
        let queued = match &mut c.kind {
            ClientKind::Session(s) => s.pending_output().len(),
            ClientKind::Refused(r) => r.out().len(),
        };
        let mut written = if c.sent > queued { 0 } else { c.sent };
        let mut failed = false;
        let mut control = SessionControl::Continue;
        loop {
            let out = match &mut c.kind {
                ClientKind::Session(s) => s.pending_output(),
                ClientKind::Refused(r) => r.out(),
            };
            while written < out.len() {
                match c.conn.write(out.get(written..).unwrap_or_default()) {
                    Ok(0) => {
                        failed = true;
                        break;
                    }
                    Ok(n) => written += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::debug!(target: "mux", "write error: {e}");
                        failed = true;
                        break;
                    }
                }
            }
            // All written: the next piece of a streamed reply, if one is
            // in progress (`session/handlers/memory.rs`).
            if failed || written < out.len() || control != SessionControl::Continue {
                break;
            }
            out.clear();
            written = 0;
            match &mut c.kind {
                ClientKind::Session(s) => match s.stream_more() {
                    Some(next) => control = next,
                    None => break,
                },
                ClientKind::Refused(_) => break,
            }
        }
        let out = match &mut c.kind {
            ClientKind::Session(s) => s.pending_output(),
            ClientKind::Refused(r) => r.out(),
        };
        if written == out.len() {
            out.clear();
            written = 0;
        } else if written * 2 >= out.len() {
            out.drain(..written);
            written = 0;
        }
        c.sent = written;
        if out.len() - written
            > self
                .cfg
                .max_pending_output
                .max(crate::session::MAX_PACKET * 2 + 64)
        {
            tracing::error!(
                target: "mux",
                pending = out.len() - written,
                limit = self.cfg.max_pending_output,
                "the client does not read its replies: output queue limit exceeded, closing the connection"
            );
            failed = true;
        }
        let want_write = !out.is_empty() && !failed;
        if want_write != c.writable {
            let fd = c.conn.read_fd();
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if let Err(e) = self
                .poll
                .registry()
                .reregister(&mut SourceFd(&fd), token, interest)
            {
                tracing::warn!(target: "mux", "reregister: {e}");
            }
            c.writable = want_write;
        }
        match control {
            SessionControl::Continue => {}
            SessionControl::Close => failed = true,
            SessionControl::ExitServer => {
                self.exit_requested = true;
                failed = true;
            }
        }
        if failed {
            self.close(token);
        }
    }

    fn close(&mut self, token: Token) {
        let Some(mut c) = self.clients.remove(&token) else {
            return;
        };
        // Best effort: push out what is left (e.g. the refusal reply).
        let out = match &mut c.kind {
            ClientKind::Session(s) => std::mem::take(s.pending_output()),
            ClientKind::Refused(r) => std::mem::take(r.out()),
        };
        if let Some(rest) = out.get(c.sent..).filter(|r| !r.is_empty()) {
            let _ = c.conn.write(rest);
        }
        let fd = c.conn.read_fd();
        let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        if let ClientKind::Session(mut s) = c.kind {
            if self.cpu_session == Some(token) {
                self.cpu_session = None;
            }
            let multi = matches!(self.cfg.lifetime, Lifetime::Multi | Lifetime::Reopen)
                && !self.exit_requested;
            match s {
                // `--multi`: the next connection takes this session over
                // (only a CPU session outlives its client).
                AnySession::Cpu(mut cpu) if multi && cpu.outlives_client() => {
                    tracing::info!(target: "mux", session = cpu.id(), "CPU client gone; session kept for the next connection");
                    if self.cfg.announce {
                        eprintln!("Remote side has terminated connection.  GDBserver will reopen the connection.");
                    }
                    self.session_tokens.remove(&cpu.id());
                    self.mux.borrow_mut().on(MuxEvent::SessionClosed {
                        session: cpu.id(),
                        kept: true,
                    });
                    cpu.on_client_vanished();
                    self.orphan = Some(cpu);
                    return;
                }
                other => s = other,
            }
            tracing::info!(target: "mux", session = s.id(), "session closed");
            let released = s.on_disconnect();
            self.session_tokens.remove(&s.id());
            let mut m = self.mux.borrow_mut();
            m.on(MuxEvent::SessionClosed {
                session: s.id(),
                kept: false,
            });
            // The CPU process was killed or detached with its session: a
            // GPU session learns it at once (next sync).
            for (pid, how) in released {
                m.on(MuxEvent::CpuProcessReleased { pid, how });
            }
        }
        if self.cpu_session == Some(token) {
            self.cpu_session = None;
        }
    }
}
