//! Memory packets.
//!
//! ```text
//! m addr,length            M addr,length:hex
//! x addr,length            X addr,length:binary
//! ```
//! `x` is the lldb binary read (reply: raw binary, no `b` prefix as lldb
//! 23 expects; see research/client-traces.md §0.6). `x0,0` is lldb's probe.

use super::hex_u64;
use super::split2;
use super::Command;
use super::ParseError;
use crate::wire::hex;

fn addr_len(s: &[u8]) -> Result<(u64, u64), ParseError> {
    let (a, l) = split2(s, b',').ok_or(ParseError::new("expected addr,length"))?;
    Ok((hex_u64(a, "bad address")?, hex_u64(l, "bad length")?))
}

/// `m`
pub fn parse_m(rest: &[u8]) -> Result<Command, ParseError> {
    let (addr, len) = addr_len(rest)?;
    Ok(Command::ReadMemory { addr, len })
}

/// `x`
pub fn parse_x(rest: &[u8]) -> Result<Command, ParseError> {
    let (addr, len) = addr_len(rest)?;
    Ok(Command::ReadMemoryBinary { addr, len })
}

/// `M`
pub fn parse_big_m(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, data) = split2(rest, b':').ok_or(ParseError::new("M without :"))?;
    let (addr, len) = addr_len(head)?;
    let data = hex::decode(data).ok_or(ParseError::new("bad M hex"))?;
    if data.len() as u64 != len {
        return Err(ParseError::new("M length mismatch"));
    }
    Ok(Command::WriteMemory { addr, data })
}

/// `X` (data already `}`-unescaped by the framer)
pub fn parse_big_x(rest: &[u8]) -> Result<Command, ParseError> {
    let (head, data) = split2(rest, b':').ok_or(ParseError::new("X without :"))?;
    let (addr, len) = addr_len(head)?;
    if data.len() as u64 != len {
        return Err(ParseError::new("X length mismatch"));
    }
    Ok(Command::WriteMemoryBinary {
        addr,
        data: data.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse(b"m7ffe0,20").unwrap(),
            Command::ReadMemory {
                addr: 0x7ffe0,
                len: 0x20
            }
        );
        assert_eq!(
            parse(b"x0,0").unwrap(),
            Command::ReadMemoryBinary { addr: 0, len: 0 }
        );
        assert_eq!(
            parse(b"M10,2:abcd").unwrap(),
            Command::WriteMemory {
                addr: 0x10,
                data: vec![0xab, 0xcd]
            }
        );
        assert_eq!(
            parse(b"X10,2:#}").unwrap(),
            Command::WriteMemoryBinary {
                addr: 0x10,
                data: b"#}".to_vec()
            }
        );
        assert_eq!(
            parse(b"X10,0:").unwrap(),
            Command::WriteMemoryBinary {
                addr: 0x10,
                data: vec![]
            }
        );
        assert!(parse(b"m10").is_err());
        assert!(parse(b"M10,3:abcd").is_err());
        assert!(parse(b"X10,3:ab").is_err());
        assert!(parse(b"mffffffffffffffffff,1").is_err());
    }
}
