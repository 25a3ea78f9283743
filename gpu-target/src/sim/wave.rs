//! One wave64 and the interpreter that executes gfx90a instructions on it.

use std::sync::Mutex;

use super::atomics;
use super::decode::decode;
use super::decode::CmpTy;
use super::decode::DsKind;
use super::decode::FlatOp;
use super::decode::FlatSeg;
use super::decode::Inst;
use super::decode::Kind;
use super::decode::OpKernel;
use super::decode::Sop1;
use super::decode::Sop2;
use super::decode::Sopc;
use super::decode::Sopk;
use super::decode::Sopp;
use super::decode::VAlu;
use super::decode::VCmp;
use super::decode::VEnc;
use super::decode::VOp;
use super::decode::Vop3pOp;
use super::decode::Xfer;
use super::decode::D16_HI;
use super::decode::D16_LO;
use super::decode::FLAT_ATOMICS;
use super::memops;
use super::memory::GlobalMemory;
use super::memory::APERTURE_SIZE;
use super::memory::PRIVATE_APERTURE;
use super::memory::SHARED_APERTURE;
use super::salu::Flow;
use super::salu::MODE_GPR_IDX_EN;
use super::simd;
use super::valu::LaneIn;
use super::vop3p::MfmaShape;

/// Lanes per wave.
pub const LANES: usize = 64;
/// Addressable SGPRs on gfx9 (s0..s101).
pub const NUM_SGPRS: usize = 102;

/// Serialises global atomics between device threads (on a memory whose
/// `update_lanes` is not atomic by itself).
static ATOMICS: Mutex<()> = Mutex::new(());

/// The architectural state of one wave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveRegs {
    /// s0..s101.
    pub sgpr: [u32; NUM_SGPRS],
    /// Allocated VGPRs, each 64 lanes.
    pub vgpr: Vec<[u32; LANES]>,
    /// Accumulation registers a0.. (grown on first write; unwritten read 0).
    pub agpr: Vec<[u32; LANES]>,
    /// EXEC mask.
    pub exec: u64,
    /// VCC.
    pub vcc: u64,
    /// SCC.
    pub scc: bool,
    /// M0.
    pub m0: u32,
    /// Program counter (byte address).
    pub pc: u64,
    /// FLAT_SCRATCH.
    pub flat_scratch: u64,
    /// XNACK_MASK.
    pub xnack_mask: u64,
    /// Trap temporaries ttmp0..15.
    pub ttmp: [u32; 16],
    /// MODE hardware register.
    pub mode: u32,
    /// TRAPSTS hardware register.
    pub trapsts: u32,
}

impl WaveRegs {
    /// Zeroed state with `vgprs` VGPRs.
    pub fn new(vgprs: usize) -> Self {
        Self {
            sgpr: [0; NUM_SGPRS],
            vgpr: vec![[0; LANES]; vgprs],
            agpr: Vec::new(),
            exec: 0,
            vcc: 0,
            scc: false,
            m0: 0,
            pc: 0,
            flat_scratch: 0,
            xnack_mask: 0,
            ttmp: [0; 16],
            mode: 0,
            trapsts: 0,
        }
    }

    /// The STATUS register as the debugger sees it (SCC in bit 0, EXECZ 9,
    /// VCCZ 10).
    pub fn status(&self) -> u32 {
        (self.scc as u32) | ((self.exec == 0) as u32) << 9 | ((self.vcc == 0) as u32) << 10
    }
}

/// How one [`step`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Executed; PC points at the next instruction.
    Continue,
    /// Executed `s_barrier`; PC is past it.
    Barrier,
    /// Executed `s_endpgm`.
    End,
    /// Executed `s_trap` with this trap id (8 bits); PC is past it. (A
    /// `u64`, as `MemoryViolation`'s address: with one payload type the
    /// enum is a pair of scalars, returned in two registers, not through
    /// memory, which the run loop reads back once per instruction.)
    Trap(u64),
    /// A memory access failed; PC is at the faulting instruction.
    MemoryViolation {
        /// The first failing address.
        addr: u64,
    },
    /// Unknown or unsupported instruction (or unreadable code); PC at it.
    IllegalInstruction,
}

/// What a wave needs besides its registers.
pub struct Ctx<'a> {
    /// Global memory (also where code is fetched from unless `code` hits).
    pub mem: &'a dyn GlobalMemory,
    /// The workgroup's LDS.
    pub lds: &'a mut [u8],
    /// The wave's private memory in the hardware's swizzled layout (the
    /// private_wave view; see [`swizzle_private`]).
    pub scratch: &'a mut [u8],
    /// Optional instruction-fetch cache.
    pub code: Option<&'a dyn CodeFetch>,
}

/// Instruction fetch that may be served from a cache.
pub trait CodeFetch: Send + Sync {
    /// Fills `buf` with code bytes at `pc`; returns how many are valid.
    fn fetch(&self, pc: u64, buf: &mut [u8; 8]) -> usize;
}

/// Fetches and decodes the instruction at the wave's PC.
pub fn fetch_decode(regs: &WaveRegs, ctx: &Ctx<'_>) -> Option<Inst> {
    let mut buf = [0u8; 8];
    let n = match ctx.code {
        Some(c) => c.fetch(regs.pc, &mut buf),
        None => ctx.mem.read_partial(regs.pc, &mut buf),
    };
    decode(buf.get(..n)?)
}

/// Executes one instruction.
pub fn step(regs: &mut WaveRegs, ctx: &mut Ctx<'_>) -> Step {
    match fetch_decode(regs, ctx) {
        Some(inst) => execute(regs, ctx, &inst),
        None => Step::IllegalInstruction,
    }
}

/// A vector source resolved once per instruction.
#[derive(Clone, Copy)]
enum VSrc {
    Uniform(u64),
    Vgpr(usize, u8),
}

fn inline_const(code: u16, width: u8) -> Option<u64> {
    let f32b = |f: f32| f.to_bits() as u64;
    let f64b = |f: f64| f.to_bits();
    let fl = |v: f64| if width == 2 { f64b(v) } else { f32b(v as f32) };
    Some(match code {
        128..=192 => (code - 128) as u64,
        193..=208 => {
            (-((code - 192) as i64)) as u64 & if width == 2 { u64::MAX } else { 0xffff_ffff }
        }
        240 => fl(0.5),
        241 => fl(-0.5),
        242 => fl(1.0),
        243 => fl(-1.0),
        244 => fl(2.0),
        245 => fl(-2.0),
        246 => fl(4.0),
        247 => fl(-4.0),
        248 => {
            if width == 2 {
                0x3fc4_5f30_6dc9_c882
            } else {
                0x3e22_f983
            }
        }
        _ => return None,
    })
}

impl WaveRegs {
    fn sreg(&self, code: u16) -> u32 {
        match code {
            0..=101 => self.sgpr[code as usize],
            102 => self.flat_scratch as u32,
            103 => (self.flat_scratch >> 32) as u32,
            104 => self.xnack_mask as u32,
            105 => (self.xnack_mask >> 32) as u32,
            106 => self.vcc as u32,
            107 => (self.vcc >> 32) as u32,
            108..=123 => self.ttmp[(code - 108) as usize],
            124 => self.m0,
            126 => self.exec as u32,
            127 => (self.exec >> 32) as u32,
            235 => (SHARED_APERTURE >> 32) as u32,
            236 => ((SHARED_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            237 => (PRIVATE_APERTURE >> 32) as u32,
            238 => ((PRIVATE_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            251 => (self.vcc == 0) as u32,
            252 => (self.exec == 0) as u32,
            253 => self.scc as u32,
            _ => 0,
        }
    }

    fn set_sreg(&mut self, code: u16, v: u32) {
        let lo = |x: u64| (x & !0xffff_ffff) | v as u64;
        let hi = |x: u64| (x & 0xffff_ffff) | (v as u64) << 32;
        match code {
            0..=101 => self.sgpr[code as usize] = v,
            102 => self.flat_scratch = lo(self.flat_scratch),
            103 => self.flat_scratch = hi(self.flat_scratch),
            104 => self.xnack_mask = lo(self.xnack_mask),
            105 => self.xnack_mask = hi(self.xnack_mask),
            106 => self.vcc = lo(self.vcc),
            107 => self.vcc = hi(self.vcc),
            108..=123 => self.ttmp[(code - 108) as usize] = v,
            124 => self.m0 = v,
            126 => self.exec = lo(self.exec),
            127 => self.exec = hi(self.exec),
            _ => {}
        }
    }

    /// Reads a scalar operand of 1 or 2 dwords.
    #[inline(always)]
    pub(super) fn sget(&self, code: u16, width: u8, lit: Option<u32>) -> u64 {
        // The common case inline: SGPRs.
        let c = code as usize;
        if width == 1 && c < NUM_SGPRS {
            return self.sgpr[c] as u64;
        }
        if width == 2 && c + 1 < NUM_SGPRS {
            return self.sgpr[c] as u64 | (self.sgpr[c + 1] as u64) << 32;
        }
        if (128..=192).contains(&code) {
            return (code - 128) as u64;
        }
        if (193..=208).contains(&code) {
            // -1..-16 (`s_or_saveexec_b64 s[16:17], -1`, the `-O0` code's
            // whole-wave switches), as `inline_const` has them.
            let v = (-((code - 192) as i64)) as u64;
            return if width == 2 { v } else { v & 0xffff_ffff };
        }
        match (code, width) {
            (126, 2) => return self.exec,
            (106, 2) => return self.vcc,
            (255, _) => return lit.unwrap_or(0) as u64,
            _ => {}
        }
        self.sget_other(code, width, lit)
    }

    /// [`Self::sget`] of everything but SGPRs.
    #[inline(never)]
    fn sget_other(&self, code: u16, width: u8, lit: Option<u32>) -> u64 {
        if (code as usize) < NUM_SGPRS {
            let lo = self.sgpr[code as usize] as u64;
            return if width == 2 {
                lo | (self.sreg(code + 1) as u64) << 32
            } else {
                lo
            };
        }
        if code == 255 {
            return lit.unwrap_or(0) as u64;
        }
        if let Some(c) = inline_const(code, width) {
            return c;
        }
        if code >= 256 {
            // A VGPR where a scalar is expected: lane 0 of it.
            return self
                .vgpr
                .get((code - 256) as usize)
                .map(|v| v[0] as u64)
                .unwrap_or(0);
        }
        let lo = self.sreg(code) as u64;
        if width == 2 {
            lo | (self.sreg(code + 1) as u64) << 32
        } else {
            lo
        }
    }

    #[inline(always)]
    pub(super) fn sset(&mut self, code: u16, width: u8, v: u64) {
        let c = code as usize;
        if width == 1 && c < NUM_SGPRS {
            self.sgpr[c] = v as u32;
            return;
        }
        if width == 2 && c + 1 < NUM_SGPRS {
            self.sgpr[c] = v as u32;
            self.sgpr[c + 1] = (v >> 32) as u32;
            return;
        }
        match (code, width) {
            (106, 2) => self.vcc = v,
            (126, 2) => self.exec = v,
            _ => self.sset_other(code, width, v),
        }
    }

    /// [`Self::sset`] of everything but SGPRs.
    #[inline(never)]
    fn sset_other(&mut self, code: u16, width: u8, v: u64) {
        self.set_sreg(code, v as u32);
        if width == 2 {
            self.set_sreg(code + 1, (v >> 32) as u32);
        }
    }

    fn vsrc(&self, code: u16, width: u8, lit: Option<u32>) -> VSrc {
        if code >= 256 {
            VSrc::Vgpr((code - 256) as usize, width)
        } else {
            VSrc::Uniform(self.sget(code, width, lit))
        }
    }

    #[inline]
    fn vget(&self, s: VSrc, lane: usize) -> u64 {
        match s {
            VSrc::Uniform(v) => v,
            VSrc::Vgpr(r, w) => {
                let lo = self.vgpr.get(r).map(|x| x[lane]).unwrap_or(0) as u64;
                if w == 2 {
                    lo | (self.vgpr.get(r + 1).map(|x| x[lane]).unwrap_or(0) as u64) << 32
                } else {
                    lo
                }
            }
        }
    }

    /// Lane `lane`'s value of 32-bit source operand `code` (a VGPR, or an
    /// SGPR/constant/literal, the same for every lane).
    pub(super) fn lane_value(&self, code: u16, lane: usize, lit: Option<u32>) -> u64 {
        self.vget(self.vsrc(code, 1, lit), lane)
    }

    /// Sets lane `lane` of VGPR `reg`.
    pub(super) fn set_lane(&mut self, reg: u8, lane: usize, v: u32) {
        self.vset(reg as usize, 1, lane, v as u64);
    }

    #[inline]
    fn vset(&mut self, r: usize, width: u8, lane: usize, v: u64) {
        if let Some(x) = self.vgpr.get_mut(r) {
            x[lane] = v as u32;
        }
        if width == 2 {
            if let Some(x) = self.vgpr.get_mut(r + 1) {
                x[lane] = (v >> 32) as u32;
            }
        }
    }
}

pub(super) fn bfe(x: u64, off: u32, width: u32, signed: bool, bits: u32) -> u64 {
    let off = off & (bits - 1);
    let width = width.min(bits);
    if width == 0 {
        return 0;
    }
    let v = x >> off;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let v = v & mask;
    if signed && width < 64 && (v >> (width - 1)) & 1 != 0 {
        (v | !mask) & if bits == 32 { 0xffff_ffff } else { u64::MAX }
    } else {
        v
    }
}

/// Defines `fn NAME(args) -> Ret` that runs `BODY(args)` (an
/// `#[inline(always)]` function) through [`simd::run`]: compiled for AVX2
/// as well, and run so where the CPU has it.
macro_rules! avx2_twin {
    ($(#[$m:meta])* fn $name:ident<$($lt:lifetime),*>($($arg:ident: $ty:ty),*) -> $ret:ty = $body:ident) => {
        $(#[$m])*
        #[inline(never)]
        fn $name<$($lt),*>($($arg: $ty),*) -> $ret {
            struct Args<$($lt),*> {
                $($arg: $ty),*
            }
            impl<$($lt),*> simd::Kernel for Args<$($lt),*> {
                type Out = $ret;
                #[inline(always)]
                fn run(self) -> $ret {
                    let Args { $($arg),* } = self;
                    $body($($arg),*)
                }
            }
            simd::run(Args { $($arg),* })
        }
    };
}

/// Executes a decoded instruction: runs the handler [`handler`] picks for
/// it (the device's run loop keeps that handler with the cached
/// instruction, [`Decoded`], and calls it without choosing again).
pub fn execute(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    handler(inst)(r, ctx, inst)
}

/// A function that executes one kind of instruction (or one opcode): it
/// runs the instruction on the wave and moves the PC past it when it
/// continues ([`Step::Continue`]).
pub type Exec = fn(&mut WaveRegs, &mut Ctx<'_>, &Inst) -> Step;

/// An instruction decoded once, with the handler that executes it (chosen
/// at decode time by [`handler`]): the run loop makes one indirect call per
/// instruction, with no `match` on the format, and the most common
/// opcodes (32-bit VALU rows, SOP2, SOPC, SOPP) have a handler of their
/// own in which the opcode is a constant, so their row's widths, flags and
/// expression are folded at compile time.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The instruction.
    pub inst: Inst,
    /// Its handler.
    pub exec: Exec,
}

impl Decoded {
    /// `inst` with its handler.
    pub fn new(inst: Inst) -> Self {
        let exec = handler(&inst);
        Self { inst, exec }
    }

    /// Executes the instruction on a wave.
    #[inline(always)]
    pub fn run(&self, r: &mut WaveRegs, ctx: &mut Ctx<'_>) -> Step {
        (self.exec)(r, ctx, &self.inst)
    }
}

/// Picks the handler of an instruction (see [`Decoded`]).
pub fn handler(inst: &Inst) -> Exec {
    /// `dispatch` kernels that name the per-opcode handlers.
    struct PickSop2;
    impl OpKernel for PickSop2 {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_sop2::<OP>
        }
    }
    struct PickSopc;
    impl OpKernel for PickSopc {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_sopc::<OP>
        }
    }
    struct PickSopp;
    impl OpKernel for PickSopp {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_sopp::<OP>
        }
    }
    struct PickSop1;
    impl OpKernel for PickSop1 {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_sop1::<OP>
        }
    }
    struct PickSopk;
    impl OpKernel for PickSopk {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_sopk::<OP>
        }
    }
    struct PickValu;
    impl OpKernel for PickValu {
        type Out = Exec;
        fn run<const OP: usize>(&mut self) -> Exec {
            h_valu_row::<OP>
        }
    }
    match &inst.kind {
        Kind::Sop2 { op, .. } => op.dispatch(&mut PickSop2),
        Kind::Sop1 { op, .. } => op.dispatch(&mut PickSop1),
        Kind::Sopc { op, .. } => op.dispatch(&mut PickSopc),
        Kind::Sopk { op, .. } => op.dispatch(&mut PickSopk),
        Kind::Sopp { op, .. } => op.dispatch(&mut PickSopp),
        Kind::Smem { .. } => h_smem,
        Kind::Valu {
            op: VOp::Alu(VAlu::MovB32),
            op_sel: 0,
            ..
        } => h_mov_b32,
        Kind::Valu {
            op: VOp::Alu(a),
            op_sel: 0,
            ..
        } if a.props().flags & super::valu::flag::CROSS_LANE == 0
            && !a.props().widths.is_empty()
            && *a != VAlu::Nop =>
        {
            a.dispatch(&mut PickValu)
        }
        Kind::Valu {
            op: VOp::Cmp(_),
            op_sel: 0,
            ..
        } => h_vcmp,
        Kind::Valu {
            op: VOp::Alu(a),
            op_sel: 0,
            ..
        } if a.props().flags & super::valu::flag::CROSS_LANE != 0 => match a {
            VAlu::ReadlaneB32 => h_cross_lane::<READLANE>,
            VAlu::WritelaneB32 => h_cross_lane::<WRITELANE>,
            _ => h_cross_lane::<READFIRSTLANE>,
        },
        Kind::Valu { .. } => h_valu,
        Kind::Vop3p(p) if p.op == Vop3pOp::AccvgprReadB32 => h_accvgpr_read,
        Kind::Vop3p(p) if p.op == Vop3pOp::AccvgprWriteB32 => h_accvgpr_write,
        Kind::Vop3p(_) => h_vop3p,
        Kind::Mubuf { acc: true, .. } => h_mubuf_acc,
        Kind::Mubuf { .. } => h_mubuf,
        Kind::Sdwa { .. } => h_sdwa,
        Kind::Dpp { .. } => h_dpp,
        Kind::Ds { .. } => h_ds,
        Kind::Flat { acc: true, .. } => h_flat_acc,
        Kind::Flat { .. } => h_flat,
    }
}

/// The PC past `inst` when `s` continues.
#[inline(always)]
fn advance(r: &mut WaveRegs, inst: &Inst, s: Step) -> Step {
    // (`matches!`: the derived `==` compares the payload word as well.)
    if matches!(s, Step::Continue) {
        r.pc = r.pc.wrapping_add(inst.size as u64);
    }
    s
}

/// SOP2 opcode `Sop2::ALL[OP]`.
fn h_sop2<const OP: usize>(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Sop2 {
        sdst, src0, src1, ..
    } = inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let op = const { Sop2::ALL[OP] };
    let w = const { Sop2::ALL[OP].widths() };
    let a = r.sget(src0, w[1], inst.literal);
    let b = r.sget(src1, w[2], inst.literal);
    let (v, scc) = op.exec(a, b, r.scc);
    r.sset(sdst as u16, w[0], v);
    if let Some(s) = scc {
        r.scc = s;
    }
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// SOPC opcode `Sopc::ALL[OP]`.
fn h_sopc<const OP: usize>(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Sopc { src0, src1, .. } = inst.kind else {
        return Step::IllegalInstruction;
    };
    let op = const { Sopc::ALL[OP] };
    let w = const { Sopc::ALL[OP].widths() };
    let a = r.sget(src0, w[0], inst.literal);
    let b = if w[1] == 0 {
        src1 as u64
    } else {
        r.sget(src1, w[1], inst.literal)
    };
    r.scc = op.exec(r, a, b);
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// SOPP opcode `Sopp::ALL[OP]`.
fn h_sopp<const OP: usize>(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Sopp { simm16, .. } = inst.kind else {
        return Step::IllegalInstruction;
    };
    let op = const { Sopp::ALL[OP] };
    let next = r.pc.wrapping_add(inst.size as u64);
    let taken = match op.flow(r, simm16) {
        Flow::Branch(taken) => taken,
        Flow::Next => false,
        Flow::End => return Step::End,
        Flow::Barrier => {
            r.pc = next;
            return Step::Barrier;
        }
        Flow::Trap => {
            r.pc = next;
            return Step::Trap(simm16 as u8 as u64);
        }
    };
    r.pc = if taken {
        next.wrapping_add(((simm16 as i16 as i64) * 4) as u64)
    } else {
        next
    };
    Step::Continue
}

/// SOP1 opcode `Sop1::ALL[OP]` (its row sets the PC: the branches and
/// `s_setpc`/`s_swappc` among them).
fn h_sop1<const OP: usize>(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Sop1 { sdst, src0, .. } = inst.kind else {
        return Step::IllegalInstruction;
    };
    let op = const { Sop1::ALL[OP] };
    let sw = const {
        let w = Sop1::ALL[OP].widths();
        if w.len() > 1 {
            w[1]
        } else {
            0
        }
    };
    let next = r.pc.wrapping_add(inst.size as u64);
    let a = if sw > 0 {
        r.sget(src0, sw, inst.literal)
    } else {
        0
    };
    r.pc = op.exec(r, sdst as u16, a, next);
    Step::Continue
}

/// SOPK opcode `Sopk::ALL[OP]`.
fn h_sopk<const OP: usize>(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Sopk { sdst, simm16, .. } = inst.kind else {
        return Step::IllegalInstruction;
    };
    let op = const { Sopk::ALL[OP] };
    op.exec(r, sdst as u16, simm16);
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// `v_mov_b32` (the commonest VALU opcode at `-O0`): the source row, or
/// the uniform value splatted, blended into the destination under EXEC,
/// without staging a result row (its row's value is `a32`: the VOP3
/// abs/neg/clamp bits do not act on it).
fn h_mov_b32(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return h_valu(r, ctx, inst);
    }
    simd::run(RowMove::<MOV_B32> { r, inst })
}

#[inline(always)]
fn mov_b32(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Valu { dst, src, .. } = &inst.kind else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    let d = *dst as usize;
    let s = src[0];
    if s >= 256 {
        let s = s as usize - 256;
        if s != d && d < r.vgpr.len() {
            if s >= r.vgpr.len() {
                blend_row(&mut r.vgpr[d], &ZERO_ROW, exec);
            } else if s < d {
                let (lo, hi) = r.vgpr.split_at_mut(d);
                blend_row(&mut hi[0], &lo[s], exec);
            } else {
                let (lo, hi) = r.vgpr.split_at_mut(s);
                blend_row(&mut lo[d], &hi[0], exec);
            }
        }
    } else {
        let v = r.sget(s, 1, inst.literal) as u32;
        if let Some(row) = r.vgpr.get_mut(d) {
            blend_row(row, &[v; LANES], exec);
        }
    }
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// The bodies of the row-move handlers as a [`simd::Kernel`]: compiled
/// for AVX2 as well, so that their row moves are 32-byte loads and stores
/// instead of `memcpy` calls. `K`: [`MOV_B32`], [`ACCVGPR_READ`] or
/// [`ACCVGPR_WRITE`].
struct RowMove<'a, const K: u8> {
    r: &'a mut WaveRegs,
    inst: &'a Inst,
}

const MOV_B32: u8 = 0;
const ACCVGPR_READ: u8 = 1;
const ACCVGPR_WRITE: u8 = 2;

impl<const K: u8> simd::Kernel for RowMove<'_, K> {
    type Out = Step;
    #[inline(always)]
    fn run(self) -> Step {
        match K {
            MOV_B32 => mov_b32(self.r, self.inst),
            ACCVGPR_READ => accvgpr_read(self.r, self.inst),
            _ => accvgpr_write(self.r, self.inst),
        }
    }
}

/// The cross-lane moves of [`h_cross_lane`].
const READFIRSTLANE: u8 = 0;
const READLANE: u8 = 1;
const WRITELANE: u8 = 2;

/// `v_readlane_b32`, `v_writelane_b32`, `v_readfirstlane_b32` (the `-O0`
/// SGPR spills; `OP` one of [`READLANE`], [`WRITELANE`], [`READFIRSTLANE`]):
/// their row's arm of `valu::cross_lane`, the opcode a constant.
fn h_cross_lane<const OP: u8>(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Valu { dst, src, .. } = &inst.kind else {
        return Step::IllegalInstruction;
    };
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return h_valu(r, ctx, inst);
    }
    let op = const {
        match OP {
            READLANE => VAlu::ReadlaneB32,
            WRITELANE => VAlu::WritelaneB32,
            _ => VAlu::ReadfirstlaneB32,
        }
    };
    super::valu::cross_lane(op, r, *dst, src, inst.literal);
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// `v_accvgpr_read_b32` (the `-O0` code's moves out of its AGPR spill
/// slots): the AGPR row blended into the VGPR under EXEC.
fn h_accvgpr_read(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        // VGPR indexing of the other VALU encodings is not modelled.
        return Step::IllegalInstruction;
    }
    simd::run(RowMove::<ACCVGPR_READ> { r, inst })
}

#[inline(always)]
fn accvgpr_read(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Vop3p(p) = &inst.kind else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    let a = (p.src[0] as usize).saturating_sub(256);
    let WaveRegs { vgpr, agpr, .. } = &mut *r;
    if let Some(d) = vgpr.get_mut(p.dst as usize) {
        blend_row(d, agpr.get(a).unwrap_or(&ZERO_ROW), exec);
    }
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// `v_accvgpr_write_b32`: a VGPR row, or a uniform value, blended into the
/// AGPR under EXEC (the AGPRs grow on first write).
fn h_accvgpr_write(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return Step::IllegalInstruction;
    }
    simd::run(RowMove::<ACCVGPR_WRITE> { r, inst })
}

#[inline(always)]
fn accvgpr_write(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Vop3p(p) = &inst.kind else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    let dst = p.dst as usize;
    if r.agpr.len() <= dst {
        r.agpr.resize(dst + 1, [0; LANES]);
    }
    let src = p.src[0];
    if src >= 256 {
        let WaveRegs { vgpr, agpr, .. } = &mut *r;
        blend_row(
            &mut agpr[dst],
            vgpr.get(src as usize - 256).unwrap_or(&ZERO_ROW),
            exec,
        );
    } else {
        let v = [r.sget(src, 1, inst.literal) as u32; LANES];
        blend_row(&mut r.agpr[dst], &v, exec);
    }
    r.pc = r.pc.wrapping_add(inst.size as u64);
    Step::Continue
}

/// A VOPC compare (no `op_sel`): [`valu_cmp`], compiled for AVX2 as well.
fn h_vcmp(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return h_valu(r, ctx, inst);
    }
    struct Args<'a> {
        r: &'a mut WaveRegs,
        inst: &'a Inst,
    }
    impl simd::Kernel for Args<'_> {
        type Out = Step;
        #[inline(always)]
        fn run(self) -> Step {
            let Kind::Valu {
                op: VOp::Cmp(c),
                enc,
                dst,
                src,
                abs,
                neg,
                ..
            } = &self.inst.kind
            else {
                return Step::IllegalInstruction;
            };
            let e64 = *enc == VEnc::E64;
            valu_cmp(self.r, *c, e64, *dst, src, *abs, *neg, self.inst.literal)
        }
    }
    let s = simd::run(Args { r: &mut *r, inst });
    advance(r, inst, s)
}

fn h_smem(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = smem(r, ctx, inst);
    advance(r, inst, s)
}

/// A VALU instruction other than the rows of [`h_valu_row`].
fn h_valu(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = match &inst.kind {
        Kind::Valu { .. } if r.mode & MODE_GPR_IDX_EN != 0 => valu_indexed(r, inst),
        Kind::Valu { op_sel, .. } if *op_sel != 0 => valu_op_sel(r, inst),
        _ => valu(r, inst),
    };
    advance(r, inst, s)
}

/// A VALU row other than a compare or a cross-lane move, opcode
/// `VAlu::ALL[OP]` ([`valu_alu_body`] with the opcode a constant, so its
/// widths and flags fold), compiled for AVX2 as well.
fn h_valu_row<const OP: usize>(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return h_valu(r, ctx, inst);
    }
    struct Args<'a, const OP: usize> {
        r: &'a mut WaveRegs,
        inst: &'a Inst,
    }
    impl<const OP: usize> simd::Kernel for Args<'_, OP> {
        type Out = Step;
        #[inline(always)]
        fn run(self) -> Step {
            let Kind::Valu {
                enc,
                dst,
                sdst,
                src,
                abs,
                neg,
                clamp,
                ..
            } = &self.inst.kind
            else {
                return Step::IllegalInstruction;
            };
            let x = AluArgs {
                op: const { VAlu::ALL[OP] },
                e64: *enc == VEnc::E64,
                dst: *dst,
                sdst: *sdst,
                src,
                abs: *abs,
                neg: *neg,
                lit: self.inst.literal,
                clamp: *clamp,
            };
            valu_alu_rows(self.r, x, ByConst::<OP>)
        }
    }
    let s = simd::run(Args::<OP> { r: &mut *r, inst });
    advance(r, inst, s)
}

fn h_vop3p(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        // VGPR indexing of the other VALU encodings is not modelled.
        return Step::IllegalInstruction;
    }
    let s = vop3p(r, inst);
    advance(r, inst, s)
}

fn h_sdwa(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return Step::IllegalInstruction;
    }
    let s = sdwa(r, inst);
    advance(r, inst, s)
}

fn h_dpp(r: &mut WaveRegs, _: &mut Ctx<'_>, inst: &Inst) -> Step {
    if r.mode & MODE_GPR_IDX_EN != 0 {
        return Step::IllegalInstruction;
    }
    let s = dpp(r, inst);
    advance(r, inst, s)
}

fn h_mubuf(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = mubuf(r, ctx, inst);
    advance(r, inst, s)
}

fn h_mubuf_acc(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = mubuf_acc(r, ctx, inst);
    advance(r, inst, s)
}

fn h_ds(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = ds(r, ctx, inst);
    advance(r, inst, s)
}

fn h_flat(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = flat(r, ctx, inst);
    advance(r, inst, s)
}

fn h_flat_acc(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let s = flat_acc(r, ctx, inst);
    advance(r, inst, s)
}

/// SMEM: dwords from an SGPR-pair address, or through a buffer resource
/// (dwords past its size load as 0), into SGPRs. Out of line: its staging
/// buffer would otherwise enlarge [`execute`]'s frame for every
/// instruction.
#[inline(never)]
fn smem(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Smem {
        op,
        sdata,
        sbase,
        offset,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let base = r.sget(*sbase as u16, 2, None);
    let n = op.widths()[0] as usize;
    // A buffer resource (4 SGPRs): its 48-bit base, and its size
    // in bytes, past which dwords load as 0.
    let (base, size) = if op.widths()[1] == 4 {
        let size = r.sget(*sbase as u16 + 2, 1, None);
        (base & 0xffff_ffff_ffff, size)
    } else {
        (base, u64::MAX)
    };
    let off = *offset as i64 as u64;
    let addr = if size == u64::MAX {
        base.wrapping_add(off) & !3
    } else {
        base.wrapping_add(off & !3)
    };
    let inside = (size.saturating_sub(off & !3) / 4).min(n as u64) as usize;
    let mut buf = [0u8; 64];
    if inside > 0 && ctx.mem.read(addr, &mut buf[..inside * 4]).is_err() {
        return Step::MemoryViolation { addr };
    }
    for i in 0..n {
        let v = u32::from_le_bytes([buf[i * 4], buf[i * 4 + 1], buf[i * 4 + 2], buf[i * 4 + 3]]);
        r.set_sreg(*sdata as u16 + i as u16, v);
    }
    Step::Continue
}

/// A VALU instruction under VGPR indexing (`s_set_gpr_idx_on`): the VGPR
/// operands that M0[15:12] enables (src0, src1, src2, the VGPR destination)
/// are offset by M0[7:0]; past v255 is an illegal instruction.
#[inline(never)]
fn valu_indexed(r: &mut WaveRegs, inst: &Inst) -> Step {
    let mut inst = inst.clone();
    let Kind::Valu { op, dst, src, .. } = &mut inst.kind else {
        return Step::IllegalInstruction;
    };
    let (idx, enable) = ((r.m0 & 0xff) as u16, (r.m0 >> 12) & 0xf);
    for (i, s) in src.iter_mut().enumerate() {
        if (enable >> i) & 1 != 0 && *s >= 256 {
            *s += idx;
            if *s > 511 {
                return Step::IllegalInstruction;
            }
        }
    }
    let vgpr_dst = matches!(op, VOp::Alu(a) if !a.sgpr_dst());
    if enable & 8 != 0 && vgpr_dst {
        match dst.checked_add(idx as u8).filter(|_| idx <= 255) {
            Some(d) => *dst = d,
            None => return Step::IllegalInstruction,
        }
    }
    valu(r, &inst)
}

pub(super) fn f32m(v: u64, i: usize, abs: u8, neg: u8) -> f32 {
    let mut f = f32::from_bits(v as u32);
    if (abs >> i) & 1 != 0 {
        f = f.abs();
    }
    if (neg >> i) & 1 != 0 {
        f = -f;
    }
    f
}

/// `frexp`: mantissa in [0.5, 1) and exponent; 0, inf and NaN give (x, 0).
pub(super) fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let mut e = x.abs().log2().floor() as i32 + 1;
    let mut m = ldexp(x, -e);
    if m.abs() >= 1.0 {
        m = ldexp(m, -1);
        e += 1;
    } else if m.abs() < 0.5 {
        m = ldexp(m, 1);
        e -= 1;
    }
    (m, e)
}

/// `x * 2^e` with one rounding.
pub(super) fn ldexp(x: f64, e: i32) -> f64 {
    let mut x = x;
    let mut e = e.clamp(-2200, 2200);
    while e > 1000 {
        x *= pow2(1000);
        e -= 1000;
    }
    while e < -1000 {
        // Avoid double rounding in the subnormal range: scale in one step
        // once close.
        x *= pow2(-1000);
        e += 1000;
    }
    x * pow2(e)
}

/// `2^e`, exact: made from its bits in the normal range (no `powi` call),
/// else `powi` as before.
#[inline]
pub(super) fn pow2(e: i32) -> f64 {
    if (-1022..=1023).contains(&e) {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        2f64.powi(e)
    }
}

/// `v_div_fixup`: the special cases of `n / d` (src2 = n, src1 = d) on the
/// quotient estimate src0.
pub(super) fn div_fixup(q: f64, d: f64, n: f64) -> f64 {
    let sign = if (d.is_sign_negative()) != (n.is_sign_negative()) {
        -1.0
    } else {
        1.0
    };
    if d.is_nan() || n.is_nan() || (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        f64::NAN
    } else if d == 0.0 || n.is_infinite() {
        sign * f64::INFINITY
    } else if d.is_infinite() || n == 0.0 {
        sign * 0.0
    } else {
        q
    }
}

pub(super) fn f64m(v: u64, i: usize, abs: u8, neg: u8) -> f64 {
    let mut f = f64::from_bits(v);
    if (abs >> i) & 1 != 0 {
        f = f.abs();
    }
    if (neg >> i) & 1 != 0 {
        f = -f;
    }
    f
}

/// `v_cmp_class`: bit 0 signaling NaN, 1 quiet NaN, 2 -inf, 3 -normal,
/// 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
fn fp_class(x: f64, _unused: bool, mask: u32) -> bool {
    use std::num::FpCategory;
    let neg = x.is_sign_negative();
    let bit = match x.classify() {
        FpCategory::Nan => 1, // quiet (the simulator does not track signaling NaNs)
        FpCategory::Infinite => {
            if neg {
                2
            } else {
                9
            }
        }
        FpCategory::Normal => {
            if neg {
                3
            } else {
                8
            }
        }
        FpCategory::Subnormal => {
            if neg {
                4
            } else {
                7
            }
        }
        FpCategory::Zero => {
            if neg {
                5
            } else {
                6
            }
        }
    };
    (mask >> bit) & 1 != 0
}

/// IEEE half to single (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            return f32::from_bits(sign)
                + (if sign != 0 { -1.0 } else { 1.0 }) * (m as f32) * (2.0f32).powi(-24)
        }
        (31, 0) => sign | 0x7f80_0000,
        (31, m) => sign | 0x7fc0_0000 | m << 13,
        (e, m) => sign | ((e - 15 + 127) as u32) << 23 | m << 13,
    };
    f32::from_bits(bits)
}

/// f64 to IEEE half, rounding to nearest even (one rounding).
pub fn f64_to_f16(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    if x.is_nan() {
        return sign | 0x7e00;
    }
    let a = x.abs();
    if a.is_infinite() || a >= 65520.0 {
        return sign | 0x7c00;
    }
    // Scale to units of the smallest subnormal (2^-24) or of the ulp.
    let e = if a < pow2(-14) {
        -14
    } else {
        // floor(log2(a)): `a` is normal, its exponent field.
        ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
    };
    let mut e = e.clamp(-14, 15);
    if e > -14 && a < pow2(e) {
        e -= 1;
    }
    let ulp = pow2(e - 10);
    let q = (a / ulp).round_ties_even();
    let (mut e, mut q) = (e, q as u32);
    if q >= 2048 {
        q >>= 1;
        e += 1;
    }
    if e > 15 {
        return sign | 0x7c00;
    }
    if q < 1024 {
        return sign | q as u16; // subnormal (e == -14)
    }
    sign | (((e + 15) as u16) << 10) | (q as u16 & 0x3ff)
}

/// A lane value of a compare: `u32` rows for the types with 32-bit
/// operands, `u64` lanes (gathered register pairs) for the 64-bit ones.
trait CmpLane: Copy + Into<u64> {
    /// The lane type of the 64-bit operand types.
    const WIDE: bool;
}

impl CmpLane for u32 {
    const WIDE: bool = false;
}

impl CmpLane for u64 {
    const WIDE: bool = true;
}

/// Whether compares of type `t` read 64-bit operands (src0's width).
const fn wide_cmp(t: CmpTy) -> bool {
    matches!(t, CmpTy::I64 | CmpTy::U64 | CmpTy::F64 | CmpTy::ClassF64)
}

/// The compare of every lane, as a mask: one lane loop per operand type and
/// condition, so that the type and condition `match` of [`cmp`] folds away.
/// Lanes are `u32` for the 32-bit types and `u64` for the 64-bit ones (0
/// for a type of the other width: no loop is generated for it). Inlined
/// into its callers, so it is compiled for AVX2 under [`simd::run`].
#[inline(always)]
fn cmp_lanes<T: CmpLane>(c: VCmp, a: &[T; LANES], b: &[T; LANES], abs: u8, neg: u8) -> u64 {
    #[inline(always)]
    fn lanes<T: CmpLane, const TY: usize, const COND: u8>(
        a: &[T; LANES],
        b: &[T; LANES],
        abs: u8,
        neg: u8,
    ) -> u64 {
        if const { wide_cmp(CMP_TYPES[TY]) != T::WIDE } {
            return 0;
        }
        let c = VCmp {
            ty: CMP_TYPES[TY],
            cond: COND,
            x: false,
        };
        let mut mask = 0u64;
        for lane in 0..LANES {
            mask |= (cmp(c, a[lane].into(), b[lane].into(), abs, neg) as u64) << lane;
        }
        mask
    }
    macro_rules! conds {
        ($ty:expr; $($cond:literal)*) => {
            match c.cond {
                $($cond => lanes::<T, { $ty as usize }, $cond>(a, b, abs, neg),)*
                _ => lanes::<T, { $ty as usize }, 15>(a, b, abs, neg),
            }
        };
    }
    macro_rules! types {
        ($($ty:ident)*) => {
            match c.ty {
                $(CmpTy::$ty => conds!(CmpTy::$ty; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),)*
            }
        };
    }
    types!(I16 U16 I32 U32 I64 U64 F32 F64 ClassF32 ClassF64)
}

/// [`CmpTy`] by discriminant.
const CMP_TYPES: [CmpTy; 10] = [
    CmpTy::I16,
    CmpTy::U16,
    CmpTy::I32,
    CmpTy::U32,
    CmpTy::I64,
    CmpTy::U64,
    CmpTy::F32,
    CmpTy::F64,
    CmpTy::ClassF32,
    CmpTy::ClassF64,
];

#[inline(always)]
fn cmp(c: VCmp, a: u64, b: u64, abs: u8, neg: u8) -> bool {
    use std::cmp::Ordering;
    let ord = match c.ty {
        CmpTy::I16 => Some((a as i16).cmp(&(b as i16))),
        CmpTy::U16 => Some((a as u16).cmp(&(b as u16))),
        CmpTy::I32 => Some((a as i32).cmp(&(b as i32))),
        CmpTy::U32 => Some((a as u32).cmp(&(b as u32))),
        CmpTy::I64 => Some((a as i64).cmp(&(b as i64))),
        CmpTy::U64 => Some(a.cmp(&b)),
        CmpTy::F32 => f32m(a, 0, abs, neg).partial_cmp(&f32m(b, 1, abs, neg)),
        CmpTy::F64 => f64m(a, 0, abs, neg).partial_cmp(&f64m(b, 1, abs, neg)),
        CmpTy::ClassF32 => {
            return fp_class(
                f32m(a, 0, abs, neg) as f64,
                a as u32 & 0x7fffff == 0 && (a as u32 >> 23) & 0xff == 0,
                b as u32,
            )
        }
        CmpTy::ClassF64 => return fp_class(f64m(a, 0, abs, neg), false, b as u32),
    };
    if matches!(c.ty, CmpTy::F32 | CmpTy::F64) {
        let (lt, eq, gt) = match ord {
            Some(Ordering::Less) => (true, false, false),
            Some(Ordering::Equal) => (false, true, false),
            Some(Ordering::Greater) => (false, false, true),
            None => (false, false, false),
        };
        let ordered = ord.is_some();
        return match c.cond {
            0 => false,
            1 => lt,
            2 => eq,
            3 => lt || eq,
            4 => gt,
            5 => lt || gt,
            6 => gt || eq,
            7 => ordered,
            8 => !ordered,
            9 => !(gt || eq),
            10 => !(lt || gt),
            11 => !gt,
            12 => !(lt || eq),
            13 => !eq,
            14 => !lt,
            _ => true,
        };
    }
    let o = ord.unwrap_or(Ordering::Equal);
    match c.cond {
        0 => false,
        1 => o.is_lt(),
        2 => o.is_eq(),
        3 => o.is_le(),
        4 => o.is_gt(),
        5 => o.is_ne(),
        6 => o.is_ge(),
        _ => true,
    }
}

/// A VOP3 instruction with `op_sel`: each selected source's high half is
/// staged in a VGPR past the wave's allocation, the operation runs on the
/// staged operands, and with `op_sel[3]` the low 16 bits of its result go
/// to the destination's high half (the low half kept), under EXEC.
#[inline(never)]
fn valu_op_sel(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Valu {
        op: VOp::Alu(a),
        dst,
        src,
        op_sel,
        ..
    } = inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let base = r.vgpr.len();
    if base + 4 > 256 {
        return Step::IllegalInstruction;
    }
    let mut staged = inst.clone();
    let Kind::Valu {
        src: ssrc,
        dst: sdst,
        op_sel: sop,
        ..
    } = &mut staged.kind
    else {
        return Step::IllegalInstruction;
    };
    *sop = 0;
    for i in 0..a.widths().len().saturating_sub(1).min(3) {
        if op_sel >> i & 1 == 0 {
            continue;
        }
        let v = r.vsrc(src[i], 1, None);
        let row: [u32; LANES] = std::array::from_fn(|lane| (r.vget(v, lane) >> 16) as u32);
        ssrc[i] = 256 + r.vgpr.len() as u16;
        r.vgpr.push(row);
    }
    // (v_mad_u32_u16 and v_mad_i32_i16 have a 32-bit result.)
    let hi = op_sel & 8 != 0 && !matches!(a, VAlu::MadU32U16 | VAlu::MadI32I16);
    if hi {
        *sdst = r.vgpr.len() as u8;
        r.vgpr.push([0; LANES]);
    }
    let step = valu(r, &staged);
    if hi {
        let out = r.vgpr[r.vgpr.len() - 1];
        let exec = r.exec;
        if let Some(d) = r.vgpr.get_mut(dst as usize) {
            for (lane, v) in d.iter_mut().enumerate() {
                if exec >> lane & 1 != 0 {
                    *v = (*v & 0xffff) | out[lane] << 16;
                }
            }
        }
    }
    r.vgpr.truncate(base);
    step
}

avx2_twin! {
    /// A VALU instruction (VOP1/VOP2/VOP3/VOPC): [`valu_body`], compiled
    /// for AVX2 as well and run so where the CPU has it ([`simd::run`]).
    fn valu<'a>(r: &'a mut WaveRegs, inst: &'a Inst) -> Step = valu_body
}

/// [`valu`]: the fields are taken from the decoded instruction inside the
/// compiled copy (passing them to an out-of-line function as a struct
/// stalled on store forwarding).
#[inline(always)]
fn valu_body(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Valu {
        op,
        enc,
        dst,
        sdst,
        src,
        abs,
        neg,
        clamp,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let lit = inst.literal;
    let e64 = *enc == VEnc::E64;
    match op {
        VOp::Cmp(c) => valu_cmp(r, *c, e64, *dst, src, *abs, *neg, lit),
        VOp::Alu(a) => valu_alu_body(
            r,
            AluArgs {
                op: *a,
                e64,
                dst: *dst,
                sdst: *sdst,
                src,
                abs: *abs,
                neg: *neg,
                lit,
                clamp: *clamp,
            },
        ),
    }
}

/// A VOPC compare: the mask of the EXEC lanes into VCC or an SGPR pair
/// (and EXEC for the `_cmpx` forms).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn valu_cmp(
    r: &mut WaveRegs,
    c: VCmp,
    e64: bool,
    dst: u8,
    src: &[u16; 3],
    abs: u8,
    neg: u8,
    lit: Option<u32>,
) -> Step {
    let exec = r.exec;
    let (w0, w1) = c.src_widths();
    let mask = if (w0, w1) == (1, 1) {
        // 32-bit operands: compared straight from the VGPR rows.
        let (ua, ub);
        let a = row32!(r, src[0], lit, ua);
        let b = row32!(r, src[1], lit, ub);
        cmp_lanes::<u32>(c, a, b, abs, neg) & exec
    } else {
        let a = r.vsrc(src[0], w0, lit);
        let b = r.vsrc(src[1], w1, lit);
        VALU_LANES.with_borrow_mut(|k| {
            gather(r, a, &mut k.a);
            gather(r, b, &mut k.b);
            cmp_lanes(c, &k.a, &k.b, abs, neg) & exec
        })
    };
    let d = if e64 { dst as u16 } else { 106 };
    r.sset(d, 2, mask);
    if c.x {
        r.exec = mask;
    }
    Step::Continue
}

/// The fields of a VALU row other than a compare, as decoded (or staged
/// by the SDWA and DPP forms).
#[derive(Clone, Copy)]
struct AluArgs<'a> {
    op: VAlu,
    e64: bool,
    dst: u8,
    sdst: u8,
    src: &'a [u16; 3],
    abs: u8,
    neg: u8,
    lit: Option<u32>,
    clamp: bool,
}

avx2_twin! {
    /// A VALU row other than a compare (also the SDWA and DPP forms, with
    /// their operands staged): [`valu_alu_body`], compiled for AVX2 as well.
    fn valu_alu<'a>(r: &'a mut WaveRegs, x: AluArgs<'a>) -> Step = valu_alu_body
}

#[inline(always)]
fn valu_alu_body(r: &mut WaveRegs, x: AluArgs<'_>) -> Step {
    let op = x.op;
    valu_alu_rows(r, x, ByDispatch(op))
}

/// Runs the lane loop of a VALU row: through the opcode's `dispatch`
/// ([`ByDispatch`]), or straight where the opcode is a constant
/// ([`ByConst`]: a handler of its own, [`h_valu_row`]).
trait RunLanes {
    fn run<R: LaneRows>(self, k: &mut R);
}

/// The lane loop chosen by `VAlu::dispatch`.
struct ByDispatch(VAlu);

impl RunLanes for ByDispatch {
    #[inline(always)]
    fn run<R: LaneRows>(self, k: &mut R) {
        self.0.dispatch(&mut Lanes(k))
    }
}

/// The lane loop of `VAlu::ALL[OP]`.
struct ByConst<const OP: usize>;

impl<const OP: usize> RunLanes for ByConst<OP> {
    #[inline(always)]
    fn run<R: LaneRows>(self, k: &mut R) {
        Lanes(k).run::<OP>()
    }
}

/// [`valu_alu_body`] with the lane loop run by `lanes`.
#[inline(always)]
fn valu_alu_rows(r: &mut WaveRegs, x: AluArgs<'_>, lanes: impl RunLanes) -> Step {
    let AluArgs {
        op,
        e64,
        dst,
        sdst,
        src,
        abs,
        neg,
        lit,
        clamp,
    } = x;
    let props = op.props();
    let w = props.widths;
    if w.is_empty() {
        return Step::Continue;
    }
    let exec = r.exec;
    let sw = |i: usize| w.get(i + 1).copied().unwrap_or(1);
    // Cross-lane moves (readlane, writelane, readfirstlane): their rows'
    // own wave-level function in valu.rs.
    if props.flags & super::valu::flag::CROSS_LANE != 0 {
        super::valu::cross_lane(op, r, dst, src, lit);
        return Step::Continue;
    }
    if op == VAlu::Nop {
        return Step::Continue;
    }
    if props.w32 {
        return valu_alu32(r, x, lanes);
    }
    // 64-bit operands: each is two VGPR rows read in place (low, and high
    // or zeros for a 32-bit operand), a uniform operand splatted; only the
    // operands the opcode has are resolved (the others are zeros).
    let nsrc = w.len() - 1;
    let mask_in = props.flags & super::valu::flag::MASK_IN != 0;
    let mask = if mask_in {
        if e64 {
            r.sget(src[2], 2, None)
        } else {
            r.vcc
        }
    } else {
        0
    };
    let (ua, ub, uc);
    let a = rows64!(r, src[0], sw(0), lit, ua);
    let b = if nsrc >= 2 {
        rows64!(r, src[1], sw(1), lit, ub)
    } else {
        [&ZERO_ROW; 2]
    };
    let c = if nsrc >= 3 && !mask_in {
        rows64!(r, src[2], sw(2), lit, uc)
    } else {
        [&ZERO_ROW; 2]
    };
    let d = if props.flags & super::valu::flag::READS_DST != 0 {
        vgpr_rows(r, dst as usize, w[0])
    } else {
        [&ZERO_ROW; 2]
    };
    let mut k = Lanes64 {
        x: LaneIn {
            abs,
            neg,
            lit,
            e64,
            vcc_in: r.vcc,
        },
        a,
        b,
        c,
        mask,
        d,
        out: [[0; LANES]; 2],
        carry: 0,
    };
    lanes.run(&mut k);
    if clamp {
        for lane in 0..LANES {
            let v = k.out[0][lane] as u64 | (k.out[1][lane] as u64) << 32;
            let v = op.clamp_value(a[0][lane], b[0][lane], v);
            k.out[0][lane] = v as u32;
            k.out[1][lane] = (v >> 32) as u32;
        }
    }
    // v_swap_b32: the destination's old value goes to src0.
    let swapped = (op == VAlu::SwapB32).then(|| *d[0]);
    let (out, carry) = (k.out, k.carry);
    for (h, row) in out.iter().enumerate().take(if w[0] == 2 { 2 } else { 1 }) {
        if let Some(reg) = r.vgpr.get_mut(dst as usize + h) {
            blend_row(reg, row, exec);
        }
    }
    if let Some(old) = swapped {
        if let Some(reg) = r.vgpr.get_mut((src[0] as usize).wrapping_sub(256)) {
            blend_row(reg, &old, exec);
        }
    }
    if props.flags & super::valu::flag::CARRY_OUT != 0 {
        let d = if e64 { sdst as u16 } else { 106 };
        r.sset(d, 2, carry & exec);
    }
    Step::Continue
}

/// VGPR `reg` (and `reg + 1` when `width` is 2, else zeros) as the low and
/// high rows of a 64-bit operand; zeros past the allocation.
#[inline(always)]
fn vgpr_rows(r: &WaveRegs, reg: usize, width: u8) -> [&[u32; LANES]; 2] {
    [
        r.vgpr.get(reg).unwrap_or(&ZERO_ROW),
        if width == 2 {
            r.vgpr.get(reg + 1).unwrap_or(&ZERO_ROW)
        } else {
            &ZERO_ROW
        },
    ]
}

/// A source operand of `width` dwords as two lane rows ([`vgpr_rows`]), or
/// the scalar value `sget` reads splatted into `$splat` (a `let` the caller
/// declares).
macro_rules! rows64 {
    ($r:expr, $code:expr, $width:expr, $lit:expr, $splat:ident) => {{
        let code: u16 = $code;
        if code >= 256 {
            vgpr_rows($r, (code - 256) as usize, $width)
        } else {
            let v = $r.sget(code, $width, $lit);
            $splat = [[v as u32; LANES], [(v >> 32) as u32; LANES]];
            [&$splat[0], &$splat[1]]
        }
    }};
}
use rows64;

/// One VALU instruction with 64-bit operands over 64 lanes
/// ([`valu_alu_rows`]): every operand is a low and a high row read in
/// place, the results go to a low and a high row.
struct Lanes64<'a> {
    x: LaneIn,
    a: [&'a [u32; LANES]; 2],
    b: [&'a [u32; LANES]; 2],
    c: [&'a [u32; LANES]; 2],
    /// The `MASK_IN` lane mask (VCC or an SGPR pair), the rows' `c`.
    mask: u64,
    /// The destination's old value (`READS_DST` rows).
    d: [&'a [u32; LANES]; 2],
    out: [[u32; LANES]; 2],
    carry: u64,
}

impl LaneRows for Lanes64<'_> {
    const W32: bool = false;
    #[inline(always)]
    fn lane_in(&self) -> LaneIn {
        self.x
    }
    #[inline(always)]
    fn operands(&self, lane: usize, mask_in: bool) -> [u64; 4] {
        let v = |o: &[&[u32; LANES]; 2]| o[0][lane] as u64 | (o[1][lane] as u64) << 32;
        let c = if mask_in { self.mask } else { v(&self.c) };
        [v(&self.a), v(&self.b), c, v(&self.d)]
    }
    #[inline(always)]
    fn put(&mut self, lane: usize, v: u64) {
        self.out[0][lane] = v as u32;
        self.out[1][lane] = (v >> 32) as u32;
    }
    #[inline(always)]
    fn set_carry(&mut self, carry: u64) {
        self.carry = carry;
    }
}

/// Zeros, the row of an operand an opcode does not have.
static ZERO_ROW: [u32; LANES] = [0; LANES];

/// A 32-bit source operand as a lane row: the VGPR's own row (zeros past
/// the allocation), or the scalar value `sget` reads splatted into `$splat`
/// (a `let` the caller declares, so the row lives as long as the borrow).
macro_rules! row32 {
    ($r:expr, $code:expr, $lit:expr, $splat:ident) => {{
        let code: u16 = $code;
        if code >= 256 {
            $r.vgpr.get((code - 256) as usize).unwrap_or(&ZERO_ROW)
        } else {
            $splat = [$r.sget(code, 1, $lit) as u32; LANES];
            &$splat
        }
    }};
}
use row32;

/// A VALU row whose operands are all 32 bits ([`ValuProps::w32`]): the
/// lane loop reads the VGPR rows in place (uniform operands splatted), so
/// there is no gathering into 64-bit lanes and the loop works on 8 lanes
/// per AVX2 instruction; the result is blended into the destination row
/// under EXEC. The lane loop is run by `lanes` (the opcode's `dispatch`, or its own
/// loop where the opcode is a constant).
///
/// [`ValuProps::w32`]: super::valu::ValuProps::w32
#[inline(always)]
fn valu_alu32(r: &mut WaveRegs, x: AluArgs<'_>, lanes: impl RunLanes) -> Step {
    use super::valu::flag;
    let op = x.op;
    let props = op.props();
    let nsrc = props.widths.len() - 1;
    let exec = r.exec;
    let mask = if props.flags & flag::MASK_IN != 0 {
        if x.e64 {
            r.sget(x.src[2], 2, None)
        } else {
            r.vcc
        }
    } else {
        0
    };
    let lane_in = LaneIn {
        abs: x.abs,
        neg: x.neg,
        lit: x.lit,
        e64: x.e64,
        vcc_in: r.vcc,
    };
    let (ua, ub, uc);
    let a = row32!(r, x.src[0], x.lit, ua);
    let b = if nsrc >= 2 {
        row32!(r, x.src[1], x.lit, ub)
    } else {
        &ZERO_ROW
    };
    let c = if nsrc >= 3 && props.flags & flag::MASK_IN == 0 {
        row32!(r, x.src[2], x.lit, uc)
    } else {
        &ZERO_ROW
    };
    let d = if props.flags & flag::READS_DST != 0 {
        r.vgpr.get(x.dst as usize).unwrap_or(&ZERO_ROW)
    } else {
        &ZERO_ROW
    };
    let mut k = Lanes32 {
        x: lane_in,
        a,
        b,
        c,
        mask,
        d,
        out: [0; LANES],
        carry: 0,
    };
    lanes.run(&mut k);
    if x.clamp {
        for lane in 0..LANES {
            k.out[lane] = op.clamp_value(a[lane], b[lane], k.out[lane] as u64) as u32;
        }
    }
    let (out, carry) = (k.out, k.carry);
    if let Some(row) = r.vgpr.get_mut(x.dst as usize) {
        blend_row(row, &out, exec);
    }
    if props.flags & flag::CARRY_OUT != 0 {
        let d = if x.e64 { x.sdst as u16 } else { 106 };
        r.sset(d, 2, carry & exec);
    }
    Step::Continue
}

/// One 32-bit VALU instruction over 64 lanes ([`valu_alu32`]).
struct Lanes32<'a> {
    x: LaneIn,
    a: &'a [u32; LANES],
    b: &'a [u32; LANES],
    c: &'a [u32; LANES],
    /// The `MASK_IN` lane mask (VCC or an SGPR pair), the rows' `c`.
    mask: u64,
    /// The destination's old value (`READS_DST` rows).
    d: &'a [u32; LANES],
    out: [u32; LANES],
    carry: u64,
}

impl LaneRows for Lanes32<'_> {
    const W32: bool = true;
    #[inline(always)]
    fn lane_in(&self) -> LaneIn {
        self.x
    }
    #[inline(always)]
    fn operands(&self, lane: usize, mask_in: bool) -> [u64; 4] {
        let c = if mask_in {
            self.mask
        } else {
            self.c[lane] as u64
        };
        [
            self.a[lane] as u64,
            self.b[lane] as u64,
            c,
            self.d[lane] as u64,
        ]
    }
    #[inline(always)]
    fn put(&mut self, lane: usize, v: u64) {
        self.out[lane] = v as u32;
    }
    #[inline(always)]
    fn set_carry(&mut self, carry: u64) {
        self.carry = carry;
    }
}

/// The operands and results of a VALU lane loop: 64-bit lanes gathered
/// into arrays ([`ValuLanes`]) or 32-bit VGPR rows read in place
/// ([`Lanes32`]).
trait LaneRows {
    /// Serves the 32-bit rows ([`lanes32`](super::valu::lanes32)), or the
    /// others.
    const W32: bool;
    /// The instruction's modifiers and inputs.
    fn lane_in(&self) -> LaneIn;
    /// `a`, `b`, `c`, `d` of `lane` (`c`: the lane mask of a `MASK_IN`
    /// row).
    fn operands(&self, lane: usize, mask_in: bool) -> [u64; 4];
    /// Stores `lane`'s result.
    fn put(&mut self, lane: usize, v: u64);
    /// Stores the carry-out mask.
    fn set_carry(&mut self, carry: u64);
}

/// A [`LaneRows`] as the [`OpKernel`] that `VAlu::dispatch` runs: one lane
/// loop per opcode (of the rows it serves), twice: with the instruction's
/// abs/neg bits, and with them 0 (most instructions), where the modifier
/// tests fold away.
struct Lanes<'k, R>(&'k mut R);

impl<R: LaneRows> OpKernel for Lanes<'_, R> {
    type Out = ();
    #[inline(always)]
    fn run<const OP: usize>(&mut self) {
        // No loop for the rows of the other kind (they never come here).
        if const { super::valu::lanes32(VAlu::ALL[OP]) != R::W32 } {
            return;
        }
        let x = self.0.lane_in();
        if x.abs == 0 && x.neg == 0 {
            lane_loop::<R, OP, false>(self.0);
        } else {
            lane_loop::<R, OP, true>(self.0);
        }
    }
}

/// The lane loop of opcode `ALL[OP]`; `MODS` false: no abs/neg bits.
#[inline(always)]
fn lane_loop<R: LaneRows, const OP: usize, const MODS: bool>(k: &mut R) {
    let op = VAlu::ALL[OP];
    let mask_in = const { VAlu::ALL[OP].flags() & super::valu::flag::MASK_IN != 0 };
    let mut x = k.lane_in();
    if !MODS {
        x.abs = 0;
        x.neg = 0;
    }
    let mut carry = 0u64;
    for lane in 0..LANES {
        let [a, b, c, d] = k.operands(lane, mask_in);
        let (v, cy) = op.lane_value(x, a, b, c, d, lane);
        k.put(lane, v);
        carry |= (cy as u64) << lane;
    }
    k.set_carry(carry);
}

/// Reads a vector operand for all 64 lanes.
#[inline]
fn gather(r: &WaveRegs, s: VSrc, out: &mut [u64; LANES]) {
    match s {
        VSrc::Uniform(v) => *out = [v; LANES],
        VSrc::Vgpr(reg, w) => {
            if let Some(lo) = r.vgpr.get(reg) {
                for (o, &v) in out.iter_mut().zip(lo.iter()) {
                    *o = v as u64;
                }
            }
            if w == 2 {
                if let Some(hi) = r.vgpr.get(reg + 1) {
                    for (o, &v) in out.iter_mut().zip(hi.iter()) {
                        *o |= (v as u64) << 32;
                    }
                }
            }
        }
    }
}

/// Copies the EXEC lanes of `src` into `dst` (branch-free, vectorises).
#[inline(always)]
fn blend_row(dst: &mut [u32; LANES], src: &[u32; LANES], exec: u64) {
    if exec == u64::MAX {
        *dst = *src;
        return;
    }
    let m = lane_masks(exec);
    for ((d, &s), &m) in dst.iter_mut().zip(src.iter()).zip(m.iter()) {
        *d = (*d & !m) | (s & m);
    }
}

/// One all-ones or all-zeros `u64` per lane of `exec`.
#[inline(always)]
fn lane_masks64(exec: u64) -> [u64; LANES] {
    std::array::from_fn(|lane| 0u64.wrapping_sub(exec >> lane & 1))
}

/// Lane masks of the 8 bits of a byte: `BYTE_MASKS[b][i]` is all ones when
/// bit `i` of `b` is set.
static BYTE_MASKS: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 != 0 {
                t[b][i] = u32::MAX;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// One all-ones or all-zeros word per lane of `exec` (eight table loads,
/// not 64 shifts), for branch-free blends that vectorise.
#[inline(always)]
fn lane_masks(exec: u64) -> [u32; LANES] {
    let mut m = [0u32; LANES];
    for (k, chunk) in m.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&BYTE_MASKS[(exec >> (8 * k)) as usize & 0xff]);
    }
    m
}

thread_local! {
    static VALU_LANES: std::cell::RefCell<ValuLanes> = const {
        std::cell::RefCell::new(ValuLanes {
            x: LaneIn {
                abs: 0,
                neg: 0,
                lit: None,
                e64: false,
                vcc_in: 0,
            },
            a: [0; LANES],
            b: [0; LANES],
            c: [0; LANES],
            d: [0; LANES],
            out: [0; LANES],
            carry: 0,
        })
    };
}

/// One VALU instruction over 64 lanes: operands in, results out. Every lane
/// is computed (the operations are pure); only EXEC lanes are written back.
struct ValuLanes {
    x: LaneIn,
    a: [u64; LANES],
    b: [u64; LANES],
    c: [u64; LANES],
    /// The destination's old value (for the accumulating and swap ops).
    d: [u64; LANES],
    out: [u64; LANES],
    carry: u64,
}

impl LaneRows for ValuLanes {
    const W32: bool = false;
    #[inline(always)]
    fn lane_in(&self) -> LaneIn {
        self.x
    }
    #[inline(always)]
    fn operands(&self, lane: usize, _mask_in: bool) -> [u64; 4] {
        // (A lane mask input is in `c`, splatted.)
        [self.a[lane], self.b[lane], self.c[lane], self.d[lane]]
    }
    #[inline(always)]
    fn put(&mut self, lane: usize, v: u64) {
        self.out[lane] = v;
    }
    #[inline(always)]
    fn set_carry(&mut self, carry: u64) {
        self.carry = carry;
    }
}

avx2_twin! {
    fn ds<'a, 'c>(r: &'a mut WaveRegs, ctx: &'a mut Ctx<'c>, inst: &'a Inst) -> Step = ds_body
}

/// DS: every row of `memops::DS_OPS` by its kind. Loads and stores go
/// through the generic lane loop [`xfer_lanes`]; an access outside the
/// work-group's LDS is a memory violation (its flat address in the shared
/// aperture is reported).
#[inline(always)]
fn ds_body(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Ds {
        op,
        vdst,
        addr,
        data0,
        data1,
        offset0,
        offset1,
        gds,
    } = inst.kind
    else {
        return Step::IllegalInstruction;
    };
    if gds {
        // gfx90a has no GDS (see the `memops` module docs).
        return Step::IllegalInstruction;
    }
    let single_off = (offset1 as u32) << 8 | offset0 as u32;
    let base = r.vgpr.get(addr as usize).copied().unwrap_or([0; LANES]);
    let kind = op.kind();
    let lds = &mut *ctx.lds;
    // One element at `base[lane] + off[e]` into or from register
    // `reg[e]`.
    let mut element = |r: &mut WaveRegs, x: Xfer, reg: u8, off: u32| {
        xfer_lanes(r, x, reg, reg, r.exec, |lane, k, buf| {
            let a = base[lane].wrapping_add(off).wrapping_add(4 * k as u32);
            memops::mem_xfer(lds, a as usize, buf, x.load, SHARED_APERTURE + a as u64)
        })
    };
    match kind {
        DsKind::Read { bytes, signed, d16 } => {
            let x = Xfer {
                bytes,
                load: true,
                signed,
                d16,
                hi: false,
            };
            element(r, x, vdst, single_off)
        }
        DsKind::Write { bytes, hi } => {
            let x = Xfer {
                bytes,
                load: false,
                signed: false,
                d16: 0,
                hi,
            };
            element(r, x, data0, single_off)
        }
        DsKind::Read2 { dwords, st64 } | DsKind::Write2 { dwords, st64 } => {
            let load = matches!(kind, DsKind::Read2 { .. });
            let unit = 4 * dwords as u32 * if st64 { 64 } else { 1 };
            let x = Xfer {
                bytes: 4 * dwords,
                load,
                signed: false,
                d16: 0,
                hi: false,
            };
            let regs = if load {
                [vdst, vdst.wrapping_add(dwords)]
            } else {
                [data0, data1]
            };
            for (reg, off) in regs.into_iter().zip([offset0, offset1]) {
                let step = element(r, x, reg, off as u32 * unit);
                if step != Step::Continue {
                    return step;
                }
            }
            Step::Continue
        }
        DsKind::Atomic {
            dwords,
            rtn,
            two,
            apply,
        } => {
            let n = 4 * dwords as usize;
            let bits = 32 * dwords as u32;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            let exec = r.exec;
            for (lane, b) in base.iter().enumerate() {
                if exec >> lane & 1 == 0 {
                    continue;
                }
                let a = b.wrapping_add(single_off);
                let at = a as usize;
                let Some(mem) = ctx.lds.get_mut(at..at + n) else {
                    return Step::MemoryViolation {
                        addr: SHARED_APERTURE + a as u64,
                    };
                };
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(mem);
                let old = u64::from_le_bytes(b);
                let d0 = r.vget(VSrc::Vgpr(data0 as usize, dwords), lane);
                // cmpst: DATA0 is the compare value, DATA1 the new one.
                let (d, cmp) = if two {
                    (r.vget(VSrc::Vgpr(data1 as usize, dwords), lane), d0)
                } else {
                    (d0, 0)
                };
                let new = apply(old, d & mask, cmp & mask, bits) & mask;
                mem.copy_from_slice(&new.to_le_bytes()[..n]);
                if rtn {
                    r.vset(vdst as usize, dwords, lane, old);
                }
            }
            Step::Continue
        }
        DsKind::Swizzle | DsKind::Permute | DsKind::Bpermute => {
            ds_cross_lane(r, kind, vdst, addr, data0, single_off)
        }
        DsKind::Xchg2 { .. } | DsKind::CondXchg | DsKind::Append { .. } | DsKind::AddTid { .. } => {
            let data = [data0, data1];
            memops::ds_one_off(r, ctx.lds, kind, vdst, addr, data, offset0, offset1)
        }
    }
}

/// `ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`: lanes exchange
/// values through the LDS crossbar without touching LDS memory.
#[allow(clippy::needless_range_loop)] // lanes index several arrays at once
fn ds_cross_lane(r: &mut WaveRegs, kind: DsKind, vdst: u8, addr: u8, data0: u8, off: u32) -> Step {
    let exec = r.exec;
    let get =
        |r: &WaveRegs, reg: u8, lane: usize| r.vgpr.get(reg as usize).map(|v| v[lane]).unwrap_or(0);
    let mut out = [0u32; LANES];
    let mut written = 0u64;
    for lane in 0..LANES {
        if exec >> lane & 1 == 0 {
            continue;
        }
        match kind {
            DsKind::Swizzle => {
                let src = if off & 0x8000 != 0 {
                    let q = (off >> (2 * (lane & 3))) & 3;
                    (lane & !3) | q as usize
                } else {
                    let (and, or, xor) = (off & 0x1f, (off >> 5) & 0x1f, (off >> 10) & 0x1f);
                    let l = lane as u32 & 0x1f;
                    (lane & !0x1f) | (((l & and) | or) ^ xor) as usize
                };
                out[lane] = if exec >> src & 1 != 0 {
                    get(r, addr, src)
                } else {
                    0
                };
                written |= 1 << lane;
            }
            DsKind::Bpermute => {
                let src = ((get(r, addr, lane).wrapping_add(off) >> 2) & 63) as usize;
                out[lane] = if exec >> src & 1 != 0 {
                    get(r, data0, src)
                } else {
                    0
                };
                written |= 1 << lane;
            }
            _ => {
                let dst = ((get(r, addr, lane).wrapping_add(off) >> 2) & 63) as usize;
                out[dst] = get(r, data0, lane);
                written |= 1 << dst;
            }
        }
    }
    for lane in 0..LANES {
        if exec >> lane & 1 != 0 {
            let v = if written >> lane & 1 != 0 {
                out[lane]
            } else {
                0
            };
            r.vset(vdst as usize, 1, lane, v as u64);
        }
    }
    Step::Continue
}

/// How to move the `bytes`-byte slots of lanes `first..=last` of a
/// lane-packed buffer (slot `lane - first`): one access when every lane is
/// active and the addresses form one block (the fast path), else one per
/// active lane, all handed to the memory at once: their `(address, slot
/// offset)` pairs are written to `lanes` (the caller's, so that no 1 KiB
/// array is returned by value).
#[inline(always)]
fn lanes_xfer(
    exec: u64,
    first: usize,
    last: usize,
    bytes: usize,
    addrs: &[u64; LANES],
    lanes: &mut [(u64, usize); LANES],
) -> LaneXfer {
    if lanes_contiguous(exec, first, last, bytes, addrs) {
        return LaneXfer::Block(addrs[first], (last - first + 1) * bytes);
    }
    let mut n = 0;
    let mut rest = exec;
    while rest != 0 {
        let lane = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        lanes[n] = (addrs[lane], (lane - first) * bytes);
        n += 1;
    }
    LaneXfer::Lanes(n)
}

/// Whether the lanes `first..=last` are all in `exec` and address one
/// block, `bytes` apart.
#[inline(always)]
fn lanes_contiguous(
    exec: u64,
    first: usize,
    last: usize,
    bytes: usize,
    addrs: &[u64; LANES],
) -> bool {
    if (exec >> first).count_ones() as usize != last - first + 1 {
        return false;
    }
    // Branch-free over all lanes (it vectorises), those outside
    // `first..=last` masked out.
    let a0 = addrs[first];
    let mut differ = 0u64;
    for (l, &a) in addrs.iter().enumerate() {
        let want = a0.wrapping_add(l.wrapping_sub(first).wrapping_mul(bytes) as u64);
        let inside = 0u64.wrapping_sub(((l >= first) & (l <= last)) as u64);
        differ |= (a ^ want) & inside;
    }
    differ == 0
}

/// How [`lanes_xfer`] moves the staging buffer.
enum LaneXfer {
    /// One access: the address and the length.
    Block(u64, usize),
    /// The first `n` `(address, slot offset)` pairs of the caller's array,
    /// one per active lane ([`GlobalMemory::read_lanes`],
    /// [`GlobalMemory::write_lanes`]).
    Lanes(usize),
}

avx2_twin! {
    /// FLAT/GLOBAL/SCRATCH: [`flat_body`], compiled for AVX2 as well (the
    /// per-lane address loops vectorise).
    fn flat<'a, 'c>(r: &'a mut WaveRegs, ctx: &'a mut Ctx<'c>, inst: &'a Inst) -> Step = flat_body
}

#[allow(clippy::needless_range_loop)] // lanes index several arrays at once
#[inline(always)]
fn flat_body(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Flat {
        seg,
        op,
        vdst,
        addr,
        data,
        saddr,
        offset,
        glc,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    if *seg == FlatSeg::Scratch {
        return scratch(r, ctx, inst);
    }
    let base = saddr.map(|s| r.sget(s as u16, 2, None));
    let off = *offset as i64 as u64;
    let mut addrs = [0u64; LANES];
    // The address rows read once (zeros past the allocation): loops
    // without branches, which vectorise.
    let lo = r.vgpr.get(*addr as usize).unwrap_or(&ZERO_ROW);
    match base {
        Some(b) => {
            for (a, &v) in addrs.iter_mut().zip(lo) {
                *a = b.wrapping_add(v as u64).wrapping_add(off);
            }
        }
        None => {
            let hi = r.vgpr.get(*addr as usize + 1).unwrap_or(&ZERO_ROW);
            for ((a, &l), &h) in addrs.iter_mut().zip(lo).zip(hi) {
                *a = (l as u64 | (h as u64) << 32).wrapping_add(off);
            }
        }
    }
    let bytes = op.bytes() as usize;
    // In the shared or the private aperture (4 GiB each from its base).
    let in_aperture = |a: u64| {
        (a.wrapping_sub(SHARED_APERTURE) < APERTURE_SIZE)
            | (a.wrapping_sub(PRIVATE_APERTURE) < APERTURE_SIZE)
    };
    if *seg == FlatSeg::Flat {
        let mut any = false;
        for (lane, &a) in addrs.iter().enumerate() {
            any |= (exec >> lane & 1 != 0) & in_aperture(a);
        }
        if any {
            return flat_apertures(r, ctx, op, *vdst, *data, &addrs);
        }
    }
    let first = if exec == 0 {
        return Step::Continue;
    } else {
        exec.trailing_zeros() as usize
    };
    let last = 63 - exec.leading_zeros() as usize;
    let Some(x) = op.xfer() else {
        return atomic_lanes(r, ctx, *op, *vdst, *data, *glc, &addrs);
    };
    // A dword per lane at addresses that are not one block (gathers and
    // scatters): straight between the VGPR row and the memory
    // (`GlobalMemory::read_dwords`/`write_dwords`), no staging buffer.
    if bytes == 4 && x.d16 == 0 && !x.hi && !lanes_contiguous(exec, first, last, bytes, &addrs) {
        let reg = if x.load { *vdst } else { *data };
        if x.load {
            let mut got = [0u32; LANES];
            if let Err(addr) = ctx.mem.read_dwords(&addrs, exec, &mut got) {
                return Step::MemoryViolation { addr };
            }
            if let Some(row) = r.vgpr.get_mut(reg as usize) {
                blend_row(row, &got, exec);
            }
            return Step::Continue;
        }
        let row = r.vgpr.get(reg as usize).unwrap_or(&ZERO_ROW);
        return match ctx.mem.write_dwords(&addrs, exec, row) {
            Ok(()) => Step::Continue,
            Err(addr) => Step::MemoryViolation { addr },
        };
    }
    // The lanes' slots of a lane-packed staging buffer, moved to or from
    // memory by `lanes_xfer` (one access when the lanes are contiguous).
    let mut stack = [0u8; LANES * 16];
    let buf = &mut stack[..(last - first + 1) * bytes];
    let mut lanes = [(0u64, 0usize); LANES];
    let slot = |lane: usize, k: usize| (lane - first) * bytes + 4 * k;
    if x.load {
        let read = match lanes_xfer(exec, first, last, bytes, &addrs, &mut lanes) {
            LaneXfer::Block(a, len) => ctx.mem.read(a, &mut buf[..len]).map_err(|_| a),
            LaneXfer::Lanes(n) => ctx.mem.read_lanes(&lanes[..n], bytes, buf),
        };
        if let Err(addr) = read {
            return Step::MemoryViolation { addr };
        }
        if dwords_xfer(r, x, *vdst, exec, first, buf) {
            return Step::Continue;
        }
        xfer_lanes(r, x, *vdst, *data, exec, |lane, k, w| {
            let o = slot(lane, k);
            copy_small(w, &buf[o..o + w.len()]);
            Ok(())
        })
    } else {
        if !dwords_xfer(r, x, *data, exec, first, buf) {
            xfer_lanes(r, x, *vdst, *data, exec, |lane, k, w| {
                let o = slot(lane, k);
                copy_small(&mut buf[o..o + w.len()], w);
                Ok(())
            });
        }
        let written = match lanes_xfer(exec, first, last, bytes, &addrs, &mut lanes) {
            LaneXfer::Block(a, len) => ctx.mem.write(a, &buf[..len]).map_err(|_| a),
            LaneXfer::Lanes(n) => ctx.mem.write_lanes(&lanes[..n], bytes, buf),
        };
        match written {
            Ok(()) => Step::Continue,
            Err(addr) => Step::MemoryViolation { addr },
        }
    }
}

/// [`xfer_lanes`] of a load or store of whole dwords (no sub-dword
/// extension, no `_d16` half) between the VGPRs from `reg` and a
/// lane-packed staging buffer (lane `l`'s dword `k` at
/// `(l - first) * bytes + 4k`): row by row, and a straight copy when
/// every lane moves one dword. Returns false, doing nothing, for the other
/// accesses.
#[inline]
fn dwords_xfer(
    r: &mut WaveRegs,
    x: Xfer,
    reg: u8,
    exec: u64,
    first: usize,
    buf: &mut [u8],
) -> bool {
    let bytes = x.bytes as usize;
    if !bytes.is_multiple_of(4) || x.d16 != 0 || x.hi {
        return false;
    }
    for k in 0..bytes / 4 {
        let at = |lane: usize| (lane - first) * bytes + 4 * k;
        if x.load {
            let Some(row) = r.vgpr.get_mut(reg as usize + k) else {
                continue;
            };
            if exec == u64::MAX && bytes == 4 {
                for (v, w) in row.iter_mut().zip(buf.chunks_exact(4)) {
                    *v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                }
                continue;
            }
            let mut rest = exec;
            while rest != 0 {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let w = &buf[at(lane)..at(lane) + 4];
                row[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            }
        } else {
            let row = r.vgpr.get(reg as usize + k).unwrap_or(&ZERO_ROW);
            if exec == u64::MAX && bytes == 4 {
                for (&v, w) in row.iter().zip(buf.chunks_exact_mut(4)) {
                    w.copy_from_slice(&v.to_le_bytes());
                }
                continue;
            }
            let mut rest = exec;
            while rest != 0 {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                buf[at(lane)..at(lane) + 4].copy_from_slice(&row[lane].to_le_bytes());
            }
        }
    }
    true
}

/// The generic lane loop of every load and store (DS, FLAT/GLOBAL/SCRATCH,
/// MUBUF): for each lane of `lanes` and each dword `k` of its data (the
/// last one partial for sub-dword and 12-byte accesses),
/// `access(lane, k, bytes)` fills `bytes` from memory (a load; the
/// registers take them after) or stores them (a store; the registers gave
/// them before). A load writes VGPR `vdst + k` (sub-dword: extended as the
/// row says, into its `_d16` half), a store reads VGPR `data + k` (its high
/// half for the `_d16_hi` stores). `Err(addr)` from `access` stops the loop
/// with a memory violation at `addr`.
fn xfer_lanes(
    r: &mut WaveRegs,
    x: Xfer,
    vdst: u8,
    data: u8,
    lanes: u64,
    mut access: impl FnMut(usize, usize, &mut [u8]) -> Result<(), u64>,
) -> Step {
    let bytes = x.bytes as usize;
    if bytes.is_multiple_of(4) && x.d16 == 0 && !x.hi {
        // Whole dwords: no extension, no half to merge or take.
        let mut rest = lanes;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            for k in 0..bytes / 4 {
                if x.load {
                    let mut w = [0u8; 4];
                    if let Err(addr) = access(lane, k, &mut w) {
                        return Step::MemoryViolation { addr };
                    }
                    if let Some(row) = r.vgpr.get_mut(vdst as usize + k) {
                        row[lane] = u32::from_le_bytes(w);
                    }
                } else {
                    let v = r.vgpr.get(data as usize + k).map_or(0, |row| row[lane]);
                    if let Err(addr) = access(lane, k, &mut v.to_le_bytes()) {
                        return Step::MemoryViolation { addr };
                    }
                }
            }
        }
        return Step::Continue;
    }
    let shift = if x.hi { 16 } else { 0 };
    let mut rest = lanes;
    while rest != 0 {
        let lane = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        for k in 0..bytes.div_ceil(4) {
            let n = (bytes - 4 * k).min(4);
            let mut w = [0u8; 4];
            if x.load {
                if let Err(addr) = access(lane, k, &mut w[..n]) {
                    return Step::MemoryViolation { addr };
                }
                let v = sext(u32::from_le_bytes(w), bytes, x.signed);
                let reg = vdst as usize + k;
                if let Some(row) = r.vgpr.get_mut(reg) {
                    row[lane] = d16_merge(row[lane], v, x.d16);
                }
            } else {
                let v = r.vgpr.get(data as usize + k).map_or(0, |row| row[lane]) >> shift;
                w = v.to_le_bytes();
                if let Err(addr) = access(lane, k, &mut w[..n]) {
                    return Step::MemoryViolation { addr };
                }
            }
        }
    }
    Step::Continue
}

/// FLAT/GLOBAL/MUBUF atomic `op` at each EXEC lane's address in global
/// memory: data in `data` (cmpswap: the compare value after it), the old
/// value to `vdst` when `glc` (returning forms).
fn atomic_lanes(
    r: &mut WaveRegs,
    ctx: &mut Ctx<'_>,
    op: FlatOp,
    vdst: u8,
    data: u8,
    glc: bool,
    addrs: &[u64; LANES],
) -> Step {
    let (i, w) = match op {
        FlatOp::Atomic(i) => (i, 1usize),
        FlatOp::Atomic64(i) => (i, 2),
        _ => return Step::IllegalInstruction,
    };
    let exec = r.exec;
    let _guard = (!ctx.mem.atomic_update_lanes()).then(|| ATOMICS.lock());
    let get = |r: &WaveRegs, reg: usize, lane: usize| {
        let lo = r.vgpr.get(reg).map(|x| x[lane]).unwrap_or(0) as u64;
        if w == 2 {
            lo | (r.vgpr.get(reg + 1).map(|x| x[lane]).unwrap_or(0) as u64) << 32
        } else {
            lo
        }
    };
    // The EXEC lanes in order, their addresses, data and compare
    // operands (read before the memory's lock is taken), and the old
    // values.
    let mut lanes = [0u8; LANES];
    let mut at = [0u64; LANES];
    let mut ds = [0u64; LANES];
    let mut cmps = [0u64; LANES];
    let mut n = 0;
    let mut rest = exec;
    while rest != 0 {
        let lane = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        lanes[n] = lane as u8;
        at[n] = addrs[lane];
        ds[n] = get(r, data as usize, lane);
        cmps[n] = get(r, data as usize + w, lane);
        n += 1;
    }
    let mut olds = [0u64; LANES];
    let done = ctx
        .mem
        .update_lanes(&at[..n], 4 * w, &mut olds[..n], &mut |k, old| {
            atomics::apply(&FLAT_ATOMICS, i, old, ds[k], cmps[k], 32 * w as u32)
        });
    // The lanes before a failing one completed (their old values returned).
    let (complete, step) = match done {
        Ok(()) => (n, Step::Continue),
        Err((k, addr)) => (k, Step::MemoryViolation { addr }),
    };
    if glc {
        for k in 0..complete {
            r.vset(vdst as usize, w as u8, lanes[k] as usize, olds[k]);
        }
    }
    step
}

avx2_twin! {
    fn vop3p<'a>(r: &'a mut WaveRegs, inst: &'a Inst) -> Step = vop3p_body
}

#[inline(always)]
fn vop3p_body(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Vop3p(fields) = &inst.kind else {
        return Step::IllegalInstruction;
    };
    let p = *fields;
    if p.op.is_mix() {
        return vop3p_mix(r, inst);
    }
    let exec = r.exec;
    let w = p.op.widths();
    if let Some(shape) = p.op.mfma() {
        // cbsz/abid/blgp (MFMA's broadcast controls, in the op_sel and neg
        // fields) are not modelled: clang emits them only when a kernel
        // asks for them.
        if p.neg_hi != 0 || p.op_sel != 0 || p.op_sel_hi & 4 != 0 || p.neg_lo != 0 {
            return Step::IllegalInstruction;
        }
        return mfma(r, w, shape, p.dst as usize, &p.src, p.op_sel_hi, p.acc_cd);
    }
    let (dst, op_sel, op_sel_hi, neg_lo, neg_hi) =
        (p.dst as usize, p.op_sel, p.op_sel_hi, p.neg_lo, p.neg_hi);
    match p.op {
        Vop3pOp::AccvgprReadB32 => {
            let a = (p.src[0] as usize).saturating_sub(256);
            let v = r.agpr.get(a).copied().unwrap_or([0; LANES]);
            if let Some(d) = r.vgpr.get_mut(dst) {
                blend_row(d, &v, exec);
            }
            return Step::Continue;
        }
        Vop3pOp::AccvgprWriteB32 => {
            let v = match r.vsrc(p.src[0], 1, inst.literal) {
                VSrc::Uniform(v) => [v as u32; LANES],
                VSrc::Vgpr(n, _) => r.vgpr.get(n).copied().unwrap_or([0; LANES]),
            };
            if r.agpr.len() <= dst {
                r.agpr.resize(dst + 1, [0; LANES]);
            }
            blend_row(&mut r.agpr[dst], &v, exec);
            return Step::Continue;
        }
        _ => {}
    }
    // Packed: each half picks its source half by op_sel (low result) and
    // op_sel_hi (high result); neg_lo/neg_hi flip the half's sign bit.
    let half_bits: u32 = if w[0] == 2 { 32 } else { 16 };
    let mask = if half_bits == 32 { 0xffff_ffff } else { 0xffff };
    let nsrc = w.len() - 1;
    // A constant operand of packed f32 math is the 32-bit value in both
    // halves.
    let mut s = [VSrc::Uniform(0); 3];
    for i in 0..nsrc {
        s[i] = match (w[i + 1], inline_const(p.src[i], 1)) {
            (2, Some(c)) => VSrc::Uniform(c | c << 32),
            _ => r.vsrc(p.src[i], w[i + 1], inst.literal),
        };
    }
    let sign = 1u64 << (half_bits - 1);
    for lane in 0..LANES {
        if exec >> lane & 1 == 0 {
            continue;
        }
        let v = [r.vget(s[0], lane), r.vget(s[1], lane), r.vget(s[2], lane)];
        let mut res = 0u64;
        for hi in 0..2u32 {
            let sel = if hi == 0 { op_sel } else { op_sel_hi };
            let negm = if hi == 0 { neg_lo } else { neg_hi };
            let part = |i: usize| {
                let x = if (sel >> i) & 1 != 0 {
                    v[i] >> half_bits
                } else {
                    v[i]
                } & mask;
                (if (negm >> i) & 1 != 0 { x ^ sign } else { x }) as u32
            };
            let h = p.op.half(part(0), part(1), part(2), hi == 1) as u64 & mask;
            res |= h << (hi * half_bits);
        }
        r.vset(dst, w[0], lane, res);
    }
    Step::Continue
}

/// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16` (see
/// [`super::vop3p::fma_mix`]): a source selected as f16 is the half of its
/// register that op_sel picks (an inline float constant: its f16 value).
fn vop3p_mix(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Vop3p(fields) = &inst.kind else {
        return Step::IllegalInstruction;
    };
    let p = *fields;
    let s: [VSrc; 3] = std::array::from_fn(|i| r.vsrc(p.src[i], 1, inst.literal));
    let exec = r.exec;
    for lane in 0..LANES {
        if exec >> lane & 1 == 0 {
            continue;
        }
        let x: [f32; 3] = std::array::from_fn(|i| {
            let bits = r.vget(s[i], lane) as u32;
            let v = if p.op_sel_hi >> i & 1 == 0 {
                f32::from_bits(bits)
            } else if matches!(p.src[i], 240..=248) {
                f16_to_f32(f64_to_f16(f32::from_bits(bits) as f64))
            } else if p.op_sel >> i & 1 != 0 {
                f16_to_f32((bits >> 16) as u16)
            } else {
                f16_to_f32(bits as u16)
            };
            let v = if p.neg_hi >> i & 1 != 0 { v.abs() } else { v };
            if p.neg_lo >> i & 1 != 0 {
                -v
            } else {
                v
            }
        });
        let old = r.vgpr.get(p.dst as usize).map_or(0, |v| v[lane]);
        let v = super::vop3p::fma_mix(p.op, x, p.clamp, old);
        r.vset(p.dst as usize, 1, lane, v as u64);
    }
    Step::Continue
}

/// An MFMA (`v_mfma_*`): A and B from VGPRs or (op_sel_hi bits 0/1)
/// accumulation registers, C and D in accumulation registers with `acc_cd`
/// (else VGPRs); the whole wave takes part whatever EXEC is. The layouts
/// and arithmetic are [`super::vop3p::mfma`]'s.
fn mfma(
    r: &mut WaveRegs,
    w: &[u8],
    shape: MfmaShape,
    dst: usize,
    src: &[u16; 3],
    acc_ab: u8,
    acc_cd: bool,
) -> Step {
    // Operands staged in fixed arrays (at most 2 A/B and 32 C/D registers):
    // no allocation per instruction.
    // An f64 operand from an SGPR pair or inline constant is 64 bits wide.
    let wide = shape.input == super::vop3p::MfmaIn::F64;
    let rows = |r: &WaveRegs, out: &mut [[u32; LANES]], code: u16, acc: bool| {
        for (k, row) in out.iter_mut().enumerate() {
            *row = if code >= 256 {
                let regs = if acc { &r.agpr } else { &r.vgpr };
                regs.get(code as usize - 256 + k)
                    .copied()
                    .unwrap_or([0; LANES])
            } else if wide {
                [(r.sget(code, 2, None) >> (32 * (k % 2))) as u32; LANES]
            } else {
                // VOP3P has no literal.
                [r.sget(code, 1, None) as u32; LANES]
            };
        }
    };
    let (na, nb, nc) = (w[1] as usize, w[2] as usize, w[3] as usize);
    let (mut a, mut b) = ([[0u32; LANES]; 2], [[0u32; LANES]; 2]);
    let mut c = [[0u32; LANES]; 32];
    let mut d = [[0u32; LANES]; 32];
    if na > 2 || nb > 2 || nc > 32 || (w[0] as usize) > 32 {
        return Step::IllegalInstruction;
    }
    rows(r, &mut a[..na], src[0], acc_ab & 1 != 0);
    rows(r, &mut b[..nb], src[1], acc_ab & 2 != 0);
    rows(r, &mut c[..nc], src[2], acc_cd);
    let d = &mut d[..w[0] as usize];
    super::vop3p::mfma(shape, &a[..na], &b[..nb], &c[..nc], d);
    let regs = if acc_cd { &mut r.agpr } else { &mut r.vgpr };
    if dst + d.len() > 256 {
        return Step::IllegalInstruction;
    }
    if regs.len() < dst + d.len() {
        if !acc_cd {
            return Step::IllegalInstruction;
        }
        regs.resize(dst + d.len(), [0; LANES]);
    }
    regs[dst..dst + d.len()].copy_from_slice(d);
    Step::Continue
}

/// Byte `lane_off` of `lane` in the wave's swizzled private memory (the
/// hardware's scratch layout: dword `k` of lane `l` at `k * 256 + l * 4`).
pub fn swizzle_private(lane: usize, lane_off: u64) -> u64 {
    (lane_off / 4) * 4 * LANES as u64 + lane as u64 * 4 + lane_off % 4
}

/// FLAT loads and stores whose generic addresses fall in the LDS or private
/// aperture (per lane; a lane's address may also be global).
#[allow(clippy::needless_range_loop)] // lanes index several arrays at once
fn flat_apertures(
    r: &mut WaveRegs,
    ctx: &mut Ctx<'_>,
    op: &FlatOp,
    vdst: u8,
    data: u8,
    addrs: &[u64; LANES],
) -> Step {
    // Atomics on LDS/private addresses through FLAT: not supported.
    let Some(x) = op.xfer() else {
        return Step::IllegalInstruction;
    };
    if let Some(step) = private_dwords(r, ctx.scratch, x, vdst, data, addrs) {
        return step;
    }
    let (lds, scratch, global) = (&mut *ctx.lds, &mut *ctx.scratch, ctx.mem);
    xfer_lanes(r, x, vdst, data, r.exec, |lane, k, buf| {
        let a = addrs[lane] + 4 * k as u64;
        // (memory, byte index) of this dword.
        let (mem, at): (&mut [u8], usize) =
            if (SHARED_APERTURE..SHARED_APERTURE + APERTURE_SIZE).contains(&a) {
                (&mut *lds, (a - SHARED_APERTURE) as usize)
            } else if (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&a) {
                let off = swizzle_private(lane, a - PRIVATE_APERTURE) as usize;
                (&mut *scratch, off)
            } else if x.load {
                return global.read(a, buf).map_err(|_| a);
            } else {
                return global.write(a, buf).map_err(|_| a);
            };
        memops::mem_xfer(mem, at, buf, x.load, a)
    })
}

/// The fast path of [`flat_apertures`]: a load or store of whole dwords
/// whose EXEC lanes all address the wave's private memory at dword-aligned
/// offsets, every dword inside it (the `-O0` stack through FLAT and
/// `scratch_*`). Dword `k` of lane `l` at private offset `off` sits at
/// byte `(off / 4 + k) * 256 + 4 * l` of the swizzled scratch block
/// ([`swizzle_private`]), so the access moves straight between the VGPR
/// rows and the block (a row copy when every lane is active at the same
/// offset). `None`, having done nothing, for any other access (sub-dword,
/// `_d16`, another aperture or global memory, unaligned, out of range):
/// the generic lane loop then does it, faults included.
fn private_dwords(
    r: &mut WaveRegs,
    scratch: &mut [u8],
    x: Xfer,
    vdst: u8,
    data: u8,
    addrs: &[u64; LANES],
) -> Option<Step> {
    let bytes = x.bytes as usize;
    let exec = r.exec;
    if !bytes.is_multiple_of(4) || x.d16 != 0 || x.hi || exec == 0 {
        return None;
    }
    let dwords = bytes / 4;
    // Whether every EXEC lane has the first one's address (the stack
    // through `scratch_*` and SGPR-based FLAT: branch-free, vectorises).
    let a0 = addrs[exec.trailing_zeros() as usize];
    let m = lane_masks64(exec);
    let differ = addrs
        .iter()
        .zip(&m)
        .fold(0, |d, (&a, &m)| d | ((a ^ a0) & m));
    let uniform = differ == 0;
    // The lane's last dword must lie inside the block.
    let fits =
        |row: usize, lane: usize| ((row + dwords - 1) * LANES + lane + 1) * 4 <= scratch.len();
    let in_private = |off: u64| off < APERTURE_SIZE && off.is_multiple_of(4);
    let off0 = a0.wrapping_sub(PRIVATE_APERTURE);
    let row0 = (off0 / 4) as usize;
    // Each EXEC lane's first element (dword index into the block).
    let mut first = [0usize; LANES];
    if uniform {
        if !in_private(off0) || !fits(row0, 63 - exec.leading_zeros() as usize) {
            return None;
        }
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            first[lane] = row0 * LANES + lane;
        }
    } else {
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let off = addrs[lane].wrapping_sub(PRIVATE_APERTURE);
            let row = (off / 4) as usize;
            if !in_private(off) || !fits(row, lane) {
                return None;
            }
            first[lane] = row * LANES + lane;
        }
    }
    for k in 0..dwords {
        let reg = if x.load { vdst } else { data } as usize + k;
        if uniform && exec == u64::MAX {
            // Every lane at one offset: dword `k` is one 256-byte block.
            let at = (row0 + k) * LANES * 4;
            let block = &mut scratch[at..at + LANES * 4];
            if x.load {
                if let Some(row) = r.vgpr.get_mut(reg) {
                    for (v, w) in row.iter_mut().zip(block.chunks_exact(4)) {
                        *v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                    }
                }
            } else {
                let row = r.vgpr.get(reg).unwrap_or(&ZERO_ROW);
                for (&v, w) in row.iter().zip(block.chunks_exact_mut(4)) {
                    w.copy_from_slice(&v.to_le_bytes());
                }
            }
            continue;
        }
        let mut rest = exec;
        if x.load {
            let Some(row) = r.vgpr.get_mut(reg) else {
                continue;
            };
            while rest != 0 {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let at = (first[lane] + k * LANES) * 4;
                let w = &scratch[at..at + 4];
                row[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            }
        } else {
            let row = r.vgpr.get(reg).unwrap_or(&ZERO_ROW);
            while rest != 0 {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let at = (first[lane] + k * LANES) * 4;
                scratch[at..at + 4].copy_from_slice(&row[lane].to_le_bytes());
            }
        }
    }
    Some(Step::Continue)
}

/// `scratch_*` (FLAT scratch): each lane's address is an offset into its own
/// private memory, SGPR `saddr` (when not `off`) or VGPR `vaddr`, plus the
/// instruction offset; the hardware swizzles it as it swizzles FLAT accesses
/// to the private aperture, so the access is one to
/// `PRIVATE_APERTURE + offset`. Out of range is a memory violation at that
/// aperture address.
#[inline(never)]
fn scratch(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Flat {
        op,
        vdst,
        addr,
        data,
        saddr,
        offset,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let base = saddr.map(|s| r.sget(s as u16, 1, None) as u32);
    let mut addrs = [0u64; LANES];
    match base {
        // SGPR (or `off`) address: one offset for every lane.
        Some(b) => addrs = [PRIVATE_APERTURE + b.wrapping_add(*offset as u32) as u64; LANES],
        None => {
            let va = r.vgpr.get(*addr as usize).unwrap_or(&ZERO_ROW);
            for (a, &v) in addrs.iter_mut().zip(va) {
                *a = PRIVATE_APERTURE + v.wrapping_add(*offset as u32) as u64;
            }
        }
    }
    flat_apertures(r, ctx, op, *vdst, *data, &addrs)
}

/// `dst.copy_from_slice(src)`, with the dword case (most lane accesses of
/// loads and stores) one 4-byte move instead of a `memcpy` call.
#[inline(always)]
pub(super) fn copy_small(dst: &mut [u8], src: &[u8]) {
    if let (Ok(d), Ok(s)) = (
        <&mut [u8; 4]>::try_from(&mut *dst),
        <&[u8; 4]>::try_from(src),
    ) {
        *d = *s;
        return;
    }
    match (dst, src) {
        // Byte and short accesses: moves too, not `memcpy` calls.
        ([d0], [s0]) => *d0 = *s0,
        ([d0, d1], [s0, s1]) => {
            *d0 = *s0;
            *d1 = *s1;
        }
        (d, s) => d.copy_from_slice(s),
    }
}

/// A `_d16` load's register value: `v` in the low (`D16_LO`) or high
/// (`D16_HI`) half of `old`, the other half kept; `v` itself otherwise.
fn d16_merge(old: u32, v: u32, d16: u8) -> u32 {
    match d16 {
        D16_LO => (old & 0xffff_0000) | (v & 0xffff),
        D16_HI => (old & 0xffff) | v << 16,
        _ => v,
    }
}

/// Sign-extends a sub-dword load.
fn sext(v: u32, bytes: usize, signed: bool) -> u32 {
    match (bytes, signed) {
        (1, true) => v as u8 as i8 as i32 as u32,
        (2, true) => v as u16 as i16 as i32 as u32,
        _ => v,
    }
}

avx2_twin! {
    fn mubuf<'a, 'c>(r: &'a mut WaveRegs, ctx: &'a mut Ctx<'c>, inst: &'a Inst) -> Step = mubuf_body
}

/// MUBUF loads and stores, served from the wave's private memory as a
/// swizzled scratch buffer does it on the hardware: the wave-level address
/// of lane `l` is `base(srsrc) + soffset + swizzle(offset (+ vaddr with
/// offen), l)`, with 4-byte elements and an index stride of 64.
#[inline(always)]
fn mubuf_body(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Mubuf {
        op,
        vdata,
        vaddr,
        srsrc,
        soffset,
        offset,
        offen,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    if r.sget(*srsrc as u16 + 3, 1, None) as u32 & RSRC3_ADD_TID_ENABLE == 0 {
        return mubuf_global(r, ctx, inst);
    }
    let exec = r.exec;
    let base = r.sget(*srsrc as u16, 2, None) & 0xffff_ffff_ffff;
    let soff = r.sget(*soffset as u16, 1, None);
    let Some(x) = op.xfer() else {
        return Step::IllegalInstruction;
    };
    let (bytes, load) = (x.bytes as usize, x.load);
    let len = ctx.scratch.len() as u64;
    let wave_base = base.wrapping_add(soff);
    if bytes.is_multiple_of(4) && offset.is_multiple_of(4) && wave_base.is_multiple_of(4) {
        // Whole dwords at dword offsets (spills, private arrays): dword `k`
        // of a lane sits at wave_base + swizzle(lane_off + 4k).
        let dwords = bytes / 4;
        // The lane offset when every EXEC lane has the same one: the
        // spills (no `offen`), and `offen` accesses whose VGPR holds one
        // value in every EXEC lane (a private array indexed by a uniform
        // value, checked branch-free).
        let uniform_off = if !*offen {
            Some(*offset as u64)
        } else {
            match r.vgpr.get(*vaddr as usize) {
                None => Some(*offset as u64),
                Some(v) => {
                    let v0 = v[exec.trailing_zeros() as usize & (LANES - 1)];
                    let m = lane_masks(exec);
                    let differ = v
                        .iter()
                        .zip(&m)
                        .fold(0u32, |d, (&x, &m)| d | ((x ^ v0) & m));
                    (differ == 0).then_some(*offset as u64 + v0 as u64)
                }
            }
        };
        if let Some(lane_off) = uniform_off.filter(|o| o.is_multiple_of(4)) {
            // Every lane at the same lane offset: dword `k` of the wave is
            // one 256-byte block, lane `l` at 4 * l.
            let first = wave_base.wrapping_add(swizzle_private(0, lane_off));
            let end = first.checked_add((dwords * 4 * LANES) as u64);
            if end.is_some_and(|e| e <= len) {
                let first = first as usize;
                let m = lane_masks(exec);
                for k in 0..dwords {
                    let at = first + k * 4 * LANES;
                    let block = &mut ctx.scratch[at..at + 4 * LANES];
                    let Some(reg) = r.vgpr.get_mut(*vdata as usize + k) else {
                        continue;
                    };
                    // Straight between the row and the block (a copy under
                    // a full EXEC), else blended with the EXEC lanes' masks.
                    if exec == u64::MAX {
                        if load {
                            for (d, w) in reg.iter_mut().zip(block.chunks_exact(4)) {
                                *d = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                            }
                        } else {
                            for (&v, w) in reg.iter().zip(block.chunks_exact_mut(4)) {
                                w.copy_from_slice(&v.to_le_bytes());
                            }
                        }
                        continue;
                    }
                    if load {
                        for ((d, w), &m) in reg.iter_mut().zip(block.chunks_exact(4)).zip(&m) {
                            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                            *d = (*d & !m) | (v & m);
                        }
                    } else {
                        for ((&v, w), &m) in reg.iter().zip(block.chunks_exact_mut(4)).zip(&m) {
                            let old = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                            w.copy_from_slice(&((old & !m) | (v & m)).to_le_bytes());
                        }
                    }
                }
                return Step::Continue;
            }
        }
        let va = r.vgpr.get(*vaddr as usize).copied();
        let mut at = [0usize; LANES];
        for lane in 0..LANES {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let lane_off = *offset as u64
                + match (*offen, &va) {
                    (true, Some(v)) => v[lane] as u64,
                    _ => 0,
                };
            if !lane_off.is_multiple_of(4) {
                return mubuf_bytes(r, ctx, inst);
            }
            let first = wave_base.wrapping_add(swizzle_private(lane, lane_off));
            let last = first.wrapping_add(((dwords - 1) * 4 * LANES) as u64);
            if first.checked_add(4).is_none_or(|e| e > len)
                || last.checked_add(4).is_none_or(|e| e > len)
            {
                return mubuf_bytes(r, ctx, inst);
            }
            at[lane] = first as usize;
        }
        for k in 0..dwords {
            let reg = *vdata as usize + k;
            if load {
                let Some(dst) = r.vgpr.get_mut(reg) else {
                    continue;
                };
                for lane in 0..LANES {
                    if exec >> lane & 1 != 0 {
                        let a = at[lane] + k * 4 * LANES;
                        let w = &ctx.scratch[a..a + 4];
                        dst[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                    }
                }
            } else {
                let src = r.vgpr.get(reg).copied().unwrap_or([0; LANES]);
                for lane in 0..LANES {
                    if exec >> lane & 1 != 0 {
                        let a = at[lane] + k * 4 * LANES;
                        ctx.scratch[a..a + 4].copy_from_slice(&src[lane].to_le_bytes());
                    }
                }
            }
        }
        return Step::Continue;
    }
    mubuf_bytes(r, ctx, inst)
}

/// Word 3 of a buffer resource: ADD_TID_ENABLE, the swizzled per-lane
/// addressing of scratch (how the runtime's private segment buffer is set
/// up; other resources address global memory).
pub const RSRC3_ADD_TID_ENABLE: u32 = 1 << 23;

/// MUBUF through a buffer resource to global memory (a raw buffer, or a
/// structured one with `idxen`): the address is base + soffset +
/// index * stride + offset, plus the VGPR offset with `offen`. Out of range
/// (offset + size past num_records, or the index past it when structured),
/// loads return 0 and stores and atomics do nothing.
#[allow(clippy::needless_range_loop)] // lanes index several arrays at once
fn mubuf_global(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Mubuf {
        op,
        vdata,
        vaddr,
        srsrc,
        soffset,
        offset,
        offen,
        idxen,
        glc,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let word = |k: u16| r.sget(*srsrc as u16 + k, 1, None) as u32;
    let (w0, w1, num_records) = (word(0), word(1), word(2) as u64);
    let base = w0 as u64 | ((w1 & 0xffff) as u64) << 32;
    let stride = ((w1 >> 16) & 0x3fff) as u64;
    let soff = r.sget(*soffset as u16, 1, None);
    let bytes = op.bytes() as u64;
    let mut in_range = 0u64;
    let mut addrs = [0u64; LANES];
    for (lane, a) in addrs.iter_mut().enumerate() {
        if r.exec >> lane & 1 == 0 {
            continue;
        }
        let v = |k: usize| r.vgpr.get(*vaddr as usize + k).map_or(0, |x| x[lane]) as u64;
        let index = if *idxen { v(0) } else { 0 };
        let voff = match (*offen, *idxen) {
            (true, true) => v(1),
            (true, false) => v(0),
            _ => 0,
        };
        let off = *offset as u64 + voff;
        let ok = if stride == 0 {
            off + bytes <= num_records
        } else {
            index < num_records
        };
        in_range |= (ok as u64) << lane;
        *a = base
            .wrapping_add(soff)
            .wrapping_add(index * stride)
            .wrapping_add(off);
    }
    let exec = r.exec;
    match op {
        FlatOp::Atomic(_) | FlatOp::Atomic64(_) => {
            r.exec = exec & in_range;
            let step = atomic_lanes(r, ctx, *op, *vdata, *vdata, *glc, &addrs);
            r.exec = exec;
            step
        }
        _ => {
            let Some(x) = op.xfer() else {
                return Step::IllegalInstruction;
            };
            // Out of range: a load gives 0, a store does nothing.
            let lanes = if x.load { exec } else { exec & in_range };
            let mem = ctx.mem;
            xfer_lanes(r, x, *vdata, *vdata, lanes, |lane, k, buf| {
                let a = addrs[lane] + 4 * k as u64;
                if in_range >> lane & 1 == 0 {
                    buf.fill(0);
                    Ok(())
                } else if x.load {
                    mem.read(a, buf).map_err(|_| a)
                } else {
                    mem.write(a, buf).map_err(|_| a)
                }
            })
        }
    }
}

/// MUBUF scratch accesses byte by byte (sub-dword, unaligned, or faulting).
fn mubuf_bytes(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Mubuf {
        op,
        vdata,
        vaddr,
        srsrc,
        soffset,
        offset,
        offen,
        ..
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    let base = r.sget(*srsrc as u16, 2, None) & 0xffff_ffff_ffff;
    let soff = r.sget(*soffset as u16, 1, None);
    let Some(x) = op.xfer() else {
        return Step::IllegalInstruction;
    };
    let va = r.vgpr.get(*vaddr as usize).copied().unwrap_or([0; LANES]);
    let scratch = &mut *ctx.scratch;
    xfer_lanes(r, x, *vdata, *vdata, exec, |lane, k, buf| {
        let lane_off = *offset as u64 + if *offen { va[lane] as u64 } else { 0 };
        let wave = base
            .wrapping_add(soff)
            .wrapping_add(swizzle_private(lane, lane_off + 4 * k as u64));
        let fault = super::memory::PRIVATE_APERTURE.wrapping_add(wave);
        let at = usize::try_from(wave).map_err(|_| fault)?;
        memops::mem_xfer(scratch, at, buf, x.load, fault)
    })
}

/// SDWA: the selected bytes/words of each operand (zero- or sign-extended)
/// go through the ordinary operation; the result is placed per `dst_sel`
/// with the other bits padded, sign-extended or preserved. The operands are
/// staged in two scratch VGPRs past the wave's allocation.
#[allow(clippy::needless_range_loop)] // operand i of several arrays
#[inline(never)]
fn sdwa(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Sdwa {
        op,
        dst,
        sdst,
        src,
        sdwa,
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let exec = r.exec;
    let pick = |v: u32, sel: u8, sext: bool| -> u32 {
        let (shift, bits) = match sel {
            0..=3 => (8 * sel as u32, 8),
            4 | 5 => (16 * (sel as u32 - 4), 16),
            _ => return v,
        };
        let x = (v >> shift) & ((1u32 << bits) - 1);
        if sext && x >> (bits - 1) != 0 {
            x | !((1u32 << bits) - 1)
        } else {
            x
        }
    };
    // The selected fields of both sources, staged per lane.
    let mut staged = [[0u32; LANES]; 2];
    for (i, out) in staged.iter_mut().enumerate() {
        let u;
        let row = row32!(r, src[i], None, u);
        let (sel, sext) = (sdwa.src_sel[i], sdwa.sext[i]);
        for (o, &v) in out.iter_mut().zip(row.iter()) {
            *o = pick(v, sel, sext);
        }
    }
    let abs = sdwa.abs[0] as u8 | (sdwa.abs[1] as u8) << 1;
    let neg = sdwa.neg[0] as u8 | (sdwa.neg[1] as u8) << 1;
    let out = match op {
        VOp::Cmp(c) => {
            let mask = if c.src_widths() == (1, 1) {
                sdwa_cmp(*c, &staged[0], &staged[1], abs, neg) & exec
            } else {
                let mut mask = 0u64;
                for lane in 0..LANES {
                    let (a, b) = (staged[0][lane] as u64, staged[1][lane] as u64);
                    if exec >> lane & 1 != 0 && cmp(*c, a, b, abs, neg) {
                        mask |= 1 << lane;
                    }
                }
                mask
            };
            r.sset(sdst.map(|s| s as u16).unwrap_or(106), 2, mask);
            if c.x {
                r.exec = mask;
            }
            Step::Continue
        }
        VOp::Alu(a) => {
            let base = r.vgpr.len();
            r.vgpr.extend_from_slice(&staged);
            r.vgpr.push([0; LANES]);
            let codes = [256 + base as u16, 257 + base as u16, 0];
            let d = (base + 2) as u8;
            let step = valu_alu(
                r,
                AluArgs {
                    op: *a,
                    e64: true,
                    dst: d,
                    sdst: 0,
                    src: &codes,
                    abs,
                    neg,
                    lit: None,
                    clamp: sdwa.clamp,
                },
            );
            let dst = *dst as usize;
            for lane in 0..LANES {
                if exec >> lane & 1 == 0 {
                    continue;
                }
                let v = r.vgpr[base + 2][lane];
                let old = r.vgpr.get(dst).map(|x| x[lane]).unwrap_or(0);
                let (shift, bits) = match sdwa.dst_sel {
                    0..=3 => (8 * sdwa.dst_sel as u32, 8),
                    4 | 5 => (16 * (sdwa.dst_sel as u32 - 4), 16),
                    _ => (0, 32),
                };
                let new = if bits == 32 {
                    v
                } else {
                    let field = (v & ((1u32 << bits) - 1)) << shift;
                    let mask = ((1u32 << bits) - 1) << shift;
                    match sdwa.dst_unused {
                        2 => (old & !mask) | field,
                        1 => {
                            let top = shift + bits;
                            let neg = (field >> (top - 1)) & 1 != 0;
                            if neg && top < 32 {
                                field | (u32::MAX << top)
                            } else {
                                field
                            }
                        }
                        _ => field,
                    }
                };
                if let Some(x) = r.vgpr.get_mut(dst) {
                    x[lane] = new;
                }
            }
            r.vgpr.truncate(base);
            step
        }
    };
    out
}

/// An SDWA compare of staged 32-bit operands, compiled for AVX2 as well.
fn sdwa_cmp(c: VCmp, a: &[u32; LANES], b: &[u32; LANES], abs: u8, neg: u8) -> u64 {
    simd::run(SdwaCmp { c, a, b, abs, neg })
}

/// [`sdwa_cmp`]'s arguments, for [`simd::run`].
struct SdwaCmp<'a> {
    c: VCmp,
    a: &'a [u32; LANES],
    b: &'a [u32; LANES],
    abs: u8,
    neg: u8,
}

impl simd::Kernel for SdwaCmp<'_> {
    type Out = u64;
    #[inline(always)]
    fn run(self) -> u64 {
        cmp_lanes::<u32>(self.c, self.a, self.b, self.abs, self.neg)
    }
}

/// DPP: src0 comes from the lane the control names; lanes whose source is
/// outside the row/wave or inactive read 0 with bound_ctrl and are not
/// written without it; lanes of disabled rows/banks are not written.
#[inline(never)]
fn dpp(r: &mut WaveRegs, inst: &Inst) -> Step {
    let Kind::Dpp {
        op,
        dst,
        src,
        ctrl,
        bound_ctrl,
        neg,
        abs,
        bank_mask,
        row_mask,
    } = &inst.kind
    else {
        return Step::IllegalInstruction;
    };
    // The control's row (`dpp.rs`), once per instruction.
    let Some(row) = super::dpp::dpp_ctrl(*ctrl) else {
        return Step::IllegalInstruction;
    };
    let source = row.source;
    let exec = r.exec;
    let mut write = 0u64;
    let base = r.vgpr.len();
    r.vgpr.push([0; LANES]);
    for lane in 0..LANES {
        if exec >> lane & 1 == 0
            || (row_mask >> (lane / 16)) & 1 == 0
            || (bank_mask >> ((lane & 15) / 4)) & 1 == 0
        {
            continue;
        }
        let s = source(*ctrl, lane).filter(|&s| exec >> s & 1 != 0);
        let v = match s {
            Some(s) => r.vgpr.get(src[0] as usize).map(|x| x[s]).unwrap_or(0),
            None if *bound_ctrl => 0,
            None => continue,
        };
        r.vgpr[base][lane] = v;
        write |= 1 << lane;
    }
    let codes = [256 + base as u16, 256 + src[1] as u16, 0];
    let abs = abs[0] as u8 | (abs[1] as u8) << 1;
    let neg = neg[0] as u8 | (neg[1] as u8) << 1;
    r.exec = write;
    let out = valu_alu(
        r,
        AluArgs {
            op: *op,
            e64: false,
            dst: *dst,
            sdst: 106,
            src: &codes,
            abs,
            neg,
            lit: None,
            clamp: false,
        },
    );
    r.exec = exec;
    r.vgpr.truncate(base);
    out
}

/// FLAT with AGPR data (`acc`): the accumulation registers are staged in
/// VGPRs past the wave's allocation around the ordinary access.
#[allow(clippy::needless_range_loop)] // lanes index several arrays at once
/// A MUBUF access whose data registers are AGPRs (`-O0` spills of
/// accumulation registers): the AGPRs trade places with the VGPRs of the
/// same numbers, the access runs on those, and they trade back (what a load
/// or returning atomic wrote lands in the AGPRs, under EXEC). When the
/// address VGPRs overlap the data registers, or those are past the wave's
/// VGPRs, the AGPRs are staged in VGPRs past the allocation instead.
#[inline(never)]
fn mubuf_acc(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Mubuf {
        op,
        vdata,
        vaddr,
        offen,
        idxen,
        ..
    } = inst.kind
    else {
        return Step::IllegalInstruction;
    };
    let n = op.data_dwords() as usize;
    let data = vdata as usize..vdata as usize + n;
    let addr_regs = if offen && idxen {
        2
    } else {
        (offen || idxen) as usize
    };
    let addr = vaddr as usize..vaddr as usize + addr_regs;
    let overlap = addr.start < data.end && data.start < addr.end;
    let mut staged = inst.clone();
    if let Kind::Mubuf { acc, .. } = &mut staged.kind {
        *acc = false;
    }
    if !overlap && data.end <= r.vgpr.len() {
        if r.agpr.len() < data.end {
            r.agpr.resize(data.end, [0; LANES]);
        }
        let swap = |r: &mut WaveRegs| {
            for k in data.clone() {
                std::mem::swap(&mut r.vgpr[k], &mut r.agpr[k]);
            }
        };
        swap(r);
        let out = mubuf(r, ctx, &staged);
        swap(r);
        return out;
    }
    let base = r.vgpr.len();
    if base + n > 256 {
        return Step::IllegalInstruction;
    }
    for k in data.clone() {
        let v = r.agpr.get(k).copied().unwrap_or([0; LANES]);
        r.vgpr.push(v);
    }
    if let Kind::Mubuf { vdata: d, .. } = &mut staged.kind {
        *d = base as u8;
    }
    let out = mubuf(r, ctx, &staged);
    if r.agpr.len() < data.end {
        r.agpr.resize(data.end, [0; LANES]);
    }
    // Whatever the access left in the staged rows (a load's blend under
    // EXEC, a store's unchanged data) is the AGPRs' new value.
    for (k, at) in data.enumerate() {
        r.agpr[at] = r.vgpr[base + k];
    }
    r.vgpr.truncate(base);
    out
}

#[inline(never)]
fn flat_acc(r: &mut WaveRegs, ctx: &mut Ctx<'_>, inst: &Inst) -> Step {
    let Kind::Flat { vdst, data, .. } = inst.kind else {
        return Step::IllegalInstruction;
    };
    let base = r.vgpr.len();
    for k in 0..4 {
        let v = r.agpr.get(data as usize + k).copied().unwrap_or([0; LANES]);
        r.vgpr.push(v);
    }
    r.vgpr.extend(std::iter::repeat_n([0; LANES], 4));
    let mut staged = inst.clone();
    if let Kind::Flat {
        vdst: d,
        data: s,
        acc,
        ..
    } = &mut staged.kind
    {
        *s = base as u8;
        *d = (base + 4) as u8;
        *acc = false;
    }
    if base + 8 > 256 {
        r.vgpr.truncate(base);
        return Step::IllegalInstruction;
    }
    let out = flat(r, ctx, &staged);
    let loaded: Vec<[u32; LANES]> = r.vgpr[base + 4..].to_vec();
    r.vgpr.truncate(base);
    let load = matches!(inst.kind, Kind::Flat { op, .. } if op.xfer().is_some_and(|x| x.load));
    if load || matches!(inst.kind, Kind::Flat { glc: true, .. }) {
        let exec = r.exec;
        for (k, v) in loaded.iter().enumerate() {
            let n = vdst as usize + k;
            if r.agpr.len() <= n {
                r.agpr.resize(n + 1, [0; LANES]);
            }
            blend_row(&mut r.agpr[n], v, exec);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::memory::BufferMemory;

    /// Runs `words` at 0x1000 of `mem` with 256 bytes of LDS.
    fn run(words: &[u32], regs: &mut WaveRegs, mem: &BufferMemory) -> Step {
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        crate::sim::row_tests::run_code(mem, code, regs, &mut [0u8; 256])
    }

    /// `pow2` is `2f64.powi` (exact powers of two) for every exponent, and
    /// `f64_to_f16` (its exponent from the bits, not `log2`) rounds to the
    /// nearest f16, ties to even: every finite f16 comes back as itself,
    /// each midpoint between neighbours goes to the even one, a value just
    /// off a midpoint to the nearer one, and past the largest f16 to
    /// infinity.
    #[test]
    fn pow2_and_f16_rounding() {
        for e in -1100..=1100 {
            assert_eq!(pow2(e).to_bits(), 2f64.powi(e).to_bits(), "2^{e}");
        }
        let finite: Vec<u16> = (0u16..0x7c00).collect();
        for &h in &finite {
            for sign in [0u16, 0x8000] {
                let x = f16_to_f32(h | sign) as f64;
                assert_eq!(f64_to_f16(x), h | sign, "{h:#x}");
            }
        }
        for w in finite.windows(2) {
            let (lo, hi) = (f16_to_f32(w[0]) as f64, f16_to_f32(w[1]) as f64);
            let mid = (lo + hi) / 2.0;
            let even = if w[0] & 1 == 0 { w[0] } else { w[1] };
            assert_eq!(f64_to_f16(mid), even, "midpoint of {:#x}", w[0]);
            let off = (hi - lo) / 1024.0;
            assert_eq!(
                f64_to_f16(mid - off),
                w[0],
                "below the midpoint of {:#x}",
                w[0]
            );
            assert_eq!(
                f64_to_f16(mid + off),
                w[1],
                "above the midpoint of {:#x}",
                w[0]
            );
        }
        assert_eq!(f64_to_f16(65520.0), 0x7c00);
        assert_eq!(f64_to_f16(65519.99), 0x7bff);
    }

    /// Every VALU row and VOPC compare in its VOP3 form (VGPR operands of
    /// varied bits, special floats among them, with and without abs/neg,
    /// a partial EXEC), run on the baseline path and on the AVX2 path
    /// ([`simd`]): the wave states must be identical.
    #[test]
    fn avx2_and_baseline_paths_agree() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        const SPECIAL: [u32; 8] = [
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x0000_0001,
            0x3f80_0000,
            0xffff_ffff,
        ];
        let mut start = WaveRegs::new(16);
        for (v, row) in start.vgpr.iter_mut().enumerate() {
            for (lane, x) in row.iter_mut().enumerate() {
                let r = next();
                *x = if (v + lane) % 5 == 0 {
                    SPECIAL[(r % 8) as usize]
                } else if lane % 3 == 0 {
                    (r >> 40) as u32 % 70
                } else {
                    (r >> 16) as u32
                };
            }
        }
        start.sgpr[4] = next() as u32;
        start.sgpr[5] = next() as u32;
        start.vcc = next();
        start.exec = next() | 1;
        let mut checked = 0;
        let mut wide = false;
        for code in 0u32..0x300 {
            for mods in [0u32, 0b011, 0b101] {
                // VOP3: vdst v10 (VOPC: s[8:9]; VOP3b: sdst s[6:7]);
                // src0 v1, src1 v2 (v4 for a mask input), src2 v3 or s[4:5].
                let carry = VAlu::from_code(code).is_some_and(|a| a.has_carry_out());
                let mask_in = VAlu::from_code(code).is_some_and(|a| a.has_mask_in());
                let is_cmp = code < 0x100;
                let dst = if is_cmp { 8 } else { 10 };
                let abs = if carry || is_cmp && mods != 0 {
                    0
                } else {
                    mods
                };
                let w0 = 0xd000_0000 | code << 16 | if carry { 6 << 8 } else { abs << 8 } | dst;
                let src2 = if mask_in { 4 } else { 259 };
                let w1 = 257 | 258 << 9 | src2 << 18 | mods << 29;
                let bytes: Vec<u8> = [w0, w1].iter().flat_map(|w| w.to_le_bytes()).collect();
                let Some(inst) = decode(&bytes) else {
                    continue;
                };
                if matches!(&inst.kind, Kind::Valu { op: VOp::Alu(a), .. }
                    if a.props().flags & crate::sim::valu::flag::CROSS_LANE != 0)
                {
                    continue;
                }
                let mut out = [start.clone(), start.clone()];
                for (avx2, r) in [false, true].into_iter().zip(out.iter_mut()) {
                    wide |= simd::force_avx2(avx2);
                    let mem = BufferMemory::new();
                    let mut ctx = Ctx {
                        mem: &mem,
                        lds: &mut [],
                        scratch: &mut [],
                        code: None,
                    };
                    execute(r, &mut ctx, &inst);
                }
                simd::force_avx2(true);
                assert_eq!(out[0], out[1], "{inst}: baseline and AVX2 paths differ");
                checked += 1;
            }
        }
        assert!(checked > 600, "only {checked} encodings decoded");
        if !wide {
            eprintln!("this CPU has no AVX2: both runs took the baseline path");
        }
    }

    #[test]
    fn unknown_opcode_is_illegal_not_panic() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(8);
        assert_eq!(run(&[0xffff_ffff], &mut r, &mem), Step::IllegalInstruction);
        assert_eq!(r.pc, 0x1000);
    }

    /// `s_buffer_load_dwordx4` through a buffer resource (dwords past its
    /// size load as 0) and `s_load_dwordx2` (encodings from `llvm-mc-19`).
    #[test]
    fn smem_buffer_and_address_loads() {
        let mem = BufferMemory::new();
        let data: Vec<u8> = (0..8u32).flat_map(|k| (0x100 + k).to_le_bytes()).collect();
        mem.map(0x8000, data);
        let mut r = WaveRegs::new(4);
        r.exec = u64::MAX;
        // s[8:11]: base 0x8000, stride 0, 16 bytes.
        r.sgpr[8] = 0x8000;
        r.sgpr[9] = 0;
        r.sgpr[10] = 16;
        r.sgpr[4] = 0x8000;
        let words = [
            0xc02a_0504u32, // s_buffer_load_dwordx4 s[20:23], s[8:11], 0x8
            0x0000_0008,
            0xc006_0602, // s_load_dwordx2 s[24:25], s[4:5], 0x4
            0x0000_0004,
            0xbf81_0000, // s_endpgm
        ];
        let step = run(&words, &mut r, &mem);
        assert_eq!(step, Step::End);
        assert_eq!(&r.sgpr[20..24], &[0x102, 0x103, 0, 0], "past 16 bytes: 0");
        assert_eq!(&r.sgpr[24..26], &[0x101, 0x102]);
    }

    /// VOP3 op_sel on the VOP3-only 16-bit opcodes (clang-19 does not emit
    /// it for the corpus; encodings from `llvm-mc-19 -mcpu=gfx90a
    /// -show-encoding`, the decoder's text checked by decoder_generative).
    #[test]
    fn vop3_op_sel_selects_halves() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(16);
        r.exec = !(1u64 << 9);
        for lane in 0..LANES {
            r.vgpr[1][lane] = 0x4200_3c00; // f16 3.0 : 1.0
            r.vgpr[2][lane] = 0xc000_4400; // f16 -2.0 : 4.0
            r.vgpr[4][lane] = 0x0005_0007;
            r.vgpr[6][lane] = 0x3800_3c00; // f16 0.5 : 1.0
            r.vgpr[3][lane] = 0x1111_2222;
            r.vgpr[7][lane] = 0xaaaa_bbbb;
        }
        let bytes: [[u8; 8]; 6] = [
            // v_pack_b32_f16 v0, v1, v2 op_sel:[1,0,0]
            [0x00, 0x08, 0xa0, 0xd2, 0x01, 0x05, 0x02, 0x00],
            // v_mad_u16 v3, v1, v2, v4 op_sel:[0,0,1,1]
            [0x03, 0x60, 0x04, 0xd2, 0x01, 0x05, 0x12, 0x04],
            // v_fma_f16 v5, v1, v2, v6 op_sel:[1,1,0,0]
            [0x05, 0x18, 0x06, 0xd2, 0x01, 0x05, 0x1a, 0x04],
            // v_max3_i16 v7, v1, v2, v4 op_sel:[1,0,0,1]
            [0x07, 0x48, 0xf8, 0xd1, 0x01, 0x05, 0x12, 0x04],
            // v_mad_u32_u16 v8, v1, v2, v4 op_sel:[1,1,0,0]
            [0x08, 0x18, 0xf1, 0xd1, 0x01, 0x05, 0x12, 0x04],
            // v_med3_f16 v9, v1, v2, v6
            [0x09, 0x00, 0xfa, 0xd1, 0x01, 0x05, 0x1a, 0x04],
        ];
        let mut code: Vec<u8> = bytes.concat();
        code.extend([0x00, 0x00, 0x81, 0xbf]); // s_endpgm
        mem.map(0x1000, code);
        r.pc = 0x1000;
        let mut lds = vec![0u8; 64];
        let mut ctx = Ctx {
            mem: &mem,
            lds: &mut lds,
            scratch: &mut [],
            code: None,
        };
        while step(&mut r, &mut ctx) == Step::Continue {}
        assert_eq!(r.vgpr.len(), 16, "staged rows are dropped");
        for lane in [0usize, 30, 63] {
            assert_eq!(r.vgpr[0][lane], 0x4400_4200, "pack of v1.hi, v2.lo");
            assert_eq!(r.vgpr[3][lane], 0x0005_2222, "mad_u16 into the high half");
            assert_eq!(r.vgpr[5][lane], 0xc500, "fma_f16 of the high halves: -5.0");
            assert_eq!(r.vgpr[7][lane], 0x4400_bbbb, "max3_i16 into the high half");
            assert_eq!(
                r.vgpr[8][lane], 0x3185_0007,
                "mad_u32_u16 of the high halves"
            );
            assert_eq!(r.vgpr[9][lane], 0x3c00, "med3_f16");
        }
        assert_eq!(
            r.vgpr[3][9], 0x1111_2222,
            "an inactive lane keeps its value"
        );
    }

    /// The DS d16 loads and stores, a float atomic and a 64-bit cmpst,
    /// rows of `memops::DS_OPS` that clang-19 does not emit in the corpus
    /// (encodings from `llvm-mc-19 -mcpu=gfx90a -show-encoding`).
    #[test]
    fn ds_d16_halves_float_min_and_cmpst64() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(16);
        r.exec = u64::MAX;
        let neg = (-2.5f64).to_bits();
        for lane in 0..LANES {
            r.vgpr[0][lane] = lane as u32 * 32;
            r.vgpr[1][lane] = 0x8192_a3b4;
            r.vgpr[2][lane] = 0x1111_2222;
            r.vgpr[3][lane] = 0x3333_4444;
            r.vgpr[4][lane] = 0x5555_6666;
            r.vgpr[7][lane] = 0x7777_8888;
            r.vgpr[5][lane] = 0xdead_beef;
            r.vgpr[10][lane] = neg as u32;
            r.vgpr[11][lane] = (neg >> 32) as u32;
            r.vgpr[14][lane] = lane as u32;
            r.vgpr[15][lane] = 0x0bad_f00d;
        }
        let bytes: [[u8; 8]; 10] = [
            [0x00, 0x00, 0x1a, 0xd8, 0x00, 0x01, 0x00, 0x00], // ds_write_b32 v0, v1
            [0x00, 0x00, 0xac, 0xd8, 0x00, 0x00, 0x00, 0x02], // ds_read_u8_d16 v2, v0
            [0x01, 0x00, 0xb0, 0xd8, 0x00, 0x00, 0x00, 0x03], // ds_read_i8_d16 v3, v0 offset:1
            [0x02, 0x00, 0xb4, 0xd8, 0x00, 0x00, 0x00, 0x04], // ds_read_u16_d16 v4, v0 offset:2
            [0x03, 0x00, 0xae, 0xd8, 0x00, 0x00, 0x00, 0x07], // ds_read_u8_d16_hi v7, v0 offset:3
            [0x08, 0x00, 0xa8, 0xd8, 0x00, 0x05, 0x00, 0x00], // ds_write_b8_d16_hi v0, v5 offset:8
            [0x0a, 0x00, 0xaa, 0xd8, 0x00, 0x05, 0x00, 0x00], // ds_write_b16_d16_hi v0, v5 offset:10
            [0x08, 0x00, 0x6c, 0xd8, 0x00, 0x00, 0x00, 0x06], // ds_read_b32 v6, v0 offset:8
            // ds_min_rtn_f64 v[8:9], v0, v[10:11] offset:16
            [0x10, 0x00, 0xe4, 0xd8, 0x00, 0x0a, 0x00, 0x08],
            // ds_cmpst_rtn_b64 v[12:13], v0, v[10:11], v[14:15] offset:16
            [0x10, 0x00, 0xe0, 0xd8, 0x00, 0x0a, 0x0e, 0x0c],
        ];
        let mut code: Vec<u8> = bytes.concat();
        code.extend([0x00, 0x00, 0x81, 0xbf]); // s_endpgm
        mem.map(0x1000, code);
        r.pc = 0x1000;
        let mut lds = vec![0u8; 32 * LANES];
        let mut ctx = Ctx {
            mem: &mem,
            lds: &mut lds,
            scratch: &mut [],
            code: None,
        };
        while step(&mut r, &mut ctx) == Step::Continue {}
        for lane in [0usize, 17, 63] {
            assert_eq!(r.vgpr[2][lane], 0x1111_00b4, "u8_d16");
            assert_eq!(r.vgpr[3][lane], 0x3333_ffa3, "i8_d16");
            assert_eq!(r.vgpr[4][lane], 0x5555_8192, "u16_d16");
            assert_eq!(r.vgpr[7][lane], 0x0081_8888, "u8_d16_hi");
            assert_eq!(r.vgpr[6][lane], 0xdead_00ad, "write_b8/b16_d16_hi");
            assert_eq!(
                (r.vgpr[8][lane], r.vgpr[9][lane]),
                (0, 0),
                "min_rtn_f64 old"
            );
            let old = r.vgpr[12][lane] as u64 | (r.vgpr[13][lane] as u64) << 32;
            assert_eq!(old, neg, "cmpst_rtn_b64 returns the min's result");
            let at = lane * 32 + 16;
            let now = u64::from_le_bytes(ctx.lds[at..at + 8].try_into().unwrap());
            assert_eq!(now, lane as u64 | 0x0bad_f00d << 32, "cmpst stored");
        }
    }

    #[test]
    fn scratch_instructions_address_private_memory_per_lane() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(16);
        r.exec = !(1u64 << 3);
        for lane in 0..LANES {
            r.vgpr[0][lane] = 16; // per-lane offset
            r.vgpr[1][lane] = 0x1000 + lane as u32;
            r.vgpr[4][lane] = 0xaaaa_0000 + lane as u32;
            r.vgpr[5][lane] = 0xbbbb_0000 + lane as u32;
            r.vgpr[1][lane] |= 0x8000; // the short store keeps 0x80xx
        }
        r.sgpr[2] = 12;
        let words: Vec<u32> = [
            // scratch_store_dword v0, v1, off offset:4
            [0x04, 0x40, 0x70, 0xdc, 0x00, 0x01, 0x7f, 0x00],
            // scratch_load_dword v2, off, s2 offset:8  (lane offset 20)
            [0x08, 0x40, 0x50, 0xdc, 0x00, 0x00, 0x02, 0x02],
            // scratch_load_dword v3, v0, off offset:4
            [0x04, 0x40, 0x50, 0xdc, 0x00, 0x00, 0x7f, 0x03],
            // scratch_store_dwordx2 v0, v[4:5], off offset:-8
            [0xf8, 0x5f, 0x74, 0xdc, 0x00, 0x04, 0x7f, 0x00],
            // scratch_load_dwordx2 v[6:7], v0, off offset:-8
            [0xf8, 0x5f, 0x54, 0xdc, 0x00, 0x00, 0x7f, 0x06],
            // scratch_store_short v0, v1, off offset:64
            [0x40, 0x40, 0x68, 0xdc, 0x00, 0x01, 0x7f, 0x00],
            // scratch_load_sshort v8, v0, off offset:64
            [0x40, 0x40, 0x4c, 0xdc, 0x00, 0x00, 0x7f, 0x08],
            // s_endpgm
            [0x00, 0x00, 0x81, 0xbf, 0, 0, 0, 0],
        ]
        .iter()
        .flat_map(|b| {
            b.chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        })
        .collect();
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        mem.map(0x1000, code);
        r.pc = 0x1000;
        let mut lds = vec![0u8; 64];
        let mut private = vec![0u8; 128 * LANES]; // 128 bytes per lane
        let mut ctx = Ctx {
            mem: &mem,
            lds: &mut lds,
            scratch: &mut private,
            code: None,
        };
        while step(&mut r, &mut ctx) == Step::Continue {}
        for lane in [0usize, 5, 63] {
            let at = swizzle_private(lane, 20) as usize;
            let stored = u32::from_le_bytes(ctx.scratch[at..at + 4].try_into().unwrap());
            assert_eq!(stored, 0x9000 + lane as u32, "lane {lane} dword at 20");
            assert_eq!(r.vgpr[2][lane], stored);
            assert_eq!(r.vgpr[3][lane], stored);
            assert_eq!(r.vgpr[6][lane], 0xaaaa_0000 + lane as u32);
            assert_eq!(r.vgpr[7][lane], 0xbbbb_0000 + lane as u32);
            assert_eq!(r.vgpr[8][lane], (0x9000 + lane as u32) | 0xffff_0000);
        }
        assert_eq!(r.vgpr[2][3], 0, "an inactive lane is untouched");
        // Past the private segment: a memory violation at the aperture
        // address, the pc at the instruction.
        r.vgpr[0][0] = 200;
        mem.map(0x2000, vec![0x04, 0x40, 0x50, 0xdc, 0x00, 0x00, 0x7f, 0x03]);
        r.pc = 0x2000;
        assert_eq!(
            step(&mut r, &mut ctx),
            Step::MemoryViolation {
                addr: PRIVATE_APERTURE + 204
            }
        );
        assert_eq!(r.pc, 0x2000);
    }

    /// FLAT loads and stores of whole dwords into the private aperture (the
    /// row fast path, `private_dwords`): per-lane and uniform offsets, a
    /// partial EXEC, an unaligned lane (the generic lane loop), and a lane
    /// whose last dword is past the segment (a memory violation at that
    /// dword's aperture address, as the generic loop reports it).
    #[test]
    fn flat_private_dwords_follow_the_swizzled_layout() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(16);
        let exec = 0xf0f0_5a5a_0ff0_c3c3u64;
        r.exec = exec;
        let per_lane = |lane: usize| (lane % 4) as u64 * 16 + 4;
        for lane in 0..LANES {
            let a = PRIVATE_APERTURE + per_lane(lane);
            r.vgpr[0][lane] = a as u32;
            r.vgpr[1][lane] = (a >> 32) as u32;
            for k in 0..3 {
                r.vgpr[2 + k][lane] = 0x1000_0000 * (k as u32 + 1) + lane as u32;
            }
            r.vgpr[6][lane] = 0xdead_0000 + lane as u32;
            r.vgpr[10][lane] = 0x7700_0000 + lane as u32;
        }
        let program: [[u8; 8]; 2] = [
            [0x00, 0x00, 0x78, 0xdc, 0x00, 0x02, 0x00, 0x00], // flat_store_dwordx3 v[0:1], v[2:4]
            [0x00, 0x00, 0x58, 0xdc, 0x00, 0x00, 0x00, 0x06], // flat_load_dwordx3 v[6:8], v[0:1]
        ];
        let mut code = program.concat();
        code.extend([0x00, 0x00, 0x81, 0xbf]); // s_endpgm
        mem.map(0x1000, code);
        r.pc = 0x1000;
        let mut lds = vec![0u8; 64];
        let mut private = vec![0u8; 64 * LANES]; // 64 bytes per lane
        let mut ctx = Ctx {
            mem: &mem,
            lds: &mut lds,
            scratch: &mut private,
            code: None,
        };
        while step(&mut r, &mut ctx) == Step::Continue {}
        let word = |s: &[u8], lane: usize, off: u64| {
            let at = swizzle_private(lane, off) as usize;
            u32::from_le_bytes(s[at..at + 4].try_into().unwrap())
        };
        for lane in 0..LANES {
            let active = exec >> lane & 1 != 0;
            for k in 0..3 {
                let stored = word(ctx.scratch, lane, per_lane(lane) + 4 * k as u64);
                let want = if active { r.vgpr[2 + k][lane] } else { 0 };
                assert_eq!(stored, want, "lane {lane} dword {k} in memory");
                if active {
                    assert_eq!(r.vgpr[6 + k][lane], stored, "lane {lane} dword {k} loaded");
                }
            }
            if !active {
                assert_eq!(
                    r.vgpr[6][lane],
                    0xdead_0000 + lane as u32,
                    "inactive lane kept"
                );
            }
        }
        // Every lane at one offset under a full EXEC (a row copy), then an
        // unaligned lane (the generic loop), each a store and a load back.
        r.exec = u64::MAX;
        for (lane, unaligned) in [(None, 32u64), (Some(5usize), 2)] {
            for l in 0..LANES {
                let off = if Some(l) == lane { unaligned } else { 32 };
                let a = PRIVATE_APERTURE + off;
                r.vgpr[0][l] = a as u32;
                r.vgpr[1][l] = (a >> 32) as u32;
            }
            let program: [[u8; 8]; 2] = [
                [0x08, 0x00, 0x70, 0xdc, 0x00, 0x0a, 0x00, 0x00], // flat_store_dword v[0:1], v10 offset:8
                [0x08, 0x00, 0x50, 0xdc, 0x00, 0x00, 0x00, 0x0b], // flat_load_dword v11, v[0:1] offset:8
            ];
            let mut code = program.concat();
            code.extend([0x00, 0x00, 0x81, 0xbf]);
            mem.map(0x2000, code);
            r.pc = 0x2000;
            while step(&mut r, &mut ctx) == Step::Continue {}
            for l in 0..LANES {
                assert_eq!(r.vgpr[11][l], 0x7700_0000 + l as u32, "lane {l} round trip");
                if Some(l) != lane {
                    assert_eq!(word(ctx.scratch, l, 40), 0x7700_0000 + l as u32);
                }
            }
        }
        // Lane 9's third dword lies past its 64 bytes.
        for l in 0..LANES {
            let off = if l == 9 { 56 } else { 0 };
            let a = PRIVATE_APERTURE + off;
            r.vgpr[0][l] = a as u32;
            r.vgpr[1][l] = (a >> 32) as u32;
        }
        mem.map(0x3000, program[1].to_vec());
        r.pc = 0x3000;
        assert_eq!(
            step(&mut r, &mut ctx),
            Step::MemoryViolation {
                addr: PRIVATE_APERTURE + 64
            }
        );
        assert_eq!(r.pc, 0x3000);
    }

    /// MUBUF scratch `offen` accesses: a VGPR offset that is one value in
    /// every EXEC lane (the row path; inactive lanes hold other values),
    /// per-lane offsets, and a uniform offset past the segment (a memory
    /// violation at the first EXEC lane's dword, as the per-lane path
    /// reports it).
    #[test]
    fn mubuf_offen_uniform_and_per_lane_offsets() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(8);
        let exec = 0x0ff0_ffff_0000_fff1u64;
        r.exec = exec;
        r.sgpr[3] = RSRC3_ADD_TID_ENABLE;
        r.sgpr[4] = 16; // soffset
        for lane in 0..LANES {
            let active = exec >> lane & 1 != 0;
            r.vgpr[0][lane] = if active { 24 } else { 1000 + lane as u32 };
            r.vgpr[1][lane] = 0xabc0_0000 + lane as u32;
            r.vgpr[2][lane] = 0x5555_0000 + lane as u32;
            r.vgpr[5][lane] = if lane % 2 == 0 { 24 } else { 4 };
        }
        let program: [[u8; 8]; 3] = [
            // buffer_store_dword v1, v0, s[0:3], s4 offen offset:8
            [0x08, 0x10, 0x70, 0xe0, 0x00, 0x01, 0x00, 0x04],
            // buffer_load_dword v2, v0, s[0:3], s4 offen offset:8
            [0x08, 0x10, 0x50, 0xe0, 0x00, 0x02, 0x00, 0x04],
            // buffer_load_dword v3, v5, s[0:3], s4 offen offset:8
            [0x08, 0x10, 0x50, 0xe0, 0x05, 0x03, 0x00, 0x04],
        ];
        let mut code = program.concat();
        code.extend([0x00, 0x00, 0x81, 0xbf]); // s_endpgm
        mem.map(0x1000, code);
        r.pc = 0x1000;
        let mut lds = vec![0u8; 64];
        let mut private = vec![0u8; 64 * LANES]; // 64 bytes per lane
        let mut ctx = Ctx {
            mem: &mem,
            lds: &mut lds,
            scratch: &mut private,
            code: None,
        };
        while step(&mut r, &mut ctx) == Step::Continue {}
        let word = |s: &[u8], lane: usize, off: u64| {
            let at = 16 + swizzle_private(lane, off) as usize;
            u32::from_le_bytes(s[at..at + 4].try_into().unwrap())
        };
        for lane in 0..LANES {
            if exec >> lane & 1 == 0 {
                assert_eq!(word(ctx.scratch, lane, 32), 0, "lane {lane} not stored");
                assert_eq!(
                    r.vgpr[2][lane],
                    0x5555_0000 + lane as u32,
                    "lane {lane} kept"
                );
                continue;
            }
            let v = 0xabc0_0000 + lane as u32;
            assert_eq!(word(ctx.scratch, lane, 32), v, "lane {lane} stored");
            assert_eq!(r.vgpr[2][lane], v, "lane {lane} loaded");
            let per_lane = if lane % 2 == 0 { v } else { 0 };
            assert_eq!(r.vgpr[3][lane], per_lane, "lane {lane} per-lane offset");
        }
        for lane in 0..LANES {
            r.vgpr[0][lane] = 60; // lane offset 68: row 17, past 16 rows
        }
        r.pc = 0x1008;
        assert_eq!(
            step(&mut r, &mut ctx),
            Step::MemoryViolation {
                addr: PRIVATE_APERTURE + 16 + 17 * 256
            }
        );
        assert_eq!(r.pc, 0x1008);
    }

    #[test]
    fn trap_and_carry() {
        let mem = BufferMemory::new();
        let mut r = WaveRegs::new(8);
        r.exec = u64::MAX;
        r.sgpr[0] = 0xffff_ffff;
        for (lane, v) in r.vgpr[0].iter_mut().enumerate() {
            *v = lane as u32;
        }
        // v_add_co_u32_e32 v2, vcc, s0, v0 ; s_trap 1
        let out = run(&[0x32040000, 0xBF920001], &mut r, &mem);
        assert_eq!(out, Step::Trap(1));
        assert_eq!(r.pc, 0x1008);
        assert_eq!(r.vcc, !1);
        assert_eq!(r.vgpr[2][0], 0xffff_ffff);
        assert_eq!(r.vgpr[2][5], 4);
    }
}
