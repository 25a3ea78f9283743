//! Register packets.
//!
//! ```text
//! g[;thread:tid;]          G hex[;thread:tid;]
//! p n[;thread:tid;]        P n=hex[;thread:tid;]
//! ```
//! The `;thread:` suffix is lldb's `QThreadSuffixSupported` extension.

use super::thread_suffix;
use super::Command;
use super::ParseError;
use crate::wire::hex;

/// `g`
pub fn parse_g(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, thread) = thread_suffix(rest)?;
    if !head.is_empty() {
        return Err(ParseError::new("trailing data after g"));
    }
    Ok(Command::ReadRegisters { thread })
}

/// `G`
pub fn parse_big_g(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, thread) = thread_suffix(rest)?;
    let data = hex::decode(head).ok_or(ParseError::new("bad G hex"))?;
    Ok(Command::WriteRegisters { data, thread })
}

/// `p`
pub fn parse_p(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, thread) = thread_suffix(rest)?;
    let regnum = hex::parse_u64(head)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(ParseError::new("bad register number"))?;
    Ok(Command::ReadRegister { regnum, thread })
}

/// `P`
pub fn parse_big_p(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, thread) = thread_suffix(rest)?;
    let (n, v) = super::split2(head, b'=').ok_or(ParseError::new("P without ="))?;
    let regnum = hex::parse_u64(n)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(ParseError::new("bad register number"))?;
    let value = hex::decode(v).ok_or(ParseError::new("bad register value"))?;
    Ok(Command::WriteRegister {
        regnum,
        value,
        thread,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::IdSel;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse(b"g").unwrap(),
            Command::ReadRegisters { thread: None }
        );
        let Command::ReadRegister { regnum, thread } = parse(b"p10;thread:4c43;").unwrap() else {
            panic!()
        };
        assert_eq!(regnum, 0x10);
        assert_eq!(thread.unwrap().tid, IdSel::Id(0x4c43));
        assert_eq!(
            parse(b"P39=ffffffffffffffff").unwrap(),
            Command::WriteRegister {
                regnum: 0x39,
                value: vec![0xff; 8],
                thread: None
            }
        );
        assert_eq!(
            parse(b"G0102").unwrap(),
            Command::WriteRegisters {
                data: vec![1, 2],
                thread: None
            }
        );
        assert!(parse(b"pzz").is_err());
        assert!(parse(b"P1").is_err());
        assert!(parse(b"G0").is_err());
        assert!(parse(b"gx").is_err());
    }
}
