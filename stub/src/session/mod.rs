//! One session per client connection.
//!
//! A session owns: the wire codec state (acks, no-ack mode), what the client
//! negotiated, the selected threads (`Hg`/`Hc`), the stop journal, and the
//! CPU processes it debugs. Protocol-only packets (qSupported, no-ack,
//! thread-list paging, qXfer windows, `?` replay) are answered here; real
//! work goes to the [`Target`]. `handlers/` holds the dispatch and one
//! handler module per packet family; `role.rs` the two roles (CPU, GPU)
//! and what only one of them has. [`Session`] is generic over its role:
//! `Session<CpuRole>` and `Session<GpuRole>` are distinct types over this
//! one engine, held by the server as [`AnySession`].
//!
//! ## State
//! ```text
//!            resume (vCont/c/s)            target stop event
//!   Stopped ───────────────────► Running ─────────────────────► Stopped
//!      ▲                            │ \x03 → Target::interrupt
//!      └── vRun / vAttach ──────────┘
//! ```
//! Exactly one stop reply is sent per resume. The reply bytes go into the
//! **stop journal**; `?`, `qThreadStopInfo` and the vRun/vAttach reply are
//! byte-identical replays of the journal and have no side effects.

mod breakpoints;
mod gpu;
mod handlers;
#[cfg(test)]
mod held_input_tests;
mod journal;
pub mod lldb_regs;
mod nonstop;
mod role;
mod thread_list;

use std::collections::BTreeMap;

pub use handlers::launch::DisabledPackets;
pub use handlers::launch::LaunchDefaults;
pub use handlers::set_log_control;
pub use handlers::target_xml;
pub use handlers::LogControl;
pub use handlers::{log_timestamps, parse_debug_format, set_log_timestamps};
pub use journal::Journal;
pub use role::CpuRole;
pub use role::GpuRole;
pub use role::NotServed;
pub use role::SessionRole;

use crate::packet;
use crate::packet::reply;
use crate::packet::stop_reply::StopReplyOptions;
use crate::stop::StopEvent;
use crate::target::Pid;
use crate::target::Target;
use crate::target::TargetError;
use crate::target::Tid;
use crate::wire::Encoder;
use crate::wire::Framer;
use crate::wire::WireEvent;

/// Largest packet we accept and advertise (`PacketSize`, hex on the wire).
/// Large on purpose: bulk memory reads are one round trip per MiB.
pub const MAX_PACKET: usize = 0x10_0000;

/// Default bound on the bytes a session may have queued for its client.
/// A client that stops reading while it keeps asking (or while the server
/// produces console output) is disconnected once its queue passes this;
/// memory never grows without bound.
pub const MAX_PENDING_OUTPUT: usize = 64 << 20;

/// Client dialect, detected from its `qSupported` feature list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// gdb (or an unknown client): GDB signal numbers, gdb stop keys.
    #[default]
    Gdb,
    /// lldb: native signal numbers, `reason:` keys, thread lists.
    Lldb,
}

/// What the client negotiated.
#[derive(Debug, Clone, Default)]
pub struct Features {
    /// Dialect.
    pub dialect: Dialect,
    /// `multiprocess+`
    pub multiprocess: bool,
    /// `swbreak+`
    pub swbreak: bool,
    /// `hwbreak+`
    pub hwbreak: bool,
    /// `fork-events+`
    pub fork_events: bool,
    /// `vfork-events+`
    pub vfork_events: bool,
    /// `exec-events+`
    pub exec_events: bool,
    /// lldb `QThreadSuffixSupported`
    pub thread_suffix: bool,
    /// lldb `QListThreadsInStopReply`
    pub list_threads: bool,
    /// `jstopinfo` in stop replies (lldb, a role that lists stop infos:
    /// [`SessionRole::lists_stop_infos`]).
    pub stop_infos: crate::packet::stop_reply::StopInfos,
    /// Stop replies list threads without their pcs (lldb, GPU session:
    /// `StopReplyOptions::omit_thread_pcs`).
    pub omit_thread_pcs: bool,
    /// lldb `QEnableErrorStrings`
    pub error_strings: bool,
    /// `!` extended mode
    pub extended: bool,
    /// `--disable-packet=` (from the server's settings).
    pub disabled: handlers::launch::DisabledPackets,
}

impl Features {
    /// Whether an exec is reported as a stop: gdb asks with
    /// `exec-events+`; lldb-server always reports it (`reason:exec`).
    pub fn report_exec(&self) -> bool {
        self.exec_events || self.dialect == Dialect::Lldb
    }

    /// Options for building stop replies.
    pub fn stop_options(&self) -> StopReplyOptions {
        StopReplyOptions {
            multiprocess: self.multiprocess,
            native_signals: self.dialect == Dialect::Lldb,
            swbreak: self.swbreak,
            hwbreak: self.hwbreak,
            fork_events: self.fork_events,
            vfork_events: self.vfork_events,
            exec_events: self.exec_events,
            list_threads: self.list_threads,
            interrupt_as_sigint: self.dialect == Dialect::Gdb,
            no_t: self.disabled.t,
            no_thread: self.disabled.tthread,
            stop_infos: self.stop_infos,
            omit_thread_pcs: self.omit_thread_pcs,
        }
    }
}

/// Registers sent with every stop (`T` replies, jThreadsInfo): the
/// frame, stack and program counters, plus a GPU wave's EXEC mask (which
/// lanes are active is part of where a wave is).
pub fn expedited_registers(regs: &[crate::target::RegisterInfo]) -> Vec<u32> {
    let mut v: Vec<u32> = ["fp", "sp", "pc"]
        .iter()
        .filter_map(|g| regs.iter().find(|r| r.generic == Some(g)).map(|r| r.regnum))
        .collect();
    if let Some(exec) = regs.iter().find(|r| r.name == "exec") {
        v.push(exec.regnum);
    }
    v
}

/// Which side of the multiplexer a session serves. The state only one
/// role has, and the packets only the CPU role serves, are in `role.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// The CPU process (first connection).
    #[default]
    Cpu,
    /// The GPU (a connection that claimed an offer).
    Gpu,
}

/// A session of either role, as the server holds it. The role-specific
/// calls are on the typed sessions (`Session::<GpuRole>::on_peer_exit`;
/// only a CPU session is kept for the next `--multi` client); the rest go
/// to the one engine whichever the role.
pub enum AnySession {
    /// The CPU process's session.
    Cpu(Box<Session<CpuRole>>),
    /// The GPU's session.
    Gpu(Box<Session<GpuRole>>),
}

/// `$body` with `$s` bound to the session, whichever its role.
macro_rules! either {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnySession::Cpu($s) => $body,
            AnySession::Gpu($s) => $body,
        }
    };
}

impl AnySession {
    /// Session id (for logs).
    pub fn id(&self) -> u64 {
        either!(self, s => s.id())
    }

    /// Which role.
    pub fn role(&self) -> Role {
        either!(self, s => s.role())
    }

    /// See [`Session::on_input`].
    pub fn on_input(&mut self, data: &[u8]) -> SessionControl {
        either!(self, s => s.on_input(data))
    }

    /// See [`Session::pending_output`].
    pub fn pending_output(&mut self) -> &mut Vec<u8> {
        either!(self, s => s.pending_output())
    }

    /// See [`Session::on_target_wakeup`] (a streamed reply is completed
    /// first: nothing may come between its pieces).
    pub fn on_target_wakeup(&mut self, maybe_death: bool) {
        either!(self, s => {
            s.finish_memory_stream();
            s.on_target_wakeup(maybe_death)
        })
    }

    /// See [`Session::on_gpu_notifier`] (after a streamed reply).
    pub fn on_gpu_notifier(&mut self, news: &crate::gpu::GpuNews) {
        either!(self, s => {
            s.finish_memory_stream();
            s.on_gpu_notifier(news)
        })
    }

    /// See [`Session::stream_more`].
    pub fn stream_more(&mut self) -> Option<SessionControl> {
        either!(self, s => s.stream_more())
    }

    /// See [`Session::wants_close`].
    pub fn wants_close(&self) -> bool {
        either!(self, s => s.wants_close())
    }

    /// See [`Session::is_running`].
    pub fn is_running(&self) -> bool {
        either!(self, s => s.is_running())
    }

    /// See [`Session::take_follow_up_due`].
    pub fn take_follow_up_due(&mut self) -> bool {
        either!(self, s => s.take_follow_up_due())
    }

    /// See [`Session::on_vfile_done`].
    pub fn on_vfile_done(&mut self, seq: u64, reply: &[u8]) -> SessionControl {
        either!(self, s => {
            s.finish_memory_stream();
            s.on_vfile_done(seq, reply)
        })
    }

    /// See [`Session::speaks_lldb`].
    pub fn speaks_lldb(&self) -> bool {
        either!(self, s => s.speaks_lldb())
    }

    /// See [`Session::send_program_output`].
    pub fn send_program_output(&mut self, bytes: &[u8]) {
        either!(self, s => {
            s.finish_memory_stream();
            s.send_program_output(bytes)
        })
    }

    /// See [`Session::abandon`].
    pub fn abandon(&mut self) {
        either!(self, s => s.abandon())
    }

    /// See [`Session::on_disconnect`].
    pub fn on_disconnect(&mut self) -> Vec<(Pid, crate::mux::Release)> {
        either!(self, s => s.on_disconnect())
    }

    /// See [`Session::set_hostio_offload`].
    pub fn set_hostio_offload(&mut self, pool: crate::hostio::offload::Handle) {
        either!(self, s => s.set_hostio_offload(pool))
    }

    /// See [`Session::set_loop_stats`].
    pub fn set_loop_stats(&mut self, stats: crate::server::turns::SharedLoopStats) {
        either!(self, s => s.set_loop_stats(stats))
    }
}

/// What the server should do after feeding input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionControl {
    /// Keep going.
    Continue,
    /// Close this connection (after flushing output).
    Close,
    /// The client asked the whole server to exit (`monitor exit`).
    ExitServer,
}

/// What the session's processes are doing, as its client sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    /// Stopped: packets are handled as they come.
    Stopped,
    /// A resume waits for its stop; the stop reply goes to the client.
    Running,
    /// `--multi`: the client that resumed vanished. The stop that ends the
    /// resume is journaled, not sent; a new client's bytes are held
    /// ([`Session::input_hold`]) until that stop arrives.
    Orphaned,
    /// The orphaned resume's stop arrived while a new client's bytes were
    /// held: they are handled at the end of this wake-up.
    StoppedWithHeldInput,
}

/// One client connection and the processes it debugs, in role `R`: a
/// [`CpuRole`] session (the default) or a [`GpuRole`] one, distinct types
/// over one protocol engine (`handlers/`); [`AnySession`] holds either.
pub struct Session<R: SessionRole = CpuRole> {
    id: u64,
    framer: Framer,
    encoder: Encoder,
    out: Vec<u8>,
    /// The last packet sent in ack mode, for a `-` (bounded resends).
    resend: crate::wire::Resender,
    /// Negotiated features.
    pub features: Features,
    procs: BTreeMap<Pid, Box<dyn Target>>,
    current: Option<Pid>,
    g_thread: Option<(Pid, Tid)>,
    c_thread: Option<(Pid, Tid)>,
    thread_cursor: bool,
    /// An lldb client interrupted this resume (all-stop; the echo is on
    /// unless `--no-lldb-interrupt-echo`): its stop reply goes out twice.
    /// lldb, after a `T`/`S` stop reply read while an interrupt it sent
    /// was pending (`GDBRemoteClientBase::ShouldStop`, whenever an async
    /// packet or a halt interrupted a run), reads up to 100 ms for a
    /// second stop reply, which debugserver sends, before it goes on;
    /// lldb-server sends one, so every interrupt from lldb cost it those
    /// 100 ms. Cleared at every resume.
    interrupt_echo_due: bool,
    /// The last reply was an lldb client's `T`/`S` stop reply to a resume,
    /// sent once, and no packet has come since (same conditions as
    /// `interrupt_echo_due`). An interrupt now raced with that stop: lldb
    /// sent it while it still waited for the stop and will read a second
    /// stop reply after the first, so the stop reply goes out again, as
    /// debugserver does for an interrupt that finds the process stopped
    /// (`RNBRemote::HandlePacket_stop_process`).
    stop_echo_owed: bool,
    journal: Journal,
    run: RunState,
    /// All-stop: exits of other processes collected in the wake-up that
    /// sent a stop, reported one per resume (`handlers/resume.rs`).
    deferred_ends: Vec<StopEvent>,
    /// All-stop: an exit collected during a resume while other processes
    /// of the session still ran; it goes out once they are stopped
    /// (`hold_exit_until_others_stop`).
    held_exit: Option<StopEvent>,
    /// Processes interrupted so that a held exit can go out; their
    /// interrupt stop is not reported.
    stopping_for_exit: std::collections::BTreeSet<Pid>,
    control: SessionControl,
    launch: LaunchDefaults,
    hostio: crate::hostio::offload::SharedHostIo,
    /// vFile off the loop (`handlers/hostio.rs`); `None`: run inline.
    hostio_offload: Option<crate::hostio::offload::Handle>,
    /// The vFile request whose reply is awaited (input is held meanwhile).
    vfile_pending: Option<u64>,
    /// Numbers vFile requests, so that a late reply for a reset
    /// connection is dropped.
    vfile_seq: u64,
    xfer_cache: crate::bounds::XferCache,
    pass_signals: Vec<i32>,
    unknown_logged: crate::bounds::UnknownLog,
    /// The role, with what only that role has (`role.rs`).
    role: R,
    mux: Option<crate::mux::MuxHandle>,
    symbolizer: crate::gpu::symbols::Symbolizer,
    /// What the client inserted with `Z`, taken out when it vanishes.
    client_bps: breakpoints::ClientBreakpoints,
    /// Bound on `out` (see [`MAX_PENDING_OUTPUT`]).
    output_limit: usize,
    /// Non-stop mode (`QNonStop:1`, `nonstop.rs`).
    nonstop: nonstop::NonStop,
    /// Target memory for `m`/`x` replies, reused (see `handlers::memory`); at most
    /// [`MAX_PACKET`] bytes.
    mem_scratch: Vec<u8>,
    /// A large `x` reply being sent in pieces (`handlers/memory.rs`); the
    /// client's input is held meanwhile.
    mem_stream: Option<handlers::MemStream>,
    /// Small replies built on the steady-state path (`qC`), reused so they
    /// cost no allocation ([`Session::send_built`]), and `jThreadsInfo`;
    /// it keeps the capacity of the largest such reply (a `jThreadsInfo`
    /// of 10,000 waves: about 1 MiB).
    reply_scratch: Vec<u8>,
    /// The last `qfThreadInfo` reply, kept while the targets' thread lists
    /// are unchanged (`thread_list.rs`).
    thread_list: thread_list::ThreadListCache,
    /// lldb's register view of a process (lldb sessions, x86-64 only).
    lldb_regs: Option<(Pid, std::rc::Rc<lldb_regs::LldbRegView>)>,
    /// The server loop's counts, for `monitor loop` (`server/turns.rs`).
    loop_stats: Option<crate::server::turns::SharedLoopStats>,
}

impl Session<CpuRole> {
    /// New CPU session; a process already launched/attached (gdbserver
    /// style: `gdbmux :PORT -- prog`) is given to it with
    /// [`Session::adopt`].
    pub fn new(id: u64, launch: LaunchDefaults) -> Self {
        Session::with_role(id, launch, CpuRole::default())
    }

    /// The server's output terminal for launched programs (a CPU
    /// session's; a GPU session launches nothing).
    pub fn with_program_output(mut self, o: Option<crate::native::SharedProgramOutput>) -> Self {
        self.role.program_output = o;
        self
    }
}

impl Session<GpuRole> {
    /// New GPU session: the connection that claimed offer `offer` for the
    /// CPU process `cpu_pid` (its target, a `gpu::GpuTarget`, is given to
    /// it with [`Session::adopt`]).
    pub fn new_gpu(id: u64, offer: i64, cpu_pid: Pid) -> Self {
        Session::with_role(
            id,
            LaunchDefaults::default(),
            GpuRole {
                offer: Some(offer),
                cpu_pid: Some(cpu_pid),
                end_held: false,
            },
        )
    }
}

impl<R: SessionRole> Session<R> {
    fn with_role(id: u64, launch: LaunchDefaults, role: R) -> Self {
        Session {
            id,
            framer: Framer::new(MAX_PACKET),
            encoder: Encoder::new(),
            out: Vec::with_capacity(4096),
            resend: Default::default(),
            features: Features {
                disabled: launch.disabled,
                ..Features::default()
            },
            procs: BTreeMap::new(),
            current: None,
            g_thread: None,
            c_thread: None,
            thread_cursor: false,
            interrupt_echo_due: false,
            stop_echo_owed: false,
            journal: Journal::default(),
            run: RunState::Stopped,
            deferred_ends: Vec::new(),
            held_exit: None,
            stopping_for_exit: Default::default(),
            control: SessionControl::Continue,
            launch,
            hostio: Default::default(),
            hostio_offload: None,
            vfile_pending: None,
            vfile_seq: 0,
            xfer_cache: Default::default(),
            pass_signals: Vec::new(),
            unknown_logged: Default::default(),
            role,
            mux: None,
            symbolizer: Default::default(),
            client_bps: Default::default(),
            output_limit: MAX_PENDING_OUTPUT,
            nonstop: Default::default(),
            mem_scratch: Vec::new(),
            mem_stream: None,
            reply_scratch: Vec::new(),
            thread_list: Default::default(),
            lldb_regs: None,
            loop_stats: None,
        }
    }

    /// The server loop's counts, read by `monitor loop`.
    pub fn set_loop_stats(&mut self, stats: crate::server::turns::SharedLoopStats) {
        self.loop_stats = Some(stats);
    }

    /// Bound the client's output queue (default [`MAX_PENDING_OUTPUT`]).
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes.max(MAX_PACKET * 2 + 64);
        self
    }

    /// The bound on the client's output queue.
    pub fn output_limit(&self) -> usize {
        self.output_limit
    }

    /// Attach the session to the multiplexer.
    pub fn with_mux(mut self, mux: crate::mux::MuxHandle) -> Self {
        self.mux = Some(mux);
        self
    }

    /// This session's role.
    pub fn role(&self) -> Role {
        R::ROLE
    }

    /// Whether `--multi` keeps this session for the next client when its
    /// client vanishes: a CPU session that still debugs a process.
    pub fn outlives_client(&self) -> bool {
        self.role.outlives_client() && self.has_process()
    }

    /// Whether the session asked to be closed (e.g. after reporting the
    /// end of the GPU process).
    pub fn wants_close(&self) -> bool {
        self.control != SessionControl::Continue
    }

    /// Session id (for logs).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Add a process that is stopped at `stop` (launch/attach before the
    /// client connected). Its stop becomes the journal.
    pub fn adopt(&mut self, target: Box<dyn Target>, stop: StopEvent) {
        let pid = target.pid();
        self.procs.insert(pid, target);
        self.current = Some(pid);
        self.record_stop(stop);
        R::after_adopt(self, pid);
    }

    /// Whether a process is running (a resume is waiting for its stop).
    pub fn is_running(&self) -> bool {
        matches!(self.run, RunState::Running | RunState::Orphaned)
    }

    /// Whether the session debugs any process.
    pub fn has_process(&self) -> bool {
        !self.procs.is_empty()
    }

    /// Bytes waiting to be written to the client.
    pub fn pending_output(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Feed bytes read from the connection; handles every complete packet.
    pub fn on_input(&mut self, data: &[u8]) -> SessionControl {
        if let Some(why) = self.input_hold() {
            self.hold_input(data, why);
            return self.control;
        }
        self.framer.push(data);
        while let Some(ev) = self.framer.next_event() {
            self.framer.append_replies(&mut self.out);
            match ev {
                WireEvent::Packet(p) => {
                    tracing::trace!(target: "packets", session = self.id, "<-- {}", String::from_utf8_lossy(&p));
                    self.handle_packet(&p);
                    // No allocation per packet: the framer reuses the body.
                    self.framer.recycle(p);
                }
                WireEvent::Notification(_) => {}
                WireEvent::Ack => self.resend.acked(),
                // A `-` in no-ack mode, or after the `+` for the last
                // packet, is ignored; resends are bounded (wire::Resender).
                WireEvent::Nak => {
                    if !self.framer.no_ack() {
                        if let Some(again) = self.resend.nak() {
                            self.out.extend_from_slice(again);
                        }
                    }
                }
                WireEvent::Interrupt => self.handle_interrupt(),
                WireEvent::BadChecksum => {
                    tracing::debug!(target: "packets", session = self.id, "bad checksum");
                }
                WireEvent::Oversize => {
                    self.send_error(crate::error::ErrorCode::TooBig, "packet too large");
                }
                WireEvent::BadEscape => {
                    self.send_error(
                        crate::error::ErrorCode::Invalid,
                        "packet ends with a lone '}' escape",
                    );
                }
            }
            if self.control != SessionControl::Continue || self.input_hold().is_some() {
                break;
            }
            if self.out.len() > self.output_limit {
                tracing::error!(
                    target: "session",
                    session = self.id,
                    pending = self.out.len(),
                    limit = self.output_limit,
                    "the client does not read its replies: output queue limit exceeded, closing the connection"
                );
                self.control = SessionControl::Close;
                break;
            }
        }
        self.framer.append_replies(&mut self.out);
        self.control
    }

    /// Why the client's input must wait unhandled, if it must: a new
    /// `--multi` client arrived before the stop that ends the vanished
    /// client's resume, or a vFile reply is being prepared off the loop
    /// (`handlers/hostio.rs`). The one mechanism for both: the bytes wait in
    /// the framer ([`Session::hold_input`]) and are handled when the reason
    /// is gone ([`Session::release_held_input`]).
    fn input_hold(&self) -> Option<&'static str> {
        if self.run == RunState::Orphaned {
            Some("the previous client's resume was ending")
        } else if self.vfile_pending.is_some() {
            Some("a vFile reply was pending")
        } else if self.memory_streaming() {
            Some("a memory reply was streaming")
        } else {
            None
        }
    }

    /// Keep `data` in the framer, unhandled, up to
    /// [`crate::bounds::HELD_INPUT_LIMIT`] bytes; past it the connection is
    /// closed with a logged error.
    fn hold_input(&mut self, data: &[u8], why: &'static str) {
        self.framer.push(data);
        let held = self.framer.pending_input();
        if held > crate::bounds::HELD_INPUT_LIMIT {
            tracing::error!(
                target: "session",
                session = self.id,
                held,
                limit = crate::bounds::HELD_INPUT_LIMIT,
                "the client sent too much while {why}: held input limit exceeded, closing the connection"
            );
            self.control = SessionControl::Close;
        }
    }

    /// The reason input was held is gone: handle what waits in the framer.
    fn release_held_input(&mut self) -> SessionControl {
        self.on_input(&[])
    }

    /// Frame and queue one reply payload.
    pub fn send(&mut self, payload: &[u8]) {
        tracing::trace!(target: "packets", session = self.id, "--> {}", String::from_utf8_lossy(&payload[..payload.len().min(512)]));
        let start = self.out.len();
        self.encoder.packet(payload, &mut self.out);
        if !self.framer.no_ack() {
            self.resend.sent(self.out.get(start..).unwrap_or_default());
        }
    }

    /// Queue a packet this session's encoder framed earlier (`$…#cc`, as
    /// [`Session::send`] would queue it): a kept reply goes out with one
    /// copy, no escaping or checksum pass (`thread_list.rs`).
    pub(in crate::session) fn send_framed(&mut self, framed: &[u8]) {
        tracing::trace!(target: "packets", session = self.id, "--> {}", String::from_utf8_lossy(framed.get(1..framed.len().min(513)).unwrap_or_default()));
        let start = self.out.len();
        self.out.extend_from_slice(framed);
        if !self.framer.no_ack() {
            self.resend.sent(self.out.get(start..).unwrap_or_default());
        }
    }

    /// Frame and queue the reply `build` writes into a reused buffer (no
    /// allocation per reply once the buffer has grown).
    pub(in crate::session) fn send_built(&mut self, build: impl FnOnce(&mut Vec<u8>)) {
        let mut buf = std::mem::take(&mut self.reply_scratch);
        buf.clear();
        build(&mut buf);
        self.send(&buf);
        self.reply_scratch = buf;
    }

    fn send_error(&mut self, code: crate::error::ErrorCode, msg: &str) {
        let p = reply::error(code, msg, self.features.error_strings);
        self.send(&p);
    }

    fn send_target_error(&mut self, e: &TargetError) {
        tracing::debug!(target: "packets", session = self.id, "error reply: {e}");
        let p = reply::error(e.code(), &e.to_string(), self.features.error_strings);
        self.send(&p);
    }

    fn handle_packet(&mut self, p: &[u8]) {
        self.stop_echo_owed = false;
        match packet::parse(p) {
            Ok(cmd) => self.dispatch(cmd),
            Err(e) => {
                tracing::debug!(target: "packets", session = self.id, "{e}: {}", String::from_utf8_lossy(p));
                self.send_error(crate::error::ErrorCode::Invalid, &e.to_string());
            }
        }
    }

    /// Called after a resume and on GPU events: collects target events and
    /// sends the stop reply if one is due.
    pub fn on_target_event(&mut self) {
        self.on_target_wakeup(true);
    }

    /// Called when the SIGCHLD fd or a target's own fd was readable.
    /// `maybe_death` is false only for a SIGCHLD that
    /// [`crate::native::SigchldFd::drain`] found to be ptrace stops: then
    /// no stopped process can have been killed from outside.
    pub fn on_target_wakeup(&mut self, maybe_death: bool) {
        if self.nonstop.on {
            self.nonstop_wakeup(maybe_death);
            return;
        }
        let pids: Vec<Pid> = self.procs.keys().copied().collect();
        let mut got_event = false;
        let mut sent_stop = false;
        for pid in pids {
            let ev = match self.procs.get_mut(&pid) {
                Some(t) => t.process_events(),
                None => continue,
            };
            let ev = match ev {
                Ok(Some(e)) => match self.hold_exit_until_others_stop(e, &mut sent_stop) {
                    Some(e) => Ok(Some(e)),
                    None => {
                        got_event = true;
                        continue;
                    }
                },
                other => other,
            };
            match ev {
                Ok(Some(end @ (StopEvent::Exited { .. } | StopEvent::Terminated { .. })))
                    if sent_stop || !self.is_running() =>
                {
                    // Another process's stop went out (in this wake-up or
                    // before): this exit is the next resume's reply, as
                    // gdbserver keeps an event pending while it reports one
                    // (a vfork child that exits as its parent's vforkdone
                    // is reported: gdb testsuite vfork-follow-parent,
                    // schedule-multiple).
                    got_event = true;
                    self.deferred_ends.push(end);
                }
                Ok(Some(stop)) => {
                    got_event = true;
                    let was_running = self.is_running();
                    self.on_stop(stop);
                    sent_stop |= was_running && !self.is_running();
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: "ptrace", session = self.id, pid, "event processing failed: {e}")
                }
            }
        }
        // Only a wake-up that brought no event, from a SIGCHLD that was not
        // a mere ptrace stop, can be a stopped process dying.
        if maybe_death && !got_event && !self.is_running() {
            for end in self.reap_killed() {
                self.on_stop(end);
            }
        }
        if self.run == RunState::StoppedWithHeldInput {
            self.run = RunState::Stopped;
            self.release_held_input();
        }
    }

    /// All-stop, gdbserver's stop-all for an exit: a process that ends
    /// during a resume while other processes of the session run is not
    /// reported until they are stopped (interrupted here; their interrupt
    /// stops are not reported), so the client can read them at once
    /// (gdb testsuite vfork-follow-parent, schedule-multiple: the vfork
    /// child's exit came after the parent's `vforkdone` and the next
    /// resume, and gdb's register read of the running parent failed with
    /// "Could not read registers", now and then). A real event of another
    /// process meanwhile is reported instead and the exit becomes the next
    /// resume's reply. Returns the event when this does not take it.
    fn hold_exit_until_others_stop(
        &mut self,
        ev: StopEvent,
        sent_stop: &mut bool,
    ) -> Option<StopEvent> {
        let pid = ev.pid();
        let is_end = matches!(ev, StopEvent::Exited { .. } | StopEvent::Terminated { .. });
        let interrupt = matches!(
            ev,
            StopEvent::Stopped {
                kind: crate::stop::StopKind::Interrupt,
                ..
            }
        );
        if self.stopping_for_exit.remove(&pid) && interrupt {
            // Ours: not the client's.
            self.release_held_exit(sent_stop);
            return None;
        }
        if self.held_exit.is_some() {
            if is_end {
                self.deferred_ends.push(ev);
                self.release_held_exit(sent_stop);
                return None;
            }
            // A real event: it goes out; the exit is the next reply.
            if let Some(held) = self.held_exit.take() {
                self.deferred_ends.insert(0, held);
            }
            return Some(ev);
        }
        if !is_end || *sent_stop || !self.is_running() {
            return Some(ev);
        }
        let others: Vec<Pid> = self
            .procs
            .iter()
            .filter(|(p, t)| **p != pid && !t.is_stopped())
            .map(|(p, _)| *p)
            .collect();
        if others.is_empty() {
            return Some(ev);
        }
        for p in others {
            if let Some(t) = self.procs.get_mut(&p) {
                match t.interrupt() {
                    Ok(()) => {
                        self.stopping_for_exit.insert(p);
                    }
                    Err(e) => {
                        tracing::debug!(target: "session", session = self.id, pid = p, "stopping for an exit: {e}")
                    }
                }
            }
        }
        if self.stopping_for_exit.is_empty() {
            return Some(ev);
        }
        tracing::debug!(target: "session", session = self.id, pid, "exit held until the other processes stop");
        self.held_exit = Some(ev);
        None
    }

    /// The held exit goes out once no process interrupted for it runs.
    fn release_held_exit(&mut self, sent_stop: &mut bool) {
        if !self.stopping_for_exit.is_empty() || !self.is_running() {
            return;
        }
        if let Some(end) = self.held_exit.take() {
            self.on_stop(end);
            *sent_stop = true;
        }
    }

    /// A stopped tracee can only die of SIGKILL (sent from outside). Its
    /// exit wakes the SIGCHLD fd but no resume waits for it, so look for
    /// it here (all-stop and non-stop): reap it; the caller journals the
    /// returned `X09` for the next `?` or wait. Which processes can die so
    /// is the target's fact ([`Target::killed_while_stopped`]: a native
    /// process reads `/proc`, a GPU process never does).
    fn reap_killed(&mut self) -> Vec<StopEvent> {
        let dead: Vec<Pid> = self
            .procs
            .iter()
            .filter(|(_, t)| t.killed_while_stopped())
            .map(|(pid, _)| *pid)
            .collect();
        let mut ends = Vec::with_capacity(dead.len());
        for pid in dead {
            if let Some(t) = self.procs.get_mut(&pid) {
                if let Err(e) = t.kill() {
                    tracing::debug!(target: "ptrace", session = self.id, pid, "reaping a killed tracee: {e}");
                }
            }
            tracing::info!(target: "session", session = self.id, pid, "stopped process was killed from outside");
            ends.push(StopEvent::Terminated {
                pid,
                signal: libc::SIGKILL,
            });
        }
        ends
    }

    /// `--multi`: the client vanished but the session (its processes and
    /// stop journal) is kept for the next client. A resume in flight is
    /// interrupted; its stop is journaled instead of sent. The breakpoints
    /// and watchpoints the client inserted are taken out: now when the
    /// processes are stopped, else once that stop is journaled (memory is
    /// patched while they are stopped).
    pub fn on_client_vanished(&mut self) {
        if self.nonstop_client_gone() {
            self.run = RunState::Running;
        }
        self.reset_connection();
        if self.is_running() {
            self.run = RunState::Orphaned;
            // Held at an internal stop: stopped already, journaled now.
            if R::stop_now_if_held(self) {
                return;
            }
            for (pid, t) in self.procs.iter_mut() {
                if let Err(e) = t.interrupt() {
                    tracing::warn!(target: "ptrace", session = self.id, pid, "stopping after the client vanished: {e}");
                }
            }
            tracing::info!(target: "session", session = self.id, breakpoints = self.client_bps.len(), "client vanished during a resume: stopping the process for the next client");
        } else {
            tracing::info!(target: "session", session = self.id, "client vanished while stopped: process and stop journal kept for the next client");
            self.remove_client_breakpoints();
        }
    }

    /// `--multi`: a new client takes over a kept session. Everything
    /// negotiated on the old connection is forgotten; processes, threads and
    /// the stop journal stay, so `?` replays the same stop.
    pub fn on_reconnect(&mut self) {
        self.reset_connection();
        tracing::info!(target: "session", session = self.id, processes = self.procs.len(), running = self.is_running(), "a new client took over the session");
    }

    fn reset_connection(&mut self) {
        self.framer = Framer::new(MAX_PACKET);
        self.encoder = Encoder::new();
        self.out = Vec::with_capacity(4096);
        self.resend.forget();
        self.features = Features {
            disabled: self.launch.disabled,
            ..Features::default()
        };
        self.thread_cursor = false;
        self.control = SessionControl::Continue;
        self.hostio = Default::default();
        self.vfile_pending = None;
        self.mem_stream = None;
        self.xfer_cache.clear();
        self.unknown_logged.clear();
    }

    /// The fatal tier: the server is failing. Every process is detached and
    /// left stopped ([`Target::abandon`]), never killed.
    pub fn abandon(&mut self) {
        for (pid, mut t) in std::mem::take(&mut self.procs) {
            if let Err(e) = t.abandon() {
                tracing::error!(target: "ptrace", session = self.id, pid, "abandon: {e}");
            }
        }
    }

    /// The client went away: kill what we launched, detach what we attached
    /// (gdbserver's policy); never leave a process stopped.
    pub fn on_disconnect(&mut self) -> Vec<(Pid, crate::mux::Release)> {
        self.client_bps.clear();
        let mut released = Vec::new();
        for (pid, mut t) in std::mem::take(&mut self.procs) {
            let how = if t.attached() {
                crate::mux::Release::Detached
            } else {
                crate::mux::Release::Killed
            };
            let r = match how {
                crate::mux::Release::Detached => {
                    self.gpu_before_detach(pid);
                    t.detach()
                }
                crate::mux::Release::Killed => t.kill(),
            };
            if let Err(e) = r {
                tracing::warn!(target: "ptrace", session = self.id, pid, "cleanup after disconnect: {e}");
            } else {
                tracing::info!(target: "ptrace", session = self.id, pid, attached = t.attached(), "released process after disconnect");
            }
            if self.role.reports_process_ends() {
                released.push((pid, how));
            }
        }
        released
    }
}
