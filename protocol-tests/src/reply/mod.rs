//! Typed parsers for server replies. None of them panics, whatever the input
//! (property-tested); malformed input is a [`ParseError`].

mod features;
mod json;
mod kv;
mod regs;
mod stop;
mod thread;
mod xfer;

pub use features::Feature;
pub use features::Features;
pub use json::parse_accelerator_actions;
pub use json::parse_json_reply;
pub use json::parse_threads_info;
pub use json::AcceleratorActions;
pub use json::AcceleratorBreakpoint;
pub use json::ConnectInfo;
pub use json::JsonThreadInfo;
pub use kv::KeyValues;
pub use kv::MemoryRegion;
pub use regs::RegisterBlock;
pub use stop::StopKind;
pub use stop::StopReply;
pub use stop::StopSignal;
pub use stop::WatchKind;
pub use thread::IdPart;
pub use thread::ThreadId;
pub use thread::ThreadListChunk;
pub use xfer::XferChunk;

/// Why a reply did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Empty where content was required.
    #[error("empty reply")]
    Empty,
    /// The reply is an error packet.
    #[error("error reply: {0}")]
    ErrorReply(ErrorReply),
    /// A hex field was malformed.
    #[error("bad hex in {field}: {text:?}")]
    BadHex {
        /// Which field.
        field: &'static str,
        /// The offending text.
        text: String,
    },
    /// The reply did not start with an expected letter.
    #[error("unexpected reply kind {0:?}")]
    UnexpectedKind(String),
    /// Structural problem (missing field, wrong JSON type, ...).
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was being parsed.
        what: &'static str,
        /// Details, including a JSON path where relevant.
        detail: String,
    },
}

pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> ParseError {
    ParseError::Malformed {
        what,
        detail: detail.into(),
    }
}

/// An error reply: `Exx`, `Exx;<hex message>` (lldb with `QEnableErrorStrings`)
/// or `E.<message>` (gdb's textual form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// The two-digit code, absent for `E.msg`.
    pub code: Option<u8>,
    /// The message, when one was sent.
    pub message: Option<String>,
}

impl std::fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, &self.message) {
            (Some(c), Some(m)) => write!(f, "E{c:02x} ({m})"),
            (Some(c), None) => write!(f, "E{c:02x}"),
            (None, Some(m)) => write!(f, "E.{m}"),
            (None, None) => write!(f, "E"),
        }
    }
}

impl ErrorReply {
    /// Parse an error reply; `None` if `raw` is not one.
    pub fn parse(raw: &[u8]) -> Option<Self> {
        let rest = raw.strip_prefix(b"E")?;
        if let Some(msg) = rest.strip_prefix(b".") {
            return Some(Self {
                code: None,
                message: Some(String::from_utf8_lossy(msg).into_owned()),
            });
        }
        let (code_part, msg_part) = match rest.iter().position(|&b| b == b';') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        if code_part.len() != 2 {
            return None;
        }
        let code = parse_hex_u64(code_part).and_then(|v| u8::try_from(v).ok())?;
        let message = msg_part.map(|m| match decode_hex(m) {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => String::from_utf8_lossy(m).into_owned(),
        });
        Some(Self {
            code: Some(code),
            message,
        })
    }
}

/// Coarse classification of any reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyKind {
    /// `OK`
    Ok,
    /// The empty reply (unsupported packet).
    Empty,
    /// An error reply.
    Error(ErrorReply),
    /// Anything else.
    Other,
}

/// Classify a reply payload.
pub fn classify(raw: &[u8]) -> ReplyKind {
    if raw.is_empty() {
        ReplyKind::Empty
    } else if raw == b"OK" {
        ReplyKind::Ok
    } else if let Some(e) = ErrorReply::parse(raw) {
        ReplyKind::Error(e)
    } else {
        ReplyKind::Other
    }
}

/// Parse a hex number (no prefix, 1..=16 digits, either case).
pub fn parse_hex_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        v = v << 4 | u64::from(hex_digit(b)?);
    }
    Some(v)
}

pub(crate) fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decode a hex byte string (`"4f4b"` → `b"OK"`).
pub fn decode_hex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks(2)
        .map(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?))
        .collect()
}

/// Encode bytes as lowercase hex.
pub fn encode_hex(data: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Parse an `m` reply: hex bytes, or an error.
pub fn parse_memory(raw: &[u8]) -> Result<Vec<u8>, ParseError> {
    if let Some(e) = ErrorReply::parse(raw) {
        return Err(ParseError::ErrorReply(e));
    }
    decode_hex(raw).ok_or_else(|| ParseError::BadHex {
        field: "memory",
        text: String::from_utf8_lossy(raw).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn error_forms() {
        assert_eq!(
            ErrorReply::parse(b"E01"),
            Some(ErrorReply {
                code: Some(1),
                message: None
            })
        );
        assert_eq!(
            ErrorReply::parse(b"Eff;756e6b6e6f776e"),
            Some(ErrorReply {
                code: Some(0xff),
                message: Some("unknown".into())
            })
        );
        assert_eq!(
            ErrorReply::parse(b"E.no such thread"),
            Some(ErrorReply {
                code: None,
                message: Some("no such thread".into())
            })
        );
        assert_eq!(ErrorReply::parse(b"E1"), None);
        assert_eq!(classify(b""), ReplyKind::Empty);
        assert_eq!(classify(b"OK"), ReplyKind::Ok);
        assert_eq!(classify(b"T05"), ReplyKind::Other);
    }

    #[test]
    fn hex_helpers() {
        assert_eq!(parse_hex_u64(b"7fFF"), Some(0x7fff));
        assert_eq!(parse_hex_u64(b""), None);
        assert_eq!(parse_hex_u64(b"10000000000000000"), None);
        assert_eq!(decode_hex(b"4f4b"), Some(b"OK".to_vec()));
        assert_eq!(decode_hex(b"4f4"), None);
        assert_eq!(
            parse_memory(b"E14"),
            Err(ParseError::ErrorReply(ErrorReply {
                code: Some(0x14),
                message: None
            }))
        );
    }

    proptest! {
        #[test]
        fn never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = classify(&data);
            let _ = parse_memory(&data);
            let _ = StopReply::parse(&data);
            let _ = Features::parse(&data);
            let _ = XferChunk::parse(&data);
            let _ = ThreadListChunk::parse(&data);
            let _ = ThreadId::parse(&data);
            let _ = RegisterBlock::parse(&data);
            let _ = KeyValues::parse(&data);
            let _ = MemoryRegion::parse(&data);
            let _ = parse_threads_info(&data);
            let _ = parse_accelerator_actions(&data);
        }

        #[test]
        fn stop_like_garbage_never_panics(s in "[TSWXO][0-9a-fA-F]{0,3}[;:a-z0-9.,-]{0,60}") {
            let _ = StopReply::parse(s.as_bytes());
        }

        #[test]
        fn hex_roundtrip(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(decode_hex(encode_hex(&data).as_bytes()), Some(data));
        }
    }
}
