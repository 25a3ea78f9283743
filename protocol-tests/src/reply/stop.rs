//! Stop replies.
//!
//! ```text
//! S AA
//! T AA (key ':' value ';')*        key: hex register number | thread | core | name |
//!                                      threads | thread-pcs | reason | description |
//!                                      jstopinfo | watch | rwatch | awatch | swbreak |
//!                                      hwbreak | fork | vfork | vforkdone | exec | create | ...
//! W AA [';process:' pid]           exited with code AA
//! X AA [';process:' pid]           terminated by signal AA (gdbserver may send one digit)
//! O hex                            console output
//! N                                no resumed threads
//! w AA ';' thread-id               thread exited
//! ```

use std::collections::BTreeMap;

use super::decode_hex;
use super::malformed;
use super::parse_hex_u64;
use super::ErrorReply;
use super::ParseError;
use super::ThreadId;

/// Which watchpoint kind triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchKind {
    /// `watch`: write.
    Write,
    /// `rwatch`: read.
    Read,
    /// `awatch`: access.
    Access,
}

/// The `reason`-like keys of a `T` stop reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopKind {
    /// `swbreak:`
    SwBreak,
    /// `hwbreak:`
    HwBreak,
    /// `watch:`/`rwatch:`/`awatch:` with the data address.
    Watch {
        /// Which kind.
        kind: WatchKind,
        /// The watched address that triggered.
        addr: u64,
    },
    /// `fork:` with the child's id.
    Fork(ThreadId),
    /// `vfork:` with the child's id.
    VFork(ThreadId),
    /// `vforkdone:`
    VForkDone,
    /// `exec:` with the (hex-decoded) path.
    Exec(String),
    /// `create:`
    Create,
    /// `library:`
    Library,
}

/// A `T`/`S` stop for a signal or trap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopSignal {
    /// Signal number, in the server's numbering (GDB or native).
    pub signo: u8,
    /// `thread:`
    pub thread: Option<ThreadId>,
    /// `core:`
    pub core: Option<u64>,
    /// `name:` (lldb)
    pub name: Option<String>,
    /// `reason:` (lldb)
    pub reason: Option<String>,
    /// `description:` hex-decoded (lldb)
    pub description: Option<String>,
    /// `jstopinfo:` hex-decoded JSON text (lldb)
    pub jstopinfo: Option<String>,
    /// swbreak/hwbreak/watch/fork/... keys, in order of appearance.
    pub kinds: Vec<StopKind>,
    /// `threads:` list.
    pub threads: Vec<ThreadId>,
    /// `thread-pcs:` list.
    pub thread_pcs: Vec<u64>,
    /// Expedited registers: number → raw hex (target byte order).
    pub registers: BTreeMap<u32, String>,
    /// Any other key, verbatim.
    pub other: BTreeMap<String, String>,
    /// True when the reply was the short `S` form.
    pub short_form: bool,
}

impl StopSignal {
    /// An expedited register decoded as a little-endian integer (up to 8 bytes).
    pub fn register_u64(&self, regno: u32) -> Option<u64> {
        let bytes = decode_hex(self.registers.get(&regno)?.as_bytes())?;
        if bytes.is_empty() || bytes.len() > 8 {
            return None;
        }
        Some(
            bytes
                .iter()
                .rev()
                .fold(0u64, |acc, b| acc << 8 | u64::from(*b)),
        )
    }

    /// True if a `swbreak:` key was present.
    pub fn is_swbreak(&self) -> bool {
        self.kinds.contains(&StopKind::SwBreak)
    }

    /// The watch address, if a watch key was present.
    pub fn watch_addr(&self) -> Option<u64> {
        self.kinds.iter().find_map(|k| match k {
            StopKind::Watch { addr, .. } => Some(*addr),
            _ => None,
        })
    }
}

/// Any reply that can follow a resume or `?`.
// Replies are short-lived values in tests; boxing the common variant would
// only make matching noisier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReply {
    /// `T`/`S`.
    Signal(StopSignal),
    /// `W`: exited.
    Exited {
        /// Exit code.
        code: u8,
        /// `process:` pid, if present.
        pid: Option<u64>,
    },
    /// `X`: killed by a signal.
    Terminated {
        /// Signal number.
        sig: u8,
        /// `process:` pid, if present.
        pid: Option<u64>,
    },
    /// `O`: console output (decoded).
    Output(Vec<u8>),
    /// `N`: no resumed threads left.
    NoResumed,
    /// `w`: a thread exited.
    ThreadExited {
        /// Exit status.
        code: u8,
        /// The thread.
        thread: ThreadId,
    },
}

fn hex_u8(field: &'static str, s: &[u8]) -> Result<u8, ParseError> {
    parse_hex_u64(s)
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| ParseError::BadHex {
            field,
            text: String::from_utf8_lossy(s).into_owned(),
        })
}

fn hex_u64(field: &'static str, s: &[u8]) -> Result<u64, ParseError> {
    parse_hex_u64(s).ok_or_else(|| ParseError::BadHex {
        field,
        text: String::from_utf8_lossy(s).into_owned(),
    })
}

fn lossy(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

fn hex_text(s: &[u8]) -> String {
    match decode_hex(s) {
        Some(b) => lossy(&b),
        None => lossy(s),
    }
}

fn split_code_and_process(rest: &[u8]) -> Result<(&[u8], Option<u64>), ParseError> {
    match rest.iter().position(|&b| b == b';') {
        None => Ok((rest, None)),
        Some(i) => {
            let tail = &rest[i + 1..];
            let pid = tail
                .strip_prefix(b"process:")
                .ok_or_else(|| malformed("exit reply", lossy(tail)))?;
            Ok((&rest[..i], Some(hex_u64("process", pid)?)))
        }
    }
}

impl StopReply {
    /// Parse a stop reply payload (after RLE expansion).
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        let (&kind, rest) = raw.split_first().ok_or(ParseError::Empty)?;
        match kind {
            b'S' => Ok(Self::Signal(StopSignal {
                signo: hex_u8("signal", rest)?,
                short_form: true,
                ..StopSignal::default()
            })),
            b'T' => parse_t(rest).map(Self::Signal),
            b'W' => {
                let (code, pid) = split_code_and_process(rest)?;
                Ok(Self::Exited {
                    code: hex_u8("exit code", code)?,
                    pid,
                })
            }
            b'X' => {
                let (sig, pid) = split_code_and_process(rest)?;
                Ok(Self::Terminated {
                    sig: hex_u8("signal", sig)?,
                    pid,
                })
            }
            b'O' if !rest.is_empty() => Ok(Self::Output(decode_hex(rest).ok_or_else(|| {
                ParseError::BadHex {
                    field: "console output",
                    text: lossy(rest),
                }
            })?)),
            b'N' if rest.is_empty() => Ok(Self::NoResumed),
            b'w' => {
                let i = rest
                    .iter()
                    .position(|&b| b == b';')
                    .ok_or_else(|| malformed("thread exit", lossy(rest)))?;
                Ok(Self::ThreadExited {
                    code: hex_u8("exit code", &rest[..i])?,
                    thread: ThreadId::parse(&rest[i + 1..])?,
                })
            }
            _ => Err(ParseError::UnexpectedKind(lossy(raw))),
        }
    }

    /// The signal stop, if this is one.
    pub fn signal(&self) -> Option<&StopSignal> {
        match self {
            Self::Signal(s) => Some(s),
            _ => None,
        }
    }
}

fn parse_t(rest: &[u8]) -> Result<StopSignal, ParseError> {
    if rest.len() < 2 {
        return Err(malformed("T stop reply", lossy(rest)));
    }
    let mut s = StopSignal {
        signo: hex_u8("signal", &rest[..2])?,
        ..StopSignal::default()
    };
    for field in rest[2..].split(|&b| b == b';').filter(|f| !f.is_empty()) {
        let colon = field
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| malformed("T stop reply field", lossy(field)))?;
        let (key, value) = (&field[..colon], &field[colon + 1..]);
        let watch = |kind| -> Result<StopKind, ParseError> {
            Ok(StopKind::Watch {
                kind,
                addr: hex_u64("watch address", value)?,
            })
        };
        match key {
            b"thread" => s.thread = Some(ThreadId::parse(value)?),
            b"core" => s.core = Some(hex_u64("core", value)?),
            b"name" => s.name = Some(lossy(value)),
            b"reason" => s.reason = Some(lossy(value)),
            b"description" => s.description = Some(hex_text(value)),
            b"jstopinfo" => s.jstopinfo = Some(hex_text(value)),
            b"threads" => {
                s.threads = value
                    .split(|&b| b == b',')
                    .filter(|t| !t.is_empty())
                    .map(ThreadId::parse)
                    .collect::<Result<_, _>>()?
            }
            b"thread-pcs" => {
                s.thread_pcs = value
                    .split(|&b| b == b',')
                    .filter(|t| !t.is_empty())
                    .map(|p| hex_u64("thread-pcs", p))
                    .collect::<Result<_, _>>()?
            }
            b"swbreak" => s.kinds.push(StopKind::SwBreak),
            b"hwbreak" => s.kinds.push(StopKind::HwBreak),
            b"watch" => s.kinds.push(watch(WatchKind::Write)?),
            b"rwatch" => s.kinds.push(watch(WatchKind::Read)?),
            b"awatch" => s.kinds.push(watch(WatchKind::Access)?),
            b"fork" => s.kinds.push(StopKind::Fork(ThreadId::parse(value)?)),
            b"vfork" => s.kinds.push(StopKind::VFork(ThreadId::parse(value)?)),
            b"vforkdone" => s.kinds.push(StopKind::VForkDone),
            b"exec" => s.kinds.push(StopKind::Exec(hex_text(value))),
            b"create" => s.kinds.push(StopKind::Create),
            b"library" => s.kinds.push(StopKind::Library),
            k if !k.is_empty() && k.iter().all(|b| b.is_ascii_hexdigit()) => {
                let regno = parse_hex_u64(k)
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| malformed("register number", lossy(k)))?;
                if !value
                    .iter()
                    .all(|b| b.is_ascii_hexdigit() || *b == b'x' || *b == b'X')
                {
                    return Err(ParseError::BadHex {
                        field: "register value",
                        text: lossy(value),
                    });
                }
                s.registers.insert(regno, lossy(value));
            }
            _ => {
                s.other.insert(lossy(key), lossy(value));
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::IdPart;

    #[test]
    fn gdbserver_breakpoint() {
        let r = StopReply::parse(
            b"T05swbreak:;06:10e5ffffff7f0000;07:f0e4ffffff7f0000;10:4e51555555550000;thread:p4bdc.4bdc;core:0;",
        )
        .unwrap();
        let s = r.signal().unwrap();
        assert_eq!(s.signo, 5);
        assert!(s.is_swbreak());
        assert_eq!(s.core, Some(0));
        assert_eq!(s.thread.unwrap().tid, IdPart::Id(0x4bdc));
        assert_eq!(s.register_u64(0x10), Some(0x5555_5555_514e));
    }

    #[test]
    fn gdbserver_watch_and_exits() {
        let r = StopReply::parse(b"T05watch:0000555555558080;thread:p1.1;").unwrap();
        assert_eq!(r.signal().unwrap().watch_addr(), Some(0x5555_5555_8080));
        assert_eq!(
            StopReply::parse(b"W00").unwrap(),
            StopReply::Exited { code: 0, pid: None }
        );
        assert_eq!(
            StopReply::parse(b"Xa;process:4d93").unwrap(),
            StopReply::Terminated {
                sig: 10,
                pid: Some(0x4d93)
            }
        );
        assert_eq!(StopReply::parse(b"S05").unwrap().signal().unwrap().signo, 5);
        assert_eq!(
            StopReply::parse(b"O6869").unwrap(),
            StopReply::Output(b"hi".to_vec())
        );
    }

    #[test]
    fn lldb_server_stop() {
        let r = StopReply::parse(
            b"T05thread:p4c43.4c43;name:threads;threads:4c43,4c74;thread-pcs:00007ffff7fe4b70,0000555555555139;00:0100000000000000;reason:watchpoint;description:3120302031;",
        )
        .unwrap();
        let s = r.signal().unwrap();
        assert_eq!(s.threads.len(), 2);
        assert_eq!(s.thread_pcs, vec![0x7fff_f7fe_4b70, 0x5555_5555_5139]);
        assert_eq!(s.reason.as_deref(), Some("watchpoint"));
        assert_eq!(s.description.as_deref(), Some("1 0 1"));
        assert_eq!(s.name.as_deref(), Some("threads"));
        assert_eq!(s.register_u64(0), Some(1));
    }

    #[test]
    fn rejects_garbage() {
        assert!(StopReply::parse(b"").is_err());
        assert!(StopReply::parse(b"T5").is_err());
        assert!(StopReply::parse(b"T05thread").is_err());
        assert!(StopReply::parse(b"E02").is_err());
        assert!(StopReply::parse(b"W0;foo:1").is_err());
        assert!(StopReply::parse(b"Q").is_err());
    }
}
