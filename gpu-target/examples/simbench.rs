//! Simulator speed: instructions/s and waves/s on the sample kernels, and
//! wave-list latency with 10,000 resident waves.
//!
//! ```text
//! cargo run --release -p gpu-target --example simbench [-- --threads N]
//! ```

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::elf::Elf;
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
    println!("simgpu benchmark ({threads} device threads)\n");
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
