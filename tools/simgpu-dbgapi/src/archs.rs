//! The architectures this library debugs: gfx90a (an MI210, the default)
//! and gfx908 (an MI100), both run by the one simulated device, which
//! interprets their shared GFX9 encoding.
//!
//! Handles are those AMD's library 0.77 gives (measured without a GPU:
//! `amd_dbgapi_get_architecture` returns 3 for gfx908 and 4 for gfx90a).
//! Their register lists are equal in the real library (734 registers each,
//! the same names, sizes, types and DWARF numbers, measured with 0.77), so
//! both use [`gfx90a_registers`]; register handles are
//! `architecture << 32 | index`, so a gfx908 wave's registers are its own.
//!
//! What the device does not model for gfx908, and refuses instead of
//! running wrongly: work-item ids of a multi-dimensional workgroup (gfx908
//! passes them in v0, v1 and v2; gfx90a packs them into v0), refused at
//! launch by the runtime. Its vector register count is computed with
//! gfx908's granule (4 registers, each of the VGPR and AGPR files) here.

use gpu_target::sim::elf::EF_AMDGPU_MACH_GFX908;
use gpu_target::sim::elf::EF_AMDGPU_MACH_GFX90A;
use gpu_target::sim::regs::gfx90a_registers;
use gpu_target::sim::regs::Reg;

/// One architecture the library can debug.
#[derive(Debug, PartialEq, Eq)]
pub struct SimArch {
    /// The architecture handle.
    pub handle: u64,
    /// `gfx90a`, `gfx908`.
    pub name: &'static str,
    /// `EF_AMDGPU_MACH_*`.
    pub mach: u32,
    /// The agent's marketing name.
    pub product: &'static str,
    /// The agent's PCI device id.
    pub pci_device: u32,
}

/// gfx90a, the simulated device's own architecture.
pub const GFX90A: SimArch = SimArch {
    handle: 4,
    name: "gfx90a",
    mach: EF_AMDGPU_MACH_GFX90A,
    product: "AMD Instinct MI210",
    pci_device: 0x740f,
};

/// gfx908.
pub const GFX908: SimArch = SimArch {
    handle: 3,
    name: "gfx908",
    mach: EF_AMDGPU_MACH_GFX908,
    product: "AMD Instinct MI100",
    pci_device: 0x738c,
};

/// Every architecture the library debugs.
pub const ARCHS: [&SimArch; 2] = [&GFX90A, &GFX908];

/// The architecture of handle `h`.
pub fn by_handle(h: u64) -> Option<&'static SimArch> {
    ARCHS.iter().copied().find(|a| a.handle == h)
}

/// The architecture of `EF_AMDGPU_MACH_*` value `mach`.
pub fn by_mach(mach: u32) -> Option<&'static SimArch> {
    ARCHS.iter().copied().find(|a| a.mach == mach)
}

/// The architecture named `name`.
pub fn by_name(name: &str) -> Option<&'static SimArch> {
    ARCHS.iter().copied().find(|a| a.name == name)
}

/// The register list of `arch` (equal for both, see the module comment).
pub fn registers(_arch: &SimArch) -> Vec<Reg> {
    gfx90a_registers()
}

/// Register handle of index `i` of `arch`'s list.
pub fn register_handle(arch: &SimArch, i: usize) -> u64 {
    arch.handle << 32 | i as u64
}

/// (architecture, register) of a register handle.
pub fn split_register(r: u64) -> Option<(&'static SimArch, Reg)> {
    let arch = by_handle(r >> 32)?;
    let reg = registers(arch).get((r & 0xffff_ffff) as usize).copied()?;
    Some((arch, reg))
}

/// The VGPRs a wave of `arch` has, given its kernel's `rsrc1` and the
/// count the device allocated (gfx90a's rule: a granule of 8 over the
/// unified VGPR and AGPR file). gfx908 allocates
/// `(GRANULATED_WORKITEM_VGPR_COUNT + 1) * 4` registers in each of its two
/// files.
pub fn vgprs(arch: &SimArch, rsrc1: u32, allocated: usize) -> usize {
    if *arch == GFX908 {
        ((((rsrc1 & 0x3f) + 1) * 4) as usize)
            .min(256)
            .min(allocated)
    } else {
        allocated
    }
}

/// The architecture of a code object from its ELF header (the first
/// bytes of its image: `e_flags` at offset 48), if it is one of ours.
pub fn of_elf_header(h: &[u8]) -> Option<&'static SimArch> {
    if h.get(..4)? != b"\x7fELF" {
        return None;
    }
    let flags = u32::from_le_bytes(h.get(48..52)?.try_into().ok()?);
    by_mach(flags & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_registers() {
        assert_eq!(by_mach(0x30), Some(&GFX908));
        assert_eq!(by_name("gfx90a"), Some(&GFX90A));
        let r = register_handle(&GFX908, 5);
        let (a, reg) = split_register(r).unwrap();
        assert_eq!((a.name, reg), ("gfx908", Reg::Vgpr(5)));
        assert!(split_register(7 << 32).is_none());
        assert_eq!(vgprs(&GFX908, 1, 16), 8);
        assert_eq!(vgprs(&GFX90A, 1, 16), 16);
    }

    #[test]
    fn elf_header() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[48] = 0x30;
        assert_eq!(of_elf_header(&h), Some(&GFX908));
        h[48] = 0x3f;
        assert_eq!(of_elf_header(&h), Some(&GFX90A));
        h[0] = 0;
        assert_eq!(of_elf_header(&h), None);
    }
}
