//! Runtime CPU-feature dispatch of the interpreter's lane loops.
//!
//! The release build targets baseline x86-64 (SSE2), where a 64-lane loop
//! over 32-bit values moves 4 lanes per instruction. [`run`] executes a
//! [`Kernel`] compiled a second time for AVX2 (with BMI1/2, LZCNT, POPCNT
//! and FMA, which every AVX2 CPU has) when the CPU has it, checked at run
//! time, so the same binary runs everywhere and uses 8-lane vectors where
//! it can. A kernel's `run` is `#[inline(always)]`, so its whole body (the
//! per-opcode lane loops it inlines) is compiled for the wider target inside
//! [`run_avx2`].
//!
//! The results do not depend on the path: the lane loops are integer and
//! IEEE operations whose results AVX2 computes as SSE2 does (FMA is used
//! only where the code asks for a fused `mul_add`, which is fused either
//! way; Rust never contracts a separate multiply and add). Tests run
//! whichever path their CPU has; `SIMGPU_NO_AVX2=1` in the environment
//! forces the baseline path, and `wave.rs`'s test
//! `avx2_and_baseline_paths_agree` runs every VALU row and compare on both.

use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering;

/// Code to run under [`run`]: its `run` must be `#[inline(always)]`.
pub trait Kernel {
    /// What the kernel returns.
    type Out;
    /// The work.
    fn run(self) -> Self::Out;
}

/// 0: not checked yet, 1: baseline, 2: AVX2.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Whether [`run`] takes the AVX2 path (the CPU has AVX2, BMI1/2, LZCNT,
/// POPCNT and FMA, and `SIMGPU_NO_AVX2` is not set). Checked once.
#[inline(always)]
pub fn avx2() -> bool {
    match LEVEL.load(Ordering::Relaxed) {
        0 => detect(),
        l => l == 2,
    }
}

/// Tests: run the baseline path (`false`), or the path the CPU supports
/// (`true`: AVX2 where [`cpu_has_avx2`] finds it, else still the baseline).
#[cfg(test)]
pub(crate) fn force_avx2(on: bool) -> bool {
    let has = on && cpu_has_avx2();
    LEVEL.store(if has { 2 } else { 1 }, Ordering::Relaxed);
    has
}

#[cold]
fn detect() -> bool {
    let no = std::env::var_os("SIMGPU_NO_AVX2").is_some_and(|v| v != "0");
    let has = !no && cpu_has_avx2();
    LEVEL.store(if has { 2 } else { 1 }, Ordering::Relaxed);
    has
}

#[cfg(target_arch = "x86_64")]
fn cpu_has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
        && std::is_x86_feature_detected!("bmi2")
        && std::is_x86_feature_detected!("lzcnt")
        && std::is_x86_feature_detected!("popcnt")
        && std::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has_avx2() -> bool {
    false
}

/// Runs `k`, compiled for AVX2 when [`avx2`] says the CPU has it.
#[inline(always)]
pub fn run<K: Kernel>(k: K) -> K::Out {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: `run_avx2` is compiled for AVX2, BMI1, BMI2, LZCNT,
        // POPCNT and FMA; `avx2()` is true only when `cpu_has_avx2` found
        // every one of them on this CPU (`is_x86_feature_detected!`).
        return unsafe { run_avx2(k) };
    }
    k.run()
}

/// [`Kernel::run`] compiled for AVX2 (its body is inlined here).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt,fma")]
#[inline(never)]
fn run_avx2<K: Kernel>(k: K) -> K::Out {
    k.run()
}
