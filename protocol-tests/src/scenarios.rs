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

use std::time::Duration;
use std::time::Instant;

use crate::client::ClientError;
use crate::client::RspClient;
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
    /// The body.
    pub run: fn(&mut Ctx) -> ScenarioResult,
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
    let stub = match spec.launch(s.fixture, s.args) {
        Ok(st) => st,
        Err(e) => return Outcome::Fail(fail(format!("stub did not start: {e}"))),
    };
    let outcome = run_at(stub.addr(), spec.dialect, s);
    if let Outcome::Fail(mut f) = outcome {
        f.message = format!("{}\n--- stub output ---\n{}", f.message, stub.output());
        return Outcome::Fail(f);
    }
    outcome
}

/// Run `s` against a stub already listening at `addr`.
pub fn run_at(addr: std::net::SocketAddr, dialect: Dialect, s: &Scenario) -> Outcome {
    let client = match RspClient::connect(addr) {
        Ok(c) => c,
        Err(e) => return Outcome::Fail(fail(format!("cannot connect to {addr}: {e}"))),
    };
    let mut ctx = Ctx { client, dialect };
    match (s.run)(&mut ctx) {
        Ok(Verdict::Pass(n)) => Outcome::Pass(n),
        Ok(Verdict::Unsupported(n)) => Outcome::Unsupported(n),
        Err(f) => Outcome::Fail(f),
    }
}

/// Look a scenario up by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}

/// Every scenario, in report order.
pub static ALL: &[Scenario] = &[
    Scenario {
        name: "handshake-gdb",
        requirement: Requirement::Required,
        description: "gdb 13 order: qSupported, vMustReplyEmpty, QStartNoAckMode, Hgp0.0, target.xml windows, ?",
        fixture: Fixture::Single,
        args: &[],
        run: handshake_gdb,
    },
    Scenario {
        name: "handshake-lldb",
        requirement: Requirement::Required,
        description: "lldb 23 order: QStartNoAckMode before qSupported, vCont?, ?",
        fixture: Fixture::Single,
        args: &[],
        run: handshake_lldb,
    },
    Scenario {
        name: "stop-replay",
        requirement: Requirement::Required,
        description: "`?` answered 8 times with byte-identical stop replies",
        fixture: Fixture::Single,
        args: &[],
        run: stop_replay,
    },
    Scenario {
        name: "unknown-packet",
        requirement: Requirement::Required,
        description: "unknown packets get the empty reply and the session goes on",
        fixture: Fixture::Single,
        args: &[],
        run: unknown_packet,
    },
    Scenario {
        name: "framing-bad-checksum",
        requirement: Requirement::Required,
        description: "ack mode: a bad checksum is NAKed with `-`; the retransmission is answered",
        fixture: Fixture::Single,
        args: &[],
        run: framing_bad_checksum,
    },
    Scenario {
        name: "framing-nak-retransmit",
        requirement: Requirement::ImplementationDefined,
        description: "ack mode: the client's `-` makes the server retransmit its last reply",
        fixture: Fixture::Single,
        args: &[],
        run: framing_nak_retransmit,
    },
    Scenario {
        name: "framing-split",
        requirement: Requirement::Required,
        description: "a packet split at every byte boundary (two writes) is answered like an unsplit one",
        fixture: Fixture::Single,
        args: &[],
        run: framing_split,
    },
    Scenario {
        name: "registers-g",
        requirement: Requirement::Required,
        description: "`g` decodes (RLE expanded) and its rip equals the expedited rip of the stop",
        fixture: Fixture::Single,
        args: &[],
        run: registers_g,
    },
    Scenario {
        name: "memory-unmapped",
        requirement: Requirement::Required,
        description: "`m` at 0 is an error; `m` across the end of a mapping is partial or an error",
        fixture: Fixture::Single,
        args: &[],
        run: memory_unmapped,
    },
    Scenario {
        name: "breakpoint-twice",
        requirement: Requirement::Required,
        description: "Z0 twice at the same address, then z0 twice (second z0: OK or error)",
        fixture: Fixture::Single,
        args: &[],
        run: breakpoint_twice,
    },
    Scenario {
        name: "malformed-input",
        requirement: Requirement::Required,
        description: "malformed packets of each family get an empty or E reply; the connection stays usable",
        fixture: Fixture::Single,
        args: &[],
        run: malformed_input,
    },
    Scenario {
        name: "thread-list",
        requirement: Requirement::Required,
        description: "qfThreadInfo/qsThreadInfo paginate to `l` and include the stopped thread",
        fixture: Fixture::Single,
        args: &[],
        run: thread_list,
    },
    Scenario {
        name: "vcont-step",
        requirement: Requirement::Required,
        description: "vCont? lists c and s; vCont;s:<tid> stops with SIGTRAP in that thread",
        fixture: Fixture::Single,
        args: &[],
        run: vcont_step,
    },
    Scenario {
        name: "interrupt",
        requirement: Requirement::Required,
        description: "vCont;c then \\x03 stops the process (gdbserver T02, lldb-server T13)",
        fixture: Fixture::Single,
        args: &["100000000000"],
        run: interrupt,
    },
    Scenario {
        name: "kill",
        requirement: Requirement::Required,
        description: "`k` ends the inferior (reply X/W/OK or close) and the process disappears",
        fixture: Fixture::Single,
        args: &[],
        run: kill,
    },
    Scenario {
        name: "lldb-info",
        requirement: Requirement::ImplementationDefined,
        description: "qHostInfo / qProcessInfo parse as key:value with an x86_64 triple and ptrsize 8",
        fixture: Fixture::Single,
        args: &[],
        run: lldb_info,
    },
    Scenario {
        name: "jthreadsinfo",
        requirement: Requirement::ImplementationDefined,
        description: "jThreadsInfo is escaped JSON listing the stopped thread",
        fixture: Fixture::Single,
        args: &[],
        run: jthreadsinfo,
    },
    Scenario {
        name: "accelerator-initialize",
        requirement: Requirement::ImplementationDefined,
        description: "jAcceleratorPluginInitialize is empty, or a schema-valid JSON array",
        fixture: Fixture::Single,
        args: &[],
        run: accelerator_initialize,
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
            _ => None,
        },
        Dialect::LldbServer => match packet {
            "pzz" => Some("lldb-server 23 reads register 0"),
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
    let deadline = Instant::now() + c.timeout();
    let mut pause = Duration::from_millis(1);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        // Gone, or a zombie waiting for its reaper.
        if state.as_deref().is_none_or(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, a)| a.trim_start().starts_with('Z'))
        }) {
            return Ok(Verdict::Pass(format!("reply {note}")));
        }
        if Instant::now() >= deadline {
            return Err(fail(format!(
                "process {pid} still alive after `k` (reply {note})"
            )));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
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
