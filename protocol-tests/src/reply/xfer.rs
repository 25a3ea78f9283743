//! `qXfer:<object>:read` reply chunks.
//!
//! ```text
//! reply := 'm' binary-data    more data follows
//!        | 'l' binary-data    last chunk
//!        | 'E' xx | ''
//! ```
//! The data is binary-escaped on the wire and is unescaped here.

use super::ErrorReply;
use super::ParseError;
use crate::framing;

/// One chunk of a `qXfer` read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XferChunk {
    /// True for `m` (more to read).
    pub more: bool,
    /// Unescaped data.
    pub data: Vec<u8>,
}

impl XferChunk {
    /// Parse a chunk (RLE already expanded, escapes still present).
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        let (&kind, rest) = raw.split_first().ok_or(ParseError::Empty)?;
        let more = match kind {
            b'm' => true,
            b'l' => false,
            _ => {
                return Err(ParseError::UnexpectedKind(
                    String::from_utf8_lossy(raw).into_owned(),
                ))
            }
        };
        let data = framing::unescape(rest).map_err(|e| ParseError::Malformed {
            what: "qXfer data",
            detail: e.to_string(),
        })?;
        Ok(Self { more, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks() {
        assert_eq!(
            XferChunk::parse(b"l<a/>").unwrap(),
            XferChunk {
                more: false,
                data: b"<a/>".to_vec()
            }
        );
        assert_eq!(
            XferChunk::parse(b"m}]").unwrap(),
            XferChunk {
                more: true,
                data: b"}".to_vec()
            }
        );
        assert!(XferChunk::parse(b"").is_err());
        assert!(XferChunk::parse(b"E00").is_err());
        assert!(XferChunk::parse(b"m}").is_err());
    }
}
