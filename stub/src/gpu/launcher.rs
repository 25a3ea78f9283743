//! Which CPU thread launched the dispatch a wave belongs to, for gdb's
//! report of a GPU stop (README, "Debugging the GPU").
//!
//! amd-dbgapi names a dispatch's queue and packet but no host thread. The
//! thread that launched it is, while the wave runs, the one waiting for the
//! dispatch to finish inside the GPU runtime: blocked in a read of the
//! runtime's connection (the simulated runtime waits for its "done" message
//! in `recv` on a Unix socket) or in an ioctl on `/dev/kfd` (ROCr waits on the
//! dispatch's completion signal with `AMDKFD_IOC_WAIT_EVENTS`). That is what
//! this module looks for, in `/proc/PID/task/TID/syscall` (the blocked
//! system call and its arguments) and `/proc/PID/fd/FD`, read while the
//! threads still run (a stopped thread's syscall is no longer blocked).
//! Heuristic by nature: with several threads waiting so, the lowest thread
//! id wins; with none, the caller keeps its own choice.

use crate::target::Pid;

/// x86-64 system call numbers of a blocking wait on the runtime.
const READ: i64 = 0;
const IOCTL: i64 = 16;
const RECVFROM: i64 = 45;
const RECVMSG: i64 = 47;

/// What a thread is blocked in, from `/proc/PID/task/TID/syscall`
/// (`NR ARG0 … ARG5 SP PC`, or `running`, or `-1 SP PC`): the syscall
/// number and its first argument (the fd for the waits we look for).
pub fn parse_syscall(text: &str) -> Option<(i64, u64)> {
    let mut it = text.split_whitespace();
    let nr: i64 = it.next()?.parse().ok()?;
    let arg0 = it.next()?;
    let arg0 = u64::from_str_radix(arg0.trim_start_matches("0x"), 16).ok()?;
    Some((nr, arg0))
}

/// Whether a blocked syscall on an fd whose `/proc/PID/fd` link is `link`
/// is a wait on the GPU runtime.
pub fn is_runtime_wait(nr: i64, link: &str) -> bool {
    match nr {
        READ | RECVFROM | RECVMSG => link.starts_with("socket:"),
        IOCTL => link == "/dev/kfd",
        _ => false,
    }
}

/// The thread of `pid` waiting for a dispatch in the GPU runtime, if one
/// is found (see the module's comment).
pub fn launching_thread(pid: Pid) -> Option<Pid> {
    let mut tids: Vec<Pid> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    let found = tids.into_iter().find(|tid| {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")) else {
            return false;
        };
        let Some((nr, fd)) = parse_syscall(&text) else {
            return false;
        };
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .map(|l| is_runtime_wait(nr, &l.to_string_lossy()))
            .unwrap_or(false)
    });
    tracing::debug!(target: "mux", pid, thread = ?found, "thread waiting on the GPU runtime");
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_lines() {
        assert_eq!(
            parse_syscall("45 0x3 0x7ffc 0x10 0x0 0x0 0x0 0x7ffc 0x7f00\n"),
            Some((45, 3))
        );
        assert_eq!(parse_syscall("running\n"), None);
        assert_eq!(parse_syscall("-1 0x7ffc 0x7f00\n"), Some((-1, 0x7ffc)));
        assert!(is_runtime_wait(45, "socket:[1234]"));
        assert!(is_runtime_wait(16, "/dev/kfd"));
        assert!(!is_runtime_wait(202, "socket:[1]"));
        assert!(!is_runtime_wait(0, "/dev/null"));
    }
}
