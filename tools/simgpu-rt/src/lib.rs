//! `simgpu-rt`: the runtime that sample GPU programs link — the analog of
//! ROCr for the simulated gfx90a.
//!
//! C API (see `samples/include/simgpu_rt.h`): load a code object (`.hsaco`),
//! launch a kernel with a grid, a block and an argument blob, and wait for it.
//!
//! **Execution.** Memory is unified: kernels read and write the process's own
//! heap. Without a debugger the runtime runs kernels itself with the
//! `gpu_target::sim` device (over its own memory via `process_vm_readv`, so a
//! bad pointer faults the dispatch instead of the process). When a debugger's
//! GPU library (the simulated amd-dbgapi, `libsimgpu_dbgapi.so`) is attached,
//! it listens on the abstract unix socket `simgpu-dbgapi.<pid>`; the runtime
//! connects, and dispatches then go to the device that lives in the debugger
//! process — a GPU keeps running while its host process is stopped.
//!
//! **Debugger rendezvous, ROCr's pattern.** `_simgpu_r_debug` is an `r_debug`
//! whose `r_map` lists the loaded code objects (`l_addr` = load address,
//! `l_name` = URI) and whose `r_brk` is `_simgpu_loader_debug_state`, a hook
//! called before (`RT_ADD`/`RT_DELETE`) and after (`RT_CONSISTENT`) every
//! change. The GPU library asks the debugger for a host breakpoint there.
//!
//! Wire protocol with the GPU library (16-byte messages: `u32 kind`, `u32`
//! padding, `u64 value`): runtime → library `HELLO(&_simgpu_r_debug)`, then
//! `DISPATCH(packet address)`; library → runtime `ACK` once the debugger has
//! processed the runtime-loaded event, `DONE(status)` per dispatch.

mod ffi;
pub mod runtime;
mod wait;
pub mod watchdog;

pub use runtime::Status;
