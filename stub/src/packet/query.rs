//! General queries and settings (`q…`/`Q…`), and `H`/`T`.
//!
//! ```text
//! qSupported[:feature;feature…]   QPassSignals:sig;sig…   Hg<tid> / Hc<tid>
//! qAttached[:pid]                 qRcmd,<hex command>     T<tid>
//! ```

use super::hex_u64;
use super::Command;
use super::HOp;
use super::ParseError;
use super::ThreadId;
use crate::wire::hex;

/// `qSupported[:f1;f2…]`
pub fn parse_qsupported(rest: &[u8]) -> Result<Command, ParseError> {
    let rest = rest.strip_prefix(b":").unwrap_or(rest);
    let features = rest
        .split(|b| *b == b';')
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    Ok(Command::QSupported(features))
}

/// `qAttached[:pid]`
pub fn parse_attached(rest: &[u8]) -> Result<Command, ParseError> {
    match rest.strip_prefix(b":") {
        Some(pid) => Ok(Command::Attached(Some(hex_u64(pid, "bad pid")?))),
        None if rest.is_empty() => Ok(Command::Attached(None)),
        None => Err(ParseError::new("bad qAttached")),
    }
}

/// `qThreadExtraInfo,id`
pub fn parse_thread_extra_info(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::ThreadExtraInfo(ThreadId::parse(rest)?))
}

/// `qRcmd,hex`
pub fn parse_rcmd(rest: &[u8]) -> Result<Command, ParseError> {
    hex::decode(rest)
        .map(Command::Rcmd)
        .ok_or(ParseError::new("bad qRcmd hex"))
}

/// `qGetTLSAddr:thread-id,offset,lm` (offset and lm in hex).
pub fn parse_get_tls_addr(rest: &[u8]) -> Result<Command, ParseError> {
    let mut it = rest.splitn(3, |b| *b == b',');
    let (Some(t), Some(o), Some(l)) = (it.next(), it.next(), it.next()) else {
        return Err(ParseError::new("qGetTLSAddr needs thread,offset,lm"));
    };
    let num = |f: &[u8]| {
        std::str::from_utf8(f)
            .ok()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or(ParseError::new("bad qGetTLSAddr number"))
    };
    Ok(Command::GetTlsAddr {
        thread: ThreadId::parse(t)?,
        offset: num(o)?,
        lm: num(l)?,
    })
}

/// `qC` (and nothing longer).
pub fn parse_qc(rest: &[u8]) -> Result<Command, ParseError> {
    if rest.is_empty() {
        Ok(Command::CurrentThread)
    } else {
        let mut p = b"qC".to_vec();
        p.extend_from_slice(rest);
        Ok(Command::Unknown(p))
    }
}

/// `QCatchSyscalls:0` | `QCatchSyscalls:1[;NR]…` (hex numbers).
pub fn parse_catch_syscalls(rest: &[u8]) -> Result<Command, ParseError> {
    let mut it = rest.split(|b| *b == b';');
    match it.next() {
        Some(b"0") if it.next().is_none() => Ok(Command::CatchSyscalls(None)),
        Some(b"1") => it
            .map(|n| {
                std::str::from_utf8(n)
                    .ok()
                    .and_then(|s| u64::from_str_radix(s, 16).ok())
                    .ok_or(ParseError::new("bad QCatchSyscalls number"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| Command::CatchSyscalls(Some(v))),
        _ => Err(ParseError::new(
            "QCatchSyscalls:0 or QCatchSyscalls:1[;NR]...",
        )),
    }
}

/// `QNonStop:0|1`
pub fn parse_nonstop(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::NonStop(parse_bool(rest)?))
}

fn parse_bool(rest: &[u8]) -> Result<bool, ParseError> {
    match rest {
        b"0" => Ok(false),
        b"1" => Ok(true),
        _ => Err(ParseError::new("expected 0 or 1")),
    }
}

fn parse_signal_list(rest: &[u8]) -> Result<Vec<u8>, ParseError> {
    rest.split(|b| *b == b';')
        .filter(|s| !s.is_empty())
        .map(|s| {
            hex_u64(s, "bad signal")
                .and_then(|v| u8::try_from(v).map_err(|_| ParseError::new("signal out of range")))
        })
        .collect()
}

/// `QPassSignals:…`
pub fn parse_pass_signals(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::PassSignals(parse_signal_list(rest)?))
}

/// `QProgramSignals:…`
pub fn parse_program_signals(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::ProgramSignals(parse_signal_list(rest)?))
}

/// `QDisableRandomization:0|1`
pub fn parse_disable_randomization(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::DisableRandomization(parse_bool(rest)?))
}

/// `QEnvironmentHexEncoded:hex(k=v)`
pub fn parse_env_hex(rest: &[u8]) -> Result<Command, ParseError> {
    hex::decode(rest)
        .map(Command::SetEnv)
        .ok_or(ParseError::new("bad env hex"))
}

/// `QEnvironment:k=v` (lldb, plain text)
pub fn parse_env_plain(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::SetEnv(rest.to_vec()))
}

/// `QEnvironmentUnset:hex(k)`
pub fn parse_env_unset(rest: &[u8]) -> Result<Command, ParseError> {
    hex::decode(rest)
        .map(Command::UnsetEnv)
        .ok_or(ParseError::new("bad env hex"))
}

/// `QSetWorkingDir:[hex]`
pub fn parse_set_working_dir(rest: &[u8]) -> Result<Command, ParseError> {
    if rest.is_empty() {
        return Ok(Command::SetWorkingDir(None));
    }
    hex::decode(rest)
        .map(|d| Command::SetWorkingDir(Some(d)))
        .ok_or(ParseError::new("bad dir hex"))
}

/// `QStartupWithShell:0|1`
pub fn parse_startup_with_shell(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::StartupWithShell(parse_bool(rest)?))
}

/// `Hg<id>` / `Hc<id>`
pub fn parse_h(rest: &[u8]) -> Result<Command, ParseError> {
    let (&op, id) = rest.split_first().ok_or(ParseError::new("bad H"))?;
    let op = match op {
        b'g' => HOp::General,
        b'c' => HOp::Continue,
        _ => return Err(ParseError::new("bad H operation")),
    };
    Ok(Command::SetThread(op, ThreadId::parse(id)?))
}

/// `T<id>`
pub fn parse_t(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::ThreadAlive(ThreadId::parse(rest)?))
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::IdSel;
    use super::*;

    #[test]
    fn qsupported() {
        let c = parse(b"qSupported:multiprocess+;swbreak+;xmlRegisters=i386").unwrap();
        assert_eq!(
            c,
            Command::QSupported(vec![
                "multiprocess+".into(),
                "swbreak+".into(),
                "xmlRegisters=i386".into()
            ])
        );
        assert_eq!(parse(b"qSupported").unwrap(), Command::QSupported(vec![]));
    }

    #[test]
    fn nonstop_packets() {
        assert_eq!(parse(b"QNonStop:1").unwrap(), Command::NonStop(true));
        assert_eq!(parse(b"QNonStop:0").unwrap(), Command::NonStop(false));
        assert!(parse(b"QNonStop:2").is_err());
        assert_eq!(parse(b"vStopped").unwrap(), Command::VStopped);
        assert!(parse(b"vStoppedx").is_err());
    }

    #[test]
    fn gdbserver_parity_packets() {
        assert_eq!(
            parse(b"QCatchSyscalls:1;3c;e7").unwrap(),
            Command::CatchSyscalls(Some(vec![0x3c, 0xe7]))
        );
        assert_eq!(
            parse(b"QCatchSyscalls:1").unwrap(),
            Command::CatchSyscalls(Some(vec![]))
        );
        assert_eq!(
            parse(b"QCatchSyscalls:0").unwrap(),
            Command::CatchSyscalls(None)
        );
        assert!(parse(b"QCatchSyscalls:2").is_err());
        assert!(matches!(
            parse(b"qGetTLSAddr:p1.2,10,7ffff7ffe000").unwrap(),
            Command::GetTlsAddr {
                offset: 0x10,
                lm: 0x7fff_f7ff_e000,
                ..
            }
        ));
        assert!(parse(b"qGetTLSAddr:2,10").is_err());
        assert_eq!(parse(b"R00").unwrap(), Command::Restart);
    }

    #[test]
    fn settings() {
        assert_eq!(
            parse(b"QPassSignals:e;14;1e").unwrap(),
            Command::PassSignals(vec![0xe, 0x14, 0x1e])
        );
        assert_eq!(
            parse(b"QPassSignals:").unwrap(),
            Command::PassSignals(vec![])
        );
        assert!(parse(b"QPassSignals:zz").is_err());
        assert_eq!(
            parse(b"QDisableRandomization:1").unwrap(),
            Command::DisableRandomization(true)
        );
        assert_eq!(
            parse(b"QEnvironmentHexEncoded:413d31").unwrap(),
            Command::SetEnv(b"A=1".to_vec())
        );
        assert_eq!(
            parse(b"QSetWorkingDir:").unwrap(),
            Command::SetWorkingDir(None)
        );
        assert_eq!(
            parse(b"qRcmd,68656c70").unwrap(),
            Command::Rcmd(b"help".to_vec())
        );
        assert_eq!(
            parse(b"qAttached:1f").unwrap(),
            Command::Attached(Some(0x1f))
        );
        assert_eq!(parse(b"qAttached").unwrap(), Command::Attached(None));
    }

    #[test]
    fn h_and_t() {
        assert_eq!(
            parse(b"Hgp0.0").unwrap(),
            Command::SetThread(
                HOp::General,
                ThreadId {
                    pid: Some(IdSel::Any),
                    tid: IdSel::Any
                }
            )
        );
        assert_eq!(
            parse(b"Hc-1").unwrap(),
            Command::SetThread(HOp::Continue, ThreadId::all())
        );
        assert!(parse(b"Hq1").is_err());
        assert!(parse(b"H").is_err());
        assert!(matches!(parse(b"Tp1.2").unwrap(), Command::ThreadAlive(_)));
    }
}
