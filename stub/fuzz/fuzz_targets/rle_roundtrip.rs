//! Encodes arbitrary payloads (with and without RLE) and decodes them again.
//!
//! Checks: the client framer gives back exactly the payload; the framed body
//! never contains a bare `#` or `$`; the standalone helpers agree with the
//! framer; `rle_decode` survives arbitrary input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stub::wire::rle_decode;
use stub::wire::unescape_binary;
use stub::wire::Encoder;
use stub::wire::Framer;
use stub::wire::WireEvent;
use stub::wire::DEFAULT_MAX_PACKET;

fuzz_target!(|data: &[u8]| {
    let _ = rle_decode(data);
    let payload = &data[..data.len().min(DEFAULT_MAX_PACKET)];
    for rle in [false, true] {
        let mut encoder = Encoder::new();
        encoder.set_rle(rle);
        let mut wire = Vec::new();
        encoder.packet(payload, &mut wire);
        let body = &wire[1..wire.len() - 3];
        assert!(!body.contains(&b'#') && !body.contains(&b'$'));
        let decoded = rle_decode(body).expect("encoder output is valid RLE");
        assert_eq!(unescape_binary(&decoded), payload);

        let mut framer = Framer::client(DEFAULT_MAX_PACKET);
        framer.push(&wire);
        assert_eq!(
            framer.next_event(),
            Some(WireEvent::Packet(payload.to_vec()))
        );
        assert_eq!(framer.next_event(), None);
        assert_eq!(framer.take_replies().as_deref(), Some(&b"+"[..]));
    }
});
