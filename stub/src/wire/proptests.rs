//! Property tests across the encoder and the framer.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;

fn encode(rle: bool, payload: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new();
    e.set_rle(rle);
    let mut out = Vec::new();
    e.packet(payload, &mut out);
    out
}

/// Runs `wire` through a framer pushed in pieces cut at `cuts`; returns the
/// events and the acknowledgement bytes.
fn run(mut framer: Framer, wire: &[u8], cuts: &[usize]) -> (Vec<WireEvent>, Vec<u8>) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    cuts.sort_unstable();
    let mut events = Vec::new();
    let mut replies = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain(std::iter::once(wire.len())) {
        framer.push(&wire[start..end]);
        start = end;
        while let Some(e) = framer.next_event() {
            events.push(e);
        }
        replies.extend(framer.take_replies().unwrap_or_default());
    }
    (events, replies)
}

/// Payloads biased towards runs and the special bytes.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        1 => Just(b'#'),
        1 => Just(b'$'),
        1 => Just(b'}'),
        1 => Just(b'*'),
        1 => Just(b'%'),
        1 => Just(0x03u8),
    ];
    vec((byte, 1usize..12), 0..64).prop_map(|runs| {
        runs.into_iter()
            .flat_map(|(b, n)| std::iter::repeat_n(b, n))
            .collect()
    })
}

/// One item of a plausible stream.
#[derive(Debug, Clone)]
enum Item {
    Packet(Vec<u8>),
    Ack,
    Nak,
    Interrupt,
    Noise(Vec<u8>),
    Corrupt(Vec<u8>),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        4 => payload().prop_map(Item::Packet),
        1 => Just(Item::Ack),
        1 => Just(Item::Nak),
        1 => Just(Item::Interrupt),
        1 => vec(any::<u8>(), 0..8).prop_map(|v| Item::Noise(
            v.into_iter().filter(|b| !b"$%+-\x03".contains(b)).collect()
        )),
        1 => payload().prop_map(Item::Corrupt),
    ]
}

/// Serialises items and the events a framer must produce for them.
fn stream(items: &[Item]) -> (Vec<u8>, Vec<WireEvent>, Vec<u8>) {
    let mut wire = Vec::new();
    let mut want = Vec::new();
    let mut acks = Vec::new();
    for it in items {
        match it {
            Item::Packet(p) => {
                wire.extend(encode(false, p));
                want.push(WireEvent::Packet(p.clone()));
                acks.push(b'+');
            }
            Item::Ack => {
                wire.push(b'+');
                want.push(WireEvent::Ack);
            }
            Item::Nak => {
                wire.push(b'-');
                want.push(WireEvent::Nak);
            }
            Item::Interrupt => {
                wire.push(0x03);
                want.push(WireEvent::Interrupt);
            }
            Item::Noise(n) => wire.extend(n),
            Item::Corrupt(p) => {
                let mut framed = encode(false, p);
                // Flip the checksum to a wrong (still hex) value.
                let n = framed.len();
                let good = hex::parse_u64(&framed[n - 2..]).unwrap() as u8;
                framed.truncate(n - 2);
                hex::encode(&[good.wrapping_add(1)], &mut framed);
                wire.extend(framed);
                want.push(WireEvent::BadChecksum);
                acks.push(b'-');
            }
        }
    }
    (wire, want, acks)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_without_rle(p in payload()) {
        let wire = encode(false, &p);
        let (events, acks) = run(Framer::new(DEFAULT_MAX_PACKET), &wire, &[]);
        prop_assert_eq!(events, vec![WireEvent::Packet(p)]);
        prop_assert_eq!(acks, b"+".to_vec());
    }

    #[test]
    fn round_trip_arbitrary_bytes(p in vec(any::<u8>(), 0..2048), rle in any::<bool>()) {
        let wire = encode(rle, &p);
        let (events, _) = run(Framer::client(DEFAULT_MAX_PACKET), &wire, &[]);
        prop_assert_eq!(events, vec![WireEvent::Packet(p)]);
    }

    #[test]
    fn round_trip_with_rle(p in payload()) {
        let wire = encode(true, &p);
        let body = &wire[1..wire.len() - 3];
        prop_assert!(!body.contains(&b'#') && !body.contains(&b'$'));
        prop_assert!(body.len() <= encode(false, &p).len() - 4);
        // The framer's one-pass decoding equals the two documented passes.
        prop_assert_eq!(unescape_binary(&rle_decode(body).unwrap()), p.clone());
        let (events, _) = run(Framer::client(DEFAULT_MAX_PACKET), &wire, &[]);
        prop_assert_eq!(events, vec![WireEvent::Packet(p)]);
    }

    #[test]
    fn escape_round_trip(p in vec(any::<u8>(), 0..512)) {
        let mut escaped = Vec::new();
        escape_binary(&p, &mut escaped);
        prop_assert!(!escaped.iter().any(|&b| b == b'#' || b == b'$' || b == b'*'));
        prop_assert_eq!(unescape_binary(&escaped), p);
    }

    #[test]
    fn streams_decode_to_their_items(
        items in vec(item(), 0..24),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        let (wire, want, acks) = stream(&items);
        let (events, replies) = run(Framer::new(DEFAULT_MAX_PACKET), &wire, &cuts);
        prop_assert_eq!(events, want);
        prop_assert_eq!(replies, acks);
    }

    /// Any split of any byte stream gives the same events as one push.
    #[test]
    fn splits_do_not_matter_for_garbage(
        wire in vec(prop_oneof![
            3 => any::<u8>(),
            1 => prop::sample::select(b"$%#+-}*\x030a".to_vec()),
        ], 0..512),
        cuts in vec(any::<usize>(), 0..16),
        client in any::<bool>(),
        max in 1usize..64,
    ) {
        let mk = || if client { Framer::client(max) } else { Framer::new(max) };
        let whole = run(mk(), &wire, &[]);
        let split = run(mk(), &wire, &cuts);
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn rle_decode_never_panics(data in vec(any::<u8>(), 0..256)) {
        if let Ok(out) = rle_decode(&data) {
            prop_assert!(out.len() <= data.len() * 49);
        }
    }
}

/// Every single split point of a mixed stream gives the same events.
#[test]
fn every_split_point() {
    let items = [
        Item::Packet(b"qSupported:multiprocess+;swbreak+".to_vec()),
        Item::Ack,
        Item::Noise(b"\r\n".to_vec()),
        Item::Packet(b"X1000,4:#$}*".to_vec()),
        Item::Interrupt,
        Item::Corrupt(b"vCont;c".to_vec()),
        Item::Nak,
        Item::Packet(Vec::new()),
    ];
    let (wire, want, acks) = stream(&items);
    for i in 0..=wire.len() {
        for j in i..=wire.len() {
            let (events, replies) = run(Framer::new(DEFAULT_MAX_PACKET), &wire, &[i, j]);
            assert_eq!(events, want, "cuts at {i},{j}");
            assert_eq!(replies, acks, "cuts at {i},{j}");
        }
    }
}
