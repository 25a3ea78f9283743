//! The C ABI of the runtime. The only `unsafe` of this crate is here.
#![allow(unsafe_code)]

use std::ffi::c_char;
use std::ffi::c_int;
use std::ffi::c_void;
use std::ffi::CStr;
use std::sync::atomic::AtomicI32;
use std::sync::atomic::AtomicU64;

use crate::runtime;
use crate::runtime::Module;
use crate::runtime::RDebug;
use crate::runtime::Status;

/// The rendezvous the debugger's GPU library reads (`struct r_debug`).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static _simgpu_r_debug: RDebug = RDebug {
    r_version: AtomicI32::new(1),
    r_map: AtomicU64::new(0),
    r_brk: AtomicU64::new(0),
    r_state: AtomicI32::new(gpu_target::sim::rendezvous::RT_CONSISTENT),
    r_ldbase: AtomicU64::new(0),
};

/// The hook on which the GPU library asks for a host breakpoint (`r_brk`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn _simgpu_loader_debug_state() {
    // Keeps the function distinct (not merged with another empty one).
    std::hint::black_box(&_simgpu_r_debug);
}

/// Initialises the runtime (optional; idempotent).
#[no_mangle]
pub extern "C" fn simgpu_init() -> c_int {
    runtime::init() as c_int
}

/// Shuts the runtime down (the debugger sees the GPU runtime unload); a
/// later `simgpu_init` brings it up again as a new runtime.
#[no_mangle]
pub extern "C" fn simgpu_shutdown() -> c_int {
    runtime::shutdown() as c_int
}

/// Text of a status code (static string).
#[no_mangle]
pub extern "C" fn simgpu_status_string(status: c_int) -> *const c_char {
    let s: &'static CStr = match status {
        0 => c"success",
        1 => c"invalid argument",
        2 => c"cannot read the code object file",
        3 => c"not a gfx90a code object",
        4 => c"kernel not found",
        5 => c"memory violation in a kernel",
        6 => c"kernel aborted (trap or illegal instruction)",
        7 => c"lost the debugger's GPU library",
        8 => c"kernel timed out (watchdog)",
        _ => c"unknown status",
    };
    debug_assert_eq!(s.to_str().ok(), Some(Status::text(status)));
    s.as_ptr()
}

/// Loads the code object at `path`; `*module` receives a handle.
///
/// # Safety
/// `path` is a NUL-terminated string; `module` is writable.
#[no_mangle]
pub unsafe extern "C" fn simgpu_module_load(
    path: *const c_char,
    module: *mut *mut Module,
) -> c_int {
    if path.is_null() || module.is_null() {
        return Status::InvalidArgument as c_int;
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-null).
    let Ok(path) = unsafe { CStr::from_ptr(path) }.to_str() else {
        return Status::InvalidArgument as c_int;
    };
    match runtime::load(path) {
        Ok(m) => {
            // SAFETY: `module` is non-null and writable per the contract.
            unsafe { *module = Box::into_raw(m) };
            Status::Success as c_int
        }
        Err(s) => s as c_int,
    }
}

/// Unloads a module returned by `simgpu_module_load`.
///
/// # Safety
/// `module` came from `simgpu_module_load` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn simgpu_module_unload(module: *mut Module) -> c_int {
    if module.is_null() {
        return Status::InvalidArgument as c_int;
    }
    // SAFETY: ownership returns from C; the pointer came from Box::into_raw.
    runtime::unload(unsafe { Box::from_raw(module) });
    Status::Success as c_int
}

/// Launches `kernel` over `grid` work-items in blocks of `block` with the
/// argument blob `args` (laid out as the kernel's kernarg segment) and waits.
///
/// # Safety
/// As [`simgpu_launch_ex`].
#[no_mangle]
pub unsafe extern "C" fn simgpu_launch(
    module: *const Module,
    kernel: *const c_char,
    grid: *const u32,
    block: *const u16,
    args: *const c_void,
    args_size: usize,
) -> c_int {
    // SAFETY: the same contract, forwarded.
    unsafe { simgpu_launch_ex(module, kernel, grid, block, args, args_size, 0) }
}

/// [`simgpu_launch`] with `dynamic_lds_bytes` of dynamic LDS: the group
/// segment is the kernel's static LDS plus this; each dynamic `__local`
/// pointer argument's slot in `args` holds an offset into the dynamic part
/// (normally 0) and the kernel receives the group-segment address.
///
/// # Safety
/// `module` is live; `kernel` is NUL-terminated; `grid`/`block` point to 3
/// elements; `args` points to `args_size` bytes (or is NULL with size 0).
#[no_mangle]
pub unsafe extern "C" fn simgpu_launch_ex(
    module: *const Module,
    kernel: *const c_char,
    grid: *const u32,
    block: *const u16,
    args: *const c_void,
    args_size: usize,
    dynamic_lds_bytes: u32,
) -> c_int {
    if module.is_null() || kernel.is_null() || grid.is_null() || block.is_null() {
        return Status::InvalidArgument as c_int;
    }
    if args.is_null() && args_size != 0 {
        return Status::InvalidArgument as c_int;
    }
    // SAFETY: all pointers are non-null and valid per the contract above.
    let (module, kernel, grid, block, args) = unsafe {
        (
            &*module,
            CStr::from_ptr(kernel),
            [*grid, *grid.add(1), *grid.add(2)],
            [*block, *block.add(1), *block.add(2)],
            if args_size == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(args as *const u8, args_size)
            },
        )
    };
    let Ok(kernel) = kernel.to_str() else {
        return Status::InvalidArgument as c_int;
    };
    runtime::launch(module, kernel, grid, block, args, dynamic_lds_bytes) as c_int
}

/// The calling thread's last launch error as text ("" after a success); for
/// an aborted dispatch it names the reason, the pc and the instruction bytes.
/// Valid until the thread's next launch.
#[no_mangle]
pub extern "C" fn simgpu_last_error() -> *const c_char {
    runtime::with_last_error(|s| s.as_ptr())
}

/// Sets the launch watchdog's timeout in milliseconds for this process
/// (`0` turns it off); overrides `SIMGPU_WATCHDOG_MS`.
#[no_mangle]
pub extern "C" fn simgpu_set_watchdog_ms(ms: u64) -> c_int {
    crate::watchdog::set_timeout_ms(ms);
    Status::Success as c_int
}
