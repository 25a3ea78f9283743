//! Bounded property tests for the stub's untrusted-input surfaces: the
//! same properties the cargo-fuzz targets in `stub/fuzz` check, at CI size
//! (256 cases per property).
//!
//! - the command parser and the framer never panic, and a framed payload
//!   reaches the parser unchanged;
//! - the accelerator JSON (`mux::accel`): arbitrary bytes never panic the
//!   hit parser; `Actions` round trip through `to_json`, the stub's encoder
//!   and the independent client stack (`protocol_tests`), which checks the
//!   schema lldb 23.1 enforces;
//! - `Session::on_input` (no target) never panics, keeps its pending output
//!   bounded and well-framed, and answers a `jAcceleratorPluginBreakpointHit`
//!   with exactly one reply, with and without a multiplexer;
//! - what the stub encodes (stop replies, thread ids, `qXfer` chunks) the
//!   independent client decodes to the same values.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::cell::RefCell;
use std::rc::Rc;

use proptest::collection::vec;
use proptest::prelude::*;
use protocol_tests::framing::Frame;
use protocol_tests::framing::FrameDecoder;
use protocol_tests::reply::IdPart;
use protocol_tests::reply::StopReply;
use protocol_tests::reply::XferChunk;
use stub::mux::accel;
use stub::mux::accel::Actions;
use stub::mux::accel::BreakpointHit;
use stub::mux::accel::BreakpointInfo;
use stub::mux::accel::ByAddress;
use stub::mux::accel::ByName;
use stub::mux::accel::ConnectInfo;
use stub::mux::Mux;
use stub::packet::parse;
use stub::packet::reply::xfer_chunk;
use stub::packet::stop_reply;
use stub::packet::stop_reply::StopReplyOptions;
use stub::packet::stop_reply::StopSnapshot;
use stub::packet::stop_reply::ThreadSnapshot;
use stub::packet::Command;
use stub::session::Session;
use stub::session::SessionControl;
use stub::session::MAX_PACKET;
use stub::stop::StopEvent;
use stub::stop::StopKind;
use stub::wire::Encoder;
use stub::wire::Framer;
use stub::wire::WireEvent;
use stub::wire::DEFAULT_MAX_PACKET;

fn frame(payload: &[u8], rle: bool) -> Vec<u8> {
    let mut e = Encoder::new();
    e.set_rle(rle);
    let mut out = Vec::new();
    e.packet(payload, &mut out);
    out
}

/// The stub's wire form of `payload` as the independent client reads it:
/// the raw body with RLE undone (escapes are the reply parsers' business).
fn client_raw(payload: &[u8], rle: bool) -> Vec<u8> {
    let wire = frame(payload, rle);
    let mut dec = FrameDecoder::new();
    dec.push(&wire);
    let Some(Frame::Packet { raw, checksum_ok }) = dec.next_frame() else {
        panic!("no packet in {wire:?}");
    };
    assert!(checksum_ok);
    assert_eq!(dec.next_frame(), None);
    protocol_tests::framing::rle_decode(&raw).unwrap()
}

/// Packets that would touch the host (start a program, ptrace-attach to an
/// arbitrary pid, host file I/O); the session tests never feed them.
fn touches_host(p: &[u8]) -> bool {
    matches!(
        parse(p),
        Ok(Command::VRun(_) | Command::VAttach(_) | Command::VFile(_))
    )
}

/// Decodes session output; panics on anything but acks and good packets,
/// or a partial frame at the end. Returns the packets.
fn session_packets(out: &[u8]) -> Vec<Vec<u8>> {
    let mut f = Framer::client(MAX_PACKET * 4);
    f.push(out);
    let mut packets = Vec::new();
    while let Some(ev) = f.next_event() {
        match ev {
            WireEvent::Ack | WireEvent::Nak | WireEvent::Notification(_) => {}
            WireEvent::Packet(p) => packets.push(p),
            other => panic!("{other:?} in session output {out:?}"),
        }
    }
    f.push(b"+");
    assert_eq!(
        f.next_event(),
        Some(WireEvent::Ack),
        "partial frame in {out:?}"
    );
    packets
}

/// Payloads that look like commands: a known prefix and noise.
fn command_payload() -> impl Strategy<Value = Vec<u8>> {
    let prefix = prop_oneof![
        Just(&b""[..]),
        Just(&b"qSupported:"[..]),
        Just(&b"qXfer:features:read:target.xml:"[..]),
        Just(&b"qRcmd,"[..]),
        Just(&b"QStartNoAckMode"[..]),
        Just(&b"qfThreadInfo"[..]),
        Just(&b"qsThreadInfo"[..]),
        Just(&b"vCont;"[..]),
        Just(&b"qMemoryRegionInfo:"[..]),
        Just(&b"qEcho:"[..]),
        Just(&b"QPassSignals:"[..]),
        Just(&b"jAcceleratorPluginBreakpointHit:"[..]),
        Just(&b"jAcceleratorPluginInitialize"[..]),
        Just(&b"Hg"[..]),
        Just(&b"m"[..]),
        Just(&b"M"[..]),
        Just(&b"Z0,"[..]),
        Just(&b"p"[..]),
        Just(&b"?"[..]),
        Just(&b"D"[..]),
        Just(&b"k"[..]),
    ];
    (prefix, vec(any::<u8>(), 0..48)).prop_map(|(p, tail)| {
        let mut v = p.to_vec();
        v.extend(tail);
        v
    })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,12}",
        "[}#$*\"\\\\{}\\[\\]:;,a-z]{0,12}",
        any::<String>(),
    ]
}

fn breakpoint() -> impl Strategy<Value = BreakpointInfo> {
    (
        any::<i64>(),
        prop_oneof![
            (text(), proptest::option::of(text())).prop_map(|(f, s)| (
                Some(ByName {
                    function_name: f,
                    shlib: s
                }),
                None
            )),
            any::<u64>().prop_map(|a| (None, Some(ByAddress { load_address: a }))),
        ],
        vec(text(), 0..3),
    )
        .prop_map(
            |(identifier, (by_name, by_address), symbol_names)| BreakpointInfo {
                identifier,
                by_name,
                by_address,
                symbol_names,
            },
        )
}

fn actions() -> impl Strategy<Value = Actions> {
    (
        text(),
        text(),
        any::<i64>(),
        vec(breakpoint(), 0..3),
        proptest::option::of((text(), text(), text(), any::<bool>())),
    )
        .prop_map(
            |(plugin_name, session_name, identifier, breakpoints, ci)| Actions {
                plugin_name,
                session_name,
                identifier,
                breakpoints,
                connect_info: ci.map(|(connect_url, platform_name, triple, synchronous)| {
                    ConnectInfo {
                        connect_url,
                        platform_name,
                        triple,
                        synchronous,
                    }
                }),
            },
        )
}

/// JSON that is often a valid hit on the hook breakpoint, sometimes not.
fn hit_json() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..64),
        (
            prop_oneof![Just("amd-gpu".to_string()), text()],
            prop_oneof![Just(1i64), any::<i64>()],
            proptest::option::of(any::<u64>()),
        )
            .prop_map(|(plugin, id, value)| {
                serde_json::to_vec(&serde_json::json!({
                    "plugin_name": plugin,
                    "breakpoint": {"identifier": id, "by_name": {"function_name": "hook", "shlib": null},
                                   "by_address": null, "symbol_names": ["hook"]},
                    "symbol_values": [{"name": "hook", "value": value}],
                }))
                .unwrap()
            }),
    ]
}

fn id_part(v: u64) -> IdPart {
    if v == 0 {
        IdPart::Any
    } else {
        IdPart::Id(v)
    }
}

/// Linux signal → gdb's wire number, written from gdb's own table
/// (gdb/include/gdb/signals.def, and gdbsupport's host_signal_to_gdb for
/// the real-time range), not from the stub's mapping.
fn gdb_signal_oracle(linux: i32) -> u8 {
    const UNKNOWN: u8 = 143;
    match linux {
        0 => 0,
        1 => 1,                               // HUP
        2 => 2,                               // INT
        3 => 3,                               // QUIT
        4 => 4,                               // ILL
        5 => 5,                               // TRAP
        6 => 6,                               // ABRT
        7 => 10,                              // BUS
        8 => 8,                               // FPE
        9 => 9,                               // KILL
        10 => 30,                             // USR1
        11 => 11,                             // SEGV
        12 => 31,                             // USR2
        13 => 13,                             // PIPE
        14 => 14,                             // ALRM
        15 => 15,                             // TERM
        17 => 20,                             // CHLD
        18 => 19,                             // CONT
        19 => 17,                             // STOP
        20 => 18,                             // TSTP
        21 => 21,                             // TTIN
        22 => 22,                             // TTOU
        23 => 16,                             // URG
        24 => 24,                             // XCPU
        25 => 25,                             // XFSZ
        26 => 26,                             // VTALRM
        27 => 27,                             // PROF
        28 => 28,                             // WINCH
        29 => 23,                             // IO
        30 => 32,                             // PWR
        31 => 12,                             // SYS
        32 => 77,                             // REALTIME_32
        33..=63 => (45 + (linux - 33)) as u8, // REALTIME_33..63
        64 => 78,                             // REALTIME_64
        _ => UNKNOWN, // STKFLT (16) has no gdb number; nor has anything past 64
    }
}

/// Expand gdb RSP run-length encoding (`X*c`: `c - 29` more copies of
/// `X`), independently of the stub's codec.
fn rle_expand(body: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'*' && i + 1 < body.len() {
            let last = *out.last().expect("a run follows a byte");
            for _ in 0..(body[i + 1] - 29) {
                out.push(last);
            }
            i += 2;
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

/// Undo gdb RSP binary escapes (`}` then the byte XOR 0x20).
fn unescape(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut it = body.iter();
    while let Some(&b) = it.next() {
        match b {
            b'}' => out.push(it.next().map_or(b'}', |n| n ^ 0x20)),
            b => out.push(b),
        }
    }
    out
}

fn stop_kind() -> impl Strategy<Value = StopKind> {
    prop_oneof![
        Just(StopKind::Signal),
        Just(StopKind::SwBreak),
        Just(StopKind::HwBreak),
        any::<u64>().prop_map(|addr| StopKind::Watch { addr }),
        any::<u64>().prop_map(|addr| StopKind::ReadWatch { addr }),
        any::<u64>().prop_map(|addr| StopKind::AccessWatch { addr }),
        Just(StopKind::Step),
        Just(StopKind::Interrupt),
        (any::<u32>(), any::<u64>()).prop_map(|(child_pid, child_tid)| StopKind::Fork {
            child_pid,
            child_tid
        }),
        (any::<u32>(), any::<u64>()).prop_map(|(child_pid, child_tid)| StopKind::VFork {
            child_pid,
            child_tid
        }),
        Just(StopKind::VForkDone),
        any::<String>().prop_map(|path| StopKind::Exec { path }),
        Just(StopKind::Initial),
    ]
}

fn stop_event() -> impl Strategy<Value = StopEvent> {
    prop_oneof![
        (any::<u32>(), any::<u64>(), 0i32..80, stop_kind()).prop_map(|(pid, tid, signal, kind)| {
            StopEvent::Stopped {
                pid,
                tid,
                signal,
                kind,
            }
        }),
        (any::<u32>(), any::<i32>()).prop_map(|(pid, code)| StopEvent::Exited { pid, code }),
        (any::<u32>(), 0i32..80).prop_map(|(pid, signal)| StopEvent::Terminated { pid, signal }),
    ]
}

fn options() -> impl Strategy<Value = StopReplyOptions> {
    vec(any::<bool>(), 11).prop_map(|b| StopReplyOptions {
        multiprocess: b[0],
        native_signals: b[1],
        swbreak: b[2],
        hwbreak: b[3],
        fork_events: b[4],
        vfork_events: b[5],
        exec_events: b[6],
        list_threads: b[7],
        interrupt_as_sigint: b[8],
        stop_infos: if b[9] {
            stub::packet::stop_reply::StopInfos::AllThreads
        } else {
            stub::packet::stop_reply::StopInfos::Off
        },
        omit_thread_pcs: b[10],
        // gdbserver's --disable-packet switches: off here.
        no_t: false,
        no_thread: false,
    })
}

fn snapshot() -> impl Strategy<Value = StopSnapshot> {
    (
        stop_event(),
        vec((any::<u32>(), vec(any::<u8>(), 0..9)), 0..4),
        vec(
            (any::<u64>(), any::<u64>()).prop_map(|(tid, pc)| ThreadSnapshot { tid, pc }),
            0..4,
        ),
        proptest::option::of(text()),
        proptest::option::of(any::<u32>()),
        proptest::collection::vec(
            (any::<u64>(), proptest::collection::vec(any::<u8>(), 0..24)),
            0..3,
        ),
    )
        .prop_map(
            |(event, expedited, threads, thread_name, core, memory)| StopSnapshot {
                event,
                expedited,
                threads,
                thread_name,
                core,
                memory,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_never_panics(p in prop_oneof![vec(any::<u8>(), 0..96), command_payload()]) {
        let _ = parse(&p);
    }

    #[test]
    fn framed_payload_reaches_parser_unchanged(p in command_payload(), rle in any::<bool>()) {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        f.push(&frame(&p, rle));
        // The server side does not undo RLE (clients never send it), so
        // only a non-RLE frame must come back verbatim.
        match f.next_event() {
            // A plain frame comes back verbatim.
            Some(WireEvent::Packet(got)) if !rle => prop_assert_eq!(got, p),
            // An RLE frame (runs expanded, then escapes undone, gives the
            // payload back) comes out of the framer with its escapes undone
            // and its runs kept: the server does not undo RLE (clients
            // never send it).
            Some(WireEvent::Packet(got)) => {
                let framed = frame(&p, rle);
                let body = framed
                    .iter()
                    .position(|b| *b == b'$')
                    .zip(framed.iter().rposition(|b| *b == b'#'))
                    .and_then(|(a, b)| framed.get(a + 1..b))
                    .expect("a frame");
                prop_assert_eq!(unescape(&rle_expand(body)), p);
                prop_assert_eq!(got, unescape(body));
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn framer_never_panics_and_stays_bounded(wire in vec(any::<u8>(), 0..512), max in 1usize..64) {
        let mut f = Framer::new(max);
        f.push(&wire);
        while let Some(ev) = f.next_event() {
            if let WireEvent::Packet(p) | WireEvent::Notification(p) = ev {
                prop_assert!(p.len() <= max);
            }
        }
        prop_assert!(f.buffered_bytes() <= max + 2 * wire.len() + 1024);
    }

    #[test]
    fn accel_hit_parse_never_panics(raw in prop_oneof![vec(any::<u8>(), 0..128), hit_json()]) {
        if let Ok(hit) = serde_json::from_slice::<BreakpointHit>(&raw) {
            let back: BreakpointInfo = serde_json::from_slice(&accel::to_json(&hit.breakpoint)).unwrap();
            prop_assert_eq!(back, hit.breakpoint);
        }
        let _ = serde_json::from_slice::<Vec<Actions>>(&raw);
    }

    #[test]
    fn accel_actions_roundtrip_through_client(list in vec(actions(), 0..3), rle in any::<bool>()) {
        let json = accel::to_json(&list);
        let back: Vec<Actions> = serde_json::from_slice(&json).unwrap();
        prop_assert_eq!(&back, &list);
        let seen = protocol_tests::reply::parse_accelerator_actions(&client_raw(&json, rle))
            .map_err(|e| TestCaseError::fail(format!("client rejects {}: {e}", String::from_utf8_lossy(&json))))?;
        prop_assert_eq!(seen.len(), list.len());
        for (a, s) in list.iter().zip(&seen) {
            prop_assert_eq!(&a.plugin_name, &s.plugin_name);
            prop_assert_eq!(&a.session_name, &s.session_name);
            prop_assert_eq!(a.identifier, s.identifier);
            prop_assert_eq!(a.breakpoints.len(), s.breakpoints.len());
            for (b, c) in a.breakpoints.iter().zip(&s.breakpoints) {
                prop_assert_eq!(b.identifier, c.identifier);
                prop_assert_eq!(&b.symbol_names, &c.symbol_names);
                prop_assert_eq!(b.by_name.as_ref().map(|n| &n.function_name), c.function_name.as_ref());
                prop_assert_eq!(b.by_name.as_ref().and_then(|n| n.shlib.as_ref()), c.shlib.as_ref());
                prop_assert_eq!(b.by_address.as_ref().map(|a| a.load_address), c.load_address);
            }
            prop_assert_eq!(a.connect_info.is_some(), s.connect_info.is_some());
            if let (Some(x), Some(y)) = (&a.connect_info, &s.connect_info) {
                prop_assert_eq!(&x.connect_url, &y.connect_url);
                prop_assert_eq!(&x.triple, &y.triple);
                prop_assert_eq!(x.synchronous, y.synchronous);
            }
        }
    }

    #[test]
    fn session_accel_hit_answers_once(json in hit_json(), with_mux in any::<bool>()) {
        let mut s = Session::new(1, Default::default());
        if with_mux {
            s = s.with_mux(Rc::new(RefCell::new(Mux::new(None, "hook".into(), true, true))));
        }
        let mut payload = b"jAcceleratorPluginBreakpointHit:".to_vec();
        payload.extend_from_slice(&json);
        prop_assert_eq!(s.on_input(&frame(&payload, false)), SessionControl::Continue);
        let out = std::mem::take(s.pending_output());
        let replies = session_packets(&out);
        prop_assert_eq!(replies.len(), 1);
        let hook = serde_json::from_slice::<BreakpointHit>(&json)
            .is_ok_and(|h| h.plugin_name == accel::PLUGIN_NAME && h.breakpoint.identifier == 1);
        if with_mux && hook {
            let v: serde_json::Value = serde_json::from_slice(&replies[0]).unwrap();
            prop_assert_eq!(&v["auto_resume_native"], true);
        } else {
            prop_assert!(replies[0].starts_with(b"E"), "{:?}", replies[0]);
        }
    }

    #[test]
    fn session_input_never_panics_and_output_is_bounded(
        payloads in vec(command_payload(), 0..8),
        noise in vec(any::<u8>(), 0..64),
        cut in any::<usize>(),
        with_mux in any::<bool>(),
    ) {
        let mut wire = Vec::new();
        for p in payloads.iter().filter(|p| !touches_host(p)) {
            wire.extend(frame(p, false));
        }
        // Noise that frames to something host-touching is skipped too.
        let mut shadow = Framer::new(MAX_PACKET);
        shadow.push(&noise);
        let mut noise_ok = true;
        while let Some(ev) = shadow.next_event() {
            if let WireEvent::Packet(p) = ev {
                noise_ok &= !touches_host(&p);
            }
        }
        if noise_ok {
            wire.extend(&noise);
        }
        let cut = cut % (wire.len() + 1);
        let mut s = Session::new(1, Default::default());
        if with_mux {
            s = s.with_mux(Rc::new(RefCell::new(Mux::new(None, "hook".into(), true, true))));
        }
        for chunk in [&wire[..cut], &wire[cut..]] {
            let control = s.on_input(chunk);
            let out = std::mem::take(s.pending_output());
            prop_assert!(out.len() <= 16 * 1024 * (chunk.len() + 1), "{} bytes", out.len());
            session_packets(&out);
            if control != SessionControl::Continue {
                break;
            }
        }
        prop_assert!(!s.has_process());
    }

    #[test]
    fn stop_reply_roundtrip_through_client(snap in snapshot(), o in options()) {
        let raw = stop_reply::build(&snap, &o);
        let parsed = StopReply::parse(&client_raw(&raw, true))
            .map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&raw))))?;
        let wire_sig = |s: i32| if o.native_signals { u8::try_from(s).unwrap_or(0) } else { gdb_signal_oracle(s) };
        match (&snap.event, parsed) {
            (StopEvent::Exited { pid, code }, StopReply::Exited { code: c, pid: p }) => {
                prop_assert_eq!(c, (*code & 0xff) as u8);
                prop_assert_eq!(p, o.multiprocess.then_some(u64::from(*pid)));
            }
            (StopEvent::Terminated { pid, signal }, StopReply::Terminated { sig, pid: p }) => {
                prop_assert_eq!(sig, wire_sig(*signal));
                prop_assert_eq!(p, o.multiprocess.then_some(u64::from(*pid)));
            }
            (StopEvent::Stopped { pid, tid, kind, signal }, StopReply::Signal(s)) => {
                // The protocol's rules for the reported signal: an
                // interrupt is SIGINT (or SIGSTOP), the initial stop of an
                // lldb client is SIGSTOP whatever the kernel's (lldb-server).
                let reported = match kind {
                    StopKind::Interrupt if o.interrupt_as_sigint => libc::SIGINT,
                    StopKind::Interrupt => libc::SIGSTOP,
                    StopKind::Initial if o.list_threads => libc::SIGSTOP,
                    _ => *signal,
                };
                prop_assert_eq!(s.signo, wire_sig(reported));
                let t = s.thread.unwrap();
                prop_assert_eq!(t.tid, id_part(*tid));
                prop_assert_eq!(t.pid, o.multiprocess.then(|| id_part(u64::from(*pid))));
                // Register numbers are sent in full hex (past 0xff for the
                // GPU); later duplicates win, as in the reply.
                let mut expected = std::collections::BTreeMap::new();
                for (regnum, bytes) in &snap.expedited {
                    expected.insert(*regnum, stub::wire::hex::encode_to_string(bytes));
                }
                for (regnum, hex) in &expected {
                    prop_assert_eq!(s.registers.get(regnum), Some(hex));
                }
                if o.list_threads {
                    let tids: Vec<IdPart> = snap.threads.iter().map(|t| id_part(t.tid)).collect();
                    prop_assert_eq!(s.threads.iter().map(|t| t.tid).collect::<Vec<_>>(), tids);
                    let pcs: Vec<u64> = snap.threads.iter().map(|t| t.pc).collect();
                    prop_assert_eq!(&s.thread_pcs, &pcs);
                }
                match kind {
                    StopKind::SwBreak => prop_assert_eq!(s.kinds.contains(&protocol_tests::reply::StopKind::SwBreak), o.swbreak),
                    StopKind::Watch { addr } | StopKind::ReadWatch { addr } | StopKind::AccessWatch { addr } => {
                        prop_assert_eq!(s.watch_addr(), Some(*addr));
                    }
                    StopKind::Exec { path } if o.exec_events => {
                        prop_assert!(s.kinds.contains(&protocol_tests::reply::StopKind::Exec(path.clone())));
                    }
                    _ => {}
                }
            }
            (e, p) => prop_assert!(false, "{:?} parsed as {:?}", e, p),
        }
    }

    #[test]
    fn xfer_chunk_roundtrip_through_client(
        doc in vec(any::<u8>(), 0..300),
        offset in 0u64..320,
        length in 0u64..320,
        rle in any::<bool>(),
    ) {
        let chunk = XferChunk::parse(&client_raw(&xfer_chunk(&doc, offset, length), rle)).unwrap();
        let start = (offset as usize).min(doc.len());
        let end = start.saturating_add(length as usize).min(doc.len());
        prop_assert_eq!(&chunk.data[..], &doc[start..end]);
        prop_assert_eq!(chunk.more, end < doc.len());
    }

    #[test]
    fn thread_id_roundtrip_through_client(pid in any::<u32>(), tid in any::<u64>(), mp in any::<bool>()) {
        let mut out = Vec::new();
        stop_reply::thread_id(&mut out, pid, tid, mp);
        let t = protocol_tests::reply::ThreadId::parse(&out).unwrap();
        prop_assert_eq!(t.tid, id_part(tid));
        prop_assert_eq!(t.pid, mp.then(|| id_part(u64::from(pid))));
    }
}

/// `ByAddress::load_address`: lldb 23.1's `toJSON` casts it to int64, so a
/// hit echoing a by-address breakpoint above 2^63 arrives negative; both
/// forms must be accepted (found by this suite; fixed in mux/accel.rs).
#[test]
fn accel_hit_accepts_signed_load_address() {
    let hit = br#"{"plugin_name":"amd-gpu","breakpoint":{"identifier":2,"by_name":null,"by_address":{"load_address":-8},"symbol_names":[]},"symbol_values":[]}"#;
    let hit: BreakpointHit = serde_json::from_slice(hit).unwrap();
    assert_eq!(
        hit.breakpoint.by_address.map(|a| a.load_address),
        Some(u64::MAX - 7)
    );
}
