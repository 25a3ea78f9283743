//! The JSON reply parsers on arbitrary bytes, raw and as they travel
//! (`}`-escaped): `parse_json_reply`, `parse_threads_info`,
//! `parse_accelerator_actions`.
//!
//! Checks: no panic; a parsed accelerator reply, rebuilt as JSON from its
//! typed value and escaped, parses back to the same value; a parsed
//! `jThreadsInfo` keeps every thread's tid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::framing;
use protocol_tests::reply::parse_accelerator_actions;
use protocol_tests::reply::parse_json_reply;
use protocol_tests::reply::parse_threads_info;
use protocol_tests::reply::AcceleratorActions;
use serde_json::json;
use serde_json::Value;

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

fn check(raw: &[u8]) {
    let _ = parse_json_reply(raw);
    if let Ok(threads) = parse_threads_info(raw) {
        let v = parse_json_reply(raw).expect("parsed once");
        let arr = v.as_array().expect("array");
        assert_eq!(arr.len(), threads.len());
        for (t, j) in threads.iter().zip(arr) {
            assert_eq!(j["tid"].as_u64(), Some(t.tid));
        }
    }
    if let Ok(list) = parse_accelerator_actions(raw) {
        let v = Value::Array(list.iter().map(to_value).collect());
        let text = serde_json::to_vec(&v).expect("serialize");
        let again = parse_accelerator_actions(&framing::escape(&text))
            .unwrap_or_else(|e| panic!("rebuilt JSON rejected: {e}"));
        assert_eq!(again, list);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    check(&framing::escape(data));
});
