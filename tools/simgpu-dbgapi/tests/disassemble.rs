//! `amd_dbgapi_disassemble_instruction` of the simulated library gives, for
//! every instruction of the corpus code objects, the same size and text as
//! AMD's real amd-dbgapi 0.77 (LLVM's text plus `  # <target>` on branches)
//! (the library runs without a GPU; it disassembles through comgr, which
//! needs the Debian package libamd-comgr2). The library is taken from
//! `$REAL_AMD_DBGAPI` or `$GDBMUX_REAL_DBGAPI_DIR/0.77.0/`; without it the
//! test prints a named skip line (`gpu_target::dbgapi::testing`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

mod common;

/// The real library through its C ABI (the only `unsafe` of this test).
#[allow(unsafe_code)]
mod real {
    use std::ffi::c_char;
    use std::ffi::c_void;
    use std::ffi::CStr;

    type Status = i32;

    #[repr(C)]
    struct Callbacks {
        allocate_memory: extern "C" fn(usize) -> *mut c_void,
        deallocate_memory: extern "C" fn(*mut c_void),
        client_process_get_info: extern "C" fn(*mut c_void, i32, usize, *mut c_void) -> Status,
        insert_breakpoint: extern "C" fn(*mut c_void, u64, u64) -> Status,
        remove_breakpoint: extern "C" fn(*mut c_void, u64) -> Status,
        xfer_global_memory:
            extern "C" fn(*mut c_void, u64, *mut u64, *mut c_void, *const c_void) -> Status,
        log_message: extern "C" fn(i32, *const c_char),
    }

    extern "C" fn alloc(n: usize) -> *mut c_void {
        // SAFETY: plain malloc; the library frees with `dealloc`.
        unsafe { libc::malloc(n) }
    }
    extern "C" fn dealloc(p: *mut c_void) {
        // SAFETY: `p` came from `alloc` (malloc) or is null.
        unsafe { libc::free(p) }
    }
    extern "C" fn get_info(_: *mut c_void, _: i32, _: usize, _: *mut c_void) -> Status {
        -2 // AMD_DBGAPI_STATUS_ERROR_NOT_IMPLEMENTED: no process here
    }
    extern "C" fn insert(_: *mut c_void, _: u64, _: u64) -> Status {
        -2
    }
    extern "C" fn remove(_: *mut c_void, _: u64) -> Status {
        -2
    }
    extern "C" fn xfer(
        _: *mut c_void,
        _: u64,
        _: *mut u64,
        _: *mut c_void,
        _: *const c_void,
    ) -> Status {
        -2
    }
    extern "C" fn log(_: i32, _: *const c_char) {}

    static CALLBACKS: Callbacks = Callbacks {
        allocate_memory: alloc,
        deallocate_memory: dealloc,
        client_process_get_info: get_info,
        insert_breakpoint: insert,
        remove_breakpoint: remove,
        xfer_global_memory: xfer,
        log_message: log,
    };

    type Initialize = unsafe extern "C" fn(*const Callbacks) -> Status;
    type GetArchitecture = unsafe extern "C" fn(u32, *mut u64) -> Status;
    type Disassemble = unsafe extern "C" fn(
        u64,
        u64,
        *mut u64,
        *const c_void,
        *mut *mut c_char,
        *mut c_void,
        *const c_void,
    ) -> Status;

    pub struct Lib {
        lib: libloading::Library,
        arch: u64,
    }

    impl Lib {
        /// The library at `path`, loaded once for the whole test process and
        /// never unloaded: dlclose of AMD's library unloads comgr's LLVM
        /// while its command-line options stay registered, and the next load
        /// in this process aborts with "Option 'disassemble' registered more
        /// than once" (seen when the two tests here ran one after the other).
        pub fn open(path: &std::path::Path) -> Result<&'static Self, String> {
            static LOADED: std::sync::Mutex<Vec<(std::path::PathBuf, &'static Lib)>> =
                std::sync::Mutex::new(Vec::new());
            let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, lib)) = loaded.iter().find(|(p, _)| p == path) {
                return Ok(lib);
            }
            let lib: &'static Self = Box::leak(Box::new(Self::load(path)?));
            loaded.push((path.to_path_buf(), lib));
            Ok(lib)
        }

        fn load(path: &std::path::Path) -> Result<Self, String> {
            // SAFETY: loading AMD's library runs its initialisers, which
            // only set up its own state.
            let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
            // SAFETY: the symbols have these C signatures (amd-dbgapi.h 0.77).
            unsafe {
                let init: libloading::Symbol<Initialize> = lib
                    .get(b"amd_dbgapi_initialize")
                    .map_err(|e| e.to_string())?;
                let st = init(&CALLBACKS);
                // -8: already initialized by another test of this process.
                if st != 0 && st != -8 {
                    return Err(format!("amd_dbgapi_initialize: {st}"));
                }
                let get: libloading::Symbol<GetArchitecture> = lib
                    .get(b"amd_dbgapi_get_architecture")
                    .map_err(|e| e.to_string())?;
                let mut arch = 0u64;
                let st = get(0x3f, &mut arch);
                if st != 0 {
                    return Err(format!("amd_dbgapi_get_architecture(gfx90a): {st}"));
                }
                Ok(Self { lib, arch })
            }
        }

        /// The handle `amd_dbgapi_get_architecture` gave gfx90a.
        pub fn arch(&self) -> u64 {
            self.arch
        }

        /// `amd_dbgapi_get_status_string` of 0 down to -59: (code, status,
        /// text when it succeeded).
        pub fn status_strings(&self) -> Vec<(i32, Status, Option<String>)> {
            type F = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
            // SAFETY: signature per amd-dbgapi.h; the texts are static.
            unsafe {
                let f: libloading::Symbol<F> = self
                    .lib
                    .get(b"amd_dbgapi_get_status_string")
                    .expect("symbol");
                (-59..=0)
                    .map(|code| {
                        let mut p: *const c_char = std::ptr::null();
                        let st = f(code, &mut p);
                        let text = (st == 0 && !p.is_null())
                            .then(|| CStr::from_ptr(p).to_string_lossy().into_owned());
                        (code, st, text)
                    })
                    .collect()
            }
        }

        /// Every address space of gfx90a with its answers to the five
        /// `amd_dbgapi_address_space_get_info` queries (name, address size,
        /// null address, access, DWARF), a wrong size and an unknown query;
        /// then the status for an unknown handle.
        pub fn address_spaces(&self) -> (Vec<String>, Status) {
            type List = unsafe extern "C" fn(u64, *mut usize, *mut *mut u64) -> Status;
            type Info = unsafe extern "C" fn(u64, i32, usize, *mut c_void) -> Status;
            // SAFETY: signatures per amd-dbgapi.h; every value pointer points
            // at storage of the size passed; the list and the name are
            // malloc'd by our allocate callback and freed here.
            unsafe {
                let list: libloading::Symbol<List> = self
                    .lib
                    .get(b"amd_dbgapi_architecture_address_space_list")
                    .expect("symbol");
                let info: libloading::Symbol<Info> = self
                    .lib
                    .get(b"amd_dbgapi_address_space_get_info")
                    .expect("symbol");
                let (mut n, mut l) = (0usize, std::ptr::null_mut::<u64>());
                assert_eq!(list(self.arch, &mut n, &mut l), 0);
                let mut out = Vec::new();
                for i in 0..n {
                    let h = *l.add(i);
                    let mut name: *mut c_char = std::ptr::null_mut();
                    let st_name = info(h, 1, 8, (&mut name as *mut *mut c_char).cast());
                    let name_s = if st_name == 0 {
                        let s = CStr::from_ptr(name).to_string_lossy().into_owned();
                        libc::free(name.cast());
                        s
                    } else {
                        String::new()
                    };
                    let mut v = [0u64; 3];
                    let st_v: Vec<Status> = [2, 3, 5]
                        .iter()
                        .zip(v.iter_mut())
                        .map(|(&q, x)| info(h, q, 8, (x as *mut u64).cast()))
                        .collect();
                    let mut access = 0i32;
                    let st_a = info(h, 4, 4, (&mut access as *mut i32).cast());
                    let mut x = 0u64;
                    let bad_size = info(h, 2, 4, (&mut x as *mut u64).cast());
                    let bad_query = info(h, 9, 8, (&mut x as *mut u64).cast());
                    out.push(format!(
                        "{name_s} ({st_name}): size {} null {:#x} dwarf {} ({st_v:?}), access {access} ({st_a}); wrong size {bad_size}, unknown query {bad_query}",
                        v[0], v[1], v[2]
                    ));
                }
                libc::free(l.cast());
                let mut x = 0u64;
                let bad = info(999, 2, 8, (&mut x as *mut u64).cast());
                (out, bad)
            }
        }

        /// The text and size of the instruction at the start of `bytes`.
        pub fn disassemble(&self, bytes: &[u8]) -> Result<(String, usize), i32> {
            // SAFETY: signature per amd-dbgapi.h; `bytes` outlives the call;
            // the text is malloc'd by our allocate callback and freed here.
            unsafe {
                let f: libloading::Symbol<Disassemble> = self
                    .lib
                    .get(b"amd_dbgapi_disassemble_instruction")
                    .map_err(|_| -2)?;
                let mut size = bytes.len() as u64;
                let mut text: *mut c_char = std::ptr::null_mut();
                let st = f(
                    self.arch,
                    0x1000,
                    &mut size,
                    bytes.as_ptr().cast(),
                    &mut text,
                    std::ptr::null_mut(),
                    std::ptr::null(),
                );
                if st != 0 || text.is_null() {
                    return Err(st);
                }
                let s = CStr::from_ptr(text).to_string_lossy().into_owned();
                libc::free(text.cast());
                Ok((s, size as usize))
            }
        }
    }
}

/// AMD's real 0.77 library: `$REAL_AMD_DBGAPI`, else the one in
/// `$GDBMUX_REAL_DBGAPI_DIR/0.77.0/`; `None` after a
/// named skip line when it is not there.
fn library() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REAL_AMD_DBGAPI") {
        return Some(PathBuf::from(p));
    }
    gpu_target::dbgapi::testing::real_libraries(
        "simgpu_dbgapi::same_disassembly_as_the_real_library",
        &["0.77.0"],
    )
    .and_then(|mut v| v.pop())
}

/// Every distinct instruction (its bytes) of the corpus, from llvm-objdump.
fn corpus_instructions() -> BTreeSet<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/corpus/bin");
    let mut out = BTreeSet::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("samples/corpus/bin")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hsaco"))
        .collect();
    files.sort();
    let o = Command::new("llvm-objdump-19")
        .args(["-d", "--mcpu=gfx90a"])
        .args(&files)
        .output()
        .expect("llvm-objdump-19 runs (install llvm-19)");
    assert!(o.status.success(), "llvm-objdump-19 failed");
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Some((_, rest)) = line.split_once("//") else {
            continue;
        };
        let Some((_, hex)) = rest.split_once(':') else {
            continue;
        };
        let words: Vec<u32> = hex
            .split_whitespace()
            .take_while(|w| !w.starts_with('<'))
            .filter_map(|w| u32::from_str_radix(w, 16).ok())
            .collect();
        if !words.is_empty() {
            out.insert(words.iter().flat_map(|w| w.to_le_bytes()).collect());
        }
    }
    out
}

/// gfx90a's architecture handle is the one AMD's library 0.77 gives it (4,
/// measured without a GPU); compared with the real library when it is here.
#[test]
fn gfx90a_architecture_handle_is_the_real_librarys() {
    let sim = real::Lib::open(&common::library()).expect("the simulated library loads");
    assert_eq!(sim.arch(), 4);
    let Some(path) = library() else { return };
    let real = real::Lib::open(&path).expect("AMD's amd-dbgapi loads (needs libamd-comgr2)");
    assert_eq!(real.arch(), sim.arch());
}

/// Status texts, the address-space list and every address-space query
/// answer as AMD's library 0.77 answers.
#[test]
fn same_status_strings_and_address_spaces_as_the_real_library() {
    let Some(path) = library() else { return };
    let real = real::Lib::open(&path).expect("AMD's amd-dbgapi loads (needs libamd-comgr2)");
    let sim = real::Lib::open(&common::library()).expect("the simulated library loads");
    let (theirs, ours) = (real.status_strings(), sim.status_strings());
    assert_eq!(theirs.iter().filter(|s| s.2.is_some()).count(), 50);
    for (t, o) in theirs.iter().zip(&ours) {
        assert_eq!(t, o, "status {}", t.0);
    }
    let (theirs, ours) = (real.address_spaces(), sim.address_spaces());
    assert_eq!(theirs.0.len(), 5, "{theirs:?}");
    assert_eq!(theirs, ours);
}

/// Both libraries, AMD's (`None`: not installed, the test's named skip
/// line is printed) and the simulated one.
fn both_libraries() -> Option<(&'static real::Lib, &'static real::Lib)> {
    let path = library()?;
    let real = real::Lib::open(&path).unwrap_or_else(|e| {
        panic!(
            "AMD's amd-dbgapi at {} cannot be used ({e}); it needs libamd-comgr2",
            path.display()
        )
    });
    let sim = real::Lib::open(&common::library()).expect("the simulated library loads");
    Some((real, sim))
}

/// Disassembles every encoding with both libraries (padded to 16 bytes, as
/// a debugger passes code) and fails listing each one whose text or size
/// differs, or whose size is not the encoding's length.
fn assert_same_disassembly<'a>(
    real: &real::Lib,
    sim: &real::Lib,
    encodings: impl ExactSizeIterator<Item = &'a [u8]>,
) {
    let total = encodings.len();
    let mut mismatches = Vec::new();
    for bytes in encodings {
        let mut padded = bytes.to_vec();
        padded.resize(16, 0);
        let theirs = real.disassemble(&padded);
        let ours = sim.disassemble(&padded);
        if theirs != ours || ours.as_ref().map(|o| o.1) != Ok(bytes.len()) {
            mismatches.push(format!(
                "{bytes:02x?}: real {theirs:?} vs simulated {ours:?}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {total} instructions differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn same_disassembly_as_the_real_library() {
    let Some((real, sim)) = both_libraries() else {
        return;
    };
    let insts = corpus_instructions();
    assert!(
        insts.len() > 1000,
        "only {} distinct instructions",
        insts.len()
    );
    assert_same_disassembly(real, sim, insts.iter().map(Vec::as_slice));
    // An unknown encoding: an error, not text.
    assert!(sim.disassemble(&[0xff; 16]).is_err());
    eprintln!(
        "the simulated library disassembles {} distinct instructions as AMD's does",
        insts.len()
    );
}

/// Encodings clang does not emit from the corpus sources (rows checked by
/// unit tests): the rarer DS opcodes, the `gds` bit, VOP3 `op_sel` on the
/// 16-bit opcodes, the f64 MFMAs' BLGP field and the mixed FMAs'
/// modifiers. Each must disassemble as AMD's library 0.77 disassembles it.
const RARE_ROWS: &[&[u8]] = &[
    &[0x00, 0x00, 0x58, 0xd8, 0x00, 0x01, 0x02, 0x0a], // ds_mskor_rtn_b32
    &[0x08, 0x00, 0x98, 0xd8, 0x00, 0x02, 0x04, 0x00], // ds_mskor_b64
    &[0x04, 0x00, 0x18, 0xd8, 0x01, 0x02, 0x03, 0x00], // ds_mskor_b32
    &[0x00, 0x00, 0xd8, 0xd8, 0x01, 0x02, 0x04, 0x00], // ds_mskor_rtn_b64
    &[0x04, 0x00, 0x62, 0xd8, 0x00, 0x06, 0x07, 0x0b], // ds_cmpst_rtn_f32
    &[0x10, 0x00, 0xa2, 0xd8, 0x00, 0x08, 0x02, 0x00], // ds_cmpst_f64
    &[0x00, 0x00, 0x22, 0xd8, 0x01, 0x02, 0x03, 0x00], // ds_cmpst_f32
    &[0x00, 0x00, 0xe2, 0xd8, 0x01, 0x02, 0x04, 0x00], // ds_cmpst_rtn_f64
    &[0x18, 0x00, 0x68, 0xd8, 0x00, 0x1c, 0x1d, 0x0c], // ds_wrap_rtn_b32
    &[0x01, 0x03, 0x5c, 0xd8, 0x00, 0x06, 0x07, 0x0e], // ds_wrxchg2_rtn_b32
    &[0x01, 0x02, 0x5e, 0xd8, 0x01, 0x02, 0x03, 0x00], // ds_wrxchg2st64_rtn_b32
    &[0x01, 0x02, 0xdc, 0xd8, 0x01, 0x02, 0x04, 0x00], // ds_wrxchg2_rtn_b64
    &[0x01, 0x02, 0xde, 0xd8, 0x17, 0x02, 0x04, 0x18], // ds_wrxchg2st64_rtn_b64
    &[0x09, 0x00, 0xfc, 0xd8, 0x00, 0x12, 0x00, 0x10], // ds_condxchg32_rtn_b64
    &[0x04, 0x00, 0x7c, 0xd9, 0x00, 0x00, 0x00, 0x14], // ds_append
    &[0x08, 0x00, 0x7a, 0xd9, 0x00, 0x00, 0x00, 0x15], // ds_consume
    &[0x10, 0x00, 0x3a, 0xd8, 0x00, 0x1e, 0x00, 0x00], // ds_write_addtid_b32
    &[0x10, 0x00, 0x6c, 0xd9, 0x00, 0x00, 0x00, 0x16], // ds_read_addtid_b32
    &[0x04, 0x00, 0x01, 0xd8, 0x01, 0x02, 0x00, 0x00], // ds_add_u32 ... gds
    &[0x04, 0x00, 0x6d, 0xd8, 0x02, 0x00, 0x00, 0x01], // ds_read_b32 ... gds
    &[0x04, 0x00, 0x7d, 0xd9, 0x00, 0x00, 0x00, 0x01], // ds_append ... gds
    &[0x05, 0x68, 0x03, 0xd2, 0x02, 0x07, 0x12, 0x04], // v_mad_f16 op_sel:[1,0,1,1]
    &[0x06, 0x00, 0x03, 0xd2, 0x0a, 0x15, 0x2e, 0x04], // v_mad_f16
    &[0x01, 0x82, 0x03, 0xd2, 0x02, 0x07, 0x12, 0x24], // v_mad_f16 -v2, |v3|, clamp
    &[0x08, 0x00, 0xea, 0xd1, 0x0a, 0x15, 0x2e, 0x04], // v_mad_legacy_f16
    &[0x09, 0x00, 0xee, 0xd1, 0x0c, 0x1b, 0x3a, 0x04], // v_fma_legacy_f16
    &[0x0f, 0x50, 0x07, 0xd2, 0x02, 0x07, 0x12, 0x04], // v_div_fixup_f16 op_sel
    &[0x12, 0x00, 0xef, 0xd1, 0x02, 0x23, 0x12, 0x04], // v_div_fixup_legacy_f16
    &[0x13, 0x38, 0x06, 0xd2, 0x0c, 0x1b, 0x3a, 0x04], // v_fma_f16 op_sel:[1,1,1,0]
    &[0x01, 0x48, 0x04, 0xd2, 0x02, 0x07, 0x12, 0x04], // v_mad_u16 op_sel:[1,0,0,1]
    &[0x00, 0x00, 0xef, 0xd3, 0x02, 0x09, 0x1a, 0x24], // v_mfma_f64_4x4x4f64 blgp:1
    &[0x05, 0xf4, 0xa2, 0xd3, 0x02, 0x07, 0x12, 0x54], // v_fma_mixhi_f16 ... clamp
    &[0x06, 0x09, 0xa0, 0xd3, 0x02, 0x07, 0x12, 0x2c], // v_fma_mix_f32 -|v2| ...
    &[0x07, 0x40, 0xa0, 0xd3, 0x02, 0xe4, 0xd5, 0x13], // v_fma_mix_f32 s2, 1.0, -2.0
    &[0x00, 0x00, 0xee, 0xd3, 0x02, 0x09, 0x02, 0x64], // v_mfma_f64_16x16x4f64 blgp:3
];

#[test]
fn same_disassembly_as_the_real_library_for_rows_clang_does_not_emit() {
    let Some((real, sim)) = both_libraries() else {
        return;
    };
    assert_same_disassembly(real, sim, RARE_ROWS.iter().copied());
}
