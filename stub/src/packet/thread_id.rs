//! Thread ids on the wire.
//!
//! ```text
//! thread-id := [ 'p' pid '.' ] tid | 'p' pid
//! pid, tid  := hex | '-1' (all) | '0' (any)
//! ```
//! See <https://sourceware.org/gdb/current/onlinedocs/gdb.html/Packets.html#thread_002did-syntax>.

use super::ParseError;
use crate::wire::hex;

/// One component of a thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdSel {
    /// `-1`: all.
    All,
    /// `0`: any (the client does not care which).
    Any,
    /// A specific id.
    Id(u64),
}

impl IdSel {
    fn parse(s: &[u8]) -> Result<Self, ParseError> {
        if s == b"-1" {
            return Ok(IdSel::All);
        }
        match hex::parse_u64(s) {
            Some(0) => Ok(IdSel::Any),
            Some(v) => Ok(IdSel::Id(v)),
            None => Err(ParseError::new("bad thread id")),
        }
    }
}

/// A thread id as the client wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadId {
    /// Process part (`p<pid>.`), when the client used the multiprocess form.
    pub pid: Option<IdSel>,
    /// Thread part. A bare `p<pid>` means all threads of that process.
    pub tid: IdSel,
}

impl ThreadId {
    /// Parse a thread id.
    pub fn parse(s: &[u8]) -> Result<Self, ParseError> {
        if let Some(rest) = s.strip_prefix(b"p") {
            let mut parts = rest.splitn(2, |b| *b == b'.');
            let pid = IdSel::parse(parts.next().unwrap_or_default())?;
            let tid = match parts.next() {
                Some(t) => IdSel::parse(t)?,
                None => IdSel::All,
            };
            Ok(ThreadId {
                pid: Some(pid),
                tid,
            })
        } else {
            Ok(ThreadId {
                pid: None,
                tid: IdSel::parse(s)?,
            })
        }
    }

    /// `-1` / `p-1.-1`.
    pub fn all() -> Self {
        ThreadId {
            pid: None,
            tid: IdSel::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            ThreadId::parse(b"p4c43.4c44").unwrap(),
            ThreadId {
                pid: Some(IdSel::Id(0x4c43)),
                tid: IdSel::Id(0x4c44)
            }
        );
        assert_eq!(
            ThreadId::parse(b"p0.0").unwrap(),
            ThreadId {
                pid: Some(IdSel::Any),
                tid: IdSel::Any
            }
        );
        assert_eq!(ThreadId::parse(b"-1").unwrap().tid, IdSel::All);
        assert_eq!(ThreadId::parse(b"p12.-1").unwrap().tid, IdSel::All);
        assert_eq!(ThreadId::parse(b"p12").unwrap().tid, IdSel::All);
        assert_eq!(ThreadId::parse(b"1f").unwrap().tid, IdSel::Id(0x1f));
        assert!(ThreadId::parse(b"zz").is_err());
        assert!(ThreadId::parse(b"").is_err());
        assert!(ThreadId::parse(b"p").is_err());
    }
}
