//! The instruction cache: code pages decoded once into [`Inst`](super::decode::Inst)s indexed by
//! pc, each with the handler that executes it ([`Decoded`]), so that
//! executing an instruction costs no fetch, no decode, no allocation and no
//! hash lookup while the wave stays on one page.
//!
//! Coherence: every write into memory that may hold code goes through
//! [`ICache::invalidate`] (the device's `write_memory`, which the debugger
//! uses to plant and remove `s_trap` breakpoints), and a new dispatch clears
//! the cache. Both bump a generation counter that a running wave compares
//! with the one of the page it holds, once per instruction (one relaxed
//! atomic load), so a write is seen by the next instruction fetched.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::RwLock;

use super::decode::decode;
use super::memory::GlobalMemory;
use super::wave::Decoded;

/// Bytes per cached page.
pub const PAGE: u64 = 4096;
/// Longest instruction (a 64-bit encoding); the decode of a page reads this
/// far into the next one.
const MAX_INST: u64 = 8;
/// Instruction slots per page (instructions are dword aligned).
const SLOTS: usize = (PAGE / 4) as usize;
/// Pages kept at most; past this the cache is emptied (code is small; this
/// bounds memory when a wave wanders through data).
const MAX_PAGES: usize = 4096;

/// One decoded page: slot `k` is the instruction starting at `base + 4k`
/// (`None`: not a valid instruction there, or unreadable).
pub struct DecodedPage {
    base: u64,
    /// The generation this page was last found current in (pages an
    /// invalidation touches are removed, the others are re-stamped when
    /// next looked up).
    generation: AtomicU64,
    slots: Box<[Option<Decoded>; SLOTS]>,
}

impl DecodedPage {
    /// The instruction at `pc` when it lies on this page and the page is
    /// still current (inner `None`: no valid instruction there); `None` when
    /// the page must be looked up again.
    #[inline]
    pub fn get(&self, pc: u64, generation: u64) -> Option<Option<&Decoded>> {
        let off = pc.wrapping_sub(self.base);
        if off >= PAGE || off & 3 != 0 || generation != self.generation.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.slots[(off / 4) as usize].as_ref())
    }
}

impl DecodedPage {
    /// The instruction at `pc` of a page just returned by [`ICache::page`]
    /// (whatever the generation).
    pub fn at(&self, pc: u64) -> Option<&Decoded> {
        let off = pc.wrapping_sub(self.base);
        if off >= PAGE || off & 3 != 0 {
            return None;
        }
        self.slots[(off / 4) as usize].as_ref()
    }
}

/// Decoded code pages of one device.
pub struct ICache {
    mem: Arc<dyn GlobalMemory>,
    pages: RwLock<HashMap<u64, Arc<DecodedPage>>>,
    generation: AtomicU64,
}

impl ICache {
    /// An empty cache over `mem`.
    pub fn new(mem: Arc<dyn GlobalMemory>) -> Self {
        Self {
            mem,
            pages: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
        }
    }

    /// The current generation (changes on every invalidation).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The decoded page holding `pc` (decoding it on first use).
    pub fn page(&self, pc: u64) -> Arc<DecodedPage> {
        let base = pc & !(PAGE - 1);
        let generation = match self.pages.read() {
            Ok(pages) => {
                // Invalidations bump the generation under the write lock:
                // a page still in the map is current for this generation.
                let generation = self.generation();
                if let Some(p) = pages.get(&base) {
                    p.generation.store(generation, Ordering::Relaxed);
                    return p.clone();
                }
                generation
            }
            Err(_) => self.generation(),
        };
        let mut bytes = vec![0u8; (PAGE + MAX_INST) as usize];
        let n = self.mem.read_partial(base, &mut bytes);
        bytes.truncate(n);
        let slots: Box<[Option<Decoded>; SLOTS]> = (0..SLOTS)
            .map(|k| bytes.get(k * 4..).and_then(decode).map(Decoded::new))
            .collect::<Box<[_]>>()
            .try_into()
            .unwrap_or_else(|_| unreachable!("SLOTS slots"));
        let p = Arc::new(DecodedPage {
            base,
            generation: AtomicU64::new(generation),
            slots,
        });
        if let Ok(mut pages) = self.pages.write() {
            // An invalidation between the read and here bumped the
            // generation: the page is then stale and is not kept.
            if self.generation() == generation {
                if pages.len() >= MAX_PAGES {
                    pages.clear();
                }
                pages.insert(base, p.clone());
            }
        }
        p
    }

    /// Drops the pages that bytes `addr..addr+len` (or an instruction
    /// straddling into them) were decoded from.
    pub fn invalidate(&self, addr: u64, len: usize) {
        if let Ok(mut pages) = self.pages.write() {
            let mut a = addr.saturating_sub(MAX_INST) & !(PAGE - 1);
            while a < addr.saturating_add(len as u64) {
                pages.remove(&a);
                a += PAGE;
            }
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Drops every page.
    pub fn clear(&self) {
        if let Ok(mut pages) = self.pages.write() {
            pages.clear();
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::memory::BufferMemory;

    const S_NOP: [u8; 4] = [0, 0, 0x80, 0xbf];
    const S_ENDPGM: [u8; 4] = [0, 0, 0x81, 0xbf];
    /// `s_mov_b32 s0, 0x12345678`: a literal, 8 bytes.
    const S_MOV_LIT: [u8; 8] = [0xff, 0x00, 0x80, 0xbe, 0x78, 0x56, 0x34, 0x12];

    #[test]
    fn writes_invalidate_pages_and_straddling_instructions() {
        let mem = Arc::new(BufferMemory::new());
        let mut code = S_NOP.repeat(2 * PAGE as usize / 4);
        code[PAGE as usize - 4..PAGE as usize + 4].copy_from_slice(&S_MOV_LIT);
        mem.map(0x10000, code);
        let c = ICache::new(mem.clone());
        let p = c.page(0x10000 + PAGE - 4);
        let g = c.generation();
        assert_eq!(p.get(0x10000 + PAGE - 4, g).unwrap().unwrap().inst.size, 8);
        assert!(p.get(0x10000 + 2, g).is_none(), "misaligned pc");
        assert_eq!(p.get(0x10000 + PAGE, g).map(|_| ()), None, "next page");
        // Rewriting the literal, on the next page, re-decodes this page too.
        mem.write(0x10000 + PAGE, &S_ENDPGM).unwrap();
        c.invalidate(0x10000 + PAGE, 4);
        let g2 = c.generation();
        assert_ne!(g, g2);
        assert!(p.get(0x10000, g2).is_none(), "stale after invalidation");
        let p2 = c.page(0x10000);
        assert_eq!(
            p2.get(0x10000 + PAGE - 4, g2)
                .unwrap()
                .unwrap()
                .inst
                .literal,
            Some(u32::from_le_bytes(S_ENDPGM))
        );
        // A page the write did not touch is still current after re-stamping.
        let far = c.page(0x10000 + PAGE);
        c.invalidate(0x10000, 4);
        let g3 = c.generation();
        assert!(Arc::ptr_eq(&far, &c.page(0x10000 + PAGE)));
        assert!(far.get(0x10000 + PAGE + 4, g3).is_some());
    }
}
