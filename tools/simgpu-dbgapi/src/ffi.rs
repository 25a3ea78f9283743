//! The exported C functions. All `unsafe` of the crate is here: raw
//! pointers from the client are checked and converted, then the safe
//! [`Library`] does the work. Panics never cross the boundary.
#![allow(clippy::missing_safety_doc)]
#![cfg_attr(test, allow(dead_code))]

use std::ffi::c_char;
use std::ffi::c_void;
use std::ffi::CString;
use std::panic::catch_unwind;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicI32;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::sync::OnceLock;

use gpu_target::dbgapi::abi::fns;
use gpu_target::dbgapi::abi::status as st;
use gpu_target::dbgapi::abi::Callbacks;
use gpu_target::dbgapi::abi::ClientProcess;
use gpu_target::dbgapi::abi::ClientThread;
use gpu_target::dbgapi::abi::Handle;
use gpu_target::dbgapi::abi::Status;
use gpu_target::dbgapi::abi::WatchpointList;
use gpu_target::dbgapi::abi::CHANGED_NO;
use gpu_target::dbgapi::abi::CHANGED_YES;
use gpu_target::dbgapi::abi::CLIENT_PROCESS_INFO_OS_PID;
use gpu_target::dbgapi::abi::REGISTER_ABSENT;
use gpu_target::dbgapi::abi::REGISTER_PRESENT;

use crate::library::Client;
use crate::library::Info;
use crate::library::Library;
use crate::library::ListOut;
use crate::library::ASPACE_GENERIC;
use crate::library::ASPACE_GLOBAL;
use crate::library::ASPACE_LOCAL;
use crate::library::BUILD_NAME;
use crate::library::VERSION;

static LIB: Mutex<Option<Library>> = Mutex::new(None);
static LOG_LEVEL: AtomicI32 = AtomicI32::new(0);

/// The client's callbacks behind the safe [`Client`] trait.
struct CClient {
    cb: Callbacks,
}

impl Client for CClient {
    fn free(&self, p: usize) {
        if let Some(f) = self.cb.deallocate_memory {
            // SAFETY: `p` was allocated by the client (its symbolizer).
            unsafe { f(p as *mut c_void) }
        }
    }

    fn alloc_copy(&self, data: &[u8]) -> Result<usize, Status> {
        let alloc = self.cb.allocate_memory.ok_or(st::ERROR_CLIENT_CALLBACK)?;
        // SAFETY: allocate_memory is the client's malloc-like callback.
        let p = unsafe { alloc(data.len().max(1)) } as *mut u8;
        if p.is_null() {
            return Err(st::ERROR_CLIENT_CALLBACK);
        }
        // SAFETY: `p` points to at least data.len() writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(p as usize)
    }

    fn os_pid(&self, cp: usize) -> Result<i32, Status> {
        let f = self
            .cb
            .client_process_get_info
            .ok_or(st::ERROR_CLIENT_CALLBACK)?;
        let mut pid: i32 = 0;
        // SAFETY: the callback writes a pid_t into `pid` (size given).
        let s = unsafe {
            f(
                cp as ClientProcess,
                CLIENT_PROCESS_INFO_OS_PID,
                std::mem::size_of::<i32>(),
                &mut pid as *mut i32 as *mut c_void,
            )
        };
        if s != st::SUCCESS {
            return Err(st::ERROR_CLIENT_CALLBACK);
        }
        Ok(pid)
    }

    fn insert_breakpoint(&self, cp: usize, addr: u64, id: u64) -> Status {
        match self.cb.insert_breakpoint {
            // SAFETY: plain values; the client owns `cp`.
            Some(f) => unsafe { f(cp as ClientProcess, addr, Handle::new(id)) },
            None => st::ERROR_CLIENT_CALLBACK,
        }
    }

    fn remove_breakpoint(&self, cp: usize, id: u64) -> Status {
        match self.cb.remove_breakpoint {
            // SAFETY: plain values; the client owns `cp`.
            Some(f) => unsafe { f(cp as ClientProcess, Handle::new(id)) },
            None => st::ERROR_CLIENT_CALLBACK,
        }
    }

    fn read_global(&self, cp: usize, addr: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let f = self
            .cb
            .xfer_global_memory
            .ok_or(st::ERROR_CLIENT_CALLBACK)?;
        let mut size = buf.len() as u64;
        // SAFETY: `buf` is writable for `size` bytes; write buffer is NULL.
        let s = unsafe {
            f(
                cp as ClientProcess,
                addr,
                &mut size,
                buf.as_mut_ptr() as *mut c_void,
                std::ptr::null(),
            )
        };
        match s {
            st::SUCCESS => Ok(size as usize),
            st::ERROR_MEMORY_ACCESS => Err(st::ERROR_MEMORY_ACCESS),
            _ => Err(st::ERROR_CLIENT_CALLBACK),
        }
    }

    fn log(&self, level: i32, msg: &str) {
        if level > LOG_LEVEL.load(Ordering::Relaxed) {
            return;
        }
        if let (Some(f), Ok(c)) = (self.cb.log_message, CString::new(msg)) {
            // SAFETY: `c` is a valid NUL-terminated string for the call.
            unsafe { f(level, c.as_ptr()) };
        }
    }
}

fn guard(f: impl FnOnce() -> Status) -> Status {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(st::ERROR)
}

fn with_lib(f: impl FnOnce(&mut Library) -> Status) -> Status {
    guard(|| {
        let mut g = LIB.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_mut() {
            Some(lib) => f(lib),
            None => st::ERROR_NOT_INITIALIZED,
        }
    })
}

fn status_of(r: Result<(), Status>) -> Status {
    r.err().unwrap_or(st::SUCCESS)
}

/// Writes `v` to `value` after checking the exact size.
unsafe fn put<T: Copy>(size: usize, value: *mut c_void, v: T) -> Status {
    if value.is_null() {
        return st::ERROR_INVALID_ARGUMENT;
    }
    if size != std::mem::size_of::<T>() {
        return st::ERROR_INVALID_ARGUMENT_COMPATIBILITY;
    }
    // SAFETY: the client says `value` holds `size` bytes = size_of::<T>().
    unsafe { (value as *mut T).write_unaligned(v) };
    st::SUCCESS
}

unsafe fn write_info(
    lib: &Library,
    r: Result<Info, Status>,
    size: usize,
    value: *mut c_void,
) -> Status {
    let info = match r {
        Ok(i) => i,
        Err(e) => return e,
    };
    // SAFETY: forwarded contract of `put` for every arm.
    unsafe {
        match info {
            Info::U16(v) => put(size, value, v),
            Info::U32(v) => put(size, value, v),
            Info::I32(v) => put(size, value, v),
            Info::U64(v) => put(size, value, v),
            Info::I64(v) => put(size, value, v),
            Info::Usize(v) => put(size, value, v),
            Info::Handle(v) => put(size, value, Handle::new(v)),
            Info::U32x3(v) => put(size, value, v),
            Info::U16x3(v) => put(size, value, v),
            Info::EmptyWatchpoints => put(
                size,
                value,
                WatchpointList {
                    count: 0,
                    watchpoint_ids: std::ptr::null_mut(),
                },
            ),
            Info::Str(_) | Info::Bytes(_) if size != std::mem::size_of::<*mut c_void>() => {
                st::ERROR_INVALID_ARGUMENT_COMPATIBILITY
            }
            Info::Str(s) => {
                let mut b = s.into_bytes();
                b.push(0);
                match lib.client().alloc_copy(&b) {
                    Ok(p) => put(size, value, p as *mut c_void),
                    Err(e) => e,
                }
            }
            Info::Bytes(b) => match lib.client().alloc_copy(&b) {
                Ok(p) => put(size, value, p as *mut c_void),
                Err(e) => e,
            },
        }
    }
}

unsafe fn write_list(
    lib: &Library,
    out: ListOut,
    count: *mut usize,
    list: *mut *mut Handle,
    changed: *mut i32,
) -> Status {
    if count.is_null() || list.is_null() {
        return st::ERROR_INVALID_ARGUMENT;
    }
    let (ptr, n) = if out.items.is_empty() {
        (std::ptr::null_mut(), 0)
    } else {
        let bytes: Vec<u8> = out.items.iter().flat_map(|h| h.to_le_bytes()).collect();
        match lib.client().alloc_copy(&bytes) {
            Ok(p) => (p as *mut Handle, out.items.len()),
            Err(e) => return e,
        }
    };
    // SAFETY: checked non-null; the client passes writable out-pointers.
    unsafe {
        *count = n;
        *list = ptr;
        if !changed.is_null() {
            *changed = if out.changed { CHANGED_YES } else { CHANGED_NO };
        }
    }
    st::SUCCESS
}

/// A register list (always "changed") written out by [`write_list`].
unsafe fn write_register_list(
    lib: &Library,
    r: Result<Vec<u64>, Status>,
    count: *mut usize,
    list: *mut *mut Handle,
) -> Status {
    match r {
        // SAFETY: forwarded out-pointer contract.
        Ok(items) => unsafe {
            write_list(
                lib,
                ListOut {
                    items,
                    changed: true,
                },
                count,
                list,
                std::ptr::null_mut(),
            )
        },
        Err(e) => e,
    }
}

/// Ends `read_memory`/`write_memory`: the bytes moved into `*size` (0 on
/// error) and the status.
unsafe fn write_memory_size(r: Result<usize, Status>, size: *mut u64) -> Status {
    let (n, status) = match r {
        Ok(n) => (n as u64, st::SUCCESS),
        Err(e) => (0, e),
    };
    // SAFETY: the caller checked `size` non-null.
    unsafe { *size = n };
    status
}

unsafe fn process_list(
    p: Handle,
    what: &'static str,
    count: *mut usize,
    list: *mut *mut Handle,
    changed: *mut i32,
) -> Status {
    with_lib(|lib| match lib.list(p.handle, what, !changed.is_null()) {
        // SAFETY: forwarded out-pointer contract.
        Ok(out) => unsafe { write_list(lib, out, count, list, changed) },
        Err(e) => e,
    })
}

/// The exported functions (C names `amd_dbgapi_<name>`, see `symver`).
#[allow(clippy::missing_safety_doc)]
pub mod exports {
    use super::*;

    // ---- version and lifetime ------------------------------------------------

    fn reported_version() -> (u32, u32, u32) {
        static V: OnceLock<(u32, u32, u32)> = OnceLock::new();
        *V.get_or_init(|| {
            std::env::var("SIMGPU_DBGAPI_VERSION")
                .ok()
                .and_then(|s| {
                    let mut it = s.split('.').map(|x| x.parse::<u32>().ok());
                    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
                })
                .unwrap_or(VERSION)
        })
    }

    pub unsafe extern "C" fn get_version(major: *mut u32, minor: *mut u32, patch: *mut u32) {
        let (a, b, c) = reported_version();
        // SAFETY: each pointer may be NULL (skipped) or writable.
        unsafe {
            if !major.is_null() {
                *major = a;
            }
            if !minor.is_null() {
                *minor = b;
            }
            if !patch.is_null() {
                *patch = c;
            }
        }
    }

    pub extern "C" fn get_build_name() -> *const c_char {
        static NAME: OnceLock<CString> = OnceLock::new();
        NAME.get_or_init(|| CString::new(BUILD_NAME).unwrap_or_default())
            .as_ptr()
    }

    pub unsafe extern "C" fn get_status_string(status: Status, out: *mut *const c_char) -> Status {
        static TEXTS: OnceLock<Mutex<std::collections::HashMap<i32, CString>>> = OnceLock::new();
        if out.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        let text = st::text(status);
        if text == "unknown status" {
            return st::ERROR_INVALID_ARGUMENT;
        }
        let map = TEXTS.get_or_init(|| Mutex::new(Default::default()));
        let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
        let c = m
            .entry(status)
            .or_insert_with(|| CString::new(text).unwrap_or_default());
        // SAFETY: `out` is non-null; the CString lives in a static map forever.
        unsafe { *out = c.as_ptr() };
        st::SUCCESS
    }

    pub unsafe extern "C" fn initialize(callbacks: *mut Callbacks) -> Status {
        guard(|| {
            if callbacks.is_null() {
                return st::ERROR_INVALID_ARGUMENT;
            }
            // SAFETY: non-null; the struct is copied by value as the ABI says.
            let cb = unsafe { *callbacks };
            if cb.allocate_memory.is_none()
                || cb.deallocate_memory.is_none()
                || cb.client_process_get_info.is_none()
                || cb.insert_breakpoint.is_none()
                || cb.remove_breakpoint.is_none()
                || cb.xfer_global_memory.is_none()
                || cb.log_message.is_none()
            {
                return st::ERROR_INVALID_ARGUMENT;
            }
            let mut g = LIB.lock().unwrap_or_else(|p| p.into_inner());
            if g.is_some() {
                return st::ERROR_ALREADY_INITIALIZED;
            }
            *g = Some(Library::new(Box::new(CClient { cb })));
            st::SUCCESS
        })
    }

    pub extern "C" fn finalize() -> Status {
        guard(|| {
            let mut g = LIB.lock().unwrap_or_else(|p| p.into_inner());
            match g.take() {
                Some(mut lib) => {
                    lib.finalize();
                    st::SUCCESS
                }
                None => st::ERROR_NOT_INITIALIZED,
            }
        })
    }

    pub extern "C" fn set_log_level(level: i32) {
        LOG_LEVEL.store(level, Ordering::Relaxed);
    }

    // ---- processes and events ---------------------------------------------------

    pub unsafe extern "C" fn process_attach(cp: ClientProcess, out: *mut Handle) -> Status {
        if cp.is_null() || out.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|lib| match lib.attach(cp as usize) {
            Ok(h) => {
                // SAFETY: non-null out-pointer.
                unsafe { *out = Handle::new(h) };
                st::SUCCESS
            }
            Err(e) => e,
        })
    }

    pub extern "C" fn process_detach(p: Handle) -> Status {
        with_lib(|lib| status_of(lib.detach(p.handle)))
    }

    pub extern "C" fn process_set_progress(p: Handle, progress: i32) -> Status {
        if !(0..=1).contains(&progress) {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|lib| status_of(lib.check_process(p.handle)))
    }

    pub extern "C" fn process_set_wave_creation(p: Handle, creation: i32) -> Status {
        if !(0..=1).contains(&creation) {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|lib| status_of(lib.set_wave_creation(p.handle, creation == 1)))
    }

    pub unsafe extern "C" fn process_next_pending_event(
        p: Handle,
        ev: *mut Handle,
        kind: *mut i32,
    ) -> Status {
        if ev.is_null() || kind.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|lib| match lib.next_pending_event(p.handle) {
            Ok((e, k)) => {
                // SAFETY: non-null out-pointers.
                unsafe {
                    *ev = Handle::new(e);
                    *kind = k;
                }
                st::SUCCESS
            }
            Err(e) => e,
        })
    }

    pub extern "C" fn event_processed(e: Handle) -> Status {
        with_lib(|lib| status_of(lib.event_processed(e.handle)))
    }

    pub unsafe extern "C" fn report_breakpoint_hit(
        bp: Handle,
        thread: ClientThread,
        action: *mut i32,
    ) -> Status {
        if action.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(
            |lib| match lib.report_breakpoint_hit(bp.handle, thread as usize) {
                Ok(a) => {
                    // SAFETY: non-null out-pointer.
                    unsafe { *action = a };
                    st::SUCCESS
                }
                Err(e) => e,
            },
        )
    }

    // ---- lists and entity info -------------------------------------------------

    /// `amd_dbgapi_process_<what>_list` exports over [`process_list`].
    macro_rules! process_list_exports {
        ($($name:ident => $what:literal),* $(,)?) => {
            $(
                pub unsafe extern "C" fn $name(
                    p: Handle,
                    n: *mut usize,
                    l: *mut *mut Handle,
                    c: *mut i32,
                ) -> Status {
                    // SAFETY: forwarded out-pointer contract.
                    unsafe { process_list(p, $what, n, l, c) }
                }
            )*
        };
    }

    /// `amd_dbgapi_<entity>_get_info` exports: `Library::$method(handle, q)`
    /// written out by [`write_info`].
    macro_rules! get_info_exports {
        ($($name:ident => $method:ident),* $(,)?) => {
            $(
                pub unsafe extern "C" fn $name(
                    h: Handle,
                    q: i32,
                    size: usize,
                    value: *mut c_void,
                ) -> Status {
                    with_lib(|lib| {
                        let r = lib.$method(h.handle, q);
                        // SAFETY: forwarded value contract.
                        unsafe { write_info(lib, r, size, value) }
                    })
                }
            )*
        };
    }

    process_list_exports!(
        process_agent_list => "agent",
        process_queue_list => "queue",
        process_dispatch_list => "dispatch",
        process_wave_list => "wave",
        process_code_object_list => "code_object",
    );

    get_info_exports!(
        agent_get_info => agent_info,
        queue_get_info => queue_info,
        dispatch_get_info => dispatch_info,
        wave_get_info => wave_info,
        code_object_get_info => code_object_info,
        process_get_info => process_info,
        event_get_info => event_info,
        architecture_get_info => architecture_info,
        register_get_info => register_info,
        address_space_get_info => address_space_info,
    );

    pub unsafe extern "C" fn architecture_address_space_list(
        a: Handle,
        n: *mut usize,
        l: *mut *mut Handle,
    ) -> Status {
        with_lib(|lib| {
            let r = lib.architecture_address_space_list(a.handle);
            // SAFETY: forwarded out-pointer contract.
            unsafe { write_register_list(lib, r, n, l) }
        })
    }

    // ---- waves ------------------------------------------------------------------

    pub extern "C" fn wave_stop(w: Handle) -> Status {
        with_lib(|lib| status_of(lib.wave_stop(w.handle)))
    }

    pub extern "C" fn wave_resume(w: Handle, mode: i32, exceptions: u32) -> Status {
        with_lib(|lib| status_of(lib.wave_resume(w.handle, mode, exceptions)))
    }

    // ---- architectures and registers ---------------------------------------------

    pub unsafe extern "C" fn get_architecture(mach: u32, out: *mut Handle) -> Status {
        if out.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|_| {
            let Some(arch) = crate::archs::by_mach(mach) else {
                return st::ERROR_INVALID_ELF_AMDGPU_MACHINE;
            };
            // SAFETY: non-null out-pointer.
            unsafe { *out = Handle::new(arch.handle) };
            st::SUCCESS
        })
    }

    pub unsafe extern "C" fn architecture_register_list(
        a: Handle,
        n: *mut usize,
        l: *mut *mut Handle,
    ) -> Status {
        with_lib(|lib| {
            let r = lib.architecture_register_list(a.handle);
            // SAFETY: forwarded out-pointer contract.
            unsafe { write_register_list(lib, r, n, l) }
        })
    }

    pub unsafe extern "C" fn wave_register_list(
        w: Handle,
        n: *mut usize,
        l: *mut *mut Handle,
    ) -> Status {
        with_lib(|lib| {
            let r = lib.wave_register_list(w.handle);
            // SAFETY: forwarded out-pointer contract.
            unsafe { write_register_list(lib, r, n, l) }
        })
    }

    pub unsafe extern "C" fn wave_register_exists(
        w: Handle,
        r: Handle,
        exists: *mut i32,
    ) -> Status {
        if exists.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        with_lib(|lib| match lib.wave_register_exists(w.handle, r.handle) {
            Ok(b) => {
                // SAFETY: non-null out-pointer.
                unsafe { *exists = if b { REGISTER_PRESENT } else { REGISTER_ABSENT } };
                st::SUCCESS
            }
            Err(e) => e,
        })
    }

    pub unsafe extern "C" fn read_register(
        w: Handle,
        r: Handle,
        off: u64,
        size: u64,
        value: *mut c_void,
    ) -> Status {
        if value.is_null() || size == 0 {
            return st::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the client provides `size` writable bytes at `value`.
        let out = unsafe { std::slice::from_raw_parts_mut(value as *mut u8, size as usize) };
        with_lib(|lib| status_of(lib.read_register(w.handle, r.handle, off as usize, out)))
    }

    pub unsafe extern "C" fn write_register(
        w: Handle,
        r: Handle,
        off: u64,
        size: u64,
        value: *const c_void,
    ) -> Status {
        if value.is_null() || size == 0 {
            return st::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the client provides `size` readable bytes at `value`.
        let data = unsafe { std::slice::from_raw_parts(value as *const u8, size as usize) };
        with_lib(|lib| status_of(lib.write_register(w.handle, r.handle, off as usize, data)))
    }

    // ---- memory -----------------------------------------------------------------

    pub unsafe extern "C" fn read_memory(
        p: Handle,
        w: Handle,
        lane: u32,
        aspace: Handle,
        addr: u64,
        size: *mut u64,
        value: *mut c_void,
    ) -> Status {
        if size.is_null() || value.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: `size` non-null; `value` holds `*size` writable bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(value as *mut u8, *size as usize) };
        with_lib(|lib| {
            let r = lib.memory(
                p.handle,
                w.handle,
                lane,
                aspace.handle,
                addr,
                Some(buf),
                None,
            );
            // SAFETY: `size` is non-null.
            unsafe { write_memory_size(r, size) }
        })
    }

    pub unsafe extern "C" fn write_memory(
        p: Handle,
        w: Handle,
        lane: u32,
        aspace: Handle,
        addr: u64,
        size: *mut u64,
        value: *const c_void,
    ) -> Status {
        if size.is_null() || value.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: `size` non-null; `value` holds `*size` readable bytes.
        let data = unsafe { std::slice::from_raw_parts(value as *const u8, *size as usize) };
        with_lib(|lib| {
            let r = lib.memory(
                p.handle,
                w.handle,
                lane,
                aspace.handle,
                addr,
                None,
                Some(data),
            );
            // SAFETY: `size` is non-null.
            unsafe { write_memory_size(r, size) }
        })
    }

    pub unsafe extern "C" fn dwarf_address_space_to_address_space(
        a: Handle,
        dwarf: u64,
        out: *mut Handle,
    ) -> Status {
        if out.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        if crate::archs::by_handle(a.handle).is_none() {
            return st::ERROR_INVALID_ARCHITECTURE_ID;
        }
        let h = match dwarf {
            0 => ASPACE_GLOBAL,
            1 => ASPACE_GENERIC,
            3 => ASPACE_LOCAL,
            5 => crate::library::ASPACE_PRIVATE_LANE,
            6 => crate::library::ASPACE_PRIVATE_WAVE,
            // AMD's library answers INVALID_ARGUMENT_COMPATIBILITY here.
            _ => return st::ERROR_INVALID_ARGUMENT_COMPATIBILITY,
        };
        // SAFETY: non-null out-pointer.
        unsafe { *out = Handle::new(h) };
        st::SUCCESS
    }

    /// The client's symbolizer (`amd_dbgapi_disassemble_instruction`).
    pub type Symbolizer =
        Option<unsafe extern "C" fn(*mut c_void, u64, *mut *mut c_char) -> Status>;

    /// LLVM's text of the instruction at `address`, with `  # <target>` on
    /// branches (the symbolizer's text for the target when it finds one, the
    /// address in hex otherwise), as AMD's library formats it.
    pub unsafe extern "C" fn disassemble_instruction(
        a: Handle,
        address: u64,
        size: *mut u64,
        memory: *const c_void,
        text: *mut *mut c_char,
        symbolizer_id: *mut c_void,
        symbolizer: Symbolizer,
    ) -> Status {
        with_lib(|lib| {
            if crate::archs::by_handle(a.handle).is_none() {
                return st::ERROR_INVALID_ARCHITECTURE_ID;
            }
            if size.is_null() || memory.is_null() || text.is_null() {
                return st::ERROR_INVALID_ARGUMENT;
            }
            // SAFETY: `size` is non-null; `memory` holds `*size` bytes.
            let bytes = unsafe {
                std::slice::from_raw_parts(memory as *const u8, (*size).min(64) as usize)
            };
            let Some(inst) = gpu_target::sim::decode::decode(bytes) else {
                return st::ERROR_ILLEGAL_INSTRUCTION;
            };
            let mut symbol = None;
            if let (Some(f), Some(target)) = (symbolizer, inst.branch_target(address)) {
                let mut out: *mut c_char = std::ptr::null_mut();
                // SAFETY: the client's symbolizer with its own id; it
                // allocates the text with allocate_memory.
                let s = unsafe { f(symbolizer_id, target, &mut out) };
                if s == st::SUCCESS && !out.is_null() {
                    // SAFETY: a NUL-terminated string from the client.
                    symbol = Some(
                        unsafe { std::ffi::CStr::from_ptr(out) }
                            .to_string_lossy()
                            .into_owned(),
                    );
                    lib.client().free(out as usize);
                } else if s != st::ERROR_SYMBOL_NOT_FOUND {
                    return st::ERROR_CLIENT_CALLBACK;
                }
            }
            let mut t = inst.dbgapi_text(address, symbol.as_deref()).into_bytes();
            t.push(0);
            match lib.client().alloc_copy(&t) {
                Ok(p) => {
                    // SAFETY: both out-pointers are non-null.
                    unsafe {
                        *size = inst.size as u64;
                        *text = p as *mut c_char;
                    }
                    st::SUCCESS
                }
                Err(e) => e,
            }
        })
    }

    // ---- displaced stepping ------------------------------------------------------

    pub unsafe extern "C" fn displaced_stepping_start(
        w: Handle,
        saved: *const c_void,
        out: *mut Handle,
    ) -> Status {
        if saved.is_null() || out.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the contract: `saved` holds the architecture's
        // breakpoint instruction size of bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(saved as *const u8, crate::library::BREAKPOINT_SIZE)
        }
        .to_vec();
        with_lib(|lib| match lib.displaced_stepping_start(w.handle, &bytes) {
            Ok(ds) => {
                // SAFETY: non-null out-pointer.
                unsafe { *out = Handle::new(ds) };
                st::SUCCESS
            }
            Err(e) => e,
        })
    }

    pub extern "C" fn displaced_stepping_complete(w: Handle, ds: Handle) -> Status {
        with_lib(|lib| status_of(lib.displaced_stepping_complete(w.handle, ds.handle)))
    }

    pub unsafe extern "C" fn displaced_stepping_get_info(
        ds: Handle,
        q: i32,
        size: usize,
        value: *mut c_void,
    ) -> Status {
        with_lib(|lib| {
            let r = lib.displaced_stepping_info(ds.handle, q);
            // SAFETY: `value` holds `size` bytes (the client's contract).
            unsafe { write_info(lib, r, size, value) }
        })
    }

    // ---- the rest of the ABI: not implemented ----------------------------------

    macro_rules! not_implemented {
    ($($name:ident),* $(,)?) => {
        $(
                        pub extern "C" fn $name() -> Status {
                st::ERROR_NOT_IMPLEMENTED
            }
        )*
    };
}

    not_implemented!(
        address_is_in_address_class,
        architecture_address_class_list,
        architecture_register_class_get_info,
        architecture_register_class_list,
        breakpoint_get_info,
        dwarf_address_class_to_address_class,
        dwarf_register_to_register,
        queue_packet_list,
        register_is_in_register_class,
        set_memory_precision,
        classify_instruction,
        address_class_get_info,
        convert_address_space,
        prefetch_register,
        watchpoint_get_info,
        address_dependency,
        process_workgroup_list,
        workgroup_get_info,
        process_freeze,
        process_unfreeze,
        remove_watchpoint,
        set_watchpoint,
        set_alu_exceptions_precision,
    );
}

// Compile-time check that the exports match the shared ABI signatures.
const _: fns::GetVersion = exports::get_version;
const _: fns::Initialize = exports::initialize;
const _: fns::ProcessAttach = exports::process_attach;
const _: fns::GetInfo = exports::wave_get_info;
const _: fns::NextPendingEvent = exports::process_next_pending_event;
const _: fns::ProcessList = exports::process_wave_list;
const _: fns::List = exports::wave_register_list;
const _: fns::ReadRegister = exports::read_register;
const _: fns::WriteRegister = exports::write_register;
const _: fns::ReadMemory = exports::read_memory;
const _: fns::WriteMemory = exports::write_memory;
const _: fns::ReportBreakpointHit = exports::report_breakpoint_hit;
const _: fns::WaveRegisterExists = exports::wave_register_exists;
const _: fns::DwarfAddressSpace = exports::dwarf_address_space_to_address_space;
const _: fns::GetStatusString = exports::get_status_string;
const _: fns::DisplacedSteppingStart = exports::displaced_stepping_start;
const _: fns::DisplacedSteppingComplete = exports::displaced_stepping_complete;
const _: fns::GetInfo = exports::displaced_stepping_get_info;
