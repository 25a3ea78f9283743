//! Resume packets.
//!
//! ```text
//! c[addr]   C sig[;addr]   s[addr]   S sig[;addr]
//! vCont[;action[:thread-id]]…   action: c | C sig | s | S sig | t | r start,end
//! ```
//! Signals are in the client's numbering (gdb or, for lldb with
//! `native-signals+`, Linux); the session converts.

use super::hex_u64;
use super::split2;
use super::Command;
use super::ParseError;
use super::ThreadId;
use super::VContAction;
use super::VContKind;

fn opt_addr(rest: &[u8]) -> Result<Option<u64>, ParseError> {
    if rest.is_empty() {
        Ok(None)
    } else {
        Ok(Some(hex_u64(rest, "bad resume address")?))
    }
}

fn sig(s: &[u8]) -> Result<u8, ParseError> {
    hex_u64(s, "bad signal")
        .and_then(|v| u8::try_from(v).map_err(|_| ParseError::new("bad signal")))
}

fn sig_addr(rest: &[u8]) -> Result<(u8, Option<u64>), ParseError> {
    match split2(rest, b';') {
        Some((s, a)) => Ok((sig(s)?, Some(hex_u64(a, "bad address")?))),
        None => Ok((sig(rest)?, None)),
    }
}

/// `c`
pub fn parse_c(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::Continue {
        signal: None,
        addr: opt_addr(rest)?,
    })
}

/// `C`
pub fn parse_big_c(rest: &[u8]) -> Result<Command, ParseError> {
    let (s, addr) = sig_addr(rest)?;
    Ok(Command::Continue {
        signal: Some(s),
        addr,
    })
}

/// `s`
pub fn parse_s(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::Step {
        signal: None,
        addr: opt_addr(rest)?,
    })
}

/// `S`
pub fn parse_big_s(rest: &[u8]) -> Result<Command, ParseError> {
    let (s, addr) = sig_addr(rest)?;
    Ok(Command::Step {
        signal: Some(s),
        addr,
    })
}

/// `vCont;…` (after `vCont;`)
pub fn parse_vcont(rest: &[u8]) -> Result<Command, ParseError> {
    let mut actions = Vec::new();
    for item in rest.split(|b| *b == b';') {
        let (act, thread) = match split2(item, b':') {
            Some((a, t)) => (a, Some(ThreadId::parse(t)?)),
            None => (item, None),
        };
        let (&k, arg) = act
            .split_first()
            .ok_or(ParseError::new("empty vCont action"))?;
        let kind = match k {
            b'c' if arg.is_empty() => VContKind::Continue,
            b's' if arg.is_empty() => VContKind::Step,
            b't' if arg.is_empty() => VContKind::Stop,
            b'C' => VContKind::ContinueSig(sig(arg)?),
            b'S' => VContKind::StepSig(sig(arg)?),
            b'r' => {
                let (a, b) = split2(arg, b',').ok_or(ParseError::new("bad range"))?;
                VContKind::Range(hex_u64(a, "bad range start")?, hex_u64(b, "bad range end")?)
            }
            _ => return Err(ParseError::new("bad vCont action")),
        };
        actions.push(VContAction { kind, thread });
    }
    if actions.is_empty() {
        return Err(ParseError::new("vCont without actions"));
    }
    Ok(Command::VCont(actions))
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::IdSel;
    use super::*;

    #[test]
    fn simple() {
        assert_eq!(
            parse(b"c").unwrap(),
            Command::Continue {
                signal: None,
                addr: None
            }
        );
        assert_eq!(
            parse(b"C0A").unwrap(),
            Command::Continue {
                signal: Some(10),
                addr: None
            }
        );
        assert_eq!(
            parse(b"S1e;401000").unwrap(),
            Command::Step {
                signal: Some(0x1e),
                addr: Some(0x401000)
            }
        );
        assert!(parse(b"Czz").is_err());
    }

    #[test]
    fn vcont() {
        let Command::VCont(a) = parse(b"vCont;r401000,401010:p1.2;c:p1.-1").unwrap() else {
            panic!()
        };
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].kind, VContKind::Range(0x401000, 0x401010));
        assert_eq!(a[0].thread.unwrap().tid, IdSel::Id(2));
        assert_eq!(a[1].thread.unwrap().tid, IdSel::All);
        let Command::VCont(a) = parse(b"vCont;c:t1;C0a:2;s").unwrap_or(Command::Kill) else {
            // `t1` is not a valid hex id: error
            return;
        };
        let _ = a;
        let Command::VCont(a) = parse(b"vCont;C1e:p1.1;c:p1.-1").unwrap() else {
            panic!()
        };
        assert_eq!(a[0].kind, VContKind::ContinueSig(0x1e));
        let Command::VCont(a) = parse(b"vCont;s:1;c").unwrap() else {
            panic!()
        };
        assert_eq!(a[1].thread, None);
        assert!(parse(b"vCont;").is_err());
        assert!(parse(b"vCont;x").is_err());
        assert!(parse(b"vCont;c1").is_err());
    }
}
