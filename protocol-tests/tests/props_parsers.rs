//! Bounded property tests for the reply parsers and the frame decoder: the
//! same properties the cargo-fuzz targets in `protocol-tests/fuzz` check,
//! at CI size (256 cases per property).
//!
//! - no parser panics, whatever the server sends;
//! - what a parser accepts re-encodes (ids through `Display`, `qXfer` data
//!   through `framing::escape`, key/values, register blocks, accelerator
//!   JSON) to a form that parses back to the same value;
//! - the frame decoder's output does not depend on how reads split the
//!   stream, its buffer never exceeds what it was fed, and framing,
//!   escaping and run-length decoding round trip.
#![allow(clippy::unwrap_used, clippy::panic)]

use proptest::collection::vec;
use proptest::prelude::*;
use protocol_tests::framing;
use protocol_tests::framing::Frame;
use protocol_tests::framing::FrameDecoder;
use protocol_tests::reply::classify;
use protocol_tests::reply::decode_hex;
use protocol_tests::reply::encode_hex;
use protocol_tests::reply::parse_accelerator_actions;
use protocol_tests::reply::parse_json_reply;
use protocol_tests::reply::parse_memory;
use protocol_tests::reply::parse_threads_info;
use protocol_tests::reply::AcceleratorActions;
use protocol_tests::reply::ErrorReply;
use protocol_tests::reply::Features;
use protocol_tests::reply::KeyValues;
use protocol_tests::reply::MemoryRegion;
use protocol_tests::reply::RegisterBlock;
use protocol_tests::reply::StopReply;
use protocol_tests::reply::ThreadId;
use protocol_tests::reply::ThreadListChunk;
use protocol_tests::reply::XferChunk;
use serde_json::json;
use serde_json::Value;

/// Bytes that are mostly reply-shaped: a kind letter, then hex digits and
/// the separators the grammars use, with some arbitrary bytes.
fn reply_like() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        6 => proptest::sample::select(b"0123456789abcdefABCDEFx;:,.p-+=?".to_vec()),
        2 => proptest::sample::select(b"TSWXONwEmlq".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![vec(any::<u8>(), 0..96), vec(byte, 0..96)]
}

fn stop_like() -> impl Strategy<Value = Vec<u8>> {
    let key = proptest::sample::select(vec![
        "thread:p1.2",
        "thread:-1",
        "core:3",
        "name:x",
        "reason:signal",
        "description:3120",
        "jstopinfo:5b5d",
        "threads:1,2",
        "thread-pcs:10,20",
        "swbreak:",
        "hwbreak:",
        "watch:1000",
        "rwatch:zz",
        "awatch:",
        "fork:p2.2",
        "vfork:p0.0",
        "vforkdone:",
        "exec:2f62",
        "create:",
        "library:",
        "06:0100",
        "10:xx",
        "ffffffffff:00",
        "foo:bar",
        "x",
    ]);
    (
        proptest::sample::select(vec!["T", "S", "W", "X", "O", "N", "w", "E"]),
        "[0-9a-fA-F]{0,3}",
        vec(key, 0..6),
    )
        .prop_map(|(k, sig, keys)| {
            let mut s = format!("{k}{sig}");
            for f in keys {
                s.push_str(f);
                s.push(';');
            }
            s.into_bytes()
        })
}

fn json_text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z_]{0,8}", "[}#$*\"\\\\{}:;a-z]{0,8}", any::<String>()]
}

fn accel_actions() -> impl Strategy<Value = Value> {
    let bp = (
        any::<i64>(),
        prop_oneof![
            (json_text(), proptest::option::of(json_text()))
                .prop_map(|(f, s)| (json!({"function_name": f, "shlib": s}), Value::Null)),
            any::<u64>().prop_map(|a| (Value::Null, json!({"load_address": a}))),
            any::<i64>().prop_map(|a| (Value::Null, json!({"load_address": a}))),
            Just((Value::Null, Value::Null)),
        ],
        vec(json_text(), 0..3),
    )
        .prop_map(|(id, (by_name, by_address), names)| {
            json!({"identifier": id, "by_name": by_name, "by_address": by_address, "symbol_names": names})
        });
    let ci = proptest::option::of(
        (
            json_text(),
            json_text(),
            any::<bool>(),
            proptest::option::of(json_text()),
        )
            .prop_map(|(url, triple, sync, exe)| {
                json!({"connect_url": url, "platform_name": "host", "triple": triple,
                       "synchronous": sync, "exe_path": exe})
            }),
    );
    (json_text(), any::<i64>(), vec(bp, 0..3), ci).prop_map(|(name, id, bps, ci)| {
        let mut v = json!({"plugin_name": name, "session_name": "gpu", "identifier": id, "breakpoints": bps});
        if let Some(c) = ci {
            v["connect_info"] = c;
        }
        v
    })
}

fn threads_info() -> impl Strategy<Value = Value> {
    vec(
        (
            prop_oneof![any::<u64>().prop_map(Value::from), Just(Value::from(-1)), Just(Value::Null)],
            proptest::option::of(json_text()),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(|(tid, name, signal)| {
                json!({"tid": tid, "name": name, "signal": signal, "registers": {"16": "00ff", "x": "1"}})
            }),
        0..4,
    )
    .prop_map(Value::Array)
}

/// `AcceleratorActions` back to JSON (the parser's inverse).
fn to_value(a: &AcceleratorActions) -> Value {
    let bps: Vec<Value> = a
        .breakpoints
        .iter()
        .map(|b| {
            json!({
                "identifier": b.identifier,
                "by_name": b.function_name.as_ref().map(|f| json!({"function_name": f, "shlib": b.shlib})),
                "by_address": b.load_address.map(|l| json!({"load_address": l})),
                "symbol_names": b.symbol_names,
            })
        })
        .collect();
    let mut v = json!({
        "plugin_name": a.plugin_name,
        "session_name": a.session_name,
        "identifier": a.identifier,
        "breakpoints": bps,
    });
    if let Some(c) = &a.connect_info {
        v["connect_info"] = json!({
            "connect_url": c.connect_url,
            "platform_name": c.platform_name,
            "triple": c.triple,
            "synchronous": c.synchronous,
            "exe_path": c.exe_path,
        });
    }
    v
}

fn decode_split(wire: &[u8], sizes: &[u8]) -> (Vec<Frame>, usize) {
    let mut d = FrameDecoder::new();
    let mut frames = Vec::new();
    let mut rest = wire;
    let mut it = sizes.iter().cycle();
    while !rest.is_empty() {
        let n = it.next().map_or(rest.len(), |&s| usize::from(s).max(1));
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        d.push(chunk);
        while let Some(f) = d.next_frame() {
            frames.push(f);
        }
        assert!(d.buffered() <= wire.len());
    }
    (frames, d.buffered())
}

/// Every small parser on `data`, with the round trips the fuzz target
/// `reply_misc` checks.
fn check_misc(data: &[u8]) -> Result<(), TestCaseError> {
    let _ = classify(data);
    let _ = ErrorReply::parse(data).map(|e| e.to_string());
    if let Ok(m) = parse_memory(data) {
        prop_assert_eq!(encode_hex(&m).into_bytes(), data.to_ascii_lowercase());
    }
    if let Ok(f) = Features::parse(data) {
        for name in &f.order {
            prop_assert!(f.map.contains_key(name));
        }
        let _ = f.packet_size();
    }
    if let Ok(x) = XferChunk::parse(data) {
        let mut again = vec![if x.more { b'm' } else { b'l' }];
        again.extend(framing::escape(&x.data));
        prop_assert_eq!(XferChunk::parse(&again), Ok(x));
    }
    if let Ok(t) = ThreadId::parse(data) {
        prop_assert_eq!(ThreadId::parse(t.to_string().as_bytes()), Ok(t));
    }
    if let Ok(list) = ThreadListChunk::parse(data) {
        if !list.last {
            let ids: Vec<String> = list.ids.iter().map(ToString::to_string).collect();
            prop_assert_eq!(
                ThreadListChunk::parse(format!("m{}", ids.join(",")).as_bytes()),
                Ok(list)
            );
        }
    }
    if let Ok(kv) = KeyValues::parse(data) {
        let mut again = String::from(";");
        for (k, v) in &kv.pairs {
            again.push_str(&format!("{k}:{v};"));
        }
        if !kv.pairs.is_empty() {
            prop_assert_eq!(KeyValues::parse(again.as_bytes()), Ok(kv));
        }
    }
    let _ = MemoryRegion::parse(data);
    if let Ok(r) = RegisterBlock::parse(data) {
        let again: String = r
            .bytes
            .iter()
            .map(|b| b.map_or_else(|| "xx".to_string(), |v| format!("{v:02x}")))
            .collect();
        prop_assert_eq!(RegisterBlock::parse(again.as_bytes()), Ok(r.clone()));
        let _ = r.amd64_rip();
        let _ = r.u64_le(usize::MAX - 3, 8);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stop_reply_never_panics(data in prop_oneof![reply_like(), stop_like()]) {
        if let Ok(r) = StopReply::parse(&data) {
            if let Some(s) = r.signal() {
                for &n in s.registers.keys() {
                    let _ = s.register_u64(n);
                }
                let _ = s.watch_addr();
                for t in s.thread.iter().chain(&s.threads) {
                    prop_assert_eq!(ThreadId::parse(t.to_string().as_bytes()), Ok(*t));
                }
            }
            prop_assert_eq!(StopReply::parse(&data), Ok(r));
        }
    }

    #[test]
    fn small_parsers_never_panic_and_roundtrip(data in reply_like()) {
        check_misc(&data)?;
    }

    #[test]
    fn hex_roundtrip(data in vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(decode_hex(encode_hex(&data).as_bytes()), Some(data));
    }

    #[test]
    fn thread_id_display_roundtrip(pid in proptest::option::of(prop_oneof![Just(-1i128), 0i128..1 << 64]),
                                   tid in prop_oneof![Just(-1i128), 0i128..1 << 64]) {
        let part = |v: i128| if v < 0 { "-1".to_string() } else { format!("{v:x}") };
        let text = match pid {
            Some(p) => format!("p{}.{}", part(p), part(tid)),
            None => part(tid),
        };
        let t = ThreadId::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(ThreadId::parse(t.to_string().as_bytes()), Ok(t));
    }

    #[test]
    fn json_replies_never_panic(data in vec(any::<u8>(), 0..96), escape in any::<bool>()) {
        let raw = if escape { framing::escape(&data) } else { data };
        let _ = parse_json_reply(&raw);
        let _ = parse_threads_info(&raw);
        let _ = parse_accelerator_actions(&raw);
    }

    #[test]
    fn accelerator_actions_roundtrip(list in vec(accel_actions(), 0..3)) {
        let raw = framing::escape(&serde_json::to_vec(&Value::Array(list)).unwrap());
        // Schema violations (both/neither by_name and by_address) are
        // rejected; whatever is accepted rebuilds to the same value.
        if let Ok(parsed) = parse_accelerator_actions(&raw) {
            let again = serde_json::to_vec(&Value::Array(parsed.iter().map(to_value).collect())).unwrap();
            prop_assert_eq!(parse_accelerator_actions(&framing::escape(&again)), Ok(parsed));
        }
    }

    #[test]
    fn threads_info_keeps_tids(v in threads_info()) {
        let raw = framing::escape(&serde_json::to_vec(&v).unwrap());
        let all_tids: Option<Vec<u64>> = v.as_array().unwrap().iter().map(|t| t["tid"].as_u64()).collect();
        match (parse_threads_info(&raw), all_tids) {
            (Ok(t), Some(tids)) => prop_assert_eq!(t.iter().map(|t| t.tid).collect::<Vec<_>>(), tids),
            (Err(_), None) => {}
            (r, t) => prop_assert!(false, "{:?} vs {:?}", r, t),
        }
    }

    #[test]
    fn frame_decoder_split_invariant(wire in prop_oneof![
        vec(any::<u8>(), 0..256),
        vec(proptest::sample::select(b"$#%+-}*\x03a0f".to_vec()), 0..256),
    ], sizes in vec(any::<u8>(), 0..8)) {
        prop_assert_eq!(decode_split(&wire, &[]), decode_split(&wire, &sizes));
    }

    #[test]
    fn framing_roundtrip(payload in vec(any::<u8>(), 0..256), notification in any::<bool>()) {
        let esc = framing::escape(&payload);
        prop_assert!(!esc.contains(&b'#') && !esc.contains(&b'$'));
        prop_assert_eq!(framing::unescape(&esc), Ok(payload.clone()));
        prop_assert_eq!(framing::rle_decode(&esc), Ok(esc.clone()));
        let framed = if notification { framing::encode_notification(&esc) } else { framing::encode_packet(&esc) };
        let mut d = FrameDecoder::new();
        d.push(&framed);
        let raw = match d.next_frame() {
            Some(Frame::Packet { raw, checksum_ok: true }) if !notification => raw,
            Some(Frame::Notification { raw, checksum_ok: true }) if notification => raw,
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert_eq!(framing::unescape(&raw), Ok(payload));
        prop_assert_eq!(d.next_frame(), None);
        prop_assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn rle_decode_is_bounded(raw in vec(prop_oneof![any::<u8>(), Just(b'*'), Just(b'}')], 0..128)) {
        // Each two input bytes expand to at most 1 + (255 - 29) output bytes.
        if let Ok(out) = framing::rle_decode(&raw) {
            prop_assert!(out.len() <= raw.len() * 227);
        }
        let _ = framing::unescape(&raw);
    }
}
