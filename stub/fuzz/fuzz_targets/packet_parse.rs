//! Arbitrary packet payloads through the typed command parser, and a stop
//! reply round trip through the encoder. Checks: no panic, and every parse
//! result is either a typed command or a `ParseError`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stub::packet::parse;
use stub::wire::Encoder;
use stub::wire::Framer;
use stub::wire::WireEvent;

fuzz_target!(|data: &[u8]| {
    let _ = parse(data);
    // Also as a framed packet: the payload the session sees must parse
    // the same way.
    let mut wire = Vec::new();
    Encoder::new().packet(data, &mut wire);
    let mut f = Framer::new(1 << 20);
    f.push(&wire);
    while let Some(ev) = f.next_event() {
        if let WireEvent::Packet(p) = ev {
            assert_eq!(p, data);
            let _ = parse(&p);
        }
    }
});
