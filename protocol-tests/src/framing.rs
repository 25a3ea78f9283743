//! GDB remote serial protocol framing, written independently of the stub's codec.
//!
//! ```text
//! packet       := '$' payload '#' checksum(2 hex digits)
//! notification := '%' payload '#' checksum
//! ack / nak    := '+' | '-'
//! interrupt    := 0x03
//! escape       := '}' (byte ^ 0x20)      for '$' '#' '}' '*' inside binary data
//! run length   := X '*' N                  X repeated (N - 29) more times
//! ```
//!
//! The checksum is the sum of the raw payload bytes (as sent, before any
//! decoding) modulo 256. [`FrameDecoder`] is incremental: feed it whatever a
//! read returned and pull complete [`Frame`]s out.

use std::fmt::Write as _;

/// Escape byte for binary data.
pub const ESCAPE: u8 = b'}';
/// Run-length marker.
pub const RLE_MARK: u8 = b'*';
/// Interrupt byte sent by clients to stop a running target.
pub const INTERRUPT: u8 = 0x03;

/// Errors from the pure decoding helpers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A `}` escape was the last byte of the data.
    #[error("dangling escape byte at end of data")]
    DanglingEscape,
    /// A `*` run-length marker had no preceding byte or no count byte.
    #[error("run-length marker at offset {offset} without a byte to repeat or a count")]
    BadRunLength {
        /// Offset of the `*` in the raw payload.
        offset: usize,
    },
    /// A run-length count byte was below the legal minimum (`' '` + 3 = 29 + 3).
    #[error("run-length count byte {count:#04x} at offset {offset} is out of range")]
    BadRunCount {
        /// The count byte.
        count: u8,
        /// Offset of the count byte.
        offset: usize,
    },
}

/// Modulo-256 sum of `data`.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |acc, b| acc.wrapping_add(*b))
}

/// True for the bytes that must be escaped inside binary data.
pub fn needs_escape(b: u8) -> bool {
    matches!(b, b'$' | b'#' | b'}' | b'*')
}

/// Binary-escape `data` (`}` followed by the byte XOR 0x20).
pub fn escape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for &b in data {
        if needs_escape(b) {
            out.push(ESCAPE);
            out.push(b ^ 0x20);
        } else {
            out.push(b);
        }
    }
    out
}

/// Undo [`escape`].
pub fn unescape(data: &[u8]) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::with_capacity(data.len());
    let mut it = data.iter();
    while let Some(&b) = it.next() {
        if b == ESCAPE {
            let next = it.next().ok_or(FrameError::DanglingEscape)?;
            out.push(next ^ 0x20);
        } else {
            out.push(b);
        }
    }
    Ok(out)
}

/// Expand run-length encoding in a raw payload.
///
/// Escaped pairs (`}` + byte) are copied verbatim, so an escaped byte is never
/// mistaken for a marker; binary data must still be passed through
/// [`unescape`] afterwards.
pub fn rle_decode(raw: &[u8]) -> Result<Vec<u8>, FrameError> {
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == ESCAPE {
            out.push(b);
            if let Some(&n) = raw.get(i + 1) {
                out.push(n);
            }
            i += 2;
            continue;
        }
        if b == RLE_MARK {
            let prev = *out.last().ok_or(FrameError::BadRunLength { offset: i })?;
            let count = *raw
                .get(i + 1)
                .ok_or(FrameError::BadRunLength { offset: i })?;
            if count < 29 + 3 {
                return Err(FrameError::BadRunCount {
                    count,
                    offset: i + 1,
                });
            }
            out.resize(out.len() + usize::from(count - 29), prev);
            i += 2;
            continue;
        }
        out.push(b);
        i += 1;
    }
    Ok(out)
}

/// Frame `payload` (sent verbatim: escape binary data first) as `$payload#cs`.
pub fn encode_packet(payload: &[u8]) -> Vec<u8> {
    encode_with(b'$', payload)
}

/// Frame `payload` as a `%payload#cs` notification.
pub fn encode_notification(payload: &[u8]) -> Vec<u8> {
    encode_with(b'%', payload)
}

fn encode_with(lead: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.push(lead);
    out.extend_from_slice(payload);
    out.push(b'#');
    out.extend_from_slice(format!("{:02x}", checksum(payload)).as_bytes());
    out
}

/// One unit read off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `+`
    Ack,
    /// `-`
    Nak,
    /// `$…#cs`: the raw payload (escapes and RLE still present).
    Packet {
        /// Raw payload bytes between `$` and `#`.
        raw: Vec<u8>,
        /// Whether the transmitted checksum matched.
        checksum_ok: bool,
    },
    /// `%…#cs` asynchronous notification.
    Notification {
        /// Raw payload bytes between `%` and `#`.
        raw: Vec<u8>,
        /// Whether the transmitted checksum matched.
        checksum_ok: bool,
    },
    /// `0x03`
    Interrupt,
    /// Any other byte outside a frame.
    Stray(u8),
}

/// Incremental frame decoder. Never panics, whatever it is fed.
///
/// Linear in the total input, however it is split: consumed bytes are
/// skipped with a read cursor (the buffer is compacted only once the consumed
/// prefix outweighs the live bytes) and the search for a packet's `#` resumes
/// where the previous call stopped.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// Storage; `buf[start..]` is the unconsumed input.
    buf: Vec<u8>,
    /// Read cursor: bytes before it belong to frames already returned.
    start: usize,
    /// While `buf[start]` opens a packet or notification: how many bytes after
    /// that lead byte are known to hold no `#`. Reset whenever `start` moves.
    scanned: usize,
    /// Work counters for the linearity tests.
    #[cfg(test)]
    work: WorkCounter,
}

/// Bytes touched by the decoder's bookkeeping (tests only).
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
struct WorkCounter {
    /// Bytes examined while looking for a packet's `#`.
    scanned: usize,
    /// Bytes moved when compacting the buffer.
    moved: usize,
}

impl FrameDecoder {
    /// A decoder with an empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append bytes read from the wire.
    pub fn push(&mut self, data: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(data);
    }

    /// Bytes buffered but not yet part of a complete frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame, if any.
    pub fn next_frame(&mut self) -> Option<Frame> {
        let first = *self.buf.get(self.start)?;
        match first {
            b'+' => Some(self.take_single(Frame::Ack)),
            b'-' => Some(self.take_single(Frame::Nak)),
            INTERRUPT => Some(self.take_single(Frame::Interrupt)),
            b'$' | b'%' => {
                // A raw '#' always ends the payload (an escaped '#' travels as '}' 0x03).
                let body = self.start + 1;
                let from = body + self.scanned;
                let found = self.buf[from..].iter().position(|&b| b == b'#');
                #[cfg(test)]
                {
                    self.work.scanned += found.map_or(self.buf.len() - from, |p| p + 1);
                }
                let Some(p) = found else {
                    self.scanned = self.buf.len() - body;
                    return None;
                };
                let hash = from + p;
                // Remember the '#' so a call waiting for the checksum digits
                // finds it again without rescanning.
                self.scanned = hash - body;
                if self.buf.len() < hash + 3 {
                    return None;
                }
                let raw = self.buf[body..hash].to_vec();
                let sent = parse_hex_byte(self.buf[hash + 1], self.buf[hash + 2]);
                let checksum_ok = sent == Some(checksum(&raw));
                self.consume_to(hash + 3);
                Some(if first == b'$' {
                    Frame::Packet { raw, checksum_ok }
                } else {
                    Frame::Notification { raw, checksum_ok }
                })
            }
            other => Some(self.take_single(Frame::Stray(other))),
        }
    }

    fn take_single(&mut self, f: Frame) -> Frame {
        self.consume_to(self.start + 1);
        f
    }

    /// Mark everything before `end` as consumed.
    fn consume_to(&mut self, end: usize) {
        self.scanned = 0;
        if end >= self.buf.len() {
            // Everything is consumed: reuse the allocation from the front.
            self.buf.clear();
            self.start = 0;
        } else {
            self.start = end;
        }
    }

    /// Drop the consumed prefix once it is at least as long as the live
    /// bytes, so each compaction moves no more bytes than were consumed
    /// since the previous one (amortised linear).
    fn compact(&mut self) {
        if self.start > 0 && self.start >= self.buf.len() - self.start {
            #[cfg(test)]
            {
                self.work.moved += self.buf.len() - self.start;
            }
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn parse_hex_byte(hi: u8, lo: u8) -> Option<u8> {
    Some(hex_val(hi)? << 4 | hex_val(lo)?)
}

/// Printable rendering of packet bytes for logs and failure messages.
pub fn printable(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len());
    for &b in data {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn checksum_matches_known_packets() {
        assert_eq!(encode_packet(b"qC"), b"$qC#b4".to_vec());
        assert_eq!(encode_packet(b""), b"$#00".to_vec());
        assert_eq!(encode_packet(b"OK"), b"$OK#9a".to_vec());
    }

    #[test]
    fn rle_expands_runs() {
        // "0* " = '0' + 3 more
        assert_eq!(rle_decode(b"0* ").unwrap(), b"0000".to_vec());
        assert_eq!(
            rle_decode(b"a*\x1fb").unwrap_err(),
            FrameError::BadRunCount {
                count: 0x1f,
                offset: 2
            }
        );
        assert_eq!(rle_decode(b"a*\"b").unwrap(), b"aaaaaab".to_vec());
        assert_eq!(
            rle_decode(b"*a").unwrap_err(),
            FrameError::BadRunLength { offset: 0 }
        );
        assert_eq!(
            rle_decode(b"x*").unwrap_err(),
            FrameError::BadRunLength { offset: 1 }
        );
        // escaped '*' is not a marker
        assert_eq!(rle_decode(b"}\x0a").unwrap(), b"}\x0a".to_vec());
    }

    #[test]
    fn decoder_handles_mixed_stream() {
        let mut d = FrameDecoder::new();
        d.push(b"+-$OK#9a%Stop:T05#xx\x03z$O");
        assert_eq!(d.next_frame(), Some(Frame::Ack));
        assert_eq!(d.next_frame(), Some(Frame::Nak));
        assert_eq!(
            d.next_frame(),
            Some(Frame::Packet {
                raw: b"OK".to_vec(),
                checksum_ok: true
            })
        );
        assert!(matches!(
            d.next_frame(),
            Some(Frame::Notification {
                checksum_ok: false,
                ..
            })
        ));
        assert_eq!(d.next_frame(), Some(Frame::Interrupt));
        assert_eq!(d.next_frame(), Some(Frame::Stray(b'z')));
        assert_eq!(d.next_frame(), None);
        d.push(b"K#9a");
        assert_eq!(
            d.next_frame(),
            Some(Frame::Packet {
                raw: b"OK".to_vec(),
                checksum_ok: true
            })
        );
    }

    /// The decoder as it was before the read cursor: rescans from the front
    /// and drains on every frame. Kept as the behavioural reference.
    #[derive(Default)]
    struct ReferenceDecoder {
        buf: Vec<u8>,
    }

    impl ReferenceDecoder {
        fn push(&mut self, data: &[u8]) {
            self.buf.extend_from_slice(data);
        }

        fn buffered(&self) -> usize {
            self.buf.len()
        }

        fn next_frame(&mut self) -> Option<Frame> {
            let first = *self.buf.first()?;
            let single = |buf: &mut Vec<u8>, f| {
                buf.remove(0);
                Some(f)
            };
            match first {
                b'+' => single(&mut self.buf, Frame::Ack),
                b'-' => single(&mut self.buf, Frame::Nak),
                INTERRUPT => single(&mut self.buf, Frame::Interrupt),
                b'$' | b'%' => {
                    let hash = self.buf.iter().position(|&b| b == b'#')?;
                    if self.buf.len() < hash + 3 {
                        return None;
                    }
                    let raw = self.buf[1..hash].to_vec();
                    let sent = parse_hex_byte(self.buf[hash + 1], self.buf[hash + 2]);
                    let checksum_ok = sent == Some(checksum(&raw));
                    self.buf.drain(..hash + 3);
                    Some(if first == b'$' {
                        Frame::Packet { raw, checksum_ok }
                    } else {
                        Frame::Notification { raw, checksum_ok }
                    })
                }
                other => single(&mut self.buf, Frame::Stray(other)),
            }
        }
    }

    /// Bytes the decoder's bookkeeping touched so far.
    fn work(d: &FrameDecoder) -> usize {
        d.work.scanned + d.work.moved
    }

    #[test]
    fn huge_packet_byte_by_byte_is_linear() {
        let payload: Vec<u8> = (0..4usize << 20).map(|i| b'a' + (i % 26) as u8).collect();
        let wire = encode_packet(&payload);
        let mut d = FrameDecoder::new();
        let mut frames = Vec::new();
        for b in &wire {
            d.push(std::slice::from_ref(b));
            while let Some(f) = d.next_frame() {
                frames.push(f);
            }
        }
        assert_eq!(
            frames,
            vec![Frame::Packet {
                raw: payload,
                checksum_ok: true
            }]
        );
        assert_eq!(d.buffered(), 0);
        // One pass for the '#', plus one byte per call waiting on the checksum.
        assert!(
            work(&d) <= wire.len() + 2,
            "{} bytes of work for {} bytes of input",
            work(&d),
            wire.len()
        );
    }

    #[test]
    fn many_small_packets_are_linear() {
        const COUNT: usize = 100_000;
        let mut wire = Vec::new();
        for i in 0..COUNT {
            wire.extend(encode_packet(format!("m{i:x},4").as_bytes()));
            wire.push(b'+');
        }
        let mut d = FrameDecoder::new();
        let mut packets = 0;
        let mut acks = 0;
        // Odd-sized chunks so packets straddle pushes.
        for chunk in wire.chunks(7) {
            d.push(chunk);
            while let Some(f) = d.next_frame() {
                match f {
                    Frame::Packet {
                        checksum_ok: true, ..
                    } => packets += 1,
                    Frame::Ack => acks += 1,
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert_eq!((packets, acks, d.buffered()), (COUNT, COUNT, 0));
        assert!(
            work(&d) <= 3 * wire.len(),
            "{} bytes of work for {} bytes of input",
            work(&d),
            wire.len()
        );
    }

    #[test]
    fn long_run_of_single_bytes_in_one_push_is_linear() {
        // Single-byte frames behind a large buffered tail: each must be
        // consumed without shifting the rest of the buffer.
        let mut wire: Vec<u8> = b"+-\x03z".iter().copied().cycle().take(1 << 20).collect();
        wire.extend(encode_packet(&vec![b'x'; 1 << 20]));
        let mut d = FrameDecoder::new();
        d.push(&wire);
        let mut n = 0;
        while let Some(f) = d.next_frame() {
            n += 1;
            if n <= 1 << 20 {
                assert!(!matches!(f, Frame::Packet { .. }), "{f:?}");
            } else {
                assert!(matches!(
                    f,
                    Frame::Packet {
                        checksum_ok: true,
                        ..
                    }
                ));
            }
        }
        assert_eq!((n, d.buffered()), ((1 << 20) + 1, 0));
        assert!(work(&d) <= 2 * wire.len());
    }

    #[test]
    fn interleaved_pull_and_push_behind_large_backlog_is_linear() {
        // A 1 MiB backlog of single-byte frames, then one frame pulled per
        // byte pushed: compacting on every push would shift the whole
        // backlog each time.
        const NOISE: usize = 1 << 20;
        let mut wire: Vec<u8> = b"+-\x03z".iter().copied().cycle().take(NOISE).collect();
        wire.extend(encode_packet(&vec![b'x'; NOISE]));
        let mut d = FrameDecoder::new();
        d.push(&wire[..NOISE]);
        let mut frames = Vec::new();
        for b in &wire[NOISE..] {
            frames.extend(d.next_frame());
            d.push(std::slice::from_ref(b));
        }
        frames.extend(std::iter::from_fn(|| d.next_frame()));
        assert_eq!((frames.len(), d.buffered()), (NOISE + 1, 0));
        assert!(frames[..NOISE]
            .iter()
            .all(|f| !matches!(f, Frame::Packet { .. })));
        assert!(matches!(
            frames[NOISE],
            Frame::Packet {
                checksum_ok: true,
                ..
            }
        ));
        assert!(
            work(&d) <= 3 * wire.len(),
            "{} bytes of work for {} bytes of input",
            work(&d),
            wire.len()
        );
    }

    /// Bytes that exercise framing: leads, terminators, acks, escapes, hex.
    fn wire_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            3 => proptest::sample::select(b"$%#+-\x03}*0123456789abcdefABCDEFOKz".to_vec()),
            1 => any::<u8>(),
        ]
    }

    proptest! {
        #[test]
        fn matches_reference_decoder(
            data in proptest::collection::vec(wire_byte(), 0..512),
            cuts in proptest::collection::vec((1usize..64, 0usize..4), 1..64),
        ) {
            let mut new = FrameDecoder::new();
            let mut old = ReferenceDecoder::default();
            let mut rest = &data[..];
            let mut cuts = cuts.iter().cycle();
            while !rest.is_empty() {
                let &(len, pulls) = cuts.next().unwrap();
                let (chunk, tail) = rest.split_at(len.min(rest.len()));
                rest = tail;
                new.push(chunk);
                old.push(chunk);
                prop_assert_eq!(new.buffered(), old.buffered());
                // Sometimes pull a few frames, sometimes everything.
                let pulls = if pulls == 0 { usize::MAX } else { pulls };
                for _ in 0..pulls {
                    let f = new.next_frame();
                    prop_assert_eq!(&f, &old.next_frame());
                    prop_assert_eq!(new.buffered(), old.buffered());
                    if f.is_none() {
                        break;
                    }
                }
            }
            loop {
                let f = new.next_frame();
                prop_assert_eq!(&f, &old.next_frame());
                prop_assert_eq!(new.buffered(), old.buffered());
                if f.is_none() {
                    break;
                }
            }
            // Each byte is scanned and moved at most once; a call that finds the
            // `#` but not its checksum digits re-reads the `#`.
            prop_assert!(work(&new) <= 3 * data.len() + 1);
        }
    }

    proptest! {
        #[test]
        fn escape_roundtrip(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let e = escape(&data);
            prop_assert!(!e.contains(&b'#') && !e.contains(&b'$') && !e.contains(&b'*'));
            prop_assert_eq!(unescape(&e).unwrap(), data);
        }

        #[test]
        fn decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = unescape(&data);
            let _ = rle_decode(&data);
            let mut d = FrameDecoder::new();
            d.push(&data);
            while d.next_frame().is_some() {}
        }

        #[test]
        fn split_anywhere_gives_same_frames(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..5),
            split in 0usize..400,
        ) {
            let mut wire = Vec::new();
            for p in &payloads { wire.extend(encode_packet(&escape(p))); }
            let split = split.min(wire.len());
            let mut d = FrameDecoder::new();
            d.push(&wire[..split]);
            let mut got = Vec::new();
            while let Some(f) = d.next_frame() { got.push(f); }
            d.push(&wire[split..]);
            while let Some(f) = d.next_frame() { got.push(f); }
            prop_assert_eq!(got.len(), payloads.len());
            for (f, p) in got.iter().zip(&payloads) {
                match f {
                    Frame::Packet { raw, checksum_ok: true } => prop_assert_eq!(&unescape(raw).unwrap(), p),
                    other => prop_assert!(false, "unexpected {:?}", other),
                }
            }
        }
    }
}
