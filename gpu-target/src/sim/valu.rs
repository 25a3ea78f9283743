//! The VALU operations (VOP1, VOP2 and VOP3 other than compares): for each
//! one its encoding number, LLVM mnemonic, operand widths, encoding flags
//! and the value it computes for one lane, in one row of [`valu_ops!`].
//!
//! Adding a VALU instruction is one row here: the decoder (`decode.rs`)
//! takes the encoding, name, widths and flags from the row, the interpreter
//! (`wave.rs`) runs the row's expression for every lane with the opcode a
//! constant (see [`VAlu::dispatch`]). See docs/simulator.md, "Adding an
//! instruction".

use super::decode::opcodes;
use super::decode::OpKernel;
use super::wave::bfe;
use super::wave::div_fixup;
use super::wave::f16_to_f32;
use super::wave::f32m;
use super::wave::f64_to_f16;
use super::wave::f64m;
use super::wave::frexp;
use super::wave::ldexp;

/// Encoding and execution flags of a VALU row (`flags(...)`).
pub mod flag {
    /// VOP3b: writes a per-lane carry/borrow to an SGPR pair (VCC in VOP2).
    pub const CARRY_OUT: u16 = 1 << 0;
    /// Reads a lane mask as src2 (VCC in VOP2, an SGPR pair in VOP3).
    pub const MASK_IN: u16 = 1 << 1;
    /// Writes an SGPR instead of a VGPR.
    pub const SGPR_DST: u16 = 1 << 2;
    /// VOP2 form with a literal constant K as an extra operand
    /// (`v_madmk`/`v_madak`); printed without a suffix.
    pub const K_LIT: u16 = 1 << 3;
    /// Printed without an `_e32`/`_e64` suffix (VOP3-only opcodes, from
    /// code 0x1c0, never have one).
    pub const NO_SUFFIX: u16 = 1 << 4;
    /// Reads the destination's old value (`d`: accumulate, swap).
    pub const READS_DST: u16 = 1 << 5;
    /// Has no SDWA form.
    pub const NO_SDWA: u16 = 1 << 6;
    /// Has no DPP form.
    pub const NO_DPP: u16 = 1 << 7;
    /// The clamp bit clamps an f32 result to [0, 1].
    pub const CLAMP_F32: u16 = 1 << 8;
    /// 16-bit integer operands (SDWA/op_sel printing).
    pub const INT16: u16 = 1 << 9;
    /// f16 operands (SDWA/op_sel printing).
    pub const F16: u16 = 1 << 10;
    /// A cross-lane move: [`cross_lane`](super::cross_lane) says what it
    /// does to the wave (the row's lane expression is not used).
    pub const CROSS_LANE: u16 = 1 << 11;
}

/// The cross-lane VALU moves (rows flagged `CROSS_LANE`), one arm each:
/// what the instruction does to the wave. A new cross-lane move is its row
/// plus its arm here. (Inlined: the handlers call it with the opcode a
/// constant, so only the opcode's arm is left.)
#[inline(always)]
pub(super) fn cross_lane(
    op: VAlu,
    r: &mut super::wave::WaveRegs,
    dst: u8,
    src: &[u16; 3],
    lit: Option<u32>,
) {
    let exec = r.exec;
    match op {
        // The first active lane's value (lane 0 when none is).
        VAlu::ReadfirstlaneB32 => {
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            let v = r.lane_value(src[0], lane, lit);
            r.sset(dst as u16, 1, v);
        }
        // The lane that SGPR/constant src1 names (mod 64), EXEC ignored.
        VAlu::ReadlaneB32 => {
            let lane = (r.sget(src[1], 1, lit) & 63) as usize;
            let v = r.lane_value(src[0], lane, lit);
            r.sset(dst as u16, 1, v);
        }
        // Scalar src0 into that lane of the destination, EXEC ignored.
        VAlu::WritelaneB32 => {
            let lane = (r.sget(src[1], 1, lit) & 63) as usize;
            let v = r.sget(src[0], 1, lit) as u32;
            r.set_lane(dst, lane, v);
        }
        _ => {}
    }
}

/// The per-instruction inputs of [`VAlu::lane_value`] besides the lane's
/// operands.
#[derive(Clone, Copy, Debug)]
pub struct LaneIn {
    /// VOP3 abs bits per source.
    pub abs: u8,
    /// VOP3 neg bits per source.
    pub neg: u8,
    /// The literal constant (K of `v_madmk`/`v_madak`).
    pub lit: Option<u32>,
    /// VOP3 (e64) encoding.
    pub e64: bool,
    /// VCC before the instruction.
    pub vcc_in: u64,
}

/// Sum of the absolute differences of the `bits`-bit fields of `a` and `b`.
fn sad(a: u32, b: u32, bits: u32) -> u32 {
    let mask = (1u32 << bits) - 1;
    (0..32 / bits)
        .map(|k| ((a >> (k * bits)) & mask).abs_diff((b >> (k * bits)) & mask))
        .sum()
}

/// `v_fma_f16`: `a * b + c` (f16 values, modifiers applied, held in f64)
/// rounded once to f16, the fused result for every input. Why it is exact:
/// the product of two f16 values has at most 22 significant bits and is
/// exact in f64; the sum `s = p + c` is rounded to f64, and TwoSum gives its
/// error `e` exactly (`p + c == s + e`). The exact sum is rounded to f64 by
/// round-to-odd instead (`s` with its last bit set towards `e` when `e` is
/// not 0), and a round-to-odd result of at least two bits more precision
/// than the target rounds to the target as the exact value does (Boldo and
/// Melquiond, "Emulation of FMA and correctly rounded sums: proved
/// algorithms using rounding to odd"): f64 carries 53 bits, f16 11 (and a
/// fixed 2^-24 quantum in its subnormal range, far above f64's there).
pub(super) fn fma_f16(a: f64, b: f64, c: f64) -> u64 {
    let p = a * b;
    let s = p + c;
    if !s.is_finite() || !p.is_finite() || !c.is_finite() {
        return f64_to_f16(s) as u64;
    }
    let bp = s - p;
    let e = (p - (s - bp)) + (c - bp);
    let odd = if e != 0.0 && s.to_bits() & 1 == 0 {
        // The neighbour of `s` towards the exact sum: one ulp more magnitude
        // when `e` has the sign of `s`, one less otherwise (`s` is not 0:
        // a sum that rounds to 0 is exact).
        let toward = (e > 0.0) == (s > 0.0);
        f64::from_bits(if toward {
            s.to_bits() + 1
        } else {
            s.to_bits() - 1
        })
    } else {
        s
    };
    f64_to_f16(odd) as u64
}

/// `v_mad_f16` (and `_legacy`): not fused, as `v_mul_f16` then
/// `v_add_f16`: the product rounded to f16, then the sum (exact in f64:
/// two f16 values span less than 53 bits) rounded to f16.
pub(super) fn mad_f16(a: f64, b: f64, c: f64) -> u64 {
    let p = f16_to_f32(f64_to_f16(a * b)) as f64;
    f64_to_f16(p + c) as u64
}

/// f32 to f16 rounding towards zero.
fn f16_rtz(x: f32) -> u32 {
    let h = f64_to_f16(x as f64);
    // Round to nearest went away from zero: one step back (the magnitude
    // bits of a sign-magnitude number; infinity becomes the largest finite).
    if x.is_finite() && (f16_to_f32(h)).abs() > x.abs() {
        (h - 1) as u32
    } else {
        h as u32
    }
}

/// The low 16 bits of `v` as f16 operand `i` with its abs/neg modifiers
/// applied to the sign bit (no rounding: NaN payloads are kept).
fn f16_bits(v: u64, i: usize, abs: u8, neg: u8) -> u64 {
    let x = v & if (abs >> i) & 1 != 0 { 0x7fff } else { 0xffff };
    if (neg >> i) & 1 != 0 {
        x ^ 0x8000
    } else {
        x
    }
}

/// Calls a `sat(...)` closure with the two 32-bit sources.
#[inline(always)]
fn sat<F: Fn(u32, u32) -> u64>(f: F, a: u32, b: u32) -> u64 {
    f(a, b)
}

/// Declares [`VAlu`] from rows
/// `CODE => Variant "llvm_name" [widths] flags(F, ...) sat(|a, b| ...) => value;`
/// (`flags` and `sat` optional; widths in dwords, destination first;
/// `sat` is the result under the clamp bit for integer adds). The value
/// expression sees the names bound by the header's `lane(...)` list and the
/// prelude.
macro_rules! valu_ops {
    (
        lane($x:ident, $a:ident, $b:ident, $c:ident, $d:ident, $lane:ident, $carry:ident) { $($prelude:tt)* }
        $( $num:literal => $var:ident $name:literal [$($w:literal),*]
            $(flags($($fl:ident),+))? $(sat($sat:expr))? => $body:expr; )*
    ) => {
        opcodes! {
            /// VALU opcodes other than compares, keyed by their VOP3 number
            /// (VOP2 n = 0x100 + n, VOP1 n = 0x140 + n).
            VAlu { $($num => $var $name [$($w),*],)* }
        }
        impl VAlu {
            /// The row's [`flag`]s.
            #[inline(always)]
            pub const fn flags(self) -> u16 {
                match self { $(Self::$var => 0 $($(| flag::$fl)+)?,)* }
            }
            /// The VOP3 opcode number.
            pub fn code(self) -> u32 {
                match self { $(Self::$var => $num,)* }
            }
            /// The value (and carry out) of lane `lane` of this operation
            /// from its operands; `d` is the destination's old value.
            #[inline(always)]
            #[allow(unused_variables, unused_mut, clippy::unnecessary_cast)]
            pub fn lane_value(self, $x: LaneIn, $a: u64, $b: u64, $c: u64, $d: u64, $lane: usize) -> (u64, bool) {
                let mut $carry = false;
                $($prelude)*
                let v: u64 = match self { $(Self::$var => $body,)* };
                (v, $carry)
            }
            /// The result under the clamp bit: integer adds saturate, f32
            /// results clamp to [0, 1], others are unchanged.
            pub fn clamp_value(self, a: u32, b: u32, v: u64) -> u64 {
                #[allow(unreachable_code)]
                match self {
                    $(Self::$var => {
                        $(return sat($sat, a, b);)?
                        let _ = (a, b);
                        if self.flags() & flag::CLAMP_F32 != 0 {
                            f32::from_bits(v as u32).clamp(0.0, 1.0).to_bits() as u64
                        } else {
                            v
                        }
                    })*
                }
            }
        }
    };
}

/// A VALU row's operand widths and flags, looked up by opcode index in
/// [`VALU_PROPS`] (one load instead of a `match` over every row).
#[derive(Clone, Copy, Debug)]
pub struct ValuProps {
    /// Operand widths in dwords, destination first ([`VAlu::widths`]).
    pub widths: &'static [u8],
    /// The row's [`flag`]s.
    pub flags: u16,
    /// Every operand is 32 bits (a `MASK_IN` lane mask aside): the row
    /// runs on 32-bit lane arrays straight from the VGPR rows
    /// (`wave.rs::valu_alu32`).
    pub w32: bool,
}

/// Whether `op` runs on 32-bit lane arrays ([`ValuProps::w32`]): every
/// width 1 but a `MASK_IN` lane mask (src2), not a cross-lane move and not
/// `v_swap_b32` (which writes its source too).
pub(super) const fn lanes32(op: VAlu) -> bool {
    let (w, f) = (op.widths(), op.flags());
    if w.is_empty() || f & flag::CROSS_LANE != 0 || matches!(op, VAlu::SwapB32) {
        return false;
    }
    let mut i = 0;
    while i < w.len() {
        if w[i] != 1 && !(i == 3 && f & flag::MASK_IN != 0) {
            return false;
        }
        i += 1;
    }
    true
}

/// [`ValuProps`] of every row, indexed by `op as usize`; built at compile
/// time from the rows.
pub static VALU_PROPS: [ValuProps; VAlu::ALL.len()] = {
    let mut t = [ValuProps {
        widths: &[],
        flags: 0,
        w32: false,
    }; VAlu::ALL.len()];
    let mut i = 0;
    while i < t.len() {
        t[i] = ValuProps {
            widths: VAlu::ALL[i].widths(),
            flags: VAlu::ALL[i].flags(),
            w32: lanes32(VAlu::ALL[i]),
        };
        i += 1;
    }
    t
};

impl VAlu {
    /// The row's widths and flags from [`VALU_PROPS`].
    #[inline(always)]
    pub fn props(self) -> &'static ValuProps {
        &VALU_PROPS[self as usize]
    }
    /// VOP3b: writes a per-lane carry/borrow to an SGPR pair (VCC in VOP2).
    #[inline(always)]
    pub fn has_carry_out(self) -> bool {
        self.props().flags & flag::CARRY_OUT != 0
    }
    /// Reads a lane mask (VCC in VOP2, an SGPR pair as src2 in VOP3).
    #[inline(always)]
    pub fn has_mask_in(self) -> bool {
        self.props().flags & flag::MASK_IN != 0
    }
    /// Writes an SGPR instead of a VGPR.
    pub fn sgpr_dst(self) -> bool {
        self.flags() & flag::SGPR_DST != 0
    }
    /// VOP3-only (no e32 form): codes from 0x1c0.
    pub fn only_vop3(self) -> bool {
        self.code() >= 0x1c0
    }
    /// Takes VOP3 `op_sel` (gfx9: the VOP3-only 16-bit opcodes, not the
    /// `_legacy` ones): a source's high half, the result into the
    /// destination's high half.
    pub fn has_op_sel(self) -> bool {
        self.only_vop3()
            && self.flags() & (flag::F16 | flag::INT16) != 0
            && !self.name().contains("legacy")
    }
    /// Printed without an `_e32`/`_e64` suffix.
    pub fn no_suffix(self) -> bool {
        self.only_vop3() || self.flags() & (flag::K_LIT | flag::NO_SUFFIX) != 0
    }
    /// VOP2 forms with a literal constant K as an extra operand.
    pub fn has_k(self) -> bool {
        self.flags() & flag::K_LIT != 0
    }
    /// Reads the destination's old value.
    #[inline(always)]
    pub fn reads_dst(self) -> bool {
        self.props().flags & flag::READS_DST != 0
    }
}

valu_ops! {
    lane(x, a, b, c, d, lane, carry) {
        let LaneIn {
            abs,
            neg,
            lit,
            e64,
            vcc_in,
        } = x;
        let fd = |v: u64, i: usize| f64m(v, i, abs, neg);
        let db = |x: f64| x.to_bits();
        let h = |v: u64, i: usize| {
            let x = f16_to_f32(v as u16) as f64;
            let x = if (abs >> i) & 1 != 0 { x.abs() } else { x };
            if (neg >> i) & 1 != 0 {
                -x
            } else {
                x
            }
        };
        let hb = |x: f64| f64_to_f16(x) as u64;
        let f = |v: u64, i: usize| f32m(v, i, abs, neg);
        let fb = |x: f32| x.to_bits() as u64;
        let (a32, b32, c32) = (a as u32, b as u32, c as u32);
        let (ai, bi, ci) = (a32 as i32, b32 as i32, c32 as i32);
        let cin = (c >> lane) & 1;
    }
    // VOP2 (e32 opcode n = code - 0x100); also VOP3 (e64).
    0x100 => CndmaskB32 "v_cndmask_b32" [1,1,1,2] flags(MASK_IN) => {
        // Float modifiers act on the sign bit of the chosen value.
        let m = |v: u32, i: usize| {
            let v = if (abs >> i) & 1 != 0 {
                v & 0x7fff_ffff
            } else {
                v
            };
            if (neg >> i) & 1 != 0 {
                v ^ 0x8000_0000
            } else {
                v
            }
        };
        // A select by mask, not a branch: the lane loop vectorises.
        let pick_b = 0u32.wrapping_sub(cin as u32);
        ((m(a32, 0) & !pick_b) | (m(b32, 1) & pick_b)) as u64
    };
    0x101 => AddF32 "v_add_f32" [1,1,1] flags(CLAMP_F32) => fb(f(a, 0) + f(b, 1));
    0x102 => SubF32 "v_sub_f32" [1,1,1] flags(CLAMP_F32) => fb(f(a, 0) - f(b, 1));
    0x103 => SubrevF32 "v_subrev_f32" [1,1,1] flags(CLAMP_F32) => fb(f(b, 1) - f(a, 0));
    0x104 => FmacF64 "v_fmac_f64" [2,2,2] flags(READS_DST) => db(fd(a, 0).mul_add(fd(b, 1), f64::from_bits(d)));
    0x105 => MulF32 "v_mul_f32" [1,1,1] flags(CLAMP_F32) => fb(f(a, 0) * f(b, 1));
    0x106 => MulI32I24 "v_mul_i32_i24" [1,1,1] => ((ai << 8 >> 8) as i64 * (bi << 8 >> 8) as i64) as u32 as u64;
    0x107 => MulHiI32I24 "v_mul_hi_i32_i24" [1,1,1] => {
        ((((ai << 8 >> 8) as i64 * (bi << 8 >> 8) as i64) >> 32) as u32) as u64
    };
    0x108 => MulU32U24 "v_mul_u32_u24" [1,1,1] => ((a32 & 0xff_ffff) as u64 * (b32 & 0xff_ffff) as u64) as u32 as u64;
    0x109 => MulHiU32U24 "v_mul_hi_u32_u24" [1,1,1] => ((a32 & 0xff_ffff) as u64 * (b32 & 0xff_ffff) as u64) >> 32;
    0x10a => MinF32 "v_min_f32" [1,1,1] flags(CLAMP_F32) => fb(f(a, 0).min(f(b, 1)));
    0x10b => MaxF32 "v_max_f32" [1,1,1] flags(CLAMP_F32) => fb(f(a, 0).max(f(b, 1)));
    0x10c => MinI32 "v_min_i32" [1,1,1] => ai.min(bi) as u32 as u64;
    0x10d => MaxI32 "v_max_i32" [1,1,1] => ai.max(bi) as u32 as u64;
    0x10e => MinU32 "v_min_u32" [1,1,1] => a32.min(b32) as u64;
    0x10f => MaxU32 "v_max_u32" [1,1,1] => a32.max(b32) as u64;
    0x110 => LshrrevB32 "v_lshrrev_b32" [1,1,1] => (b32 >> (a32 & 31)) as u64;
    0x111 => AshrrevI32 "v_ashrrev_i32" [1,1,1] => (bi >> (a32 & 31)) as u32 as u64;
    0x112 => LshlrevB32 "v_lshlrev_b32" [1,1,1] => (b32 << (a32 & 31)) as u64;
    0x113 => AndB32 "v_and_b32" [1,1,1] => (a32 & b32) as u64;
    0x114 => OrB32 "v_or_b32" [1,1,1] => (a32 | b32) as u64;
    0x115 => XorB32 "v_xor_b32" [1,1,1] => (a32 ^ b32) as u64;
    0x116 => MacF32 "v_mac_f32" [1,1,1] flags(READS_DST, NO_SDWA) => fb(f(a, 0) * f(b, 1) + f32::from_bits(d as u32));
    0x117 => MadmkF32 "v_madmk_f32" [1,1,1,1] flags(K_LIT) => {
        if e64 {
            fb(f(a, 0) * f(b, 1) + f(c, 2))
        } else {
            fb(f(a, 0) * f32::from_bits(lit.unwrap_or(0)) + f(b, 1))
        }
    };
    0x118 => MadakF32 "v_madak_f32" [1,1,1,1] flags(K_LIT) => {
        if e64 {
            fb(f(a, 0) * f(b, 1) + f(c, 2))
        } else {
            fb(f(a, 0) * f(b, 1) + f32::from_bits(lit.unwrap_or(0)))
        }
    };
    0x119 => AddCoU32 "v_add_co_u32" [1,1,1] flags(CARRY_OUT) sat(|a, b| a.saturating_add(b) as u64) => {
        let s = a32 as u64 + b32 as u64;
        carry = s >> 32 != 0;
        s as u32 as u64
    };
    0x11a => SubCoU32 "v_sub_co_u32" [1,1,1] flags(CARRY_OUT) sat(|a, b| a.saturating_sub(b) as u64) => {
        carry = b32 > a32;
        a32.wrapping_sub(b32) as u64
    };
    0x11b => SubrevCoU32 "v_subrev_co_u32" [1,1,1] flags(CARRY_OUT) sat(|a, b| b.saturating_sub(a) as u64) => {
        carry = a32 > b32;
        b32.wrapping_sub(a32) as u64
    };
    0x11c => AddcCoU32 "v_addc_co_u32" [1,1,1,2] flags(CARRY_OUT, MASK_IN) => {
        let s = a32 as u64 + b32 as u64 + cin;
        carry = s >> 32 != 0;
        s as u32 as u64
    };
    0x11d => SubbCoU32 "v_subb_co_u32" [1,1,1,2] flags(CARRY_OUT, MASK_IN) => {
        carry = b32 as u64 + cin > a32 as u64;
        a32.wrapping_sub(b32).wrapping_sub(cin as u32) as u64
    };
    0x11e => SubbrevCoU32 "v_subbrev_co_u32" [1,1,1,2] flags(CARRY_OUT, MASK_IN) => {
        carry = a32 as u64 + cin > b32 as u64;
        b32.wrapping_sub(a32).wrapping_sub(cin as u32) as u64
    };
    0x11f => AddF16 "v_add_f16" [1,1,1] flags(F16) => hb(h(a, 0) + h(b, 1));
    0x120 => SubF16 "v_sub_f16" [1,1,1] flags(F16) => hb(h(a, 0) - h(b, 1));
    0x121 => SubrevF16 "v_subrev_f16" [1,1,1] flags(F16) => hb(h(b, 1) - h(a, 0));
    0x122 => MulF16 "v_mul_f16" [1,1,1] flags(F16) => hb(h(a, 0) * h(b, 1));
    0x126 => AddU16 "v_add_u16" [1,1,1] flags(INT16) sat(|a, b| (a as u16).saturating_add(b as u16) as u64) => (a as u16).wrapping_add(b as u16) as u64;
    0x127 => SubU16 "v_sub_u16" [1,1,1] flags(INT16) sat(|a, b| (a as u16).saturating_sub(b as u16) as u64) => (a as u16).wrapping_sub(b as u16) as u64;
    0x128 => SubrevU16 "v_subrev_u16" [1,1,1] flags(INT16) => (b as u16).wrapping_sub(a as u16) as u64;
    0x129 => MulLoU16 "v_mul_lo_u16" [1,1,1] flags(INT16) => (a as u16).wrapping_mul(b as u16) as u64;
    0x12a => LshlrevB16 "v_lshlrev_b16" [1,1,1] flags(INT16) => ((b as u16) << (a & 15)) as u64;
    0x12b => LshrrevB16 "v_lshrrev_b16" [1,1,1] flags(INT16) => ((b as u16) >> (a & 15)) as u64;
    0x12c => AshrrevI16 "v_ashrrev_i16" [1,1,1] flags(INT16) => (((b as u16 as i16) >> (a & 15)) as u16) as u64;
    0x12d => MaxF16 "v_max_f16" [1,1,1] flags(F16) => hb(h(a, 0).max(h(b, 1)));
    0x12e => MinF16 "v_min_f16" [1,1,1] flags(F16) => hb(h(a, 0).min(h(b, 1)));
    0x12f => MaxU16 "v_max_u16" [1,1,1] flags(INT16) => (a as u16).max(b as u16) as u64;
    0x130 => MaxI16 "v_max_i16" [1,1,1] flags(INT16) => (a as i16).max(b as i16) as u16 as u64;
    0x131 => MinU16 "v_min_u16" [1,1,1] flags(INT16) => (a as u16).min(b as u16) as u64;
    0x132 => MinI16 "v_min_i16" [1,1,1] flags(INT16) => (a as i16).min(b as i16) as u16 as u64;
    0x134 => AddU32 "v_add_u32" [1,1,1] sat(|a, b| a.saturating_add(b) as u64) => a32.wrapping_add(b32) as u64;
    0x135 => SubU32 "v_sub_u32" [1,1,1] sat(|a, b| a.saturating_sub(b) as u64) => a32.wrapping_sub(b32) as u64;
    0x136 => SubrevU32 "v_subrev_u32" [1,1,1] sat(|a, b| b.saturating_sub(a) as u64) => b32.wrapping_sub(a32) as u64;
    0x13b => FmacF32 "v_fmac_f32" [1,1,1] flags(READS_DST, NO_SDWA, CLAMP_F32) => fb(f(a, 0).mul_add(f(b, 1), f32::from_bits(d as u32)));
    0x13d => XnorB32 "v_xnor_b32" [1,1,1] => (!(a32 ^ b32)) as u64;
    // VOP1 (e32 opcode n = code - 0x140); also VOP3 (e64).
    0x140 => Nop "v_nop" [] flags(NO_SDWA, NO_DPP) => 0;
    0x141 => MovB32 "v_mov_b32" [1,1] => a32 as u64;
    0x142 => ReadfirstlaneB32 "v_readfirstlane_b32" [1,1] flags(SGPR_DST, CROSS_LANE) => a32 as u64;
    0x143 => CvtI32F64 "v_cvt_i32_f64" [1,2] => (fd(a, 0) as i32) as u32 as u64;
    0x144 => CvtF64I32 "v_cvt_f64_i32" [2,1] => db(ai as f64);
    0x145 => CvtF32I32 "v_cvt_f32_i32" [1,1] => fb(ai as f32);
    0x146 => CvtF32U32 "v_cvt_f32_u32" [1,1] => fb(a32 as f32);
    0x147 => CvtU32F32 "v_cvt_u32_f32" [1,1] => (f(a, 0) as u32) as u64;
    0x148 => CvtI32F32 "v_cvt_i32_f32" [1,1] => (f(a, 0) as i32) as u32 as u64;
    0x14a => CvtF16F32 "v_cvt_f16_f32" [1,1] => hb(f(a, 0) as f64);
    0x14b => CvtF32F16 "v_cvt_f32_f16" [1,1] flags(F16) => fb(h(a, 0) as f32);
    0x14f => CvtF32F64 "v_cvt_f32_f64" [1,2] => fb(fd(a, 0) as f32);
    0x150 => CvtF64F32 "v_cvt_f64_f32" [2,1] => db(f(a, 0) as f64);
    0x151 => CvtF32Ubyte0 "v_cvt_f32_ubyte0" [1,1] => fb((a32 & 0xff) as f32);
    0x152 => CvtF32Ubyte1 "v_cvt_f32_ubyte1" [1,1] => fb(((a32 >> 8) & 0xff) as f32);
    0x153 => CvtF32Ubyte2 "v_cvt_f32_ubyte2" [1,1] => fb(((a32 >> 16) & 0xff) as f32);
    0x154 => CvtF32Ubyte3 "v_cvt_f32_ubyte3" [1,1] => fb((a32 >> 24) as f32);
    0x155 => CvtU32F64 "v_cvt_u32_f64" [1,2] => (fd(a, 0) as u32) as u64;
    0x156 => CvtF64U32 "v_cvt_f64_u32" [2,1] => db(a32 as f64);
    0x157 => TruncF64 "v_trunc_f64" [2,2] => db(fd(a, 0).trunc());
    0x158 => CeilF64 "v_ceil_f64" [2,2] => db(fd(a, 0).ceil());
    0x159 => RndneF64 "v_rndne_f64" [2,2] => db(fd(a, 0).round_ties_even());
    0x15a => FloorF64 "v_floor_f64" [2,2] => db(fd(a, 0).floor());
    0x15b => FractF32 "v_fract_f32" [1,1] => {
        let x = f(a, 0);
        fb((x - x.floor()).min(f32::from_bits(0x3f7f_ffff)))
    };
    0x15c => TruncF32 "v_trunc_f32" [1,1] => fb(f(a, 0).trunc());
    0x15d => CeilF32 "v_ceil_f32" [1,1] => fb(f(a, 0).ceil());
    0x15e => RndneF32 "v_rndne_f32" [1,1] => fb(f(a, 0).round_ties_even());
    0x15f => FloorF32 "v_floor_f32" [1,1] => fb(f(a, 0).floor());
    // Transcendentals: computed in f64 and rounded once (within 1 ulp
    // of the hardware, whose accuracy is 1 ulp).
    0x160 => ExpF32 "v_exp_f32" [1,1] => fb((f(a, 0) as f64).exp2() as f32);
    0x161 => LogF32 "v_log_f32" [1,1] => fb((f(a, 0) as f64).log2() as f32);
    0x162 => RcpF32 "v_rcp_f32" [1,1] => fb(1.0 / f(a, 0));
    0x163 => RcpIflagF32 "v_rcp_iflag_f32" [1,1] => fb((1.0 / f(a, 0) as f64) as f32);
    0x164 => RsqF32 "v_rsq_f32" [1,1] => fb((1.0 / (f(a, 0) as f64).sqrt()) as f32);
    0x165 => RcpF64 "v_rcp_f64" [2,2] => db(1.0 / fd(a, 0));
    0x166 => RsqF64 "v_rsq_f64" [2,2] => db(1.0 / fd(a, 0).sqrt());
    0x167 => SqrtF32 "v_sqrt_f32" [1,1] => fb(f(a, 0).sqrt());
    0x168 => SqrtF64 "v_sqrt_f64" [2,2] => db(fd(a, 0).sqrt());
    0x169 => SinF32 "v_sin_f32" [1,1] => fb(((f(a, 0) as f64) * std::f64::consts::TAU).sin() as f32);
    0x16a => CosF32 "v_cos_f32" [1,1] => fb(((f(a, 0) as f64) * std::f64::consts::TAU).cos() as f32);
    0x16b => NotB32 "v_not_b32" [1,1] => (!a32) as u64;
    0x16c => BfrevB32 "v_bfrev_b32" [1,1] => a32.reverse_bits() as u64;
    0x16d => FfbhU32 "v_ffbh_u32" [1,1] => {
        if a32 == 0 {
            u32::MAX as u64
        } else {
            a32.leading_zeros() as u64
        }
    };
    0x16e => FfblB32 "v_ffbl_b32" [1,1] => {
        if a32 == 0 {
            u32::MAX as u64
        } else {
            a32.trailing_zeros() as u64
        }
    };
    0x16f => FfbhI32 "v_ffbh_i32" [1,1] => {
        let x = if ai < 0 { !a32 } else { a32 };
        if x == 0 {
            u32::MAX as u64
        } else {
            x.leading_zeros() as u64
        }
    };
    0x170 => FrexpExpI32F64 "v_frexp_exp_i32_f64" [1,2] => frexp(fd(a, 0)).1 as u32 as u64;
    0x171 => FrexpMantF64 "v_frexp_mant_f64" [2,2] => db(frexp(fd(a, 0)).0);
    0x172 => FractF64 "v_fract_f64" [2,2] => {
        let x = fd(a, 0);
        db((x - x.floor()).min(f64::from_bits(0x3fef_ffff_ffff_ffff)))
    };
    0x173 => FrexpExpI32F32 "v_frexp_exp_i32_f32" [1,1] => frexp(f(a, 0) as f64).1 as u32 as u64;
    0x174 => FrexpMantF32 "v_frexp_mant_f32" [1,1] => fb(frexp(f(a, 0) as f64).0 as f32);
    0x179 => CvtF16U16 "v_cvt_f16_u16" [1,1] flags(INT16) => hb((a as u16) as f64);
    0x17a => CvtF16I16 "v_cvt_f16_i16" [1,1] flags(INT16) => hb((a as u16 as i16) as f64);
    0x17b => CvtU16F16 "v_cvt_u16_f16" [1,1] flags(F16) => (h(a, 0) as u16) as u64;
    0x17c => CvtI16F16 "v_cvt_i16_f16" [1,1] flags(F16) => (h(a, 0) as i16) as u16 as u64;
    0x17e => SqrtF16 "v_sqrt_f16" [1,1] flags(F16) => hb(h(a, 0).sqrt());
    0x184 => FloorF16 "v_floor_f16" [1,1] flags(F16) => hb(h(a, 0).floor());
    0x185 => CeilF16 "v_ceil_f16" [1,1] flags(F16) => hb(h(a, 0).ceil());
    0x186 => TruncF16 "v_trunc_f16" [1,1] flags(F16) => hb(h(a, 0).trunc());
    0x187 => RndneF16 "v_rndne_f16" [1,1] flags(F16) => hb(h(a, 0).round_ties_even());
    0x191 => SwapB32 "v_swap_b32" [1,1] flags(NO_SUFFIX, READS_DST, NO_SDWA, NO_DPP) => a32 as u64;
    // VOP3 only.
    0x1c0 => MadLegacyF32 "v_mad_legacy_f32" [1,1,1,1] => {
        fb(f(a, 0) * f(b, 1) + f(c, 2))
    };
    0x1c1 => MadF32 "v_mad_f32" [1,1,1,1] flags(CLAMP_F32) => {
        fb(f(a, 0) * f(b, 1) + f(c, 2))
    };
    0x1c2 => MadI32I24 "v_mad_i32_i24" [1,1,1,1] => {
        ((ai << 8 >> 8).wrapping_mul(bi << 8 >> 8)).wrapping_add(ci) as u32 as u64
    };
    0x1c3 => MadU32U24 "v_mad_u32_u24" [1,1,1,1] => {
        ((a32 & 0xff_ffff)
            .wrapping_mul(b32 & 0xff_ffff)
            .wrapping_add(c32)) as u64
    };
    0x1c8 => BfeU32 "v_bfe_u32" [1,1,1,1] => bfe(a32 as u64, b32 & 31, c32 & 31, false, 32);
    0x1c9 => BfeI32 "v_bfe_i32" [1,1,1,1] => bfe(a32 as u64, b32 & 31, c32 & 31, true, 32);
    0x1ca => BfiB32 "v_bfi_b32" [1,1,1,1] => ((a32 & b32) | (!a32 & c32)) as u64;
    0x1cb => FmaF32 "v_fma_f32" [1,1,1,1] flags(CLAMP_F32) => fb(f(a, 0).mul_add(f(b, 1), f(c, 2)));
    0x1cc => FmaF64 "v_fma_f64" [2,2,2,2] => db(fd(a, 0).mul_add(fd(b, 1), fd(c, 2)));
    // Per byte: the rounded average of the bytes of a and b.
    0x1cd => LerpU8 "v_lerp_u8" [1,1,1,1] => {
        let byte = |x: u32, k: u32| (x >> (8 * k)) & 0xff;
        (0..4).fold(0u32, |v, k| {
            v | ((byte(a32, k) + byte(b32, k) + (byte(c32, k) & 1)) >> 1) << (8 * k)
        }) as u64
    };
    0x1ce => AlignbitB32 "v_alignbit_b32" [1,1,1,1] => ((((a32 as u64) << 32 | b32 as u64) >> (c32 & 31)) as u32) as u64;
    0x1cf => AlignbyteB32 "v_alignbyte_b32" [1,1,1,1] => ((((a32 as u64) << 32 | b32 as u64) >> (8 * (c32 & 3))) as u32) as u64;
    0x1d0 => Min3F32 "v_min3_f32" [1,1,1,1] => fb(f(a, 0).min(f(b, 1)).min(f(c, 2)));
    0x1d1 => Min3I32 "v_min3_i32" [1,1,1,1] => ai.min(bi).min(ci) as u32 as u64;
    0x1d2 => Min3U32 "v_min3_u32" [1,1,1,1] => a32.min(b32).min(c32) as u64;
    0x1d3 => Max3F32 "v_max3_f32" [1,1,1,1] => fb(f(a, 0).max(f(b, 1)).max(f(c, 2)));
    0x1d4 => Max3I32 "v_max3_i32" [1,1,1,1] => ai.max(bi).max(ci) as u32 as u64;
    0x1d5 => Max3U32 "v_max3_u32" [1,1,1,1] => a32.max(b32).max(c32) as u64;
    0x1d6 => Med3F32 "v_med3_f32" [1,1,1,1] flags(CLAMP_F32) => {
        let (x, y, z) = (f(a, 0), f(b, 1), f(c, 2));
        fb(x.max(y).min(z).max(x.min(y)))
    };
    0x1d7 => Med3I32 "v_med3_i32" [1,1,1,1] => (ai.max(bi).min(ci).max(ai.min(bi))) as u32 as u64;
    0x1d8 => Med3U32 "v_med3_u32" [1,1,1,1] => (a32.max(b32).min(c32).max(a32.min(b32))) as u64;
    // Sums of absolute differences (bytes, halves, words) plus c.
    0x1d9 => SadU8 "v_sad_u8" [1,1,1,1] => sad(a32, b32, 8).wrapping_add(c32) as u64;
    0x1da => SadHiU8 "v_sad_hi_u8" [1,1,1,1] => (sad(a32, b32, 8) << 16).wrapping_add(c32) as u64;
    0x1db => SadU16 "v_sad_u16" [1,1,1,1] => sad(a32, b32, 16).wrapping_add(c32) as u64;
    0x1dc => SadU32 "v_sad_u32" [1,1,1,1] => a32.abs_diff(b32).wrapping_add(c32) as u64;
    0x1de => DivFixupF32 "v_div_fixup_f32" [1,1,1,1] => fb(div_fixup(f(a, 0) as f64, f(b, 1) as f64, f(c, 2) as f64) as f32);
    0x1df => DivFixupF64 "v_div_fixup_f64" [2,2,2,2] => db(div_fixup(fd(a, 0), fd(b, 1), fd(c, 2)));
    // Exact reciprocals make scaling unnecessary: the scale
    // instructions pass their operand through and never ask for the
    // fmas rescale (VCC = 0).
    0x1e0 => DivScaleF32 "v_div_scale_f32" [1,1,1,1] flags(CARRY_OUT) => fb(f(a, 0));
    0x1e1 => DivScaleF64 "v_div_scale_f64" [2,2,2,2] flags(CARRY_OUT) => db(fd(a, 0));
    0x1e2 => DivFmasF32 "v_div_fmas_f32" [1,1,1,1] => {
        let v = f(a, 0).mul_add(f(b, 1), f(c, 2));
        let scale = if (vcc_in >> lane) & 1 != 0 {
            2f32.powi(32)
        } else {
            1.0
        };
        fb(v * scale)
    };
    0x1e3 => DivFmasF64 "v_div_fmas_f64" [2,2,2,2] => {
        let v = fd(a, 0).mul_add(fd(b, 1), fd(c, 2));
        let scale = if (vcc_in >> lane) & 1 != 0 {
            2f64.powi(64)
        } else {
            1.0
        };
        db(v * scale)
    };
    0x1e8 => MadU64U32 "v_mad_u64_u32" [2,1,1,2] flags(CARRY_OUT) => {
        let p = (a32 as u128) * (b32 as u128) + c as u128;
        carry = p >> 64 != 0;
        p as u64
    };
    0x1e9 => MadI64I32 "v_mad_i64_i32" [2,1,1,2] flags(CARRY_OUT) => {
        let p = (ai as i128) * (bi as i128) + (c as i64 as i128);
        carry = p > i64::MAX as i128 || p < i64::MIN as i128;
        p as u64
    };
    0x1ea => MadLegacyF16 "v_mad_legacy_f16" [1,1,1,1] flags(F16) => mad_f16(h(a, 0), h(b, 1), h(c, 2));
    0x1ee => FmaLegacyF16 "v_fma_legacy_f16" [1,1,1,1] flags(F16) => fma_f16(h(a, 0), h(b, 1), h(c, 2));
    0x1ef => DivFixupLegacyF16 "v_div_fixup_legacy_f16" [1,1,1,1] flags(F16) => hb(div_fixup(h(a, 0), h(b, 1), h(c, 2)));
    0x1eb => MadLegacyU16 "v_mad_legacy_u16" [1,1,1,1] flags(INT16) => (a as u16).wrapping_mul(b as u16).wrapping_add(c as u16) as u64;
    0x1ed => PermB32 "v_perm_b32" [1,1,1,1] => {
        let src = (a32 as u64) << 32 | b32 as u64;
        let mut v = 0u32;
        for k in 0..4 {
            let sel = (c32 >> (8 * k)) & 0xff;
            let byte = match sel {
                0..=7 => (src >> (8 * sel)) as u8 as u32,
                8..=11 => {
                    let w = (src >> (16 * (sel - 8) + 8)) as u8;
                    if w & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                }
                12 => 0,
                _ => 0xff,
            };
            v |= byte << (8 * k);
        }
        v as u64
    };
    0x1ec => MadLegacyI16 "v_mad_legacy_i16" [1,1,1,1] flags(INT16) => (a as i16).wrapping_mul(b as i16).wrapping_add(c as i16) as u16 as u64;
    0x1f1 => MadU32U16 "v_mad_u32_u16" [1,1,1,1] flags(INT16) => ((a as u16 as u32) * (b as u16 as u32)).wrapping_add(c32) as u64;
    0x1f2 => MadI32I16 "v_mad_i32_i16" [1,1,1,1] flags(INT16) => ((a as i16 as i32) * (b as i16 as i32)).wrapping_add(ci) as u32 as u64;
    0x1f3 => XadU32 "v_xad_u32" [1,1,1,1] => (a32 ^ b32).wrapping_add(c32) as u64;
    0x1f4 => Min3F16 "v_min3_f16" [1,1,1,1] flags(F16) => hb(h(a, 0).min(h(b, 1)).min(h(c, 2)));
    0x1f5 => Min3I16 "v_min3_i16" [1,1,1,1] flags(INT16) => (a as i16).min(b as i16).min(c as i16) as u16 as u64;
    0x1f6 => Min3U16 "v_min3_u16" [1,1,1,1] flags(INT16) => (a as u16).min(b as u16).min(c as u16) as u64;
    0x1f7 => Max3F16 "v_max3_f16" [1,1,1,1] flags(F16) => hb(h(a, 0).max(h(b, 1)).max(h(c, 2)));
    0x1f8 => Max3I16 "v_max3_i16" [1,1,1,1] flags(INT16) => (a as i16).max(b as i16).max(c as i16) as u16 as u64;
    0x1f9 => Max3U16 "v_max3_u16" [1,1,1,1] flags(INT16) => (a as u16).max(b as u16).max(c as u16) as u64;
    0x1fa => Med3F16 "v_med3_f16" [1,1,1,1] flags(F16) => {
        let (x, y, z) = (h(a, 0), h(b, 1), h(c, 2));
        hb(x.max(y).min(z).max(x.min(y)))
    };
    0x1fb => Med3I16 "v_med3_i16" [1,1,1,1] flags(INT16) => {
        let (x, y, z) = (a as i16, b as i16, c as i16);
        x.max(y).min(z).max(x.min(y)) as u16 as u64
    };
    0x1fc => Med3U16 "v_med3_u16" [1,1,1,1] flags(INT16) => {
        let (x, y, z) = (a as u16, b as u16, c as u16);
        x.max(y).min(z).max(x.min(y)) as u64
    };
    0x1fd => LshlAddU32 "v_lshl_add_u32" [1,1,1,1] => (a32.wrapping_shl(b32 & 31)).wrapping_add(c32) as u64;
    0x1fe => AddLshlU32 "v_add_lshl_u32" [1,1,1,1] => (a32.wrapping_add(b32)).wrapping_shl(c32 & 31) as u64;
    0x1ff => Add3U32 "v_add3_u32" [1,1,1,1] => a32.wrapping_add(b32).wrapping_add(c32) as u64;
    0x200 => LshlOrB32 "v_lshl_or_b32" [1,1,1,1] => (a32.wrapping_shl(b32 & 31) | c32) as u64;
    0x201 => AndOrB32 "v_and_or_b32" [1,1,1,1] => ((a32 & b32) | c32) as u64;
    0x202 => Or3B32 "v_or3_b32" [1,1,1,1] => (a32 | b32 | c32) as u64;
    0x204 => MadU16 "v_mad_u16" [1,1,1,1] flags(INT16) => (a as u16).wrapping_mul(b as u16).wrapping_add(c as u16) as u64;
    0x205 => MadI16 "v_mad_i16" [1,1,1,1] flags(INT16) => (a as i16).wrapping_mul(b as i16).wrapping_add(c as i16) as u16 as u64;
    0x203 => MadF16 "v_mad_f16" [1,1,1,1] flags(F16) => mad_f16(h(a, 0), h(b, 1), h(c, 2));
    // Fused: one rounding of the exact a * b + c (see `fma_f16`).
    0x206 => FmaF16 "v_fma_f16" [1,1,1,1] flags(F16) => fma_f16(h(a, 0), h(b, 1), h(c, 2));
    0x207 => DivFixupF16 "v_div_fixup_f16" [1,1,1,1] flags(F16) => hb(div_fixup(h(a, 0), h(b, 1), h(c, 2)));
    0x280 => AddF64 "v_add_f64" [2,2,2] => db(fd(a, 0) + fd(b, 1));
    0x281 => MulF64 "v_mul_f64" [2,2,2] => db(fd(a, 0) * fd(b, 1));
    0x282 => MinF64 "v_min_f64" [2,2,2] => db(fd(a, 0).min(fd(b, 1)));
    0x283 => MaxF64 "v_max_f64" [2,2,2] => db(fd(a, 0).max(fd(b, 1)));
    0x284 => LdexpF64 "v_ldexp_f64" [2,2,1] => db(ldexp(fd(a, 0), bi));
    0x285 => MulLoU32 "v_mul_lo_u32" [1,1,1] => a32.wrapping_mul(b32) as u64;
    0x286 => MulHiU32 "v_mul_hi_u32" [1,1,1] => ((a32 as u64 * b32 as u64) >> 32) as u32 as u64;
    0x287 => MulHiI32 "v_mul_hi_i32" [1,1,1] => (((ai as i64 * bi as i64) >> 32) as u32) as u64;
    0x288 => LdexpF32 "v_ldexp_f32" [1,1,1] => fb(ldexp(f(a, 0) as f64, bi) as f32);
    0x289 => ReadlaneB32 "v_readlane_b32" [1,1,1] flags(SGPR_DST, CROSS_LANE) => 0;
    0x28a => WritelaneB32 "v_writelane_b32" [1,1,1] flags(CROSS_LANE) => 0;
    0x28b => BcntU32B32 "v_bcnt_u32_b32" [1,1,1] => (a32.count_ones().wrapping_add(b32)) as u64;
    0x28c => MbcntLoU32B32 "v_mbcnt_lo_u32_b32" [1,1,1] => {
        let below = if lane >= 32 {
            u32::MAX
        } else {
            (1u32 << lane) - 1
        };
        ((a32 & below).count_ones().wrapping_add(b32)) as u64
    };
    0x28d => MbcntHiU32B32 "v_mbcnt_hi_u32_b32" [1,1,1] => {
        let below = if lane < 32 {
            0
        } else if lane == 63 {
            u32::MAX >> 1
        } else {
            (1u32 << (lane - 32)) - 1
        };
        ((a32 & below).count_ones().wrapping_add(b32)) as u64
    };
    0x28f => LshlrevB64 "v_lshlrev_b64" [2,1,2] => b << (a32 & 63);
    0x290 => LshrrevB64 "v_lshrrev_b64" [2,1,2] => b >> (a32 & 63);
    0x291 => AshrrevI64 "v_ashrrev_i64" [2,1,2] => ((b as i64) >> (a32 & 63)) as u64;
    0x293 => BfmB32 "v_bfm_b32" [1,1,1] => ((((1u64 << (a32 & 31)) - 1) as u32).wrapping_shl(b32 & 31)) as u64;
    // Both f32 operands rounded towards zero to f16, packed (b high).
    0x296 => CvtPkrtzF16F32 "v_cvt_pkrtz_f16_f32" [1,1,1] => (f16_rtz(f(a, 0)) | f16_rtz(f(b, 1)) << 16) as u64;
    0x29c => AddI32 "v_add_i32" [1,1,1] sat(|a, b| (a as i32).saturating_add(b as i32) as u32 as u64) => ai.wrapping_add(bi) as u32 as u64;
    0x29d => SubI32 "v_sub_i32" [1,1,1] sat(|a, b| (a as i32).saturating_sub(b as i32) as u32 as u64) => ai.wrapping_sub(bi) as u32 as u64;
    // Two f16 bit patterns (abs/neg on their sign bits), b high.
    0x2a0 => PackB32F16 "v_pack_b32_f16" [1,1,1] flags(F16) => f16_bits(a, 0, abs, neg) | f16_bits(b, 1, abs, neg) << 16;
}
