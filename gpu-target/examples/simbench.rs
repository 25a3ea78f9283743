//! Simulator speed: wave-instructions/s over every kernel of the corpus
//! (samples/corpus/bin, each at -O0 -g to -O3), instructions/s and waves/s on
//! the sample kernels, and wave-list latency with 10,000 resident waves.
//!
//! ```text
//! cargo run --release -p gpu-target --example simbench [-- --threads N] [--corpus-only] [--items N] [--only SUBSTRING]
//! ```
//!
//! Corpus launches are generic: every pointer argument gets its own buffer
//! of small integers (64 bytes per work-item), every by-value argument the
//! work-item count, a dynamic `__local` argument 4 KiB; memory is local
//! buffers ([`BufferMemory`]), so the figure is the interpreter's, not
//! `process_vm_readv`'s.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::elf::Elf;
use gpu_target::sim::launch::build_kernarg;
use gpu_target::sim::launch::kernel_metadata;
use gpu_target::sim::launch::KernelMeta;
use gpu_target::sim::launch::LaunchDims;
use gpu_target::sim::memory::BufferMemory;
use gpu_target::sim::memory::GlobalMemory;
use gpu_target::sim::memory::ProcessMemory;
use gpu_target::sim::synthetic::spin_image;
use gpu_target::sim::synthetic::SPIN_CODE_OFFSET;
use gpu_target::sim::synthetic::S_ENDPGM;

fn hsaco(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../samples/kernels/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Places byte blocks either in local buffers or in this process's heap.
struct Alloc {
    local: Option<Arc<BufferMemory>>,
    next: u64,
    keep: Vec<Vec<u8>>,
}

impl Alloc {
    fn new(local: bool) -> Self {
        Self {
            local: local.then(|| Arc::new(BufferMemory::new())),
            next: 0x1000_0000,
            keep: Vec::new(),
        }
    }
    fn put(&mut self, bytes: Vec<u8>) -> u64 {
        match &self.local {
            Some(m) => {
                let a = self.next;
                self.next += (bytes.len() as u64 + 0x1_0fff) & !0xfff;
                m.map(a, bytes);
                a
            }
            None => {
                let mut v = vec![0u8; bytes.len() + 4096];
                let off = (4096 - v.as_ptr() as usize % 4096) % 4096;
                v[off..off + bytes.len()].copy_from_slice(&bytes);
                let a = v.as_ptr() as u64 + off as u64;
                self.keep.push(v);
                a
            }
        }
    }
    fn mem(&self) -> Arc<dyn GlobalMemory> {
        match &self.local {
            Some(m) => m.clone(),
            None => Arc::new(ProcessMemory::this_process()),
        }
    }
}

fn run_kernel(
    threads: usize,
    local: bool,
    file: &str,
    kernel: &str,
    n: u32,
    wg: u16,
    args: impl Fn(&mut Alloc) -> Vec<u8>,
) {
    let mut a = Alloc::new(local);
    let bytes = hsaco(file);
    let elf = Elf::parse_code_object(&bytes).expect("code object");
    let base = a.put(elf.load_image().expect("image"));
    let kd = base + elf.symbol(&format!("{kernel}.kd")).expect("kd").value;
    let kernarg = args(&mut a);
    let ka = a.put(kernarg);
    let pk = a.put(encode_dispatch_packet(kd, ka, [n, 1, 1], [wg, 1, 1], 0).to_vec());
    let dev = Device::new(
        a.mem(),
        DeviceConfig {
            threads,
            ..Default::default()
        },
    );
    let t = Instant::now();
    let id = dev.submit(pk).expect("submit");
    let out = dev.wait(id, Some(Duration::from_secs(600)));
    let dt = t.elapsed().as_secs_f64();
    assert_eq!(out, Some(DispatchOutcome::Completed));
    let insts = dev.instructions_executed();
    let waves = (n as u64).div_ceil(64);
    println!(
        "| {kernel:<10} | {:<7} | {n:>9} | {waves:>7} | {:>8.1} | {:>9.2} | {:>8.0} |",
        if local { "buffer" } else { "process" },
        dt * 1e3,
        insts as f64 / dt / 1e6,
        waves as f64 / dt,
    );
}

/// CPU seconds this process has used (all threads, also exited ones), from
/// /proc/self/stat (`utime` + `stime`, in USER_HZ = 100 ticks per second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of the line; `after` starts at field 3.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// Nanoseconds on a CPU of all live threads of this process (the first
/// field of each /proc/self/task/TID/schedstat).
fn threads_cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Runs every kernel of every corpus code object; returns (instructions,
/// seconds) summed over the launches that completed.
fn corpus(threads: usize, items: u32, only: Option<&str>) -> (u64, f64) {
    let dir = format!("{}/../samples/corpus/bin", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hsaco"))
        .filter(|p| only.is_none_or(|o| p.to_string_lossy().contains(o)))
        .collect();
    files.sort();
    println!("| code object | kernel | waves | wave-insts | ms | M wave-inst/s | M per CPU-s |");
    println!("|---|---|---|---|---|---|---|");
    let (mut total_i, mut total_t, mut total_cpu) = (0u64, 0f64, 0f64);
    let mut rates = Vec::new();
    let cpu0 = cpu_seconds();
    for f in &files {
        let bytes = std::fs::read(f).expect("code object");
        let elf = Elf::parse_code_object(&bytes).expect("code object");
        let file = f.file_name().unwrap_or_default().to_string_lossy();
        for meta in kernel_metadata(&elf) {
            let mut out = None;
            for block in [256u16, 64] {
                out = corpus_launch(threads, &elf, &meta, items, block);
                if out.is_some() {
                    break;
                }
            }
            let Some((insts, dt, cpu)) = out else {
                println!("| {file} | {} | - | - | - | aborted |", meta.name);
                continue;
            };
            let rate = insts as f64 / dt / 1e6;
            rates.push(rate);
            total_i += insts;
            total_t += dt;
            total_cpu += cpu;
            println!(
                "| {file} | {} | {} | {insts} | {:.1} | {rate:.2} | {:.2} |",
                meta.name,
                items.div_ceil(64),
                dt * 1e3,
                insts as f64 / cpu / 1e6
            );
        }
    }
    let cpu = cpu_seconds() - cpu0;
    rates.sort_by(|a, b| a.total_cmp(b));
    if !rates.is_empty() {
        // On a shared machine wall time includes other processes' turns;
        // the CPU figure (set-up included) is what the simulator costs.
        println!(
            "\ncorpus CPU: the launches ran {total_cpu:.2} CPU-s ({cpu:.2} with set-up) for {:.1} M wave-instructions: {:.2} M wave-inst per CPU-second; {threads} device threads, each with a core: {:.2} M wave-inst/s",
            total_i as f64 / 1e6,
            total_i as f64 / total_cpu / 1e6,
            total_i as f64 / total_cpu / 1e6 * threads as f64
        );
        // Issue 15: 50 M wave-instructions/s on 2 cores.
        println!(
            "issue 15 target: 25 M wave-inst per CPU-second (50 M/s with 2 device threads); this run: {:.0}% of it",
            total_i as f64 / total_cpu / 1e6 / 25.0 * 100.0
        );
        println!(
            "corpus: {} launches, {:.1} M wave-instructions in {:.2} s: {:.2} M wave-inst/s overall; per launch min {:.2}, median {:.2}, max {:.2}",
            rates.len(),
            total_i as f64 / 1e6,
            total_t,
            total_i as f64 / total_t / 1e6,
            rates[0],
            rates[rates.len() / 2],
            rates[rates.len() - 1]
        );
    }
    (total_i, total_t)
}

/// One generic launch: (wave-instructions, wall seconds, CPU seconds of
/// every thread from submit to completion); `None` when it did not complete.
fn corpus_launch(
    threads: usize,
    elf: &Elf<'_>,
    meta: &KernelMeta,
    items: u32,
    block: u16,
) -> Option<(u64, f64, f64)> {
    let mut a = Alloc::new(true);
    let base = a.put(elf.load_image().ok()?);
    let kd = base + elf.symbol(&format!("{}.kd", meta.name)).ok()?.value;
    let mut user = Vec::new();
    let mut dynamic = 0;
    for arg in meta
        .args
        .iter()
        .filter(|x| !x.value_kind.starts_with("hidden_"))
    {
        let end = (arg.offset + arg.size) as usize;
        if user.len() < end {
            user.resize(end, 0);
        }
        let v: u64 = match arg.value_kind.as_str() {
            "global_buffer" => {
                let words = items as usize * 16;
                a.put(
                    (0..words as u32)
                        .flat_map(|i| (i * 7 % 61).to_le_bytes())
                        .collect(),
                )
            }
            "dynamic_shared_pointer" => {
                dynamic = 4096;
                0
            }
            _ => items as u64,
        };
        let n = (arg.size as usize).min(8);
        user[arg.offset as usize..arg.offset as usize + n].copy_from_slice(&v.to_le_bytes()[..n]);
    }
    let dims = LaunchDims {
        grid: [items, 1, 1],
        block: [block, 1, 1],
        dynamic_lds: dynamic,
    };
    let (kernarg, group) = build_kernarg(meta, &user, dims).ok()?;
    let ka = a.put(kernarg);
    let pk = a.put(encode_dispatch_packet(kd, ka, dims.grid, dims.block, group).to_vec());
    let dev = Device::new(
        a.mem(),
        DeviceConfig {
            threads,
            ..Default::default()
        },
    );
    let c = threads_cpu_ns();
    let t = Instant::now();
    let id = dev.submit(pk).ok()?;
    let out = dev.wait(id, Some(Duration::from_secs(600)));
    let dt = t.elapsed().as_secs_f64();
    let cpu = threads_cpu_ns().saturating_sub(c) as f64 / 1e9;
    (out == Some(DispatchOutcome::Completed)).then(|| (dev.instructions_executed(), dt, cpu))
}

fn main() {
    let mut threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        threads = args
            .get(i + 1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(threads);
    }
    let items = args
        .iter()
        .position(|a| a == "--items")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1u32 << 16);
    println!("simgpu benchmark ({threads} device threads)\n");
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    corpus(threads, items, only.map(String::as_str));
    if args.iter().any(|a| a == "--corpus-only") {
        return;
    }
    println!();
    println!("| kernel     | memory  | items     | waves   | ms       | Minst/s   | waves/s  |");
    println!("|---|---|---|---|---|---|---|");
    for local in [true, false] {
        let n = 1 << 20;
        run_kernel(threads, local, "vector_add", "vector_add", n, 256, |a| {
            let pa = a.put(vec![1; n as usize * 4]);
            let pb = a.put(vec![2; n as usize * 4]);
            let pc = a.put(vec![0; n as usize * 4]);
            [pa, pb, pc]
                .iter()
                .flat_map(|p| p.to_le_bytes())
                .chain(n.to_le_bytes())
                .collect()
        });
        let n = 1 << 18;
        run_kernel(threads, local, "divergent", "divergent", n, 128, |a| {
            let inp: Vec<u8> = (0..n).flat_map(|i| (i % 997).to_le_bytes()).collect();
            let pi = a.put(inp);
            let po = a.put(vec![0; n as usize * 4]);
            [pi, po]
                .iter()
                .flat_map(|p| p.to_le_bytes())
                .chain(n.to_le_bytes())
                .collect()
        });
        let n = 1 << 18;
        run_kernel(threads, local, "reduce", "reduce_sum", n, 256, |a| {
            let pi = a.put(vec![1; n as usize * 4]);
            let po = a.put(vec![0; (n / 256) as usize * 4]);
            [pi, po]
                .iter()
                .flat_map(|p| p.to_le_bytes())
                .chain(n.to_le_bytes())
                .collect()
        });
    }

    // Wave-list latency with 10,000 resident, running waves.
    let mem = Arc::new(BufferMemory::new());
    let code = 0x100_0000u64;
    mem.map(code, spin_image());
    let pk = 0x200_0000u64;
    let waves = 10_000u32;
    mem.map(
        pk,
        encode_dispatch_packet(code, 0, [waves * 64, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads,
            max_resident_waves: 16384,
            ..Default::default()
        },
    );
    dev.set_debug(true);
    let t = Instant::now();
    let id = dev.submit(pk).expect("submit");
    let launch = t.elapsed();
    assert_eq!(dev.wave_ids().len(), waves as usize);
    let mut lat = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let l = dev.wave_ids();
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(l.len(), waves as usize);
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let ids = dev.wave_ids();
    let t = Instant::now();
    for &w in &ids {
        dev.wave_info(w).expect("wave info");
    }
    let info_us = t.elapsed().as_secs_f64() * 1e6 / ids.len() as f64;
    let t = Instant::now();
    for &w in &ids {
        dev.stop_wave(w).expect("stop");
    }
    let stop_ms = t.elapsed().as_secs_f64() * 1e3;
    let evs = dev.take_events().len();
    println!("\n10,000 resident waves (spinning):");
    println!("- make resident: {:.1} ms", launch.as_secs_f64() * 1e3);
    println!(
        "- wave list: median {:.1} µs, p99 {:.1} µs",
        lat[lat.len() / 2],
        lat[lat.len() * 99 / 100]
    );
    println!("- wave info: {info_us:.2} µs per wave (while running)");
    println!("- stop all: {stop_ms:.1} ms ({evs} stop events)");
    dev.write_memory(code + SPIN_CODE_OFFSET, &S_ENDPGM)
        .expect("patch");
    dev.write_memory(code + SPIN_CODE_OFFSET + 4, &S_ENDPGM)
        .expect("patch");
    for &w in &ids {
        dev.resume_wave(w, gpu_target::model::ResumeMode::Normal)
            .expect("resume");
    }
    assert_eq!(
        dev.wait(id, Some(Duration::from_secs(60))),
        Some(DispatchOutcome::Completed)
    );
}
