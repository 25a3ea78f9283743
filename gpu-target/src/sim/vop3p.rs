//! The VOP3P operations: packed 16-bit integer, f16 and f32 math, the
//! accumulation-register moves and the MFMA matrix operations, one row of
//! [`vop3p_ops!`] each: encoding number, LLVM mnemonic, operand widths,
//! the MFMA shape (`mfma(...)`) and the value one half of a packed result
//! takes from the matching halves of the operands.
//!
//! Adding a VOP3P instruction is one row here: the decoder and printer
//! (`decode.rs`) take the number, name and widths from the row, the
//! interpreter (`wave.rs`) runs [`Vop3pOp::half`] for each half of each
//! lane, or [`mfma`] with the row's shape. See docs/simulator.md, "Adding an
//! instruction".

use super::decode::opcodes;
use super::decode::OpKernel;
use super::wave::f16_to_f32;
use super::wave::f64_to_f16;

/// The element type of MFMA's A and B operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MfmaIn {
    /// One f32 per lane (one VGPR).
    F32,
    /// Four f16 per lane (two VGPRs).
    F16,
    /// Four bf16 per lane (two VGPRs; the `_1k` forms).
    Bf16,
    /// Four signed 8-bit integers per lane (one VGPR); C and D are i32 and
    /// the sums wrap.
    I8,
    /// One f64 per lane (two VGPRs); C and D are f64 (register pairs).
    F64,
}

/// An MFMA shape: `blocks` independent products of an `m` x `k` matrix A by
/// a `k` x `n` matrix B, added to C, results in f32 (i32 for `I8` inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MfmaShape {
    /// Rows of A and D.
    pub m: usize,
    /// Columns of B and D.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
    /// Independent blocks.
    pub blocks: usize,
    /// A and B element type.
    pub input: MfmaIn,
}

macro_rules! vop3p_ops {
    (@shape) => { None };
    (@shape $m:literal, $n:literal, $k:literal, $b:literal, $t:ident) => {
        Some(MfmaShape { m: $m, n: $n, k: $k, blocks: $b, input: MfmaIn::$t })
    };
    (
        half($a:ident, $b:ident, $c:ident, $hi:ident) { $($prelude:tt)* }
        $( $num:literal => $var:ident $name:literal [$($w:literal),*]
            $(mfma($mm:literal, $nn:literal, $kk:literal, $bb:literal, $t:ident))? => $body:expr; )*
    ) => {
        opcodes! {
            /// VOP3P opcodes (gfx90a), operand widths in dwords.
            Vop3pOp { $($num => $var $name [$($w),*],)* }
        }
        impl Vop3pOp {
            /// The MFMA shape of a matrix operation.
            pub fn mfma(self) -> Option<MfmaShape> {
                match self { $(Self::$var => vop3p_ops!(@shape $($mm, $nn, $kk, $bb, $t)?),)* }
            }
            /// One half (`hi`: the high one) of a packed result from the
            /// operands' selected halves (16 bits, or 32 for the f32 forms;
            /// neg modifiers already applied to the sign bits).
            #[inline(always)]
            #[allow(unused_variables, clippy::unnecessary_cast)]
            pub fn half(self, $a: u32, $b: u32, $c: u32, $hi: bool) -> u32 {
                $($prelude)*
                match self { $(Self::$var => $body,)* }
            }
        }
    };
}

impl Vop3pOp {
    /// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16`: each source
    /// is an f32 (op_sel_hi bit clear) or the f16 half op_sel selects;
    /// neg_lo negates and neg_hi takes the absolute value (printed as
    /// `-v` and `|v|`); executed by [`fma_mix`].
    pub fn is_mix(self) -> bool {
        matches!(
            self,
            Self::FmaMixF32 | Self::FmaMixloF16 | Self::FmaMixhiF16
        )
    }
}

/// The value of a mixed FMA (`op` a row of [`Vop3pOp::is_mix`]) from its
/// three sources (f16 ones converted exactly) into the destination's old
/// value `old`: `a * b + c` fused and rounded to f32 (clamped to [0, 1]
/// with `clamp`); the `_f16` forms round that to f16 into the low
/// (`mixlo`) or high (`mixhi`) half, the other half kept. The two
/// roundings are LLVM's reading: it selects `v_fma_mixlo_f16` for
/// `fptrunc(fma(fpext a, fpext b, c))`.
pub fn fma_mix(op: Vop3pOp, x: [f32; 3], clamp: bool, old: u32) -> u32 {
    let v = x[0].mul_add(x[1], x[2]);
    let v = if clamp { v.clamp(0.0, 1.0) } else { v };
    let h = f64_to_f16(v as f64) as u32;
    match op {
        Vop3pOp::FmaMixloF16 => (old & 0xffff_0000) | h,
        Vop3pOp::FmaMixhiF16 => (old & 0xffff) | h << 16,
        _ => v.to_bits(),
    }
}

/// An f16 bit pattern's value.
fn h(x: u32) -> f64 {
    f16_to_f32(x as u16) as f64
}

/// A value rounded to f16 bits.
fn hb(x: f64) -> u32 {
    f64_to_f16(x) as u32
}

/// An f32 bit pattern's value.
fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

vop3p_ops! {
    half(a, b, c, hi) {
        let (ua, ub, uc) = (a as u16, b as u16, c as u16);
        let (ia, ib) = (a as u16 as i16, b as u16 as i16);
    }
    0x00 => PkMadI16 "v_pk_mad_i16" [1,1,1,1] => ia.wrapping_mul(ib).wrapping_add(uc as i16) as u16 as u32;
    0x01 => PkMulLoU16 "v_pk_mul_lo_u16" [1,1,1] => ua.wrapping_mul(ub) as u32;
    0x02 => PkAddI16 "v_pk_add_i16" [1,1,1] => ia.wrapping_add(ib) as u16 as u32;
    0x03 => PkSubI16 "v_pk_sub_i16" [1,1,1] => ia.wrapping_sub(ib) as u16 as u32;
    0x04 => PkLshlrevB16 "v_pk_lshlrev_b16" [1,1,1] => ub.wrapping_shl(ua as u32 & 15) as u32;
    0x05 => PkLshrrevB16 "v_pk_lshrrev_b16" [1,1,1] => ub.wrapping_shr(ua as u32 & 15) as u32;
    0x06 => PkAshrrevI16 "v_pk_ashrrev_i16" [1,1,1] => ib.wrapping_shr(ua as u32 & 15) as u16 as u32;
    0x07 => PkMaxI16 "v_pk_max_i16" [1,1,1] => ia.max(ib) as u16 as u32;
    0x08 => PkMinI16 "v_pk_min_i16" [1,1,1] => ia.min(ib) as u16 as u32;
    0x09 => PkMadU16 "v_pk_mad_u16" [1,1,1,1] => ua.wrapping_mul(ub).wrapping_add(uc) as u32;
    0x0a => PkAddU16 "v_pk_add_u16" [1,1,1] => ua.wrapping_add(ub) as u32;
    0x0b => PkSubU16 "v_pk_sub_u16" [1,1,1] => ua.wrapping_sub(ub) as u32;
    0x0c => PkMaxU16 "v_pk_max_u16" [1,1,1] => ua.max(ub) as u32;
    0x0d => PkMinU16 "v_pk_min_u16" [1,1,1] => ua.min(ub) as u32;
    // f16: the exact a * b + c rounded once (see `valu::fma_f16`).
    0x0e => PkFmaF16 "v_pk_fma_f16" [1,1,1,1] => super::valu::fma_f16(h(a), h(b), h(c)) as u32;
    0x0f => PkAddF16 "v_pk_add_f16" [1,1,1] => hb(h(a) + h(b));
    0x10 => PkMulF16 "v_pk_mul_f16" [1,1,1] => hb(h(a) * h(b));
    // The f16/f32 mixed FMAs: their operands and result are not halves of
    // packed values, `fma_mix` computes them (the expression is unused).
    0x20 => FmaMixF32 "v_fma_mix_f32" [1,1,1,1] => 0;
    0x21 => FmaMixloF16 "v_fma_mixlo_f16" [1,1,1,1] => 0;
    0x22 => FmaMixhiF16 "v_fma_mixhi_f16" [1,1,1,1] => 0;
    0x11 => PkMinF16 "v_pk_min_f16" [1,1,1] => hb(h(a).min(h(b)));
    0x12 => PkMaxF16 "v_pk_max_f16" [1,1,1] => hb(h(a).max(h(b)));
    0x30 => PkFmaF32 "v_pk_fma_f32" [2,2,2,2] => f(a).mul_add(f(b), f(c)).to_bits();
    0x31 => PkMulF32 "v_pk_mul_f32" [2,2,2] => (f(a) * f(b)).to_bits();
    0x32 => PkAddF32 "v_pk_add_f32" [2,2,2] => (f(a) + f(b)).to_bits();
    // The low result takes src0's selected half, the high one src1's.
    0x33 => PkMovB32 "v_pk_mov_b32" [2,2,2] => if hi { b } else { a };
    0x40 => MfmaF32_32x32x1f32 "v_mfma_f32_32x32x1f32" [32,1,1,32] mfma(32, 32, 1, 2, F32) => 0;
    0x41 => MfmaF32_16x16x1f32 "v_mfma_f32_16x16x1f32" [16,1,1,16] mfma(16, 16, 1, 4, F32) => 0;
    0x42 => MfmaF32_4x4x1f32 "v_mfma_f32_4x4x1f32" [4,1,1,4] mfma(4, 4, 1, 16, F32) => 0;
    0x44 => MfmaF32_32x32x2f32 "v_mfma_f32_32x32x2f32" [16,1,1,16] mfma(32, 32, 2, 1, F32) => 0;
    0x45 => MfmaF32_16x16x4f32 "v_mfma_f32_16x16x4f32" [4,1,1,4] mfma(16, 16, 4, 1, F32) => 0;
    0x48 => MfmaF32_32x32x4f16 "v_mfma_f32_32x32x4f16" [32,2,2,32] mfma(32, 32, 4, 2, F16) => 0;
    0x49 => MfmaF32_16x16x4f16 "v_mfma_f32_16x16x4f16" [16,2,2,16] mfma(16, 16, 4, 4, F16) => 0;
    0x4a => MfmaF32_4x4x4f16 "v_mfma_f32_4x4x4f16" [4,2,2,4] mfma(4, 4, 4, 16, F16) => 0;
    0x4c => MfmaF32_32x32x8f16 "v_mfma_f32_32x32x8f16" [16,2,2,16] mfma(32, 32, 8, 1, F16) => 0;
    0x4d => MfmaF32_16x16x16f16 "v_mfma_f32_16x16x16f16" [4,2,2,4] mfma(16, 16, 16, 1, F16) => 0;
    0x50 => MfmaI32_32x32x4i8 "v_mfma_i32_32x32x4i8" [32,1,1,32] mfma(32, 32, 4, 2, I8) => 0;
    0x51 => MfmaI32_16x16x4i8 "v_mfma_i32_16x16x4i8" [16,1,1,16] mfma(16, 16, 4, 4, I8) => 0;
    0x52 => MfmaI32_4x4x4i8 "v_mfma_i32_4x4x4i8" [4,1,1,4] mfma(4, 4, 4, 16, I8) => 0;
    0x54 => MfmaI32_32x32x8i8 "v_mfma_i32_32x32x8i8" [16,1,1,16] mfma(32, 32, 8, 1, I8) => 0;
    0x55 => MfmaI32_16x16x16i8 "v_mfma_i32_16x16x16i8" [4,1,1,4] mfma(16, 16, 16, 1, I8) => 0;
    0x58 => AccvgprReadB32 "v_accvgpr_read_b32" [1,1] => 0;
    0x59 => AccvgprWriteB32 "v_accvgpr_write_b32" [1,1] => 0;
    0x6e => MfmaF64_16x16x4f64 "v_mfma_f64_16x16x4f64" [8,2,2,8] mfma(16, 16, 4, 1, F64) => 0;
    0x6f => MfmaF64_4x4x4f64 "v_mfma_f64_4x4x4f64" [2,2,2,2] mfma(4, 4, 4, 4, F64) => 0;
    0x63 => MfmaF32_32x32x4bf16_1k "v_mfma_f32_32x32x4bf16_1k" [32,2,2,32] mfma(32, 32, 4, 2, Bf16) => 0;
    0x64 => MfmaF32_16x16x4bf16_1k "v_mfma_f32_16x16x4bf16_1k" [16,2,2,16] mfma(16, 16, 4, 4, Bf16) => 0;
    0x65 => MfmaF32_4x4x4bf16_1k "v_mfma_f32_4x4x4bf16_1k" [4,2,2,4] mfma(4, 4, 4, 16, Bf16) => 0;
    0x66 => MfmaF32_32x32x8bf16_1k "v_mfma_f32_32x32x8bf16_1k" [16,2,2,16] mfma(32, 32, 8, 1, Bf16) => 0;
    0x67 => MfmaF32_16x16x16bf16_1k "v_mfma_f32_16x16x16bf16_1k" [4,2,2,4] mfma(16, 16, 16, 1, Bf16) => 0;
}

const LANES: usize = 64;

/// Element `e` of a lane's A or B operand (`regs`: the operand's VGPRs,
/// one row of 64 lanes each).
fn element(input: MfmaIn, regs: &[[u32; LANES]], lane: usize, e: usize) -> f32 {
    match input {
        MfmaIn::F32 | MfmaIn::F64 => f32::from_bits(regs[0][lane]),
        MfmaIn::I8 => (regs[0][lane] >> (8 * e)) as u8 as i8 as f32,
        MfmaIn::F16 | MfmaIn::Bf16 => {
            let bits = (regs[e / 2][lane] >> (16 * (e % 2))) & 0xffff;
            if input == MfmaIn::F16 {
                f16_to_f32(bits as u16)
            } else {
                f32::from_bits(bits << 16)
            }
        }
    }
}

/// D = A * B + C for every block of `s`, on operands as the hardware lays
/// them out over the wave (AMD's matrix instruction calculator shows the
/// same layouts):
/// - A: element `(i, k)` of block `b` is element `k % E` of lane
///   `i + m * (b * k/E + k / E)`, with `E` elements per lane (1 for f32,
///   4 for f16/bf16); B likewise with column `j` for row `i`.
/// - C and D: the rows of all blocks form groups of 4, numbered
///   `g = b * m/4 + i/4`; element `(i, j)` is in lane `j + n * (g % G)` and
///   register `4 * (g / G) + i % 4`, with `G = 64 / n` lane groups.
///
/// i8 inputs (four per lane in one VGPR) take the f16 layouts, with C and D
/// in i32. Each product is exact in f32 for f16/bf16 inputs; the sum over `k` is
/// accumulated in f64 and rounded once (equal to the hardware's result
/// whenever the sums are exact, as in the corpus).
pub fn mfma(
    s: MfmaShape,
    a: &[[u32; LANES]],
    b: &[[u32; LANES]],
    c: &[[u32; LANES]],
    d: &mut [[u32; LANES]],
) {
    if s.input == MfmaIn::F64 {
        return mfma_f64(s, a, b, c, d);
    }
    let e = match s.input {
        MfmaIn::F32 | MfmaIn::F64 => 1,
        MfmaIn::F16 | MfmaIn::Bf16 | MfmaIn::I8 => 4,
    };
    let int = s.input == MfmaIn::I8;
    // Every lane's elements as f64, once (not per product).
    let values = |regs: &[[u32; LANES]]| -> [[f64; 4]; LANES] {
        std::array::from_fn(|lane| {
            std::array::from_fn(|k| {
                if k < e {
                    element(s.input, regs, lane, k) as f64
                } else {
                    0.0
                }
            })
        })
    };
    let (av, bv) = (values(a), values(b));
    let groups = LANES / s.n;
    let kl = s.k / e;
    for blk in 0..s.blocks {
        for i in 0..s.m {
            let g = blk * (s.m / 4) + i / 4;
            let reg = 4 * (g / groups) + i % 4;
            for j in 0..s.n {
                let lane = j + s.n * (g % groups);
                let mut acc = if int {
                    c[reg][lane] as i32 as f64
                } else {
                    f32::from_bits(c[reg][lane]) as f64
                };
                // A(i, kk) and B(kk, j) of this block, kk = step * e + q,
                // summed in the order of kk (no division per product).
                for step in blk * kl..(blk + 1) * kl {
                    let (x, y) = (&av[i + s.m * step], &bv[j + s.n * step]);
                    if e == 1 {
                        acc += x[0] * y[0];
                    } else {
                        for q in 0..4 {
                            acc += x[q] * y[q];
                        }
                    }
                }
                // Integer sums are exact in f64 (|A * B| <= 2^14, k <= 16);
                // i32 wraps.
                d[reg][lane] = if int {
                    acc as i64 as i32 as u32
                } else {
                    (acc as f32).to_bits()
                };
            }
        }
    }
}

/// The f64 shapes, in the layouts AMD's matrix instruction calculator
/// gives for CDNA2 (`--architecture cdna2 --register-layout`), which differ
/// from the f32 ones: A's element `(i, k)` of block `b` is in lane
/// `i + m * b + 16 * k`, B's `(k, j)` in lane `j + n * b + 16 * k`, and D's
/// `(i, j)` in register pair `i / 4` of lane `j + n * b + 16 * (i % 4)`.
/// Each step over `k` is a fused multiply-add rounded to f64 (exact
/// whenever the sums are, as in the corpus).
fn mfma_f64(
    s: MfmaShape,
    a: &[[u32; LANES]],
    b: &[[u32; LANES]],
    c: &[[u32; LANES]],
    d: &mut [[u32; LANES]],
) {
    let val = |regs: &[[u32; LANES]], pair: usize, lane: usize| {
        f64::from_bits(regs[2 * pair][lane] as u64 | (regs[2 * pair + 1][lane] as u64) << 32)
    };
    for blk in 0..s.blocks {
        for i in 0..s.m {
            for j in 0..s.n {
                let lane = j + s.n * blk + 16 * (i % 4);
                let pair = i / 4;
                let mut acc = val(c, pair, lane);
                for kk in 0..s.k {
                    let x = val(a, 0, i + s.m * blk + 16 * kk);
                    let y = val(b, 0, j + s.n * blk + 16 * kk);
                    acc = x.mul_add(y, acc);
                }
                let bits = acc.to_bits();
                d[2 * pair][lane] = bits as u32;
                d[2 * pair + 1][lane] = (bits >> 32) as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_element_has_one_place() {
        for op in Vop3pOp::ALL {
            let Some(s) = op.mfma() else { continue };
            let regs = op.widths()[0] as usize;
            let per_elem = if s.input == MfmaIn::F64 { 2 } else { 1 };
            assert_eq!(
                s.m * s.n * s.blocks * per_elem,
                regs * LANES,
                "{}",
                op.name()
            );
            let c = vec![[0u32; LANES]; regs];
            let mut d = vec![[u32::MAX; LANES]; regs];
            let one = vec![[1.0f32.to_bits(); LANES]; 2];
            let a = if s.input == MfmaIn::F32 {
                one.clone()
            } else {
                vec![[0x3c00_3c00; LANES]; 2]
            };
            let a = match s.input {
                MfmaIn::Bf16 => vec![[0x3f80_3f80; LANES]; 2],
                MfmaIn::I8 => vec![[0x0101_0101; LANES]; 2],
                MfmaIn::F64 => vec![[0; LANES], [0x3ff0_0000; LANES]],
                _ => a,
            };
            mfma(s, &a, &a, &c, &mut d);
            // All ones: every element of D is k.
            let k = match s.input {
                MfmaIn::I8 => s.k as u32,
                MfmaIn::F64 => {
                    let k = (s.k as f64).to_bits();
                    assert!(d.chunks(2).all(
                        |p| (0..LANES).all(|l| (p[0][l] as u64 | (p[1][l] as u64) << 32) == k)
                    ));
                    continue;
                }
                _ => (s.k as f32).to_bits(),
            };
            assert!(d.iter().all(|r| r.iter().all(|&x| x == k)), "{}", op.name());
        }
    }

    #[test]
    fn packed_halves() {
        assert_eq!(Vop3pOp::PkSubI16.half(1, 3, 0, false), 0xfffe);
        assert_eq!(Vop3pOp::PkMulLoU16.half(0x100, 0x100, 0, false), 0);
        assert_eq!(Vop3pOp::PkAshrrevI16.half(1, 0x8000, 0, true), 0xc000);
        assert_eq!(Vop3pOp::PkAddF16.half(0x3c00, 0x3c00, 0, false), 0x4000);
        assert_eq!(Vop3pOp::PkMovB32.half(1, 2, 0, true), 2);
    }
}
