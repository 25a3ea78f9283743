//! Atomic read-modify-write operations of the FLAT/GLOBAL and MUBUF
//! encodings: for each one its name (as LLVM spells it in the mnemonic) and
//! the new memory value, in one row. The decoder takes the name from here
//! and the interpreter the function, so adding an atomic is one row here
//! plus, when the encoding number is new, its range in the decoder. (The DS
//! atomics are rows of `memops::DS_OPS`, with these helpers.)

/// One atomic operation.
#[derive(Clone, Copy)]
pub struct Atomic {
    /// The mnemonic part (`add`, `cmpswap`, `min_i32`, ...).
    pub name: &'static str,
    /// The new memory value from the old one, the data operand and the
    /// compare operand (cmpswap), on `bits`-bit words (32 or 64; the
    /// inputs are zero-extended, the result is truncated by the caller).
    pub apply: fn(old: u64, d: u64, cmp: u64, bits: u32) -> u64,
    /// Always on 64-bit words (the f64 atomics, which have no `_x2` form).
    pub wide: bool,
}

/// `v` as a signed `bits`-bit integer.
pub(super) fn sx(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

/// `inc`: wraps to 0 once `old` reaches `d`.
pub(super) fn inc(old: u64, d: u64, _: u64, _: u32) -> u64 {
    if old >= d {
        0
    } else {
        old + 1
    }
}

/// `dec`: wraps to `d` at 0 or when `old` exceeds `d`.
pub(super) fn dec(old: u64, d: u64, _: u64, _: u32) -> u64 {
    if old == 0 || old > d {
        d
    } else {
        old - 1
    }
}

const fn op(name: &'static str, apply: fn(u64, u64, u64, u32) -> u64) -> Atomic {
    Atomic {
        name,
        apply,
        wide: false,
    }
}

/// An f64 atomic (64-bit without an `_x2` form).
const fn op64(name: &'static str, apply: fn(u64, u64, u64, u32) -> u64) -> Atomic {
    Atomic {
        name,
        apply,
        wide: true,
    }
}

fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}

/// `pk_add_f16`: the two f16 halves added separately, rounded to nearest
/// even.
fn pk_add_f16(o: u64, d: u64, _: u64, _: u32) -> u64 {
    use super::wave::{f16_to_f32, f64_to_f16};
    let half = |x: u64, k: u32| f16_to_f32((x >> (16 * k)) as u16) as f64;
    (0..2).fold(0, |acc, k| {
        acc | (f64_to_f16(half(o, k) + half(d, k)) as u64) << (16 * k)
    })
}

/// FLAT/GLOBAL and MUBUF atomics, in opcode order (64.., `_x2` 96..; the
/// float ones of gfx90a from 77, which have no `_x2` form). The float adds
/// round to nearest even; min/max return the non-NaN operand.
pub const FLAT_ATOMICS: [Atomic; 18] = [
    op("swap", |_, d, _, _| d),
    op("cmpswap", |o, d, c, _| if o == c { d } else { o }),
    op("add", |o, d, _, _| o.wrapping_add(d)),
    op("sub", |o, d, _, _| o.wrapping_sub(d)),
    op("smin", |o, d, _, b| sx(o, b).min(sx(d, b)) as u64),
    op("umin", |o, d, _, _| o.min(d)),
    op("smax", |o, d, _, b| sx(o, b).max(sx(d, b)) as u64),
    op("umax", |o, d, _, _| o.max(d)),
    op("and", |o, d, _, _| o & d),
    op("or", |o, d, _, _| o | d),
    op("xor", |o, d, _, _| o ^ d),
    op("inc", inc),
    op("dec", dec),
    op("add_f32", |o, d, _, _| {
        (f32_of(o) + f32_of(d)).to_bits() as u64
    }),
    op("pk_add_f16", pk_add_f16),
    op64("add_f64", |o, d, _, _| (f64_of(o) + f64_of(d)).to_bits()),
    op64("min_f64", |o, d, _, _| f64_of(o).min(f64_of(d)).to_bits()),
    op64("max_f64", |o, d, _, _| f64_of(o).max(f64_of(d)).to_bits()),
];

/// Applies atomic `i` of `table` on `bits`-bit words (32 or 64).
pub fn apply(table: &[Atomic], i: u8, old: u64, d: u64, cmp: u64, bits: u32) -> u64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    table
        .get(i as usize)
        .map(|a| (a.apply)(old & mask, d & mask, cmp & mask, bits) & mask)
        .unwrap_or(old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_and_wrapping_forms_respect_the_width() {
        assert_eq!(apply(&FLAT_ATOMICS, 4, 5, 0xffff_ffff, 0, 32), 0xffff_ffff);
        assert_eq!(apply(&FLAT_ATOMICS, 5, 5, 0xffff_ffff, 0, 32), 5);
        assert_eq!(apply(&FLAT_ATOMICS, 2, 0xffff_ffff, 1, 0, 32), 0);
        assert_eq!(apply(&FLAT_ATOMICS, 2, 0xffff_ffff, 1, 0, 64), 1 << 32);
        assert_eq!(apply(&FLAT_ATOMICS, 1, 7, 9, 7, 64), 9);
        assert_eq!(apply(&FLAT_ATOMICS, 1, 7, 9, 8, 64), 7);
        assert_eq!(apply(&FLAT_ATOMICS, 11, 4, 4, 0, 32), 0);
        assert_eq!(apply(&FLAT_ATOMICS, 12, 0, 4, 0, 32), 4);
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(apply(&FLAT_ATOMICS, 13, f(1.5), f(2.0), 0, 32), f(3.5));
        assert_eq!(
            apply(&FLAT_ATOMICS, 14, 0x3c00_4000, 0x3c00_3c00, 0, 32),
            0x4000_4200
        );
        let d = |x: f64| x.to_bits();
        assert_eq!(apply(&FLAT_ATOMICS, 16, d(-1.0), d(2.0), 0, 64), d(-1.0));
        assert_eq!(apply(&FLAT_ATOMICS, 17, d(-1.0), d(2.0), 0, 64), d(2.0));
    }
}
