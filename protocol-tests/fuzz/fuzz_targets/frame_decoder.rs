//! `framing::FrameDecoder` fed arbitrary bytes in arbitrary splits, and
//! the pure helpers (`escape`/`unescape`, `rle_decode`, `encode_packet`).
//!
//! Checks: no panic; the frames do not depend on how the stream was split;
//! the decoder buffers no more than it was fed; an encoded payload decodes
//! to itself with a good checksum; `unescape(escape(x)) == x`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::framing;
use protocol_tests::framing::Frame;
use protocol_tests::framing::FrameDecoder;

fn run(wire: &[u8], sizes: &[u8]) -> (Vec<Frame>, usize) {
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

fuzz_target!(|data: &[u8]| {
    let Some((&nsizes, rest)) = data.split_first() else {
        return;
    };
    let (sizes, wire) = rest.split_at(usize::from(nsizes % 16).min(rest.len()));
    assert_eq!(run(wire, &[]), run(wire, sizes));

    let _ = framing::rle_decode(wire);
    let _ = framing::unescape(wire);
    let esc = framing::escape(wire);
    assert!(!esc.contains(&b'#') && !esc.contains(&b'$'));
    assert_eq!(framing::unescape(&esc).as_deref(), Ok(wire));
    // Escaped data has no bare `*`, so RLE decoding leaves it alone.
    assert_eq!(framing::rle_decode(&esc).as_deref(), Ok(&esc[..]));

    for packet in [true, false] {
        let framed = if packet {
            framing::encode_packet(&esc)
        } else {
            framing::encode_notification(&esc)
        };
        let mut d = FrameDecoder::new();
        d.push(&framed);
        let f = d.next_frame();
        let raw = match (packet, f) {
            (true, Some(Frame::Packet { raw, checksum_ok })) => {
                assert!(checksum_ok);
                raw
            }
            (false, Some(Frame::Notification { raw, checksum_ok })) => {
                assert!(checksum_ok);
                raw
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(framing::unescape(&raw).as_deref(), Ok(wire));
        assert_eq!(d.next_frame(), None);
        assert_eq!(d.buffered(), 0);
    }
});
