//! `/proc` readers: maps, status, task lists, thread names and cores,
//! process lookup by name.

use crate::target::MemoryRegion;
use crate::target::Pid;
use crate::target::ProcessInfo;

use super::errors::NativeError;

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsEntry {
    /// Start.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
    /// r.
    pub read: bool,
    /// w.
    pub write: bool,
    /// x.
    pub exec: bool,
    /// Path or pseudo name.
    pub name: Option<String>,
}

/// Parse `/proc/PID/maps` text.
pub fn parse_maps(text: &str) -> Vec<MapsEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.splitn(6, ' ');
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        let p = perms.as_bytes();
        let name = it
            .nth(3)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from);
        out.push(MapsEntry {
            start,
            end,
            read: p.first() == Some(&b'r'),
            write: p.get(1) == Some(&b'w'),
            exec: p.get(2) == Some(&b'x'),
            name,
        });
    }
    out
}

/// The region containing `addr`, or the unmapped gap around it (from the
/// end of the previous mapping to the start of the next one).
pub fn region_for(maps: &[MapsEntry], addr: u64) -> MemoryRegion {
    let mut gap_start = 0u64;
    for m in maps {
        if addr < m.start {
            return MemoryRegion {
                start: gap_start,
                size: m.start - gap_start,
                read: false,
                write: false,
                exec: false,
                name: None,
            };
        }
        if addr < m.end {
            return MemoryRegion {
                start: m.start,
                size: m.end - m.start,
                read: m.read,
                write: m.write,
                exec: m.exec,
                name: m.name.clone(),
            };
        }
        gap_start = m.end;
    }
    MemoryRegion {
        start: gap_start,
        size: u64::MAX - gap_start,
        read: false,
        write: false,
        exec: false,
        name: None,
    }
}

/// Thread ids in `/proc/PID/task`, sorted (the leader first).
pub fn task_ids(pid: Pid) -> std::io::Result<Vec<i32>> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable_by_key(|t| (*t != pid as i32, *t));
    Ok(v)
}

/// `/proc/PID/task/TID/comm`.
pub fn thread_name(pid: Pid, tid: u64) -> Option<String> {
    use std::io::Read as _;
    // `comm` is at most TASK_COMM_LEN (16) bytes with its newline: one
    // `read` into a stack buffer (open, read, close) instead of
    // `read_to_string`'s size query and read to EOF, which made five
    // system calls of every name of a 1000-thread stop.
    let mut f = std::fs::File::open(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    let mut buf = [0u8; 64];
    let n = f.read(&mut buf).ok()?;
    let name = buf.get(..n)?;
    let name = name.strip_suffix(b"\n").unwrap_or(name);
    Some(String::from_utf8_lossy(name).into_owned())
}

/// Fields of `/proc/PID/task/TID/stat` after the `(comm)`: index 0 is
/// field 3 (state).
fn stat_fields(pid: Pid, tid: u64) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(String::from).collect())
}

/// Field 39 (`processor`) of the thread's stat.
pub fn thread_core(pid: Pid, tid: u64) -> Option<u32> {
    stat_fields(pid, tid)?.get(39 - 3)?.parse().ok()
}

/// Whether the thread is a zombie (state `Z`).
pub fn is_zombie(pid: Pid, tid: u64) -> bool {
    stat_fields(pid, tid)
        .and_then(|f| f.first().cloned())
        .map(|s| s == "Z" || s == "X")
        .unwrap_or(true)
}

/// Whether every thread of a process is gone or a zombie (state `Z`/`X` in
/// `/proc/PID/task/TID/stat`). A live traced process has all its threads
/// in tracing stop, so this only holds after it was killed.
pub fn all_threads_dead(pid: Pid, threads: &[u64]) -> bool {
    if threads.is_empty() {
        return false;
    }
    // Cheap first: one short read per thread, stopping at the first live
    // one (the leader, first in the list, is alive in every normal case).
    threads.iter().all(|tid| thread_dead(pid, *tid))
}

/// Whether `/proc/PID/task/TID/stat` says zombie/dead (or is gone). One
/// open + one read of the first 256 bytes (the state follows the comm).
fn thread_dead(pid: Pid, tid: u64) -> bool {
    use std::io::Read as _;
    let Ok(mut f) = std::fs::File::open(format!("/proc/{pid}/task/{tid}/stat")) else {
        return true;
    };
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).unwrap_or(0);
    let stat = buf.get(..n).unwrap_or_default();
    let state = stat
        .iter()
        .rposition(|b| *b == b')')
        .and_then(|i| stat.get(i + 2))
        .copied();
    matches!(state, Some(b'Z' | b'X'))
}

/// `/proc/PID/cwd`.
pub fn working_dir(pid: Pid) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// `/proc/PID/exe`.
pub fn exe(pid: Pid) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// `qProcessInfo` data from `/proc/PID/status`.
pub fn process_info(pid: Pid) -> Option<ProcessInfo> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |k: &str| -> Vec<u32> {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let ppid = *field("PPid:").first()?;
    let uid = field("Uid:");
    let gid = field("Gid:");
    Some(ProcessInfo {
        pid,
        ppid,
        uid: *uid.first()?,
        euid: *uid.get(1)?,
        gid: *gid.first()?,
        egid: *gid.get(1)?,
        exe: exe(pid),
    })
}

/// Find the one process called `name` (by `comm`, `argv[0]` or its base
/// name), for `--attach-name`.
pub fn pid_by_name(name: &str) -> Result<Pid, NativeError> {
    let me = std::process::id();
    let mut found = Vec::new();
    let dir = std::fs::read_dir("/proc").map_err(|e| NativeError::Sys {
        what: "read /proc".into(),
        errno: nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
    })?;
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<Pid>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let comm = comm.trim_end_matches('\n');
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        let argv0 = String::from_utf8_lossy(argv0);
        let base = argv0.rsplit('/').next().unwrap_or_default();
        let comm_match = !comm.is_empty()
            && (comm == name || (name.len() > 15 && comm.len() == 15 && name.starts_with(comm)));
        if comm_match || (!argv0.is_empty() && (argv0 == name || base == name)) {
            found.push(pid);
        }
    }
    match found.len() {
        0 => Err(NativeError::NameNotFound(name.to_string())),
        1 => Ok(found[0]),
        _ => Err(NativeError::NameAmbiguous {
            name: name.to_string(),
            pids: found,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_gaps() {
        let text = "00400000-00401000 r-xp 00000000 08:01 123   /bin/x\n\
                    00600000-00601000 rw-p 00000000 00:00 0 \n\
                    7ffc0000-7ffd0000 rw-p 00000000 00:00 0      [stack]\n";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].name.as_deref(), Some("/bin/x"));
        assert!(maps[0].exec && !maps[0].write);
        assert_eq!(maps[1].name, None);
        assert_eq!(maps[2].name.as_deref(), Some("[stack]"));
        let r = region_for(&maps, 0x400800);
        assert_eq!((r.start, r.size, r.read), (0x400000, 0x1000, true));
        let gap = region_for(&maps, 0x500000);
        assert_eq!((gap.start, gap.size, gap.read), (0x401000, 0x1ff000, false));
        let low = region_for(&maps, 0x10);
        assert_eq!((low.start, low.size), (0, 0x400000));
        let high = region_for(&maps, 0x8000_0000);
        assert_eq!(high.start, 0x7ffd0000);
    }
}
