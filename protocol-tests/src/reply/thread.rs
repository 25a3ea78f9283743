//! Thread ids (`p<pid>.<tid>`, `<tid>`, `-1`, `0`) and `qfThreadInfo` /
//! `qsThreadInfo` reply chunks.
//!
//! ```text
//! thread-id := 'p' part '.' part | 'p' part | part
//! part      := hex | '-1' (all) | '0' (any)
//! list      := 'm' thread-id (',' thread-id)* | 'l'
//! ```

use super::parse_hex_u64;
use super::ErrorReply;
use super::ParseError;

/// One component of a thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdPart {
    /// `-1`: all.
    All,
    /// `0`: any.
    Any,
    /// A concrete id.
    Id(u64),
}

impl IdPart {
    fn parse(s: &[u8]) -> Option<Self> {
        if s == b"-1" {
            return Some(Self::All);
        }
        match parse_hex_u64(s)? {
            0 => Some(Self::Any),
            v => Some(Self::Id(v)),
        }
    }

    /// The concrete id, if any.
    pub fn id(self) -> Option<u64> {
        match self {
            Self::Id(v) => Some(v),
            _ => None,
        }
    }
}

impl std::fmt::Display for IdPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("-1"),
            Self::Any => f.write_str("0"),
            Self::Id(v) => write!(f, "{v:x}"),
        }
    }
}

/// A thread id as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId {
    /// The process part, present in multiprocess form.
    pub pid: Option<IdPart>,
    /// The thread part (`p<pid>` alone means all threads of the process).
    pub tid: IdPart,
}

impl ThreadId {
    /// Parse a thread id.
    pub fn parse(s: &[u8]) -> Result<Self, ParseError> {
        let bad = || ParseError::BadHex {
            field: "thread id",
            text: String::from_utf8_lossy(s).into_owned(),
        };
        if let Some(rest) = s.strip_prefix(b"p") {
            let (pid, tid) = match rest.iter().position(|&b| b == b'.') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            let pid = IdPart::parse(pid).ok_or_else(bad)?;
            let tid = match tid {
                Some(t) => IdPart::parse(t).ok_or_else(bad)?,
                None => IdPart::All,
            };
            Ok(Self {
                pid: Some(pid),
                tid,
            })
        } else {
            Ok(Self {
                pid: None,
                tid: IdPart::parse(s).ok_or_else(bad)?,
            })
        }
    }
}

impl std::fmt::Display for ThreadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(p) => write!(f, "p{p}.{}", self.tid),
            None => write!(f, "{}", self.tid),
        }
    }
}

/// One `qfThreadInfo`/`qsThreadInfo` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadListChunk {
    /// Ids in this chunk.
    pub ids: Vec<ThreadId>,
    /// True for `l` (end of list).
    pub last: bool,
}

impl ThreadListChunk {
    /// Parse a thread-list reply.
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        match raw.split_first() {
            Some((b'l', [])) => Ok(Self {
                ids: Vec::new(),
                last: true,
            }),
            Some((b'm', rest)) => Ok(Self {
                ids: rest
                    .split(|&b| b == b',')
                    .map(ThreadId::parse)
                    .collect::<Result<_, _>>()?,
                last: false,
            }),
            Some(_) => Err(ParseError::UnexpectedKind(
                String::from_utf8_lossy(raw).into_owned(),
            )),
            None => Err(ParseError::Empty),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let t = ThreadId::parse(b"p4bd2.4bd3").unwrap();
        assert_eq!(
            t,
            ThreadId {
                pid: Some(IdPart::Id(0x4bd2)),
                tid: IdPart::Id(0x4bd3)
            }
        );
        assert_eq!(t.to_string(), "p4bd2.4bd3");
        assert_eq!(ThreadId::parse(b"p0.0").unwrap().tid, IdPart::Any);
        assert_eq!(ThreadId::parse(b"p1.-1").unwrap().tid, IdPart::All);
        assert_eq!(ThreadId::parse(b"-1").unwrap().tid, IdPart::All);
        assert_eq!(ThreadId::parse(b"p12").unwrap().tid, IdPart::All);
        assert!(ThreadId::parse(b"p.1").is_err());
        assert!(ThreadId::parse(b"").is_err());
    }

    #[test]
    fn lists() {
        let c = ThreadListChunk::parse(b"mp1.1,p1.2").unwrap();
        assert_eq!(c.ids.len(), 2);
        assert!(!c.last);
        assert!(ThreadListChunk::parse(b"l").unwrap().last);
        assert!(ThreadListChunk::parse(b"OK").is_err());
        assert!(ThreadListChunk::parse(b"E01").is_err());
    }
}
