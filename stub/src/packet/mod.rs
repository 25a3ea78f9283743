//! Typed commands: one module per packet family.
//!
//! Each family module has `parse_*` functions from the packet payload (after
//! the framer has removed `$…#cs` and `}` escapes) to a [`Command`]. The
//! single [`TABLE`] maps prefixes to parsers; it is ordered longest prefix
//! first by construction, and a test checks that no earlier entry shadows a
//! later one. The session matches on [`Command`] only.
//!
//! Replies are built with [`reply`] (plain replies) and [`stop_reply`]
//! (`T`/`S`/`W`/`X`, from a typed stop), never with ad-hoc `format!` in
//! handlers.

pub mod breakpoint;
pub mod extended;
pub mod lldb;
pub mod memory;
pub mod query;
pub mod regs;
pub mod reply;
pub mod resume;
pub mod signals;
pub mod stop_reply;
pub mod thread_id;
pub mod xfer;

pub use thread_id::IdSel;
pub use thread_id::ThreadId;

use crate::target::BreakpointKind;

/// A malformed packet. Answered with an `E` reply (protocol error tier);
/// the session carries on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed packet: {0}")]
pub struct ParseError(pub &'static str);

impl ParseError {
    /// New error with a static reason.
    pub fn new(why: &'static str) -> Self {
        ParseError(why)
    }
}

/// `Hg`/`Hc` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HOp {
    /// `Hg`: thread for register/memory operations.
    General,
    /// `Hc`: thread for `c`/`s`.
    Continue,
}

/// One `vCont` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VContKind {
    /// `c`
    Continue,
    /// `C sig`
    ContinueSig(u8),
    /// `s`
    Step,
    /// `S sig`
    StepSig(u8),
    /// `t`: stop.
    Stop,
    /// `r start,end`: range step.
    Range(u64, u64),
}

/// A `vCont` action with its optional thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VContAction {
    /// What to do.
    pub kind: VContKind,
    /// Which threads; `None` = every thread not named by another action.
    pub thread: Option<ThreadId>,
}

/// `qXfer` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XferRead {
    /// Object name (`features`, `auxv`, `threads`, …).
    pub object: String,
    /// Annex (`target.xml`), possibly empty.
    pub annex: String,
    /// Offset.
    pub offset: u64,
    /// Maximum length.
    pub length: u64,
}

/// Every packet gdbmux understands, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    // --- negotiation ---
    /// `qSupported[:features]`
    QSupported(Vec<String>),
    /// `QStartNoAckMode`
    QStartNoAckMode,
    /// `vMustReplyEmpty`
    VMustReplyEmpty,
    /// `vStopped`: non-stop mode, the client took the last stop
    /// notification; the reply is the next queued stop or `OK`.
    VStopped,
    /// `!`
    ExtendedMode,
    // --- stops ---
    /// `?`
    QuestionMark,
    // --- registers ---
    /// `g[;thread:tid;]`
    ReadRegisters {
        /// lldb thread suffix.
        thread: Option<ThreadId>,
    },
    /// `G data[;thread:tid;]`
    WriteRegisters {
        /// Register block.
        data: Vec<u8>,
        /// lldb thread suffix.
        thread: Option<ThreadId>,
    },
    /// `p n[;thread:tid;]`
    ReadRegister {
        /// Register number.
        regnum: u32,
        /// lldb thread suffix.
        thread: Option<ThreadId>,
    },
    /// `P n=v[;thread:tid;]`
    WriteRegister {
        /// Register number.
        regnum: u32,
        /// New value (target byte order).
        value: Vec<u8>,
        /// lldb thread suffix.
        thread: Option<ThreadId>,
    },
    // --- memory ---
    /// `m addr,len`
    ReadMemory {
        /// Address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// `M addr,len:hex`
    WriteMemory {
        /// Address.
        addr: u64,
        /// Data.
        data: Vec<u8>,
    },
    /// `x addr,len` (binary read)
    ReadMemoryBinary {
        /// Address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// `X addr,len:binary`
    WriteMemoryBinary {
        /// Address.
        addr: u64,
        /// Data.
        data: Vec<u8>,
    },
    // --- breakpoints ---
    /// `Z kind,addr,len`
    InsertBreakpoint {
        /// Kind.
        kind: BreakpointKind,
        /// Address.
        addr: u64,
        /// Length / kind field.
        len: u64,
    },
    /// `Z0,addr,kind;X len,bytes…;cmds:P,X len,bytes…`: a software
    /// breakpoint with target-side conditions and commands (agent
    /// expressions).
    InsertConditionalBreakpoint {
        /// Address.
        addr: u64,
        /// Kind field.
        len: u64,
        /// The conditions' bytecodes.
        conditions: Vec<Vec<u8>>,
        /// The commands' bytecodes (`;cmds:P,X…`, agent `dprintf`).
        commands: Vec<Vec<u8>>,
    },
    /// `z kind,addr,len`
    RemoveBreakpoint {
        /// Kind.
        kind: BreakpointKind,
        /// Address.
        addr: u64,
        /// Length / kind field.
        len: u64,
    },
    // --- resume ---
    /// `c[addr]` / `C sig[;addr]`
    Continue {
        /// Signal to deliver (wire numbering).
        signal: Option<u8>,
        /// Resume address.
        addr: Option<u64>,
    },
    /// `s[addr]` / `S sig[;addr]`
    Step {
        /// Signal to deliver (wire numbering).
        signal: Option<u8>,
        /// Resume address.
        addr: Option<u64>,
    },
    /// `vCont;…`
    VCont(Vec<VContAction>),
    /// `vCont?`
    VContQuery,
    // --- threads ---
    /// `Hg id` / `Hc id`
    SetThread(HOp, ThreadId),
    /// `T id`
    ThreadAlive(ThreadId),
    /// `qC`
    CurrentThread,
    /// `qGetTLSAddr:thread,offset,lm`: address of a thread-local variable
    /// (`offset` in the TLS block of the module whose link_map is `lm`).
    GetTlsAddr {
        /// Thread.
        thread: ThreadId,
        /// Offset in the module's TLS block.
        offset: u64,
        /// Address of the module's `struct link_map`.
        lm: u64,
    },
    /// `qfThreadInfo`
    ThreadInfoFirst,
    /// `qsThreadInfo`
    ThreadInfoNext,
    /// `qAttached[:pid]`
    Attached(Option<u64>),
    /// `qThreadExtraInfo,id`
    ThreadExtraInfo(ThreadId),
    /// `qXfer:object:read:annex:offset,length`
    XferRead(XferRead),
    /// `qXfer:object:write:annex:offset:data` (data binary, unescaped).
    XferWrite {
        /// Object (`siginfo`).
        object: String,
        /// Annex.
        annex: String,
        /// Offset to write at.
        offset: u64,
        /// Bytes.
        data: Vec<u8>,
    },
    // --- process control ---
    /// `D` / `D;pid`
    Detach(Option<u64>),
    /// `k`
    Kill,
    /// `vKill;pid`
    VKill(u64),
    /// `vRun;prog;args…`
    VRun(Vec<Vec<u8>>),
    /// `vAttach;pid`
    VAttach(u64),
    /// `QPassSignals:a;b;…`
    PassSignals(Vec<u8>),
    /// `QProgramSignals:a;b;…`
    ProgramSignals(Vec<u8>),
    /// `QDisableRandomization:0|1` / lldb `QSetDisableASLR:0|1`
    DisableRandomization(bool),
    /// `QEnvironmentHexEncoded:hex` / lldb `QEnvironment:k=v`
    SetEnv(Vec<u8>),
    /// `QEnvironmentReset`
    ResetEnv,
    /// `QEnvironmentUnset:hex`
    UnsetEnv(Vec<u8>),
    /// `QSetWorkingDir:[hex]`
    SetWorkingDir(Option<Vec<u8>>),
    /// `QStartupWithShell:0|1`
    StartupWithShell(bool),
    /// `qSymbol::` or `qSymbol:value:name`
    Symbol,
    /// `R XX`: restart the program (extended mode; no reply).
    Restart,
    /// `vFile:…` (arguments after `vFile:`)
    VFile(Vec<u8>),
    /// `qRcmd,hex`
    Rcmd(Vec<u8>),
    /// `qOffsets`
    Offsets,
    /// `QNonStop:0|1`
    NonStop(bool),
    /// `QCatchSyscalls:0` (`None`) or `QCatchSyscalls:1[;NR…]` (the
    /// numbers; empty = every system call).
    CatchSyscalls(Option<Vec<u64>>),
    // --- lldb dialect ---
    /// `qHostInfo`
    HostInfo,
    /// `qProcessInfo`
    ProcessInfo,
    /// `QThreadSuffixSupported`
    ThreadSuffixSupported,
    /// `QListThreadsInStopReply`
    ListThreadsInStopReply,
    /// `jThreadsInfo`
    JThreadsInfo,
    /// `qThreadStopInfo tid`
    ThreadStopInfo(u64),
    /// `qMemoryRegionInfo:addr`
    MemoryRegionInfo(u64),
    /// `qGetWorkingDir`
    GetWorkingDir,
    /// `QEnableErrorStrings`
    EnableErrorStrings,
    /// `qEcho:…`
    Echo(Vec<u8>),
    /// `qStructuredDataPlugins`
    StructuredDataPlugins,
    /// `jLLDBTraceSupported`
    LldbTraceSupported,
    /// `qShlibInfoAddr`
    ShlibInfoAddr,
    /// `qWatchpointSupportInfo[:]`
    WatchpointSupportInfo,
    /// `qRegisterInfo n`
    RegisterInfo(u32),
    /// `qVAttachOrWaitSupported`
    VAttachOrWaitSupported,
    /// `jThreadExtendedInfo:…`
    ThreadExtendedInfo,
    /// `QSetDetachOnError:0|1`
    SetDetachOnError(bool),
    /// `qGDBServerVersion`
    ServerVersion,
    /// `jAcceleratorPluginInitialize`
    AcceleratorInitialize,
    /// `jAcceleratorPluginBreakpointHit:json`
    AcceleratorBreakpointHit(Vec<u8>),
    /// Anything else: answered with the empty reply.
    Unknown(Vec<u8>),
}

type Parser = fn(&[u8]) -> Result<Command, ParseError>;

/// A packet that takes no arguments: trailing bytes are an error (so that
/// `qProcessInfoPID:1` or `jThreadsInfo:{` is not mistaken for it).
macro_rules! exact {
    ($cmd:expr) => {
        |rest: &[u8]| {
            if rest.is_empty() {
                Ok($cmd)
            } else {
                Err(ParseError::new("unexpected arguments"))
            }
        }
    };
}

/// Prefix → parser. Longest-prefix-first ordering matters where one prefix
/// is a prefix of another (`qC` vs nothing longer that starts with `qC` is
/// listed earlier, `vCont?` before `vCont`); `table_order` tests it.
pub const TABLE: &[(&str, Parser)] = &[
    ("qSupported", query::parse_qsupported),
    ("QStartNoAckMode", exact!(Command::QStartNoAckMode)),
    ("vMustReplyEmpty", exact!(Command::VMustReplyEmpty)),
    ("vStopped", exact!(Command::VStopped)),
    ("qfThreadInfo", exact!(Command::ThreadInfoFirst)),
    ("qsThreadInfo", exact!(Command::ThreadInfoNext)),
    ("qAttached", query::parse_attached),
    ("qGetTLSAddr:", query::parse_get_tls_addr),
    ("qThreadExtraInfo,", query::parse_thread_extra_info),
    ("qXfer:", xfer::parse_xfer),
    ("qSymbol", |_| Ok(Command::Symbol)),
    ("R", |_| Ok(Command::Restart)),
    ("qRcmd,", query::parse_rcmd),
    ("qOffsets", exact!(Command::Offsets)),
    ("QNonStop:", query::parse_nonstop),
    ("QCatchSyscalls:", query::parse_catch_syscalls),
    ("QPassSignals:", query::parse_pass_signals),
    ("QProgramSignals:", query::parse_program_signals),
    ("QDisableRandomization:", query::parse_disable_randomization),
    ("QSetDisableASLR:", query::parse_disable_randomization),
    ("QEnvironmentHexEncoded:", query::parse_env_hex),
    ("QEnvironmentReset", exact!(Command::ResetEnv)),
    ("QEnvironmentUnset:", query::parse_env_unset),
    ("QEnvironment:", query::parse_env_plain),
    ("QSetWorkingDir:", query::parse_set_working_dir),
    ("QStartupWithShell:", query::parse_startup_with_shell),
    ("qHostInfo", exact!(Command::HostInfo)),
    ("qProcessInfo", exact!(Command::ProcessInfo)),
    (
        "QThreadSuffixSupported",
        exact!(Command::ThreadSuffixSupported),
    ),
    (
        "QListThreadsInStopReply",
        exact!(Command::ListThreadsInStopReply),
    ),
    ("jThreadsInfo", exact!(Command::JThreadsInfo)),
    ("jThreadExtendedInfo", |_| Ok(Command::ThreadExtendedInfo)),
    ("qThreadStopInfo", lldb::parse_thread_stop_info),
    ("qMemoryRegionInfo:", lldb::parse_memory_region_info),
    ("qGetWorkingDir", exact!(Command::GetWorkingDir)),
    ("QEnableErrorStrings", exact!(Command::EnableErrorStrings)),
    ("qEcho:", lldb::parse_echo),
    (
        "qStructuredDataPlugins",
        exact!(Command::StructuredDataPlugins),
    ),
    ("jLLDBTraceSupported", exact!(Command::LldbTraceSupported)),
    ("qShlibInfoAddr", exact!(Command::ShlibInfoAddr)),
    ("qWatchpointSupportInfo", |_| {
        Ok(Command::WatchpointSupportInfo)
    }),
    ("qRegisterInfo", lldb::parse_register_info),
    (
        "qVAttachOrWaitSupported",
        exact!(Command::VAttachOrWaitSupported),
    ),
    ("QSetDetachOnError:", lldb::parse_detach_on_error),
    ("qGDBServerVersion", exact!(Command::ServerVersion)),
    (
        "jAcceleratorPluginInitialize",
        exact!(Command::AcceleratorInitialize),
    ),
    ("jAcceleratorPluginBreakpointHit:", lldb::parse_accel_hit),
    ("qC", query::parse_qc),
    ("vCont?", exact!(Command::VContQuery)),
    ("vCont;", resume::parse_vcont),
    ("vFile:", |a| Ok(Command::VFile(a.to_vec()))),
    ("vKill;", extended::parse_vkill),
    ("vRun;", extended::parse_vrun),
    ("vAttach;", extended::parse_vattach),
];

/// Parse one packet payload.
pub fn parse(packet: &[u8]) -> Result<Command, ParseError> {
    for (prefix, parser) in TABLE {
        if let Some(rest) = packet.strip_prefix(prefix.as_bytes()) {
            return parser(rest);
        }
    }
    let Some((&first, rest)) = packet.split_first() else {
        return Ok(Command::Unknown(Vec::new()));
    };
    match first {
        b'?' if rest.is_empty() => Ok(Command::QuestionMark),
        b'!' if rest.is_empty() => Ok(Command::ExtendedMode),
        b'g' => regs::parse_g(rest),
        b'G' => regs::parse_big_g(rest),
        b'p' => regs::parse_p(rest),
        b'P' => regs::parse_big_p(rest),
        b'm' => memory::parse_m(rest),
        b'M' => memory::parse_big_m(rest),
        b'x' => memory::parse_x(rest),
        b'X' => memory::parse_big_x(rest),
        b'Z' => breakpoint::parse(rest, true),
        b'z' => breakpoint::parse(rest, false),
        b'c' => resume::parse_c(rest),
        b'C' => resume::parse_big_c(rest),
        b's' => resume::parse_s(rest),
        b'S' => resume::parse_big_s(rest),
        b'H' => query::parse_h(rest),
        b'T' => query::parse_t(rest),
        b'D' => extended::parse_detach(rest),
        b'k' if rest.is_empty() => Ok(Command::Kill),
        _ => Ok(Command::Unknown(packet.to_vec())),
    }
}

/// Split `a,b` at the first comma.
pub(crate) fn split2(s: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|b| *b == sep)?;
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// Parse a hex u64 or fail with `why`.
pub(crate) fn hex_u64(s: &[u8], why: &'static str) -> Result<u64, ParseError> {
    crate::wire::hex::parse_u64(s).ok_or(ParseError(why))
}

/// Strip an lldb `;thread:tid;` suffix.
pub(crate) fn thread_suffix(s: &[u8]) -> Result<(&[u8], Option<ThreadId>), ParseError> {
    const KEY: &[u8] = b";thread:";
    match s.windows(KEY.len()).position(|w| w == KEY) {
        None => Ok((s, None)),
        Some(i) => {
            let head = s.get(..i).unwrap_or_default();
            let tail = s.get(i + KEY.len()..).unwrap_or_default();
            let tail = tail.strip_suffix(b";").unwrap_or(tail);
            Ok((head, Some(ThreadId::parse(tail)?)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_order() {
        // No entry may be shadowed by an earlier, shorter prefix.
        for (i, (later, _)) in TABLE.iter().enumerate() {
            for (earlier, _) in TABLE.iter().take(i) {
                assert!(
                    !later.starts_with(earlier),
                    "{later} is shadowed by earlier {earlier}"
                );
            }
        }
    }

    #[test]
    fn basics() {
        assert_eq!(parse(b"?").unwrap(), Command::QuestionMark);
        assert_eq!(parse(b"!").unwrap(), Command::ExtendedMode);
        assert_eq!(parse(b"k").unwrap(), Command::Kill);
        assert_eq!(parse(b"qC").unwrap(), Command::CurrentThread);
        assert_eq!(parse(b"vCont?").unwrap(), Command::VContQuery);
        assert_eq!(
            parse(b"qRspCaptureMark:x").unwrap(),
            Command::Unknown(b"qRspCaptureMark:x".to_vec())
        );
        assert_eq!(parse(b"").unwrap(), Command::Unknown(vec![]));
        assert!(parse(b"jThreadsInfo:{").is_err());
        assert!(parse(b"qProcessInfoPID:1").is_err());
        assert_eq!(parse(b"qHostInfo").unwrap(), Command::HostInfo);
    }

    /// The settings, lldb queries and fixed-answer packets: each form
    /// parses to its command, and a malformed argument is refused.
    #[test]
    fn settings_and_lldb_queries() {
        let ok = |p: &[u8], want: Command| assert_eq!(parse(p).unwrap(), want, "{p:?}");
        ok(b"vMustReplyEmpty", Command::VMustReplyEmpty);
        ok(b"qOffsets", Command::Offsets);
        ok(b"qSymbol::", Command::Symbol);
        ok(b"qSymbol:401000:6d61696e", Command::Symbol);
        ok(b"QNonStop:0", Command::NonStop(false));
        ok(b"QNonStop:1", Command::NonStop(true));
        assert!(parse(b"QNonStop:2").is_err());
        ok(
            b"QProgramSignals:e;1f;",
            Command::ProgramSignals(vec![14, 31]),
        );
        ok(b"QProgramSignals:", Command::ProgramSignals(vec![]));
        assert!(parse(b"QProgramSignals:100").is_err());
        ok(b"QEnvironmentReset", Command::ResetEnv);
        assert!(parse(b"QEnvironmentReset:x").is_err());
        ok(
            b"QEnvironmentUnset:464f4f",
            Command::UnsetEnv(b"FOO".to_vec()),
        );
        assert!(parse(b"QEnvironmentUnset:4g").is_err());
        ok(b"QStartupWithShell:0", Command::StartupWithShell(false));
        ok(b"QStartupWithShell:1", Command::StartupWithShell(true));
        assert!(parse(b"QStartupWithShell:").is_err());
        ok(
            b"qThreadExtraInfo,p1f.20",
            Command::ThreadExtraInfo(ThreadId {
                pid: Some(IdSel::Id(0x1f)),
                tid: IdSel::Id(0x20),
            }),
        );
        assert!(parse(b"qThreadExtraInfo,zz").is_err());
        ok(
            b"vFile:open:2f,0,0",
            Command::VFile(b"open:2f,0,0".to_vec()),
        );
        ok(b"QThreadSuffixSupported", Command::ThreadSuffixSupported);
        ok(b"QListThreadsInStopReply", Command::ListThreadsInStopReply);
        ok(b"QEnableErrorStrings", Command::EnableErrorStrings);
        ok(b"qGetWorkingDir", Command::GetWorkingDir);
        ok(b"jLLDBTraceSupported", Command::LldbTraceSupported);
        ok(b"qGDBServerVersion", Command::ServerVersion);
        ok(b"QSetDetachOnError:1", Command::SetDetachOnError(true));
        ok(b"QSetDetachOnError:0", Command::SetDetachOnError(false));
        ok(b"qShlibInfoAddr", Command::ShlibInfoAddr);
        ok(b"qStructuredDataPlugins", Command::StructuredDataPlugins);
        ok(b"qVAttachOrWaitSupported", Command::VAttachOrWaitSupported);
        ok(b"qWatchpointSupportInfo", Command::WatchpointSupportInfo);
        ok(b"qWatchpointSupportInfo:", Command::WatchpointSupportInfo);
        ok(
            b"jThreadExtendedInfo:{\"thread\":1}",
            Command::ThreadExtendedInfo,
        );
        // Exact packets take no arguments.
        for p in [
            &b"qOffsets:1"[..],
            b"QThreadSuffixSupported:1",
            b"qGDBServerVersion:x",
            b"vMustReplyEmptyX",
        ] {
            assert!(parse(p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        for p in [
            &b"m"[..],
            b"mzz,1",
            b"M1,2:zz",
            b"Z9,1,1",
            b"vCont;q",
            b"Hx1",
            b"qXfer:features",
            b"p;thread:zz;",
            b"P=",
            b"vRun;zz",
            b"D;zz",
            b"qMemoryRegionInfo:",
        ] {
            let _ = parse(p);
        }
    }
}
