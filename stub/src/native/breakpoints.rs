//! Software breakpoints: `int3` patches with the original byte saved,
//! shared between the client (`Z0`) and the stub's own internal users (the
//! GPU runtime hook) by reference counting.

use std::collections::BTreeMap;

use nix::errno::Errno;

use super::memory::Memory;

/// The x86 breakpoint instruction.
pub const INT3: u8 = 0xcc;

/// Who asks for a breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The debugger client (`Z0`); idempotent, not counted.
    Client,
    /// The stub itself; reference counted.
    Internal,
}

/// One patched address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwBreakpoint {
    /// The byte the program really has there.
    pub orig: u8,
    /// Inserted by the client.
    pub client: bool,
    /// Internal reference count.
    pub internal: u32,
}

/// All software breakpoints of one process.
#[derive(Debug, Clone, Default)]
pub struct SwBreakpoints {
    map: BTreeMap<u64, SwBreakpoint>,
    /// Patches are temporarily out of memory (vfork child sharing memory).
    suspended: bool,
}

impl SwBreakpoints {
    /// Breakpoint at `addr`, if any.
    pub fn get(&self, addr: u64) -> Option<&SwBreakpoint> {
        self.map.get(&addr)
    }

    /// Whether any owner holds a breakpoint at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.map.contains_key(&addr)
    }

    /// Add an owner at `addr`, patching memory on the first one.
    pub fn insert(&mut self, mem: &mut Memory, addr: u64, owner: Owner) -> Result<(), Errno> {
        if let Some(bp) = self.map.get_mut(&addr) {
            match owner {
                Owner::Client => bp.client = true,
                Owner::Internal => bp.internal += 1,
            }
            return Ok(());
        }
        let orig = *mem.read(addr, 1)?.first().ok_or(Errno::EIO)?;
        if !self.suspended {
            mem.write(addr, &[INT3])?;
        }
        self.map.insert(
            addr,
            SwBreakpoint {
                orig,
                client: owner == Owner::Client,
                internal: u32::from(owner == Owner::Internal),
            },
        );
        tracing::debug!(target: "native", "breakpoint inserted at {addr:#x} ({owner:?})");
        Ok(())
    }

    /// Put the original byte back at `addr` for a step over it (the
    /// breakpoint stays in the table; [`Self::relay`] patches it again).
    pub fn lift(&self, mem: &mut Memory, addr: u64) -> Result<(), Errno> {
        match self.map.get(&addr) {
            Some(bp) if !self.suspended => mem.write(addr, &[bp.orig]).map(drop),
            _ => Ok(()),
        }
    }

    /// Patch `int3` at `addr` again after [`Self::lift`], if still held.
    pub fn relay(&self, mem: &mut Memory, addr: u64) -> Result<(), Errno> {
        if self.map.contains_key(&addr) && !self.suspended {
            mem.write(addr, &[INT3]).map(drop)
        } else {
            Ok(())
        }
    }

    /// Drop an owner at `addr`; restores memory when none is left.
    /// Removing an absent breakpoint is fine.
    pub fn remove(&mut self, mem: &mut Memory, addr: u64, owner: Owner) -> Result<(), Errno> {
        let Some(bp) = self.map.get_mut(&addr) else {
            return Ok(());
        };
        match owner {
            Owner::Client => bp.client = false,
            Owner::Internal => bp.internal = bp.internal.saturating_sub(1),
        }
        if !bp.client && bp.internal == 0 {
            let orig = bp.orig;
            self.map.remove(&addr);
            if !self.suspended {
                mem.write(addr, &[orig])?;
            }
            tracing::debug!(target: "native", "breakpoint removed at {addr:#x}");
        }
        Ok(())
    }

    /// Replace our `int3` bytes in `buf` (read from `addr`) with the
    /// original bytes.
    pub fn mask(&self, addr: u64, buf: &mut [u8]) {
        if self.suspended || self.map.is_empty() {
            return;
        }
        let end = addr.saturating_add(buf.len() as u64);
        for (a, bp) in self.map.range(addr..end) {
            buf[(a - addr) as usize] = bp.orig;
        }
    }

    /// Prepare a client write: bytes landing on a patched address update
    /// the saved original and keep the `int3` in memory. Returns the bytes
    /// to really write, or `None` when the data needs no change.
    pub fn filter_write(&mut self, addr: u64, data: &[u8]) -> Option<Vec<u8>> {
        if self.suspended || self.map.is_empty() {
            return None;
        }
        let end = addr.saturating_add(data.len() as u64);
        let mut out: Option<Vec<u8>> = None;
        for (a, bp) in self.map.range_mut(addr..end) {
            let i = (a - addr) as usize;
            bp.orig = data[i];
            out.get_or_insert_with(|| data.to_vec())[i] = INT3;
        }
        out
    }

    /// Take every patch out of memory, keeping the table (vfork: the child
    /// shares our memory and is not traced).
    pub fn suspend(&mut self, mem: &mut Memory) {
        if self.suspended {
            return;
        }
        for (a, bp) in &self.map {
            if let Err(e) = mem.write(*a, &[bp.orig]) {
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
        for a in self.map.keys() {
            if let Err(e) = mem.write(*a, &[INT3]) {
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
        for (a, bp) in &self.map {
            if let Err(e) = mem.write(*a, &[bp.orig]) {
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
