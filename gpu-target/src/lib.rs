//! # gpu-target
//!
//! The GPU side of gdbmux: a model of an AMD GPU as a debugger sees it, the
//! binding to the AMD debugger library (amd-dbgapi), and a simulated gfx90a
//! that executes real code objects so everything can be tested on machines
//! without a GPU. It knows nothing of GDB.
//!
//! ## Layout
//!
//! - [`model`] — agents, queues, dispatches, waves (id, state, stop reason,
//!   PC, EXEC, workgroup coordinates), address spaces, register
//!   descriptions, code objects, events, and the object-safe
//!   [`model::GpuBackend`] contract a debugger drives.
//! - [`dbgapi`] — the production path: [`dbgapi::sys`] loads an amd-dbgapi
//!   library with `libloading` (`librocm-dbgapi.so.0`, `$ROCDBGAPI_PATH`, or
//!   a path), refuses ABIs older than 0.76, binds each function at its ELF
//!   symbol version and implements the callbacks; [`dbgapi::DbgApiBackend`]
//!   is the [`model::GpuBackend`] over it. [`dbgapi::abi`] is the one
//!   definition of the C ABI, shared with the simulated library.
//! - [`sim`] — the simulated GPU: an ELF64 code-object reader and AMDHSA
//!   kernel descriptors ([`sim::elf`]), a gfx90a decoder whose output matches
//!   `llvm-objdump-19` ([`sim::decode`]), a wave64 interpreter
//!   ([`sim::wave`]), global memory through a trait with a
//!   `process_vm_readv` implementation ([`sim::memory`]), and the device that
//!   schedules waves on its own threads and obeys stop/resume/step
//!   ([`sim::device`]).
//!
//! The simulated GPU reaches a debugger only through the same C ABI as the
//! real one: `tools/simgpu-dbgapi` builds `libsimgpu_dbgapi.so` over
//! [`sim`], and `tools/simgpu-rt` is the runtime that sample programs link.
//!
//! ## Example: run a sample kernel on the simulator
//!
//! ```
//! use std::sync::Arc;
//! use gpu_target::sim::device::{encode_dispatch_packet, Device, DeviceConfig, DispatchOutcome};
//! use gpu_target::sim::elf::Elf;
//! use gpu_target::sim::memory::{BufferMemory, GlobalMemory};
//!
//! let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/kernels/vector_add.hsaco"))?;
//! let elf = Elf::parse_code_object(&bytes)?;
//! let mem = Arc::new(BufferMemory::new());
//! let base = 0x10_0000;
//! mem.map(base, elf.load_image()?);
//! let kd = base + elf.symbol("vector_add.kd")?.value;
//! // a = [1; 64], b = [2; 64], c = [0; 64], n = 64
//! mem.map(0x20_0000, vec![1, 0, 0, 0].repeat(64));
//! mem.map(0x30_0000, vec![2, 0, 0, 0].repeat(64));
//! mem.map(0x40_0000, vec![0; 256]);
//! let mut args = Vec::new();
//! for p in [0x20_0000u64, 0x30_0000, 0x40_0000] { args.extend(p.to_le_bytes()); }
//! args.extend(64u32.to_le_bytes());
//! mem.map(0x50_0000, args);
//! mem.map(0x60_0000, encode_dispatch_packet(kd, 0x50_0000, [64, 1, 1], [64, 1, 1], 0).to_vec());
//!
//! let dev = Device::new(mem.clone(), DeviceConfig::default());
//! let id = dev.submit(0x60_0000)?;
//! assert_eq!(dev.wait(id, None), Some(DispatchOutcome::Completed));
//! assert_eq!(mem.snapshot(0x40_0000, 4)?, [3, 0, 0, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Unsafe code
//!
//! Only [`dbgapi::sys`] (the C calls and callback trampolines). Process
//! memory goes through `nix`'s safe `process_vm_readv`/`writev`.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod dbgapi;
pub mod idhash;
pub mod library;
pub mod model;
pub mod sim;
