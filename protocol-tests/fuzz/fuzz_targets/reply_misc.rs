//! The small reply parsers on arbitrary bytes: `qSupported` features,
//! `qXfer` chunks, thread ids and `qfThreadInfo` lists, `key:value;`
//! replies, memory regions, `g` register blocks, error replies, `m` hex.
//!
//! Checks: no panic; each parsed value re-encodes to a form that parses
//! back to the same value (ids through `Display`, chunks through
//! `framing::escape`, key/values and register blocks through their wire
//! syntax); hex encode/decode round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::framing;
use protocol_tests::reply::classify;
use protocol_tests::reply::decode_hex;
use protocol_tests::reply::encode_hex;
use protocol_tests::reply::parse_memory;
use protocol_tests::reply::ErrorReply;
use protocol_tests::reply::Features;
use protocol_tests::reply::KeyValues;
use protocol_tests::reply::MemoryRegion;
use protocol_tests::reply::RegisterBlock;
use protocol_tests::reply::ThreadId;
use protocol_tests::reply::ThreadListChunk;
use protocol_tests::reply::XferChunk;

fuzz_target!(|data: &[u8]| {
    let _ = classify(data);
    let _ = ErrorReply::parse(data).map(|e| e.to_string());

    if let Ok(m) = parse_memory(data) {
        assert_eq!(encode_hex(&m).as_bytes(), data.to_ascii_lowercase());
    }
    assert_eq!(
        decode_hex(encode_hex(data).as_bytes()).as_deref(),
        Some(data)
    );

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
        assert_eq!(ThreadId::parse(t.to_string().as_bytes()), Ok(t));
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
});
