//! Properties checked by both the cargo-fuzz targets (`protocol-tests/fuzz`)
//! and the proptests (`tests/props_parsers.rs`).
//!
//! Each function takes an input (arbitrary bytes from the fuzzer, or a
//! generated value from a proptest strategy), runs the parsers on it and
//! panics when a property does not hold: a parser panicked, or a value it
//! accepted does not re-encode to a form that parses back to itself.
//! Not part of the suite's API.

use serde_json::json;
use serde_json::Value;

use crate::framing;
use crate::framing::Frame;
use crate::framing::FrameDecoder;
use crate::reply::classify;
use crate::reply::decode_hex;
use crate::reply::encode_hex;
use crate::reply::parse_accelerator_actions;
use crate::reply::parse_json_reply;
use crate::reply::parse_memory;
use crate::reply::parse_threads_info;
use crate::reply::AcceleratorActions;
use crate::reply::ErrorReply;
use crate::reply::Features;
use crate::reply::KeyValues;
use crate::reply::MemoryRegion;
use crate::reply::RegisterBlock;
use crate::reply::StopReply;
use crate::reply::ThreadId;
use crate::reply::ThreadListChunk;
use crate::reply::XferChunk;

/// A thread id parses back from its `Display` form.
pub fn thread_id_roundtrip(t: &ThreadId) {
    assert_eq!(ThreadId::parse(t.to_string().as_bytes()).as_ref(), Ok(t));
}

/// `decode_hex(encode_hex(data)) == data`.
pub fn hex_roundtrip(data: &[u8]) {
    assert_eq!(
        decode_hex(encode_hex(data).as_bytes()).as_deref(),
        Some(data)
    );
}

/// `StopReply::parse` and every accessor on `data`: no panic; a parsed
/// reply's thread ids round trip through `Display`; parsing is
/// deterministic.
pub fn stop_reply(data: &[u8]) {
    let Ok(r) = StopReply::parse(data) else {
        return;
    };
    match &r {
        StopReply::Signal(s) => {
            assert!(r.signal().is_some());
            for &n in s.registers.keys() {
                let _ = s.register_u64(n);
            }
            let _ = s.is_swbreak();
            let _ = s.watch_addr();
            s.thread
                .iter()
                .chain(&s.threads)
                .for_each(thread_id_roundtrip);
        }
        StopReply::ThreadExited { thread, .. } => thread_id_roundtrip(thread),
        _ => assert!(r.signal().is_none()),
    }
    // A reply that parsed is deterministic.
    assert_eq!(StopReply::parse(data), Ok(r));
}

/// The small reply parsers on `data` (`qSupported` features, `qXfer`
/// chunks, thread ids and lists, `key:value;` replies, memory regions, `g`
/// register blocks, error replies, `m` hex): no panic; each parsed value
/// re-encodes to a form that parses back to the same value; hex round trip.
pub fn reply_misc(data: &[u8]) {
    let _ = classify(data);
    let _ = ErrorReply::parse(data).map(|e| e.to_string());

    if let Ok(m) = parse_memory(data) {
        assert_eq!(encode_hex(&m).as_bytes(), data.to_ascii_lowercase());
    }
    hex_roundtrip(data);

    if let Ok(f) = Features::parse(data) {
        assert!(f.order.len() >= f.map.len());
        for name in &f.order {
            assert!(f.map.contains_key(name));
            let _ = f.supports(name);
            let _ = f.value(name);
        }
        let _ = f.packet_size();
    }

    if let Ok(x) = XferChunk::parse(data) {
        let mut again = vec![if x.more { b'm' } else { b'l' }];
        again.extend(framing::escape(&x.data));
        assert_eq!(XferChunk::parse(&again), Ok(x));
    }

    if let Ok(t) = ThreadId::parse(data) {
        thread_id_roundtrip(&t);
    }
    if let Ok(list) = ThreadListChunk::parse(data) {
        if !list.last {
            let text: Vec<String> = list.ids.iter().map(ToString::to_string).collect();
            let again = format!("m{}", text.join(","));
            assert_eq!(ThreadListChunk::parse(again.as_bytes()), Ok(list));
        }
    }

    if let Ok(kv) = KeyValues::parse(data) {
        // A leading `;` keeps a first key like `E.` or `E01` from reading
        // as an error reply (`;E.:a` is a valid key:value reply).
        let mut again = String::from(";");
        for (k, v) in &kv.pairs {
            again.push_str(&format!("{k}:{v};"));
            let _ = kv.get_hex(k);
            let _ = kv.get_hex_string(k);
        }
        if !kv.pairs.is_empty() {
            assert_eq!(KeyValues::parse(again.as_bytes()), Ok(kv));
        }
    }
    let _ = MemoryRegion::parse(data);

    if let Ok(r) = RegisterBlock::parse(data) {
        let again: String = r
            .bytes
            .iter()
            .map(|b| b.map_or_else(|| "xx".to_string(), |v| format!("{v:02x}")))
            .collect();
        assert_eq!(RegisterBlock::parse(again.as_bytes()), Ok(r.clone()));
        let _ = r.amd64_rip();
        for off in [0, 1, r.bytes.len().saturating_sub(1), usize::MAX - 3] {
            for len in 0..=9 {
                let _ = r.u64_le(off, len);
            }
        }
    }
}

/// `AcceleratorActions` back to JSON (the parser's inverse).
fn accelerator_to_value(a: &AcceleratorActions) -> Value {
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

/// If `raw` parses as accelerator actions, the typed value rebuilt as JSON
/// and escaped parses back to the same value.
pub fn accelerator_actions_roundtrip(raw: &[u8]) {
    if let Ok(list) = parse_accelerator_actions(raw) {
        let v = Value::Array(list.iter().map(accelerator_to_value).collect());
        let text = serde_json::to_vec(&v).expect("serialize");
        let again = parse_accelerator_actions(&framing::escape(&text))
            .unwrap_or_else(|e| panic!("rebuilt JSON rejected: {e}"));
        assert_eq!(again, list);
    }
}

/// The JSON reply parsers (`parse_json_reply`, `parse_threads_info`,
/// `parse_accelerator_actions`) on `raw`: no panic; a parsed `jThreadsInfo`
/// keeps every thread's tid; a parsed accelerator reply round trips
/// ([`accelerator_actions_roundtrip`]).
pub fn json_reply(raw: &[u8]) {
    let _ = parse_json_reply(raw);
    if let Ok(threads) = parse_threads_info(raw) {
        let v = parse_json_reply(raw).expect("parsed once");
        let arr = v.as_array().expect("array");
        assert_eq!(arr.len(), threads.len());
        for (t, j) in threads.iter().zip(arr) {
            assert_eq!(j["tid"].as_u64(), Some(t.tid));
        }
    }
    accelerator_actions_roundtrip(raw);
}

/// [`json_reply`] on `data` raw and as it travels (`}`-escaped).
pub fn json_replies(data: &[u8]) {
    json_reply(data);
    json_reply(&framing::escape(data));
}

/// Feeds `wire` to a [`FrameDecoder`] in reads of `sizes` bytes (cycled; a
/// 0 reads 1; no sizes: all at once), decoding every frame's payload on the
/// way and checking the decoder never buffers more than it was fed. Returns
/// the frames and what is left buffered.
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
            if let Frame::Packet { raw, .. } | Frame::Notification { raw, .. } = &f {
                let _ = framing::rle_decode(raw).map(|r| framing::unescape(&r));
            }
            frames.push(f);
        }
        assert!(d.buffered() <= wire.len());
    }
    (frames, d.buffered())
}

/// The frames decoded from `wire` do not depend on how reads split it
/// (`sizes` as in `decode_split`), and the decoder never buffers more than
/// it was fed.
pub fn frame_decoder_split_invariance(wire: &[u8], sizes: &[u8]) {
    assert_eq!(decode_split(wire, &[]), decode_split(wire, sizes));
}

/// Escaping `payload` leaves no `#` or `$`, unescapes back to it and is left
/// alone by RLE decoding; framed as a packet (or a notification) it decodes
/// to one frame with a good checksum whose payload unescapes to `payload`,
/// with nothing left buffered.
pub fn framing_roundtrip(payload: &[u8], notification: bool) {
    let esc = framing::escape(payload);
    assert!(!esc.contains(&b'#') && !esc.contains(&b'$'));
    assert_eq!(framing::unescape(&esc).as_deref(), Ok(payload));
    // Escaped data has no bare `*`, so RLE decoding leaves it alone.
    assert_eq!(framing::rle_decode(&esc).as_deref(), Ok(&esc[..]));
    let framed = if notification {
        framing::encode_notification(&esc)
    } else {
        framing::encode_packet(&esc)
    };
    let mut d = FrameDecoder::new();
    d.push(&framed);
    let raw = match (notification, d.next_frame()) {
        (false, Some(Frame::Packet { raw, checksum_ok })) => {
            assert!(checksum_ok);
            raw
        }
        (true, Some(Frame::Notification { raw, checksum_ok })) => {
            assert!(checksum_ok);
            raw
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(framing::unescape(&raw).as_deref(), Ok(payload));
    assert_eq!(d.next_frame(), None);
    assert_eq!(d.buffered(), 0);
}

/// The frame decoder fuzz target's input: a first byte `n`, then `n % 16`
/// read sizes, then the wire bytes. Checks
/// [`frame_decoder_split_invariance`], that `rle_decode` and `unescape` do
/// not panic on the wire bytes, and [`framing_roundtrip`] of them as a
/// packet and as a notification.
pub fn frame_decoder(data: &[u8]) {
    let Some((&nsizes, rest)) = data.split_first() else {
        return;
    };
    let (sizes, wire) = rest.split_at(usize::from(nsizes % 16).min(rest.len()));
    frame_decoder_split_invariance(wire, sizes);

    let _ = framing::rle_decode(wire);
    let _ = framing::unescape(wire);
    for notification in [false, true] {
        framing_roundtrip(wire, notification);
    }
}
