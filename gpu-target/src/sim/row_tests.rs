//! Unit tests of single instruction rows that clang-19 does not emit from
//! the corpus sources (VOP3 `op_sel` on the 16-bit multiply-adds and
//! `v_div_fixup_f16`, the fused `v_fma_f16`, the f64 MFMA `neg`
//! modifiers): each runs encodings taken from `llvm-mc-19 -mcpu=gfx90a
//! -show-encoding` through the decoder and the interpreter and checks the
//! results bit for bit.

use super::memory::BufferMemory;
use super::valu::fma_f16;
use super::wave::f16_to_f32;
use super::wave::f64_to_f16;
use super::wave::step;
use super::wave::Ctx;
use super::wave::Step;
use super::wave::WaveRegs;
use super::wave::LANES;

/// Runs `code` (8-byte instructions, then `s_endpgm`) on `r` with 64 bytes
/// of LDS.
fn run(code: &[[u8; 8]], r: &mut WaveRegs) -> Step {
    run_with_lds(code, r, &mut [0; 64])
}

/// Runs `code` (8-byte instructions, then `s_endpgm`) at 0x1000 on `r`
/// with the LDS `lds`, to the first step that does not continue.
pub(super) fn run_with_lds(code: &[[u8; 8]], r: &mut WaveRegs, lds: &mut [u8]) -> Step {
    let mem = BufferMemory::new();
    let mut bytes = code.concat();
    bytes.extend([0x00, 0x00, 0x81, 0xbf]); // s_endpgm
    run_code(&mem, bytes, r, lds)
}

/// Maps `code` at 0x1000 of `mem` and runs it on `r` with the LDS `lds`
/// (no private memory), to the first step that does not continue: the
/// runner of the row tests here, in `memops.rs` and in `wave.rs`.
pub(super) fn run_code(
    mem: &BufferMemory,
    code: Vec<u8>,
    r: &mut WaveRegs,
    lds: &mut [u8],
) -> Step {
    mem.map(0x1000, code);
    r.pc = 0x1000;
    let mut ctx = Ctx {
        mem,
        lds,
        scratch: &mut [],
        code: None,
    };
    loop {
        match step(r, &mut ctx) {
            Step::Continue => {}
            other => return other,
        }
    }
}

/// Sets VGPR `n` of every lane to `v`.
fn splat(r: &mut WaveRegs, n: usize, v: u32) {
    r.vgpr[n] = [v; LANES];
}

/// `v_mad_f16` (not fused: the product rounds to f16 first), `v_fma_f16`
/// (fused), their `_legacy` forms and `v_div_fixup_f16`, with VOP3
/// `op_sel` selecting source halves and the destination half (the legacy
/// forms take no `op_sel`). Expected values from exact rational
/// arithmetic.
#[test]
fn vop3_f16_mad_fma_div_fixup_with_op_sel() {
    let mut r = WaveRegs::new(24);
    r.exec = u64::MAX;
    splat(&mut r, 2, 0x3e00_4000); // hi 1.5, lo 2.0
    splat(&mut r, 3, 0x4200_3800); // hi 3.0, lo 0.5
    splat(&mut r, 4, 0x3400_3c00); // hi 0.25, lo 1.0
    splat(&mut r, 10, 0x0000_3c03); // lo 1 + 3 * 2^-10
    splat(&mut r, 11, 0x0000_bc00); // lo -1.0
    splat(&mut r, 12, 0x3c03_0001); // hi 1 + 3 * 2^-10, lo 2^-24
    splat(&mut r, 13, 0x3c03_0001);
    splat(&mut r, 14, 0xbc00_6400); // hi -1.0, lo 1024.0
    splat(&mut r, 17, 0x0000_8000); // lo -0.0
    for n in [5, 15, 16, 19] {
        splat(&mut r, n, 0xaaaa_bbbb);
    }
    let code = [
        // v_mad_f16 v5, v2, v3, v4 op_sel:[1,0,1,1]
        [0x05, 0x68, 0x03, 0xd2, 0x02, 0x07, 0x12, 0x04],
        // v_mad_f16 v6, v10, v10, v11
        [0x06, 0x00, 0x03, 0xd2, 0x0a, 0x15, 0x2e, 0x04],
        // v_fma_f16 v7, v10, v10, v11
        [0x07, 0x00, 0x06, 0xd2, 0x0a, 0x15, 0x2e, 0x04],
        // v_mad_legacy_f16 v8, v10, v10, v11
        [0x08, 0x00, 0xea, 0xd1, 0x0a, 0x15, 0x2e, 0x04],
        // v_fma_legacy_f16 v9, v12, v13, v14
        [0x09, 0x00, 0xee, 0xd1, 0x0c, 0x1b, 0x3a, 0x04],
        // v_div_fixup_f16 v15, v2, v3, v4 op_sel:[0,1,0,1]
        [0x0f, 0x50, 0x07, 0xd2, 0x02, 0x07, 0x12, 0x04],
        // v_div_fixup_f16 v16, v2, v17, v4 op_sel:[1,0,1,0]
        [0x10, 0x28, 0x07, 0xd2, 0x02, 0x23, 0x12, 0x04],
        // v_div_fixup_legacy_f16 v18, v2, v17, v4
        [0x12, 0x00, 0xef, 0xd1, 0x02, 0x23, 0x12, 0x04],
        // v_fma_f16 v19, v12, v13, v14 op_sel:[1,1,1,0]
        [0x13, 0x38, 0x06, 0xd2, 0x0c, 0x1b, 0x3a, 0x04],
    ];
    assert_eq!(run(&code, &mut r), Step::End);
    for lane in [0, 31, 63] {
        let v = |n: usize| r.vgpr[n][lane];
        // 1.5 * 0.5 + 0.25 = 1.0 into the high half, the low half kept.
        assert_eq!(v(5), 0x3c00_bbbb, "v_mad_f16 op_sel");
        // (1 + 3 * 2^-10)^2 - 1: the product rounds to 1 + 6 * 2^-10 first
        // (mad: 1.5 * 2^-8), or not (fma: 1.5 * 2^-8 + 2^-17).
        assert_eq!(v(6), 0x1e00, "v_mad_f16");
        assert_eq!(v(7), 0x1e02, "v_fma_f16");
        assert_eq!(v(8), 0x1e00, "v_mad_legacy_f16");
        // 2^-24 * 2^-24 + 1024: the product is far below half an ulp.
        assert_eq!(v(9), 0x6400, "v_fma_legacy_f16");
        // q = 2.0 (lo), d = 3.0 (hi), n = 1.0 (lo): no special case, the
        // quotient into the high half.
        assert_eq!(v(15), 0x4000_bbbb, "v_div_fixup_f16 op_sel");
        // d = -0: n / d is -inf (n 0.25 from the high half).
        assert_eq!(v(16), 0x0000_fc00, "v_div_fixup_f16 by -0");
        assert_eq!(v(18), 0x0000_fc00, "v_div_fixup_legacy_f16 by -0");
        assert_eq!(v(19), 0x0000_1e02, "v_fma_f16 op_sel high sources");
    }
}

/// The exact `a * b + c` of three finite f16 values rounded to f16 (ties
/// to even), in integers: every f16 is a multiple of 2^-24, so the exact
/// value is `n * 2^-48` with `n` an i128.
fn fma_f16_reference(a: u16, b: u16, c: u16) -> u16 {
    // The f16 as an integer multiple of 2^-24.
    let units = |h: u16| -> i128 {
        let e = ((h >> 10) & 0x1f) as u32;
        let m = (h & 0x3ff) as i128;
        let mag = if e == 0 { m } else { (m | 0x400) << (e - 1) };
        if h & 0x8000 != 0 {
            -mag
        } else {
            mag
        }
    };
    let n = units(a) * units(b) + (units(c) << 24);
    if n == 0 {
        let f = |h: u16| f16_to_f32(h) as f64;
        return f64_to_f16(f(a) * f(b) + f(c));
    }
    let mag = n.unsigned_abs();
    let top = 127 - mag.leading_zeros() as i32; // floor(log2 |n|)
                                                // The f16 quantum in units of 2^-48: 2^-24 below 2^-14, else ulp.
    let q_log = (top - 10).max(24);
    let quantum = 1u128 << q_log;
    let (mut q, rem) = (mag / quantum, mag % quantum);
    let half = quantum / 2;
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    // q * 2^(q_log - 48) is exact in f64; f64_to_f16 keeps it (or
    // overflows it to infinity).
    let v = q as f64 * 2f64.powi(q_log - 48);
    f64_to_f16(if n < 0 { -v } else { v })
}

/// `v_fma_f16` rounds once: its value equals the exact integer reference
/// on random finite operands of every magnitude (subnormals, far-apart
/// exponents, cancellation) and on operands picked to put the exact sum
/// next to a rounding boundary.
#[test]
fn fma_f16_is_the_exact_fused_result() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let finite = |h: u16| (h >> 10) & 0x1f != 0x1f;
    let val = |h: u16| f16_to_f32(h) as f64;
    let mut checked = 0;
    for i in 0..400_000u32 {
        let w = next();
        let (mut a, mut b, mut c) = (w as u16, (w >> 16) as u16, (w >> 32) as u16);
        if i % 4 == 1 {
            // Tiny product, large addend.
            a &= 0x83ff;
            b &= 0x87ff;
        } else if i % 4 == 2 {
            // The addend cancels most of the product.
            c = f64_to_f16(-(val(a) * val(b))) ^ ((w >> 48) as u16 & 3);
        } else if i % 4 == 3 {
            // The product near a tie of the addend's ulp.
            c = (w >> 48) as u16 & 0x7bff;
            a = 0x3c00 | (w >> 40) as u16 & 0x3ff;
        }
        if !(finite(a) && finite(b) && finite(c)) {
            continue;
        }
        let got = fma_f16(val(a), val(b), val(c)) as u16;
        assert_eq!(
            got,
            fma_f16_reference(a, b, c),
            "fma({a:#06x}, {b:#06x}, {c:#06x})"
        );
        checked += 1;
    }
    assert!(checked > 300_000, "{checked}");
}

/// The f64 MFMAs' `neg` modifiers are gfx940's: there the DGEMM shapes
/// read the BLGP field as `neg:[a,b,c]`; on gfx90a the field is BLGP (LLVM
/// 19 and AMD's library print `blgp:N`, and LLVM refuses `neg` for gfx90a),
/// a broadcast control the simulator does not model. Such an instruction
/// prints as on gfx90a and stops the wave with an illegal instruction, the
/// pc left at it; without the field the same instruction runs.
#[test]
fn f64_mfma_blgp_prints_as_gfx90a_and_is_illegal() {
    // v_mfma_f64_4x4x4f64 v[0:1], v[2:3], v[4:5], v[6:7] blgp:1
    let blgp = [0x00, 0x00, 0xef, 0xd3, 0x02, 0x09, 0x1a, 0x24];
    let text = super::decode::decode(&blgp).expect("decodes").to_string();
    assert_eq!(
        text,
        "v_mfma_f64_4x4x4f64 v[0:1], v[2:3], v[4:5], v[6:7] blgp:1"
    );
    let mut r = WaveRegs::new(8);
    r.exec = u64::MAX;
    assert_eq!(run(&[blgp], &mut r), Step::IllegalInstruction);
    assert_eq!(r.pc, 0x1000);
    // Without BLGP: A = 2.0, B = -1.5, C = 0.25 in every lane; each D
    // element of the 4x4x4 shape (16 blocks, k = 4) is 4 * 2 * -1.5 + 0.25.
    let plain = [0x00, 0x00, 0xef, 0xd3, 0x02, 0x09, 0x1a, 0x04];
    for (n, v) in [(2, 2.0f64), (4, -1.5), (6, 0.25)] {
        splat(&mut r, n, v.to_bits() as u32);
        splat(&mut r, n + 1, (v.to_bits() >> 32) as u32);
    }
    assert_eq!(run(&[plain], &mut r), Step::End);
    let d = (-11.75f64).to_bits();
    assert_eq!((r.vgpr[0][9], r.vgpr[1][9]), (d as u32, (d >> 32) as u32));
}

/// The mixed FMAs with every modifier: sources as f32 or as the f16 half
/// op_sel picks, neg_lo as negation and neg_hi as absolute value, clamp,
/// `mixhi` into the high half with the low half kept, and f16 inline
/// constants.
#[test]
fn fma_mix_sources_modifiers_and_halves() {
    let mut r = WaveRegs::new(8);
    r.exec = u64::MAX;
    splat(&mut r, 2, 0x3f00_0000); // f32 0.5; f16 hi 1.75
    splat(&mut r, 3, 0xb800_0000); // f32 -2^-15; f16 hi -0.5
    splat(&mut r, 4, 0xb400_0000); // f32 -2^-23; f16 hi -0.25
    splat(&mut r, 5, 0xaaaa_bbbb);
    r.sgpr[2] = 3.0f32.to_bits();
    let code = [
        // v_fma_mixhi_f16 v5, v2, -v3, |v4| op_sel:[0,1,1] op_sel_hi:[0,1,1] clamp
        [0x05, 0xf4, 0xa2, 0xd3, 0x02, 0x07, 0x12, 0x54],
        // v_fma_mix_f32 v6, -|v2|, v3, v4 op_sel:[1,0,0] op_sel_hi:[1,0,0]
        [0x06, 0x09, 0xa0, 0xd3, 0x02, 0x07, 0x12, 0x2c],
        // v_fma_mix_f32 v7, s2, 1.0, -2.0 op_sel_hi:[0,1,1]
        [0x07, 0x40, 0xa0, 0xd3, 0x02, 0xe4, 0xd5, 0x13],
    ];
    let texts: Vec<String> = code
        .iter()
        .map(|c| super::decode::decode(c).expect("decodes").to_string())
        .collect();
    assert_eq!(
        texts,
        [
            "v_fma_mixhi_f16 v5, v2, -v3, |v4| op_sel:[0,1,1] op_sel_hi:[0,1,1] clamp",
            "v_fma_mix_f32 v6, -|v2|, v3, v4 op_sel:[1,0,0] op_sel_hi:[1,0,0]",
            "v_fma_mix_f32 v7, s2, 1.0, -2.0 op_sel_hi:[0,1,1]",
        ]
    );
    assert_eq!(run(&code, &mut r), Step::End);
    for lane in [0, 40] {
        // 0.5 * 0.5 + 0.25 = 0.5 (f16 0x3800) into the high half.
        assert_eq!(r.vgpr[5][lane], 0x3800_bbbb, "mixhi");
        // -1.75 * -2^-15 + -2^-23, fused in f32.
        assert_eq!(r.vgpr[6][lane], 0x385f_8000, "mix_f32 f16 hi source");
        assert_eq!(r.vgpr[7][lane], 1.0f32.to_bits(), "mix_f32 f16 constants");
    }
}
