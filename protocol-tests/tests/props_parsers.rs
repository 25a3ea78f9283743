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
//!
//! The properties themselves live in `protocol_tests::properties`, which
//! the fuzz targets call too; these tests feed them generated inputs.
#![allow(clippy::unwrap_used, clippy::panic)]

use proptest::collection::vec;
use proptest::prelude::*;
use protocol_tests::framing;
use protocol_tests::properties;
use protocol_tests::reply::parse_threads_info;
use protocol_tests::reply::ThreadId;
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stop_reply_never_panics(data in prop_oneof![reply_like(), stop_like()]) {
        properties::stop_reply(&data);
    }

    #[test]
    fn small_parsers_never_panic_and_roundtrip(data in reply_like()) {
        properties::reply_misc(&data);
    }

    #[test]
    fn hex_roundtrip(data in vec(any::<u8>(), 0..64)) {
        properties::hex_roundtrip(&data);
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
        properties::thread_id_roundtrip(&t);
    }

    #[test]
    fn json_replies_never_panic(data in vec(any::<u8>(), 0..96), escape in any::<bool>()) {
        let raw = if escape { framing::escape(&data) } else { data };
        properties::json_reply(&raw);
    }

    #[test]
    fn accelerator_actions_roundtrip(list in vec(accel_actions(), 0..3)) {
        let raw = framing::escape(&serde_json::to_vec(&Value::Array(list)).unwrap());
        // Schema violations (both/neither by_name and by_address) are
        // rejected; whatever is accepted rebuilds to the same value.
        properties::accelerator_actions_roundtrip(&raw);
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
        properties::frame_decoder_split_invariance(&wire, &sizes);
    }

    #[test]
    fn framing_roundtrip(payload in vec(any::<u8>(), 0..256), notification in any::<bool>()) {
        properties::framing_roundtrip(&payload, notification);
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
