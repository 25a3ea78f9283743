//! Every sample kernel is bit-exact against a CPU reference: one wave, many
//! workgroups and a partial last wave; over local buffers and over this
//! process's own memory (the unified-memory path the runtime uses).

#![allow(clippy::needless_range_loop)]

use std::sync::Arc;
use std::time::Duration;

use gpu_target::model::StopReasons;
use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::elf::Elf;
use gpu_target::sim::memory::BufferMemory;
use gpu_target::sim::memory::GlobalMemory;
use gpu_target::sim::memory::ProcessMemory;

fn hsaco(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../samples/kernels/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Memory for one test: either local buffers or heap blocks of this process.
enum Mem {
    Buf(Arc<BufferMemory>, u64),
    Proc(Vec<Vec<u8>>),
}

impl Mem {
    fn alloc(&mut self, bytes: Vec<u8>) -> u64 {
        match self {
            Mem::Buf(m, next) => {
                let a = *next;
                *next += (bytes.len() as u64 + 0xffff) & !0xfff;
                m.map(a, bytes);
                a
            }
            Mem::Proc(blocks) => {
                // 4 KiB alignment for code images.
                let mut v = vec![0u8; bytes.len() + 4096];
                let off = (4096 - (v.as_ptr() as usize % 4096)) % 4096;
                v[off..off + bytes.len()].copy_from_slice(&bytes);
                let a = v.as_ptr() as u64 + off as u64;
                blocks.push(v);
                a
            }
        }
    }
    fn global(&self) -> Arc<dyn GlobalMemory> {
        match self {
            Mem::Buf(m, _) => m.clone(),
            Mem::Proc(_) => Arc::new(ProcessMemory::this_process()),
        }
    }
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Launch {
    mem: Mem,
    dev: Device,
    kd: u64,
}

impl Launch {
    fn new(kernel_file: &str, kernel: &str, local: bool) -> Self {
        let mut mem = if local {
            Mem::Buf(Arc::new(BufferMemory::new()), 0x10_0000)
        } else {
            Mem::Proc(Vec::new())
        };
        let bytes = hsaco(kernel_file);
        let elf = Elf::parse_code_object(&bytes).unwrap();
        assert_eq!(elf.amdgpu_mach(), 0x3f);
        let base = mem.alloc(elf.load_image().unwrap());
        let kd = base + elf.symbol(&format!("{kernel}.kd")).unwrap().value;
        let dev = Device::new(
            mem.global(),
            DeviceConfig {
                threads: 2,
                ..Default::default()
            },
        );
        Self { mem, dev, kd }
    }

    fn run(&mut self, args: Vec<u8>, grid: u32, wg: u16) -> DispatchOutcome {
        let kernarg = self.mem.alloc(args);
        let packet = encode_dispatch_packet(self.kd, kernarg, [grid, 1, 1], [wg, 1, 1], 0);
        let p = self.mem.alloc(packet.to_vec());
        let id = self.dev.submit(p).unwrap();
        self.dev
            .wait(id, Some(Duration::from_secs(60)))
            .expect("dispatch did not finish within 60 s")
    }

    fn read(&self, addr: u64, n: usize) -> Vec<u32> {
        let mut b = vec![0u8; n * 4];
        self.mem.global().read(addr, &mut b).unwrap();
        b.chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
}

fn input(n: usize, seed: u32) -> Vec<u32> {
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

/// (grid, workgroup) shapes: one wave, many workgroups, partial last wave.
const SHAPES: [(u32, u16); 4] = [(64, 64), (4096, 256), (1000, 128), (77, 64)];

fn check_vector_add(local: bool) {
    let mut l = Launch::new("vector_add", "vector_add", local);
    for (n, wg) in SHAPES {
        let a = input(n as usize, 1);
        let b = input(n as usize, 2);
        let pa = l.mem.alloc(words(&a));
        let pb = l.mem.alloc(words(&b));
        let pc = l.mem.alloc(vec![0xee; n as usize * 4 + 64]);
        let mut args = Vec::new();
        for p in [pa, pb, pc] {
            args.extend(p.to_le_bytes());
        }
        args.extend(n.to_le_bytes());
        // Launch a grid rounded up to the workgroup: the kernel's bounds
        // check must mask the excess lanes.
        let grid = n.div_ceil(wg as u32) * wg as u32;
        assert_eq!(l.run(args, grid, wg), DispatchOutcome::Completed);
        let c = l.read(pc, n as usize + 16);
        for i in 0..n as usize {
            assert_eq!(c[i], a[i].wrapping_add(b[i]), "n={n} i={i}");
        }
        assert!(
            c[n as usize..].iter().all(|&x| x == 0xeeee_eeee),
            "wrote past n={n}"
        );
    }
}

fn check_reduce(local: bool) {
    let mut l = Launch::new("reduce", "reduce_sum", local);
    for (n, wg) in SHAPES {
        let a: Vec<u32> = input(n as usize, 3).iter().map(|x| x & 0xffff).collect();
        let groups = n.div_ceil(wg as u32) as usize;
        let pa = l.mem.alloc(words(&a));
        let po = l.mem.alloc(vec![0; groups * 4]);
        let mut args = Vec::new();
        args.extend(pa.to_le_bytes());
        args.extend(po.to_le_bytes());
        args.extend(n.to_le_bytes());
        let grid = groups as u32 * wg as u32;
        assert_eq!(l.run(args, grid, wg), DispatchOutcome::Completed);
        let out = l.read(po, groups);
        for g in 0..groups {
            let lo = g * wg as usize;
            let hi = (lo + wg as usize).min(n as usize);
            let want = a[lo..hi].iter().fold(0u32, |s, &x| s.wrapping_add(x));
            assert_eq!(out[g], want, "n={n} wg={wg} group={g}");
        }
    }
}

fn divergent_ref(inp: &[u32], i: usize) -> u32 {
    let mut x = inp[i];
    let mut steps = 0u32;
    while x > 1 && steps < 64 {
        x = if x & 1 != 0 {
            x.wrapping_mul(3).wrapping_add(1)
        } else {
            x >> 1
        };
        steps += 1;
    }
    match i % 3 {
        0 => steps.wrapping_mul(7).wrapping_add(i as u32),
        1 => steps ^ 0x5a5a,
        _ => (steps << 4) | (inp[i] & 0xf),
    }
}

fn check_divergent(local: bool) {
    let mut l = Launch::new("divergent", "divergent", local);
    for (n, wg) in SHAPES {
        let a: Vec<u32> = input(n as usize, 4).iter().map(|x| x % 1000).collect();
        let pa = l.mem.alloc(words(&a));
        let po = l.mem.alloc(vec![0; n as usize * 4]);
        let mut args = Vec::new();
        args.extend(pa.to_le_bytes());
        args.extend(po.to_le_bytes());
        args.extend(n.to_le_bytes());
        // Exact grid: the last workgroup (and wave) is partial.
        assert_eq!(l.run(args, n, wg), DispatchOutcome::Completed);
        let out = l.read(po, n as usize);
        for i in 0..n as usize {
            assert_eq!(out[i], divergent_ref(&a, i), "n={n} i={i}");
        }
    }
}

fn check_fault(local: bool) {
    let mut l = Launch::new("fault", "fault", local);
    let mut args = Vec::new();
    args.extend(0x10u64.to_le_bytes());
    args.extend(5u32.to_le_bytes());
    match l.run(args, 64, 64) {
        DispatchOutcome::Aborted {
            reason, fault_addr, ..
        } => {
            assert_eq!(reason, StopReasons::MEMORY_VIOLATION);
            assert_eq!(fault_addr, Some(0x10));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn vector_add_local() {
    check_vector_add(true);
}
#[test]
fn vector_add_process_memory() {
    check_vector_add(false);
}
#[test]
fn reduce_local() {
    check_reduce(true);
}
#[test]
fn reduce_process_memory() {
    check_reduce(false);
}
#[test]
fn divergent_local() {
    check_divergent(true);
}
#[test]
fn divergent_process_memory() {
    check_divergent(false);
}
#[test]
fn fault_local() {
    check_fault(true);
}
#[test]
fn fault_process_memory() {
    check_fault(false);
}
