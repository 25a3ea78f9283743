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
    // `;X…` conditions (ConditionalBreakpoints+), then `;cmds:P,X…`
    // commands (BreakpointCommands+; P, the persist flag, is ignored).
    let (rest, tail) = match rest.iter().position(|b| *b == b';') {
        Some(i) => (
            rest.get(..i).unwrap_or_default(),
            rest.get(i + 1..).unwrap_or_default(),
        ),
        None => (rest, &b""[..]),
    };
    let (conds_part, cmds_part) = match tail.windows(5).position(|w| w == b"cmds:") {
        Some(i) => (
            tail.get(..i).unwrap_or_default(),
            tail.get(i + 5..).unwrap_or_default(),
        ),
        None => (tail, &b""[..]),
    };
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
    if insert && kind == BreakpointKind::Software && !tail.is_empty() {
        let conditions = crate::agentexpr::parse_conditions(conds_part)
            .ok_or_else(|| ParseError::new("bad breakpoint condition"))?;
        let commands = if cmds_part.is_empty() {
            Vec::new()
        } else {
            crate::agentexpr::parse_commands(cmds_part)
                .ok_or_else(|| ParseError::new("bad breakpoint commands"))?
        };
        if !conditions.is_empty() || !commands.is_empty() {
            return Ok(Command::InsertConditionalBreakpoint {
                addr,
                len,
                conditions,
                commands,
            });
        }
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
        assert_eq!(
            p(b"Z0,1,1;X2,2227").unwrap(),
            Command::InsertConditionalBreakpoint {
                addr: 1,
                len: 1,
                conditions: vec![vec![0x22, 0x27]],
                commands: Vec::new(),
            }
        );
        assert_eq!(
            p(b"Z0,1,1;X1,ab;cmds:0,X1,27X2,2227").unwrap(),
            Command::InsertConditionalBreakpoint {
                addr: 1,
                len: 1,
                conditions: vec![vec![0xab]],
                commands: vec![vec![0x27], vec![0x22, 0x27]],
            }
        );
        assert_eq!(
            p(b"Z0,1,1;cmds:1,X1,27").unwrap(),
            Command::InsertConditionalBreakpoint {
                addr: 1,
                len: 1,
                conditions: Vec::new(),
                commands: vec![vec![0x27]],
            }
        );
        assert!(p(b"Z0,1,1;cmds:0,X2,27").is_err());
        assert!(p(b"Z0,1,1;X2,ab").is_err());
    }
}
