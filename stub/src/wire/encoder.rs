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

    /// Like [`Encoder::packet`] but framed as a `%...#cc` notification
    /// (e.g. `%Stop:T05...` in non-stop mode).
    pub fn notification(&self, payload: &[u8], out: &mut Vec<u8>) {
        self.frame(b'%', payload, out);
    }

    fn frame(&self, start: u8, payload: &[u8], out: &mut Vec<u8>) {
        // Exact size without RLE; an upper bound with it.
        let escapes = payload.iter().filter(|&&b| is_special(b)).count();
        out.reserve(payload.len() + escapes + 4);
        out.push(start);
        let sum = if self.rle {
            let body_start = out.len();
            rle_encode(payload, out);
            out.get(body_start..).map(checksum).unwrap_or(0)
        } else {
            escape_and_sum(payload, escapes, out)
        };
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

/// Bytes checked at once by [`escape_and_sum`]: a block without a special
/// byte is copied whole. Memory often holds a `#`, `$`, `}` or `*` every
/// few dozen bytes, so blocks are kept small.
const BLOCK: usize = 16;

/// Appends `payload` to `out` with the four specials escaped (like
/// [`escape_binary`](super::escape_binary)) and returns the checksum of what
/// it appended, in one pass: a 1 MiB `x` reply is framed at memory speed
/// rather than a byte at a time. `escapes` is the number of special bytes in
/// `payload`; the body is sized once and filled in place (a block without a
/// special byte is one 16-byte copy).
fn escape_and_sum(payload: &[u8], escapes: usize, out: &mut Vec<u8>) -> u8 {
    let start = out.len();
    out.resize(start + payload.len() + escapes, 0);
    let Some(dst) = out.get_mut(start..) else {
        return 0;
    };
    let mut w = 0;
    let mut sum = 0u8;
    let mut blocks = payload.chunks_exact(BLOCK);
    for block in &mut blocks {
        let mut special = false;
        let mut s = 0u8;
        for &b in block {
            special |= is_special(b);
            s = s.wrapping_add(b);
        }
        if special {
            sum = sum.wrapping_add(escape_bytes(block, dst, &mut w));
        } else {
            if let Some(d) = dst.get_mut(w..w + BLOCK) {
                d.copy_from_slice(block);
            }
            w += BLOCK;
            sum = sum.wrapping_add(s);
        }
    }
    sum.wrapping_add(escape_bytes(blocks.remainder(), dst, &mut w))
}

/// The byte-at-a-time path of [`escape_and_sum`]: writes `data` escaped at
/// `dst[*w..]`, advances `*w`, returns the checksum of what it wrote.
fn escape_bytes(data: &[u8], dst: &mut [u8], w: &mut usize) -> u8 {
    let mut sum = 0u8;
    for &b in data {
        if is_special(b) {
            if let Some([e, x]) = dst.get_mut(*w..*w + 2) {
                *e = ESCAPE;
                *x = b ^ 0x20;
            }
            *w += 2;
            sum = sum.wrapping_add(ESCAPE).wrapping_add(b ^ 0x20);
        } else {
            if let Some(d) = dst.get_mut(*w) {
                *d = b;
            }
            *w += 1;
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
    fn large_payload_reserves_once() {
        let payload = vec![0x7du8; 0x20000];
        let mut out = Vec::new();
        Encoder::new().packet(&payload, &mut out);
        assert_eq!(out.len(), 0x40000 + 4);
        assert_eq!(out.capacity(), out.len(), "exact reservation");
    }
}
