//! The corpus (samples/corpus): every kernel at -O0 -g, -O1, -O2 and -O3,
//! launched through the runtime (hidden arguments, dynamic LDS), checked
//! bit-exactly against a CPU reference (the hardware transcendentals within
//! 1 ulp of a correctly rounded result). The kernel x level table in
//! samples/corpus/README.md lists what these tests check.

#![allow(clippy::needless_range_loop)] // element i of several arrays

use simgpu_rt::runtime;
use simgpu_rt::Status;

const N: usize = 200;

fn rand_words(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

/// Floats in [-lim, lim] with 3 decimals.
fn rand_f32(n: usize, seed: u32, lim: f32) -> Vec<u32> {
    rand_words(n, seed)
        .into_iter()
        .map(|v| ((v % 2_000_001) as f32 / 1_000_000.0 * lim * 2.0 - lim).to_bits())
        .collect()
}

fn rand_f64(n: usize, seed: u32, lim: f64) -> Vec<u32> {
    rand_words(2 * n, seed)
        .chunks(2)
        .flat_map(|c| {
            let u = ((c[0] as u64) << 32 | c[1] as u64) >> 11;
            let f = (u as f64 / (1u64 << 53) as f64) * 2.0 * lim - lim;
            let b = f.to_bits();
            [b as u32, (b >> 32) as u32]
        })
        .collect()
}

/// An 8-byte aligned buffer of 32-bit words (64-bit atomics need that).
struct Buf(Vec<u64>);

impl Buf {
    fn new(words: &[u32]) -> Self {
        let mut v = vec![0u64; words.len().div_ceil(2) + 1];
        for (k, w) in words.iter().enumerate() {
            v[k / 2] |= (*w as u64) << (32 * (k % 2));
        }
        Self(v)
    }
    fn zeros(n: usize) -> Self {
        Self::new(&vec![0; n])
    }
    fn addr(&self) -> u64 {
        self.0.as_ptr() as u64
    }
    fn get(&self, k: usize) -> u32 {
        (self.0[k / 2] >> (32 * (k % 2))) as u32
    }
    fn words(&self, n: usize) -> Vec<u32> {
        (0..n).map(|k| self.get(k)).collect()
    }
}

fn blob(parts: &[u64]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.to_le_bytes()).collect()
}

fn launch(
    name: &str,
    level: u32,
    args: &[u8],
    grid: [u32; 3],
    block: [u16; 3],
    dynamic: u32,
) -> Result<(), String> {
    let path = format!(
        "{}/../../samples/corpus/bin/{name}.O{level}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = runtime::load(&path).map_err(|s| format!("{path}: {s:?}"))?;
    let st = runtime::launch(&m, name, grid, block, args, dynamic);
    let err = runtime::last_error();
    runtime::unload(m);
    if st == Status::Success {
        Ok(())
    } else {
        Err(format!("{st:?}: {err}"))
    }
}

/// Runs `one(level)` at every level and fails with every level's problem.
fn levels(name: &str, one: impl Fn(u32) -> Result<(), String>) {
    let errs: Vec<String> = (0..4)
        .filter_map(|l| one(l).err().map(|e| format!("-O{l}: {e}")))
        .collect();
    assert!(errs.is_empty(), "{name}:\n{}", errs.join("\n"));
}

fn expect_eq(what: &str, got: &[u32], want: &[u32]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: word {i}: got {:#x}, want {:#x}",
            got[i], want[i]
        )),
    }
}

/// The standard shape: `(a, b, out, n)`, `n` = N work-items in blocks of 64
/// (a partial last wave), `out` compared over `out_words` words.
fn std_kernel(
    name: &str,
    a: &[u32],
    b: &[u32],
    out_init: &[u32],
    grid: u32,
    block: u16,
    check: impl Fn(&[u32]) -> Result<(), String>,
) {
    levels(name, |level| {
        let (ba, bb, out) = (Buf::new(a), Buf::new(b), Buf::new(out_init));
        let args = blob(&[ba.addr(), bb.addr(), out.addr(), N as u64]);
        launch(name, level, &args, [grid, 1, 1], [block, 1, 1], 0)?;
        check(&out.words(out_init.len()))
    });
}

/// `out[i] = f(a, b, i)` for i < N.
fn elementwise(name: &str, a: &[u32], b: &[u32], f: impl Fn(&[u32], &[u32], usize) -> u32) {
    let want: Vec<u32> = (0..N).map(|i| f(a, b, i)).collect();
    std_expect(name, (a, b), &vec![0; 2 * N], N_BY_64, &want);
}

fn ints() -> (Vec<u32>, Vec<u32>) {
    (rand_words(4 * N, 1), rand_words(4 * N, 2))
}

fn fl(x: u32) -> f32 {
    f32::from_bits(x)
}

fn d(w: &[u32], i: usize) -> f64 {
    f64::from_bits(w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32)
}

fn u64_at(w: &[u32], i: usize) -> u64 {
    w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32
}

fn pairs(v: &[u64]) -> Vec<u32> {
    v.iter()
        .flat_map(|x| [*x as u32, (*x >> 32) as u32])
        .collect()
}

#[test]
fn int_arith() {
    let (a, b) = ints();
    elementwise("int_arith", &a, &b, |a, b, i| {
        let (x, y) = (a[i], b[i]);
        let mut r = x.wrapping_mul(y).wrapping_add(x >> 3).wrapping_sub(y << 5);
        r ^= (x | y) & !(x ^ 0x5a5a_5a5a);
        let mh = ((x as u64 * y as u64) >> 32) as u32;
        r = r.wrapping_add(
            (((x as i32) >> 7) as u32)
                .wrapping_add(mh)
                .wrapping_add(x.rotate_left(y & 31)),
        );
        r
    });
}

#[test]
fn int_div() {
    let (a, b) = ints();
    elementwise("int_div", &a, &b, |a, b, i| {
        let (x, y) = (a[i], b[i] >> (b[i] & 15));
        x.checked_div(y)
            .unwrap_or(0)
            .wrapping_mul(31)
            .wrapping_add(x % (y | 1))
    });
}

#[test]
fn sdiv() {
    let (a, b) = ints();
    elementwise("sdiv", &a, &b, |a, b, i| {
        let x = a[i] as i32;
        let mut y = (b[i] as i32) >> (b[i] & 15);
        if y == 0 || (x == i32::MIN && y == -1) {
            y = 7;
        }
        (x.wrapping_div(y) as u32) ^ (x.wrapping_rem(y) as u32)
    });
}

#[test]
fn i64_arith() {
    let (a, b) = ints();
    let want: Vec<u64> = (0..N)
        .map(|i| {
            let (x, y) = (u64_at(&a, i), u64_at(&b, i));
            let mut r = x
                .wrapping_mul(y)
                .wrapping_add(x >> (y & 63))
                .wrapping_sub(y << 3);
            r ^= ((x as i64) >> 17) as u64;
            r = r.wrapping_add(x.abs_diff(y));
            r.wrapping_add(if (x as i64) < (y as i64) { 1 } else { 2 })
        })
        .collect();
    std_expect(
        "i64_arith",
        (&a, &b),
        &vec![0; 2 * N],
        N_BY_64,
        &pairs(&want),
    );
}

#[test]
fn i64_div() {
    let (a, b) = ints();
    let want: Vec<u64> = (0..N)
        .map(|i| {
            let x = u64_at(&a, i);
            let y = u64_at(&b, i) >> (b[2 * i] & 63);
            let q = x.checked_div(y).unwrap_or(0);
            let sq = (x as i64).wrapping_div((y | 1) as i64);
            q ^ sq as u64 ^ (x % (y | 1))
        })
        .collect();
    std_expect("i64_div", (&a, &b), &vec![0; 2 * N], N_BY_64, &pairs(&want));
}

#[test]
fn bitops() {
    let (a, b) = ints();
    elementwise("bitops", &a, &b, |a, b, i| {
        let x = a[i] >> (b[i] & 31);
        let ctz = if x != 0 { x.trailing_zeros() } else { 32 };
        let mut r = x.count_ones() | x.leading_zeros() << 6 | ctz << 12;
        r ^= a[i].reverse_bits();
        let w = u64_at(b, i);
        r.wrapping_add(w.count_ones())
            .wrapping_add(((w >> 32) as u32).leading_zeros().wrapping_mul(3))
    });
}

#[test]
fn minmax_sat() {
    let (a, b) = ints();
    elementwise("minmax_sat", &a, &b, |a, b, i| {
        let (x, y) = (a[i] as i32, b[i] as i32);
        let mut r = (x.min(y) as u32)
            .wrapping_add((x.max(y) as u32).wrapping_mul(3))
            .wrapping_add(x.unsigned_abs());
        r ^= a[i].min(b[i]).wrapping_add(a[i].clamp(1000, 0x8000_0000));
        r.wrapping_add(
            (x.saturating_add(y) as u32) ^ a[i].saturating_add(b[i]) ^ (x.saturating_sub(y) as u32),
        )
    });
}

#[test]
fn i16_i8() {
    let (a, b) = ints();
    elementwise("i16_i8", &a, &b, |a, b, i| {
        let c = (a[i] >> 8) as u8 as i8 as i32;
        let s = (b[i] >> 16) as u16 as i32;
        let t = s.wrapping_mul(c as u16 as i32) as i16 as i32;
        let b0 = (c + 3) as u8 as u32;
        let b1 = (s >> 8) as u8 as u32;
        b0 | b1 << 8 | ((t >> 2) as u16 as u32) << 16
    });
}

#[test]
fn f32_arith() {
    let (a, b) = (rand_f32(2 * N, 3, 1000.0), rand_f32(2 * N, 4, 1000.0));
    elementwise("f32_arith", &a, &b, |a, b, i| {
        let (x, y) = (fl(a[i]), fl(b[i]));
        let mut r = x * y - (x + y);
        r = r.mul_add(y, -x);
        r = r.max(x.min(y)) + x.abs() * 0.5;
        (-r).to_bits()
    });
}

#[test]
fn f32_div() {
    let (a, b) = (rand_f32(2 * N, 5, 1000.0), rand_f32(2 * N, 6, 1000.0));
    elementwise("f32_div", &a, &b, |a, b, i| (fl(a[i]) / fl(b[i])).to_bits());
}

#[test]
fn f32_sqrt() {
    let a = rand_f32(2 * N, 7, 1.0e6);
    elementwise("f32_sqrt", &a, &a, |a, _, i| {
        fl(a[i]).abs().sqrt().to_bits()
    });
}

fn frexp32(x: f32) -> (f32, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let mut e = 0;
    let mut m = x as f64;
    while m.abs() >= 1.0 {
        m /= 2.0;
        e += 1;
    }
    while m.abs() < 0.5 {
        m *= 2.0;
        e -= 1;
    }
    (m as f32, e)
}

#[test]
fn f32_round() {
    let (a, b) = (rand_f32(2 * N, 8, 100.0), rand_f32(2 * N, 9, 100.0));
    elementwise("f32_round", &a, &b, |a, b, i| {
        let x = fl(a[i]);
        let (m, e) = frexp32(x);
        let r = x.floor() + x.ceil() * 2.0 + x.trunc() * 4.0 + x.round_ties_even() * 8.0;
        (r.copysign(fl(b[i])) + m * 2f32.powi(e & 7)).to_bits()
    });
}

#[test]
fn f32_cmp() {
    let (mut a, b) = (rand_f32(2 * N, 10, 2.0), rand_f32(2 * N, 11, 2.0));
    for i in (0..N).step_by(7) {
        a[i] = b[i];
    }
    elementwise("f32_cmp", &a, &b, |a, b, i| {
        let (x, y) = (fl(a[i]), fl(b[i]));
        let r = (x < y) as u32
            | ((x <= y) as u32) << 1
            | ((x == y) as u32) << 2
            | ((x > y) as u32) << 3
            | ((x != y) as u32) << 4
            | ((x >= 1.0) as u32) << 5
            | ((x * y).is_nan() as u32) << 6;
        r | (if x < y { y } else { x }).to_bits() << 8
    });
}

/// Within `ulps` units in the last place.
fn near(got: u32, want: f32, ulps: u32) -> bool {
    got == want.to_bits() || (got as i64 - want.to_bits() as i64).unsigned_abs() <= ulps as u64
}

#[test]
fn f32_transcendental() {
    let a = rand_f32(2 * N, 12, 10.0);
    std_kernel(
        "f32_transcendental",
        &a,
        &a,
        &vec![0; 4 * N],
        N as u32,
        64,
        |g| {
            for i in 0..N {
                let x = fl(a[i]) as f64;
                let want = [
                    x.exp2(),
                    (x.abs() + 1.0).log2(),
                    1.0 / (x.abs() + 1.0).sqrt(),
                    1.0 / x,
                ];
                for k in 0..4 {
                    // The documented bound: 1 ulp (the hardware's accuracy).
                    if !near(g[4 * i + k], want[k] as f32, 1) {
                        return Err(format!("element {i} function {k}: {:#x}", g[4 * i + k]));
                    }
                }
            }
            Ok(())
        },
    );
}

fn f64_kernel(name: &str, lim: f64, f: impl Fn(f64, f64) -> f64) {
    let (a, b) = (rand_f64(N, 13, lim), rand_f64(N, 14, lim));
    let want: Vec<u64> = (0..N).map(|i| f(d(&a, i), d(&b, i)).to_bits()).collect();
    std_expect(name, (&a, &b), &vec![0; 2 * N], N_BY_64, &pairs(&want));
}

#[test]
fn f64_arith() {
    f64_kernel("f64_arith", 1000.0, |x, y| {
        let r = x * y + (x - y);
        let r = r.mul_add(x, y);
        r.max(x.min(y)) - y.abs()
    });
}

#[test]
fn f64_div() {
    f64_kernel("f64_div", 1.0e6, |x, y| x / y);
}

#[test]
fn f64_sqrt() {
    f64_kernel("f64_sqrt", 1.0e9, |x, _| x.abs().sqrt());
}

#[test]
fn f64_round() {
    f64_kernel("f64_round", 100.0, |x, y| {
        let r = x.floor() + y.ceil() * 2.0 + x.trunc() * 4.0 + y.round_ties_even() * 8.0;
        if x < y {
            -r
        } else {
            r
        }
    });
}

/// IEEE half to f64 (exact).
fn h2f(h: u16) -> f64 {
    let s = if h >> 15 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    match e {
        0 => s * m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                s * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// f64 to half, round to nearest even (finite inputs in half range).
fn f2h(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    // Search the two neighbours among all finite halves.
    let mut lo = 0u16;
    let mut hi = 0x7bffu16;
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if h2f(mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let below = lo;
    let above = below + 1;
    let (db, da) = (a - h2f(below), h2f(above) - a);
    let pick = if db < da || (db == da && below.is_multiple_of(2)) {
        below
    } else {
        above
    };
    sign | pick
}

fn rand_halves(n: usize, seed: u32) -> Vec<u32> {
    rand_f32(2 * n, seed, 8.0)
        .chunks(2)
        .map(|c| f2h(fl(c[0]) as f64) as u32 | (f2h(fl(c[1]) as f64) as u32) << 16)
        .collect()
}

#[test]
fn f16_packed() {
    let (a, b) = (rand_halves(2 * N, 15), rand_halves(2 * N, 16));
    elementwise("f16_packed", &a, &b, |a, b, i| {
        let mut out = 0u32;
        for (k, c) in [0.5, 2.0].into_iter().enumerate() {
            let x = h2f((a[i] >> (16 * k)) as u16);
            let y = h2f((b[i] >> (16 * k)) as u16);
            let p = h2f(f2h(x * y));
            let r1 = h2f(f2h(p + x));
            let q = h2f(f2h(y * c));
            out |= (f2h(r1 - q) as u32) << (16 * k);
        }
        out
    });
}

#[test]
fn f16_scalar() {
    let (a, b) = (rand_halves(2 * N, 17), rand_halves(2 * N, 18));
    elementwise("f16_scalar", &a, &b, |a, b, i| {
        let x = h2f(a[i] as u16);
        let y = h2f(b[i] as u16);
        let r = h2f(f2h(h2f(f2h(x * y)) + h2f(f2h(x - y))));
        let f = (r as f32) * 3.0;
        f2h(r) as u32 | (f2h(f as f64) as u32) << 16
    });
}

#[test]
fn conversions() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .flat_map(|i| {
            let x = (a[i] as i32) >> 4;
            let f = x as f32 + (b[i] >> 8) as f32;
            let dd = f as f64 * 1.5 + x as f64;
            let r = ((f * 0.25) as i32 as u32) ^ (dd as i32 as u32) ^ ((dd as f32) as u32);
            [r, (dd as f32).to_bits()]
        })
        .collect();
    std_expect("conversions", (&a, &b), &vec![0; 2 * N], N_BY_64, &want);
}

#[test]
fn conv64() {
    let (a, b) = ints();
    let want: Vec<u64> = (0..N)
        .flat_map(|i| {
            let x = u64_at(&a, i) >> (b[i] & 31);
            let s = (u64_at(&b, i) as i64) >> 12;
            let dd = x as f64 + s as f64;
            let f = x as f32 - s as f32;
            [
                dd.to_bits(),
                ((f * 0.125) as i64 as u64) ^ f.to_bits() as u64,
            ]
        })
        .collect();
    std_expect("conv64", (&a, &b), &vec![0; 4 * N], N_BY_64, &pairs(&want));
}

#[test]
fn divergent_loop() {
    let (a, b) = ints();
    elementwise("divergent_loop", &a, &b, |a, b, i| {
        let (mut x, mut steps) = (a[i] | 1, 0u32);
        for _ in 0..(b[i] & 63) {
            x = if x & 1 != 0 {
                x.wrapping_mul(3).wrapping_add(1)
            } else {
                x >> 1
            };
            steps = steps.wrapping_add(x & 7);
        }
        x ^ steps << 20
    });
}

#[test]
fn nested_branch() {
    let (a, b) = ints();
    elementwise("nested_branch", &a, &b, |a, b, i| {
        let (x, y) = (a[i], b[i]);
        if x & 1 != 0 {
            if y & 2 != 0 {
                x.wrapping_add(y)
            } else if y & 4 != 0 {
                x.wrapping_sub(y)
            } else {
                x.wrapping_mul(3)
            }
        } else {
            let mut r = if (x ^ y) & 8 != 0 { x ^ y } else { y >> 1 };
            if r & 16 != 0 {
                r = r.wrapping_add(1000);
            }
            r
        }
    });
}

#[test]
fn early_return() {
    let (a, b) = ints();
    elementwise("early_return", &a, &b, |a, b, i| {
        let x = a[i];
        if x & 3 == 0 {
            return 1;
        }
        if x & 12 == 4 {
            return 2;
        }
        let mut acc = 0u32;
        for k in 0..32 {
            if (x >> k) & (b[i] >> k) & 1 != 0 {
                return 2;
            }
            acc += k;
        }
        acc.wrapping_add(x)
    });
}

#[test]
fn switch_case() {
    let (a, b) = ints();
    elementwise("switch_case", &a, &b, |a, b, i| {
        let (x, y) = (a[i], b[i]);
        match x % 9 {
            0 => y,
            1 => y.wrapping_add(1),
            2 => y.wrapping_mul(7),
            3 => y ^ x,
            4 | 5 => x.wrapping_add(5),
            6 => !y,
            7 => y & x,
            _ => 99,
        }
    });
}

#[test]
fn loop_break() {
    let (a, b) = ints();
    elementwise("loop_break", &a, &b, |a, b, i| {
        let x = a[i];
        let (mut found, mut sum) = (u32::MAX, 0u32);
        for k in 0..200u32 {
            let v = x.wrapping_mul(k + 1).wrapping_add(b[(i + k as usize) % N]);
            if v & 3 == 1 {
                continue;
            }
            sum = sum.wrapping_add(v >> 4);
            if v & 0xff == 0x42 || sum > 0x4000_0000 {
                found = k;
                break;
            }
        }
        found ^ sum
    });
}

#[test]
fn private_array() {
    let (a, b) = ints();
    elementwise("private_array", &a, &b, |a, b, i| {
        let mut buf = [0u32; 48];
        for k in 0..48 {
            buf[k] = a[i].wrapping_mul(k as u32).wrapping_add(b[(i + k) % N]);
        }
        let (mut acc, mut idx) = (0u32, (b[i] % 48) as usize);
        for _ in 0..16 {
            acc = acc.wrapping_add(buf[idx]);
            buf[(idx * 7 + 3) % 48] ^= acc;
            idx = ((idx as u32).wrapping_add(buf[idx]) % 48) as usize;
        }
        acc
    });
}

#[test]
fn private_struct() {
    let (a, b) = ints();
    elementwise("private_struct", &a, &b, |a, b, i| {
        let key = |k: usize| a[(i + k) % N];
        let val = |k: usize| (b[(i + k) % N] & 0xffff) as f32;
        let mut best = 0;
        for k in 1..12 {
            if key(k) > key(best) {
                best = k;
            }
        }
        best as u32 | (val(best) + val((best + 1) % 12)).to_bits() << 4
    });
}

#[test]
fn spill_pressure() {
    let (a, b) = ints();
    elementwise("spill_pressure", &a, &b, |a, b, i| {
        let mut v = [0u32; 24];
        for k in 0..24 {
            v[k] = a[(i + k) % N] ^ (b[i] >> k);
        }
        let mut acc = 0u32;
        for _ in 0..4 {
            for k in 0..24 {
                v[k] = v[k].wrapping_mul(0x9e37_79b1).wrapping_add(v[(k + 5) % 24]);
                acc ^= v[k] >> (k & 7);
            }
        }
        acc
    });
}

#[test]
fn lds_reduce() {
    let (a, b) = ints();
    let n = 300;
    levels("lds_reduce", |level| {
        let (ba, bb, out) = (Buf::new(&a), Buf::new(&b), Buf::zeros(4));
        let args = blob(&[ba.addr(), bb.addr(), out.addr(), n as u64]);
        launch("lds_reduce", level, &args, [512, 1, 1], [256, 1, 1], 0)?;
        let s0 = a[..256].iter().fold(0u32, |s, x| s.wrapping_add(*x));
        let s1 = a[256..n].iter().fold(0u32, |s, x| s.wrapping_add(*x));
        expect_eq("lds_reduce", &out.words(2), &[s0, s1])
    });
}

#[test]
fn lds_dynamic() {
    let a = rand_words(2 * N, 3);
    levels("lds_dynamic", |level| {
        let (ba, out) = (Buf::new(&a), Buf::zeros(N));
        // a, out, n (4 bytes), then the dynamic __local argument: offset 0.
        let mut args = blob(&[ba.addr(), out.addr()]);
        args.extend_from_slice(&(N as u32).to_le_bytes());
        args.extend_from_slice(&0u32.to_le_bytes());
        launch("lds_dynamic", level, &args, [256, 1, 1], [64, 1, 1], 256)?;
        let want: Vec<u32> = (0..N)
            .map(|i| {
                let (g, l) = (i / 64, i % 64);
                lane_x(&a, g * 64 + 63 - l).wrapping_add(0x1000 * (l as u32 & 3))
            })
            .collect();
        expect_eq("lds_dynamic", &out.words(N), &want)?;
        // Without dynamic LDS the launch is refused, not run with 0 bytes.
        match launch("lds_dynamic", level, &args, [256, 1, 1], [64, 1, 1], 0) {
            Err(e) if e.starts_with("InvalidArgument") => Ok(()),
            other => Err(format!("launch without dynamic LDS: {other:?}")),
        }
    });
}

#[test]
fn lds_2d() {
    let w = 32usize;
    let a = rand_words(w * w, 19);
    levels("lds_2d", |level| {
        let (ba, out) = (Buf::new(&a), Buf::zeros(w * w));
        let args = blob(&[ba.addr(), out.addr(), w as u64]);
        launch("lds_2d", level, &args, [32, 32, 1], [16, 16, 1], 0)?;
        let want: Vec<u32> = (0..w * w).map(|k| a[(k % w) * w + k / w]).collect();
        expect_eq("lds_2d", &out.words(w * w), &want)
    });
}

#[test]
fn lds_types() {
    let (a, b) = ints();
    let x = |i: usize| if i < N { a[i] } else { 0 };
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let (g, l) = (i / 128 * 128, i % 128);
            let o = (l + 1) % 128;
            let xo = x(g + o);
            (xo as u8 as u32)
                .wrapping_add(((x(g + 127 - l) >> 8) as u16 as u32).wrapping_mul(3))
                .wrapping_add(xo)
                .wrapping_add(xo.wrapping_add(1).wrapping_mul(xo.wrapping_add(3)))
        })
        .collect();
    std_expect("lds_types", (&a, &b), &vec![0; N], (256, 128), &want);
}

#[test]
fn global_atomics() {
    let (a, b) = ints();
    let mut init = vec![0u32; 8];
    init[1] = u32::MAX;
    init[3] = u32::MAX;
    let a_ = &a[..N];
    let want = [
        a_.iter().fold(0u32, |s, x| s.wrapping_add(x & 0xffff)),
        *a_.iter().min().unwrap(),
        *a_.iter().max().unwrap(),
        a_.iter().fold(u32::MAX, |s, x| s & (x | 0x1111_0000)),
        a_.iter().fold(0, |s, x| s | (x & 0x0f0f_0f0f)),
        a_.iter().fold(0, |s, x| s ^ x),
        b[..N].iter().fold(0u32, |s, x| s.wrapping_sub(x & 0xff)),
        N as u32,
    ];
    std_expect("global_atomics", (&a, &b), &init, N_BY_64, &want);
}

#[test]
fn atomic_rtn() {
    let (a, b) = ints();
    std_kernel(
        "atomic_rtn",
        &a,
        &b,
        &vec![0; 1 + 3 * N],
        N as u32,
        64,
        |g| {
            if g[0] != N as u32 {
                return Err(format!("ticket counter {}", g[0]));
            }
            let mut got: Vec<u32> = g[1..=N].to_vec();
            let mut want: Vec<u32> = a[..N].to_vec();
            got.sort_unstable();
            want.sort_unstable();
            expect_eq("tickets", &got, &want)?;
            expect_eq("xchg", &g[1 + N..1 + 2 * N], &b[..N])?;
            expect_eq("old values", &g[1 + 2 * N..], &vec![1; N])
        },
    );
}

#[test]
fn atomics64() {
    let (a, b) = ints();
    let mut init = vec![0u64; 5 + N];
    init[2] = u64::MAX;
    let v: Vec<u64> = (0..N).map(|i| u64_at(&a, i)).collect();
    let mut want = vec![0u64; 5 + N];
    want[0] = v
        .iter()
        .fold(0u64, |s, x| s.wrapping_add(x & 0xf_ffff_ffff));
    want[1] = *v.iter().max().unwrap();
    want[2] = *v.iter().min().unwrap();
    want[3] = v.iter().fold(0, |s, x| s | (x & 0x0101_0101_0101_0101));
    want[4] = N as u64;
    for w in &mut want[5..] {
        *w = 1;
    }
    std_expect("atomics64", (&a, &b), &pairs(&init), N_BY_64, &pairs(&want));
}

#[test]
fn cas_loop() {
    let (a, b) = ints();
    let max = a[..N].iter().map(|x| (x >> 8) as f64).fold(0.0, f64::max);
    let mut want = vec![(N as f32).to_bits(), 0];
    want.extend(pairs(&[max.to_bits()]));
    std_kernel("cas_loop", &a, &b, &[0; 4], N as u32, 64, |g| {
        expect_eq("cas_loop", g, &want)
    });
}

#[test]
fn lds_atomics() {
    let (a, b) = ints();
    let mut want = vec![0u32; 80];
    for g in 0..2 {
        let o = &mut want[g * 40..g * 40 + 40];
        let mut sum = 0u64;
        for i in g * 128..(g * 128 + 128).min(N) {
            o[(a[i] & 15) as usize] += 1;
            let m = &mut o[16 + ((a[i] >> 4) & 15) as usize];
            *m = (*m).max(b[i] & 0xff);
            sum += a[i] as u64;
        }
        o[32] = sum as u32;
        o[33] = (sum >> 32) as u32;
        o[34] = 128;
    }
    std_expect("lds_atomics", (&a, &b), &vec![0; 80], (256, 128), &want);
}

/// `ds_append` / `ds_consume` (M0-addressed LDS counters), one wave per
/// work-group (the last one 8 work-items): every active lane gets the old
/// value, the counter moves by the number of active lanes.
#[test]
fn lds_append() {
    let (a, b) = ints();
    let mut want = vec![0u32; 3 * N + 8];
    for g in 0..N.div_ceil(64) {
        let items = g * 64..(g * 64 + 64).min(N);
        let odd = items.clone().filter(|&i| a[i] & 1 != 0).count() as u32;
        let twos = items.clone().filter(|&i| a[i] & 2 != 0).count() as u32;
        for i in items.clone() {
            want[i] = if a[i] & 1 != 0 { 100 } else { 0 };
            want[N + i] = 100 + odd;
            want[2 * N + i] = if a[i] & 2 != 0 { 200 } else { 0 };
        }
        want[3 * N + 2 * g] = 100 + odd + items.len() as u32;
        want[3 * N + 2 * g + 1] = 200 - twos;
    }
    std_expect("lds_append", (&a, &b), &vec![0; 3 * N + 8], N_BY_64, &want);
}

/// Half division (the correctly rounded quotient, IEEE special cases for
/// zero divisors) and the mixed FMAs (`fma` of widened halves: fused in
/// f32, then rounded to f16 for the `mixlo` form).
#[test]
fn f16_div() {
    let (a, b) = ints();
    let hb = |x: u32| {
        let h = x as u16;
        if h & 0x7c00 == 0x7c00 {
            h & 0xfbff
        } else {
            h
        }
    };
    let mut want = Vec::new();
    for i in 0..N {
        let (mut x, mut y, z) = (hb(a[i]), hb(b[i]), hb(a[i] >> 16));
        if i % 16 == 0 {
            y = 0;
        }
        if i % 32 == 1 {
            (x, y) = (0, 0x8000);
        }
        let (fx, fy, fz) = (h2f(x), h2f(y), h2f(z));
        // x / y in f64 is within 2^-53 of the quotient, far from any f16
        // rounding boundary it is not on: f2h rounds it as the exact one.
        let q = match (fx == 0.0, fy == 0.0) {
            (true, true) => 0x7e00,
            _ => f2h(fx / fy),
        };
        let m = (fx as f32).mul_add(fy as f32, fz as f32);
        let ml = f2h((fx as f32).mul_add(fz as f32, fy as f32) as f64);
        want.push(q as u32 | (ml as u32) << 16);
        want.push(m.to_bits());
    }
    std_expect("f16_div", (&a, &b), &vec![0; 2 * N], N_BY_64, &want);
}

/// LDS float atomics (`ds_add/min/max` of f32 and f64, returning and not)
/// and the DS d16 loads, two waves per work-group.
#[test]
fn lds_float() {
    let (a, b) = ints();
    let x = |i: usize| ((a[i] % 1024) as i32 - 512) as f32 / 8.0;
    let mut want = vec![0u32; 32 + 8 * N];
    for g in 0..2 {
        let mut fs = [0.0f32, 0.0, 1e30, -1e30];
        let mut dd = [0.0f64, 0.0, 1e300, -1e300];
        let item = |l: usize| g * 128 + l;
        for l in 0..128 {
            let i = item(l);
            if i >= N {
                continue;
            }
            let (xi, yi) = (x(i), x(i) as f64 * 0.5);
            fs[l & 1] += xi;
            fs[2] = fs[2].min(xi);
            fs[3] = fs[3].max(xi);
            dd[l & 1] += yi;
            dd[2] = dd[2].min(yi);
            dd[3] = dd[3].max(yi);
        }
        for k in 0..4 {
            want[16 * g + k] = fs[k].to_bits();
            want[16 * g + 4 + 2 * k] = dd[k].to_bits() as u32;
            want[16 * g + 5 + 2 * k] = (dd[k].to_bits() >> 32) as u32;
        }
        let hs = |k: usize| {
            let i = item(k);
            f2h(if i < N { (a[i] & 63) as f64 } else { 0.0 }) as u32
        };
        let bs = |k: usize| {
            let i = item(k);
            if i < N {
                b[i] as u8
            } else {
                0
            }
        };
        for l in 0..128 {
            let i = item(l);
            if i >= N {
                continue;
            }
            let (xi, yi) = (x(i), x(i) as f64 * 0.5);
            let o = &mut want[32 + 8 * i..32 + 8 * i + 8];
            o[0] = (l as f32).to_bits();
            o[1] = (l as f32).to_bits();
            o[2] = l as u32;
            o[3] = l as u32;
            let hv = hs((l * 7) & 127) | hs((l * 3 + 1) & 127) << 16;
            let sv =
                bs((l * 5) & 127) as u32 | (bs((l * 9) & 127) as i8 as i16 as u16 as u32) << 16;
            o[4] = hv ^ sv;
            o[5] = hv.wrapping_add(sv);
            o[6] = (l as f32 + xi).to_bits();
            let dm = (l as f64).max(yi).to_bits();
            let fm = (l as f32).min(xi).to_bits();
            let dr = (l as f64 + yi).to_bits();
            o[7] = dm as u32 ^ (dm >> 32) as u32 ^ fm ^ dr as u32;
        }
    }
    std_kernel("lds_float", &a, &b, &vec![0; 32 + 8 * N], 256, 128, |g| {
        expect_eq("lds_float", g, &want)
    });
}

fn lane_x(a: &[u32], i: usize) -> u32 {
    if i < N {
        a[i]
    } else {
        0
    }
}

#[test]
fn readlane() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let w0 = i / 64 * 64;
            let l = lane_x(&a, w0 + 5);
            let f = lane_x(&a, w0).wrapping_add(1);
            let w = if i % 64 == 7 { f } else { lane_x(&a, i) };
            let w2 = if i % 64 == 3 {
                l
            } else {
                lane_x(&a, i).wrapping_add(2)
            };
            l ^ (f << 1) ^ (w << 2) ^ (w2 << 3)
        })
        .collect();
    std_expect("readlane", (&a, &b), &vec![0; N], N_BY_64, &want);
}

#[test]
fn bpermute() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let (w0, l) = (i / 64 * 64, i % 64);
            let src = (l * 5 + b[i % N] as usize) & 63;
            let p = lane_x(&a, w0 + src);
            let q = lane_x(&a, w0 + ((l + 64 - 7) & 63));
            p ^ q.wrapping_mul(3)
        })
        .collect();
    std_expect("bpermute", (&a, &b), &vec![0; N], (256, 64), &want);
}

#[test]
fn ballot() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let (w0, l) = (i / 64 * 64, i % 64);
            let m = (0..64).fold(0u64, |m, k| {
                m | (((lane_x(&a, w0 + k) & 3 == 1) as u64) << k)
            });
            let below = (m & ((1u64 << l) - 1)).count_ones();
            m.count_ones() | below << 8 | ((m >> (l & 31)) as u32) << 16
        })
        .collect();
    std_expect("ballot", (&a, &b), &vec![0; N], (256, 64), &want);
}

#[test]
fn accvgpr() {
    let (a, b) = ints();
    elementwise("accvgpr", &a, &b, |a, b, i| a[i].wrapping_add(b[i]));
}

#[test]
fn hidden_args() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        // clang's __builtin_amdgcn_workgroup_size_x() reads
        // hidden_group_size_x (the remainder logic lives in the device
        // library, which the corpus does not link).
        .flat_map(|_| [3, 64, 8, 1, 64, N as u32, 0, 1])
        .collect();
    std_expect("hidden_args", (&a, &b), &vec![0; 8 * N], N_BY_64, &want);
}

#[test]
fn vector_types() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .flat_map(|i| {
            let x = &a[4 * i..4 * i + 4];
            let y = &b[4 * i..4 * i + 4];
            (0..4)
                .map(|k| {
                    let s = x[3 - k].wrapping_mul(y[3 - k]).wrapping_add(4 - k as u32);
                    s ^ (((x[k] >> 8) as f32) * 0.5).to_bits()
                })
                .collect::<Vec<u32>>()
        })
        .collect();
    std_expect("vector_types", (&a, &b), &vec![0; 4 * N], N_BY_64, &want);
}

#[test]
fn ternary_minmax3() {
    let (a, b) = ints();
    elementwise("ternary_minmax3", &a, &b, |a, b, i| {
        let (x, y, z) = (a[i], b[i], a[(i + 1) % N]);
        let med = x.min(y).max(x.max(y).min(z));
        let smin3 = (x as i32).min(y as i32).min(z as i32);
        let field = (x >> (y & 15)) & ((1u32 << (z & 15)) - 1);
        let m = 0x3fff_ffff;
        let fm = fl(x & m).min(fl(y & m)).min(fl(z & m));
        med ^ smin3 as u32 ^ field ^ fm.to_bits()
    });
}

#[test]
fn hip_saxpy() {
    let (a, b) = (rand_f32(2 * N, 20, 100.0), rand_f32(2 * N, 21, 100.0));
    elementwise("hip_saxpy", &a, &b, |a, b, i| {
        (2.5 * fl(a[i]) + fl(b[i])).to_bits()
    });
}

#[test]
fn hip_shfl() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let w0 = i / 64 * 64;
            let s = (0..64).fold(0u32, |s, k| s.wrapping_add(lane_x(&a, w0 + k) & 0xffff));
            s ^ b[i]
        })
        .collect();
    std_expect("hip_shfl", (&a, &b), &vec![0; N], (256, 64), &want);
}

#[test]
fn hip_struct() {
    let (a, b) = ints();
    levels("hip_struct", |level| {
        let (ba, bb, out) = (Buf::new(&a), Buf::new(&b), Buf::zeros(2 * N));
        let mut args = blob(&[ba.addr(), bb.addr(), out.addr(), N as u64]);
        args.extend_from_slice(&1.5f64.to_le_bytes());
        args.extend_from_slice(&3u32.to_le_bytes());
        args.extend_from_slice(&(-7i32).to_le_bytes());
        launch("hip_struct", level, &args, [N as u32, 1, 1], [64, 1, 1], 0)?;
        let want: Vec<u32> = (0..N)
            .flat_map(|i| {
                let dd = (a[i] >> 3) as f64 * 1.5 + -7.0;
                let k = ((b[i] >> 3) as i32).wrapping_mul(1).wrapping_add(-7);
                [dd as i64 as u32, k as u32]
            })
            .collect();
        expect_eq("hip_struct", &out.words(2 * N), &want)
    });
}

#[test]
fn hip_lds() {
    let (a, b) = ints();
    let mut want: Vec<u32> = (0..N)
        .map(|i| {
            let (g, l) = (i / 128 * 128, i % 128);
            lane_x(&a, g + 127 - l).wrapping_add(lane_x(&a, g + ((l + 1) & 127)))
        })
        .collect();
    let s: u64 = b[..N].iter().map(|x| *x as u64).sum();
    want.extend([s as u32, (s >> 32) as u32]);
    std_expect("hip_lds", (&a, &b), &vec![0; N + 2], (256, 128), &want);
}

#[test]
fn swizzle_dpp() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let (w0, l) = (i / 64 * 64, i % 64);
            let x = |k: usize| lane_x(&a, w0 + k);
            let r = l & 15;
            let s1 = x(l ^ 1);
            let s2 = x((l & !3) | 1);
            let d1 = if r >= 1 { x(l - 1) } else { 0 };
            let d2 = x((l & !3) | (3 - (l & 3)));
            let row = l / 16;
            let d3 = if row == 1 || row == 3 {
                x(row * 16 - 1)
            } else {
                0
            };
            let d4 = if l >= 1 { x(l - 1) } else { 0 };
            s1 ^ (s2 << 1) ^ (d1 << 2) ^ (d2 << 3) ^ (d3 << 4) ^ (d4 << 5)
        })
        .collect();
    std_expect("swizzle_dpp", (&a, &b), &vec![0; N], (256, 64), &want);
}

#[test]
fn wave_reduce() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .map(|i| {
            let (w0, l) = (i / 64 * 64, i % 64);
            let x = |k: usize| lane_x(&a, w0 + k) & 0xffff;
            // Inclusive prefix sum within each row of 16 lanes.
            let row = l & !15;
            let s: u32 = (row..=l).map(x).sum();
            let total: u32 = (0..64).map(x).sum();
            s ^ total << 12
        })
        .collect();
    std_expect("wave_reduce", (&a, &b), &vec![0; N], (256, 64), &want);
}

#[test]
fn mfma() {
    let (a, b) = ints();
    let want: Vec<u32> = (0..N)
        .flat_map(|i| {
            let blk = i / 4 * 4;
            let x = |k: usize| (a[k % N] & 0xff) as f32;
            let y = (b[i % N] & 0xff) as f32;
            (0..4)
                .map(|k| x(blk + k).mul_add(y, (k + 1) as f32).to_bits())
                .collect::<Vec<u32>>()
        })
        .collect();
    std_expect("mfma", (&a, &b), &vec![0; 4 * N], (256, 64), &want);
}

#[test]
fn f16_math() {
    let a = rand_halves(N, 41);
    let (_, b) = ints();
    std_kernel("f16_math", &a, &b, &vec![0; 4 * N], N as u32, 64, |got| {
        let want: Vec<u32> = (0..N)
            .flat_map(|i| {
                let x = h2f(a[i] as u16);
                let u = b[i] as u16;
                let s = (b[i] >> 16) as u16 as i16;
                let pack = |lo: u16, hi: u16| lo as u32 | (hi as u32) << 16;
                let tr = x.trunc();
                [
                    pack(f2h(u as f64), f2h(s as f64)),
                    pack(f2h(x.floor()), f2h(x.ceil())),
                    pack(f2h(x.round_ties_even()), f2h(x.abs().sqrt())),
                    pack(tr.abs() as u16, tr as i16 as u16),
                ]
            })
            .collect();
        expect_eq("f16_math", got, &want)
    });
}

/// f32 to half rounding towards zero (finite inputs).
fn f2h_rtz(v: f32) -> u16 {
    let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs() as f64;
    let (mut lo, mut hi) = (0u16, 0x7bffu16);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if h2f(mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    sign | lo
}

#[test]
fn pack_builtins() {
    let (a, b) = (rand_f32(N, 43, 1.0e5), rand_f32(N, 44, 1.0e5));
    std_kernel(
        "pack_builtins",
        &a,
        &b,
        &vec![0; 4 * N],
        N as u32,
        64,
        |got| {
            let want: Vec<u32> = (0..N)
                .flat_map(|i| {
                    let (x, y, c) = (a[i], b[i], i as u32);
                    let field = |v: u32, k: u32, bits: u32| (v >> (k * bits)) & ((1 << bits) - 1);
                    let sad = |bits: u32| {
                        (0..32 / bits)
                            .map(|k| field(x, k, bits).abs_diff(field(y, k, bits)))
                            .sum::<u32>()
                    };
                    let al = (((x as u64) << 32 | y as u64) >> (8 * (c & 3))) as u32;
                    let lerp = (0..4).fold(0, |v, k| {
                        v | ((field(x, k, 8) + field(y, k, 8) + (field(c, k, 8) & 1)) >> 1)
                            << (8 * k)
                    });
                    let pk = f2h_rtz(fl(x) * 0.001) as u32 | (f2h_rtz(fl(y)) as u32) << 16;
                    [
                        al ^ sad(16).wrapping_add(c),
                        (sad(8) << 16).wrapping_add(c),
                        lerp,
                        pk,
                    ]
                })
                .collect();
            expect_eq("pack_builtins", got, &want)
        },
    );
}

#[test]
fn flat_scratch() {
    let (a, b) = ints();
    elementwise("flat_scratch", &a, &b, |a, b, i| {
        let mut buf = [0u32; 40];
        for k in 0..40 {
            buf[k] = a[i].wrapping_mul(k as u32 + 1) ^ b[(i + k) % N];
        }
        let half: Vec<u32> = (0..8).map(|k| (buf[k * 5] >> k) & 0xffff).collect();
        let (mut acc, mut idx) = (0u32, (b[i] % 40) as usize);
        for k in 0..12 {
            acc = acc.wrapping_add(buf[idx].wrapping_add(half[(idx + k) % 8]));
            let j = (idx * 3 + 1) % 40;
            buf[j] = buf[j].wrapping_add(acc);
            idx = ((idx as u32).wrapping_add(buf[idx]) % 40) as usize;
        }
        acc
    });
}

#[test]
fn buffer_atomics() {
    let (a, b) = ints();
    let (a_, b_) = (&a[..N], &b[..N]);
    let wide = a_.iter().zip(b_).fold(0u64, |s, (x, y)| {
        s.wrapping_add((*x as u64) << 20 | *y as u64)
    });
    let mut want = vec![
        a_.iter().fold(0u32, |s, x| s.wrapping_add(*x)),
        N as u32,
        *b_.iter().max().unwrap(),
        0,
        wide as u32,
        (wide >> 32) as u32,
        b_.iter().fold(0, |s, x| s ^ x),
        0,
    ];
    want.extend_from_slice(a_);
    want.extend(std::iter::repeat_n(0, N + 8));
    std_kernel(
        "buffer_atomics",
        &a,
        &b,
        &vec![0; 3 * N + 16],
        N as u32,
        64,
        |g| {
            expect_eq("buffer_atomics", &g[..2 * N + 16], &want)?;
            let mut tickets = g[2 * N + 16..3 * N + 16].to_vec();
            tickets.sort_unstable();
            expect_eq("tickets", &tickets, &(0..N as u32).collect::<Vec<_>>())
        },
    );
}

#[test]
fn d16_loads() {
    let a = rand_halves(N, 61);
    let (_, b) = ints();
    let half = |k: usize| (a[k / 2] >> (16 * (k % 2))) as u16;
    let byte = |k: usize| (b[k / 4] >> (8 * (k % 4))) as u8;
    let sbyte = |k: usize| byte(k) as i8 as i16;
    let mul = |x: u16, y: u16| f2h(h2f(x) * h2f(y));
    let add = |x: u16, y: u16| f2h(h2f(x) + h2f(y));
    let n = N;
    let want: Vec<u32> = (0..N)
        .flat_map(|i| {
            let (mut hx, mut hy) = (half(2 * i), half((7 * i) % (2 * n)));
            (hx, hy) = (mul(hx, half((5 * i + 1) % (2 * n))), mul(hy, half(i + 3)));
            (hx, hy) = (add(hx, half(i + 9)), add(hy, hy));
            let (mut sx, mut sy) = (half(i + 1) as i16, half((3 * i) % n) as i16);
            sx = sx.wrapping_add(byte(i) as i16);
            sy = sy.wrapping_add(sbyte(i + 2));
            sx = sx.wrapping_mul(byte((i * 9) % n) as i16);
            sy = sy.wrapping_mul(sbyte((i * 11) % n));
            let tx = sx.wrapping_sub(sbyte(i + 5));
            let ux = (sx as u16).wrapping_add(byte(i + 4) as u16);
            let uy = (sy as u16).wrapping_add(sy as u16);
            let pack = |lo: u16, hi: u16| lo as u32 | (hi as u32) << 16;
            [
                pack(hx, hy),
                pack(sx as u16, sy as u16),
                pack(tx as u16, 0),
                pack(ux, uy),
            ]
        })
        .collect();
    std_expect("d16_loads", (&a, &b), &vec![0; 4 * N], N_BY_64, &want);
}

#[test]
fn float_atomics() {
    let (a, b) = ints();
    let n = N;
    let x = |i: usize| ((a[i] % 1024) as i32 - 512) as f32 / 8.0;
    let mut init = vec![0u32; 16 + 5 * n];
    init[6..8].copy_from_slice(&pairs(&[0.25f64.to_bits()]));
    init[8..10].copy_from_slice(&pairs(&[1e300f64.to_bits()]));
    init[10..12].copy_from_slice(&pairs(&[(-1e300f64).to_bits()]));
    for i in 0..n {
        init[16 + i] = (i as f32 * 0.5).to_bits();
        let at = 16 + 2 * n + 2 * i;
        init[at..at + 2].copy_from_slice(&pairs(&[(2.0 * i as f64).to_bits()]));
    }
    let mut want = init.clone();
    let mut sums = [0f32; 4];
    let (mut lo, mut hi) = (0u32, 0u32);
    let (mut add, mut min, mut max) = (0.25f64, 1e300f64, -1e300f64);
    for i in 0..n {
        sums[i % 4] += x(i);
        lo += b[i] & 7;
        hi += (b[i] >> 8) & 7;
        let y = x(i) as f64;
        (add, min, max) = (add + y, min.min(y), max.max(y));
        want[16 + i] = (i as f32 * 0.5 + x(i)).to_bits();
        want[16 + n + i] = (i as f32 * 0.5).to_bits();
        let at = 16 + 2 * n + 2 * i;
        want[at..at + 2].copy_from_slice(&pairs(&[(2.0 * i as f64 + y).to_bits()]));
        want[16 + 4 * n + i] = 2 * i as u32;
    }
    for k in 0..4 {
        want[k] = sums[k].to_bits();
    }
    want[4] = f2h(lo as f64) as u32 | (f2h(hi as f64) as u32) << 16;
    want[6..12].copy_from_slice(&pairs(&[add.to_bits(), min.to_bits(), max.to_bits()]));
    std_expect("float_atomics", (&a, &b), &init, N_BY_64, &want);
}

/// The f32 MFMA shapes of `mfma_shapes` (name, m, n, k, blocks, elements
/// per lane, output registers, region in 256-word units), in kernel order.
type MfmaRow = (
    &'static str,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
);
const MFMA_SHAPES: [MfmaRow; 15] = [
    ("32x32x1f32", 32, 32, 1, 2, 1, 32, 0),
    ("16x16x1f32", 16, 16, 1, 4, 1, 16, 8),
    ("4x4x1f32", 4, 4, 1, 16, 1, 4, 12),
    ("32x32x2f32", 32, 32, 2, 1, 1, 16, 13),
    ("16x16x4f32", 16, 16, 4, 1, 1, 4, 17),
    ("32x32x4f16", 32, 32, 4, 2, 4, 32, 18),
    ("16x16x4f16", 16, 16, 4, 4, 4, 16, 26),
    ("4x4x4f16", 4, 4, 4, 16, 4, 4, 30),
    ("32x32x8f16", 32, 32, 8, 1, 4, 16, 31),
    ("16x16x16f16", 16, 16, 16, 1, 4, 4, 35),
    ("32x32x4bf16_1k", 32, 32, 4, 2, 4, 32, 36),
    ("16x16x4bf16_1k", 16, 16, 4, 4, 4, 16, 44),
    ("4x4x4bf16_1k", 4, 4, 4, 16, 4, 4, 48),
    ("32x32x8bf16_1k", 32, 32, 8, 1, 4, 16, 49),
    ("16x16x16bf16_1k", 16, 16, 16, 1, 4, 4, 53),
];

#[test]
fn mfma_shapes() {
    let (a, b) = ints();
    let small = |x: u32, k: usize| ((x >> (4 * k)) & 7) as f32 - 3.0;
    let c = |lane: usize, r: usize| {
        let w = a[(lane + 1) % N] ^ b[(lane + 2) % N];
        ((w >> (r % 8)) & 15) as f32 - 7.0
    };
    let mut want = vec![0u32; 54 * 256];
    for (_, m, n, k, blocks, e, regs, base) in MFMA_SHAPES {
        // The operand layouts of AMD's matrix instruction calculator: A's
        // element (i, kk) of block blk is element kk % e of lane
        // i + m * (blk * k / e + kk / e); B's (kk, j) likewise.
        let elem = |w: &[u32], row: usize, blk: usize, kk: usize| {
            small(w[row + m * (blk * (k / e) + kk / e)], kk % e)
        };
        // D's rows in groups of 4 spread over 64 / n lane groups, then
        // registers.
        let groups = 64 / n;
        for blk in 0..blocks {
            for i in 0..m {
                let g = blk * (m / 4) + i / 4;
                let (reg, lane_grp) = (4 * (g / groups) + i % 4, g % groups);
                for j in 0..n {
                    let lane = j + n * lane_grp;
                    let dot: f32 = (0..k)
                        .map(|kk| elem(&a, i, blk, kk) * elem(&b, j, blk, kk))
                        .sum();
                    want[base * 256 + lane * regs + reg] = (c(lane, reg) + dot).to_bits();
                }
            }
        }
    }
    std_kernel(
        "mfma_shapes",
        &a,
        &b,
        &vec![0; 54 * 256],
        64,
        64,
        |got| match MFMA_SHAPES.iter().find_map(|s| {
            let r = s.7 * 256..(s.7 + s.6 / 4) * 256;
            expect_eq(s.0, &got[r.clone()], &want[r]).err()
        }) {
            Some(e) => Err(e),
            None => Ok(()),
        },
    );
}

/// The integer MFMA shapes: (name, m, n, k, blocks, registers of D, base).
const MFMA_I8_SHAPES: [(&str, usize, usize, usize, usize, usize, usize); 5] = [
    ("32x32x4i8", 32, 32, 4, 2, 32, 0),
    ("16x16x4i8", 16, 16, 4, 4, 16, 8),
    ("4x4x4i8", 4, 4, 4, 16, 4, 12),
    ("32x32x8i8", 32, 32, 8, 1, 16, 13),
    ("16x16x16i8", 16, 16, 16, 1, 4, 17),
];

/// `v_mfma_i32_*i8`: the f16 shapes' layouts with four signed bytes per
/// lane, i32 sums that wrap.
#[test]
fn mfma_i8() {
    let (a, b) = ints();
    let e = 4;
    let c = |lane: usize, r: usize| ((a[(lane + 1) % N] ^ b[(lane + 2) % N]) << (r % 8)) as i32;
    let mut want = vec![0u32; 18 * 256];
    for (_, m, n, k, blocks, regs, base) in MFMA_I8_SHAPES {
        let elem = |w: &[u32], row: usize, blk: usize, kk: usize| {
            (w[row + m * (blk * (k / e) + kk / e)] >> (8 * (kk % e))) as u8 as i8 as i32
        };
        let groups = 64 / n;
        for blk in 0..blocks {
            for i in 0..m {
                let g = blk * (m / 4) + i / 4;
                let (reg, lane_grp) = (4 * (g / groups) + i % 4, g % groups);
                for j in 0..n {
                    let lane = j + n * lane_grp;
                    let dot: i32 = (0..k)
                        .map(|kk| elem(&a, i, blk, kk) * elem(&b, j, blk, kk))
                        .sum();
                    want[base * 256 + lane * regs + reg] = c(lane, reg).wrapping_add(dot) as u32;
                }
            }
        }
    }
    std_kernel(
        "mfma_i8",
        &a,
        &b,
        &vec![0; 18 * 256],
        64,
        64,
        |got| match MFMA_I8_SHAPES.iter().find_map(|s| {
            let r = s.6 * 256..(s.6 + s.5 / 4) * 256;
            expect_eq(s.0, &got[r.clone()], &want[r]).err()
        }) {
            Some(e) => Err(e),
            None => Ok(()),
        },
    );
}

/// `v_mfma_f64_16x16x4f64` and `v_mfma_f64_4x4x4f64`, in the CDNA2 layouts
/// of AMD's matrix instruction calculator: A's `(i, k)` of block `b` in
/// lane `i + m * b + 16 * k`, B's `(k, j)` in lane `j + n * b + 16 * k`, D's
/// `(i, j)` in register pair `i / 4` of lane `j + n * b + 16 * (i % 4)`.
#[test]
fn mfma_f64() {
    let (a, b) = ints();
    let small = |x: u32, k: usize| ((x >> (4 * k)) & 15) as f64 - 7.0;
    let cw = |lane: usize| a[(lane + 1) % N] ^ b[(lane + 2) % N];
    let (fx, fy) = (|l: usize| small(a[l], 0), |l: usize| small(b[l], 1));
    let mut want = vec![0u32; 640];
    // (m, n, blocks, first output word); C's pair p of a lane is element p
    // of its vector (16x16x4), element 4 (4x4x4).
    let shapes = [(16, 16, 1, 0), (4, 4, 4, 512)];
    for (m, n, blocks, base) in shapes {
        let pairs = if base == 0 { 4 } else { 1 };
        for blk in 0..blocks {
            for i in 0..m {
                for j in 0..n {
                    let (lane, pair) = (j + n * blk + 16 * (i % 4), i / 4);
                    let c_elem = if base == 0 { pair } else { 4 };
                    let mut acc = small(cw(lane), c_elem);
                    for kk in 0..4 {
                        acc += fx(i + m * blk + 16 * kk) * fy(j + n * blk + 16 * kk);
                    }
                    let at = base + 2 * (pairs * lane + pair);
                    want[at] = acc.to_bits() as u32;
                    want[at + 1] = (acc.to_bits() >> 32) as u32;
                }
            }
        }
    }
    std_kernel("mfma_f64", &a, &b, &vec![0; 640], 64, 64, |got| {
        expect_eq("mfma_f64", got, &want)
    });
}

/// The VOP3-only 16-bit operations (`v_fma_f16`, `v_min3/max3/med3_f16`,
/// ...) on small integers, so every result is exact.
#[test]
fn f16_vop3() {
    let (a, b) = ints();
    let sh = |x: u32, k: u32| ((x >> (5 * k)) & 31) as i32 as f64 - 16.0;
    let mut want = vec![0u32; 6 * N];
    for i in 0..N {
        let (x, y) = (a[i], b[i]);
        let (p, q, r) = (sh(x, 0), sh(x, 1), sh(y, 0));
        let h = |v: f64| f2h(v) as u32;
        let md = p.max(q).min(r).max(p.min(q));
        want[6 * i] = h(p * q + r) | h(p.max(q).max(r)) << 16;
        want[6 * i + 1] = h(p.min(r).min(q)) | h(md) << 16;
        let (s, t, u) = (x as i16, (x >> 16) as i16, y as i16);
        want[6 * i + 2] = s.max(t).max(u) as u16 as u32 | (s.min(t).min(u) as u16 as u32) << 16;
        let (us, ut, uu) = (y as u16, (y >> 16) as u16, (x >> 7) as u16);
        let umad = (us as u32 * ut as u32 + uu as u32) as u16;
        want[6 * i + 3] = us.max(ut).max(uu) as u32 | (umad as u32) << 16;
        want[6 * i + 4] = (s as i32 * t as i32 + u as i32) as u16 as u32;
        want[6 * i + 5] = (us as u32 * ut as u32).wrapping_add(y);
    }
    std_kernel("f16_vop3", &a, &b, &vec![0; 6 * N], N as u32, 64, |got| {
        expect_eq("f16_vop3", got, &want)
    });
}

#[test]
fn vgpr_index() {
    let (a, b) = ints();
    let mut want = vec![0u32; 2 * N];
    for i in 0..N {
        let mut v: Vec<u32> = (0..16u32)
            .map(|r| a[i].wrapping_mul(r + 1).wrapping_add(r << 8))
            .collect();
        let k = (b[i] % 16) as usize;
        v[k] ^= 0x55aa;
        want[2 * i] = v[k].wrapping_add(v[(k + 5) % 16]);
        want[2 * i + 1] = v
            .iter()
            .fold(0u32, |s, x| s.wrapping_mul(3).wrapping_add(*x));
    }
    std_expect("vgpr_index", (&a, &b), &vec![0; 2 * N], N_BY_64, &want);
}

/// The check most kernels make: [`std_kernel`] on `(a, b)` with `(grid,
/// block)`, whose `out` (starting as `out_init`) must equal `want` word for
/// word ([`expect_eq`]).
fn std_expect(
    name: &str,
    (a, b): (&[u32], &[u32]),
    out_init: &[u32],
    shape: (u32, u16),
    want: &[u32],
) {
    std_kernel(name, a, b, out_init, shape.0, shape.1, |got| {
        expect_eq(name, got, want)
    });
}

/// The launch shape most kernels use: N work-items in blocks of 64.
const N_BY_64: (u32, u16) = (N as u32, 64);
