//! x86 debug registers: DR0–DR3 addresses, DR6 status, DR7 control, written
//! with `PTRACE_POKEUSER` at `offsetof(struct user, u_debugreg)`.
//!
//! The process keeps one slot table; each thread gets it applied lazily
//! before it next runs (threads compare their applied generation with the
//! table's), which also covers threads that appear later.

use nix::errno::Errno;

use super::ptrace;
use super::ptrace::RawTid;
use super::x86_64::DEBUGREG_OFFSET;
use crate::target::BreakpointKind;

/// Number of address slots.
pub const SLOTS: usize = 4;
/// DR6 "single step" bit.
pub const DR6_BS: u64 = 1 << 14;

/// One used slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwSlot {
    /// Execution breakpoint or watchpoint kind.
    pub kind: BreakpointKind,
    /// Address.
    pub addr: u64,
    /// Length (1, 2, 4, 8).
    pub len: u64,
}

/// Slot table.
#[derive(Debug, Clone, Default)]
pub struct HwDebug {
    slots: [Option<HwSlot>; SLOTS],
    /// Bumped on every change.
    pub generation: u64,
}

/// Why a request cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HwError {
    /// Bad length/alignment/kind.
    Invalid(String),
    /// All slots busy.
    Full,
}

impl HwDebug {
    /// Whether any slot is in use.
    pub fn in_use(&self) -> bool {
        self.slots.iter().any(Option::is_some)
    }

    /// Add a slot; idempotent for an identical request.
    pub fn insert(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> Result<(), HwError> {
        let len = if kind == BreakpointKind::Hardware {
            1
        } else {
            len
        };
        if kind == BreakpointKind::Software {
            return Err(HwError::Invalid(
                "software breakpoints do not use debug registers".into(),
            ));
        }
        let pieces = pieces(addr, len)?;
        let new: Vec<HwSlot> = pieces
            .into_iter()
            .map(|(addr, len)| HwSlot { kind, addr, len })
            .filter(|p| !self.slots.contains(&Some(*p)))
            .collect();
        let free = self.slots.iter().filter(|s| s.is_none()).count();
        if new.len() > free {
            return Err(HwError::Full);
        }
        for p in new {
            if let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) {
                *slot = Some(p);
            }
        }
        self.generation += 1;
        Ok(())
    }

    /// Remove a slot (absent is fine).
    pub fn remove(&mut self, kind: BreakpointKind, addr: u64, len: u64) {
        let len = if kind == BreakpointKind::Hardware {
            1
        } else {
            len
        };
        for (addr, len) in pieces(addr, len).unwrap_or_default() {
            for s in &mut self.slots {
                if *s == Some(HwSlot { kind, addr, len }) {
                    *s = None;
                    self.generation += 1;
                }
            }
        }
    }

    /// Drop all slots.
    pub fn clear(&mut self) {
        if self.slots.iter().any(Option::is_some) {
            self.slots = [None; SLOTS];
            self.generation += 1;
        }
    }

    /// Whether a slot of `kind` at `addr` (any length) is in use.
    pub fn holds(&self, kind: BreakpointKind, addr: u64) -> bool {
        self.slots
            .iter()
            .flatten()
            .any(|s| s.kind == kind && s.addr == addr)
    }

    /// Slot `i`.
    pub fn slot(&self, i: usize) -> Option<HwSlot> {
        self.slots.get(i).copied().flatten()
    }

    /// The DR7 value for this table.
    pub fn dr7(&self) -> u64 {
        let mut dr7 = 0u64;
        for (i, s) in self.slots.iter().enumerate() {
            let Some(s) = s else { continue };
            let rw: u64 = match s.kind {
                BreakpointKind::Hardware | BreakpointKind::Software => 0b00,
                BreakpointKind::WatchWrite => 0b01,
                // x86 has no read-only watch: access (read/write) it is.
                BreakpointKind::WatchRead | BreakpointKind::WatchAccess => 0b11,
            };
            let len: u64 = match (s.kind, s.len) {
                (BreakpointKind::Hardware, _) => 0b00,
                (_, 1) => 0b00,
                (_, 2) => 0b01,
                (_, 8) => 0b10,
                _ => 0b11,
            };
            dr7 |= 1 << (2 * i);
            dr7 |= (rw | (len << 2)) << (16 + 4 * i);
        }
        dr7
    }

    /// Write the table into one stopped thread.
    pub fn apply(&self, tid: RawTid) -> Result<(), Errno> {
        ptrace::poke_user(tid, DEBUGREG_OFFSET + 7 * 8, 0)?;
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(s) = s {
                ptrace::poke_user(tid, DEBUGREG_OFFSET + i * 8, s.addr)?;
            }
        }
        let dr7 = self.dr7();
        if dr7 != 0 {
            ptrace::poke_user(tid, DEBUGREG_OFFSET + 7 * 8, dr7)?;
        }
        Ok(())
    }
}

/// Read DR6 of a stopped thread.
/// Split `[addr, addr+len)` into the aligned 1/2/4/8-byte pieces one
/// debug register each can watch, largest first, as gdb's x86-dregs.c
/// (`x86_handle_nonaligned_watchpoint`) does for gdbserver: 16 bytes at
/// an 8-aligned address take two registers, 3 bytes at 0x1001 take 0x1001
/// (1) and 0x1002 (2).
pub fn pieces(mut addr: u64, len: u64) -> Result<Vec<(u64, u64)>, HwError> {
    if len == 0 || len > SLOTS as u64 * 8 {
        return Err(HwError::Invalid(format!(
            "watchpoint length {len} not supported (1 to {})",
            SLOTS * 8
        )));
    }
    let end = addr
        .checked_add(len)
        .ok_or_else(|| HwError::Invalid("watched range wraps around".into()))?;
    let mut out = Vec::new();
    while addr < end {
        let size = [8u64, 4, 2, 1]
            .into_iter()
            .find(|s| addr.is_multiple_of(*s) && addr + s <= end)
            .unwrap_or(1);
        out.push((addr, size));
        addr += size;
        if out.len() > SLOTS {
            return Err(HwError::Full);
        }
    }
    Ok(out)
}

pub fn read_dr6(tid: RawTid) -> Result<u64, Errno> {
    ptrace::peek_user(tid, DEBUGREG_OFFSET + 6 * 8)
}

/// Clear DR6 of a stopped thread.
pub fn clear_dr6(tid: RawTid) -> Result<(), Errno> {
    ptrace::poke_user(tid, DEBUGREG_OFFSET + 6 * 8, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dr7_encoding_and_checks() {
        let mut hw = HwDebug::default();
        hw.insert(BreakpointKind::WatchWrite, 0x1000, 8).unwrap();
        hw.insert(BreakpointKind::WatchWrite, 0x1000, 8).unwrap();
        hw.insert(BreakpointKind::Hardware, 0x4000, 1).unwrap();
        assert_eq!(hw.dr7(), 0b01 | (0b1001 << 16) | (0b01 << 2));
        // Unaligned or odd lengths need several registers: 0x1001+4 is
        // 1+2+1, more than the two left, so nothing is taken.
        assert_eq!(
            hw.insert(BreakpointKind::WatchRead, 0x1001, 4),
            Err(HwError::Full)
        );
        assert!(matches!(
            hw.insert(BreakpointKind::WatchRead, 0x1000, 0),
            Err(HwError::Invalid(_))
        ));
        hw.insert(BreakpointKind::WatchAccess, 0x2000, 4).unwrap();
        hw.insert(BreakpointKind::WatchRead, 0x3000, 2).unwrap();
        assert_eq!(
            hw.insert(BreakpointKind::WatchRead, 0x5000, 2),
            Err(HwError::Full)
        );
        assert!(hw.holds(BreakpointKind::WatchWrite, 0x1000));
        assert!(!hw.holds(BreakpointKind::WatchAccess, 0x1000));
        hw.remove(BreakpointKind::WatchWrite, 0x1000, 8);
        assert!(hw.slot(0).is_none());
        assert!(!hw.holds(BreakpointKind::WatchWrite, 0x1000));
        hw.insert(BreakpointKind::WatchRead, 0x5000, 2).unwrap();
        assert_eq!(hw.slot(0).unwrap().addr, 0x5000);
    }

    #[test]
    fn wide_and_unaligned_ranges_split_over_registers() {
        assert_eq!(pieces(0x1000, 16).unwrap(), [(0x1000, 8), (0x1008, 8)]);
        assert_eq!(pieces(0x1001, 3).unwrap(), [(0x1001, 1), (0x1002, 2)]);
        assert_eq!(
            pieces(0x1004, 10).unwrap(),
            [(0x1004, 4), (0x1008, 4), (0x100c, 2)]
        );
        assert_eq!(
            pieces(0x1000, 33),
            Err(HwError::Invalid(
                "watchpoint length 33 not supported (1 to 32)".into()
            ))
        );
        let mut hw = HwDebug::default();
        hw.insert(BreakpointKind::WatchWrite, 0x2000, 32).unwrap();
        assert_eq!(
            hw.insert(BreakpointKind::WatchWrite, 0x3000, 1),
            Err(HwError::Full)
        );
        assert!(hw.holds(BreakpointKind::WatchWrite, 0x2018));
        hw.remove(BreakpointKind::WatchWrite, 0x2000, 32);
        assert!(!hw.in_use());
    }
}
