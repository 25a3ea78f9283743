//! Process control and extended-remote packets.
//!
//! ```text
//! D | D;pid     k     vKill;pid     vRun;prog-hex[;arg-hex]…     vAttach;pid
//! ```
//! lldb sends `D;0000000000004c0a` (zero-padded pid).

use super::hex_u64;
use super::Command;
use super::ParseError;
use crate::wire::hex;

/// `D[;pid]`
pub fn parse_detach(rest: &[u8]) -> Result<Command, ParseError> {
    match rest.strip_prefix(b";") {
        Some(pid) => Ok(Command::Detach(Some(hex_u64(pid, "bad pid")?))),
        None if rest.is_empty() => Ok(Command::Detach(None)),
        None => Err(ParseError::new("bad D")),
    }
}

/// `vKill;pid`
pub fn parse_vkill(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::VKill(hex_u64(rest, "bad pid")?))
}

/// `vAttach;pid`
pub fn parse_vattach(rest: &[u8]) -> Result<Command, ParseError> {
    Ok(Command::VAttach(hex_u64(rest, "bad pid")?))
}

/// `vRun;prog;args…` — each element hex-encoded; an empty program means
/// "the program given on the command line".
pub fn parse_vrun(rest: &[u8]) -> Result<Command, ParseError> {
    rest.split(|b| *b == b';')
        .map(|a| hex::decode(a).ok_or(ParseError::new("bad vRun hex")))
        .collect::<Result<Vec<_>, _>>()
        .map(Command::VRun)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse(b"D").unwrap(), Command::Detach(None));
        assert_eq!(
            parse(b"D;0000000000004c0a").unwrap(),
            Command::Detach(Some(0x4c0a))
        );
        assert_eq!(parse(b"vKill;1f").unwrap(), Command::VKill(0x1f));
        assert_eq!(
            parse(b"vRun;2f62696e2f6c73;2d6c").unwrap(),
            Command::VRun(vec![b"/bin/ls".to_vec(), b"-l".to_vec()])
        );
        assert_eq!(parse(b"vRun;").unwrap(), Command::VRun(vec![vec![]]));
        assert_eq!(parse(b"vAttach;10").unwrap(), Command::VAttach(0x10));
        assert!(parse(b"vAttach;").is_err());
        assert!(parse(b"Dx").is_err());
    }
}
