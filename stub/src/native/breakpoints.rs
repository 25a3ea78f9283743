//! Software breakpoints of a native process: `int3` patches with the
//! original byte saved, shared between the client (`Z0`) and the stub's
//! own internal users (the GPU runtime hook) by reference counting. The
//! bookkeeping (masking reads, keeping writes under a trap, owners) is the
//! shared table of `crate::swbreak`; this module does the process's memory
//! I/O and the vfork suspension.

use nix::errno::Errno;

use super::memory::Memory;
pub use crate::swbreak::Owner;
pub use crate::swbreak::Patch as SwBreakpoint;
use crate::swbreak::Patches;

/// The x86 breakpoint instruction.
pub const INT3: u8 = 0xcc;

/// All software breakpoints of one process.
#[derive(Debug, Clone, Default)]
pub struct SwBreakpoints {
    map: Patches,
    /// Patches are temporarily out of memory (vfork child sharing memory).
    suspended: bool,
}

impl SwBreakpoints {
    /// Breakpoint at `addr`, if any.
    pub fn get(&self, addr: u64) -> Option<&SwBreakpoint> {
        self.map.get(addr)
    }

    /// Whether any owner holds a breakpoint at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.map.contains(addr)
    }

    /// Add an owner at `addr`, patching memory on the first one.
    pub fn insert(&mut self, mem: &mut Memory, addr: u64, owner: Owner) -> Result<(), Errno> {
        if self.map.add_owner(addr, owner) {
            return Ok(());
        }
        let orig = *mem.read(addr, 1)?.first().ok_or(Errno::EIO)?;
        if !self.suspended {
            mem.write(addr, &[INT3])?;
        }
        self.map.planted(addr, vec![orig], vec![INT3], owner);
        tracing::debug!(target: "native", "breakpoint inserted at {addr:#x} ({owner:?})");
        Ok(())
    }

    /// Put the original byte back at `addr` for a step over it (the
    /// breakpoint stays in the table; [`Self::relay`] patches it again).
    pub fn lift(&self, mem: &mut Memory, addr: u64) -> Result<(), Errno> {
        match self.map.get(addr) {
            Some(bp) if !self.suspended => restore(mem, addr, bp),
            _ => Ok(()),
        }
    }

    /// Patch `int3` at `addr` again after [`Self::lift`], if still held.
    pub fn relay(&self, mem: &mut Memory, addr: u64) -> Result<(), Errno> {
        if self.map.contains(addr) && !self.suspended {
            mem.write(addr, &[INT3]).map(drop)
        } else {
            Ok(())
        }
    }

    /// Drop an owner at `addr`; restores memory when none is left.
    /// Removing an absent breakpoint is fine.
    pub fn remove(&mut self, mem: &mut Memory, addr: u64, owner: Owner) -> Result<(), Errno> {
        if let Some(bp) = self.map.release(addr, owner) {
            if !self.suspended {
                restore(mem, addr, &bp)?;
            }
            tracing::debug!(target: "native", "breakpoint removed at {addr:#x}");
        }
        Ok(())
    }

    /// Replace our `int3` bytes in `buf` (read from `addr`) with the
    /// original bytes.
    pub fn mask(&self, addr: u64, buf: &mut [u8]) {
        if self.suspended {
            return;
        }
        self.map.mask(addr, buf);
    }

    /// Prepare a client write: bytes landing on a patched address update
    /// the saved original and keep the `int3` in memory. Returns the bytes
    /// to really write, or `None` when the data needs no change.
    pub fn filter_write(&mut self, addr: u64, data: &[u8]) -> Option<Vec<u8>> {
        if self.suspended {
            return None;
        }
        self.map.filter_write(addr, data)
    }

    /// Take every patch out of memory, keeping the table (vfork: the child
    /// shares our memory and is not traced).
    pub fn suspend(&mut self, mem: &mut Memory) {
        if self.suspended {
            return;
        }
        for (a, bp) in self.map.iter() {
            if let Err(e) = restore(mem, a, bp) {
                tracing::warn!(target: "native", "cannot lift breakpoint at {a:#x}: {e}");
            }
        }
        self.suspended = true;
    }

    /// Put every patch back after [`SwBreakpoints::suspend`].
    pub fn resume(&mut self, mem: &mut Memory) {
        if !self.suspended {
            return;
        }
        self.suspended = false;
        for (a, bp) in self.map.iter() {
            if let Err(e) = mem.write(a, &bp.trap) {
                tracing::warn!(target: "native", "cannot reinsert breakpoint at {a:#x}: {e}");
            }
        }
    }

    /// Restore original bytes in `mem` (another process's memory, e.g. a
    /// fork child we detach) without changing the table.
    pub fn restore_into(&self, mem: &mut Memory) {
        if self.suspended {
            return;
        }
        for (a, bp) in self.map.iter() {
            if let Err(e) = restore(mem, a, bp) {
                tracing::warn!(target: "native", "cannot restore {a:#x} in child: {e}");
            }
        }
    }

    /// Remove every breakpoint from memory and forget them (detach).
    pub fn remove_all(&mut self, mem: &mut Memory) {
        self.suspend(mem);
        self.clear();
    }

    /// Forget every breakpoint without touching memory (after exec the
    /// image is new).
    pub fn clear(&mut self) {
        self.map.clear();
        self.suspended = false;
    }
}

/// Write `bp`'s saved bytes back at `addr`, only if its trap is still
/// there. A trap that is gone was overwritten by the program, or its page
/// was mapped again (the dynamic loader maps a library's whole span from
/// file offset 0 first and then each segment over it at its own offset: a
/// breakpoint planted in between saved bytes of the wrong file offset and
/// is lost with the first mapping). Writing the saved bytes then would
/// corrupt the code that is really there, so they are not written, as
/// gdb's `memory_validate_breakpoint` does.
fn restore(mem: &mut Memory, addr: u64, bp: &SwBreakpoint) -> Result<(), Errno> {
    let mut now = [0u8; 16];
    let now = &mut now[..bp.trap.len().min(16)];
    match mem.read_into(addr, now) {
        Ok(n) if n == now.len() && *now == bp.trap[..now.len()] => {
            mem.write(addr, &bp.orig).map(drop)
        }
        Ok(_) => {
            tracing::warn!(target: "native", "breakpoint at {addr:#x} is no longer in memory (the code there was written or mapped again): its saved bytes are not written back");
            Ok(())
        }
        Err(e) => Err(e),
    }
}
