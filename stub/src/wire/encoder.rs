//! Framing of outgoing packets and notifications.

use super::checksum;
use super::hex;
use super::needs_escape;
use super::ESCAPE;
use super::RLE_BIAS;
use super::RLE_MARKER;

/// The longest run one `X*n` group can stand for: the byte plus 97 repeats
/// (`n` = `'~'`).
const MAX_RUN: usize = 1 + (b'~' - RLE_BIAS) as usize;
/// Runs shorter than this are cheaper written out than as `X*n`.
const MIN_RUN: usize = 4;

/// Frames payloads as `$...#cc` packets or `%...#cc` notifications.
///
/// The payload is the logical reply (see the
/// [escaping contract](super#escaping-contract)); the encoder escapes `#`,
/// `$`, `}` and `*`, optionally run-length encodes, and appends the checksum.
/// It reserves the output size once, so framing a 128 KiB memory reply costs
/// one allocation at most (none when `out` is reused).
#[derive(Debug, Clone, Default)]
pub struct Encoder {
    rle: bool,
}

impl Encoder {
    /// An encoder with run-length encoding off.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns run-length encoding of replies on or off. Both gdb and lldb
    /// decode it; it pays off for zero-filled memory and register dumps.
    pub fn set_rle(&mut self, on: bool) {
        self.rle = on;
    }

    /// Whether run-length encoding is on.
    pub fn rle(&self) -> bool {
        self.rle
    }

    /// Appends `$` + escaped (and, if enabled, run-length encoded) `payload`
    /// + `#` + two lowercase checksum digits to `out`.
    ///
    /// Runs of 4 or more equal bytes become `X*n`; a run is shortened rather
    /// than produce a count character of `#` or `$`, and bytes that need
    /// escaping are never run-length encoded.
    pub fn packet(&self, payload: &[u8], out: &mut Vec<u8>) {
        self.frame(b'$', payload, out);
    }

    /// [`Encoder::packet`] of the hex text of `data` (an `m` reply),
    /// encoded straight into `out`: hex digits never need escaping.
    pub fn packet_hex(&self, data: &[u8], out: &mut Vec<u8>) {
        if self.rle {
            let mut text = Vec::with_capacity(data.len().saturating_mul(2));
            hex::encode(data, &mut text);
            self.packet(&text, out);
            return;
        }
        out.reserve(data.len().saturating_mul(2) + 4);
        out.push(b'$');
        let body_start = out.len();
        hex::encode(data, out);
        let sum = out.get(body_start..).map(checksum).unwrap_or(0);
        out.push(b'#');
        out.push(hex::digit(sum >> 4));
        out.push(hex::digit(sum));
    }

    /// Like [`Encoder::packet`] but framed as a `%...#cc` notification
    /// (e.g. `%Stop:T05...` in non-stop mode).
    pub fn notification(&self, payload: &[u8], out: &mut Vec<u8>) {
        self.frame(b'%', payload, out);
    }

    fn frame(&self, start: u8, payload: &[u8], out: &mut Vec<u8>) {
        // A guess that holds for memory with a special byte every few
        // dozen bytes; `out` grows if the payload has more (it is the
        // session's reused output buffer, so usually nothing is allocated).
        out.reserve(payload.len() + payload.len() / 16 + 4);
        out.push(start);
        let body_start = out.len();
        let sum = if self.rle {
            rle_encode(payload, out);
            out.get(body_start..).map(checksum).unwrap_or(0)
        } else {
            escape_runs(payload, out)
        };
        Self::close_packet(sum, out);
    }

    /// Starts a packet whose body comes in pieces ([`Encoder::body_piece`],
    /// then [`Encoder::close_packet`]): a large memory reply written to the
    /// socket while the rest is still being read. Only without run-length
    /// encoding (a run could span two pieces).
    pub fn open_packet(out: &mut Vec<u8>) {
        out.push(b'$');
    }

    /// Appends one piece of a packet body, escaped, and returns the
    /// checksum of the bytes it appended (the packet's checksum is the
    /// wrapping sum of its pieces').
    pub fn body_piece(payload: &[u8], out: &mut Vec<u8>) -> u8 {
        escape_runs(payload, out)
    }

    /// Ends a packet: `#` and the two checksum digits of `sum`.
    pub fn close_packet(sum: u8, out: &mut Vec<u8>) {
        out.push(b'#');
        out.push(hex::digit(sum >> 4));
        out.push(hex::digit(sum));
    }
}

/// [`needs_escape`] written with non-short-circuit `|`, so that a loop over
/// a fixed-size block compiles to vector compares.
#[inline(always)]
fn is_special(b: u8) -> bool {
    (b == b'#') | (b == b'$') | (b == ESCAPE) | (b == RLE_MARKER)
}

/// Bytes [`escape_runs`] looks at per step.
const BLOCK: usize = 64;

/// Eight 0/1 bytes (little-endian in `x`) packed into the low 8 bits.
#[inline(always)]
fn pack8(x: u64) -> u64 {
    x.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit `i` set where `block[i]` needs escaping. Written so that the
/// compares compile to vector instructions (16 bytes at a time with the
/// x86-64 baseline) and the bits are gathered with four multiplies.
#[inline(always)]
fn special_mask(block: &[u8; BLOCK]) -> u64 {
    let mut flags = [0u8; BLOCK];
    for (f, &b) in flags.iter_mut().zip(block) {
        *f = u8::from(is_special(b));
    }
    let mut mask = 0u64;
    for (i, eight) in flags.chunks_exact(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(eight);
        mask |= pack8(u64::from_le_bytes(w)) << (8 * i);
    }
    mask
}

/// Appends `payload` to `out` with the four specials (`#`, `$`, `}`, `*`)
/// escaped, like [`escape_binary`](super::escape_binary), at memory speed
/// whatever the density of specials (random memory has one every 64
/// bytes): per 64-byte block a bit mask of its specials; the block is
/// copied whole, and each special is written as its escape pair followed
/// by a fixed 64-byte copy of what comes after it, one place further
/// right (later copies overwrite the excess). The output is sized once
/// with room for one escape in eight bytes and grows if a payload has
/// more; the last block and the tail go byte by byte.
///
/// Returns the checksum of what it appended, summed on the way rather
/// than in a second pass over the output: the payload's bytes in 64
/// wrapping byte lanes (vector adds of the block already loaded for its
/// mask), plus `ESCAPE - 0x20` per escape (an escape pair `}`, `b ^ 0x20`
/// adds that much more than `b` alone, as every special has bit 5 set).
fn escape_runs(payload: &[u8], out: &mut Vec<u8>) -> u8 {
    let start = out.len();
    let mut lanes = [0u8; BLOCK];
    let mut escapes = 0usize;
    let mut room = payload.len() + payload.len() / 8 + 4 * BLOCK;
    // A payload too short for one block step (a `qC` reply, a stop) goes
    // byte by byte below: no room to zero-fill for it.
    if payload.len() >= 2 * BLOCK {
        out.resize(start + room, 0);
    }
    let mut w = start;
    let mut base = 0;
    // Every over-copy reads at most 2 * BLOCK bytes from `base`.
    while base + 2 * BLOCK <= payload.len() {
        let Some(block) = payload
            .get(base..base + BLOCK)
            .and_then(|s| <&[u8; BLOCK]>::try_from(s).ok())
        else {
            break;
        };
        let mut mask = special_mask(block);
        for (lane, &b) in lanes.iter_mut().zip(block) {
            *lane = lane.wrapping_add(b);
        }
        if out.len() < w + 3 * BLOCK {
            room *= 2;
            out.resize(start + room, 0);
        }
        // A block with n specials writes BLOCK + n <= 2 * BLOCK bytes;
        // the over-copies reach at most 3 * BLOCK.
        let Some(dst) = out.get_mut(w..w + 3 * BLOCK) else {
            break;
        };
        if let Some(d) = dst.get_mut(..BLOCK) {
            d.copy_from_slice(block);
        }
        let mut shift = 0;
        while mask != 0 {
            let at = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let b = block.get(at).copied().unwrap_or(0);
            if let Some([e, x]) = dst.get_mut(at + shift..at + shift + 2) {
                *e = ESCAPE;
                *x = b ^ 0x20;
            }
            shift += 1;
            if let (Some(d), Some(s)) = (
                dst.get_mut(at + shift + 1..at + shift + 1 + BLOCK),
                payload.get(base + at + 1..base + at + 1 + BLOCK),
            ) {
                d.copy_from_slice(s);
            }
        }
        w += BLOCK + shift;
        escapes += shift;
        base += BLOCK;
    }
    out.truncate(w);
    let mut sum = lanes.iter().fold(0u8, |s, &b| s.wrapping_add(b));
    // Only the count modulo 256 matters to a byte sum.
    sum = sum.wrapping_add((escapes as u8).wrapping_mul(ESCAPE - 0x20));
    for &b in payload.get(base..).unwrap_or_default() {
        if is_special(b) {
            out.push(ESCAPE);
            out.push(b ^ 0x20);
            sum = sum.wrapping_add(ESCAPE).wrapping_add(b ^ 0x20);
        } else {
            out.push(b);
            sum = sum.wrapping_add(b);
        }
    }
    sum
}

/// Escapes and run-length encodes `payload` into `out`.
fn rle_encode(payload: &[u8], out: &mut Vec<u8>) {
    let mut rest = payload;
    while let Some((&b, tail)) = rest.split_first() {
        if needs_escape(b) {
            out.push(ESCAPE);
            out.push(b ^ 0x20);
            rest = tail;
            continue;
        }
        let run = rest.iter().take(MAX_RUN).take_while(|&&c| c == b).count();
        if run < MIN_RUN {
            out.push(b);
            rest = tail;
            continue;
        }
        let mut repeats = run - 1;
        // Count characters '#' (6 repeats) and '$' (7) would end or restart
        // the packet: cover fewer bytes and let the rest go out plainly.
        if repeats + usize::from(RLE_BIAS) == usize::from(b'#')
            || repeats + usize::from(RLE_BIAS) == usize::from(b'$')
        {
            repeats = usize::from(b'"' - RLE_BIAS);
        }
        out.push(b);
        out.push(RLE_MARKER);
        // `repeats` is at most MAX_RUN - 1 = 97, so the sum fits in a u8.
        out.push(u8::try_from(repeats).map_or(b'~', |r| r + RLE_BIAS));
        rest = rest.get(1 + repeats..).unwrap_or_default();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::wire::rle_decode;
    use crate::wire::unescape_binary;

    fn frame(rle: bool, payload: &[u8]) -> Vec<u8> {
        let mut e = Encoder::new();
        e.set_rle(rle);
        let mut out = Vec::new();
        e.packet(payload, &mut out);
        out
    }

    /// The body between `$` and `#`, after checking the frame and checksum.
    fn body(framed: &[u8]) -> Vec<u8> {
        assert_eq!(framed[0], b'$');
        let hash = framed.len() - 3;
        assert_eq!(framed[hash], b'#');
        let body = &framed[1..hash];
        let cs = hex::parse_u64(&framed[hash + 1..]).unwrap();
        assert_eq!(u64::from(checksum(body)), cs);
        body.to_vec()
    }

    /// A body framed in pieces (a streamed memory reply) is the same
    /// packet as the body framed whole, wherever the pieces are cut.
    #[test]
    fn a_packet_framed_in_pieces_equals_the_whole() {
        let payload: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(7) + 0x11) as u8)
            .collect();
        let whole = frame(false, &payload);
        for piece in [1, 63, 64, 129, 1000, 5000] {
            let mut out = Vec::new();
            Encoder::open_packet(&mut out);
            let mut sum = 0u8;
            for c in payload.chunks(piece) {
                sum = sum.wrapping_add(Encoder::body_piece(c, &mut out));
            }
            Encoder::close_packet(sum, &mut out);
            assert_eq!(out, whole, "pieces of {piece}");
        }
    }

    #[test]
    fn hex_packets_match_packet_of_hex_text() {
        let data: Vec<u8> = (0..=255u8).chain([0x23, 0x24, 0x7d, 0x2a]).collect();
        for rle in [false, true] {
            let mut e = Encoder::new();
            e.set_rle(rle);
            let mut text = Vec::new();
            hex::encode(&data, &mut text);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            e.packet(&text, &mut a);
            e.packet_hex(&data, &mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn escapes_long_payloads_with_every_special() {
        // Specials at block edges, back to back, and `*` alone: the two
        // position streams of `escape_runs` interleave in every order.
        let mut data = Vec::new();
        for i in 0..4096u32 {
            data.push((i.wrapping_mul(7).wrapping_add(0x11)) as u8);
            if i % 13 == 0 {
                data.extend_from_slice(b"**#$}*");
            }
        }
        // All specials: the output outgrows its first sizing.
        let dense: Vec<u8> = b"#$}*".iter().copied().cycle().take(10_000).collect();
        for payload in [&data, &dense] {
            for cut in [0, 1, 63, 64, 65, 127, 128, 129] {
                let p = &payload[..payload.len() - cut];
                let framed = frame(false, p);
                let mut expect = vec![b'$'];
                crate::wire::escape_binary(p, &mut expect);
                let sum = crate::wire::checksum(&expect[1..]);
                expect.push(b'#');
                expect.extend_from_slice(format!("{sum:02x}").as_bytes());
                assert_eq!(framed, expect);
            }
        }
    }

    /// Random data with the four specials mixed in at densities from none
    /// to all: the block escaper and its checksum equal the byte-at-a-time
    /// escape ([`crate::wire::escape_binary`]) and sum, framed whole and
    /// in pieces, at every length around the block size and at a streamed
    /// piece's.
    #[test]
    fn random_payloads_match_the_byte_at_a_time_escape() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut lengths: Vec<usize> = (0..300).collect();
        lengths.extend([1000, 4095, 4096, 4097, 65_536 + 7, 128 << 10]);
        for (i, &len) in lengths.iter().enumerate() {
            // One special in 2^k bytes on average (k = 0: all specials;
            // k = 8: about as often as in random memory; k = 16: rare).
            let k = [0u32, 1, 3, 6, 8, 16][i % 6];
            let payload: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r >> (64 - 16) & ((1 << k) - 1) == 0 {
                        b"#$}*"[(r & 3) as usize]
                    } else {
                        (r >> 8) as u8
                    }
                })
                .collect();
            let mut want = Vec::new();
            crate::wire::escape_binary(&payload, &mut want);
            let want_sum = want.iter().fold(0u8, |s, &b| s.wrapping_add(b));
            let framed = frame(false, &payload);
            assert_eq!(body(&framed), want, "len {len} k {k}");
            let mut out = vec![b'+'];
            Encoder::open_packet(&mut out);
            let mut sum = 0u8;
            let piece = 1 + (next() as usize % 200);
            for c in payload.chunks(piece) {
                sum = sum.wrapping_add(Encoder::body_piece(c, &mut out));
            }
            assert_eq!(sum, want_sum, "len {len} k {k} pieces of {piece}");
            assert_eq!(&out[2..], &want[..], "len {len} k {k} pieces of {piece}");
        }
    }

    #[test]
    fn plain_packets() {
        assert_eq!(frame(false, b"OK"), b"$OK#9a");
        assert_eq!(frame(false, b""), b"$#00");
        assert_eq!(frame(true, b"OK"), b"$OK#9a");
    }

    #[test]
    fn notification_framing() {
        let mut out = Vec::new();
        Encoder::new().notification(b"Stop:T05", &mut out);
        assert_eq!(out[0], b'%');
        assert_eq!(&out[1..out.len() - 3], b"Stop:T05");
        assert_eq!(
            &out[out.len() - 2..],
            hex::encode_to_string(&[checksum(b"Stop:T05")]).as_bytes()
        );
    }

    #[test]
    fn escapes_specials() {
        assert_eq!(body(&frame(false, b"#$}*")), b"}\x03}\x04}]}\x0a");
    }

    #[test]
    fn checksum_covers_escaped_bytes() {
        let framed = frame(false, b"}");
        assert_eq!(framed, b"$}]#da");
    }

    #[test]
    fn appends_to_existing_output() {
        let mut out = b"+".to_vec();
        Encoder::new().packet(b"OK", &mut out);
        assert_eq!(out, b"+$OK#9a");
    }

    #[test]
    fn rle_short_runs_stay_plain() {
        assert_eq!(body(&frame(true, b"000")), b"000");
        assert_eq!(body(&frame(true, b"0000")), b"0* ");
    }

    #[test]
    fn rle_avoids_hash_and_dollar_counts() {
        // 7 bytes = 6 repeats -> '#': split into 6 + 1.
        assert_eq!(body(&frame(true, b"aaaaaaa")), b"a*\"a");
        // 8 bytes = 7 repeats -> '$': split into 6 + 2.
        assert_eq!(body(&frame(true, b"aaaaaaaa")), b"a*\"aa");
        // 9 bytes = 8 repeats -> '%' is fine.
        assert_eq!(body(&frame(true, b"aaaaaaaaa")), b"a*%");
        for n in 1..400 {
            let payload = vec![b'z'; n];
            let b = body(&frame(true, &payload));
            assert!(!b.contains(&b'#') && !b.contains(&b'$'), "n={n}");
            assert_eq!(rle_decode(&b).unwrap(), payload, "n={n}");
        }
    }

    #[test]
    fn rle_long_runs_split_at_97_repeats() {
        assert_eq!(body(&frame(true, &[b'x'; 98])), b"x*~");
        assert_eq!(body(&frame(true, &[b'x'; 99])), b"x*~x");
        assert_eq!(body(&frame(true, &[b'x'; 196])), b"x*~x*~");
    }

    #[test]
    fn rle_never_encodes_escaped_bytes() {
        let b = body(&frame(true, b"}}}}}}####****$$$$"));
        assert!(!b.contains(&RLE_MARKER));
        assert_eq!(unescape_binary(&b), b"}}}}}}####****$$$$");
    }

    #[test]
    fn rle_then_unescape_round_trips() {
        let payload = b"aaaa}}}}bbbbbbbbbbbbbb*c\x00\x00\x00\x00\x00";
        let b = body(&frame(true, payload));
        assert_eq!(unescape_binary(&rle_decode(&b).unwrap()), payload);
    }

    #[test]
    fn one_pass_matches_escape_binary_and_checksum() {
        // Every byte value, at every offset within a block, and lengths
        // around the block size.
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + i / 256) as u8).collect();
        for len in (0..70).chain([1000, 4096]) {
            for skip in [0, 1, 15] {
                let p = data.get(skip..skip + len.min(4096 - skip)).unwrap();
                let mut want = Vec::new();
                super::super::escape_binary(p, &mut want);
                let framed = frame(false, p);
                assert_eq!(body(&framed), want, "len {len} skip {skip}");
            }
        }
    }

    #[test]
    fn reused_output_is_not_reallocated() {
        // The session's output queue is cleared, not freed, between
        // replies: the second frame of the same size allocates nothing.
        for byte in [0x7du8, 0x00] {
            let payload = vec![byte; 0x20000];
            let mut out = Vec::new();
            Encoder::new().packet(&payload, &mut out);
            let expect = if byte == 0x7d { 0x40000 } else { 0x20000 } + 4;
            assert_eq!(out.len(), expect);
            let (cap, ptr) = (out.capacity(), out.as_ptr());
            out.clear();
            Encoder::new().packet(&payload, &mut out);
            assert_eq!((out.capacity(), out.as_ptr()), (cap, ptr));
        }
    }
}
