//! `gdbmux --selftest[=FILTER]`: self-checks of the running binary, in
//! gdbserver's `--selftest` shape (gdbsupport/selftest.cc `run_tests`, gdb
//! 13.1): for each check run, `Running selftest NAME.`; for each failure
//! `Self test failed: WHY`; then `Ran N unit tests, M failed`, all on
//! stderr (gdbserver's debug output). A FILTER keeps the checks whose name
//! contains it (several `--selftest=` add up); an empty one is refused
//! with gdbserver's "Error: selftest filter is empty.".
//!
//! Exit status: gdbserver exits 0 even when a test failed; gdbmux exits 1
//! then, so a script (or CI) sees the failure.
//!
//! The checks exercise this binary's own code on fixed corpora, each able
//! to fail: the wire codec (checksums, escapes, run-length encoding,
//! framing), the parser of every packet gdbmux accepts, the x86-64 target
//! description (well-formed XML, consistent register numbering), the
//! refusal and size limits, the agent-expression evaluator, the
//! libthread_db search path and the proc_service exports libthread_db
//! needs. `GDBMUX_SELFTEST_CANARY=1` adds `selftest-canary`, a check that
//! always fails (it proves a failure is reported; tests use it).

use std::io::Write;

use crate::packet::Command;
use crate::wire::Encoder;
use crate::wire::Framer;
use crate::wire::WireEvent;

/// One self-check.
pub struct Check {
    /// Its name (what a filter matches).
    pub name: &'static str,
    /// Runs it: `Err(why)` on failure.
    pub run: fn() -> Result<(), String>,
}

/// What [`run`] counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Checks run.
    pub ran: usize,
    /// Checks failed.
    pub failed: usize,
}

/// The environment variable that adds the failing `selftest-canary` check.
pub const CANARY_ENV: &str = "GDBMUX_SELFTEST_CANARY";

/// The built-in checks (plus the canary when [`CANARY_ENV`] is `1`).
pub fn checks() -> Vec<Check> {
    let mut v = vec![
        Check {
            name: "wire-checksum",
            run: wire_checksum,
        },
        Check {
            name: "wire-escape",
            run: wire_escape,
        },
        Check {
            name: "wire-rle",
            run: wire_rle,
        },
        Check {
            name: "wire-framer",
            run: wire_framer,
        },
        Check {
            name: "wire-hex",
            run: wire_hex,
        },
        Check {
            name: "packet-parse-all",
            run: packet_parse_all,
        },
        Check {
            name: "packet-parse-malformed",
            run: packet_parse_malformed,
        },
        Check {
            name: "tdesc-x86-64",
            run: tdesc_x86_64,
        },
        Check {
            name: "limits-and-refusal",
            run: limits_and_refusal,
        },
        Check {
            name: "agent-expr",
            run: agent_expr,
        },
        Check {
            name: "thread-db-search-path",
            run: thread_db_search_path,
        },
        Check {
            name: "thread-db-proc-service-exports",
            run: proc_service_exports,
        },
    ];
    if std::env::var(CANARY_ENV).as_deref() == Ok("1") {
        v.push(Check {
            name: "selftest-canary",
            run: canary,
        });
    }
    v
}

/// Runs the `checks` whose name contains one of `filters` (all when there
/// is none), writing gdbserver's lines to `out`.
pub fn run(checks: &[Check], filters: &[String], out: &mut dyn Write) -> Outcome {
    let mut o = Outcome { ran: 0, failed: 0 };
    for c in checks {
        if !filters.is_empty() && !filters.iter().any(|f| c.name.contains(f.as_str())) {
            continue;
        }
        let _ = writeln!(out, "Running selftest {}.", c.name);
        o.ran += 1;
        let r =
            std::panic::catch_unwind(c.run).unwrap_or_else(|_| Err(format!("{} panicked", c.name)));
        if let Err(why) = r {
            o.failed += 1;
            let _ = writeln!(out, "Self test failed: {why}");
        }
    }
    let _ = writeln!(out, "Ran {} unit tests, {} failed", o.ran, o.failed);
    o
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

fn canary() -> Result<(), String> {
    // A frame with a wrong checksum must not be taken as a packet; this
    // check claims it is, so it fails whenever the framer is right.
    let mut f = Framer::new(crate::wire::DEFAULT_MAX_PACKET);
    f.push(b"$OK#00");
    ensure(matches!(f.next_event(), Some(WireEvent::Packet(_))), || {
        "selftest-canary: a frame with a bad checksum was (rightly) refused".into()
    })
}

/// Checksums known from gdb sessions (`$qSupported#37`, `$OK#9a`, ...).
fn wire_checksum() -> Result<(), String> {
    let known: [(&[u8], u8); 5] = [
        (b"", 0x00),
        (b"OK", 0x9a),
        (b"qSupported", 0x37),
        (b"vMustReplyEmpty", 0x3a),
        (b"QStartNoAckMode", 0xb0),
    ];
    for (p, sum) in known {
        let got = crate::wire::checksum(p);
        ensure(got == sum, || {
            format!(
                "checksum of {:?} is {got:#04x}, not {sum:#04x}",
                String::from_utf8_lossy(p)
            )
        })?;
        let mut out = Vec::new();
        Encoder::new().packet(p, &mut out);
        let want = format!("${}#{sum:02x}", String::from_utf8_lossy(p));
        ensure(out == want.as_bytes(), || {
            format!("framed {:?}, want {want}", String::from_utf8_lossy(&out))
        })?;
    }
    Ok(())
}

/// `#`, `$`, `}` and `*` go out as `}` + byte ^ 0x20, and come back.
fn wire_escape() -> Result<(), String> {
    let raw = b"a#b$c}d*e\x00\xff";
    let mut esc = Vec::new();
    crate::wire::escape_binary(raw, &mut esc);
    ensure(esc == b"a}\x03b}\x04c}]d}\x0ae\x00\xff", || {
        format!("escaped {esc:?}")
    })?;
    let back = crate::wire::unescape_binary(&esc);
    ensure(back == raw, || format!("unescaped {back:?}"))?;
    Ok(())
}

/// Run-length encoding: gdb's `X*n` (n - 29 more), both ways, and the
/// encoder's refusals (no count of `#`/`$`, no run of escaped bytes).
fn wire_rle() -> Result<(), String> {
    let d = crate::wire::rle_decode(b"0* 1*!")
        .map_err(|e| format!("rle_decode of a good body: {e}"))?;
    ensure(d == b"000011111", || {
        format!("0* 1*! decoded to {:?}", String::from_utf8_lossy(&d))
    })?;
    for bad in [&b"*a"[..], b"a*", b"a*\x1f"] {
        ensure(crate::wire::rle_decode(bad).is_err(), || {
            format!("{bad:?} decoded without error")
        })?;
    }
    let mut enc = Encoder::new();
    enc.set_rle(true);
    for payload in [
        vec![b'0'; 200],
        b"abc".repeat(40),
        vec![b'#'; 10],
        [vec![b'1'; 7], vec![b'2'; 6]].concat(),
    ] {
        let mut out = Vec::new();
        enc.packet(&payload, &mut out);
        let body = out
            .get(1..out.len().saturating_sub(3))
            .ok_or("short frame")?;
        let sum = out
            .get(out.len().saturating_sub(2)..)
            .ok_or("no checksum")?;
        ensure(
            format!("{:02x}", crate::wire::checksum(body)).as_bytes() == sum,
            || "RLE frame checksum is not the sum of the body on the wire".into(),
        )?;
        ensure(!body.contains(&b'#') && !body.contains(&b'$'), || {
            format!(
                "RLE body has a raw # or $: {:?}",
                String::from_utf8_lossy(body)
            )
        })?;
        let dec = crate::wire::rle_decode(body).map_err(|e| e.to_string())?;
        let dec = crate::wire::unescape_binary(&dec);
        ensure(dec == payload, || {
            format!("RLE round trip of {} bytes changed them", payload.len())
        })?;
    }
    Ok(())
}

/// The framer on a byte stream with acks, interrupts, escapes, a bad
/// checksum, a notification and an oversize packet.
fn wire_framer() -> Result<(), String> {
    let mut f = Framer::new(16);
    let stream: &[u8] =
        b"+$qSupported#37\x03$X0,1:}]#f9$m0,4#00%Stop:T05#xx-$0123456789abcdef01#c3";
    f.push(stream);
    let mut ev = Vec::new();
    while let Some(e) = f.next_event() {
        ev.push(e);
    }
    let want = vec![
        WireEvent::Ack,
        WireEvent::Packet(b"qSupported".to_vec()),
        WireEvent::Interrupt,
        WireEvent::Packet(b"X0,1:}".to_vec()),
        WireEvent::BadChecksum,
        WireEvent::BadChecksum,
        WireEvent::Nak,
        WireEvent::Oversize,
    ];
    ensure(ev == want, || {
        format!("framer events {ev:?}, want {want:?}")
    })?;
    let acks = f.take_replies().unwrap_or_default();
    // `+` for each intact packet (3, the oversize one included), `-` for
    // the bad one; the bad notification is never acknowledged.
    ensure(acks == b"++-+", || {
        format!("acks {:?}", String::from_utf8_lossy(&acks))
    })?;
    Ok(())
}

fn wire_hex() -> Result<(), String> {
    let b = [0u8, 0x7f, 0x80, 0xff];
    let s = crate::wire::hex::encode_to_string(&b);
    ensure(s == "007f80ff", || format!("hex {s}"))?;
    ensure(
        crate::wire::hex::decode(b"007F80ff").as_deref() == Some(&b[..]),
        || "hex decode of mixed case".into(),
    )?;
    ensure(crate::wire::hex::decode(b"0g").is_none(), || {
        "0g decoded".into()
    })?;
    ensure(
        crate::wire::hex::parse_u64(b"ffffffffffffffff") == Some(u64::MAX),
        || "parse_u64 of 16 f".into(),
    )?;
    ensure(
        crate::wire::hex::parse_u64(b"1ffffffffffffffff").is_none(),
        || "parse_u64 of 17 digits did not overflow".into(),
    )?;
    Ok(())
}

/// One well-formed sample of every packet gdbmux's parser takes.
const PACKETS: &[&str] = &[
    "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+",
    "QStartNoAckMode",
    "vMustReplyEmpty",
    "vStopped",
    "qfThreadInfo",
    "qsThreadInfo",
    "qAttached:1a2b",
    "qGetTLSAddr:p1.2,10,7ffff7ffe000",
    "qThreadExtraInfo,p1.2",
    "qXfer:features:read:target.xml:0,fff",
    "qSymbol::",
    "R00",
    "qRcmd,68656c70",
    "qOffsets",
    "QNonStop:1",
    "QCatchSyscalls:1;3c;e7",
    "QPassSignals:e;14;1c",
    "QProgramSignals:2;3",
    "QDisableRandomization:1",
    "QSetDisableASLR:1",
    "QEnvironmentHexEncoded:464f4f3d31",
    "QEnvironmentReset",
    "QEnvironmentUnset:464f4f",
    "QEnvironment:FOO=1",
    "QSetWorkingDir:2f746d70",
    "QStartupWithShell:0",
    "qHostInfo",
    "qProcessInfo",
    "QThreadSuffixSupported",
    "QListThreadsInStopReply",
    "jThreadsInfo",
    "jThreadExtendedInfo:{\"thread\":1}",
    "qThreadStopInfo4c43",
    "qMemoryRegionInfo:400000",
    "qGetWorkingDir",
    "QEnableErrorStrings",
    "qEcho:1",
    "qStructuredDataPlugins",
    "jLLDBTraceSupported",
    "qShlibInfoAddr",
    "qWatchpointSupportInfo:",
    "qRegisterInfo1a",
    "qVAttachOrWaitSupported",
    "QSetDetachOnError:1",
    "qGDBServerVersion",
    "jAcceleratorPluginInitialize",
    "jAcceleratorPluginBreakpointHit:{}",
    "qC",
    "vCont?",
    "vCont;s:p1.2;c",
    "vFile:open:2f746d702f78,0,1a4",
    "vKill;1a2b",
    "vRun;2f62696e2f74727565;",
    "vAttach;1a2b",
    "?",
    "!",
    "g",
    "G00112233",
    "p10",
    "P10=0011223344556677",
    "m400000,40",
    "M400000,2:9090",
    "x400000,40",
    "X400000,0:",
    "Z0,401000,1",
    "z0,401000,1",
    "Z2,601040,4",
    "c",
    "C0b",
    "s",
    "S05",
    "Hgp1.-1",
    "Hc-1",
    "Tp1.2",
    "D",
    "D;1a2b",
    "k",
];

/// Every entry of the packet table and every one-letter packet has a
/// sample above, and every sample parses to a command (not `Unknown`).
fn packet_parse_all() -> Result<(), String> {
    for (prefix, _) in crate::packet::TABLE {
        ensure(PACKETS.iter().any(|p| p.starts_with(prefix)), || {
            format!("no sample of the packet table's {prefix}")
        })?;
    }
    for p in PACKETS {
        match crate::packet::parse(p.as_bytes()) {
            Ok(Command::Unknown(_)) => return Err(format!("{p} parsed as an unknown packet")),
            Ok(_) => {}
            Err(e) => return Err(format!("{p} did not parse: {}", e.0)),
        }
    }
    Ok(())
}

/// Malformed packets are errors (never a guess), unknown ones `Unknown`.
fn packet_parse_malformed() -> Result<(), String> {
    for p in [
        "qGetTLSAddr:2,10",
        "m400000",
        "mzz,4",
        "M400000,2:90",
        "Z0,401000",
        "P10",
        "Hgpz",
        "QCatchSyscalls:1;zz",
        "vCont;q",
    ] {
        ensure(crate::packet::parse(p.as_bytes()).is_err(), || {
            format!("malformed {p} parsed")
        })?;
    }
    for p in ["qRspCaptureMark:x", "", "bc", "vFlashDone"] {
        ensure(
            matches!(crate::packet::parse(p.as_bytes()), Ok(Command::Unknown(_))),
            || format!("{p:?} is not Unknown"),
        )?;
    }
    Ok(())
}

/// A minimal XML well-formedness check: declarations, comments, elements
/// nested and closed, attributes quoted and unique, entities known.
fn xml_well_formed(doc: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = doc;
    let mut roots = 0;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        let after = &rest[lt + 1..];
        if let Some(a) = after.strip_prefix("?") {
            let end = a.find("?>").ok_or("unterminated <?")?;
            rest = &a[end + 2..];
            continue;
        }
        if let Some(a) = after.strip_prefix("!--") {
            let end = a.find("-->").ok_or("unterminated comment")?;
            rest = &a[end + 3..];
            continue;
        }
        if let Some(a) = after.strip_prefix("!DOCTYPE") {
            let end = a.find('>').ok_or("unterminated DOCTYPE")?;
            rest = &a[end + 1..];
            continue;
        }
        let gt = after.find('>').ok_or("unterminated tag")?;
        let tag = &after[..gt];
        rest = &after[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let empty = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        ensure(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c)),
            || format!("bad element name {name:?}"),
        )?;
        let mut seen: Vec<&str> = Vec::new();
        loop {
            attrs = attrs.trim_start();
            if attrs.is_empty() {
                break;
            }
            let eq = attrs
                .find('=')
                .ok_or(format!("attribute without = in <{tag}>"))?;
            let an = attrs[..eq].trim();
            ensure(!seen.contains(&an), || {
                format!("attribute {an} twice in <{name}>")
            })?;
            seen.push(an);
            let v = attrs[eq + 1..].trim_start();
            let q = v.chars().next().ok_or("attribute without value")?;
            ensure(q == '"' || q == '\'', || {
                format!("unquoted {an} in <{name}>")
            })?;
            let close = v[1..].find(q).ok_or("unterminated attribute value")?;
            let val = &v[1..1 + close];
            ensure(!val.contains('<'), || format!("< in attribute {an}"))?;
            check_text(val)?;
            attrs = &v[close + 2..];
        }
        if stack.is_empty() {
            roots += 1;
        }
        if !empty {
            stack.push(name.to_string());
        }
    }
    check_text(rest)?;
    ensure(stack.is_empty(), || format!("unclosed elements {stack:?}"))?;
    ensure(roots == 1, || format!("{roots} root elements"))
}

fn check_text(t: &str) -> Result<(), String> {
    let mut rest = t;
    while let Some(i) = rest.find('&') {
        let semi = rest[i..].find(';').ok_or("& without ;")?;
        let ent = &rest[i + 1..i + semi];
        ensure(
            ["lt", "gt", "amp", "quot", "apos"].contains(&ent) || ent.starts_with('#'),
            || format!("unknown entity &{ent};"),
        )?;
        rest = &rest[i + semi + 1..];
    }
    ensure(!t.contains('>') || !t.contains('<'), || {
        "markup in text".into()
    })
}

/// The x86-64 register tables (with and without AVX / AVX-512) give
/// well-formed target descriptions whose `regnum`s are unique and dense,
/// whose names are unique, whose `g` packet registers come first, and whose
/// types are gdb's predefined ones or declared in the document.
fn tdesc_x86_64() -> Result<(), String> {
    let arch = crate::native::x86_64_arch_info();
    for (label, regs) in crate::native::x86_64_register_tables() {
        let xml = crate::session::target_xml(&arch, &regs);
        xml_well_formed(&xml).map_err(|e| format!("{label} target.xml: {e}"))?;
        let mut nums: Vec<u32> = regs.iter().map(|r| r.regnum).collect();
        nums.sort_unstable();
        ensure(
            nums.iter().enumerate().all(|(i, n)| *n as usize == i),
            || format!("{label}: regnums are not 0..{}", regs.len()),
        )?;
        let mut names: Vec<&str> = regs.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        ensure(names.len() == regs.len(), || {
            format!("{label}: a name twice")
        })?;
        let last_g = regs
            .iter()
            .filter(|r| r.in_g_packet)
            .map(|r| r.regnum)
            .max();
        let first_not_g = regs
            .iter()
            .filter(|r| !r.in_g_packet)
            .map(|r| r.regnum)
            .min();
        if let (Some(g), Some(n)) = (last_g, first_not_g) {
            ensure(g < n, || {
                format!("{label}: g-packet register {g} after non-g register {n}")
            })?;
        }
        const PREDEFINED: [&str; 16] = [
            "int",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "code_ptr",
            "data_ptr",
            "ieee_single",
            "ieee_double",
            "i387_ext",
            "int128",
            "uint128",
        ];
        for r in &regs {
            ensure(r.bitsize % 8 == 0 && r.bitsize > 0, || {
                format!("{label}: {} has {} bits", r.name, r.bitsize)
            })?;
            let declared = xml.contains(&format!("id=\"{}\"", r.reg_type));
            ensure(
                PREDEFINED.contains(&r.reg_type.as_str()) || declared,
                || format!("{label}: {} has undeclared type {}", r.name, r.reg_type),
            )?;
        }
        for must in ["rip", "rsp", "eflags", "fs_base", "orig_rax"] {
            ensure(regs.iter().any(|r| r.name == must), || {
                format!("{label}: no {must}")
            })?;
        }
    }
    Ok(())
}

/// The packet size limit is what qSupported advertises and the framer
/// enforces (a body of exactly the limit passes, one byte more is
/// `Oversize`), and a refusal's frame carries its reason as gdb prints it.
fn limits_and_refusal() -> Result<(), String> {
    let max = crate::wire::DEFAULT_MAX_PACKET;
    for (len, oversize) in [(max, false), (max + 1, true)] {
        let body = vec![b'a'; len];
        let mut frame = Vec::new();
        Encoder::new().packet(&body, &mut frame);
        let mut f = Framer::new(max);
        f.push(&frame);
        let e = f.next_event();
        let ok = if oversize {
            e == Some(WireEvent::Oversize)
        } else {
            matches!(&e, Some(WireEvent::Packet(p)) if p.len() == len)
        };
        ensure(ok, || format!("a {len}-byte body with limit {max}: {e:?}"))?;
    }
    let frames = crate::refusal::refusal_frames("busy: another client");
    let mut f = Framer::new(max);
    f.push(&frames);
    let e = f.next_event();
    ensure(
        e == Some(WireEvent::Packet(b"E.busy: another client".to_vec())),
        || format!("refusal frame read back as {e:?}"),
    )?;
    let q = crate::refusal::lldb_answer(b"?", "busy").unwrap_or_default();
    let want = format!(
        "description:{};",
        crate::wire::hex::encode_to_string(b"busy")
    );
    ensure(String::from_utf8_lossy(&q).contains(&want), || {
        "lldb's refusal stop lacks the reason".into()
    })?;
    ensure(
        crate::refusal::lldb_answer(b"qRegisterInfo0", "busy").as_deref() == Some(&b"E45"[..]),
        || "lldb's register scan is not ended".into(),
    )?;
    ensure(
        crate::bounds::XFER_CACHE_ENTRIES > 0
            && crate::bounds::XFER_CACHE_BYTES >= max
            && crate::bounds::HELD_PROGRAM_OUTPUT >= max,
        || "a documented buffer limit is smaller than one packet".into(),
    )
}

struct Regs;

impl crate::agentexpr::AgentContext for Regs {
    fn register(&mut self, regnum: u32) -> Option<Vec<u8>> {
        (regnum == 0).then(|| 0x1122u64.to_le_bytes().to_vec())
    }
    fn memory(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        (addr == 0x1000).then(|| [0x78u8, 0x56, 0x34, 0x12, 0, 0, 0, 0][..len.min(8)].to_vec())
    }
}

/// gdb's agent bytecode (gdb/doc/agentexpr.texi): arithmetic, comparison,
/// jumps, registers, memory, and the errors.
fn agent_expr() -> Result<(), String> {
    use crate::agentexpr::eval;
    use crate::agentexpr::AgentError;
    let cases: [(&[u8], Result<u64, AgentError>); 7] = [
        // const8 2, const8 3, add, end
        (&[0x22, 2, 0x22, 3, 0x02, 0x27], Ok(5)),
        // const8 7, const8 2, sub, end
        (&[0x22, 7, 0x22, 2, 0x03, 0x27], Ok(5)),
        // reg 0, end
        (&[0x26, 0, 0, 0x27], Ok(0x1122)),
        // const16 0x1000, ref32, end
        (&[0x23, 0x10, 0x00, 0x19, 0x27], Ok(0x1234_5678)),
        // const8 1, const8 0, div_signed
        (
            &[0x22, 1, 0x22, 0, 0x05, 0x27],
            Err(AgentError::DivideByZero),
        ),
        // add on an empty stack
        (&[0x02, 0x27], Err(AgentError::StackUnderflow)),
        // const8 1, if_goto to past the end
        (&[0x22, 1, 0x20, 0x00, 0x40], Err(AgentError::OutOfCode)),
    ];
    for (code, want) in cases {
        let got = eval(code, &mut Regs);
        ensure(got == want, || {
            format!("agent code {code:02x?}: {got:?}, want {want:?}")
        })?;
    }
    Ok(())
}

fn thread_db_search_path() -> Result<(), String> {
    use crate::native::thread_db::parse_search_path;
    use crate::native::thread_db::SearchDir;
    let got = parse_search_path("$sdir:$pdir:/opt/glibc/lib:$pdir/../lib64");
    let want = vec![
        SearchDir::Sdir,
        SearchDir::Pdir(String::new()),
        SearchDir::Dir("/opt/glibc/lib".into()),
        SearchDir::Pdir("/../lib64".into()),
    ];
    ensure(got == want, || format!("search path parsed as {got:?}"))?;
    ensure(
        crate::native::thread_db::DEFAULT_SEARCH_PATH == "$sdir:$pdir",
        || "the default search path is not gdbserver's".into(),
    )
}

/// libthread_db.so.1 imports `ps_pdread`, `ps_lgetregs`, ... from its
/// client; this binary must have them in its dynamic symbol table.
fn proc_service_exports() -> Result<(), String> {
    let missing: Vec<&str> = crate::native::thread_db::proc_service_exported()
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect();
    ensure(missing.is_empty(), || {
        format!("not in the dynamic symbol table: {}", missing.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass() -> Result<(), String> {
        Ok(())
    }
    fn fail() -> Result<(), String> {
        Err("broken on purpose".into())
    }
    fn panics() -> Result<(), String> {
        panic!("boom")
    }

    #[test]
    fn runner_reports_failures_in_gdbservers_shape() {
        let c = [
            Check {
                name: "alpha",
                run: pass,
            },
            Check {
                name: "beta",
                run: fail,
            },
            Check {
                name: "gamma",
                run: panics,
            },
        ];
        let mut out = Vec::new();
        let o = run(&c, &[], &mut out);
        assert_eq!(o, Outcome { ran: 3, failed: 2 });
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "Running selftest alpha.\nRunning selftest beta.\nSelf test failed: broken on purpose\n\
             Running selftest gamma.\nSelf test failed: gamma panicked\nRan 3 unit tests, 2 failed\n"
        );
        let mut out = Vec::new();
        let o = run(&c, &["alp".into(), "zzz".into()], &mut out);
        assert_eq!(o, Outcome { ran: 1, failed: 0 });
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with("Ran 1 unit tests, 0 failed\n"));
    }

    /// Every built-in check passes on this build (stub/build.rs exports
    /// the proc_service functions from this test executable too).
    #[test]
    fn built_in_checks_pass() {
        for c in checks() {
            if c.name == "selftest-canary" {
                continue;
            }
            if let Err(e) = (c.run)() {
                panic!("{}: {e}", c.name);
            }
        }
    }

    #[test]
    fn xml_checker_catches_errors() {
        assert!(xml_well_formed("<a><b x=\"1\"/></a>").is_ok());
        assert!(xml_well_formed("<a><b></a>").is_err());
        assert!(xml_well_formed("<a x=1/>").is_err());
        assert!(xml_well_formed("<a x=\"1\" x=\"2\"/>").is_err());
        assert!(xml_well_formed("<a>&bogus;</a>").is_err());
        assert!(xml_well_formed("<a/><b/>").is_err());
    }
}
