//! Software breakpoints patched into a target's memory: the one
//! implementation of their bookkeeping, used by the native target
//! (`native/breakpoints.rs`, x86 `int3`) and the GPU controller
//! (`gpu/controller.rs`, the architecture's trap instruction).
//!
//! A patch remembers the bytes the program really has under its trap and
//! who holds it: the client (`Z0`, idempotent) and the stub itself
//! (internal users such as the GPU runtime hook, reference counted). The
//! table is I/O-free: the caller reads and writes memory, the table says
//! what to write.
//!
//! - Reads are **masked**: [`Patches::mask`] puts the original bytes back
//!   into data read from memory, so no client ever sees a trap of ours.
//! - Writes **keep** the traps: [`Patches::filter_write`] takes bytes that
//!   land under a trap as the new original and keeps the trap in what is
//!   written, so a client write never silently removes a breakpoint.
//! - A patch goes away (and the caller restores its bytes) when its last
//!   owner releases it ([`Patches::release`]).

use std::collections::BTreeMap;

/// Who asks for a breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The debugger client (`Z0`); idempotent, not counted.
    Client,
    /// The stub itself; reference counted.
    Internal,
}

/// One patched address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The bytes the program really has there (as long as `trap`).
    pub orig: Vec<u8>,
    /// The trap instruction written over them.
    pub trap: Vec<u8>,
    /// Held by the client.
    pub client: bool,
    /// Internal reference count.
    pub internal: u32,
}

impl Patch {
    /// Whether anyone still holds the patch.
    fn held(&self) -> bool {
        self.client || self.internal > 0
    }
}

/// All patches of one address space.
#[derive(Debug, Clone, Default)]
pub struct Patches {
    map: BTreeMap<u64, Patch>,
    /// The longest trap (how far before a range a patch can start and
    /// still overlap it).
    longest: u64,
}

impl Patches {
    /// The patch at `addr`, if any.
    pub fn get(&self, addr: u64) -> Option<&Patch> {
        self.map.get(&addr)
    }

    /// Whether any owner holds a patch at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.map.contains_key(&addr)
    }

    /// Whether there is no patch.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Patched addresses, ascending.
    pub fn addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.keys().copied()
    }

    /// Every patch, by address.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Patch)> {
        self.map.iter().map(|(a, p)| (*a, p))
    }

    /// Add `owner` to the patch at `addr`. `false` when there is none: the
    /// caller reads the original bytes, writes the trap and calls
    /// [`Patches::planted`].
    pub fn add_owner(&mut self, addr: u64, owner: Owner) -> bool {
        let Some(p) = self.map.get_mut(&addr) else {
            return false;
        };
        match owner {
            Owner::Client => p.client = true,
            Owner::Internal => p.internal += 1,
        }
        true
    }

    /// Record a new patch: `trap` is now over `orig` at `addr`, held by
    /// `owner`. `orig` is cut or padded to the trap's length.
    pub fn planted(&mut self, addr: u64, mut orig: Vec<u8>, trap: Vec<u8>, owner: Owner) {
        orig.resize(trap.len(), 0);
        self.longest = self.longest.max(trap.len() as u64);
        self.map.insert(
            addr,
            Patch {
                orig,
                trap,
                client: owner == Owner::Client,
                internal: u32::from(owner == Owner::Internal),
            },
        );
    }

    /// Drop `owner` at `addr`. When it was the last owner the patch is
    /// forgotten and returned: the caller writes its `orig` back.
    /// Releasing an absent patch (or an owner that does not hold it) is
    /// fine.
    pub fn release(&mut self, addr: u64, owner: Owner) -> Option<Patch> {
        let p = self.map.get_mut(&addr)?;
        match owner {
            Owner::Client => p.client = false,
            Owner::Internal => p.internal = p.internal.saturating_sub(1),
        }
        if p.held() {
            return None;
        }
        self.map.remove(&addr)
    }

    /// Forget the patch at `addr`, whoever holds it, without touching
    /// memory (the memory it was in is gone, e.g. an unloaded GPU code
    /// object).
    pub fn forget(&mut self, addr: u64) -> Option<Patch> {
        self.map.remove(&addr)
    }

    /// Forget every patch without touching memory (after exec the image is
    /// new; on detach the caller has restored them).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Patches that overlap `[addr, addr + len)` (one may start before
    /// `addr`).
    fn overlapping(&self, addr: u64, len: usize) -> impl Iterator<Item = (u64, &Patch)> {
        let end = addr.saturating_add(len as u64);
        let from = addr.saturating_sub(self.longest.saturating_sub(1));
        self.map.range(from..end).map(|(a, p)| (*a, p))
    }

    /// Replace our trap bytes in `buf` (read from `addr`) with the
    /// original bytes.
    pub fn mask(&self, addr: u64, buf: &mut [u8]) {
        if self.map.is_empty() {
            return;
        }
        for (a, p) in self.overlapping(addr, buf.len()) {
            for (i, b) in p.orig.iter().enumerate() {
                let at = a.wrapping_add(i as u64);
                if at < addr {
                    continue;
                }
                if let Some(slot) = usize::try_from(at - addr).ok().and_then(|k| buf.get_mut(k)) {
                    *slot = *b;
                }
            }
        }
    }

    /// Prepare a client write of `data` at `addr`: bytes landing under a
    /// trap become that patch's original and the trap stays in memory.
    /// Returns the bytes to really write, or `None` when `data` needs no
    /// change.
    pub fn filter_write(&mut self, addr: u64, data: &[u8]) -> Option<Vec<u8>> {
        if self.map.is_empty() {
            return None;
        }
        let end = addr.saturating_add(data.len() as u64);
        let from = addr.saturating_sub(self.longest.saturating_sub(1));
        let mut out: Option<Vec<u8>> = None;
        for (a, p) in self.map.range_mut(from..end) {
            for (i, (saved, t)) in p.orig.iter_mut().zip(p.trap.iter()).enumerate() {
                let at = a.wrapping_add(i as u64);
                if at < addr || at >= end {
                    continue;
                }
                let Ok(k) = usize::try_from(at - addr) else {
                    continue;
                };
                if let Some(new) = data.get(k) {
                    *saved = *new;
                    if let Some(slot) = out.get_or_insert_with(|| data.to_vec()).get_mut(k) {
                        *slot = *t;
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const INT3: &[u8] = &[0xcc];
    /// A 4-byte trap (as `s_trap 2` is on AMD GPUs).
    const TRAP4: &[u8] = &[0x02, 0x00, 0x92, 0xbf];

    /// A little memory to patch, as a target would.
    struct Mem(Vec<u8>);

    impl Mem {
        fn plant(&mut self, t: &mut Patches, addr: u64, trap: &[u8], owner: Owner) {
            if t.add_owner(addr, owner) {
                return;
            }
            let a = addr as usize;
            let orig = self.0[a..a + trap.len()].to_vec();
            self.0[a..a + trap.len()].copy_from_slice(trap);
            t.planted(addr, orig, trap.to_vec(), owner);
        }
        fn release(&mut self, t: &mut Patches, addr: u64, owner: Owner) {
            if let Some(p) = t.release(addr, owner) {
                let a = addr as usize;
                self.0[a..a + p.orig.len()].copy_from_slice(&p.orig);
            }
        }
        fn read(&self, t: &Patches, addr: u64, len: usize) -> Vec<u8> {
            let mut b = self.0[addr as usize..addr as usize + len].to_vec();
            t.mask(addr, &mut b);
            b
        }
        fn write(&mut self, t: &mut Patches, addr: u64, data: &[u8]) {
            let d = t.filter_write(addr, data).unwrap_or_else(|| data.to_vec());
            self.0[addr as usize..addr as usize + d.len()].copy_from_slice(&d);
        }
    }

    fn mem() -> Mem {
        Mem((0u8..64).collect())
    }

    #[test]
    fn reads_are_masked_and_memory_holds_the_trap() {
        let mut m = mem();
        let mut t = Patches::default();
        m.plant(&mut t, 10, INT3, Owner::Client);
        assert_eq!(m.0[10], 0xcc);
        assert_eq!(m.read(&t, 8, 4), vec![8, 9, 10, 11]);
        assert_eq!(m.read(&t, 10, 1), vec![10]);
        assert_eq!(m.read(&t, 11, 2), vec![11, 12]);
    }

    #[test]
    fn multi_byte_traps_are_masked_where_they_overlap_a_read() {
        let mut m = mem();
        let mut t = Patches::default();
        m.plant(&mut t, 20, TRAP4, Owner::Client);
        assert_eq!(&m.0[20..24], TRAP4);
        // Reads that start inside, end inside, or cover the trap.
        assert_eq!(m.read(&t, 22, 4), vec![22, 23, 24, 25]);
        assert_eq!(m.read(&t, 18, 3), vec![18, 19, 20]);
        assert_eq!(m.read(&t, 16, 12), (16u8..28).collect::<Vec<_>>());
        assert_eq!(m.read(&t, 21, 1), vec![21]);
    }

    #[test]
    fn writes_under_a_trap_keep_it_and_become_the_original() {
        let mut m = mem();
        let mut t = Patches::default();
        m.plant(&mut t, 20, TRAP4, Owner::Client);
        m.plant(&mut t, 30, INT3, Owner::Client);
        // A write that starts inside the 4-byte trap and covers the int3.
        m.write(&mut t, 22, &[0xa0; 10]);
        assert_eq!(&m.0[20..24], TRAP4, "trap kept");
        assert_eq!(m.0[30], 0xcc, "int3 kept");
        assert_eq!(m.read(&t, 20, 12), {
            let mut v = vec![20, 21];
            v.extend([0xa0; 10]);
            v
        });
        assert_eq!(t.get(20).unwrap().orig, vec![20, 21, 0xa0, 0xa0]);
        // Removing the patches puts the written bytes, not the old ones.
        m.release(&mut t, 20, Owner::Client);
        m.release(&mut t, 30, Owner::Client);
        assert_eq!(&m.0[20..24], &[20, 21, 0xa0, 0xa0]);
        assert_eq!(m.0[30], 0xa0);
        assert!(t.is_empty());
        // A write away from any patch is not copied.
        assert!(t.filter_write(0, &[1, 2]).is_none());
    }

    #[test]
    fn owners_are_counted_client_is_idempotent() {
        let mut m = mem();
        let mut t = Patches::default();
        m.plant(&mut t, 5, INT3, Owner::Internal);
        m.plant(&mut t, 5, INT3, Owner::Internal);
        m.plant(&mut t, 5, INT3, Owner::Client);
        m.plant(&mut t, 5, INT3, Owner::Client);
        let p = t.get(5).unwrap();
        assert!(p.client);
        assert_eq!(p.internal, 2);
        assert_eq!(p.orig, vec![5], "the original, not our own trap");
        m.release(&mut t, 5, Owner::Client);
        assert_eq!(m.0[5], 0xcc, "internal owners remain");
        m.release(&mut t, 5, Owner::Internal);
        assert_eq!(m.0[5], 0xcc, "one internal owner remains");
        m.release(&mut t, 5, Owner::Internal);
        assert_eq!(m.0[5], 5, "restored after the last owner");
        assert!(!t.contains(5));
        // Releasing what is not there is fine.
        m.release(&mut t, 5, Owner::Internal);
        assert!(t.release(6, Owner::Client).is_none());
    }

    #[test]
    fn edges_never_panic() {
        let mut t = Patches::default();
        t.planted(
            u64::MAX - 1,
            vec![1, 2, 3, 4],
            TRAP4.to_vec(),
            Owner::Client,
        );
        t.planted(0, vec![9], INT3.to_vec(), Owner::Client);
        let mut b = vec![0u8; 8];
        t.mask(u64::MAX - 3, &mut b);
        t.mask(0, &mut b);
        t.mask(0, &mut []);
        let _ = t.filter_write(u64::MAX - 3, &[7; 8]);
        let _ = t.filter_write(0, &[]);
        assert_eq!(t.addresses().collect::<Vec<_>>(), vec![0, u64::MAX - 1]);
    }
}
