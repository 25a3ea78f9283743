//! Feeds arbitrary bytes to a `Framer` in arbitrary splits.
//!
//! Checks: no panic; the events and acknowledgements do not depend on how
//! the stream was split; no decoded packet is larger than the limit; the
//! framer's buffers stay within the limit plus the unconsumed input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stub::wire::Framer;
use stub::wire::WireEvent;
use stub::wire::DEFAULT_MAX_PACKET;

/// Runs `wire` through a fresh framer, pushed in pieces of the given sizes.
fn run(client: bool, max: usize, wire: &[u8], sizes: &[u8]) -> (Vec<WireEvent>, Vec<u8>) {
    let mut framer = if client {
        Framer::client(max)
    } else {
        Framer::new(max)
    };
    let mut events = Vec::new();
    let mut replies = Vec::new();
    let mut rest = wire;
    let mut sizes = sizes.iter().cycle();
    while !rest.is_empty() {
        let n = sizes.next().map_or(rest.len(), |&s| usize::from(s).max(1));
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        framer.push(chunk);
        while let Some(event) = framer.next_event() {
            if let WireEvent::Packet(p) | WireEvent::Notification(p) = &event {
                assert!(p.len() <= max, "decoded {} > max {max}", p.len());
            }
            // Toggle no-ack mode on a packet that asks for it, as a session
            // would, so both modes are exercised mid-stream.
            if event == WireEvent::Packet(b"QStartNoAckMode".to_vec()) {
                framer.set_no_ack(true);
            }
            events.push(event);
        }
        replies.extend(framer.take_replies().unwrap_or_default());
        // The body is capped at `max`; the input and the acknowledgements
        // are bounded by what was pushed and not yet drained.
        assert!(
            framer.buffered_bytes() <= max + 2 * wire.len() + 1024,
            "buffered {} bytes",
            framer.buffered_bytes()
        );
    }
    (events, replies)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some((&nsizes, rest)) = rest.split_first() else {
        return;
    };
    let (sizes, wire) = rest.split_at(usize::from(nsizes % 16).min(rest.len()));
    let client = mode & 1 != 0;
    let max = if mode & 2 != 0 {
        DEFAULT_MAX_PACKET
    } else {
        usize::from(mode >> 2) + 1
    };
    let whole = run(client, max, wire, &[]);
    let split = run(client, max, wire, sizes);
    assert_eq!(whole, split);
});
