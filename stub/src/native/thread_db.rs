//! glibc's `libthread_db.so.1`, loaded and driven as gdbserver drives it
//! (gdbserver/thread-db.cc, proc-service.cc, gdb 13.1), for `qGetTLSAddr`.
//!
//! - The library is searched on a path that `monitor set
//!   libthread-db-search-path PATH` sets ([`set_search_path`]; default
//!   [`DEFAULT_SEARCH_PATH`], `$sdir:$pdir`). Components are separated by
//!   `:`. `$sdir` is `dlopen("libthread_db.so.1")` with the system's search
//!   rules; `$pdir` is the directory of the libpthread (or, glibc ≥ 2.34,
//!   the libc) the inferior has mapped, read through `/proc/PID/root`
//!   (gdbserver 13 skips `$pdir`: "we don't know where libpthread lives");
//!   any other component is a directory holding `libthread_db.so.1`. The
//!   first library whose `td_ta_new` accepts the inferior is used.
//! - libthread_db reads the inferior through the *proc_service* functions
//!   its client exports (`ps_pdread`, `ps_lgetregs`, `ps_pglobal_lookup`,
//!   …). They are defined here with C linkage and put in the binary's
//!   dynamic symbol table by `stub/build.rs`; a `dlopen` of libthread_db
//!   fails ("undefined symbol: ps_pdread") where they are missing.
//! - Unlike gdbserver, which keeps one agent per process from the time gdb
//!   offers symbols (`qSymbol`), gdbmux makes the agent for each request
//!   (`td_ta_new`, `td_ta_map_lwp2thr`, `td_thr_tls_get_addr`,
//!   `td_ta_delete`): the search path in force then decides, and no state
//!   outlives the process. `ps_pglobal_lookup` resolves symbols from the
//!   ELF files the inferior maps (gdbserver asks gdb with `qSymbol`, which
//!   a server loop with no blocking call cannot do in the middle of a
//!   request).
//!
//! All `unsafe` of the libthread_db interface lives in this module.

use std::collections::HashMap;
use std::ffi::c_char;
use std::ffi::c_int;
use std::ffi::c_void;
use std::ffi::CStr;
use std::sync::Mutex;

use object::Object;
use object::ObjectSegment;
use object::ObjectSymbol;

use super::procfs;
use crate::target::Pid;
use crate::target::Target;
use crate::target::Tid;

/// gdbserver's `LIBTHREAD_DB_SEARCH_PATH` (gdb/nat/gdb_thread_db.h).
pub const DEFAULT_SEARCH_PATH: &str = "$sdir:$pdir";

/// The file name looked for in each directory (`LIBTHREAD_DB_SO`).
pub const LIBTHREAD_DB_SO: &str = "libthread_db.so.1";

/// At most this many libthread_db libraries stay loaded (one per
/// distinct path that ever worked); a further one replaces the oldest.
pub const LOADED_LIMIT: usize = 8;

/// The search path set by `monitor set libthread-db-search-path`; `None`
/// until a client sets one ([`DEFAULT_SEARCH_PATH`] applies). Global, as
/// gdbserver's `libthread_db_search_path`.
static SEARCH_PATH: Mutex<Option<String>> = Mutex::new(None);

/// Sets the search path as gdbserver's `thread_db_handle_monitor_command`
/// does: leading blanks skipped, empty means the default. Returns the path
/// now in force.
pub fn set_search_path(arg: &str) -> String {
    let p = arg.trim_start();
    let p = if p.is_empty() { DEFAULT_SEARCH_PATH } else { p };
    let mut g = SEARCH_PATH.lock().unwrap_or_else(|e| e.into_inner());
    *g = Some(p.to_string());
    p.to_string()
}

/// The search path in force.
pub fn search_path() -> String {
    let g = SEARCH_PATH.lock().unwrap_or_else(|e| e.into_inner());
    g.clone().unwrap_or_else(|| DEFAULT_SEARCH_PATH.to_string())
}

/// One component of a search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchDir {
    /// `$pdir` (or `$pdir/SUBDIR`): where the inferior's libpthread/libc is.
    Pdir(String),
    /// `$sdir`: the system's own dlopen search.
    Sdir,
    /// A directory.
    Dir(String),
}

/// Split a search path as gdbserver's `thread_db_load_search` does: `:`
/// separated, `$pdir` alone or followed by `/`, `$sdir` exactly. Empty
/// components are skipped.
pub fn parse_search_path(path: &str) -> Vec<SearchDir> {
    path.split(':')
        .filter(|c| !c.is_empty())
        .map(|c| {
            if c == "$sdir" {
                SearchDir::Sdir
            } else if let Some(rest) = c.strip_prefix("$pdir") {
                if rest.is_empty() || rest.starts_with('/') {
                    SearchDir::Pdir(rest.to_string())
                } else {
                    SearchDir::Dir(c.to_string())
                }
            } else {
                SearchDir::Dir(c.to_string())
            }
        })
        .collect()
}

/// Why libthread_db gave no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadDbError {
    /// No component of the search path gave a libthread_db that accepts
    /// the inferior (the text says what each attempt found).
    NoLibrary(String),
    /// A libthread_db accepted the inferior, then failed (`td_err_e` name).
    Failed(String),
}

impl std::fmt::Display for ThreadDbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThreadDbError::NoLibrary(w) => write!(f, "no libthread_db: {w}"),
            ThreadDbError::Failed(w) => write!(f, "libthread_db: {w}"),
        }
    }
}

/// Address of a thread-local variable through libthread_db, searched on
/// `path`: `td_thr_tls_get_addr` (or `td_thr_tlsbase` of module 1 for
/// `lm == 0`, a static program, as gdbserver).
pub fn tls_address(
    t: &mut dyn Target,
    pid: Pid,
    tid: Tid,
    offset: u64,
    lm: u64,
    path: &str,
) -> Result<u64, ThreadDbError> {
    let mut tried = Vec::new();
    for dir in parse_search_path(path) {
        let file = match &dir {
            SearchDir::Sdir => LIBTHREAD_DB_SO.to_string(),
            SearchDir::Dir(d) => format!("{d}/{LIBTHREAD_DB_SO}"),
            SearchDir::Pdir(sub) => match pdir(pid) {
                Some(d) => format!("{d}{sub}/{LIBTHREAD_DB_SO}"),
                None => {
                    tried.push("$pdir: the process maps no libpthread or libc".to_string());
                    continue;
                }
            },
        };
        let lib = match ffi::load(&file) {
            Ok(l) => l,
            Err(e) => {
                tried.push(format!("{file}: {e}"));
                continue;
            }
        };
        match ffi::tls_address(&lib, t, pid, tid, offset, lm) {
            Ok(a) => return Ok(a),
            // This library "refused" the inferior: try the next one.
            Err(ffi::TdFailure::NewAgent(e)) => tried.push(format!("{file}: td_ta_new: {e}")),
            Err(ffi::TdFailure::Call(what, e)) => {
                return Err(ThreadDbError::Failed(format!("{file}: {what}: {e}")))
            }
        }
    }
    if tried.is_empty() {
        tried.push(format!("the search path `{path}' names no directory"));
    }
    Err(ThreadDbError::NoLibrary(tried.join("; ")))
}

/// `$pdir`: the directory of the libpthread, else the libc, that process
/// `pid` maps, as a path through `/proc/PID/root`.
fn pdir(pid: Pid) -> Option<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let names: Vec<String> = procfs::parse_maps(&maps)
        .into_iter()
        .filter_map(|m| m.name)
        .collect();
    let base = |n: &str| n.rsplit('/').next().unwrap_or("").to_string();
    let pick = names
        .iter()
        .find(|n| base(n).starts_with("libpthread.so"))
        .or_else(|| names.iter().find(|n| base(n).starts_with("libc.so")))?;
    let (dir, _) = pick.rsplit_once('/')?;
    Some(format!("/proc/{pid}/root{dir}"))
}

/// Most ELF files whose symbol tables stay indexed between requests
/// ([`ObjectTable`]); a further one replaces the oldest.
pub const TABLES_LIMIT: usize = 16;

/// The defined symbols of one ELF file (dynamic, then `.symtab`; the first
/// definition of a name wins) and its first segment's address, indexed once
/// and shared by every request while the file is unchanged.
struct ObjectTable {
    first_vaddr: u64,
    syms: HashMap<String, u64>,
}

/// A file's identity: device, inode, size, modification time.
type FileKey = (u64, u64, u64, i64, i64);

static TABLES: Mutex<Vec<(FileKey, std::sync::Arc<ObjectTable>)>> = Mutex::new(Vec::new());

/// The table of the file at `path` (a path through `/proc/PID/root`).
fn object_table(path: &str) -> Option<std::sync::Arc<ObjectTable>> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let key: FileKey = (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec());
    {
        let g = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, t)) = g.iter().find(|(k, _)| *k == key) {
            return Some(t.clone());
        }
    }
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let first_vaddr = file.segments().map(|s| s.address()).min().unwrap_or(0);
    let mut syms = HashMap::new();
    for sym in file.dynamic_symbols().chain(file.symbols()) {
        if !sym.is_definition() {
            continue;
        }
        if let Ok(n) = sym.name() {
            if !n.is_empty() {
                syms.entry(n.to_string()).or_insert(sym.address());
            }
        }
    }
    let t = std::sync::Arc::new(ObjectTable { first_vaddr, syms });
    let mut g = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if g.len() >= TABLES_LIMIT {
        g.remove(0);
    }
    g.push((key, t.clone()));
    Some(t)
}

/// The inferior's ELF objects, for `ps_pglobal_lookup`: mapped files in
/// maps order, each with its lowest mapped address (its load bias follows
/// from the first segment's address).
struct Symbols {
    pid: Pid,
    /// `(file name as mapped, lowest mapped address)`, read at first use.
    objects: Option<Vec<(String, u64)>>,
    /// Answers given (libthread_db asks some names more than once).
    found: HashMap<(String, String), Option<u64>>,
}

impl Symbols {
    fn new(pid: Pid) -> Self {
        Symbols {
            pid,
            objects: None,
            found: HashMap::new(),
        }
    }

    fn objects(&mut self) -> &[(String, u64)] {
        let pid = self.pid;
        self.objects.get_or_insert_with(|| {
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
            let mut objs: Vec<(String, u64)> = Vec::new();
            for m in procfs::parse_maps(&maps) {
                let Some(n) = m.name else { continue };
                if !n.starts_with('/') {
                    continue;
                }
                match objs.iter_mut().find(|(o, _)| *o == n) {
                    Some(o) => o.1 = o.1.min(m.start),
                    None => objs.push((n, m.start)),
                }
            }
            objs
        })
    }

    /// The address of `name`, preferring the object named `obj` (glibc
    /// passes `libpthread.so.0`, `libc.so.6`, `ld-linux-x86-64.so.2`).
    fn lookup(&mut self, obj: &str, name: &str) -> Option<u64> {
        let key = (obj.to_string(), name.to_string());
        if let Some(v) = self.found.get(&key) {
            return *v;
        }
        let mut objs = self.objects().to_vec();
        let base = |n: &str| n.rsplit('/').next().unwrap_or("").to_string();
        objs.sort_by_key(|(n, _)| base(n) != obj);
        let pid = self.pid;
        let v = objs.iter().find_map(|(path, low)| {
            let t = object_table(&format!("/proc/{pid}/root{path}"))?;
            let value = *t.syms.get(name)?;
            let bias = low.wrapping_sub(t.first_vaddr & !0xfff);
            Some(bias.wrapping_add(value))
        });
        self.found.insert(key, v);
        v
    }
}

/// The x86-64 `user_regs_struct` order (`elf_gregset_t`, 27 registers),
/// by gdbmux register name, for `ps_lgetregs`.
const GREGSET: [&str; 27] = [
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs",
    "gs",
];

fn register_u64(t: &mut dyn Target, tid: Tid, name: &str) -> Option<u64> {
    let n = t.registers().iter().find(|r| r.name == name)?.regnum;
    let b = t.read_register(tid, n).ok()?;
    let mut a = [0u8; 8];
    for (d, s) in a.iter_mut().zip(b.iter()) {
        *d = *s;
    }
    Some(u64::from_le_bytes(a))
}

/// Which libthread_db calls the selftest checks are exported (their names
/// as libthread_db.so.1 of glibc 2.36 imports them).
pub const PROC_SERVICE: [&str; 10] = include!("proc_service_names.rs");

/// Whether each of [`PROC_SERVICE`] is in this executable's dynamic
/// symbol table (what a `dlopen`ed libthread_db binds to).
pub fn proc_service_exported() -> Vec<(&'static str, bool)> {
    PROC_SERVICE
        .iter()
        .map(|n| (*n, ffi::exported(n)))
        .collect()
}

/// The FFI: loading libthread_db, its entry points, and the proc_service
/// callbacks it calls.
mod ffi {
    use super::*;

    /// `td_err_e` names (glibc nptl_db/thread_db.h), for messages.
    fn td_err_name(e: c_int) -> String {
        const NAMES: [&str; 24] = [
            "TD_OK",
            "TD_ERR",
            "TD_NOTHR",
            "TD_NOSV",
            "TD_NOLWP",
            "TD_BADPH",
            "TD_BADTH",
            "TD_BADSH",
            "TD_BADTA",
            "TD_BADKEY",
            "TD_NOMSG",
            "TD_NOFPREGS",
            "TD_NOLIBTHREAD",
            "TD_NOEVENT",
            "TD_NOCAPAB",
            "TD_DBERR",
            "TD_NOAPLIC",
            "TD_NOTSD",
            "TD_MALLOC",
            "TD_PARTIALREG",
            "TD_NOXREGS",
            "TD_TLSDEFER",
            "TD_VERSION",
            "TD_NOTLS",
        ];
        usize::try_from(e)
            .ok()
            .and_then(|i| NAMES.get(i))
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("td_err_e {e}"))
    }

    const TD_OK: c_int = 0;
    const PS_OK: c_int = 0;
    const PS_ERR: c_int = 1;
    const PS_BADADDR: c_int = 4;
    const PS_NOSYM: c_int = 5;
    /// `<sys/reg.h>` x86-64 indices that `ps_get_thread_area` takes.
    const FS: c_int = 25;
    const GS: c_int = 26;

    /// `td_thrhandle_t`.
    #[repr(C)]
    struct ThrHandle {
        ta: *mut c_void,
        unique: *mut c_void,
    }

    type TdInit = unsafe extern "C" fn() -> c_int;
    type TdTaNew = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> c_int;
    type TdTaDelete = unsafe extern "C" fn(*mut c_void) -> c_int;
    type TdTaMapLwp2Thr = unsafe extern "C" fn(*mut c_void, c_int, *mut ThrHandle) -> c_int;
    type TdThrTlsGetAddr =
        unsafe extern "C" fn(*const ThrHandle, *mut c_void, usize, *mut *mut c_void) -> c_int;
    type TdThrTlsBase =
        unsafe extern "C" fn(*const ThrHandle, std::ffi::c_ulong, *mut *mut c_void) -> c_int;

    /// A loaded libthread_db with the entry points gdbserver requires.
    pub(super) struct Lib {
        td_ta_new: TdTaNew,
        td_ta_delete: TdTaDelete,
        td_ta_map_lwp2thr: TdTaMapLwp2Thr,
        td_thr_tls_get_addr: Option<TdThrTlsGetAddr>,
        td_thr_tlsbase: Option<TdThrTlsBase>,
        /// Keeps the entry points above valid.
        _lib: std::sync::Arc<libloading::os::unix::Library>,
    }

    /// Libraries that loaded, by path (bounded by [`LOADED_LIMIT`]).
    static LOADED: Mutex<Vec<(String, std::sync::Arc<libloading::os::unix::Library>)>> =
        Mutex::new(Vec::new());

    /// `dlopen(file, RTLD_NOW)` as gdbserver's `try_thread_db_load`, then
    /// the entry points (`td_ta_new`, `td_ta_map_lwp2thr` required).
    pub(super) fn load(file: &str) -> Result<Lib, String> {
        let lib = {
            let mut g = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            match g.iter().find(|(p, _)| p == file) {
                Some((_, l)) => l.clone(),
                None => {
                    // SAFETY: loading libthread_db runs its initialisers,
                    // which only set up its own state; the proc_service
                    // functions it imports are defined below with the
                    // signatures of glibc's <proc_service.h>.
                    let l = unsafe {
                        libloading::os::unix::Library::open(
                            Some(file),
                            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
                        )
                    }
                    .map_err(|e| e.to_string())?;
                    let l = std::sync::Arc::new(l);
                    if g.len() >= LOADED_LIMIT {
                        g.remove(0);
                    }
                    g.push((file.to_string(), l.clone()));
                    if let Ok(init) = get::<TdInit>(&l, b"td_init\0") {
                        // SAFETY: td_init takes no arguments and only
                        // initialises the library's debug flag.
                        unsafe { init() };
                    }
                    l
                }
            }
        };
        Ok(Lib {
            td_ta_new: get(&lib, b"td_ta_new\0")?,
            td_ta_delete: get(&lib, b"td_ta_delete\0")?,
            td_ta_map_lwp2thr: get(&lib, b"td_ta_map_lwp2thr\0")?,
            td_thr_tls_get_addr: get(&lib, b"td_thr_tls_get_addr\0").ok(),
            td_thr_tlsbase: get(&lib, b"td_thr_tlsbase\0").ok(),
            _lib: lib,
        })
    }

    fn get<T: Copy>(lib: &libloading::os::unix::Library, name: &[u8]) -> Result<T, String> {
        // SAFETY: each T used with this is the function type of the named
        // libthread_db entry point (glibc nptl_db/thread_db.h); the value
        // is kept with an Arc of the library, so it outlives no dlclose.
        unsafe { lib.get::<T>(name) }
            .map(|s| *s)
            .map_err(|e| e.to_string())
    }

    /// What libthread_db did not do.
    pub(super) enum TdFailure {
        /// `td_ta_new` refused the inferior (try another library).
        NewAgent(String),
        /// A later call failed: which, and its error.
        Call(&'static str, String),
    }

    /// The `struct ps_prochandle` libthread_db hands back to every
    /// callback: the process, the target to read it through (valid for
    /// one request), and the symbol resolver.
    struct ProcHandle {
        pid: Pid,
        target: *mut (dyn Target + 'static),
        symbols: Symbols,
    }

    /// The callbacks' view of the handle.
    ///
    /// # Safety
    /// `ph` is the `ProcHandle` that [`tls_address`] passed to `td_ta_new`
    /// and that outlives the agent, and no other reference to it or to its
    /// target is live while libthread_db runs (it calls back
    /// synchronously on this thread only).
    unsafe fn handle<'a>(ph: *mut c_void) -> Option<(&'a mut ProcHandle, &'a mut dyn Target)> {
        let h = ph.cast::<ProcHandle>();
        if h.is_null() {
            return None;
        }
        // SAFETY: per this function's contract, `h` is live and unaliased.
        let h = unsafe { &mut *h };
        // SAFETY: `target` was made from a `&mut dyn Target` that
        // `tls_address` holds (and does not use) for the whole request.
        let t = unsafe { &mut *h.target };
        Some((h, t))
    }

    /// One libthread_db request for thread `tid` of `pid`.
    pub(super) fn tls_address(
        lib: &Lib,
        t: &mut dyn Target,
        pid: Pid,
        tid: Tid,
        offset: u64,
        lm: u64,
    ) -> Result<u64, TdFailure> {
        let target: *mut (dyn Target + '_) = t;
        // SAFETY: only the lifetime is erased; the handle (and every use of
        // this pointer through it) ends before this function returns, while
        // `t` is still mutably borrowed by it.
        let target: *mut (dyn Target + 'static) = unsafe { std::mem::transmute(target) };
        let mut ph = ProcHandle {
            pid,
            target,
            symbols: Symbols::new(pid),
        };
        let php: *mut c_void = (&mut ph as *mut ProcHandle).cast();
        let mut ta: *mut c_void = std::ptr::null_mut();
        // SAFETY: td_ta_new(struct ps_prochandle *, td_thragent_t **); `php`
        // stays valid until td_ta_delete below.
        let e = unsafe { (lib.td_ta_new)(php, &mut ta) };
        if e != TD_OK || ta.is_null() {
            return Err(TdFailure::NewAgent(td_err_name(e)));
        }
        let r = (|| {
            let mut th = ThrHandle {
                ta: std::ptr::null_mut(),
                unique: std::ptr::null_mut(),
            };
            let lwp = c_int::try_from(tid)
                .map_err(|_| TdFailure::Call("td_ta_map_lwp2thr", "bad lwp".into()))?;
            // SAFETY: `ta` is the live agent; `th` is a td_thrhandle_t.
            let e = unsafe { (lib.td_ta_map_lwp2thr)(ta, lwp, &mut th) };
            if e != TD_OK {
                return Err(TdFailure::Call("td_ta_map_lwp2thr", td_err_name(e)));
            }
            let mut addr: *mut c_void = std::ptr::null_mut();
            if lm != 0 {
                let f = lib
                    .td_thr_tls_get_addr
                    .ok_or(TdFailure::Call("td_thr_tls_get_addr", "missing".into()))?;
                // SAFETY: `th` was filled by td_ta_map_lwp2thr for `ta`;
                // lm is the inferior's link_map address (psaddr_t).
                let e = unsafe { f(&th, lm as usize as *mut c_void, offset as usize, &mut addr) };
                if e != TD_OK {
                    return Err(TdFailure::Call("td_thr_tls_get_addr", td_err_name(e)));
                }
                Ok(addr as usize as u64)
            } else {
                // gdbserver: a static program's TLS is module 1.
                let f = lib
                    .td_thr_tlsbase
                    .ok_or(TdFailure::Call("td_thr_tlsbase", "missing".into()))?;
                // SAFETY: as above; modid 1.
                let e = unsafe { f(&th, 1, &mut addr) };
                if e != TD_OK {
                    return Err(TdFailure::Call("td_thr_tlsbase", td_err_name(e)));
                }
                Ok((addr as usize as u64).wrapping_add(offset))
            }
        })();
        // SAFETY: `ta` came from td_ta_new and is deleted once.
        unsafe { (lib.td_ta_delete)(ta) };
        r
    }

    /// Whether `name` resolves in this executable's dynamic symbols.
    pub(super) fn exported(name: &str) -> bool {
        let Ok(c) = std::ffi::CString::new(name) else {
            return false;
        };
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only
        // looks the name up.
        !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) }.is_null()
    }

    /// `ps_pdread`: read inferior memory (gdbserver: read_inferior_memory).
    ///
    /// # Safety
    /// Called by libthread_db with the handle given to td_ta_new and a
    /// buffer of `size` writable bytes.
    #[no_mangle]
    pub unsafe extern "C" fn ps_pdread(
        ph: *mut c_void,
        addr: *mut c_void,
        buf: *mut c_void,
        size: usize,
    ) -> c_int {
        // SAFETY: the handle contract of `handle`.
        let Some((_, t)) = (unsafe { handle(ph) }) else {
            return PS_ERR;
        };
        if buf.is_null() {
            return PS_ERR;
        }
        match t.read_memory(addr as usize as u64, size) {
            Ok(v) if v.len() == size => {
                // SAFETY: `buf` holds `size` bytes (the caller's contract).
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cast::<u8>(), size) };
                PS_OK
            }
            _ => PS_ERR,
        }
    }

    /// `ps_ptread`: the same as `ps_pdread` (one address space).
    ///
    /// # Safety
    /// As [`ps_pdread`].
    #[no_mangle]
    pub unsafe extern "C" fn ps_ptread(
        ph: *mut c_void,
        addr: *mut c_void,
        buf: *mut c_void,
        size: usize,
    ) -> c_int {
        // SAFETY: forwarded with the same contract.
        unsafe { ps_pdread(ph, addr, buf, size) }
    }

    /// `ps_pdwrite`: write inferior memory.
    ///
    /// # Safety
    /// As [`ps_pdread`], with `buf` holding `size` readable bytes.
    #[no_mangle]
    pub unsafe extern "C" fn ps_pdwrite(
        ph: *mut c_void,
        addr: *mut c_void,
        buf: *const c_void,
        size: usize,
    ) -> c_int {
        // SAFETY: the handle contract of `handle`.
        let Some((_, t)) = (unsafe { handle(ph) }) else {
            return PS_ERR;
        };
        if buf.is_null() {
            return PS_ERR;
        }
        // SAFETY: `buf` holds `size` bytes (the caller's contract).
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) };
        match t.write_memory(addr as usize as u64, data) {
            Ok(n) if n == size => PS_OK,
            _ => PS_ERR,
        }
    }

    /// `ps_lgetregs`: the general registers of `lwpid` (`elf_gregset_t`).
    ///
    /// # Safety
    /// As [`ps_pdread`], with `gregset` an `elf_gregset_t` (27 u64).
    #[no_mangle]
    pub unsafe extern "C" fn ps_lgetregs(
        ph: *mut c_void,
        lwpid: c_int,
        gregset: *mut u64,
    ) -> c_int {
        // SAFETY: the handle contract of `handle`.
        let Some((_, t)) = (unsafe { handle(ph) }) else {
            return PS_ERR;
        };
        let Ok(tid) = Tid::try_from(lwpid) else {
            return PS_ERR;
        };
        if gregset.is_null() {
            return PS_ERR;
        }
        let mut regs = [0u64; 27];
        for (slot, name) in regs.iter_mut().zip(GREGSET) {
            match register_u64(t, tid, name) {
                Some(v) => *slot = v,
                None if name == "orig_rax" => {}
                None => return PS_ERR,
            }
        }
        // SAFETY: `gregset` holds 27 u64 (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(regs.as_ptr(), gregset, regs.len()) };
        PS_OK
    }

    /// `ps_lsetregs`: unneeded for reading TLS; refused, as gdbserver.
    #[no_mangle]
    pub extern "C" fn ps_lsetregs(_ph: *mut c_void, _lwpid: c_int, _gregset: *const u64) -> c_int {
        PS_ERR
    }

    /// `ps_lgetfpregs`: refused, as gdbserver.
    #[no_mangle]
    pub extern "C" fn ps_lgetfpregs(_ph: *mut c_void, _lwpid: c_int, _fp: *mut c_void) -> c_int {
        PS_ERR
    }

    /// `ps_lsetfpregs`: refused, as gdbserver.
    #[no_mangle]
    pub extern "C" fn ps_lsetfpregs(_ph: *mut c_void, _lwpid: c_int, _fp: *const c_void) -> c_int {
        PS_ERR
    }

    /// `ps_getpid`: the process (thread group) id.
    ///
    /// # Safety
    /// As [`ps_pdread`].
    #[no_mangle]
    pub unsafe extern "C" fn ps_getpid(ph: *mut c_void) -> c_int {
        // SAFETY: the handle contract of `handle`.
        match unsafe { handle(ph) } {
            Some((h, _)) => c_int::try_from(h.pid).unwrap_or(-1),
            None => -1,
        }
    }

    /// `ps_get_thread_area`: x86-64 `FS`/`GS` base of `lwpid` (gdbserver's
    /// linux-x86-low.cc reads them with `PTRACE_ARCH_PRCTL`; here from the
    /// target's `fs_base`/`gs_base`).
    ///
    /// # Safety
    /// As [`ps_pdread`], with `base` a writable pointer slot.
    #[no_mangle]
    pub unsafe extern "C" fn ps_get_thread_area(
        ph: *mut c_void,
        lwpid: c_int,
        idx: c_int,
        base: *mut *mut c_void,
    ) -> c_int {
        // SAFETY: the handle contract of `handle`.
        let Some((_, t)) = (unsafe { handle(ph) }) else {
            return PS_ERR;
        };
        let Ok(tid) = Tid::try_from(lwpid) else {
            return PS_ERR;
        };
        let name = match idx {
            FS => "fs_base",
            GS => "gs_base",
            _ => return PS_BADADDR,
        };
        if base.is_null() {
            return PS_ERR;
        }
        match register_u64(t, tid, name) {
            Some(v) => {
                // SAFETY: `base` is writable (the caller's contract).
                unsafe { *base = v as usize as *mut c_void };
                PS_OK
            }
            None => PS_ERR,
        }
    }

    /// `ps_pglobal_lookup`: the address of `name` in the inferior.
    ///
    /// # Safety
    /// As [`ps_pdread`], with `obj` and `name` NUL-terminated (obj may be
    /// null) and `addr` a writable pointer slot.
    #[no_mangle]
    pub unsafe extern "C" fn ps_pglobal_lookup(
        ph: *mut c_void,
        obj: *const c_char,
        name: *const c_char,
        addr: *mut *mut c_void,
    ) -> c_int {
        // SAFETY: the handle contract of `handle`.
        let Some((h, _)) = (unsafe { handle(ph) }) else {
            return PS_ERR;
        };
        if name.is_null() || addr.is_null() {
            return PS_ERR;
        }
        // SAFETY: NUL-terminated strings from libthread_db.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        let obj = if obj.is_null() {
            String::new()
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(obj) }
                .to_string_lossy()
                .into_owned()
        };
        match h.symbols.lookup(&obj, &name) {
            Some(a) => {
                // SAFETY: `addr` is writable (the caller's contract).
                unsafe { *addr = a as usize as *mut c_void };
                PS_OK
            }
            None => PS_NOSYM,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_path_components_as_gdbserver() {
        assert_eq!(
            parse_search_path("$sdir:$pdir"),
            [SearchDir::Sdir, SearchDir::Pdir(String::new())]
        );
        assert_eq!(
            parse_search_path("/foo/bar::$pdir/sub:$sdirx:$pdirx"),
            [
                SearchDir::Dir("/foo/bar".into()),
                SearchDir::Pdir("/sub".into()),
                SearchDir::Dir("$sdirx".into()),
                SearchDir::Dir("$pdirx".into()),
            ]
        );
    }
}
