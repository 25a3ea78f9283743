//! The I/O-free GDB Remote Serial Protocol codec: bytes in, frames out, and
//! back.
//!
//! This module knows nothing of sockets, `mio` or targets. The server reads
//! whatever a non-blocking socket returns, feeds it to a [`Framer`], and acts
//! on each [`WireEvent`]; replies are framed by an [`Encoder`] into a buffer
//! the server writes out. Because nothing here does I/O, the whole module is
//! unit-tested, property-tested and fuzzed (`stub/fuzz`).
//!
//! # Framing rules
//!
//! The rules come from the gdb manual, [Overview] of the remote protocol,
//! [Binary Data] and [Notification Packets]:
//!
//! - **Packets** are `$` *body* `#` *cc*, where *cc* is two hex digits of the
//!   sum of the body bytes modulo 256, computed over the bytes as they are on
//!   the wire (escapes and run-length markers included).
//! - **Acknowledgements.** In the default *ack mode* the receiver answers each
//!   packet with `+` (good checksum) or `-` (bad checksum, "send it again").
//!   After `QStartNoAckMode` both sides stop sending them; checksums are still
//!   sent and we still verify them, but a bad one is only reported and
//!   dropped. The [`Framer`] queues the `+`/`-` bytes itself (see
//!   [`Framer::take_replies`]); the caller only switches modes. A `-` asks
//!   for the last packet again only until its `+`, at most
//!   [`MAX_RESENDS`] times, and never in no-ack mode ([`Resender`]).
//! - **Escapes.** Inside a body, `}` (0x7d) escapes the next byte, which is
//!   sent XOR 0x20. A body that ends with a lone `}` is refused
//!   ([`WireEvent::BadEscape`]), as gdb's `remote_unescape_input` refuses it. `#`, `$` and `}` must always be escaped; replies also
//!   escape `*` so that it is not read as a run-length marker. `$` and `#`
//!   are therefore always structural: a `$` inside a body abandons the
//!   partial packet and starts a new one (gdb recovers the same way).
//! - **Run-length encoding** (replies only): `X*n` means "byte `X`, then
//!   `n - 29` more copies of it", where `n` is a printable character. Senders
//!   avoid `n` of `#` and `$`. RLE is undone before escapes, on the raw bytes.
//! - **Notifications** are `%` *body* `#` *cc*, sent by the stub and never
//!   acknowledged.
//! - **Interrupts.** A lone `0x03` byte outside a packet is a Ctrl-C request.
//! - Any other byte between packets is noise and is skipped.
//! - **Packet size.** The stub advertises `PacketSize=` (in hex) in its
//!   `qSupported` reply; it bounds the body length of packets the client
//!   sends. Longer packets are reported as [`WireEvent::Oversize`] without
//!   being buffered.
//!
//! # Escaping contract
//!
//! Payloads crossing this module's API are always *logical* bytes: the
//! [`Framer`] hands out packets with `}` escapes already undone, and
//! [`Encoder::packet`] applies the escapes itself. Code that builds a binary
//! reply (`x`, `vFile:pread`, `qXfer`) must therefore put the raw bytes in
//! the payload and must **not** call [`escape_binary`] on it first, or the
//! data is escaped twice. [`escape_binary`] and [`unescape_binary`] exist
//! for code that works on wire-level bodies directly (tests, the fuzzer, a
//! protocol-test client).
//!
//! ```
//! use stub::wire::{Encoder, Framer, WireEvent, DEFAULT_MAX_PACKET};
//!
//! let mut framer = Framer::new(DEFAULT_MAX_PACKET);
//! framer.push(b"+$qSupp");
//! framer.push(b"orted#37");
//! assert!(matches!(framer.next_event(), Some(WireEvent::Ack)));
//! match framer.next_event() {
//!     Some(WireEvent::Packet(p)) => assert_eq!(p, b"qSupported"),
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(framer.take_replies().as_deref(), Some(&b"+"[..]));
//!
//! let mut out = Vec::new();
//! Encoder::new().packet(b"OK", &mut out);
//! assert_eq!(out, b"$OK#9a");
//! ```
//!
//! [Overview]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Overview.html
//! [Binary Data]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Overview.html#Binary-Data
//! [Notification Packets]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Notification-Packets.html
#![forbid(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::todo,
    clippy::unimplemented
)]

mod encoder;
mod framer;
pub mod hex;
#[cfg(test)]
mod proptests;
mod resend;

pub use encoder::Encoder;
pub use framer::Framer;
pub use resend::Resender;
pub use resend::MAX_RESENDS;

/// The largest packet body we accept, and what we advertise as
/// `PacketSize` (written in hex on the wire: `PacketSize=20000`).
///
/// 128 KiB matches lldb-server and lets a client move 64 KiB of memory per
/// `m` packet or 128 KiB per binary `x`/`X` packet.
pub const DEFAULT_MAX_PACKET: usize = 0x20000;

/// The tracing target of this module.
const LOG_TARGET: &str = "gdb_remote::wire";

/// The escape character of binary data.
pub(crate) const ESCAPE: u8 = b'}';
/// The run-length marker.
pub(crate) const RLE_MARKER: u8 = b'*';
/// What is added to a run length to make its count character.
pub(crate) const RLE_BIAS: u8 = 29;

/// One thing the [`Framer`] recognised in the byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireEvent {
    /// A complete packet with a good checksum. The payload has `}` escapes
    /// undone; in server mode run-length markers are left alone (clients do
    /// not send them), in client mode they are expanded.
    Packet(Vec<u8>),
    /// A complete `%...#cc` notification with a good checksum, decoded like
    /// [`WireEvent::Packet`]. Notifications are never acknowledged.
    Notification(Vec<u8>),
    /// A `+` between packets.
    Ack,
    /// A `-` between packets: the peer wants the last packet again. Peers in
    /// no-ack mode should not send it; the caller may ignore it there.
    Nak,
    /// A `0x03` byte between packets (Ctrl-C).
    Interrupt,
    /// A packet or notification whose checksum did not match (or was not
    /// hex). It has been dropped. For a packet in ack mode, a `-` is already
    /// queued in [`Framer::take_replies`].
    BadChecksum,
    /// A packet whose body exceeded the framer's maximum. Its bytes were
    /// discarded as they arrived; the framer still checked its checksum (a
    /// bad one gives [`WireEvent::BadChecksum`] instead) and, in ack mode,
    /// queued a `+`. The caller should reply with an error (`E..`).
    Oversize,
    /// A packet with a good checksum whose body ends with a lone `}`: the
    /// escape has no byte to apply to, so the body is not what the sender
    /// meant and is dropped (gdb's own `remote_unescape_input` refuses it
    /// too: "Unmatched escape character"). In ack mode a `+` is queued (the
    /// frame arrived intact); the caller should reply with an error.
    BadEscape,
}

/// Malformed run-length encoding found by [`rle_decode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A `*` with no byte before it to repeat.
    #[error("run-length marker at offset {offset} has no byte to repeat")]
    RleWithoutByte {
        /// Offset of the `*` in the input.
        offset: usize,
    },
    /// A `*` at the very end of the input.
    #[error("run-length marker at offset {offset} has no count character")]
    RleMissingCount {
        /// Offset of the `*` in the input.
        offset: usize,
    },
    /// A count character that does not encode 3..=97 repeats.
    #[error("run-length count {count:#04x} at offset {offset} is not in ' '..='~'")]
    RleBadCount {
        /// Offset of the count character in the input.
        offset: usize,
        /// The count character.
        count: u8,
    },
}

/// Whether `b` has to be escaped in a reply body.
#[inline]
pub(crate) fn needs_escape(b: u8) -> bool {
    matches!(b, b'#' | b'$' | ESCAPE | RLE_MARKER)
}

/// The RSP checksum: the sum of `data` modulo 256.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |acc, &b| acc.wrapping_add(b))
}

/// Appends `data` to `out` with `#`, `$`, `}` and `*` escaped as `}` followed
/// by the byte XOR 0x20. See the [escaping contract](self#escaping-contract)
/// before using it on a reply payload.
pub fn escape_binary(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len());
    let mut rest = data;
    while let Some(pos) = rest.iter().position(|&b| needs_escape(b)) {
        let Some((plain, tail)) = rest.split_at_checked(pos) else {
            break;
        };
        out.extend_from_slice(plain);
        let Some((&special, tail)) = tail.split_first() else {
            rest = tail;
            break;
        };
        out.push(ESCAPE);
        out.push(special ^ 0x20);
        rest = tail;
    }
    out.extend_from_slice(rest);
}

/// Undoes `}` escaping: every byte after a `}` is XORed with 0x20. A `}`
/// at the very end has nothing to escape and is kept as it is.
pub fn unescape_binary(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut unescaper = Unescaper::default();
    for &b in data {
        unescaper.feed(b, &mut out);
    }
    unescaper.finish(&mut out);
    out
}

/// Expands run-length markers (`X*n` → `X` and `n - 29` more `X`) in a
/// packet body as it was on the wire, before `}` escapes are undone. Strict:
/// a marker without a byte before it, without a count, or with a count
/// character outside `' '..='~'` is an error.
pub fn rle_decode(data: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::with_capacity(data.len());
    let mut iter = data.iter().copied().enumerate();
    while let Some((offset, b)) = iter.next() {
        if b != RLE_MARKER {
            out.push(b);
            continue;
        }
        let Some(&last) = out.last() else {
            return Err(WireError::RleWithoutByte { offset });
        };
        let Some((count_offset, count)) = iter.next() else {
            return Err(WireError::RleMissingCount { offset });
        };
        let repeats = rle_repeats(count).ok_or(WireError::RleBadCount {
            offset: count_offset,
            count,
        })?;
        out.resize(out.len() + usize::from(repeats), last);
    }
    Ok(out)
}

/// The number of extra copies a run-length count character stands for, or
/// `None` when it is not a printable character (`' '` = 3 .. `'~'` = 97).
#[inline]
pub(crate) fn rle_repeats(count: u8) -> Option<u8> {
    (b' '..=b'~').contains(&count).then(|| count - RLE_BIAS)
}

/// Incremental `}` unescaping, shared by [`unescape_binary`] and the
/// [`Framer`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Unescaper {
    pending: bool,
}

impl Unescaper {
    /// Decodes one wire byte into `out`.
    #[inline]
    pub(crate) fn feed(&mut self, b: u8, out: &mut Vec<u8>) {
        if self.pending {
            self.pending = false;
            out.push(b ^ 0x20);
        } else if b == ESCAPE {
            self.pending = true;
        } else {
            out.push(b);
        }
    }

    /// Ends the input: a dangling `}` is kept literally. Returns whether
    /// there was one (the [`Framer`] rejects such a packet).
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> bool {
        let dangling = std::mem::take(&mut self.pending);
        if dangling {
            out.push(ESCAPE);
        }
        dangling
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_sum_mod_256() {
        assert_eq!(checksum(b""), 0);
        assert_eq!(checksum(b"OK"), 0x9a);
        assert_eq!(checksum(&[0xff, 0x02]), 0x01);
    }

    #[test]
    fn escape_binary_escapes_the_four_specials_only() {
        let mut out = Vec::new();
        escape_binary(b"a#b$c}d*e%f\x03+-", &mut out);
        assert_eq!(out, b"a}\x03b}\x04c}]d}\x0ae%f\x03+-");
        assert_eq!(unescape_binary(&out), b"a#b$c}d*e%f\x03+-");
    }

    #[test]
    fn escape_binary_appends() {
        let mut out = b"F3;".to_vec();
        escape_binary(b"}}}", &mut out);
        assert_eq!(out, b"F3;}]}]}]");
    }

    #[test]
    fn unescape_keeps_dangling_escape() {
        assert_eq!(unescape_binary(b"ab}"), b"ab}");
        assert_eq!(unescape_binary(b"}"), b"}");
        assert_eq!(unescape_binary(b""), b"");
        // Any byte may be escaped, not only the four specials.
        assert_eq!(unescape_binary(b"}A"), b"a");
    }

    #[test]
    fn rle_decode_expands_runs() {
        // ' ' = 32 = 3 repeats.
        assert_eq!(rle_decode(b"0* ").unwrap(), b"0000");
        assert_eq!(rle_decode(b"ab*\"c").unwrap(), b"abbbbbbc");
        // '~' = 97 repeats.
        assert_eq!(rle_decode(b"x*~").unwrap(), vec![b'x'; 98]);
        // A count of `}` is legal (gdbserver emits it) and is not an escape.
        assert_eq!(rle_decode(b"x*}").unwrap(), vec![b'x'; 97]);
        assert_eq!(rle_decode(b"").unwrap(), b"");
    }

    #[test]
    fn rle_decode_rejects_malformed_runs() {
        assert_eq!(
            rle_decode(b"*!"),
            Err(WireError::RleWithoutByte { offset: 0 })
        );
        assert_eq!(
            rle_decode(b"ab*"),
            Err(WireError::RleMissingCount { offset: 2 })
        );
        assert_eq!(
            rle_decode(b"a*\x1f"),
            Err(WireError::RleBadCount {
                offset: 2,
                count: 0x1f
            })
        );
        assert_eq!(
            rle_decode(b"a*\x7f"),
            Err(WireError::RleBadCount {
                offset: 2,
                count: 0x7f
            })
        );
    }

    #[test]
    fn rle_repeats_range() {
        assert_eq!(rle_repeats(b' '), Some(3));
        assert_eq!(rle_repeats(b'~'), Some(97));
        assert_eq!(rle_repeats(0x1f), None);
        assert_eq!(rle_repeats(0x7f), None);
    }

    #[test]
    fn default_max_packet_is_128k() {
        assert_eq!(format!("{DEFAULT_MAX_PACKET:x}"), "20000");
    }
}
