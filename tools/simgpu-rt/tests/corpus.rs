//! Corpus kernels (samples/corpus) at -O0 -g, -O1, -O2 and -O3, launched
//! through the runtime (hidden arguments, dynamic LDS), bit-exact against a
//! CPU reference.

#![allow(clippy::needless_range_loop)] // element i of several arrays

use simgpu_rt::runtime;
use simgpu_rt::Status;

const N: usize = 200;

fn input(seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    (0..2 * N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

fn blob(parts: &[u64]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// Runs `name` at every level over random `a`, `b` (2N words each, floats
/// for `float` kernels in [-1000, 1000]) and checks `out[i] == want(a, b, i)`.
fn check(name: &str, float: bool, want: impl Fn(&[u32], &[u32], usize) -> u32) {
    let (mut a, mut b) = (input(1), input(2));
    if float {
        for v in a.iter_mut().chain(b.iter_mut()) {
            *v = ((*v % 2_000_000) as f32 / 1000.0 - 1000.0).to_bits();
        }
    }
    for level in 0..4 {
        let path = format!(
            "{}/../../samples/corpus/bin/{name}.O{level}.hsaco",
            env!("CARGO_MANIFEST_DIR")
        );
        let m = runtime::load(&path).unwrap_or_else(|s| panic!("{path}: {s:?}"));
        let mut out = vec![0u32; 2 * N];
        let args = blob(&[
            a.as_ptr() as u64,
            b.as_ptr() as u64,
            out.as_mut_ptr() as u64,
            N as u64,
        ]);
        let st = runtime::launch(&m, name, [N as u32, 1, 1], [64, 1, 1], &args, 0);
        assert_eq!(
            st,
            Status::Success,
            "{name} -O{level}: {}",
            runtime::last_error()
        );
        for i in 0..N {
            assert_eq!(out[i], want(&a, &b, i), "{name} -O{level}: element {i}");
        }
        runtime::unload(m);
    }
}

#[test]
fn int_div() {
    check("int_div", false, |a, b, i| {
        let (x, y) = (a[i], b[i] >> (b[i] & 15));
        let q = x.checked_div(y).unwrap_or(0);
        q.wrapping_mul(31).wrapping_add(x % (y | 1))
    });
}

#[test]
fn sdiv() {
    check("sdiv", false, |a, b, i| {
        let x = a[i] as i32;
        let mut y = (b[i] as i32) >> (b[i] & 15);
        if y == 0 || (x == i32::MIN && y == -1) {
            y = 7;
        }
        (x.wrapping_div(y) as u32) ^ (x.wrapping_rem(y) as u32)
    });
}

#[test]
fn nested_branch() {
    check("nested_branch", false, |a, b, i| {
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
fn divergent_loop() {
    check("divergent_loop", false, |a, b, i| {
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
fn lds_dynamic_gets_its_lds() {
    for level in 0..4 {
        let path = format!(
            "{}/../../samples/corpus/bin/lds_dynamic.O{level}.hsaco",
            env!("CARGO_MANIFEST_DIR")
        );
        let m = runtime::load(&path).expect("load");
        let a = input(3);
        let mut out = vec![0u32; N];
        // a, out, n (4 bytes), then the dynamic __local argument: offset 0.
        let mut args = blob(&[a.as_ptr() as u64, out.as_mut_ptr() as u64]);
        args.extend_from_slice(&(N as u32).to_le_bytes());
        args.extend_from_slice(&0u32.to_le_bytes());
        let st = runtime::launch(
            &m,
            "lds_dynamic",
            [N as u32, 1, 1],
            [64, 1, 1],
            &args,
            64 * 4,
        );
        assert_eq!(st, Status::Success, "-O{level}: {}", runtime::last_error());
        for i in 0..N {
            let (g, l) = (i / 64, i % 64);
            let src = g * 64 + 63 - l;
            let v = if src < N { a[src] } else { 0 };
            assert_eq!(
                out[i],
                v.wrapping_add(0x1000 * (l as u32 & 3)),
                "-O{level}: {i}"
            );
        }
        // Without dynamic LDS the launch is refused, not run with 0 bytes.
        let st = runtime::launch(&m, "lds_dynamic", [N as u32, 1, 1], [64, 1, 1], &args, 0);
        assert_eq!(st, Status::InvalidArgument);
        runtime::unload(m);
    }
}
