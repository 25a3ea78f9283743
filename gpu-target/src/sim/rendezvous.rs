//! The debugger rendezvous between the runtime (`simgpu-rt`, in the
//! program) and the simulated GPU library (`libsimgpu_dbgapi.so`, in the
//! debugger): `r_debug` states and the socket protocol.
//!
//! The library listens on the abstract unix socket [`socket_name`]`(pid)`.
//! 16-byte messages (`u32 kind`, `u32` padding, `u64 value`): runtime →
//! library `HELLO(&r_debug)` and `DISPATCH(packet address)`; library →
//! runtime `ACK` once the debugger processed the runtime-loaded event, and
//! `DONE(status)` per dispatch (see [`outcome_code`]).

use std::io::Read;

use super::device::DispatchOutcome;
use crate::model::StopReasons;

/// `r_state`: the list is consistent.
pub const RT_CONSISTENT: i32 = 0;
/// `r_state`: a code object is being added.
pub const RT_ADD: i32 = 1;
/// `r_state`: a code object is being removed.
pub const RT_DELETE: i32 = 2;

/// Message kinds between the runtime and the GPU library.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MessageKind {
    /// runtime → library: value = address of `_simgpu_r_debug`.
    Hello = 1,
    /// library → runtime: the debugger processed the runtime event.
    Ack = 2,
    /// runtime → library: value = dispatch packet address.
    Dispatch = 3,
    /// library → runtime: value = the dispatch status ([`outcome_code`]).
    Done = 4,
}

/// One 16-byte message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Kind.
    pub kind: MessageKind,
    /// Payload.
    pub value: u64,
}

impl Message {
    /// Encodes it.
    pub fn encode(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[8..].copy_from_slice(&self.value.to_le_bytes());
        b
    }

    /// Decodes one.
    pub fn decode(b: &[u8; 16]) -> Option<Self> {
        let kind = match u32::from_le_bytes([b[0], b[1], b[2], b[3]]) {
            1 => MessageKind::Hello,
            2 => MessageKind::Ack,
            3 => MessageKind::Dispatch,
            4 => MessageKind::Done,
            _ => return None,
        };
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[8..]);
        Some(Self {
            kind,
            value: u64::from_le_bytes(v),
        })
    }

    /// Reads one from a stream.
    pub fn read_from(r: &mut impl Read) -> std::io::Result<Self> {
        let mut b = [0u8; 16];
        r.read_exact(&mut b)?;
        Self::decode(&b).ok_or_else(|| std::io::Error::other("bad simgpu message"))
    }
}

/// The abstract socket name the GPU library listens on for process `pid`.
pub fn socket_name(pid: u32) -> String {
    format!("simgpu-dbgapi.{pid}")
}

/// Name of the exported `struct r_debug` of the runtime.
pub const R_DEBUG_SYMBOL: &str = "_simgpu_r_debug";

/// Finds the runtime's `r_debug` in process `pid` by reading
/// `/proc/<pid>/maps` and the symbol tables of the executable and of any
/// mapped `*simgpu_rt*` library. `None` if the runtime is not linked in.
pub fn find_r_debug(pid: i32) -> Option<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let mut seen = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(_perms), Some(offset)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let path = f.nth(2).unwrap_or("");
        if !offset.trim_start_matches('0').is_empty()
            || path.is_empty()
            || seen.iter().any(|p| p == path)
        {
            continue;
        }
        let is_exe = exe.as_deref().and_then(|e| e.to_str()) == Some(path);
        if !is_exe && !path.contains("simgpu_rt") {
            continue;
        }
        seen.push(path.to_owned());
        let start = range
            .split('-')
            .next()
            .and_then(|s| u64::from_str_radix(s, 16).ok())?;
        let bytes = std::fs::read(path).ok()?;
        let elf = super::elf::Elf::parse(&bytes).ok()?;
        let Ok(sym) = elf.symbol(R_DEBUG_SYMBOL) else {
            continue;
        };
        let bias = if elf.kind == 3 {
            let first = elf
                .segments
                .iter()
                .map(|s| s.vaddr & !0xfff)
                .min()
                .unwrap_or(0);
            start.wrapping_sub(first)
        } else {
            0
        };
        return Some(bias.wrapping_add(sym.value));
    }
    None
}

/// `DONE` values: 0 completed, 5 memory violation, 6 aborted otherwise
/// (the runtime's C status codes).
pub fn outcome_code(o: Option<DispatchOutcome>) -> u64 {
    match o {
        Some(DispatchOutcome::Completed) => 0,
        Some(DispatchOutcome::Aborted { reason, .. })
            if reason.contains(StopReasons::MEMORY_VIOLATION) =>
        {
            5
        }
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_roundtrip() {
        let m = Message {
            kind: MessageKind::Dispatch,
            value: 0x1234_5678_9abc,
        };
        assert_eq!(Message::decode(&m.encode()), Some(m));
        assert_eq!(Message::decode(&[9; 16]), None);
    }
}
