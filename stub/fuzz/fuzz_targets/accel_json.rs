//! The lldb accelerator-plugin JSON (`stub::mux::accel`).
//!
//! Three properties, chosen by the first input byte:
//! - arbitrary bytes into `serde_json` parsing of `BreakpointHit` (and of
//!   `Actions`): no panic, and whatever parses re-serializes and parses to
//!   the same value;
//! - a structured `Actions`/`HitResponse` built from the input goes through
//!   `accel::to_json`, the stub's encoder and the independent client stack
//!   (`protocol_tests::framing` + `reply::parse_accelerator_actions`, which
//!   checks lldb 23.1's schema) and comes back equal;
//! - the session path: the bytes as the argument of a framed
//!   `jAcceleratorPluginBreakpointHit:` packet into `Session::on_input`,
//!   with and without a multiplexer. The session must not panic and must
//!   answer with exactly one well-formed packet: an error, or (for a hit on
//!   our hook breakpoint) a `HitResponse`.
#![no_main]

use std::cell::RefCell;
use std::rc::Rc;

use libfuzzer_sys::arbitrary::Result as AResult;
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use protocol_tests::framing::Frame;
use protocol_tests::framing::FrameDecoder;
use stub::mux::accel;
use stub::mux::accel::Actions;
use stub::mux::accel::BreakpointHit;
use stub::mux::accel::BreakpointInfo;
use stub::mux::accel::ByAddress;
use stub::mux::accel::ByName;
use stub::mux::accel::ConnectInfo;
use stub::mux::accel::HitResponse;
use stub::mux::Mux;
use stub::session::Session;
use stub::wire::Encoder;
use stub::wire::Framer;
use stub::wire::WireEvent;

fn bp(u: &mut Unstructured<'_>) -> AResult<BreakpointInfo> {
    // The client requires exactly one of by_name / by_address; the stub
    // only ever sends such breakpoints.
    let by_name = u.arbitrary::<bool>()?;
    Ok(BreakpointInfo {
        identifier: u.arbitrary()?,
        by_name: if by_name {
            Some(ByName {
                function_name: u.arbitrary()?,
                shlib: u.arbitrary()?,
            })
        } else {
            None
        },
        by_address: if by_name {
            None
        } else {
            Some(ByAddress {
                load_address: u.arbitrary()?,
            })
        },
        symbol_names: u.arbitrary()?,
    })
}

fn actions(u: &mut Unstructured<'_>) -> AResult<Actions> {
    let n = u.int_in_range(0..=4)?;
    let mut breakpoints = Vec::with_capacity(n);
    for _ in 0..n {
        breakpoints.push(bp(u)?);
    }
    let connect_info = if u.arbitrary()? {
        Some(ConnectInfo {
            connect_url: u.arbitrary()?,
            platform_name: u.arbitrary()?,
            triple: u.arbitrary()?,
            synchronous: u.arbitrary()?,
        })
    } else {
        None
    };
    Ok(Actions {
        plugin_name: u.arbitrary()?,
        session_name: u.arbitrary()?,
        identifier: u.arbitrary()?,
        breakpoints,
        connect_info,
    })
}

/// The stub's wire form of `payload`, decoded by the independent client.
fn client_roundtrip(payload: &[u8], rle: bool) -> Vec<u8> {
    let mut enc = Encoder::new();
    enc.set_rle(rle);
    let mut wire = Vec::new();
    enc.packet(payload, &mut wire);
    let mut dec = FrameDecoder::new();
    dec.push(&wire);
    let Some(Frame::Packet { raw, checksum_ok }) = dec.next_frame() else {
        panic!("no packet in {wire:?}");
    };
    assert!(checksum_ok);
    assert_eq!(dec.next_frame(), None);
    protocol_tests::framing::rle_decode(&raw).expect("stub RLE is valid")
}

fn check_actions(list: &[Actions], rle: bool) {
    let json = accel::to_json(&list);
    let back: Vec<Actions> = serde_json::from_slice(&json).expect("to_json output parses");
    assert_eq!(back, list);
    // The client's schema-checked view of the same bytes, off the wire.
    let raw = client_roundtrip(&json, rle);
    let seen = protocol_tests::reply::parse_accelerator_actions(&raw)
        .unwrap_or_else(|e| panic!("client rejects {}: {e}", String::from_utf8_lossy(&json)));
    assert_eq!(seen.len(), list.len());
    for (a, s) in list.iter().zip(&seen) {
        assert_eq!(a.plugin_name, s.plugin_name);
        assert_eq!(a.session_name, s.session_name);
        assert_eq!(a.identifier, s.identifier);
        assert_eq!(a.breakpoints.len(), s.breakpoints.len());
        for (b, c) in a.breakpoints.iter().zip(&s.breakpoints) {
            assert_eq!(b.identifier, c.identifier);
            assert_eq!(b.symbol_names, c.symbol_names);
            assert_eq!(
                b.by_name.as_ref().map(|n| &n.function_name),
                c.function_name.as_ref()
            );
            assert_eq!(
                b.by_name.as_ref().and_then(|n| n.shlib.as_ref()),
                c.shlib.as_ref()
            );
            assert_eq!(
                b.by_address.as_ref().map(|a| a.load_address),
                c.load_address
            );
        }
        match (&a.connect_info, &s.connect_info) {
            (None, None) => {}
            (Some(x), Some(y)) => {
                assert_eq!(x.connect_url, y.connect_url);
                assert_eq!(x.platform_name, y.platform_name);
                assert_eq!(x.triple, y.triple);
                assert_eq!(x.synchronous, y.synchronous);
            }
            (x, y) => panic!("connect_info {x:?} vs {y:?}"),
        }
    }
}

fn structured(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(rle) = u.arbitrary::<bool>() else {
        return;
    };
    let Ok(n) = u.int_in_range(0..=3) else { return };
    let mut list = Vec::new();
    for _ in 0..n {
        match actions(&mut u) {
            Ok(a) => list.push(a),
            Err(_) => break,
        }
    }
    check_actions(&list, rle);
    // HitResponse: only Serialize; check the JSON shape.
    let resp = HitResponse {
        disable_bp: u.arbitrary().unwrap_or(false),
        auto_resume_native: u.arbitrary().unwrap_or(true),
        actions: list.pop(),
    };
    let json = accel::to_json(&resp);
    let v: serde_json::Value = serde_json::from_slice(&json).expect("HitResponse JSON parses");
    assert_eq!(v["disable_bp"], resp.disable_bp);
    assert_eq!(v["auto_resume_native"], resp.auto_resume_native);
    match &resp.actions {
        None => assert!(v.get("actions").is_none()),
        Some(a) => {
            let back: Actions = serde_json::from_value(v["actions"].clone()).expect("actions");
            assert_eq!(&back, a);
        }
    }
}

fn raw_parse(data: &[u8]) {
    if let Ok(hit) = serde_json::from_slice::<BreakpointHit>(data) {
        // Everything that parsed survives a serde round trip of its parts.
        let json = accel::to_json(&hit.breakpoint);
        let back: BreakpointInfo = serde_json::from_slice(&json).expect("breakpoint");
        assert_eq!(back, hit.breakpoint);
    }
    if let Ok(a) = serde_json::from_slice::<Vec<Actions>>(data) {
        let json = accel::to_json(&a);
        let back: Vec<Actions> = serde_json::from_slice(&json).expect("actions");
        assert_eq!(back, a);
    }
}

/// Feed `jAcceleratorPluginBreakpointHit:<data>` to a fresh session and
/// return the payload of its single reply.
fn session_reply(data: &[u8], with_mux: bool) -> Vec<u8> {
    let mut s = Session::new(1, Default::default());
    if with_mux {
        let mux = Rc::new(RefCell::new(Mux::new(None, "hook".into(), true, true)));
        s = s.with_mux(mux);
    }
    let mut payload = b"jAcceleratorPluginBreakpointHit:".to_vec();
    payload.extend_from_slice(data);
    let mut wire = Vec::new();
    Encoder::new().packet(&payload, &mut wire);
    let _ = s.on_input(&wire);
    let out = std::mem::take(s.pending_output());
    let mut f = Framer::client(1 << 22);
    f.push(&out);
    let mut replies = Vec::new();
    while let Some(ev) = f.next_event() {
        match ev {
            WireEvent::Ack => {}
            WireEvent::Packet(p) => replies.push(p),
            other => panic!("unexpected {other:?} in session output {out:?}"),
        }
    }
    assert_eq!(replies.len(), 1, "one reply, got {out:?}");
    replies.pop().unwrap_or_default()
}

fn session(data: &[u8]) {
    let plain = session_reply(data, false);
    assert!(plain.starts_with(b"E"), "{plain:?}");
    let muxed = session_reply(data, true);
    let hook = serde_json::from_slice::<BreakpointHit>(data)
        .is_ok_and(|h| h.plugin_name == accel::PLUGIN_NAME && h.breakpoint.identifier == 1);
    if hook {
        let v: serde_json::Value = serde_json::from_slice(&muxed).expect("HitResponse");
        assert_eq!(v["auto_resume_native"], true);
    } else {
        assert!(muxed.starts_with(b"E"), "{muxed:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => raw_parse(rest),
        1 => structured(rest),
        _ => session(rest),
    }
});
