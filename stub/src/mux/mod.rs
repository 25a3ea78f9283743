//! The multiplexer: the only module that knows several sessions exist,
//! and the one writer of every fact that crosses sessions.
//!
//! - [`ledger`]: strictly increasing action identifiers, and the fate of
//!   every GPU connection offer (offered → claimed → closed).
//! - [`accel`]: the lldb accelerator-plugin JSON (`jAcceleratorPlugin*`).
//! - [`state`]: the GPU state machine (private transitions, typed events).
//! - [`Mux`]: the accept policy, how offers reach the client, which session
//!   is the GPU session, and what the server must do next ([`MuxAction`]).
//!
//! The server and the sessions never write the multiplexer's fields: they
//! send it events ([`Mux::accept`], [`Mux::on`]) and carry out the
//! actions it queues ([`Mux::take_actions`]).
//!
//! ## How the offer reaches stock lldb 23.1
//! lldb sends `jAcceleratorPluginInitialize` once, after it has handled the
//! first stop (research/lldb-accelerator.md §2.1), and honours a
//! `connect_info` in that reply. So:
//! 1. if the GPU runtime is already up when Initialize arrives, the reply
//!    carries the offer;
//! 2. otherwise the reply asks for breakpoints where the runtime comes up:
//!    a by-name one on the runtime's debugger hook, a by-name one on a
//!    function of the runtime's exported API called once it is up
//!    ([`exported_hook`]), and a by-address one on every address the GPU
//!    library itself asked gdbmux to break on (`insert_breakpoint`: the
//!    runtime's `r_brk`, the dynamic linker's). The exported name is in
//!    `.dynsym` and the by-address ones need no symbol, so a stripped
//!    runtime (no `.symtab`, as Debian's libhsa-runtime64, where the hook
//!    stays pending) works: its first lifetime through the exported
//!    function (the library asks for `r_brk` only during the runtime's
//!    enable, when lldb holds no breakpoint that could carry it), later
//!    ones through `r_brk` too. When one is hit, lldb
//!    reports it with `jAcceleratorPluginBreakpointHit`; that reply carries
//!    the offer once the runtime is up (with `auto_resume_native: true`:
//!    the user sees no stop), and by-address breakpoints for addresses the
//!    library asked for since.
//!
//! Offers only ever travel in these request/response packets, never in
//! stop replies (which clients fetch more than once), and the ledger makes
//! at most one offer per GPU runtime lifetime.
//!
//! ## Accept policy ([`Mux::accept`], the one place it is decided)
//! 1. No live CPU session (and the server's lifetime allows another): the
//!    connection is the CPU session (with `--multi`, it takes over the
//!    kept one).
//! 2. A CPU session is live and an offer is pending: the connection claims
//!    the offer **if it proves it answers the offer** ([`ClaimProof`]),
//!    and becomes the GPU session.
//! 3. Anything else is refused with a readable reason (an `E` reply to its
//!    first packet) and closed; live sessions and a pending offer are
//!    untouched.
//!
//! ### The claim proof
//! Stock lldb 23.1 connects to `connect_url` as it is and sends nothing of
//! the URL on the wire (its handshake is fixed: `QStartNoAckMode`,
//! `qSupported`, …), so a token in the URL cannot reach the server. What
//! lldb does honour is *who* connects: the GPU connection is opened by the
//! same lldb process that holds the CPU connection (research/
//! lldb-accelerator.md §2.4). The server therefore proves a claim by peer
//! identity ([`crate::server::peer`]): on this host, the claiming socket
//! and the CPU session's socket must belong to one process (the kernel's
//! socket tables and the process's fds; `SO_PEERCRED` on unix sockets).
//! For a client on another host, where its processes cannot be seen, the
//! claim must come from the CPU client's address. With `--advertise` (the
//! client is behind port forwarders), both connections are traced through
//! the forwarders, hop by hop, and must end at the same client process (or
//! remote address); a relay that carries many clients in one process
//! proves a claim only while all it carries is one client's
//! ([`crate::server::peer`] has the rules and bounds). A port scanner, a second
//! debugger or any other process that connects while an offer is pending
//! is refused, and the offer stays pending for the real client.
//!
//! Every decision is logged on target `mux`.

pub mod accel;
pub mod ledger;
pub mod state;

use std::os::fd::RawFd;

use accel::Actions;
use accel::BreakpointHit;
use accel::BreakpointInfo;
use accel::ByAddress;
use accel::ByName;
use accel::ConnectInfo;
use accel::HitResponse;
use accel::PLUGIN_NAME;
pub use ledger::ClaimError;

/// Why an accelerator-plugin request fails. Every one is answered with
/// [`crate::error::ErrorCode::Accelerator`] (lldb-server's `Eff`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccelError {
    /// The request's JSON does not parse.
    #[error("invalid accelerator JSON: {0}")]
    Json(String),
    /// A plugin name other than gdbmux's.
    #[error("unknown accelerator plugin name '{0}'")]
    UnknownPlugin(String),
    /// A breakpoint identifier gdbmux never gave out.
    #[error("unknown accelerator breakpoint {0}")]
    UnknownBreakpoint(i64),
    /// The session has no multiplexer (built outside a server).
    #[error("no accelerator plugin on this connection")]
    NoPlugin,
}

impl AccelError {
    /// The error's code on the wire.
    pub fn code(&self) -> crate::error::ErrorCode {
        crate::error::ErrorCode::Accelerator
    }
}
use ledger::Ledger;
pub use state::GpuState;

use crate::gpu::GpuNews;
use crate::gpu::GpuShared;
use crate::stop::StopEvent;
use crate::target::Pid;

/// Shared handle (one loop thread).
pub type MuxHandle = std::rc::Rc<std::cell::RefCell<Mux>>;

/// Identifier of the by-name breakpoint on the runtime hook.
const HOOK_BREAKPOINT_ID: i64 = 1;
/// Identifier of the by-name breakpoint on the runtime's exported API
/// function ([`exported_hook`]).
const EXPORTED_HOOK_BREAKPOINT_ID: i64 = 2;
/// First identifier of the by-address breakpoints on the library's
/// addresses.
const FIRST_ADDRESS_BREAKPOINT_ID: i64 = 3;

/// The simulated runtime's hook, an exported function (in `.dynsym`).
const EXPORTED_SIM_HOOK: &str = "_simgpu_loader_debug_state";

/// A function of the GPU runtime's *exported* API that a program calls
/// once the runtime is up and before any kernel runs, for the runtime of
/// the library `library`: ROCr's `hsa_executable_freeze` (every code
/// object reaches a kernel through a frozen executable), the simulated
/// runtime's `simgpu_module_load`. Exported names are in `.dynsym`, which
/// `strip` keeps (the dynamic linker needs it), so lldb resolves this
/// breakpoint in a stripped runtime, where the internal hook's name (only
/// in `.symtab`) stays pending: it carries the offer of the runtime's first
/// lifetime, before the library has asked for an address (docs/gpu-lldb.md,
/// finding 11).
pub fn exported_hook(library: &str) -> &'static str {
    if library.contains("simgpu") {
        "simgpu_module_load"
    } else {
        "hsa_executable_freeze"
    }
}

/// Session identifier (strictly increasing, never reused).
pub type SessionId = u64;

/// How a claiming connection proves that it answers the offer (see the
/// module docs). Established by [`crate::server::peer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimProof {
    /// The claiming socket and the CPU session's socket belong to one
    /// process on this host.
    SameProcess(u32),
    /// Both connections come from one remote address (its processes are
    /// out of sight).
    SameRemoteHost(std::net::IpAddr),
    /// The claim comes through forwarder process `forwarder`, and both
    /// connections were traced back to one client (`client`: the next
    /// forwarder of the claim's chain, nested once per forwarder, then
    /// [`ClaimProof::SameProcess`] or [`ClaimProof::SameRemoteHost`]).
    ThroughForwarder {
        /// The forwarder process the claim comes from.
        forwarder: u32,
        /// The one client both connections were traced back to.
        client: Box<ClaimProof>,
    },
    /// Not the debugger that received the offer (why, for the refusal).
    Mismatch(String),
}

/// What the server knows of a new connection.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// The URL that reaches this listener again (for offers made to the
    /// CPU client this connection would become).
    pub offer_url: String,
    /// The claim proof, present when [`Mux::wants_claim_proof`] said so.
    pub proof: Option<ClaimProof>,
}

/// The accept policy's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accept {
    /// The CPU session: a new one, or (`--multi`) the kept one taken over.
    Cpu {
        /// Its id (for a take-over: the kept session's).
        session: SessionId,
        /// Whether the kept session is taken over.
        takeover: bool,
    },
    /// The GPU session: it claimed offer `offer` for CPU process `cpu_pid`.
    Gpu {
        /// Its id.
        session: SessionId,
        /// The claimed offer.
        offer: i64,
        /// The CPU process the GPU belongs to.
        cpu_pid: Pid,
    },
    /// Refused: answer the first packet with this reason, then close.
    Refuse(String),
}

/// How a CPU process left its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Killed (a launched process, at disconnect or `k`).
    Killed,
    /// Detached (an attached process, or `D`); it runs on without us.
    Detached,
}

/// Typed events the server and the sessions send the multiplexer.
#[derive(Debug)]
pub enum MuxEvent<'a> {
    /// The GPU library attached to CPU process `pid`; `notifier` is the fd
    /// the loop must watch.
    GpuAttached {
        /// CPU process.
        pid: Pid,
        /// The library's notifier, if any.
        notifier: Option<RawFd>,
    },
    /// The CPU process ended (its exit or death was reported).
    CpuProcessEnded(&'a StopEvent),
    /// The CPU process was released by its session (kill or detach).
    CpuProcessReleased {
        /// The process.
        pid: Pid,
        /// How.
        how: Release,
    },
    /// A session ended. `kept`: `--multi` keeps the CPU session for the
    /// next connection.
    SessionClosed {
        /// The session.
        session: SessionId,
        /// Kept for a take-over.
        kept: bool,
    },
    /// `monitor gpu stops report|log`.
    ReportGpuStops(bool),
}

/// What the multiplexer asks of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MuxAction {
    /// Watch this fd (GPU notifier or stop timer) as a GPU wake-up.
    WatchGpuFd(RawFd),
    /// Tell the GPU session that its process ended with this event (it
    /// reports it and closes).
    EndGpuSession {
        /// The GPU session.
        session: SessionId,
        /// How the GPU process ended.
        stop: StopEvent,
    },
    /// A session took in GPU events itself (`Mux::pump_gpu_for`: a
    /// `monitor gpu` command, an internal breakpoint hit): the other
    /// sessions get the news as if the notifier had fired, so none is lost
    /// (a released host breakpoint, a wave stop).
    ShareGpuNews {
        /// The session that took them in (and acted on them).
        from: SessionId,
        /// What it took in.
        news: GpuNews,
    },
}

/// The CPU session slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuSlot {
    /// No CPU session.
    Vacant,
    /// A connected CPU session.
    Live(SessionId),
    /// `--multi`: a CPU session without a client, kept for the next one.
    Kept(SessionId),
}

/// The multiplexer (private state; see the module docs).
pub struct Mux {
    ledger: Ledger,
    gpu: Option<GpuShared>,
    state: state::Machine,
    hook_symbol: String,
    connect_url: Option<String>,
    cpu: CpuSlot,
    gpu_session: Option<SessionId>,
    next_session: SessionId,
    /// Once-only server (no `--multi`): a second CPU session is refused.
    once: bool,
    served_one: bool,
    report_gpu_stops: bool,
    actions: Vec<MuxAction>,
    /// Library breakpoint addresses handed to lldb as by-address
    /// breakpoints → their identifiers (bounded by the library's own
    /// breakpoints; reset with the CPU session's Initialize).
    address_breakpoints: std::collections::BTreeMap<u64, i64>,
}

impl Mux {
    /// New multiplexer. `once`: the server ends with its first CPU session.
    pub fn new(gpu: Option<GpuShared>, hook_symbol: String, once: bool, report: bool) -> Self {
        let state = state::Machine::new(gpu.is_some());
        Mux {
            ledger: Ledger::new(),
            gpu,
            state,
            hook_symbol,
            connect_url: None,
            cpu: CpuSlot::Vacant,
            gpu_session: None,
            next_session: 1,
            once,
            served_one: false,
            report_gpu_stops: report,
            actions: Vec::new(),
            address_breakpoints: std::collections::BTreeMap::new(),
        }
    }

    /// The GPU controller, when a GPU library is loaded (the GPU's own
    /// facts: waves, breakpoints, code objects).
    pub fn gpu(&self) -> Option<GpuShared> {
        self.gpu.clone()
    }

    /// The GPU state.
    pub fn gpu_state(&self) -> GpuState {
        self.state.get()
    }

    /// Whether a GPU session is connected.
    pub fn gpu_connected(&self) -> bool {
        self.gpu_session.is_some()
    }

    /// Whether GPU wave stops go to the CPU session (gdb's `monitor gpu`
    /// path): only while no GPU session is connected, and unless `monitor
    /// gpu stops log` turned it off.
    pub fn report_gpu_stops_to_cpu(&self) -> bool {
        self.gpu_session.is_none() && self.report_gpu_stops
    }

    /// Whether the server's lifetime is over (a once-only server whose CPU
    /// session ended).
    pub fn lifetime_over(&self) -> bool {
        // A GPU session whose end waits for its client's interrupt (the
        // lldb helper's, `GpuController::hold_exit`) is served to its end.
        let gpu_ending = self.gpu_session.is_some()
            && self
                .gpu
                .as_ref()
                .is_some_and(|g| g.borrow().exit_hold_engaged());
        self.once && self.served_one && self.cpu == CpuSlot::Vacant && !gpu_ending
    }

    /// Whether a new connection would be judged as a claim, so the server
    /// must establish its [`ClaimProof`] (a /proc look-up, done only then).
    pub fn wants_claim_proof(&self) -> bool {
        matches!(self.cpu, CpuSlot::Live(_)) && self.ledger.pending().is_some()
    }

    fn new_session_id(&mut self) -> SessionId {
        let id = self.next_session;
        self.next_session += 1;
        id
    }

    /// The accept policy: what a new connection becomes.
    pub fn accept(&mut self, arrival: &Arrival) -> Accept {
        let cpu_allowed = !(self.once && self.served_one);
        match self.cpu {
            CpuSlot::Kept(session) => {
                self.connect_url = Some(arrival.offer_url.clone());
                self.cpu = CpuSlot::Live(session);
                tracing::info!(target: "mux", session, "accept: CPU session (takes over the kept session)");
                return Accept::Cpu {
                    session,
                    takeover: true,
                };
            }
            CpuSlot::Vacant if cpu_allowed => {
                let session = self.new_session_id();
                self.connect_url = Some(arrival.offer_url.clone());
                self.cpu = CpuSlot::Live(session);
                self.served_one = true;
                tracing::info!(target: "mux", session, "accept: CPU session");
                return Accept::Cpu {
                    session,
                    takeover: false,
                };
            }
            CpuSlot::Vacant => {
                let reason =
                    "gdbmux: connection refused: this server served its one session and is exiting"
                        .to_string();
                tracing::warn!(target: "mux", "accept: refused ({reason})");
                return Accept::Refuse(reason);
            }
            CpuSlot::Live(_) => {}
        }
        let Some(pending) = self.ledger.pending().map(|o| o.id) else {
            let why = match self.ledger.refusal() {
                Some(e @ ClaimError::AlreadyClaimed(_)) => e.to_string(),
                _ => ClaimError::NoOffer.to_string(),
            };
            return self.refuse(format!(
                "a debugger session is already active on this server and {why}"
            ));
        };
        match &arrival.proof {
            Some(
                ClaimProof::SameProcess(_)
                | ClaimProof::SameRemoteHost(_)
                | ClaimProof::ThroughForwarder { .. },
            ) => {}
            Some(ClaimProof::Mismatch(why)) => {
                return self.refuse(format!(
                    "a debugger session is already active on this server, and this connection does not answer the pending GPU connection offer {pending} ({why})"
                ));
            }
            None => {
                return self.refuse(format!(
                    "the pending GPU connection offer {pending} needs a claim proof"
                ));
            }
        }
        let cpu_pid = self.gpu.as_ref().and_then(|g| g.borrow().cpu_pid());
        let Some(cpu_pid) = cpu_pid else {
            return self.refuse("the GPU process is gone".to_string());
        };
        let session = self.new_session_id();
        match self.ledger.claim(session) {
            Ok(offer) => {
                self.gpu_session = Some(session);
                self.state.connected();
                tracing::info!(target: "mux", session, offer, proof = ?arrival.proof, "accept: GPU session (offer claimed)");
                Accept::Gpu {
                    session,
                    offer,
                    cpu_pid,
                }
            }
            Err(e) => self.refuse(e.to_string()),
        }
    }

    fn refuse(&self, why: String) -> Accept {
        let reason = format!("gdbmux: connection refused: {why}; the live sessions are untouched");
        tracing::warn!(target: "mux", "accept: refused ({reason})");
        Accept::Refuse(reason)
    }

    /// Take in a typed event; the actions it needs are queued for
    /// [`Mux::take_actions`].
    pub fn on(&mut self, event: MuxEvent<'_>) {
        match event {
            MuxEvent::GpuAttached { pid, notifier } => {
                self.state.process_attached();
                if let Some(fd) = notifier {
                    self.actions.push(MuxAction::WatchGpuFd(fd));
                }
                tracing::info!(target: "mux", pid, "GPU library attached to the CPU process");
            }
            MuxEvent::CpuProcessEnded(stop) => {
                let attached = self.gpu.as_ref().and_then(|g| g.borrow().cpu_pid());
                if attached == Some(stop.pid()) {
                    self.cpu_process_gone(stop.clone(), GpuState::Exited);
                }
            }
            MuxEvent::CpuProcessReleased { pid, how } => {
                let attached = self.gpu.as_ref().and_then(|g| g.borrow().cpu_pid());
                if attached == Some(pid) {
                    let (stop, to) = match how {
                        Release::Killed => (
                            StopEvent::Terminated {
                                pid,
                                signal: libc::SIGKILL,
                            },
                            GpuState::Exited,
                        ),
                        // The process runs on without a debugger: its GPU
                        // process ends for the GPU client like a clean exit.
                        Release::Detached => {
                            (StopEvent::Exited { pid, code: 0 }, GpuState::Detached)
                        }
                    };
                    self.cpu_process_gone(stop, to);
                }
            }
            MuxEvent::SessionClosed { session, kept } => {
                if self.cpu == CpuSlot::Live(session) {
                    self.cpu = if kept {
                        CpuSlot::Kept(session)
                    } else {
                        CpuSlot::Vacant
                    };
                    tracing::info!(target: "mux", session, kept, "CPU session closed");
                }
                if self.gpu_session == Some(session) {
                    self.gpu_session = None;
                    self.ledger.close_session(session);
                    self.state.disconnected();
                    tracing::info!(target: "mux", session, "GPU session closed; a new claim needs a new offer");
                }
            }
            MuxEvent::ReportGpuStops(on) => self.report_gpu_stops = on,
        }
    }

    /// [`Mux::pump_gpu`] on behalf of `session` (outside the loop's own
    /// pump): the news also goes to every other session
    /// ([`MuxAction::ShareGpuNews`]).
    pub fn pump_gpu_for(&mut self, session: SessionId) -> GpuNews {
        let news = self.pump_gpu();
        if news.events > 0 {
            self.actions.push(MuxAction::ShareGpuNews {
                from: session,
                news: news.clone(),
            });
        }
        news
    }

    /// Drain the GPU library's events (the one place they are taken in)
    /// and apply the runtime's transitions; the news goes to the sessions.
    pub fn pump_gpu(&mut self) -> GpuNews {
        let Some(gpu) = self.gpu.clone() else {
            return GpuNews::default();
        };
        let news = gpu.borrow_mut().process_events();
        if news.runtime_unloaded {
            // Withdraw an unclaimed offer of the lifetime that ended.
            let lifetime = gpu.borrow().lifetime();
            self.ledger.close_lifetime(lifetime);
            // The GPU process of this runtime lifetime is gone: a connected
            // GPU session reports its end (W00) and closes; only a new
            // runtime load may make a new offer.
            if let Some(session) = self.gpu_session {
                self.queue_end(session, StopEvent::Exited { pid: 0, code: 0 });
            }
        }
        match news.runtime_up {
            Some(true) => self.state.runtime_loaded(),
            Some(false) => self.state.runtime_unloaded(),
            None => {}
        }
        news
    }

    /// Actions for the server, in order (the GPU stop timer's fd, once, is
    /// among them).
    pub fn take_actions(&mut self) -> Vec<MuxAction> {
        if let Some(fd) = self
            .gpu
            .as_ref()
            .and_then(|g| g.borrow_mut().take_new_timer_fd())
        {
            self.actions.push(MuxAction::WatchGpuFd(fd));
        }
        // All-stop work for the sessions (`crate::gpu::allstop`): a CPU
        // stop to make, a notice to send. They get it as GPU news from no
        // session.
        if self
            .gpu
            .as_ref()
            .is_some_and(|g| g.borrow_mut().all_stop_mut().take_wake())
        {
            self.actions.push(MuxAction::ShareGpuNews {
                from: 0,
                news: GpuNews::default(),
            });
        }
        std::mem::take(&mut self.actions)
    }

    fn queue_end(&mut self, session: SessionId, stop: StopEvent) {
        let dup = self
            .actions
            .iter()
            .any(|a| matches!(a, MuxAction::EndGpuSession { session: s, .. } if *s == session));
        if !dup {
            self.actions
                .push(MuxAction::EndGpuSession { session, stop });
        }
    }

    fn cpu_process_gone(&mut self, stop: StopEvent, to: GpuState) {
        if let Some(g) = &self.gpu {
            g.borrow_mut().on_cpu_exit();
        }
        if let Some(lifetime) = self.gpu.as_ref().map(|g| g.borrow().lifetime()) {
            self.ledger.close_lifetime(lifetime);
        }
        self.state.cpu_gone(to);
        if let Some(session) = self.gpu_session {
            self.queue_end(session, stop);
        }
    }

    /// By-address breakpoints for the library's breakpoint addresses that
    /// lldb does not have yet.
    fn new_address_breakpoints(&mut self) -> Vec<BreakpointInfo> {
        let Some(gpu) = &self.gpu else {
            return Vec::new();
        };
        let addrs = gpu.borrow().host_breakpoint_addresses();
        let mut out = Vec::new();
        for addr in addrs {
            if self.address_breakpoints.contains_key(&addr) {
                continue;
            }
            let id = FIRST_ADDRESS_BREAKPOINT_ID + self.address_breakpoints.len() as i64;
            self.address_breakpoints.insert(addr, id);
            out.push(BreakpointInfo {
                identifier: id,
                by_name: None,
                by_address: Some(ByAddress { load_address: addr }),
                symbol_names: vec![],
            });
        }
        out
    }

    /// The by-name breakpoint on the runtime's exported API function
    /// ([`exported_hook`]), unless the hook is exported itself (the
    /// simulated runtime's, which stripping keeps) or `--gpu-hook` named
    /// that function.
    fn exported_hook_breakpoint(&self) -> Option<BreakpointInfo> {
        let name = exported_hook(&self.gpu.as_ref()?.borrow().library());
        (name != self.hook_symbol && self.hook_symbol != EXPORTED_SIM_HOOK).then(|| {
            BreakpointInfo {
                identifier: EXPORTED_HOOK_BREAKPOINT_ID,
                by_name: Some(ByName {
                    function_name: name.to_string(),
                    shlib: None,
                }),
                by_address: None,
                symbol_names: vec![name.to_string()],
            }
        })
    }

    fn hook_breakpoint(&self) -> BreakpointInfo {
        BreakpointInfo {
            identifier: HOOK_BREAKPOINT_ID,
            by_name: Some(ByName {
                function_name: self.hook_symbol.clone(),
                shlib: None,
            }),
            by_address: None,
            symbol_names: vec![self.hook_symbol.clone()],
        }
    }

    /// Make the offer for the current runtime lifetime if none was made
    /// yet and the runtime is up. Exactly once per lifetime.
    fn try_offer(&mut self) -> Option<ConnectInfo> {
        let gpu = self.gpu.clone()?;
        if self.state.get() != GpuState::RuntimeLoaded {
            return None;
        }
        let url = self.connect_url.clone()?;
        let (triple, lifetime) = {
            let mut g = gpu.borrow_mut();
            (g.triple(), g.lifetime())
        };
        let offer = self.ledger.offer(lifetime, &url, &triple)?.clone();
        self.state.offered();
        tracing::info!(target: "mux", id = offer.id, url = %offer.url, triple = %offer.triple, lifetime, "GPU connection offered");
        Some(ConnectInfo {
            connect_url: offer.url,
            platform_name: "host".into(),
            triple: offer.triple,
            synchronous: true,
        })
    }

    /// Reply to `jAcceleratorPluginInitialize`.
    pub fn initialize(&mut self) -> Vec<u8> {
        if self.gpu.is_none() {
            return b"[]".to_vec();
        }
        let connect_info = self.try_offer();
        let identifier = match &connect_info {
            Some(_) => self.ledger.latest().map(|o| o.id).unwrap_or(0),
            None => self.ledger.next_identifier(),
        };
        // A new CPU session (lldb) has none of our breakpoints yet.
        self.address_breakpoints.clear();
        let mut breakpoints = vec![self.hook_breakpoint()];
        breakpoints.extend(self.exported_hook_breakpoint());
        breakpoints.extend(self.new_address_breakpoints());
        let actions = Actions {
            plugin_name: PLUGIN_NAME.into(),
            session_name: "AMD GPU".into(),
            identifier,
            breakpoints,
            connect_info,
        };
        tracing::info!(target: "mux", identifier, offer = actions.connect_info.is_some(), breakpoints = actions.breakpoints.len(), "jAcceleratorPluginInitialize answered");
        accel::to_json(&vec![actions])
    }

    /// Reply to `jAcceleratorPluginBreakpointHit:`.
    pub fn breakpoint_hit(&mut self, json: &[u8]) -> Result<Vec<u8>, AccelError> {
        let hit: BreakpointHit =
            serde_json::from_slice(json).map_err(|e| AccelError::Json(e.to_string()))?;
        if hit.plugin_name != PLUGIN_NAME {
            return Err(AccelError::UnknownPlugin(hit.plugin_name));
        }
        let id = hit.breakpoint.identifier;
        if id != HOOK_BREAKPOINT_ID
            && id != EXPORTED_HOOK_BREAKPOINT_ID
            && !self.address_breakpoints.values().any(|v| *v == id)
        {
            return Err(AccelError::UnknownBreakpoint(id));
        }
        let offer = self.try_offer();
        let breakpoints = self.new_address_breakpoints();
        let actions = match offer {
            Some(ci) => Some(Actions {
                plugin_name: PLUGIN_NAME.into(),
                session_name: "AMD GPU".into(),
                identifier: self.ledger.latest().map(|o| o.id).unwrap_or(0),
                breakpoints,
                connect_info: Some(ci),
            }),
            None if !breakpoints.is_empty() => Some(Actions {
                plugin_name: PLUGIN_NAME.into(),
                session_name: "AMD GPU".into(),
                identifier: self.ledger.next_identifier(),
                breakpoints,
                connect_info: None,
            }),
            None => None,
        };
        tracing::info!(
            target: "mux",
            breakpoint = id,
            offer = actions.as_ref().is_some_and(|a| a.connect_info.is_some()),
            new_breakpoints = actions.as_ref().map_or(0, |a| a.breakpoints.len()),
            "accelerator breakpoint hit"
        );
        Ok(accel::to_json(&HitResponse {
            disable_bp: false,
            auto_resume_native: true,
            actions,
        }))
    }

    /// `monitor gpu` text.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let Some(gpu) = &self.gpu else {
            return "GPU: no GPU library loaded (start gdbmux with --dbgapi PATH or GDBMUX_DBGAPI)\n".into();
        };
        let mut g = gpu.borrow_mut();
        let _ = writeln!(s, "GPU state: {}", self.state.get());
        let _ = writeln!(s, "library: {}", g.library());
        let _ = writeln!(s, "{}", g.runtime_text());
        match g.agents() {
            Ok(agents) if agents.is_empty() => {
                let _ = writeln!(s, "{}", crate::gpu::NO_AGENTS);
            }
            Ok(agents) => agents.iter().for_each(|a| {
                let _ = writeln!(s, "{a}");
            }),
            Err(e) => {
                let _ = writeln!(s, "agents: {e}");
            }
        }
        // Agents of several architectures share one register table.
        let archs = g.table_architectures().to_vec();
        if archs.len() > 1 {
            let _ = writeln!(
                s,
                "register table: the union of {} ({} registers; each wave has only its own architecture's)",
                archs.join(", "),
                g.registers().len()
            );
        }
        let _ = writeln!(
            s,
            "runtime lifetimes: {}; events handled: {}",
            g.lifetime(),
            g.events_total()
        );
        let _ = writeln!(s, "host breakpoint hits: {}", g.event_counts().host_hits);
        let c = g.event_counts();
        let _ = writeln!(
            s,
            "events: {} wave stops, {} wave ends, {} code-object updates, {} runtime, {} breakpoint resumes, {} queue errors; \
             stops queued {} (max {}, replaced {}, dropped {}); passes cut {}",
            c.wave_stops,
            c.wave_terminations,
            c.code_object_updates,
            c.runtime,
            c.breakpoint_resumes,
            c.queue_errors,
            g.queued_stops(),
            c.max_queued_stops,
            c.stops_replaced,
            c.stops_dropped,
            c.passes_cut
        );
        let (tids, reg_maps, stepping, queued) = g.per_wave_counts();
        let _ = writeln!(
            s,
            "kept per wave: {tids} thread ids, {reg_maps} register maps, {stepping} stepping off a breakpoint, {queued} waiting for a displaced stepping buffer"
        );
        for co in g.code_objects() {
            let _ = writeln!(
                s,
                "code object {}: {} (load address {:#x})",
                co.id.0, co.uri, co.load_address
            );
        }
        for o in self.ledger.offers() {
            let _ = writeln!(s, "offer {}: {} {} [{}]", o.id, o.url, o.triple, o.state);
        }
        if let Some(url) = &self.connect_url {
            let addr = url.trim_start_matches("connect://");
            let _ = writeln!(
                s,
                "reach the GPU:\n  lldb: settings set stop-disassembly-display never   (before the GPU target appears: stock lldb 23.1 aborts disassembling {arch} stops)\n        the GPU target then appears by itself (offered through jAcceleratorPluginInitialize or the runtime hook), e.g.\n        lldb -o 'settings set stop-disassembly-display never' -o 'gdb-remote {addr}' PROGRAM\n  gdb:  monitor gpu waves | monitor gpu regs WAVE | monitor gpu break ADDR | monitor gpu continue  (on this CPU session, {addr})",
                arch = g.architecture().map(|a| a.name).unwrap_or_else(|| "AMD GPU".into()),
            );
        }
        s
    }
}
