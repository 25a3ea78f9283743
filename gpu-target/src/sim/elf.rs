//! A small ELF64 reader for AMDGPU code objects: header checks, program
//! headers (for loading), symbols, and AMDHSA kernel descriptors.

use thiserror::Error;

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `EF_AMDGPU_MACH` mask of `e_flags`.
pub const EF_AMDGPU_MACH_MASK: u32 = 0xff;
/// `EF_AMDGPU_MACH_AMDGCN_GFX90A`.
pub const EF_AMDGPU_MACH_GFX90A: u32 = 0x3f;
/// `EF_AMDGPU_MACH_AMDGCN_GFX908`.
pub const EF_AMDGPU_MACH_GFX908: u32 = 0x30;

const PT_LOAD: u32 = 1;
const SHT_NOTE: u32 = 7;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;

/// Why an ELF image could not be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ElfError {
    /// The image is shorter than a structure it must contain.
    #[error("ELF image truncated at offset {offset:#x}")]
    Truncated {
        /// Where the missing bytes start.
        offset: usize,
    },
    /// Not an ELF64 little-endian image.
    #[error("not an ELF64 little-endian image")]
    NotElf64,
    /// `e_machine` is not the expected one.
    #[error("e_machine {found} is not {expected}")]
    WrongMachine {
        /// What the header holds.
        found: u16,
        /// What was required.
        expected: u16,
    },
    /// No symbol of that name.
    #[error("symbol {0:?} not found")]
    SymbolNotFound(String),
}

fn rd<const N: usize>(b: &[u8], off: usize) -> Result<[u8; N], ElfError> {
    b.get(off..off + N)
        .and_then(|s| s.try_into().ok())
        .ok_or(ElfError::Truncated { offset: off })
}
pub(crate) fn u16_at(b: &[u8], off: usize) -> Result<u16, ElfError> {
    rd::<2>(b, off).map(u16::from_le_bytes)
}
pub(crate) fn u32_at(b: &[u8], off: usize) -> Result<u32, ElfError> {
    rd::<4>(b, off).map(u32::from_le_bytes)
}
pub(crate) fn u64_at(b: &[u8], off: usize) -> Result<u64, ElfError> {
    rd::<8>(b, off).map(u64::from_le_bytes)
}

/// A loadable segment (`PT_LOAD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Offset of the bytes in the file.
    pub offset: u64,
    /// Virtual address (relative to the load base for `ET_DYN`).
    pub vaddr: u64,
    /// Bytes present in the file.
    pub filesz: u64,
    /// Bytes in memory (the rest is zero).
    pub memsz: u64,
}

/// One symbol of `.symtab` or `.dynsym`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// Value (an address relative to the load base for `ET_DYN`).
    pub value: u64,
    /// Size in bytes.
    pub size: u64,
    /// `st_info & 0xf`.
    pub kind: u8,
}

/// A parsed ELF64 image (borrowed).
#[derive(Debug)]
pub struct Elf<'a> {
    bytes: &'a [u8],
    /// `e_type` (2 = `ET_EXEC`, 3 = `ET_DYN`).
    pub kind: u16,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// `PT_LOAD` segments.
    pub segments: Vec<Segment>,
    /// All symbols from `.symtab` and `.dynsym` (duplicates possible).
    pub symbols: Vec<Symbol>,
}

impl<'a> Elf<'a> {
    /// Parses the headers and symbol tables of any ELF64 LE image.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ElfError> {
        if bytes.get(0..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
            return Err(ElfError::NotElf64);
        }
        let kind = u16_at(bytes, 16)?;
        let machine = u16_at(bytes, 18)?;
        let flags = u32_at(bytes, 48)?;
        let phoff = u64_at(bytes, 32)? as usize;
        let shoff = u64_at(bytes, 40)? as usize;
        let phentsize = u16_at(bytes, 54)? as usize;
        let phnum = u16_at(bytes, 56)? as usize;
        let shentsize = u16_at(bytes, 58)? as usize;
        let shnum = u16_at(bytes, 60)? as usize;
        let mut segments = Vec::new();
        for i in 0..phnum {
            let p = phoff + i * phentsize;
            if u32_at(bytes, p)? == PT_LOAD {
                segments.push(Segment {
                    offset: u64_at(bytes, p + 8)?,
                    vaddr: u64_at(bytes, p + 16)?,
                    filesz: u64_at(bytes, p + 32)?,
                    memsz: u64_at(bytes, p + 40)?,
                });
            }
        }
        let mut symbols = Vec::new();
        for i in 0..shnum {
            let s = shoff + i * shentsize;
            let sh_type = u32_at(bytes, s + 4)?;
            if sh_type != SHT_SYMTAB && sh_type != SHT_DYNSYM {
                continue;
            }
            let off = u64_at(bytes, s + 24)? as usize;
            let size = u64_at(bytes, s + 32)? as usize;
            let link = u32_at(bytes, s + 40)? as usize;
            let entsize = (u64_at(bytes, s + 56)? as usize).max(24);
            let strsh = shoff + link * shentsize;
            let stroff = u64_at(bytes, strsh + 24)? as usize;
            let strsize = u64_at(bytes, strsh + 32)? as usize;
            let strtab = bytes
                .get(stroff..stroff + strsize)
                .ok_or(ElfError::Truncated { offset: stroff })?;
            for j in 0..size / entsize {
                let e = off + j * entsize;
                let name_off = u32_at(bytes, e)? as usize;
                let info = *bytes
                    .get(e + 4)
                    .ok_or(ElfError::Truncated { offset: e + 4 })?;
                let name = strtab
                    .get(name_off..)
                    .and_then(|t| t.split(|&c| c == 0).next())
                    .map(|t| String::from_utf8_lossy(t).into_owned())
                    .unwrap_or_default();
                if name.is_empty() {
                    continue;
                }
                symbols.push(Symbol {
                    name,
                    value: u64_at(bytes, e + 8)?,
                    size: u64_at(bytes, e + 16)?,
                    kind: info & 0xf,
                });
            }
        }
        Ok(Self {
            bytes,
            kind,
            machine,
            flags,
            segments,
            symbols,
        })
    }

    /// The descriptor of the first note named `name` of type `ty` in any
    /// `SHT_NOTE` section (e.g. `"AMDGPU"`, 32: the code object metadata).
    pub fn note(&self, name: &str, ty: u32) -> Option<&'a [u8]> {
        let b = self.bytes;
        let shoff = u64_at(b, 40).ok()? as usize;
        let shentsize = u16_at(b, 58).ok()? as usize;
        let shnum = u16_at(b, 60).ok()? as usize;
        for i in 0..shnum {
            let s = shoff + i * shentsize;
            if u32_at(b, s + 4).ok()? != SHT_NOTE {
                continue;
            }
            let off = u64_at(b, s + 24).ok()? as usize;
            let size = u64_at(b, s + 32).ok()? as usize;
            let sec = b.get(off..off.checked_add(size)?)?;
            let mut p = 0usize;
            while p + 12 <= sec.len() {
                let namesz = u32_at(sec, p).ok()? as usize;
                let descsz = u32_at(sec, p + 4).ok()? as usize;
                let nty = u32_at(sec, p + 8).ok()?;
                let n = sec.get(p + 12..p + 12 + namesz)?;
                let d0 = p + 12 + namesz.next_multiple_of(4);
                let desc = sec.get(d0..d0 + descsz)?;
                if nty == ty && n.strip_suffix(&[0]).unwrap_or(n) == name.as_bytes() {
                    return Some(desc);
                }
                p = d0 + descsz.next_multiple_of(4);
            }
        }
        None
    }

    /// Parses an AMDGPU code object (`e_machine` 224).
    pub fn parse_code_object(bytes: &'a [u8]) -> Result<Self, ElfError> {
        let elf = Self::parse(bytes)?;
        if elf.machine != EM_AMDGPU {
            return Err(ElfError::WrongMachine {
                found: elf.machine,
                expected: EM_AMDGPU,
            });
        }
        Ok(elf)
    }

    /// `EF_AMDGPU_MACH_*` of the image.
    pub fn amdgpu_mach(&self) -> u32 {
        self.flags & EF_AMDGPU_MACH_MASK
    }

    /// The raw image.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Looks a symbol up by name.
    pub fn symbol(&self, name: &str) -> Result<&Symbol, ElfError> {
        self.symbols
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ElfError::SymbolNotFound(name.to_owned()))
    }

    /// Size of the memory image (highest `vaddr + memsz`).
    pub fn image_size(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.vaddr + s.memsz)
            .max()
            .unwrap_or(0)
    }

    /// Lays the segments out as they are in memory, starting at vaddr 0.
    pub fn load_image(&self) -> Result<Vec<u8>, ElfError> {
        let mut img = vec![0u8; self.image_size() as usize];
        for s in &self.segments {
            let src = self
                .bytes
                .get(s.offset as usize..(s.offset + s.filesz) as usize)
                .ok_or(ElfError::Truncated {
                    offset: s.offset as usize,
                })?;
            let dst = img
                .get_mut(s.vaddr as usize..(s.vaddr + s.filesz) as usize)
                .ok_or(ElfError::Truncated {
                    offset: s.vaddr as usize,
                })?;
            dst.copy_from_slice(src);
        }
        Ok(img)
    }

    /// Reads bytes at a virtual address from the file image.
    pub fn read_vaddr(&self, vaddr: u64, len: usize) -> Option<&'a [u8]> {
        let s = self
            .segments
            .iter()
            .find(|s| vaddr >= s.vaddr && vaddr + len as u64 <= s.vaddr + s.filesz)?;
        let off = (s.offset + vaddr - s.vaddr) as usize;
        self.bytes.get(off..off + len)
    }

    /// Kernel names (symbols `<name>.kd`).
    pub fn kernels(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .symbols
            .iter()
            .filter_map(|s| s.name.strip_suffix(".kd"))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Size of an AMDHSA kernel descriptor.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// The AMDHSA kernel descriptor (`llvm::amdhsa::kernel_descriptor_t`), the
/// fields the simulator uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// LDS bytes the kernel declares.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel argument segment size.
    pub kernarg_size: u32,
    /// Entry point relative to the descriptor's own address.
    pub kernel_code_entry_byte_offset: i64,
    /// COMPUTE_PGM_RSRC3.
    pub rsrc3: u32,
    /// COMPUTE_PGM_RSRC1.
    pub rsrc1: u32,
    /// COMPUTE_PGM_RSRC2.
    pub rsrc2: u32,
    /// Kernel code properties (user SGPR enables, wave32).
    pub code_properties: u16,
}

impl KernelDescriptor {
    /// Parses the 64 descriptor bytes.
    pub fn parse(b: &[u8]) -> Result<Self, ElfError> {
        Ok(Self {
            group_segment_fixed_size: u32_at(b, 0)?,
            private_segment_fixed_size: u32_at(b, 4)?,
            kernarg_size: u32_at(b, 8)?,
            kernel_code_entry_byte_offset: u64_at(b, 16)? as i64,
            rsrc3: u32_at(b, 44)?,
            rsrc1: u32_at(b, 48)?,
            rsrc2: u32_at(b, 52)?,
            code_properties: u16_at(b, 56)?,
        })
    }

    /// Enables user SGPR: private segment buffer (4 SGPRs).
    pub fn private_segment_buffer(&self) -> bool {
        self.code_properties & 1 != 0
    }
    /// Enables user SGPR: dispatch packet pointer (2 SGPRs).
    pub fn dispatch_ptr(&self) -> bool {
        self.code_properties & (1 << 1) != 0
    }
    /// Enables user SGPR: queue pointer (2 SGPRs).
    pub fn queue_ptr(&self) -> bool {
        self.code_properties & (1 << 2) != 0
    }
    /// Enables user SGPR: kernarg segment pointer (2 SGPRs).
    pub fn kernarg_segment_ptr(&self) -> bool {
        self.code_properties & (1 << 3) != 0
    }
    /// Enables user SGPR: dispatch id (2 SGPRs).
    pub fn dispatch_id(&self) -> bool {
        self.code_properties & (1 << 4) != 0
    }
    /// Enables user SGPR: flat scratch init (2 SGPRs).
    pub fn flat_scratch_init(&self) -> bool {
        self.code_properties & (1 << 5) != 0
    }
    /// Enables user SGPR: private segment size (1 SGPR).
    pub fn private_segment_size(&self) -> bool {
        self.code_properties & (1 << 6) != 0
    }
    /// Wave32 instead of wave64.
    pub fn wave32(&self) -> bool {
        self.code_properties & (1 << 10) != 0
    }
    /// USER_SGPR_COUNT: where the system SGPRs start.
    pub fn user_sgpr_count(&self) -> u32 {
        (self.rsrc2 >> 1) & 0x1f
    }
    /// System SGPR: private segment wave byte offset.
    pub fn private_segment_wave_offset(&self) -> bool {
        self.rsrc2 & 1 != 0
    }
    /// System SGPRs: workgroup id x, y, z.
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [
            self.rsrc2 & (1 << 7) != 0,
            self.rsrc2 & (1 << 8) != 0,
            self.rsrc2 & (1 << 9) != 0,
        ]
    }
    /// System SGPR: workgroup info.
    pub fn workgroup_info(&self) -> bool {
        self.rsrc2 & (1 << 10) != 0
    }
    /// ENABLE_VGPR_WORKITEM_ID: 0 = x, 1 = x,y, 2 = x,y,z.
    pub fn vgpr_workitem_id(&self) -> u32 {
        (self.rsrc2 >> 11) & 3
    }
    /// Architected VGPRs + AccVGPRs the wave gets (gfx90a: granule of 8).
    pub fn vgpr_count(&self) -> u32 {
        (((self.rsrc1 & 0x3f) + 1) * 8).min(512)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_garbage() {
        assert_eq!(Elf::parse(b"nope").unwrap_err(), ElfError::NotElf64);
        assert!(matches!(
            Elf::parse(&[0x7f, b'E', b'L', b'F', 2, 1, 0, 0]),
            Err(ElfError::Truncated { .. })
        ));
    }

    #[test]
    fn descriptor_bits() {
        let mut kd = [0u8; 64];
        kd[16..24].copy_from_slice(&0x1080i64.to_le_bytes());
        kd[52..56].copy_from_slice(&0x90u32.to_le_bytes());
        kd[56..58].copy_from_slice(&0x000bu16.to_le_bytes());
        let d = KernelDescriptor::parse(&kd).unwrap();
        assert_eq!(d.kernel_code_entry_byte_offset, 0x1080);
        assert_eq!(d.user_sgpr_count(), 8);
        assert!(d.private_segment_buffer() && d.dispatch_ptr() && d.kernarg_segment_ptr());
        assert!(!d.queue_ptr());
        assert_eq!(d.workgroup_id_enabled(), [true, false, false]);
    }
}
