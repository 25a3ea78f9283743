//! Typed reply builders. Handlers produce payloads through these helpers;
//! framing, checksums, escaping and RLE belong to `wire::Encoder`.

use crate::wire::hex;

/// `OK`
pub fn ok() -> Vec<u8> {
    b"OK".to_vec()
}

/// The empty reply ("not supported").
pub fn empty() -> Vec<u8> {
    Vec::new()
}

/// `Exx`, or `Exx;message` when the client enabled error strings
/// (`QEnableErrorStrings`; lldb docs: "E<hex>;<hex-encoded message>").
pub fn error(code: crate::error::ErrorCode, message: &str, strings: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + message.len() * 2);
    out.push(b'E');
    push_hex_u8(&mut out, code.wire());
    if strings && !message.is_empty() {
        out.push(b';');
        hex::encode(message.as_bytes(), &mut out);
    }
    out
}

/// Hex-encode a byte string.
pub fn hex_bytes(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 2);
    hex::encode(data, &mut out);
    out
}

/// Append a byte as two lowercase hex digits.
pub fn push_hex_u8(out: &mut Vec<u8>, v: u8) {
    const D: &[u8; 16] = b"0123456789abcdef";
    out.push(D[usize::from(v >> 4)]);
    out.push(D[usize::from(v & 0xf)]);
}

/// Append a number in lowercase hex without leading zeros.
pub fn push_hex_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(format!("{v:x}").as_bytes());
}

/// `qXfer` chunk: `l`/`m` + window of `doc` at `offset`, `length`.
pub fn xfer_chunk(doc: &[u8], offset: u64, length: u64) -> Vec<u8> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(doc.len());
    let len = usize::try_from(length).unwrap_or(usize::MAX);
    let end = start.saturating_add(len).min(doc.len());
    let mut out = Vec::with_capacity(end - start + 1);
    out.push(if end >= doc.len() { b'l' } else { b'm' });
    out.extend_from_slice(doc.get(start..end).unwrap_or_default());
    out
}

/// `O` console output packet.
pub fn console(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + text.len() * 2);
    out.push(b'O');
    hex::encode(text.as_bytes(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        assert_eq!(
            error(
                crate::error::ErrorCode::Errno(nix::errno::Errno::EBADF),
                "bad",
                false
            ),
            b"E09"
        );
        assert_eq!(
            error(
                crate::error::ErrorCode::Errno(nix::errno::Errno::EBADF),
                "ab",
                true
            ),
            b"E09;6162"
        );
    }

    #[test]
    fn chunks() {
        assert_eq!(xfer_chunk(b"hello", 0, 3), b"mhel");
        assert_eq!(xfer_chunk(b"hello", 3, 3), b"llo");
        assert_eq!(xfer_chunk(b"hello", 9, 3), b"l");
        assert_eq!(xfer_chunk(b"hello", 0, 5), b"lhello");
        assert_eq!(xfer_chunk(b"hello", u64::MAX, u64::MAX), b"l");
    }
}
