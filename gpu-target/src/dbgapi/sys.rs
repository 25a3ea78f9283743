//! The only code that calls the amd-dbgapi C ABI.
//!
//! [`DbgApi::load`] opens a library (`librocm-dbgapi.so.0` or the simulated
//! `libsimgpu_dbgapi.so`), checks its version *before* binding anything else
//! (ABI 0.76+: the 7-callback layout; older libraries are refused with
//! [`DbgApiError::TooOld`]), resolves every function with `dlvsym` at the
//! symbol version the ABI assigns it, and initializes it with callbacks
//! implemented here: `malloc`/`free`, the inferior's pid, host breakpoints
//! delegated to a [`HostProcess`], global memory through
//! `process_vm_readv`/`writev`, and log messages to the `dbgapi` tracing
//! target. Trampolines catch panics. [`Process`] detaches on drop; the last
//! owner of the library finalizes it.
//!
//! The library is not thread-safe: these types are `!Send` and `!Sync`, so
//! the compiler keeps all calls on the thread that loaded it.

use std::cell::RefCell;
use std::ffi::c_char;
use std::ffi::c_void;
use std::ffi::CStr;
use std::ffi::CString;
use std::marker::PhantomData;
use std::panic::catch_unwind;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

use thiserror::Error;

use super::abi;
use super::abi::fns;
use super::abi::status as st;
use super::abi::Handle;
use super::versions;
use super::versions::AbiConstants;
use crate::model::BreakpointId;
use crate::model::HostProcess;
use crate::sim::memory::GlobalMemory;
use crate::sim::memory::ProcessMemory;

/// Environment variable naming the library to load.
pub const ENV_LIBRARY: &str = "ROCDBGAPI_PATH";
/// The default soname.
pub const DEFAULT_SONAME: &str = "librocm-dbgapi.so.0";

/// Errors of the binding.
#[derive(Debug, Error)]
pub enum DbgApiError {
    /// `dlopen` failed.
    #[error("cannot load {path}: {source}")]
    Load {
        /// What was opened.
        path: String,
        /// Why.
        source: libloading::Error,
    },
    /// The library implements an ABI older than 0.76.
    #[error(
        "{path} implements amd-dbgapi {found}, but 0.76 or newer is required \
         (the 7-callback ABI of ROCm 6.2+); install a newer ROCm or point \
         {ENV_LIBRARY} at a newer library"
    )]
    TooOld {
        /// The library.
        path: String,
        /// Its version.
        found: String,
    },
    /// A required function is missing at its ABI version.
    #[error("{path} lacks {symbol}@AMD_DBGAPI_{version}")]
    Symbol {
        /// The library.
        path: String,
        /// C name.
        symbol: String,
        /// Version node.
        version: String,
    },
    /// Only one library may be initialized per process.
    #[error("an amd-dbgapi library is already initialized in this process")]
    AlreadyInitialized,
    /// A call returned an error status.
    #[error("{call}: {text} (status {status})")]
    Call {
        /// C function.
        call: &'static str,
        /// Status code.
        status: i32,
        /// The library's text for it.
        text: String,
    },
}

macro_rules! fn_table {
    ($($field:ident : $ty:ty = $name:literal,)*) => {
        struct Fns { $($field: $ty,)* }
        /// Every function the binding binds (without the `amd_dbgapi_` prefix).
        pub const BOUND_FUNCTIONS: &[&str] = &[$($name,)*];
        impl Fns {
            fn bind(handle: *mut c_void, path: &str) -> Result<Self, DbgApiError> {
                Ok(Self { $($field: {
                    let (p, _) = vsym(handle, path, $name)?;
                    // SAFETY: `p` is the address of `$name` at one of the
                    // versions `version_nodes` lists for it, all of which have
                    // the signature `$ty` (abi::fns, shared with the simulated
                    // library's exports; the real headers of 0.76 and 0.77
                    // agree, see `versions`).
                    unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
                },)* })
            }
        }
    };
}

fn_table! {
    get_build_name: fns::GetBuildName = "get_build_name",
    get_status_string: fns::GetStatusString = "get_status_string",
    initialize: fns::Initialize = "initialize",
    finalize: fns::Finalize = "finalize",
    set_log_level: fns::SetLogLevel = "set_log_level",
    process_attach: fns::ProcessAttach = "process_attach",
    process_detach: fns::HandleOnly = "process_detach",
    process_get_info: fns::GetInfo = "process_get_info",
    process_set_progress: fns::HandleI32 = "process_set_progress",
    process_set_wave_creation: fns::HandleI32 = "process_set_wave_creation",
    process_next_pending_event: fns::NextPendingEvent = "process_next_pending_event",
    event_get_info: fns::GetInfo = "event_get_info",
    event_processed: fns::HandleOnly = "event_processed",
    process_wave_list: fns::ProcessList = "process_wave_list",
    process_agent_list: fns::ProcessList = "process_agent_list",
    process_code_object_list: fns::ProcessList = "process_code_object_list",
    wave_get_info: fns::GetInfo = "wave_get_info",
    agent_get_info: fns::GetInfo = "agent_get_info",
    dispatch_get_info: fns::GetInfo = "dispatch_get_info",
    code_object_get_info: fns::GetInfo = "code_object_get_info",
    wave_stop: fns::HandleOnly = "wave_stop",
    wave_resume: fns::WaveResume = "wave_resume",
    get_architecture: fns::GetArchitecture = "get_architecture",
    architecture_get_info: fns::GetInfo = "architecture_get_info",
    architecture_register_list: fns::List = "architecture_register_list",
    register_get_info: fns::GetInfo = "register_get_info",
    wave_register_list: fns::List = "wave_register_list",
    read_register: fns::ReadRegister = "read_register",
    write_register: fns::WriteRegister = "write_register",
    read_memory: fns::ReadMemory = "read_memory",
    write_memory: fns::WriteMemory = "write_memory",
    dwarf_address_space_to_address_space: fns::DwarfAddressSpace = "dwarf_address_space_to_address_space",
    report_breakpoint_hit: fns::ReportBreakpointHit = "report_breakpoint_hit",
    displaced_stepping_start: fns::DisplacedSteppingStart = "displaced_stepping_start",
    displaced_stepping_complete: fns::DisplacedSteppingComplete = "displaced_stepping_complete",
}

/// `dlvsym(handle, "amd_dbgapi_<func>", "AMD_DBGAPI_<node>")` at the first
/// of [`versions::version_nodes`] the library exports; returns the address
/// and the node it resolved at.
fn vsym(
    handle: *mut c_void,
    path: &str,
    func: &str,
) -> Result<(*mut c_void, &'static str), DbgApiError> {
    let nodes = versions::version_nodes(func);
    let err = || DbgApiError::Symbol {
        path: path.to_owned(),
        symbol: format!("amd_dbgapi_{func}"),
        version: nodes.join(" or @AMD_DBGAPI_"),
    };
    let name = CString::new(format!("amd_dbgapi_{func}")).map_err(|_| err())?;
    for node in nodes {
        let ver = CString::new(format!("AMD_DBGAPI_{node}")).map_err(|_| err())?;
        // SAFETY: `handle` is a live dlopen handle; both strings are valid C
        // strings for the duration of the call.
        let p = unsafe { libc::dlvsym(handle, name.as_ptr(), ver.as_ptr()) };
        if !p.is_null() {
            return Ok((p, node));
        }
    }
    Err(err())
}

/// How one bound function resolved in a library ([`inspect`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolCheck {
    /// Function name without the `amd_dbgapi_` prefix.
    pub function: &'static str,
    /// The version node it resolved at, or `None` when no node did.
    pub resolved: Option<&'static str>,
    /// The nodes tried, newest first.
    pub tried: &'static [&'static str],
}

/// What [`inspect`] learns about a library without initializing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryReport {
    /// The path or name opened.
    pub path: String,
    /// `amd_dbgapi_get_version`.
    pub version: (u32, u32, u32),
    /// `amd_dbgapi_get_build_name`.
    pub build_name: String,
    /// Every function in [`BOUND_FUNCTIONS`].
    pub symbols: Vec<SymbolCheck>,
}

impl LibraryReport {
    /// Whether the version gate accepts the library.
    pub fn version_supported(&self) -> bool {
        versions::supported(self.version)
    }

    /// The functions that did not resolve.
    pub fn missing(&self) -> impl Iterator<Item = &SymbolCheck> {
        self.symbols.iter().filter(|c| c.resolved.is_none())
    }
}

/// Opens the library at `path` (or its name, searched like `dlopen` does),
/// reads its version and build name, and resolves every bound function at
/// its versions, without initializing it (for `gdbmux doctor`).
pub fn inspect(path: &Path) -> Result<LibraryReport, DbgApiError> {
    let (handle, p) = open(path)?;
    let version = get_version(handle, &p)?;
    let build_name = match vsym(handle, &p, "get_build_name") {
        Ok((f, _)) => {
            // SAFETY: `get_build_name` has had this signature since 0.54.
            let f = unsafe { std::mem::transmute::<*mut c_void, fns::GetBuildName>(f) };
            // SAFETY: no arguments; returns a static library-owned string.
            let s = unsafe { f() };
            if s.is_null() {
                String::new()
            } else {
                // SAFETY: non-null, NUL-terminated, static.
                unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
            }
        }
        Err(_) => String::new(),
    };
    let symbols = BOUND_FUNCTIONS
        .iter()
        .map(|f| SymbolCheck {
            function: f,
            resolved: vsym(handle, &p, f).ok().map(|(_, v)| v),
            tried: versions::version_nodes(f),
        })
        .collect();
    // The handle is not closed: an initialized copy of the same library may
    // live in this process, and dlclose of a C++ library is not reliably
    // safe (see `Inner::drop`).
    Ok(LibraryReport {
        path: p,
        version,
        build_name,
        symbols,
    })
}

static INITIALIZED: AtomicBool = AtomicBool::new(false);

struct Inner {
    fns: Fns,
    handle: *mut c_void,
    path: String,
    version: (u32, u32, u32),
    constants: AbiConstants,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: initialized in `load`; no process is attached any more
        // (every Process holds an Rc to us).
        let s = unsafe { (self.fns.finalize)() };
        tracing::debug!(target: "dbgapi", status = s, "amd_dbgapi_finalize");
        INITIALIZED.store(false, Ordering::SeqCst);
        // The library stays mapped: it may have left threads or atexit
        // handlers behind, and unloading code under them would crash.
        let _ = self.handle;
    }
}

/// An initialized amd-dbgapi library (one per process; `!Send`).
#[derive(Clone)]
pub struct DbgApi {
    inner: Rc<Inner>,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for DbgApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbgApi")
            .field("path", &self.inner.path)
            .field("version", &self.inner.version)
            .finish()
    }
}

/// The library path to use: explicit, `$ROCDBGAPI_PATH`, or the soname.
pub fn library_path(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(ENV_LIBRARY).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SONAME))
}

/// Reads the version of the library at `path` without initializing it.
pub fn probe_version(path: &Path) -> Result<(u32, u32, u32), DbgApiError> {
    let (handle, p) = open(path)?;
    let v = get_version(handle, &p);
    // SAFETY: `handle` came from dlopen above and nothing from it is used
    // after this point.
    unsafe { libc::dlclose(handle) };
    v
}

fn open(path: &Path) -> Result<(*mut c_void, String), DbgApiError> {
    let p = path.to_string_lossy().into_owned();
    // SAFETY: loading a library runs its initializers; amd-dbgapi
    // libraries have none with preconditions.
    let lib = unsafe {
        libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL)
    }
    .map_err(|source| DbgApiError::Load {
        path: p.clone(),
        source,
    })?;
    Ok((lib.into_raw(), p))
}

fn get_version(handle: *mut c_void, path: &str) -> Result<(u32, u32, u32), DbgApiError> {
    let (f, _) = vsym(handle, path, "get_version")?;
    // SAFETY: `get_version` has had this signature since 0.54.
    let f = unsafe { std::mem::transmute::<*mut c_void, fns::GetVersion>(f) };
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    // SAFETY: three valid out-pointers.
    unsafe { f(&mut a, &mut b, &mut c) };
    Ok((a, b, c))
}

impl DbgApi {
    /// Loads, checks and initializes the library at [`library_path`].
    pub fn load(explicit: Option<&Path>) -> Result<Self, DbgApiError> {
        let path = library_path(explicit);
        let (handle, p) = open(&path)?;
        let version = get_version(handle, &p)?;
        if !versions::supported(version) {
            // SAFETY: nothing from the library is in use.
            unsafe { libc::dlclose(handle) };
            return Err(DbgApiError::TooOld {
                path: p,
                found: format!("{}.{}.{}", version.0, version.1, version.2),
            });
        }
        let fns = Fns::bind(handle, &p)?;
        if INITIALIZED.swap(true, Ordering::SeqCst) {
            return Err(DbgApiError::AlreadyInitialized);
        }
        let mut cbs = abi::Callbacks {
            allocate_memory: Some(cb_allocate),
            deallocate_memory: Some(cb_deallocate),
            client_process_get_info: Some(cb_client_process_get_info),
            insert_breakpoint: Some(cb_insert_breakpoint),
            remove_breakpoint: Some(cb_remove_breakpoint),
            xfer_global_memory: Some(cb_xfer_global_memory),
            log_message: Some(cb_log_message),
        };
        // SAFETY: the struct is valid; the library copies it.
        let s = unsafe { (fns.initialize)(&mut cbs) };
        let inner = Inner {
            fns,
            handle,
            path: p,
            version,
            constants: AbiConstants::for_version(version),
        };
        if s != st::SUCCESS {
            INITIALIZED.store(false, Ordering::SeqCst);
            let text = status_text(&inner.fns, s);
            std::mem::forget(inner);
            return Err(DbgApiError::Call {
                call: "amd_dbgapi_initialize",
                status: s,
                text,
            });
        }
        let level = if tracing::enabled!(target: "dbgapi", tracing::Level::TRACE) {
            abi::log_level::TRACE
        } else if tracing::enabled!(target: "dbgapi", tracing::Level::INFO) {
            abi::log_level::INFO
        } else {
            abi::log_level::WARNING
        };
        // SAFETY: plain value.
        unsafe { (inner.fns.set_log_level)(level) };
        tracing::info!(target: "dbgapi", path = %inner.path, ?version, "amd-dbgapi loaded");
        Ok(Self {
            inner: Rc::new(inner),
            _not_send: PhantomData,
        })
    }

    /// `major.minor.patch` of the library.
    pub fn version(&self) -> (u32, u32, u32) {
        self.inner.version
    }

    /// The query numbers of this library's version.
    pub fn constants(&self) -> AbiConstants {
        self.inner.constants
    }

    /// The library's build name.
    pub fn build_name(&self) -> String {
        // SAFETY: returns a static string owned by the library.
        let p = unsafe { (self.inner.fns.get_build_name)() };
        if p.is_null() {
            return String::new();
        }
        // SAFETY: non-null, NUL-terminated, library-owned.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Path it was loaded from.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    fn check(&self, call: &'static str, s: i32) -> Result<(), DbgApiError> {
        if s == st::SUCCESS {
            return Ok(());
        }
        tracing::debug!(target: "dbgapi", call, status = s, "call failed");
        Err(DbgApiError::Call {
            call,
            status: s,
            text: status_text(&self.inner.fns, s),
        })
    }

    /// Attaches to the inferior that `host` owns.
    pub fn attach(&self, host: Box<dyn HostProcess>) -> Result<Process, DbgApiError> {
        let pid = host.os_pid();
        let ctx = Box::new(ProcessCtx {
            host: RefCell::new(host),
            mem: ProcessMemory::new(pid),
            pid,
        });
        let mut h = Handle::NONE;
        let cp = &*ctx as *const ProcessCtx as *mut c_void;
        // SAFETY: `cp` points to the boxed context, which lives (at a stable
        // address) as long as the Process, i.e. until after detach.
        let s = unsafe { (self.inner.fns.process_attach)(cp, &mut h) };
        self.check("amd_dbgapi_process_attach", s)?;
        Ok(Process {
            api: self.clone(),
            handle: h,
            _ctx: ctx,
        })
    }

    /// `get_architecture(elf_machine)` → handle value.
    pub fn architecture(&self, elf_machine: u32) -> Result<u64, DbgApiError> {
        let mut h = Handle::NONE;
        // SAFETY: valid out-pointer.
        let s = unsafe { (self.inner.fns.get_architecture)(elf_machine, &mut h) };
        self.check("amd_dbgapi_get_architecture", s)?;
        Ok(h.handle)
    }

    fn info_raw(
        &self,
        call: &'static str,
        f: fns::GetInfo,
        h: u64,
        q: i32,
        out: &mut [u8],
    ) -> Result<(), DbgApiError> {
        // SAFETY: `out` is writable for its length, which we pass as size.
        let s = unsafe {
            f(
                Handle::new(h),
                q,
                out.len(),
                out.as_mut_ptr() as *mut c_void,
            )
        };
        self.check(call, s)
    }

    fn info_u64(
        &self,
        call: &'static str,
        f: fns::GetInfo,
        h: u64,
        q: i32,
        size: usize,
    ) -> Result<u64, DbgApiError> {
        let mut b = [0u8; 8];
        self.info_raw(call, f, h, q, &mut b[..size])?;
        Ok(u64::from_le_bytes(b))
    }

    /// A pointer-valued attribute whose target the library allocated with
    /// our malloc (ownership passes to the caller).
    fn info_ptr<T>(
        &self,
        call: &'static str,
        f: fns::GetInfo,
        h: u64,
        q: i32,
    ) -> Result<*mut T, DbgApiError> {
        let mut p: *mut T = std::ptr::null_mut();
        // SAFETY: pointer-sized out value; the library allocates the target
        // with our malloc.
        let s = unsafe {
            f(
                Handle::new(h),
                q,
                std::mem::size_of::<*mut T>(),
                &mut p as *mut *mut T as *mut c_void,
            )
        };
        self.check(call, s)?;
        Ok(p)
    }

    fn info_string(
        &self,
        call: &'static str,
        f: fns::GetInfo,
        h: u64,
        q: i32,
    ) -> Result<String, DbgApiError> {
        Ok(take_string(self.info_ptr(call, f, h, q)?))
    }

    fn info_bytes(
        &self,
        call: &'static str,
        f: fns::GetInfo,
        h: u64,
        q: i32,
        n: usize,
    ) -> Result<Vec<u8>, DbgApiError> {
        let p: *mut u8 = self.info_ptr(call, f, h, q)?;
        if p.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the library allocated `n` bytes (the architecture's
        // breakpoint size) and handed ownership to us.
        let v = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
        // SAFETY: allocated with our allocate_memory (malloc).
        unsafe { libc::free(p as *mut c_void) };
        Ok(v)
    }

    /// Architecture facts.
    pub fn architecture_info(&self, arch: u64) -> Result<ArchitectureFacts, DbgApiError> {
        use abi::info::architecture as q;
        let f = self.inner.fns.architecture_get_info;
        let c = "amd_dbgapi_architecture_get_info";
        let bp_size = self.info_u64(c, f, arch, q::BREAKPOINT_INSTRUCTION_SIZE, 8)?;
        Ok(ArchitectureFacts {
            name: self.info_string(c, f, arch, q::NAME)?,
            elf_machine: self.info_u64(c, f, arch, q::ELF_AMDGPU_MACHINE, 4)? as u32,
            largest_instruction_size: self.info_u64(c, f, arch, q::LARGEST_INSTRUCTION_SIZE, 8)?,
            breakpoint_instruction: self.info_bytes(
                c,
                f,
                arch,
                q::BREAKPOINT_INSTRUCTION,
                bp_size as usize,
            )?,
            breakpoint_pc_adjust: self.info_u64(
                c,
                f,
                arch,
                q::BREAKPOINT_INSTRUCTION_PC_ADJUST,
                8,
            )?,
            pc_register: self.info_u64(c, f, arch, q::PC_REGISTER, 8)?,
        })
    }

    /// Name, size, type and DWARF number of a register.
    pub fn register_info(&self, reg: u64) -> Result<RegisterFacts, DbgApiError> {
        use abi::info::register as q;
        let f = self.inner.fns.register_get_info;
        let c = "amd_dbgapi_register_get_info";
        Ok(RegisterFacts {
            handle: reg,
            name: self.info_string(c, f, reg, q::NAME)?,
            size: self.info_u64(c, f, reg, q::SIZE, 8)? as usize,
            type_name: self.info_string(c, f, reg, q::TYPE)?,
            dwarf: self.info_u64(c, f, reg, q::DWARF, 8).ok(),
        })
    }

    /// Registers of an architecture, in list order.
    pub fn architecture_registers(&self, arch: u64) -> Result<Vec<u64>, DbgApiError> {
        self.handle_list(
            "amd_dbgapi_architecture_register_list",
            self.inner.fns.architecture_register_list,
            arch,
        )
    }

    /// The handles a `*_list` function returns for `h`.
    fn handle_list(
        &self,
        call: &'static str,
        f: fns::List,
        h: u64,
    ) -> Result<Vec<u64>, DbgApiError> {
        let mut n = 0usize;
        let mut p: *mut Handle = std::ptr::null_mut();
        // SAFETY: valid out-pointers; the array is malloc'd by the library.
        let s = unsafe { f(Handle::new(h), &mut n, &mut p) };
        self.check(call, s)?;
        Ok(take_handles(p, n))
    }
}

/// Facts about an architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchitectureFacts {
    /// `gfx90a`, ...
    pub name: String,
    /// `EF_AMDGPU_MACH_*`.
    pub elf_machine: u32,
    /// Longest instruction.
    pub largest_instruction_size: u64,
    /// Breakpoint bytes.
    pub breakpoint_instruction: Vec<u8>,
    /// PC adjustment after a breakpoint.
    pub breakpoint_pc_adjust: u64,
    /// The PC register's handle value.
    pub pc_register: u64,
}

/// Facts about one register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterFacts {
    /// Handle value.
    pub handle: u64,
    /// Name.
    pub name: String,
    /// Bytes.
    pub size: usize,
    /// C-like type.
    pub type_name: String,
    /// DWARF number.
    pub dwarf: Option<u64>,
}

fn status_text(fns: &Fns, s: i32) -> String {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: valid out-pointer; the string is library-owned and static.
    let r = unsafe { (fns.get_status_string)(s, &mut p) };
    if r != st::SUCCESS || p.is_null() {
        return abi::status::text(s).to_owned();
    }
    // SAFETY: non-null static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn take_string(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string allocated with our malloc.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: ours to free (allocate_memory = malloc).
    unsafe { libc::free(p as *mut c_void) };
    s
}

fn take_handles(p: *mut Handle, n: usize) -> Vec<u64> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the library allocated `n` handles and handed them to us.
    let v = unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|h| h.handle)
        .collect();
    // SAFETY: allocated with our allocate_memory (malloc).
    unsafe { libc::free(p as *mut c_void) };
    v
}

/// A caller's buffer as the C ABI takes it: `*mut` to read into, `*const`
/// to write from.
trait XferBuf {
    type Ptr;
    /// The pointer and length in bytes.
    fn raw(self) -> (Self::Ptr, usize);
}

impl XferBuf for &mut [u8] {
    type Ptr = *mut c_void;
    fn raw(self) -> (*mut c_void, usize) {
        (self.as_mut_ptr() as *mut c_void, self.len())
    }
}

impl XferBuf for &[u8] {
    type Ptr = *const c_void;
    fn raw(self) -> (*const c_void, usize) {
        (self.as_ptr() as *const c_void, self.len())
    }
}

/// What the process callbacks reach through `client_process_id`.
struct ProcessCtx {
    host: RefCell<Box<dyn HostProcess>>,
    mem: ProcessMemory,
    pid: i32,
}

/// One attached process; detaches on drop.
pub struct Process {
    api: DbgApi,
    handle: Handle,
    _ctx: Box<ProcessCtx>,
}

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: attached handle; the context outlives the call.
        let s = unsafe { (self.api.inner.fns.process_detach)(self.handle) };
        tracing::debug!(target: "dbgapi", status = s, "amd_dbgapi_process_detach");
    }
}

/// A list result with the library's `changed` flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListChange {
    /// The list is unchanged since the previous call.
    Unchanged,
    /// The full current list.
    Changed(Vec<u64>),
}

impl Process {
    /// The library.
    pub fn api(&self) -> &DbgApi {
        &self.api
    }

    fn fns(&self) -> &Fns {
        &self.api.inner.fns
    }

    /// The notifier file descriptor (readable when events may be pending).
    pub fn notifier(&self) -> Result<i32, DbgApiError> {
        let v = self.api.info_u64(
            "amd_dbgapi_process_get_info",
            self.fns().process_get_info,
            self.handle.handle,
            abi::info::process::NOTIFIER,
            4,
        )?;
        Ok(v as u32 as i32)
    }

    /// The OS process id the library attached to (`PROCESS_INFO_OS_ID`, whose
    /// number depends on the library version).
    pub fn os_id(&self) -> Result<i32, DbgApiError> {
        let v = self.api.info_u64(
            "amd_dbgapi_process_get_info",
            self.fns().process_get_info,
            self.handle.handle,
            self.api.inner.constants.process_info_os_id,
            4,
        )?;
        Ok(v as u32 as i32)
    }

    /// `process_set_progress(NORMAL | NO_FORWARD)`.
    pub fn set_progress(&self, forward: bool) -> Result<(), DbgApiError> {
        let v = if forward {
            abi::PROGRESS_NORMAL
        } else {
            abi::PROGRESS_NO_FORWARD
        };
        self.set_i32(
            "amd_dbgapi_process_set_progress",
            self.fns().process_set_progress,
            v,
        )
    }

    /// `process_set_wave_creation(STOP | NORMAL)`.
    pub fn set_wave_creation(&self, stopped: bool) -> Result<(), DbgApiError> {
        let v = if stopped {
            abi::WAVE_CREATION_STOP
        } else {
            abi::WAVE_CREATION_NORMAL
        };
        self.set_i32(
            "amd_dbgapi_process_set_wave_creation",
            self.fns().process_set_wave_creation,
            v,
        )
    }

    /// A `process_set_*(process, value)` call.
    fn set_i32(&self, call: &'static str, f: fns::HandleI32, v: i32) -> Result<(), DbgApiError> {
        // SAFETY: plain values.
        let s = unsafe { f(self.handle, v) };
        self.api.check(call, s)
    }

    /// Next event: `(event, kind)`; `None` when there is none.
    pub fn next_event(&self) -> Result<Option<(u64, i32)>, DbgApiError> {
        let mut e = Handle::NONE;
        let mut k = 0i32;
        // SAFETY: valid out-pointers.
        let s = unsafe { (self.fns().process_next_pending_event)(self.handle, &mut e, &mut k) };
        self.api.check("amd_dbgapi_process_next_pending_event", s)?;
        Ok((k != abi::event_kind::NONE).then_some((e.handle, k)))
    }

    /// An integer attribute of an event (`size` bytes).
    pub fn event_info(&self, ev: u64, q: i32, size: usize) -> Result<u64, DbgApiError> {
        self.api.info_u64(
            "amd_dbgapi_event_get_info",
            self.fns().event_get_info,
            ev,
            q,
            size,
        )
    }

    /// Marks an event processed.
    pub fn event_processed(&self, ev: u64) -> Result<(), DbgApiError> {
        // SAFETY: plain value.
        let s = unsafe { (self.fns().event_processed)(Handle::new(ev)) };
        self.api.check("amd_dbgapi_event_processed", s)
    }

    fn list(
        &self,
        call: &'static str,
        f: fns::ProcessList,
        changed: bool,
    ) -> Result<ListChange, DbgApiError> {
        let mut n = 0usize;
        let mut p: *mut Handle = std::ptr::null_mut();
        let mut c = abi::CHANGED_YES;
        let cp: *mut i32 = if changed {
            &mut c
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: valid out-pointers; the array is malloc'd for us.
        let s = unsafe { f(self.handle, &mut n, &mut p, cp) };
        self.api.check(call, s)?;
        let v = take_handles(p, n);
        Ok(if c == abi::CHANGED_NO {
            ListChange::Unchanged
        } else {
            ListChange::Changed(v)
        })
    }

    /// The whole list (no `changed` semantics).
    fn list_all(&self, call: &'static str, f: fns::ProcessList) -> Result<Vec<u64>, DbgApiError> {
        match self.list(call, f, false)? {
            ListChange::Changed(v) => Ok(v),
            ListChange::Unchanged => Ok(Vec::new()),
        }
    }

    /// Waves (`changed` semantics when `changed` is true).
    pub fn waves(&self, changed: bool) -> Result<ListChange, DbgApiError> {
        self.list(
            "amd_dbgapi_process_wave_list",
            self.fns().process_wave_list,
            changed,
        )
    }

    /// Agents.
    pub fn agents(&self) -> Result<Vec<u64>, DbgApiError> {
        self.list_all(
            "amd_dbgapi_process_agent_list",
            self.fns().process_agent_list,
        )
    }

    /// Code objects.
    pub fn code_objects(&self) -> Result<Vec<u64>, DbgApiError> {
        self.list_all(
            "amd_dbgapi_process_code_object_list",
            self.fns().process_code_object_list,
        )
    }

    /// URI and load address of a code object.
    pub fn code_object_info(&self, co: u64) -> Result<(String, i64), DbgApiError> {
        let f = self.fns().code_object_get_info;
        let c = "amd_dbgapi_code_object_get_info";
        let uri = self
            .api
            .info_string(c, f, co, abi::info::code_object::URI_NAME)?;
        let addr = self
            .api
            .info_u64(c, f, co, abi::info::code_object::LOAD_ADDRESS, 8)? as i64;
        Ok((uri, addr))
    }

    /// An integer attribute of a wave (`size` bytes).
    pub fn wave_info(&self, wave: u64, q: i32, size: usize) -> Result<u64, DbgApiError> {
        self.api.info_u64(
            "amd_dbgapi_wave_get_info",
            self.fns().wave_get_info,
            wave,
            q,
            size,
        )
    }

    /// Raw bytes of a wave attribute (`out.len()` = its size).
    pub fn wave_info_bytes(&self, wave: u64, q: i32, out: &mut [u8]) -> Result<(), DbgApiError> {
        self.api.info_raw(
            "amd_dbgapi_wave_get_info",
            self.fns().wave_get_info,
            wave,
            q,
            out,
        )
    }

    /// Raw bytes of a dispatch attribute.
    pub fn dispatch_info_bytes(&self, d: u64, q: i32, out: &mut [u8]) -> Result<(), DbgApiError> {
        self.api.info_raw(
            "amd_dbgapi_dispatch_get_info",
            self.fns().dispatch_get_info,
            d,
            q,
            out,
        )
    }

    /// An integer attribute of an agent.
    pub fn agent_info(&self, agent: u64, q: i32, size: usize) -> Result<u64, DbgApiError> {
        self.api.info_u64(
            "amd_dbgapi_agent_get_info",
            self.fns().agent_get_info,
            agent,
            q,
            size,
        )
    }

    /// A string attribute of an agent.
    pub fn agent_string(&self, agent: u64, q: i32) -> Result<String, DbgApiError> {
        self.api.info_string(
            "amd_dbgapi_agent_get_info",
            self.fns().agent_get_info,
            agent,
            q,
        )
    }

    /// `wave_stop`.
    pub fn wave_stop(&self, wave: u64) -> Result<(), DbgApiError> {
        // SAFETY: plain value.
        let s = unsafe { (self.fns().wave_stop)(Handle::new(wave)) };
        self.api.check("amd_dbgapi_wave_stop", s)
    }

    /// `wave_resume` (no exceptions).
    pub fn wave_resume(&self, wave: u64, single_step: bool) -> Result<(), DbgApiError> {
        self.wave_resume_raw(wave, single_step, abi::exceptions::NONE)
    }

    /// `wave_resume` with an `amd_dbgapi_exceptions_t` bit set.
    pub fn wave_resume_raw(
        &self,
        wave: u64,
        single_step: bool,
        exceptions: u32,
    ) -> Result<(), DbgApiError> {
        let mode = if single_step {
            abi::RESUME_MODE_SINGLE_STEP
        } else {
            abi::RESUME_MODE_NORMAL
        };
        // SAFETY: plain values.
        let s = unsafe { (self.fns().wave_resume)(Handle::new(wave), mode, exceptions) };
        self.api.check("amd_dbgapi_wave_resume", s)
    }

    /// `displaced_stepping_start`: `saved` must hold the architecture's
    /// breakpoint instruction size of bytes (the library reads that many).
    pub fn displaced_stepping_start(&self, wave: u64, saved: &[u8]) -> Result<u64, DbgApiError> {
        let mut out = Handle::NONE;
        // SAFETY: `saved` is live for the call and the caller passes the
        // breakpoint size of bytes; `out` is a valid out-pointer.
        let s = unsafe {
            (self.fns().displaced_stepping_start)(
                Handle::new(wave),
                saved.as_ptr() as *const c_void,
                &mut out,
            )
        };
        self.api.check("amd_dbgapi_displaced_stepping_start", s)?;
        Ok(out.handle)
    }

    /// `displaced_stepping_complete`.
    pub fn displaced_stepping_complete(&self, wave: u64, ds: u64) -> Result<(), DbgApiError> {
        // SAFETY: plain values.
        let s =
            unsafe { (self.fns().displaced_stepping_complete)(Handle::new(wave), Handle::new(ds)) };
        self.api.check("amd_dbgapi_displaced_stepping_complete", s)
    }

    /// Registers of a wave.
    pub fn wave_registers(&self, wave: u64) -> Result<Vec<u64>, DbgApiError> {
        self.api.handle_list(
            "amd_dbgapi_wave_register_list",
            self.fns().wave_register_list,
            wave,
        )
    }

    /// Reads a register (`out.len()` bytes from `offset`).
    pub fn read_register(
        &self,
        wave: u64,
        reg: u64,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), DbgApiError> {
        self.xfer_register(
            "amd_dbgapi_read_register",
            self.fns().read_register,
            wave,
            reg,
            offset,
            out,
        )
    }

    /// Writes a register.
    pub fn write_register(
        &self,
        wave: u64,
        reg: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<(), DbgApiError> {
        self.xfer_register(
            "amd_dbgapi_write_register",
            self.fns().write_register,
            wave,
            reg,
            offset,
            data,
        )
    }

    /// Shared body of `read_register`/`write_register`, whose C functions
    /// differ only in the constness of the buffer.
    fn xfer_register<B: XferBuf>(
        &self,
        call: &'static str,
        f: unsafe extern "C" fn(Handle, Handle, u64, u64, B::Ptr) -> abi::Status,
        wave: u64,
        reg: u64,
        offset: u64,
        buf: B,
    ) -> Result<(), DbgApiError> {
        let (p, len) = buf.raw();
        // SAFETY: `p` is valid for `len` bytes in `f`'s direction.
        let s = unsafe { f(Handle::new(wave), Handle::new(reg), offset, len as u64, p) };
        self.api.check(call, s)
    }

    /// The address space for a DWARF address-space number.
    pub fn address_space(&self, arch: u64, dwarf: u64) -> Result<u64, DbgApiError> {
        let mut h = Handle::NONE;
        // SAFETY: valid out-pointer.
        let s = unsafe {
            (self.fns().dwarf_address_space_to_address_space)(Handle::new(arch), dwarf, &mut h)
        };
        self.api
            .check("amd_dbgapi_dwarf_address_space_to_address_space", s)?;
        Ok(h.handle)
    }

    /// Reads memory (`wave` 0 = none); returns bytes read.
    pub fn read_memory(
        &self,
        wave: u64,
        aspace: u64,
        addr: u64,
        out: &mut [u8],
    ) -> Result<usize, DbgApiError> {
        self.read_lane_memory(wave, abi::LANE_NONE, aspace, addr, out)
    }

    /// Reads memory as seen by one lane of `wave` (the private_lane address
    /// space needs a lane; `abi::LANE_NONE` for the others).
    pub fn read_lane_memory(
        &self,
        wave: u64,
        lane: u32,
        aspace: u64,
        addr: u64,
        out: &mut [u8],
    ) -> Result<usize, DbgApiError> {
        self.xfer_memory(
            "amd_dbgapi_read_memory",
            self.fns().read_memory,
            (wave, lane),
            aspace,
            addr,
            out,
        )
    }

    /// Writes memory; returns bytes written.
    pub fn write_memory(
        &self,
        wave: u64,
        aspace: u64,
        addr: u64,
        data: &[u8],
    ) -> Result<usize, DbgApiError> {
        self.xfer_memory(
            "amd_dbgapi_write_memory",
            self.fns().write_memory,
            (wave, abi::LANE_NONE),
            aspace,
            addr,
            data,
        )
    }

    /// Shared body of `read_memory`/`write_memory`, whose C functions differ
    /// only in the constness of the buffer; returns bytes transferred.
    fn xfer_memory<B: XferBuf>(
        &self,
        call: &'static str,
        f: unsafe extern "C" fn(Handle, Handle, u32, Handle, u64, *mut u64, B::Ptr) -> abi::Status,
        (wave, lane): (u64, u32),
        aspace: u64,
        addr: u64,
        buf: B,
    ) -> Result<usize, DbgApiError> {
        let (p, len) = buf.raw();
        let mut n = len as u64;
        // SAFETY: `p` is valid for `n` bytes in `f`'s direction.
        let s = unsafe {
            f(
                self.handle,
                Handle::new(wave),
                lane,
                Handle::new(aspace),
                addr,
                &mut n,
                p,
            )
        };
        self.api.check(call, s)?;
        Ok(n as usize)
    }

    /// Reports a hit of library breakpoint `bp`; true = HALT.
    pub fn report_breakpoint_hit(&self, bp: u64, thread: u64) -> Result<bool, DbgApiError> {
        let mut action = 0i32;
        // SAFETY: `thread` is an opaque value the library echoes back.
        let s = unsafe {
            (self.fns().report_breakpoint_hit)(
                Handle::new(bp),
                thread as usize as *mut c_void,
                &mut action,
            )
        };
        self.api.check("amd_dbgapi_report_breakpoint_hit", s)?;
        Ok(action == abi::BREAKPOINT_ACTION_HALT)
    }
}

// ---- callbacks ----------------------------------------------------------------

fn trampoline<R>(default: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        tracing::error!(target: "dbgapi", "panic in a dbgapi callback");
        default
    })
}

/// # Safety
/// Called by the library with a size.
unsafe extern "C" fn cb_allocate(size: usize) -> *mut c_void {
    if size == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: malloc has no preconditions.
    unsafe { libc::malloc(size) }
}

/// # Safety
/// `p` is NULL or came from `cb_allocate`.
unsafe extern "C" fn cb_deallocate(p: *mut c_void) {
    // SAFETY: free(NULL) is a no-op; otherwise `p` came from malloc.
    unsafe { libc::free(p) }
}

/// # Safety
/// `cp` is the context pointer we passed to `process_attach`.
unsafe fn ctx<'a>(cp: *mut c_void) -> Option<&'a ProcessCtx> {
    // SAFETY: `cp` is NULL or points to the boxed ProcessCtx owned by a live
    // Process (the library only calls back while attached).
    unsafe { (cp as *const ProcessCtx).as_ref() }
}

unsafe extern "C" fn cb_client_process_get_info(
    cp: *mut c_void,
    q: i32,
    size: usize,
    value: *mut c_void,
) -> i32 {
    trampoline(st::ERROR, || {
        // SAFETY: see `ctx`.
        let Some(c) = (unsafe { ctx(cp) }) else {
            return st::ERROR_INVALID_CLIENT_PROCESS_ID;
        };
        if value.is_null() {
            return st::ERROR_INVALID_ARGUMENT;
        }
        match q {
            abi::CLIENT_PROCESS_INFO_OS_PID => {
                if size != std::mem::size_of::<i32>() {
                    return st::ERROR_INVALID_ARGUMENT_COMPATIBILITY;
                }
                // SAFETY: `value` holds a pid_t (size checked).
                unsafe { (value as *mut i32).write_unaligned(c.pid) };
                st::SUCCESS
            }
            _ => st::ERROR_NOT_AVAILABLE,
        }
    })
}

unsafe extern "C" fn cb_insert_breakpoint(cp: *mut c_void, addr: u64, bp: Handle) -> i32 {
    trampoline(st::ERROR, || {
        // SAFETY: see `ctx`.
        let Some(c) = (unsafe { ctx(cp) }) else {
            return st::ERROR_INVALID_CLIENT_PROCESS_ID;
        };
        tracing::debug!(target: "dbgapi", addr, bp = bp.handle, "insert_breakpoint callback");
        let Ok(mut host) = c.host.try_borrow_mut() else {
            return st::ERROR;
        };
        match host.insert_breakpoint(addr, BreakpointId(bp.handle)) {
            Ok(()) => st::SUCCESS,
            Err(_) => st::ERROR,
        }
    })
}

unsafe extern "C" fn cb_remove_breakpoint(cp: *mut c_void, bp: Handle) -> i32 {
    trampoline(st::ERROR, || {
        // SAFETY: see `ctx`.
        let Some(c) = (unsafe { ctx(cp) }) else {
            return st::ERROR_INVALID_CLIENT_PROCESS_ID;
        };
        tracing::debug!(target: "dbgapi", bp = bp.handle, "remove_breakpoint callback");
        let Ok(mut host) = c.host.try_borrow_mut() else {
            return st::ERROR;
        };
        match host.remove_breakpoint(BreakpointId(bp.handle)) {
            Ok(()) => st::SUCCESS,
            Err(_) => st::ERROR_INVALID_BREAKPOINT_ID,
        }
    })
}

unsafe extern "C" fn cb_xfer_global_memory(
    cp: *mut c_void,
    addr: u64,
    size: *mut u64,
    read: *mut c_void,
    write: *const c_void,
) -> i32 {
    trampoline(st::ERROR, || {
        // SAFETY: see `ctx`.
        let Some(c) = (unsafe { ctx(cp) }) else {
            return st::ERROR_INVALID_CLIENT_PROCESS_ID;
        };
        if size.is_null() || read.is_null() == write.is_null() {
            return st::ERROR_INVALID_ARGUMENT_COMPATIBILITY;
        }
        // SAFETY: non-null in/out size.
        let n = unsafe { *size } as usize;
        let done = if !read.is_null() {
            // SAFETY: the library provides `n` writable bytes at `read`.
            let buf = unsafe { std::slice::from_raw_parts_mut(read as *mut u8, n) };
            c.mem.read_partial(addr, buf)
        } else {
            // SAFETY: the library provides `n` readable bytes at `write`.
            let data = unsafe { std::slice::from_raw_parts(write as *const u8, n) };
            if c.mem.write(addr, data).is_ok() {
                n
            } else {
                0
            }
        };
        // SAFETY: non-null.
        unsafe { *size = done as u64 };
        if done == 0 && n != 0 {
            st::ERROR_MEMORY_ACCESS
        } else {
            st::SUCCESS
        }
    })
}

/// The library's last warning or fatal-error message (the reason behind a
/// `LOADED_ERROR_RESTRICTION` runtime, e.g. an unsupported r_debug version,
/// is only given there).
static LAST_WARNING: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
/// Longest message kept in [`LAST_WARNING`].
const LAST_WARNING_MAX: usize = 1024;

/// The last warning the library logged, if any.
pub fn last_warning() -> Option<String> {
    LAST_WARNING.lock().ok().and_then(|w| w.clone())
}

unsafe extern "C" fn cb_log_message(level: i32, msg: *const c_char) {
    trampoline((), || {
        if msg.is_null() {
            return;
        }
        // SAFETY: a NUL-terminated string valid during the call.
        let m = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
        if matches!(level, abi::log_level::FATAL_ERROR | abi::log_level::WARNING) {
            // Bounded: one message, at most LAST_WARNING_MAX bytes.
            let mut w = m.to_string();
            if w.len() > LAST_WARNING_MAX {
                let mut end = LAST_WARNING_MAX;
                while !w.is_char_boundary(end) {
                    end -= 1;
                }
                w.truncate(end);
            }
            if let Ok(mut last) = LAST_WARNING.lock() {
                *last = Some(w);
            }
        }
        match level {
            abi::log_level::FATAL_ERROR => tracing::error!(target: "dbgapi", "{m}"),
            abi::log_level::WARNING => tracing::warn!(target: "dbgapi", "{m}"),
            abi::log_level::INFO => tracing::info!(target: "dbgapi", "{m}"),
            _ => tracing::trace!(target: "dbgapi", "{m}"),
        }
    })
}
