//! Raw-protocol conformance scenarios.
//!
//! Each [`Scenario`] drives one fresh stub through [`RspClient`] and returns
//! a [`Verdict`] or a [`Failure`] naming the first packet whose reply was not
//! acceptable. They are run by `tests/raw_protocol.rs` (one `#[test]` each)
//! and by the `rsp-conform` binary (a table of all of them).
//!
//! Expectations follow what gdb 13 and lldb 23.1 need
//! (research/client-traces.md). Where the two reference servers legitimately
//! differ, the check is keyed by [`Dialect`].

use std::sync::OnceLock;
use std::time::Duration;

use crate::client::ClientError;
use crate::client::RspClient;
use crate::drivers::process;
use crate::drivers::Dialect;
use crate::drivers::Fixture;
use crate::drivers::StubSpec;
use crate::framing;
use crate::framing::Frame;
use crate::reply;
use crate::reply::classify;
use crate::reply::ReplyKind;
use crate::reply::StopReply;
use crate::reply::StopSignal;
use crate::transcript::Transcript;

/// Whether a scenario is mandatory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Every stub serving gdb 13 and lldb 23.1 must pass.
    Required,
    /// Several answers are allowed; "unsupported" is acceptable.
    ImplementationDefined,
}

/// A passed scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Passed, with a note (e.g. which allowed answer the stub chose).
    Pass(String),
    /// The stub does not implement the feature (allowed for
    /// [`Requirement::ImplementationDefined`]).
    Unsupported(String),
}

/// A failed scenario: what went wrong and the first differing packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    /// Summary.
    pub message: String,
    /// The request whose reply differed.
    pub request: Option<String>,
    /// What was acceptable.
    pub expected: Option<String>,
    /// What came back.
    pub got: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(r) = &self.request {
            write!(f, "\n    sent:     {r}")?;
        }
        if let Some(e) = &self.expected {
            write!(f, "\n    expected: {e}")?;
        }
        if let Some(g) = &self.got {
            write!(f, "\n    got:      {g}")?;
        }
        Ok(())
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        fail(format!("client error: {e}"))
    }
}

fn fail(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        ..Failure::default()
    }
}

fn differ(request: &str, expected: impl Into<String>, got: &[u8]) -> Failure {
    Failure {
        message: format!("unexpected reply to {request}"),
        request: Some(request.to_string()),
        expected: Some(expected.into()),
        got: Some(framing::printable(got)),
    }
}

/// Result type of a scenario body.
pub type ScenarioResult = Result<Verdict, Failure>;

/// What a scenario body gets.
#[derive(Debug)]
pub struct Ctx {
    /// A fresh connection to the stub (nothing sent yet).
    pub client: RspClient,
    /// The stub's dialect.
    pub dialect: Dialect,
    /// The fixture program the stub runs (for symbols), if known.
    pub program: Option<std::path::PathBuf>,
    /// The stub's address (for scenarios that open more connections).
    pub addr: std::net::SocketAddr,
}

/// How the stub is started for a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchMode {
    /// With the fixture (`StubSpec::launch`).
    Launch,
    /// Multi-process, no program (`StubSpec::launch_multi`, extended mode).
    Multi,
}

/// A scenario body: Rust code, or a data transcript (`scenarios/*.txt`).
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// A function.
    Rust(fn(&mut Ctx) -> ScenarioResult),
    /// A parsed transcript.
    Data(&'static Transcript),
}

/// One scenario.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Stable name (`family-what`).
    pub name: &'static str,
    /// Mandatory or not.
    pub requirement: Requirement,
    /// One line of what it checks.
    pub description: &'static str,
    /// Program to launch under the stub.
    pub fixture: Fixture,
    /// Its arguments.
    pub args: &'static [&'static str],
    /// Dialects (`gdbserver`, `lldb-server`, ...) for which a required
    /// scenario is only implementation-defined (a reference server lacks
    /// the packet, and clients fall back).
    pub relaxed_for: &'static [&'static str],
    /// How the stub is started.
    pub mode: LaunchMode,
    /// The body.
    pub run: Body,
}

impl Scenario {
    /// The requirement that applies to a stub of `dialect`.
    pub fn requirement_for(&self, dialect: Dialect) -> Requirement {
        if self
            .relaxed_for
            .contains(&crate::transcript::dialect_name(dialect))
        {
            Requirement::ImplementationDefined
        } else {
            self.requirement
        }
    }

    /// `rust` or the transcript file name.
    pub fn source(&self) -> String {
        match self.run {
            Body::Rust(_) => "rust".into(),
            Body::Data(t) => t
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// Outcome of running a scenario, for reports.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Passed.
    Pass(String),
    /// Unsupported (only acceptable when implementation-defined).
    Unsupported(String),
    /// Failed.
    Fail(Failure),
}

impl Outcome {
    /// Whether this outcome is acceptable for `req`.
    pub fn acceptable(&self, req: Requirement) -> bool {
        match self {
            Self::Pass(_) => true,
            Self::Unsupported(_) => req == Requirement::ImplementationDefined,
            Self::Fail(_) => false,
        }
    }
}

/// Launch a fresh stub from `spec` and run `s` against it.
pub fn run_with_spec(spec: &StubSpec, s: &Scenario) -> Outcome {
    let started = match s.mode {
        LaunchMode::Launch => spec.launch(s.fixture, s.args),
        LaunchMode::Multi => spec.launch_multi(),
    };
    let mut stub = match started {
        Ok(st) => st,
        Err(crate::drivers::StubError::NoTemplate { name, mode }) => {
            return Outcome::Unsupported(format!("{name} has no {mode} mode template"))
        }
        Err(e) => return Outcome::Fail(fail(format!("stub did not start: {e}"))),
    };
    let outcome = run_at_with(stub.addr(), spec.dialect, s, &mut || {
        stub.remember_descendants()
    });
    if let Outcome::Fail(mut f) = outcome {
        f.message = format!("{}\n--- stub output ---\n{}", f.message, stub.output());
        return Outcome::Fail(f);
    }
    outcome
}

/// Run `s` against a stub already listening at `addr`.
pub fn run_at(addr: std::net::SocketAddr, dialect: Dialect, s: &Scenario) -> Outcome {
    run_at_with(addr, dialect, s, &mut || {})
}

/// [`run_at`], calling `before_disconnect` after the body while the
/// connection is still open.
pub fn run_at_with(
    addr: std::net::SocketAddr,
    dialect: Dialect,
    s: &Scenario,
    before_disconnect: &mut dyn FnMut(),
) -> Outcome {
    let client = match RspClient::connect(addr) {
        Ok(c) => c,
        Err(e) => return Outcome::Fail(fail(format!("cannot connect to {addr}: {e}"))),
    };
    let mut ctx = Ctx {
        client,
        dialect,
        program: Some(crate::drivers::fixture(s.fixture)),
        addr,
    };
    let result = match s.run {
        Body::Rust(f) => f(&mut ctx),
        Body::Data(t) => crate::transcript::run(t, &mut ctx),
    };
    before_disconnect();
    drop(ctx);
    match result {
        Ok(Verdict::Pass(n)) => Outcome::Pass(n),
        Ok(Verdict::Unsupported(n)) => Outcome::Unsupported(n),
        Err(f) => Outcome::Fail(f),
    }
}

/// Look a scenario up by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    all().iter().find(|s| s.name == name)
}

/// Every scenario, in report order: the Rust ones ([`RUST`]), then the
/// transcripts of [`crate::transcript::default_dir`] sorted by file name.
///
/// Panics (once, with the file and line) if a transcript does not parse.
pub fn all() -> &'static [Scenario] {
    static ALL: OnceLock<Vec<Scenario>> = OnceLock::new();
    ALL.get_or_init(|| {
        let data = crate::transcript::load_dir(&crate::transcript::default_dir())
            .unwrap_or_else(|e| panic!("scenario transcripts: {e}"));
        let mut v = RUST.to_vec();
        for t in data {
            let t: &'static Transcript = Box::leak(Box::new(t));
            let args: Vec<&'static str> = t.args.iter().map(String::as_str).collect();
            let relaxed: Vec<&'static str> = t.relaxed_for.iter().map(String::as_str).collect();
            v.push(Scenario {
                name: t.name.as_str(),
                requirement: t.requirement,
                description: t.description.as_str(),
                fixture: t.fixture,
                args: Box::leak(args.into_boxed_slice()),
                relaxed_for: Box::leak(relaxed.into_boxed_slice()),
                mode: LaunchMode::Launch,
                run: Body::Data(t),
            });
        }
        v
    })
}

/// The scenarios written in Rust (where data would be awkward).
pub static RUST: &[Scenario] = &[
    Scenario {
        name: "handshake-gdb",
        requirement: Requirement::Required,
        description: "gdb 13 order: qSupported, vMustReplyEmpty, QStartNoAckMode, Hgp0.0, target.xml windows, ?",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(handshake_gdb),
    },
    Scenario {
        name: "handshake-lldb",
        requirement: Requirement::Required,
        description: "lldb 23 order: QStartNoAckMode before qSupported, vCont?, ?",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(handshake_lldb),
    },
    Scenario {
        name: "stop-replay",
        requirement: Requirement::Required,
        description: "`?` answered 8 times with byte-identical stop replies",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(stop_replay),
    },
    Scenario {
        name: "unknown-packet",
        requirement: Requirement::Required,
        description: "unknown packets get the empty reply and the session goes on",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(unknown_packet),
    },
    Scenario {
        name: "framing-bad-checksum",
        requirement: Requirement::Required,
        description: "ack mode: a bad checksum is NAKed with `-`; the retransmission is answered",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(framing_bad_checksum),
    },
    Scenario {
        name: "framing-nak-retransmit",
        requirement: Requirement::ImplementationDefined,
        description: "ack mode: the client's `-` makes the server retransmit its last reply",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(framing_nak_retransmit),
    },
    Scenario {
        name: "framing-split",
        requirement: Requirement::Required,
        description: "a packet split at every byte boundary (two writes) is answered like an unsplit one",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(framing_split),
    },
    Scenario {
        name: "registers-g",
        requirement: Requirement::Required,
        description: "`g` decodes (RLE expanded) and its rip equals the expedited rip of the stop",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(registers_g),
    },
    Scenario {
        name: "memory-unmapped",
        requirement: Requirement::Required,
        description: "`m` at 0 is an error; `m` across the end of a mapping is partial or an error",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(memory_unmapped),
    },
    Scenario {
        name: "breakpoint-twice",
        requirement: Requirement::Required,
        description: "Z0 twice at the same address, then z0 twice (second z0: OK or error)",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(breakpoint_twice),
    },
    Scenario {
        name: "malformed-input",
        requirement: Requirement::Required,
        description: "malformed packets of each family get an empty or E reply; the connection stays usable",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(malformed_input),
    },
    Scenario {
        name: "thread-list",
        requirement: Requirement::Required,
        description: "qfThreadInfo/qsThreadInfo paginate to `l` and include the stopped thread",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(thread_list),
    },
    Scenario {
        name: "vcont-step",
        requirement: Requirement::Required,
        description: "vCont? lists c and s; vCont;s:<tid> stops with SIGTRAP in that thread",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(vcont_step),
    },
    Scenario {
        name: "interrupt",
        requirement: Requirement::Required,
        description: "vCont;c then \\x03 stops the process (gdbserver T02, lldb-server T13)",
        fixture: Fixture::Single,
        args: &["100000000000"],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(interrupt),
    },
    Scenario {
        name: "kill",
        requirement: Requirement::Required,
        description: "`k` ends the inferior (reply X/W/OK or close) and the process disappears",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(kill),
    },
    Scenario {
        name: "lldb-info",
        requirement: Requirement::ImplementationDefined,
        description: "qHostInfo / qProcessInfo parse as key:value with an x86_64 triple and ptrsize 8",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(lldb_info),
    },
    Scenario {
        name: "jthreadsinfo",
        requirement: Requirement::ImplementationDefined,
        description: "jThreadsInfo is escaped JSON listing the stopped thread",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(jthreadsinfo),
    },
    Scenario {
        name: "accelerator-initialize",
        requirement: Requirement::ImplementationDefined,
        description: "jAcceleratorPluginInitialize is empty, or a schema-valid JSON array",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(accelerator_initialize),
    },
    Scenario {
        name: "threads-select-registers",
        requirement: Requirement::Required,
        description: "at a breakpoint in a worker: every listed thread answers Hg<tid> OK, T<tid> OK and its own `g` block",
        fixture: Fixture::Threads,
        args: &["5"],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(threads_select_registers),
    },
    Scenario {
        name: "extended-mode",
        requirement: Requirement::Required,
        description: "multi mode: `!`, vRun, vKill, vRun again, vAttach to a running process, D",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Multi,
        run: Body::Rust(extended_mode),
    },
    Scenario {
        name: "connection-duplicate",
        requirement: Requirement::Required,
        description: "a second connection while one is live is refused (E reply and close, or never served); the live session is untouched",
        fixture: Fixture::Single,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(connection_duplicate),
    },
    Scenario {
        name: "accelerator-exactly-once",
        requirement: Requirement::ImplementationDefined,
        description: "on a program whose GPU runtime comes up: jAcceleratorPluginInitialize before and (several times) after; schema-valid, exactly one connection offer once the runtime is up, no action identifier repeated",
        fixture: Fixture::GpuRuntime,
        args: &[],
        relaxed_for: &[],
        mode: LaunchMode::Launch,
        run: Body::Rust(accelerator_exactly_once),
    },
];

// ---------------------------------------------------------------- helpers

fn req(c: &mut RspClient, p: &str) -> Result<Vec<u8>, Failure> {
    c.request(p.as_bytes())
        .map_err(|e| fail(format!("request {p}: {e}")))
}

fn expect_exact(c: &mut RspClient, p: &str, want: &str) -> Result<(), Failure> {
    let r = req(c, p)?;
    if r == want.as_bytes() {
        Ok(())
    } else {
        Err(differ(p, format!("{want:?}"), &r))
    }
}

/// The handshake suited to the dialect (lldb order for lldb-server, else gdb order).
fn handshake(ctx: &mut Ctx) -> Result<reply::Features, Failure> {
    let f = if ctx.dialect == Dialect::LldbServer {
        ctx.client.handshake_lldb()?
    } else {
        let f = ctx.client.handshake_gdb()?;
        // gdb always sends Hgp0.0 before target.xml (gdbserver asserts otherwise).
        let _ = req(&mut ctx.client, "Hgp0.0")?;
        f
    };
    if ctx.client.ack_mode() {
        return Err(fail("QStartNoAckMode not offered"));
    }
    Ok(f)
}

fn initial_stop(c: &mut RspClient) -> Result<StopSignal, Failure> {
    let (stop, _) = c.stop_reply("?")?;
    match stop {
        StopReply::Signal(s) => Ok(s),
        other => Err(differ(
            "?",
            "a T/S stop reply",
            format!("{other:?}").as_bytes(),
        )),
    }
}

fn stop_thread(s: &StopSignal) -> Result<crate::reply::ThreadId, Failure> {
    s.thread
        .ok_or_else(|| fail("stop reply has no thread: key (both clients need it)"))
}

fn pid_of(c: &mut RspClient, s: &StopSignal) -> Result<u64, Failure> {
    if let Some(p) = s.thread.and_then(|t| t.pid).and_then(|p| p.id()) {
        return Ok(p);
    }
    // Non-multiprocess form: single-threaded fixtures have tid == pid.
    if let Some(t) = s.thread.and_then(|t| t.tid.id()) {
        return Ok(t);
    }
    let r = req(c, "qC")?;
    let text = String::from_utf8_lossy(&r).into_owned();
    text.strip_prefix("QC")
        .and_then(|t| reply::ThreadId::parse(t.as_bytes()).ok())
        .and_then(|t| t.pid.and_then(|p| p.id()).or(t.tid.id()))
        .ok_or_else(|| differ("qC", "QC<thread-id>", &r))
}

fn pc_of(s: &StopSignal, c: &mut RspClient) -> Result<u64, Failure> {
    if let Some(pc) = s.register_u64(0x10) {
        return Ok(pc);
    }
    let r = req(c, "g")?;
    reply::RegisterBlock::parse(&r)
        .ok()
        .and_then(|b| b.amd64_rip())
        .ok_or_else(|| differ("g", "a register block with rip", &r))
}

fn is_error_or_empty(r: &[u8]) -> bool {
    matches!(classify(r), ReplyKind::Empty | ReplyKind::Error(_))
}

// ---------------------------------------------------------------- scenarios

fn handshake_gdb(ctx: &mut Ctx) -> ScenarioResult {
    let c = &mut ctx.client;
    let f = c.handshake_gdb()?;
    if f.packet_size().is_none() {
        return Err(differ(
            crate::GDB_QSUPPORTED,
            "PacketSize=<hex>",
            c.last_reply_raw(),
        ));
    }
    if c.ack_mode() {
        return Err(fail("qSupported did not offer QStartNoAckMode+"));
    }
    let hg = req(c, "Hgp0.0")?;
    if hg != b"OK" && !(ctx.dialect == Dialect::LldbServer && is_error_or_empty(&hg)) {
        return Err(differ("Hgp0.0", "OK", &hg));
    }
    let mut xml = Vec::new();
    let mut windows = 0;
    if f.supports("qXfer:features:read") {
        loop {
            let p = format!("qXfer:features:read:target.xml:{:x},1000", xml.len());
            let r = req(c, &p)?;
            let chunk = reply::XferChunk::parse(&r)
                .map_err(|e| differ(&p, format!("m/l chunk ({e})"), &r))?;
            windows += 1;
            xml.extend(chunk.data);
            if !chunk.more || windows > 64 {
                break;
            }
        }
        let text = String::from_utf8_lossy(&xml);
        if !text.contains("<target") {
            return Err(fail(format!(
                "target.xml has no <target>: {}",
                &text[..text.len().min(200)]
            )));
        }
    }
    let s = initial_stop(c)?;
    stop_thread(&s)?;
    Ok(Verdict::Pass(format!(
        "target.xml {} bytes in {windows} windows, stop signal {:#x}",
        xml.len(),
        s.signo
    )))
}

fn handshake_lldb(ctx: &mut Ctx) -> ScenarioResult {
    let c = &mut ctx.client;
    let f = c.handshake_lldb()?;
    let mut notes = Vec::new();
    for p in [
        "QThreadSuffixSupported",
        "QListThreadsInStopReply",
        "qVAttachOrWaitSupported",
        "QEnableErrorStrings",
    ] {
        let r = req(c, p)?;
        notes.push(format!(
            "{p}={}",
            if r == b"OK" {
                "OK"
            } else if r.is_empty() {
                "empty"
            } else {
                "other"
            }
        ));
    }
    let vc = req(c, "vCont?")?;
    let text = String::from_utf8_lossy(&vc).into_owned();
    let actions: Vec<&str> = text
        .strip_prefix("vCont")
        .unwrap_or("")
        .split(';')
        .collect();
    if !actions.contains(&"c") || !actions.contains(&"s") {
        return Err(differ("vCont?", "vCont;c;C;s;S…", &vc));
    }
    let s = initial_stop(c)?;
    stop_thread(&s)?;
    Ok(Verdict::Pass(format!(
        "PacketSize={:?}; {}",
        f.value("PacketSize"),
        notes.join(" ")
    )))
}

fn stop_replay(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let _ = initial_stop(c)?;
    let first = c.last_reply_raw().to_vec();
    for i in 1..8 {
        let _ = initial_stop(c)?;
        if c.last_reply_raw() != first.as_slice() {
            let mut f = differ("?", framing::printable(&first), c.last_reply_raw());
            f.message = format!("`?` reply #{i} differs from the first one");
            return Err(f);
        }
    }
    Ok(Verdict::Pass(format!("{} bytes x8", first.len())))
}

fn unknown_packet(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    for p in [
        "qRspConformUnknown",
        "vRspConformUnknown",
        "QRspConformUnknown:1",
        "jRspConformUnknown",
    ] {
        expect_exact(c, p, "")?;
    }
    initial_stop(c)?;
    Ok(Verdict::Pass(String::new()))
}

fn framing_bad_checksum(ctx: &mut Ctx) -> ScenarioResult {
    let c = &mut ctx.client;
    c.send_ack()?;
    let t = c.timeout();
    c.send_raw(b"$qC#00")?;
    match c.next_frame("NAK for a bad checksum", t)? {
        Frame::Nak => {}
        other => return Err(differ("$qC#00", "-", format!("{other:?}").as_bytes())),
    }
    let r = c.request(b"qC")?;
    if r.is_empty() {
        return Err(differ("qC", "a reply after the retransmission", &r));
    }
    Ok(Verdict::Pass(String::new()))
}

fn framing_nak_retransmit(ctx: &mut Ctx) -> ScenarioResult {
    let c = &mut ctx.client;
    c.send_ack()?;
    let t = c.timeout();
    c.send_raw(&framing::encode_packet(b"qC"))?;
    let mut first = None;
    while first.is_none() {
        match c.next_frame("reply to qC", t)? {
            Frame::Packet { raw, .. } => first = Some(raw),
            Frame::Ack => {}
            other => {
                return Err(differ(
                    "qC",
                    "+ then a packet",
                    format!("{other:?}").as_bytes(),
                ))
            }
        }
    }
    let first = first.unwrap_or_default();
    c.send_raw(b"-")?;
    let short = Duration::from_secs(2);
    loop {
        match c.next_frame("retransmission after -", short) {
            Ok(Frame::Packet { raw, .. }) => {
                c.send_raw(b"+")?;
                return if raw == first {
                    Ok(Verdict::Pass("retransmitted".into()))
                } else {
                    Err(differ("- (NAK)", framing::printable(&first), &raw))
                };
            }
            Ok(_) => {}
            Err(ClientError::Timeout { .. }) => {
                return Ok(Verdict::Unsupported("no retransmission after `-`".into()))
            }
            // lldb-server 23 closes the connection on a NAK.
            Err(ClientError::Closed { .. }) => {
                return Ok(Verdict::Unsupported("connection closed after `-`".into()))
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn framing_split(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    for payload in ["qC", "qXfer:features:read:target.xml:0,20"] {
        let whole = c.request(payload.as_bytes())?;
        let frame = framing::encode_packet(payload.as_bytes());
        for cut in 1..frame.len() {
            c.send_raw(&frame[..cut])?;
            c.send_raw(&frame[cut..])?;
            let r = c.recv_packet()?;
            if r != whole {
                let mut f = differ(payload, framing::printable(&whole), &r);
                f.message = format!("split at byte {cut} changed the reply");
                return Err(f);
            }
        }
    }
    Ok(Verdict::Pass(String::new()))
}

fn registers_g(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    if ctx.dialect == Dialect::LldbServer {
        // lldb reads registers per thread with the thread suffix.
        let _ = req(c, "QThreadSuffixSupported")?;
    }
    let tid = stop_thread(&s)?;
    let g = if ctx.dialect == Dialect::LldbServer {
        format!("g;thread:{:x};", tid.tid.id().unwrap_or(0))
    } else {
        "g".to_string()
    };
    let r = req(c, &g)?;
    let rle = c.last_reply_raw().contains(&b'*');
    let block =
        reply::RegisterBlock::parse(&r).map_err(|e| differ(&g, format!("hex block ({e})"), &r))?;
    if block.bytes.len() < 17 * 8 {
        return Err(differ(&g, "at least 17 amd64 registers", &r));
    }
    if let Some(pc) = s.register_u64(0x10) {
        if block.amd64_rip() != Some(pc) {
            return Err(differ(&g, format!("rip {pc:#x} at byte 128"), &r));
        }
    }
    Ok(Verdict::Pass(format!(
        "{} bytes, RLE {}",
        block.bytes.len(),
        if rle { "used" } else { "not used" }
    )))
}

fn memory_unmapped(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let r = req(c, "m0,8")?;
    if !matches!(classify(&r), ReplyKind::Error(_)) {
        return Err(differ("m0,8", "Exx", &r));
    }
    let pid = pid_of(c, &s)?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| {
        fail(format!(
            "cannot read /proc/{pid}/maps (stub not local?): {e}"
        ))
    })?;
    let ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    // A readable mapping whose end is not the start of the next one.
    let end = maps
        .lines()
        .zip(&ranges)
        .enumerate()
        .find(|(i, (line, (_, end)))| {
            line.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.starts_with('r'))
                && !line.contains("[vvar")
                && ranges.get(i + 1).is_none_or(|(next, _)| next != end)
        })
        .map(|(_, (_, (_, end)))| *end)
        .ok_or_else(|| fail("no mapping followed by a hole"))?;
    let p = format!("m{:x},10", end - 8);
    let r = req(c, &p)?;
    match classify(&r) {
        ReplyKind::Error(_) => Ok(Verdict::Pass("error across the boundary".into())),
        _ => match reply::decode_hex(&r) {
            Some(b) if !b.is_empty() && b.len() <= 8 => {
                Ok(Verdict::Pass(format!("partial read of {} bytes", b.len())))
            }
            _ => Err(differ(&p, "Exx or at most 8 bytes", &r)),
        },
    }
}

fn breakpoint_twice(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let pc = pc_of(&s, c)?;
    let (z, uz) = (format!("Z0,{pc:x},1"), format!("z0,{pc:x},1"));
    expect_exact(c, &z, "OK")?;
    expect_exact(c, &z, "OK")?;
    expect_exact(c, &uz, "OK")?;
    let second = req(c, &uz)?;
    let note = match classify(&second) {
        ReplyKind::Ok => "second z0 OK",
        ReplyKind::Error(_) => "second z0 error",
        _ => return Err(differ(&uz, "OK or Exx", &second)),
    };
    // The original byte must be back.
    let mem = req(c, &format!("m{pc:x},1"))?;
    if mem == b"cc" {
        return Err(differ(
            &format!("m{pc:x},1"),
            "the original instruction byte",
            &mem,
        ));
    }
    Ok(Verdict::Pass(note.into()))
}

/// Malformed packets per family: none of them may resume, detach or kill.
pub const MALFORMED: &[&str] = &[
    "mzz,4",
    "m1234",
    "m,",
    "M10,2:zz",
    "Xzz,1:a",
    "Z0,zz,1",
    "Z9,1000,1",
    "z0",
    "Hgzz",
    "Hq1",
    "pzz",
    "Pzz=1",
    "G0",
    "qXfer:features:read:target.xml:zz,10",
    "qXfer:features:read:nosuch.xml:0,10",
    "qXfer:bogus:read::0,10",
    "vCont;zz",
    "vCont;s:zz",
    "vFile:open:zz",
    "qThreadExtraInfo,zz",
    "Tzz",
    "QPassSignals:zz",
    "qRcmd,zz",
    "jThreadsInfo:{",
    "vAttach;zz",
    "vKill;zz",
    "vRun;zz",
    "qXfer:threads:read::zz,10",
    "qMemoryRegionInfo:zz",
    "qThreadStopInfozz",
    "QNonStop:zz",
    "xzz,4",
    "X10,zz:",
    "D;zz",
    "Hc",
];

/// Known deviations of the reference servers on [`MALFORMED`] input
/// (measured with gdbserver 13.1 and lldb-server 23.1): such packets are
/// skipped for that dialect, and the reason is reported.
pub fn reference_quirk(dialect: Dialect, packet: &str) -> Option<&'static str> {
    match dialect {
        Dialect::Gdbserver => match packet {
            "mzz,4"
            | "m1234"
            | "M10,2:zz"
            | "Xzz,1:a"
            | "qXfer:features:read:target.xml:zz,10"
            | "QPassSignals:zz"
            | "qRcmd,zz" => Some("gdbserver 13 exits: \"Invalid hex digit\""),
            "Z0,zz,1" | "z0" => Some("gdbserver 13 drops the connection"),
            "Hgzz" => Some("gdbserver 13 answers OK"),
            "G0" => Some("gdbserver 13 logs \"Wrong sized register packet\" and answers OK"),
            "qXfer:threads:read::zz,10" | "X10,zz:" => {
                Some("gdbserver 13 answers E01, then stops answering")
            }
            "vKill;zz" => Some("gdbserver 13 kills the process and answers OK"),
            "D;zz" => Some("gdbserver 13 detaches and answers OK"),
            "Hc" => Some("gdbserver 13 answers OK to an empty thread id"),
            _ => None,
        },
        Dialect::LldbServer => match packet {
            "pzz" => Some("lldb-server 23 reads register 0"),
            "qMemoryRegionInfo:zz" => Some("lldb-server 23 reads `zz` as address 0"),
            "vRun;zz" => {
                Some("lldb-server 23 ignores the bad argument and launches the program again")
            }
            _ => None,
        },
        Dialect::Gdbmux | Dialect::Custom => None,
    }
}

fn malformed_input(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let _ = initial_stop(c)?;
    let before = c.last_reply_raw().to_vec();
    let mut bad = Vec::new();
    let mut skipped = 0;
    for p in MALFORMED {
        if reference_quirk(ctx.dialect, p).is_some() {
            skipped += 1;
            continue;
        }
        let r = c
            .request(&framing::escape(p.as_bytes()))
            .map_err(|e| fail(format!("malformed {p:?} broke the connection: {e}")))?;
        // vFile errors use the F reply form (`F-1,errno`).
        let vfile_error = p.starts_with("vFile:") && r.starts_with(b"F-1");
        if !is_error_or_empty(&r) && !vfile_error {
            bad.push(format!("{p} -> {}", framing::printable(&r)));
        }
        // The stop state must be untouched after every packet.
        let _ =
            initial_stop(c).map_err(|e| fail(format!("after malformed {p:?}: {}", e.message)))?;
        if c.last_reply_raw() != before.as_slice() {
            let mut f = differ("?", framing::printable(&before), c.last_reply_raw());
            f.message = format!("malformed {p:?} changed the stop state");
            return Err(f);
        }
    }
    let _ = initial_stop(c)?;
    if c.last_reply_raw() != before.as_slice() {
        return Err(differ("?", framing::printable(&before), c.last_reply_raw()));
    }
    if bad.is_empty() {
        Ok(Verdict::Pass(format!(
            "{} malformed packets rejected, {skipped} skipped (reference-server quirks)",
            MALFORMED.len() - skipped
        )))
    } else {
        Err(Failure {
            message: format!("{} malformed packets were not rejected", bad.len()),
            request: bad.first().cloned(),
            expected: Some("empty or Exx".into()),
            got: Some(bad.join(" | ")),
        })
    }
}

fn thread_list(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let want = stop_thread(&s)?;
    let ids = thread_list_ids(c)?;
    if !ids.iter().any(|t| t.tid == want.tid) {
        return Err(fail(format!(
            "thread list {ids:?} lacks the stopped thread {want}"
        )));
    }
    Ok(Verdict::Pass(format!("{} thread(s)", ids.len())))
}

fn vcont_step(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let pc0 = pc_of(&s, c)?;
    let tid = stop_thread(&s)?;
    let vc = req(c, "vCont?")?;
    if !String::from_utf8_lossy(&vc).split(';').any(|a| a == "s") {
        return Err(differ("vCont?", "vCont;…;s;…", &vc));
    }
    let p = format!("vCont;s:{tid}");
    let (stop, _) = c.stop_reply(&p)?;
    let st = stop
        .signal()
        .ok_or_else(|| differ(&p, "T05", format!("{stop:?}").as_bytes()))?;
    if st.signo != 5 {
        return Err(differ(&p, "T05…", c.last_reply_raw()));
    }
    if st.thread.is_some_and(|t| t.tid != tid.tid) {
        return Err(differ(
            &p,
            format!("a stop in thread {tid}"),
            c.last_reply_raw(),
        ));
    }
    let pc1 = pc_of(st, c)?;
    if pc1 == pc0 {
        return Err(fail(format!("pc did not move after a step ({pc0:#x})")));
    }
    Ok(Verdict::Pass(format!("pc {pc0:#x} -> {pc1:#x}")))
}

fn interrupt(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let _ = initial_stop(c)?;
    c.send_packet(b"vCont;c")?;
    // Nothing must come back while it runs; then the interrupt stops it.
    match c.recv_packet_within(Duration::from_millis(300)) {
        Err(ClientError::Timeout { .. }) => {}
        Ok(r) => return Err(differ("vCont;c", "no reply while running", &r)),
        Err(e) => return Err(e.into()),
    }
    c.interrupt()?;
    let (stop, _) = c.wait_stop("\\x03")?;
    let st = stop
        .signal()
        .ok_or_else(|| differ("\\x03", "a T stop", format!("{stop:?}").as_bytes()))?;
    if !ctx.dialect.interrupt_signals().contains(&st.signo) {
        return Err(differ(
            "\\x03",
            format!("signal in {:?}", ctx.dialect.interrupt_signals()),
            c.last_reply_raw(),
        ));
    }
    Ok(Verdict::Pass(format!("signal {:#x}", st.signo)))
}

fn kill(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let pid = pid_of(c, &s)?;
    c.send_packet(b"k")?;
    let note = match c.recv_packet() {
        Ok(r) => framing::printable(&r),
        Err(ClientError::Closed { .. }) => "connection closed".into(),
        Err(e) => return Err(e.into()),
    };
    // Gone, or a zombie waiting for its reaper.
    let pid = u32::try_from(pid).map_err(|_| fail(format!("pid {pid} out of range")))?;
    match process::wait_gone(pid, c.timeout()) {
        Ok(true) => Ok(Verdict::Pass(format!("reply {note}"))),
        Ok(false) => Err(fail(format!(
            "process {pid} still alive after `k` (reply {note})"
        ))),
        Err(e) => Err(fail(format!("cannot watch process {pid}: {e}"))),
    }
}

fn lldb_info(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let mut notes = Vec::new();
    for p in ["qHostInfo", "qProcessInfo"] {
        let r = req(c, p)?;
        if r.is_empty() {
            notes.push(format!("{p} unsupported"));
            continue;
        }
        let kv =
            reply::KeyValues::parse(&r).map_err(|e| differ(p, format!("key:value; ({e})"), &r))?;
        let triple = kv.get_hex_string("triple").unwrap_or_default();
        if !triple.starts_with("x86_64") || kv.get_hex("ptrsize") != Some(8) {
            return Err(differ(p, "triple:<hex x86_64-…>;ptrsize:8", &r));
        }
        notes.push(format!("{p} triple {triple}"));
    }
    if notes.iter().all(|n| n.ends_with("unsupported")) {
        return Ok(Verdict::Unsupported(notes.join(", ")));
    }
    Ok(Verdict::Pass(notes.join(", ")))
}

fn jthreadsinfo(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let s = initial_stop(c)?;
    let r = req(c, "jThreadsInfo")?;
    if r.is_empty() {
        return Ok(Verdict::Unsupported("empty reply".into()));
    }
    let t = reply::parse_threads_info(&r)
        .map_err(|e| differ("jThreadsInfo", format!("JSON array ({e})"), &r))?;
    let want = stop_thread(&s)?.tid.id();
    if !t.iter().any(|ti| Some(ti.tid) == want) {
        return Err(differ(
            "jThreadsInfo",
            format!("an entry for tid {want:?}"),
            &r,
        ));
    }
    Ok(Verdict::Pass(format!("{} thread(s)", t.len())))
}

fn accelerator_initialize(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let r = req(c, "jAcceleratorPluginInitialize")?;
    if r.is_empty() {
        return Ok(Verdict::Unsupported("empty reply".into()));
    }
    let a = reply::parse_accelerator_actions(&r).map_err(|e| {
        differ(
            "jAcceleratorPluginInitialize",
            format!("schema-valid array ({e})"),
            &r,
        )
    })?;
    Ok(Verdict::Pass(format!("{} plugin(s)", a.len())))
}

/// The ids `qfThreadInfo`/`qsThreadInfo` list, page by page up to the `l`
/// (at most 1000 pages).
fn thread_list_ids(c: &mut RspClient) -> Result<Vec<reply::ThreadId>, Failure> {
    let mut ids = Vec::new();
    let mut p = "qfThreadInfo";
    for _ in 0..1000 {
        let r = req(c, p)?;
        let chunk =
            reply::ThreadListChunk::parse(&r).map_err(|e| differ(p, format!("m…/l ({e})"), &r))?;
        ids.extend(chunk.ids);
        if chunk.last {
            break;
        }
        p = "qsThreadInfo";
    }
    Ok(ids)
}

fn symbol(ctx: &mut Ctx, pid: u64, name: &str) -> Result<u64, Failure> {
    let prog = ctx
        .program
        .clone()
        .ok_or_else(|| fail("no fixture program known"))?;
    crate::transcript::symbol_address(&prog, pid, name).map_err(fail)
}

fn threads_select_registers(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let s = initial_stop(&mut ctx.client)?;
    let pid = pid_of(&mut ctx.client, &s)?;
    let work = symbol(ctx, pid, "thread_work")?;
    let c = &mut ctx.client;
    expect_exact(c, &format!("Z0,{work:x},1"), "OK")?;
    let (stop, _) = c.stop_reply("vCont;c")?;
    let st = stop
        .signal()
        .ok_or_else(|| differ("vCont;c", "a breakpoint stop", c.last_reply_raw()))?
        .clone();
    let hit = stop_thread(&st)?;
    expect_exact(c, &format!("z0,{work:x},1"), "OK")?;
    let ids = thread_list_ids(c)?;
    if ids.len() < 5 {
        return Err(fail(format!("expected 5 threads, listed {ids:?}")));
    }
    let lldb = ctx.dialect == Dialect::LldbServer;
    if lldb {
        let _ = req(c, "QThreadSuffixSupported")?;
    }
    let mut pcs = Vec::new();
    for t in &ids {
        expect_exact(c, &format!("T{t}"), "OK")?;
        let g = if lldb {
            format!("g;thread:{:x};", t.tid.id().unwrap_or(0))
        } else {
            expect_exact(c, &format!("Hg{t}"), "OK")?;
            "g".to_string()
        };
        let r = req(c, &g)?;
        let block =
            reply::RegisterBlock::parse(&r).map_err(|e| differ(&g, format!("hex ({e})"), &r))?;
        let pc = block
            .amd64_rip()
            .ok_or_else(|| differ(&g, "a block with rip", &r))?;
        if t.tid == hit.tid {
            if let Some(want) = st.register_u64(0x10) {
                if want != pc {
                    return Err(differ(&g, format!("rip {want:#x} of the stop"), &r));
                }
            }
        }
        pcs.push(pc);
    }
    let mut distinct = pcs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    Ok(Verdict::Pass(format!(
        "{} threads, {} distinct pcs",
        ids.len(),
        distinct.len()
    )))
}

fn hex_str(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn extended_mode(ctx: &mut Ctx) -> ScenarioResult {
    let prog = ctx
        .program
        .clone()
        .ok_or_else(|| fail("no fixture program known"))?;
    handshake(ctx)?;
    let c = &mut ctx.client;
    // lldb-server has no `!` (it always accepts vRun/vAttach).
    let bang = req(c, "!")?;
    if bang != b"OK" && !(ctx.dialect == Dialect::LldbServer && bang.is_empty()) {
        return Err(differ("!", "OK", &bang));
    }
    let run = format!(
        "vRun;{};{}",
        hex_str(&prog.display().to_string()),
        hex_str("100000000000")
    );
    let mut pids = Vec::new();
    for round in 0..2 {
        let (stop, _) = c.stop_reply(&run)?;
        let st = stop
            .signal()
            .ok_or_else(|| differ(&run, "a T stop", c.last_reply_raw()))?
            .clone();
        let pid = pid_of(c, &st)?;
        pids.push(pid);
        // `?` replays the vRun stop.
        let first = c.last_reply_raw().to_vec();
        let _ = initial_stop(c)?;
        if c.last_reply_raw() != first.as_slice() {
            return Err(differ("?", framing::printable(&first), c.last_reply_raw()));
        }
        let k = format!("vKill;{pid:x}");
        let r = req(c, &k)?;
        if r != b"OK" && !(round == 1 && matches!(classify(&r), ReplyKind::Other)) {
            return Err(differ(&k, "OK", &r));
        }
    }
    // vAttach to a process started outside the stub.
    let mut child = std::process::Command::new(&prog)
        .arg("100000000000")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("cannot start {}: {e}", prog.display())))?;
    struct Reap<'a>(&'a mut std::process::Child);
    impl Drop for Reap<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let guard = Reap(&mut child);
    let pid = guard.0.id();
    let att = format!("vAttach;{pid:x}");
    let (stop, _) = c.stop_reply(&att)?;
    if stop.signal().is_none() {
        return Err(differ(&att, "a T stop", c.last_reply_raw()));
    }
    let d = format!("D;{pid:x}");
    expect_exact(c, &d, "OK")?;
    drop(guard);
    Ok(Verdict::Pass(format!("pids {pids:x?}, attached {pid}")))
}

fn connection_duplicate(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let _ = initial_stop(&mut ctx.client)?;
    let before = ctx.client.last_reply_raw().to_vec();
    let note = match RspClient::connect(ctx.addr) {
        Err(e) => format!("second connect refused ({e})"),
        Ok(mut second) => {
            second.set_timeout(Duration::from_secs(2));
            let r = second
                .send_ack()
                .and_then(|()| second.send_packet(crate::GDB_QSUPPORTED.as_bytes()))
                .and_then(|()| second.recv_packet());
            match r {
                Ok(r) if matches!(classify(&r), ReplyKind::Error(_)) => {
                    // Refused: the stub must close it.
                    match second.recv_packet_within(Duration::from_secs(2)) {
                        Err(ClientError::Closed { .. }) => {
                            format!("refused with {}", framing::printable(&r))
                        }
                        Err(ClientError::Io(_)) => {
                            format!("refused with {}", framing::printable(&r))
                        }
                        other => {
                            return Err(fail(format!(
                                "second connection got {} but was not closed: {other:?}",
                                framing::printable(&r)
                            )))
                        }
                    }
                }
                Ok(r) => {
                    return Err(differ(
                        "qSupported (second connection)",
                        "an E reply and close, or no answer",
                        &r,
                    ))
                }
                Err(ClientError::Timeout { .. }) => "second connection never served".into(),
                Err(ClientError::Closed { .. }) | Err(ClientError::Io(_)) => {
                    "second connection closed".into()
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let c = &mut ctx.client;
    let _ = initial_stop(c)?;
    if c.last_reply_raw() != before.as_slice() {
        return Err(differ("?", framing::printable(&before), c.last_reply_raw()));
    }
    Ok(Verdict::Pass(note))
}

fn accelerator_exactly_once(ctx: &mut Ctx) -> ScenarioResult {
    handshake(ctx)?;
    let c = &mut ctx.client;
    let mut seen_ids = Vec::new();
    let mut offers = 0;
    // One Initialize with the runtime down (at the first stop), then the
    // program brings its GPU runtime up and stops (SIGUSR1), then three
    // more: exactly one of all of them may carry the offer.
    for i in 0..4 {
        if i == 1 {
            // Console output (`O`) may come first: the stop is the reply.
            c.send_packet(b"c")?;
            let (stop, _) = c.wait_stop("c")?;
            match stop {
                reply::StopReply::Signal(s) if s.signo == 10 || s.signo == 30 => {}
                reply::StopReply::Exited { code: 2, .. } => {
                    return Ok(Verdict::Unsupported(
                        "the fixture was built without a GPU runtime (no libsimgpu_rt.so next to gdbmux)".into(),
                    ))
                }
                other => {
                    return Err(differ(
                        "c",
                        "the SIGUSR1 stop after the GPU runtime came up",
                        format!("{other:?}").as_bytes(),
                    ))
                }
            }
        }
        let r = req(c, "jAcceleratorPluginInitialize")?;
        if r.is_empty() {
            return Ok(Verdict::Unsupported("empty reply".into()));
        }
        let a = reply::parse_accelerator_actions(&r).map_err(|e| {
            differ(
                "jAcceleratorPluginInitialize",
                format!("schema-valid array ({e})"),
                &r,
            )
        })?;
        if i == 0 && a.is_empty() {
            return Ok(Verdict::Unsupported("no accelerator plugin".into()));
        }
        for act in a {
            if act.connect_info.is_some() {
                offers += 1;
                if offers > 1 {
                    return Err(differ(
                        "jAcceleratorPluginInitialize (again)",
                        "no repeated connection offer",
                        &r,
                    ));
                }
            }
            if seen_ids.contains(&(act.plugin_name.clone(), act.identifier)) {
                return Err(differ(
                    "jAcceleratorPluginInitialize (again)",
                    format!("no repeated identifier {}", act.identifier),
                    &r,
                ));
            }
            seen_ids.push((act.plugin_name, act.identifier));
        }
    }
    if offers != 1 {
        return Err(differ(
            "jAcceleratorPluginInitialize",
            "exactly one connection offer once the GPU runtime is up",
            format!("{offers} offers").as_bytes(),
        ));
    }
    Ok(Verdict::Pass(format!(
        "{} action(s), {offers} offer",
        seen_ids.len()
    )))
}
