//! Hex helpers for the textual parts of RSP packets.
//!
//! The protocol writes numbers as big-endian hex digits without a prefix
//! (`m7fff0000,40`) and byte strings as two lowercase digits per byte
//! (`qRcmd,7265736574`). Every function here is total: malformed input gives
//! `None`, never a panic.
//!
//! ```
//! use stub::wire::hex;
//!
//! assert_eq!(hex::encode_to_string(b"ls"), "6c73");
//! assert_eq!(hex::decode(b"6C73").as_deref(), Some(&b"ls"[..]));
//! assert_eq!(hex::parse_u64(b"7fff0000"), Some(0x7fff_0000));
//! assert_eq!(hex::parse_i64_signed(b"-1"), Some(-1));
//! ```

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The lowercase hex digit for the low nibble of `nibble`.
#[inline]
pub(crate) fn digit(nibble: u8) -> u8 {
    // `& 0xf` keeps the index in range, so `get` never misses; the fallback
    // only exists to keep the codec free of indexing.
    DIGITS
        .get(usize::from(nibble & 0xf))
        .copied()
        .unwrap_or(b'0')
}

/// The value of one hex digit (either case), or `None`.
#[inline]
pub fn digit_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Appends two lowercase hex digits per byte of `bytes` to `out`.
///
/// The output is sized once and filled in place, two digits per step (a
/// 512 KiB `m` reply is encoded without a capacity check per digit).
pub fn encode(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + bytes.len().saturating_mul(2), 0);
    let Some(dst) = out.get_mut(start..) else {
        return;
    };
    for (pair, &b) in dst.chunks_exact_mut(2).zip(bytes) {
        if let [hi, lo] = pair {
            *hi = digit(b >> 4);
            *lo = digit(b);
        }
    }
}

/// [`encode`] into a new `String`.
pub fn encode_to_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().saturating_mul(2));
    for &b in bytes {
        s.push(char::from(digit(b >> 4)));
        s.push(char::from(digit(b)));
    }
    s
}

/// Decodes pairs of hex digits (either case) into bytes. `None` on an odd
/// length or a non-hex character. The empty string decodes to no bytes.
pub fn decode(hex: &[u8]) -> Option<Vec<u8>> {
    let pairs = hex.chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(hex.len() / 2);
    for pair in pairs {
        let (hi, lo) = match pair {
            [hi, lo] => (digit_value(*hi)?, digit_value(*lo)?),
            _ => return None,
        };
        out.push(hi << 4 | lo);
    }
    Some(out)
}

/// Parses a non-empty, unsigned, big-endian hex number (either case).
/// `None` when empty, when a character is not a hex digit, or on overflow.
/// Leading zeros are allowed in any number.
pub fn parse_u64(hex: &[u8]) -> Option<u64> {
    if hex.is_empty() {
        return None;
    }
    hex.iter().try_fold(0u64, |acc, &c| {
        let d = digit_value(c)?;
        acc.checked_mul(16)?.checked_add(u64::from(d))
    })
}

/// Parses a hex number with an optional leading `-`, as gdb writes "all
/// threads" (`Hg-1`, `vCont;c:-1`).
///
/// Without a sign the value must fit in `i64` (`8000000000000000` is `None`,
/// not a wrapped negative number); with a sign the magnitude may be up to
/// 2^63 (`-8000000000000000` is `i64::MIN`).
pub fn parse_i64_signed(hex: &[u8]) -> Option<i64> {
    match hex.split_first() {
        Some((b'-', rest)) => {
            let magnitude = parse_u64(rest)?;
            if magnitude == 1u64 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(magnitude).ok().map(|m| -m)
            }
        }
        _ => i64::try_from(parse_u64(hex)?).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_is_lowercase_two_digits_per_byte() {
        let mut out = b"x".to_vec();
        encode(&[0x00, 0x0f, 0xa5, 0xff], &mut out);
        assert_eq!(out, b"x000fa5ff");
        assert_eq!(encode_to_string(&[0xde, 0xad]), "dead");
        assert_eq!(encode_to_string(&[]), "");
    }

    #[test]
    fn decode_accepts_both_cases_and_rejects_garbage() {
        assert_eq!(decode(b"DeAdbeef"), Some(vec![0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(decode(b""), Some(vec![]));
        assert_eq!(decode(b"abc"), None, "odd length");
        assert_eq!(decode(b"zz"), None);
        assert_eq!(decode(b"0g"), None);
    }

    #[test]
    fn parse_u64_limits() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_u64(b"0000000000000000001"), Some(1));
        assert_eq!(parse_u64(b"10000000000000000"), None, "overflow");
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"12 "), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"A"), Some(10));
    }

    #[test]
    fn parse_i64_signed_limits() {
        assert_eq!(parse_i64_signed(b"-1"), Some(-1));
        assert_eq!(parse_i64_signed(b"1f"), Some(31));
        assert_eq!(parse_i64_signed(b"-8000000000000000"), Some(i64::MIN));
        assert_eq!(parse_i64_signed(b"7fffffffffffffff"), Some(i64::MAX));
        assert_eq!(parse_i64_signed(b"8000000000000000"), None);
        assert_eq!(parse_i64_signed(b"-8000000000000001"), None);
        assert_eq!(parse_i64_signed(b"-"), None);
        assert_eq!(parse_i64_signed(b""), None);
        assert_eq!(parse_i64_signed(b"--1"), None);
    }

    proptest::proptest! {
        #[test]
        fn hex_round_trip(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let s = encode_to_string(&bytes);
            proptest::prop_assert_eq!(decode(s.as_bytes()), Some(bytes));
        }

        #[test]
        fn u64_round_trip(v in proptest::num::u64::ANY) {
            proptest::prop_assert_eq!(parse_u64(format!("{v:x}").as_bytes()), Some(v));
        }
    }
}
