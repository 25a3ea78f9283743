//! The interpreter allocates nothing per instruction (issue 15: the
//! simulator's speed): a counting global allocator sees how many heap
//! allocations a dispatch makes. Per dispatch, work-group and wave there are
//! a few (the wave's registers and private memory, the decoded code pages,
//! the finished list); per instruction there must be none, so a dispatch of
//! tens of thousands of wave-instructions makes a small, fixed number.

use std::alloc::System;
use std::sync::Arc;
use std::time::Duration;

use stats_alloc::StatsAlloc;
use stats_alloc::INSTRUMENTED_SYSTEM;

use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::elf::Elf;
use gpu_target::sim::launch::build_kernarg;
use gpu_target::sim::launch::kernel_metadata;
use gpu_target::sim::launch::LaunchDims;
use gpu_target::sim::memory::BufferMemory;

/// The system allocator, counted by `stats_alloc` (which counts allocations
/// and reallocations across all threads, the device threads included).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Runs kernel `kernel` of corpus code object `file` over `items`
/// work-items in work-groups of `block` (every pointer argument a buffer of
/// small integers, every value argument `items`); returns
/// (wave-instructions, allocations from submit to completion).
fn dispatch(file: &str, kernel: &str, items: u32, block: u16) -> (u64, usize) {
    let path = format!(
        "{}/../samples/corpus/bin/{file}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let elf = Elf::parse_code_object(&bytes).expect("code object");
    let meta = kernel_metadata(&elf)
        .into_iter()
        .find(|m| m.name == kernel)
        .expect("kernel metadata");
    let mem = Arc::new(BufferMemory::new());
    let mut next = 0x1000_0000u64;
    let mut put = |b: Vec<u8>| {
        let a = next;
        next += (b.len() as u64 + 0x1_0fff) & !0xfff;
        mem.map(a, b);
        a
    };
    let base = put(elf.load_image().expect("image"));
    let kd = base + elf.symbol(&format!("{kernel}.kd")).expect("kd").value;
    let mut user = Vec::new();
    for arg in meta
        .args
        .iter()
        .filter(|x| !x.value_kind.starts_with("hidden_"))
    {
        let end = (arg.offset + arg.size) as usize;
        user.resize(user.len().max(end), 0);
        let v = if arg.value_kind == "global_buffer" {
            put((0..items * 16)
                .flat_map(|i| (i * 7 % 61).to_le_bytes())
                .collect())
        } else {
            items as u64
        };
        let n = (arg.size as usize).min(8);
        user[arg.offset as usize..][..n].copy_from_slice(&v.to_le_bytes()[..n]);
    }
    let dims = LaunchDims {
        grid: [items, 1, 1],
        block: [block, 1, 1],
        dynamic_lds: 0,
    };
    let (kernarg, group) = build_kernarg(&meta, &user, dims).expect("kernarg");
    let ka = put(kernarg);
    let pk = put(encode_dispatch_packet(kd, ka, dims.grid, dims.block, group).to_vec());
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 1,
            ..Default::default()
        },
    );
    let before = GLOBAL.stats();
    let id = dev.submit(pk).expect("submit");
    let out = dev.wait(id, Some(Duration::from_secs(120)));
    let after = GLOBAL.stats();
    let allocs =
        (after.allocations + after.reallocations) - (before.allocations + before.reallocations);
    assert_eq!(out, Some(DispatchOutcome::Completed), "{file} {kernel}");
    (dev.instructions_executed(), allocs)
}

#[test]
fn dispatches_allocate_per_wave_not_per_instruction() {
    // A search loop with a per-lane gather from global memory (O2: VALU,
    // SALU, branches, global loads and stores), the same at -O0 (scratch
    // spills through MUBUF), global compare-and-swap loops, LDS and
    // private arrays; one work-group of 2 waves.
    let mut total = 0;
    for (file, kernel) in [
        ("loop_break.O2", "loop_break"),
        ("loop_break.O0", "loop_break"),
        ("spill_pressure.O0", "spill_pressure"),
        ("cas_loop.O0", "cas_loop"),
        ("lds_types.O0", "lds_types"),
        ("private_array.O0", "private_array"),
    ] {
        let (insts, allocs) = dispatch(file, kernel, 128, 128);
        eprintln!("{file}: {insts} wave-instructions, {allocs} allocations");
        total += insts;
        assert!(
            allocs < 64,
            "{file}: {allocs} allocations for {insts} wave-instructions"
        );
    }
    assert!(total > 200_000, "only {total} wave-instructions");
}
