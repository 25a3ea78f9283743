//! Breakpoint and watchpoint packets.
//!
//! ```text
//! Z type,addr,kind[;cond…]     z type,addr,kind
//! type: 0 software, 1 hardware, 2 write, 3 read, 4 access watchpoint
//! ```

use super::hex_u64;
use super::Command;
use super::ParseError;
use crate::target::BreakpointKind;

/// `Z`/`z` (after the letter).
pub fn parse(rest: &[u8], insert: bool) -> Result<Command, ParseError> {
    // Drop any `;cond…` / `;cmds…` extension; we do not advertise them.
    let rest = rest.split(|b| *b == b';').next().unwrap_or_default();
    let mut it = rest.split(|b| *b == b',');
    let kind = match it.next() {
        Some(b"0") => BreakpointKind::Software,
        Some(b"1") => BreakpointKind::Hardware,
        Some(b"2") => BreakpointKind::WatchWrite,
        Some(b"3") => BreakpointKind::WatchRead,
        Some(b"4") => BreakpointKind::WatchAccess,
        _ => return Err(ParseError::new("bad breakpoint type")),
    };
    let addr = hex_u64(it.next().unwrap_or_default(), "bad address")?;
    let len = hex_u64(it.next().unwrap_or_default(), "bad kind/length")?;
    if it.next().is_some() {
        return Err(ParseError::new("trailing breakpoint fields"));
    }
    Ok(if insert {
        Command::InsertBreakpoint { kind, addr, len }
    } else {
        Command::RemoveBreakpoint { kind, addr, len }
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse as p;
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            p(b"Z0,401136,1").unwrap(),
            Command::InsertBreakpoint {
                kind: BreakpointKind::Software,
                addr: 0x401136,
                len: 1
            }
        );
        assert_eq!(
            p(b"z2,555555558080,8").unwrap(),
            Command::RemoveBreakpoint {
                kind: BreakpointKind::WatchWrite,
                addr: 0x555555558080,
                len: 8
            }
        );
        assert!(p(b"Z5,1,1").is_err());
        assert!(p(b"Z0,1").is_err());
        assert!(p(b"Z0,1,1,1").is_err());
        assert!(p(b"Z0,1,1;X1,ab").is_ok());
    }
}
