//! The multiplexer: the only module that knows several sessions exist.
//!
//! - [`ledger`]: strictly increasing action identifiers, and the fate of
//!   every GPU connection offer (offered → claimed → closed).
//! - [`accel`]: the lldb accelerator-plugin JSON (`jAcceleratorPlugin*`).
//! - [`Mux`]: listener policy, how offers reach the client, GPU state.
//!
//! ## How the offer reaches stock lldb 23.1
//! lldb sends `jAcceleratorPluginInitialize` once, after it has handled the
//! first stop (research/lldb-accelerator.md §2.1), and honours a
//! `connect_info` in that reply. So:
//! 1. if the GPU runtime is already up when Initialize arrives, the reply
//!    carries the offer;
//! 2. otherwise the reply asks for breakpoints where the runtime comes up:
//!    a by-name one on the runtime's debugger hook, and a by-address one on
//!    every address the GPU library itself asked gdbmux to break on
//!    (`insert_breakpoint`: the runtime's `r_brk`, the dynamic linker's).
//!    The by-address ones need no symbol, so a stripped runtime (no
//!    `.symtab`, as Debian's libhsa-runtime64) works. When one is hit, lldb
//!    reports it with `jAcceleratorPluginBreakpointHit`; that reply carries
//!    the offer once the runtime is up (with `auto_resume_native: true`:
//!    the user sees no stop), and by-address breakpoints for addresses the
//!    library asked for since.
//!
//! Offers only ever travel in these request/response packets, never in
//! stop replies (which clients fetch more than once), and the ledger makes
//! at most one offer per GPU runtime lifetime.
//!
//! ## Listener policy
//! The first connection is the CPU session. A connection that arrives
//! while an offer is pending claims it and becomes the GPU session. Any
//! other connection is refused with a readable reason (an `E` reply to its
//! first packet) and closed; live sessions are untouched. Every decision is
//! logged on target `mux`.

pub mod accel;
pub mod ledger;

use std::cell::RefCell;
use std::rc::Rc;

use accel::Actions;
use accel::BreakpointHit;
use accel::BreakpointInfo;
use accel::ByAddress;
use accel::ByName;
use accel::ConnectInfo;
use accel::HitResponse;
use accel::PLUGIN_NAME;
pub use ledger::ClaimError;
use ledger::Ledger;

use crate::gpu::GpuShared;
use crate::gpu::GpuState;

/// Shared handle (one loop thread).
pub type MuxHandle = Rc<RefCell<Mux>>;

/// Identifier of the by-name breakpoint on the runtime hook.
const HOOK_BREAKPOINT_ID: i64 = 1;
/// First identifier of the by-address breakpoints on the library's
/// addresses.
const FIRST_ADDRESS_BREAKPOINT_ID: i64 = 2;

/// Multiplexer state shared by the server and its sessions.
pub struct Mux {
    /// Action ledger.
    pub ledger: Ledger,
    /// The GPU, when a GPU library is loaded.
    pub gpu: Option<GpuShared>,
    /// The runtime's debugger hook function (by-name breakpoint).
    pub hook_symbol: String,
    /// URL to put in `connect_info` (`--advertise`, or the address the CPU
    /// client connected to, or the unix socket).
    pub connect_url: Option<String>,
    /// Session id of the connected GPU session.
    pub gpu_session: Option<u64>,
    /// fds the server must start watching (GPU notifier).
    pub new_fds: Vec<std::os::fd::RawFd>,
    /// Report GPU stops to the CPU session (gdb's `monitor gpu` path)
    /// instead of only logging them.
    pub report_gpu_stops: bool,
    /// The CPU process ended; the server forwards this to the GPU session.
    pub cpu_exit: Option<crate::stop::StopEvent>,
    /// Library breakpoint addresses handed to lldb as by-address
    /// breakpoints → their identifiers (bounded by the library's own
    /// breakpoints; reset with the CPU session's Initialize).
    address_breakpoints: std::collections::BTreeMap<u64, i64>,
}

impl Mux {
    /// New multiplexer.
    pub fn new(gpu: Option<GpuShared>, hook_symbol: String) -> Self {
        Mux {
            ledger: Ledger::new(),
            gpu,
            hook_symbol,
            connect_url: None,
            gpu_session: None,
            new_fds: Vec::new(),
            report_gpu_stops: true,
            cpu_exit: None,
            address_breakpoints: std::collections::BTreeMap::new(),
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
        let mut g = gpu.borrow_mut();
        if *g.state() != GpuState::RuntimeLoaded {
            return None;
        }
        let url = self.connect_url.clone()?;
        let triple = g.triple();
        let lifetime = g.lifetime();
        let offer = self.ledger.offer(lifetime, &url, &triple)?.clone();
        g.set_state(GpuState::Offered);
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

    /// Reply to `jAcceleratorPluginBreakpointHit:`; `Err` is an error text.
    pub fn breakpoint_hit(&mut self, json: &[u8]) -> Result<Vec<u8>, String> {
        let hit: BreakpointHit =
            serde_json::from_slice(json).map_err(|e| format!("invalid accelerator JSON: {e}"))?;
        if hit.plugin_name != PLUGIN_NAME {
            return Err(format!(
                "unknown accelerator plugin name '{}'",
                hit.plugin_name
            ));
        }
        let id = hit.breakpoint.identifier;
        if id != HOOK_BREAKPOINT_ID && !self.address_breakpoints.values().any(|v| *v == id) {
            return Err(format!("unknown accelerator breakpoint {id}"));
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

    /// A new connection wants to be the GPU session.
    pub fn claim(&mut self, session: u64) -> Result<i64, ClaimError> {
        let id = self.ledger.claim(session)?;
        self.gpu_session = Some(session);
        if let Some(g) = &self.gpu {
            g.borrow_mut().set_state(GpuState::Connected);
        }
        tracing::info!(target: "mux", session, offer = id, "GPU offer claimed");
        Ok(id)
    }

    /// A session closed.
    pub fn session_closed(&mut self, session: u64) {
        if self.gpu_session == Some(session) {
            self.gpu_session = None;
            self.ledger.close_session(session);
            if let Some(g) = &self.gpu {
                let mut g = g.borrow_mut();
                if *g.state() == GpuState::Connected {
                    g.set_state(GpuState::RuntimeLoaded);
                }
            }
            tracing::info!(target: "mux", session, "GPU session closed; a new claim needs a new offer");
        }
    }

    /// The runtime went away: withdraw an unclaimed offer.
    pub fn runtime_unloaded(&mut self) {
        if let Some(g) = &self.gpu {
            let lifetime = g.borrow().lifetime();
            self.ledger.close_lifetime(lifetime);
        }
    }

    /// `monitor gpu` text.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let Some(gpu) = &self.gpu else {
            return "GPU: no GPU library loaded (start gdbmux with --dbgapi PATH or GDBMUX_DBGAPI)\n".into();
        };
        let mut g = gpu.borrow_mut();
        let _ = writeln!(s, "GPU state: {}", g.state());
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
        let _ = writeln!(
            s,
            "runtime lifetimes: {}; events handled: {}",
            g.lifetime(),
            g.events_total()
        );
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
        for co in g.code_objects() {
            let _ = writeln!(
                s,
                "code object {}: {} (load address {:#x})",
                co.id.0, co.uri, co.load_address
            );
        }
        for o in self.ledger.offers() {
            let _ = writeln!(s, "offer {}: {} {} [{:?}]", o.id, o.url, o.triple, o.state);
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
