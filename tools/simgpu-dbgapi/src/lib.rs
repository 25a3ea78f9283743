//! `libsimgpu_dbgapi.so`: the amd-dbgapi C ABI (0.77) over the simulated
//! gfx90a of `gpu_target::sim`.
//!
//! A debugger loads it exactly like `librocm-dbgapi.so.0` (same symbol
//! names, ELF symbol versions, struct layouts and status codes). Every
//! function of the ABI is exported; those outside the subset a debug server
//! needs answer `AMD_DBGAPI_STATUS_ERROR_NOT_IMPLEMENTED`.
//!
//! How the simulated GPU meets the program: attaching to process `pid`
//! starts a [`gpu_target::sim::device::Device`] over the inferior's memory
//! (`process_vm_readv`/`writev`: unified memory) and listens on the abstract
//! unix socket `simgpu-dbgapi.<pid>`. The program's runtime (`simgpu-rt`)
//! connects, says where its `r_debug` is, and from then on submits its
//! dispatch packets to this device, whose threads keep running waves while
//! the host process is stopped. Device threads only queue events and write a
//! byte into the notifier pipe; the library's single caller turns them into
//! ABI events in `amd_dbgapi_process_next_pending_event`.
//!
//! Set `SIMGPU_DBGAPI_VERSION=0.71.0` to make `amd_dbgapi_get_version`
//! report an older ABI (used to test that clients refuse it).
//! `SIMGPU_FAIL` and `SIMGPU_STALL` inject faults (see `faults`).
//! `SIMGPU_AGENTS` presents several agents, some unsupported (see `agents`);
//! `SIMGPU_RUNTIME_RESTRICTION` refuses the runtime (see `restriction`).

mod agents;
mod archs;
mod faults;
mod ffi;
mod library;
mod restriction;
mod storm;
#[cfg(not(test))]
mod symver;

pub use library::BUILD_NAME;
pub use library::VERSION;
