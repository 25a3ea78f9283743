//! Thread-local storage addresses (`qGetTLSAddr`). [`tls_address`] asks
//! libthread_db (`native::thread_db`), as gdbserver does; with the default
//! search path and no usable libthread_db it falls back to the built-in
//! reader below.
//!
//! The built-in reader computes the address the way glibc's libthread_db
//! does (`td_thr_tls_get_addr`), without loading libthread_db: glibc
//! describes the layouts it needs in read-only
//! `_thread_db_*` descriptors (nptl_db/structs.def: three `u32`s, the
//! field's size in bits, its element count and its byte offset), which
//! are read from the inferior's libc file.
//!
//! x86-64 (TLS variant II): the thread pointer (`fs_base`) is the
//! thread's `struct pthread`; its `dtvp` field points at the dtv, whose
//! entry `modid` holds the module's TLS block. `modid` is the module's
//! `link_map.l_tls_modid`. An entry of `-1` is a block not allocated yet
//! (a dlopen'ed module the thread has not touched).

use object::Object;
use object::ObjectSection;
use object::ObjectSymbol;

use super::procfs;
use super::thread_db;
use crate::target::Pid;
use crate::target::Target;
use crate::target::Tid;

/// glibc's `TLS_DTV_UNALLOCATED`.
const UNALLOCATED: u64 = u64::MAX;

/// Offsets read from the `_thread_db_*` descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsLayout {
    /// `struct link_map.l_tls_modid`.
    pub modid: u64,
    /// `struct pthread.dtvp` (from the thread pointer).
    pub dtvp: u64,
    /// Size of one dtv entry (`dtv_t`).
    pub dtv_entry: u64,
    /// `dtv_t.pointer.val`.
    pub val: u64,
}

/// Read the descriptors from the ELF file at `path`.
pub fn layout_from_file(path: &str) -> Result<TlsLayout, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{path}: {e}"))?;
    let desc = |name: &str| -> Result<[u32; 3], String> {
        let sym = file
            .dynamic_symbols()
            .chain(file.symbols())
            .find(|s| s.name() == Ok(name))
            .ok_or_else(|| format!("{path} has no {name} (glibc without thread_db descriptors)"))?;
        let addr = sym.address();
        for sec in file.sections() {
            if (sec.address()..sec.address() + sec.size()).contains(&addr) {
                let d = sec.data().map_err(|e| format!("{path}: {e}"))?;
                let off = (addr - sec.address()) as usize;
                let b = d.get(off..off + 12).ok_or("descriptor past its section")?;
                let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                return Ok([w(0), w(4), w(8)]);
            }
        }
        Err(format!("{name} is in no section of {path}"))
    };
    let modid = desc("_thread_db_link_map_l_tls_modid")?;
    let dtvp = desc("_thread_db_pthread_dtvp")?;
    let dtv = desc("_thread_db_dtv_dtv")?;
    let val = desc("_thread_db_dtv_t_pointer_val")?;
    Ok(TlsLayout {
        modid: u64::from(modid[2]),
        dtvp: u64::from(dtvp[2]),
        dtv_entry: u64::from(dtv[0] / 8),
        val: u64::from(val[2]),
    })
}

/// The layout for process `pid`: from the libc (or, for old glibc,
/// libpthread) it has mapped, read through `/proc/PID/root` so a process
/// in another mount namespace is served too.
pub fn layout(pid: Pid) -> Result<TlsLayout, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    let mut names: Vec<String> = procfs::parse_maps(&maps)
        .into_iter()
        .filter_map(|m| m.name)
        .filter(|n| {
            let base = n.rsplit('/').next().unwrap_or("");
            base.starts_with("libc.so") || base.starts_with("libpthread.so")
        })
        .collect();
    names.dedup();
    let mut last = "the process maps no libc (a static program)".to_string();
    for n in names {
        match layout_from_file(&format!("/proc/{pid}/root{n}")) {
            Ok(l) => return Ok(l),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn read_u64(t: &mut dyn Target, addr: u64) -> Result<u64, String> {
    let b = t
        .read_memory(addr, 8)
        .map_err(|e| format!("reading {addr:#x}: {e}"))?;
    let a: [u8; 8] = b
        .get(..8)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| format!("short read at {addr:#x}"))?;
    Ok(u64::from_le_bytes(a))
}

/// Address of the thread-local variable at `offset` in the TLS block of
/// the module whose `struct link_map` is at `lm`, for thread `tid`.
pub fn address(
    t: &mut dyn Target,
    layout: &TlsLayout,
    tid: Tid,
    offset: u64,
    lm: u64,
) -> Result<u64, String> {
    let fs = t
        .registers()
        .iter()
        .find(|r| r.name == "fs_base")
        .map(|r| r.regnum)
        .ok_or("no fs_base register")?;
    let tp = t
        .read_register(tid, fs)
        .map_err(|e| format!("fs_base: {e}"))?;
    let tp = u64::from_le_bytes(
        tp.get(..8)
            .and_then(|s| s.try_into().ok())
            .ok_or("short fs_base")?,
    );
    if tp == 0 {
        return Err("the thread has no thread pointer yet".into());
    }
    let modid = read_u64(t, lm.wrapping_add(layout.modid))?;
    if modid == 0 {
        return Err("the module has no TLS block".into());
    }
    let dtv = read_u64(t, tp.wrapping_add(layout.dtvp))?;
    let entry = dtv.wrapping_add(modid.wrapping_mul(layout.dtv_entry));
    let block = read_u64(t, entry.wrapping_add(layout.val))?;
    if block == UNALLOCATED || block == 0 {
        return Err("TLS block not allocated yet".into());
    }
    Ok(block.wrapping_add(offset))
}

/// The address for `qGetTLSAddr`: from libthread_db found on the search
/// path in force (`native::thread_db`), as gdbserver. With the default
/// path (`$sdir:$pdir`) and no libthread_db there that accepts the process
/// (a container without one, a libc of another version), the built-in
/// reader above computes it instead; with a path a client set, that is an
/// error, as gdbserver's "no libthread_db" is.
pub fn tls_address(
    t: &mut dyn Target,
    pid: Pid,
    tid: Tid,
    offset: u64,
    lm: u64,
) -> Result<u64, String> {
    let path = thread_db::search_path();
    match thread_db::tls_address(t, pid, tid, offset, lm, &path) {
        Ok(a) => Ok(a),
        Err(thread_db::ThreadDbError::NoLibrary(why)) if path == thread_db::DEFAULT_SEARCH_PATH => {
            tracing::debug!(target: "native", pid, "qGetTLSAddr: {why}; built-in reader");
            builtin_tls_address(t, pid, tid, offset, lm)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Layout and address in one call, for a process of pid `pid`, without
/// libthread_db.
pub fn builtin_tls_address(
    t: &mut dyn Target,
    pid: Pid,
    tid: Tid,
    offset: u64,
    lm: u64,
) -> Result<u64, String> {
    let l = layout(pid)?;
    address(t, &l, tid, offset, lm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test process's own libc describes the layout (glibc ≥ 2.34
    /// keeps the descriptors in libc.so.6).
    #[test]
    fn own_libc_layout() {
        let l = layout(std::process::id() as Pid).expect("layout");
        assert_eq!(l.dtv_entry, 16, "{l:?}");
        assert_eq!(l.dtvp, 8, "{l:?}");
        assert!(l.modid > 0, "{l:?}");
    }
}
