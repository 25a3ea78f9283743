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
    /// `a0`..`a255` (accumulation registers, wave64).
    Agpr(u16),
    /// The second `s0`..`s101` set the real library lists (no DWARF
    /// number); the same storage as [`Reg::Sgpr`].
    SgprShadow(u8),
    /// `ttmp4`..`ttmp11`, `ttmp13`.
    Ttmp(u8),
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

/// Every register of the architecture, in the order AMD's amd-dbgapi 0.77
/// lists them for gfx90a (734 registers): v0..v255, a0..a255, s0..s101
/// with DWARF numbers, s0..s101 again without, ttmp4..11 and ttmp13, m0,
/// pc, mode, trapsts, xnack_mask, flat_scratch, status, exec, vcc.
pub fn gfx90a_registers() -> Vec<Reg> {
    let mut v: Vec<Reg> = (0..NUM_VGPRS).map(Reg::Vgpr).collect();
    v.extend((0..NUM_VGPRS).map(Reg::Agpr));
    v.extend((0..NUM_SGPRS as u8).map(Reg::Sgpr));
    v.extend((0..NUM_SGPRS as u8).map(Reg::SgprShadow));
    v.extend([4, 5, 6, 7, 8, 9, 10, 11, 13].map(Reg::Ttmp));
    v.extend([
        Reg::M0,
        Reg::Pc,
        Reg::Mode,
        Reg::Trapsts,
        Reg::XnackMask,
        Reg::FlatScratch,
        Reg::Status,
        Reg::Exec,
        Reg::Vcc,
    ]);
    v
}

/// The `flags32_t` type of `mode` as the real library describes it.
pub const MODE_TYPE: &str = "flags32_t mode {  enum fp_round {    NEAREST_EVEN = 0,    PLUS_INF  = 1,    MINUS_INF = 2,    ZERO      = 3  } FP_ROUND.32 @0-1;  enum fp_round FP_ROUND.64_16 @2-3;  enum fp_denorm {    FLUSH_SRC_DST = 0,    FLUSH_DST     = 1,    FLUSH_SRC     = 2,    FLUSH_NONE    = 3  } FP_DENORM.32 @4-5;  enum fp_denorm FP_DENORM.64_16 @6-7;  bool DX10_CLAMP @8;  bool IEEE @9;  bool LOD_CLAMPED @10;  bool DEBUG_EN @11;  bool EXCP_EN.INVALID @12;  bool EXCP_EN.DENORM @13;  bool EXCP_EN.DIV0 @14;  bool EXCP_EN.OVERFLOW @15;  bool EXCP_EN.UNDERFLOW @16;  bool EXCP_EN.INEXACT @17;  bool EXCP_EN.INT_DIV0 @18;  bool EXCP_EN.ADDR_WATCH @19;  bool FP16_OVFL @23;  bool POPS_PACKER0 @24;  bool POPS_PACKER1 @25;  bool DISABLE_PERF @26;  bool GPR_IDX_EN @27;  bool VSKIP @28;  uint32_t CSP @29-31;}";
/// The `flags32_t` type of `trapsts`.
pub const TRAPSTS_TYPE: &str = "flags32_t trapsts {  bool EXCP.INVALID @0;  bool EXCP.DENORM @1;  bool EXCP.DIV0 @2;  bool EXCP.OVERFLOW @3;  bool EXCP.UNDERFLOW @4;  bool EXCP.INEXACT @5;  bool EXCP.INT_DIV0 @6;  bool EXCP.ADDR_WATCH @7;  bool EXCP.MEM_VIOL @8;  bool SAVE_CTX @10;  bool ILLEGAL_INST @11;  bool EXCP_HI.ADDR_WATCH1 @12;  bool EXCP_HI.ADDR_WATCH2 @13;  bool EXCP_HI.ADDR_WATCH3 @14;  uint32_t EXCP_CYCLE @16-21;  bool XNACK_ERROR @28;  enum dp_rate {    NONE    = 0,    QUARTER = 1,    FULL    = 4  } DP_RATE @29-31;}";
/// The `flags32_t` type of `status`.
pub const STATUS_TYPE: &str = "flags32_t status {  bool SCC @0;  uint32_t SPI_PRIO @1-2;  uint32_t USER_PRIO @3-4;  bool PRIV @5;  bool TRAP_EN @6;  bool TTRACE_EN @7;  bool EXPORT_RDY @8;  bool EXECZ @9;  bool VCCZ @10;  bool IN_TG @11;  bool IN_BARRIER @12;  bool HALT @13;  bool TRAP @14;  bool TTRACE_CU_EN @15;  bool VALID @16;  bool ECC_ERR @17;  bool SKIP_EXPORT @18;  bool PERF_EN @19;  bool COND_DBG_USER @20;  bool COND_DBG_SYS @21;  bool ALLOW_REPLAY @22;  bool FATAL_HALT @23;  bool MUST_EXPORT @27;}";

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
            Self::Agpr(n) => d(
                format!("a{n}"),
                LANES * 4,
                "int32_t[64]",
                Some(3072 + n as u64),
                RegisterClass::Vector,
            ),
            Self::SgprShadow(n) => d(format!("s{n}"), 4, "int32_t", None, RegisterClass::Scalar),
            Self::Ttmp(n) => d(
                format!("ttmp{n}"),
                4,
                "uint32_t",
                None,
                RegisterClass::System,
            ),
            Self::M0 => d("m0".into(), 4, "uint32_t", None, RegisterClass::Scalar),
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
                STATUS_TYPE,
                Some(128),
                RegisterClass::System,
            ),
            Self::Mode => d("mode".into(), 4, MODE_TYPE, None, RegisterClass::System),
            Self::Trapsts => d(
                "trapsts".into(),
                4,
                TRAPSTS_TYPE,
                None,
                RegisterClass::System,
            ),
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
            Self::Sgpr(n) | Self::SgprShadow(n) => {
                regs.sgpr.get(n as usize)?.to_le_bytes().to_vec()
            }
            Self::Agpr(n) => match regs.agpr.get(n as usize) {
                Some(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
                None => vec![0; LANES * 4],
            },
            Self::Ttmp(n) => regs.ttmp.get(n as usize)?.to_le_bytes().to_vec(),
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
            Self::Sgpr(n) | Self::SgprShadow(n) => *regs.sgpr.get_mut(n as usize)? = u32_at(0),
            Self::Agpr(n) => {
                let n = n as usize;
                if regs.agpr.len() <= n {
                    regs.agpr.resize(n + 1, [0; LANES]);
                }
                for (lane, x) in regs.agpr[n].iter_mut().enumerate() {
                    *x = u32_at(lane * 4);
                }
            }
            Self::Ttmp(n) => *regs.ttmp.get_mut(n as usize)? = u32_at(0),
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

    /// The list matches AMD's amd-dbgapi 0.77 for gfx90a (measured with the
    /// real library; names, sizes, types, DWARF numbers, order).
    #[test]
    fn same_list_as_the_real_library() {
        let real = include_str!("gfx90a-registers-real-0.77.txt");
        let ours: Vec<String> = gfx90a_registers()
            .iter()
            .map(|r| {
                let d = r.desc();
                let dwarf = d.dwarf.map(|x| x.to_string()).unwrap_or("-".into());
                format!("{} {} {} {dwarf}", d.name, d.size, d.type_name)
            })
            .collect();
        let real: Vec<&str> = real.lines().map(str::trim_end).collect();
        assert_eq!(ours.len(), 734);
        for (i, (o, r)) in ours.iter().zip(&real).enumerate() {
            assert_eq!(o.trim_end(), *r, "register {i}");
        }
        assert_eq!(ours.len(), real.len());
    }
}
