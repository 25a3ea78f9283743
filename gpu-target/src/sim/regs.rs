//! gfx90a register descriptions and their storage in [`WaveRegs`].

use super::wave::WaveRegs;
use super::wave::LANES;
use super::wave::NUM_SGPRS;
use crate::model::RegisterClass;
use crate::model::RegisterDesc;

/// A register of the simulated wave.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reg {
    /// `v0`..`v255` (wave64, 256 bytes).
    Vgpr(u16),
    /// `s0`..`s101`.
    Sgpr(u8),
    /// `m0`.
    M0,
    /// `pc`.
    Pc,
    /// `status` (SCC in bit 0).
    Status,
    /// `mode`.
    Mode,
    /// `trapsts`.
    Trapsts,
    /// `exec` (64 bits).
    Exec,
    /// `vcc` (64 bits).
    Vcc,
    /// `flat_scratch`.
    FlatScratch,
    /// `xnack_mask`.
    XnackMask,
}

/// Number of architectural VGPRs on gfx90a.
pub const NUM_VGPRS: u16 = 256;

/// Every register of the architecture, in list order (ROCdbgapi order:
/// VGPRs, SGPRs, then the specials).
pub fn gfx90a_registers() -> Vec<Reg> {
    let mut v: Vec<Reg> = (0..NUM_VGPRS).map(Reg::Vgpr).collect();
    v.extend((0..NUM_SGPRS as u8).map(Reg::Sgpr));
    v.extend([
        Reg::M0,
        Reg::Pc,
        Reg::Status,
        Reg::Mode,
        Reg::Trapsts,
        Reg::Exec,
        Reg::Vcc,
        Reg::FlatScratch,
        Reg::XnackMask,
    ]);
    v
}

impl Reg {
    /// Name, size, type and DWARF number.
    pub fn desc(self) -> RegisterDesc {
        let d = |name: String, size, ty: &str, dwarf: Option<u64>, class| RegisterDesc {
            name,
            size,
            type_name: ty.to_owned(),
            dwarf,
            class,
        };
        match self {
            Self::Vgpr(n) => d(
                format!("v{n}"),
                LANES * 4,
                "int32_t[64]",
                Some(2560 + n as u64),
                RegisterClass::Vector,
            ),
            Self::Sgpr(n) => d(
                format!("s{n}"),
                4,
                "int32_t",
                Some(if n < 64 {
                    32 + n as u64
                } else {
                    1088 + (n as u64 - 64)
                }),
                RegisterClass::Scalar,
            ),
            Self::M0 => d("m0".into(), 4, "int32_t", None, RegisterClass::Scalar),
            Self::Pc => d(
                "pc".into(),
                8,
                "void (*)()",
                Some(16),
                RegisterClass::System,
            ),
            Self::Status => d(
                "status".into(),
                4,
                "uint32_t",
                Some(128),
                RegisterClass::System,
            ),
            Self::Mode => d("mode".into(), 4, "uint32_t", None, RegisterClass::System),
            Self::Trapsts => d("trapsts".into(), 4, "uint32_t", None, RegisterClass::System),
            Self::Exec => d(
                "exec".into(),
                8,
                "uint64_t",
                Some(17),
                RegisterClass::Scalar,
            ),
            Self::Vcc => d(
                "vcc".into(),
                8,
                "uint64_t",
                Some(768),
                RegisterClass::Scalar,
            ),
            Self::FlatScratch => d(
                "flat_scratch".into(),
                8,
                "uint64_t",
                None,
                RegisterClass::Scalar,
            ),
            Self::XnackMask => d(
                "xnack_mask".into(),
                8,
                "uint64_t",
                None,
                RegisterClass::Scalar,
            ),
        }
    }

    /// Whether a wave with these registers has it allocated.
    pub fn exists(self, regs: &WaveRegs) -> bool {
        match self {
            Self::Vgpr(n) => (n as usize) < regs.vgpr.len(),
            _ => true,
        }
    }

    /// The register's bytes (little endian).
    pub fn read(self, regs: &WaveRegs) -> Option<Vec<u8>> {
        Some(match self {
            Self::Vgpr(n) => regs
                .vgpr
                .get(n as usize)?
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            Self::Sgpr(n) => regs.sgpr.get(n as usize)?.to_le_bytes().to_vec(),
            Self::M0 => regs.m0.to_le_bytes().to_vec(),
            Self::Pc => regs.pc.to_le_bytes().to_vec(),
            Self::Status => regs.status().to_le_bytes().to_vec(),
            Self::Mode => regs.mode.to_le_bytes().to_vec(),
            Self::Trapsts => regs.trapsts.to_le_bytes().to_vec(),
            Self::Exec => regs.exec.to_le_bytes().to_vec(),
            Self::Vcc => regs.vcc.to_le_bytes().to_vec(),
            Self::FlatScratch => regs.flat_scratch.to_le_bytes().to_vec(),
            Self::XnackMask => regs.xnack_mask.to_le_bytes().to_vec(),
        })
    }

    /// Writes `data` at byte `offset` of the register. Returns `None` if
    /// the register is absent or the range is out of bounds.
    pub fn write(self, regs: &mut WaveRegs, offset: usize, data: &[u8]) -> Option<()> {
        let mut cur = self.read(regs)?;
        cur.get_mut(offset..offset.checked_add(data.len())?)?
            .copy_from_slice(data);
        let u32_at = |i: usize| u32::from_le_bytes([cur[i], cur[i + 1], cur[i + 2], cur[i + 3]]);
        let u64_at = |i: usize| u32_at(i) as u64 | (u32_at(i + 4) as u64) << 32;
        match self {
            Self::Vgpr(n) => {
                let v = regs.vgpr.get_mut(n as usize)?;
                for (lane, x) in v.iter_mut().enumerate() {
                    *x = u32_at(lane * 4);
                }
            }
            Self::Sgpr(n) => *regs.sgpr.get_mut(n as usize)? = u32_at(0),
            Self::M0 => regs.m0 = u32_at(0),
            Self::Pc => regs.pc = u64_at(0),
            Self::Status => regs.scc = u32_at(0) & 1 != 0,
            Self::Mode => regs.mode = u32_at(0),
            Self::Trapsts => regs.trapsts = u32_at(0),
            Self::Exec => regs.exec = u64_at(0),
            Self::Vcc => regs.vcc = u64_at(0),
            Self::FlatScratch => regs.flat_scratch = u64_at(0),
            Self::XnackMask => regs.xnack_mask = u64_at(0),
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_roundtrip() {
        let regs = gfx90a_registers();
        assert_eq!(regs[0].desc().name, "v0");
        assert_eq!(Reg::Sgpr(64).desc().dwarf, Some(1088));
        assert_eq!(Reg::Pc.desc().size, 8);
        let mut w = WaveRegs::new(8);
        Reg::Exec
            .write(&mut w, 0, &0xdead_beef_u64.to_le_bytes())
            .unwrap();
        assert_eq!(w.exec, 0xdead_beef);
        Reg::Vgpr(1).write(&mut w, 4, &7u32.to_le_bytes()).unwrap();
        assert_eq!(w.vgpr[1][1], 7);
        assert!(Reg::Vgpr(9).read(&w).is_none());
    }
}
