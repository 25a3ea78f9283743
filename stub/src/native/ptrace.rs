//! The only place that issues raw `ptrace(2)`, `waitpid(2)` and `tgkill(2)`
//! calls. Every request is logged at trace level on the `ptrace` target.
//!
//! Wait statuses are decoded into [`WaitStatus`], which follows ptrace(2)
//! term for term (we do not use `nix::sys::wait` because its `Signal` type
//! cannot represent real-time signals, which a debugger must pass through).

use std::ffi::c_void;

use nix::errno::Errno;

/// Thread id as the kernel knows it.
pub type RawTid = libc::pid_t;

/// `PTRACE_EVENT_*` numbers we handle.
pub mod event {
    /// `PTRACE_EVENT_FORK`.
    pub const FORK: i32 = libc::PTRACE_EVENT_FORK;
    /// `PTRACE_EVENT_VFORK`.
    pub const VFORK: i32 = libc::PTRACE_EVENT_VFORK;
    /// `PTRACE_EVENT_CLONE`.
    pub const CLONE: i32 = libc::PTRACE_EVENT_CLONE;
    /// `PTRACE_EVENT_EXEC`.
    pub const EXEC: i32 = libc::PTRACE_EVENT_EXEC;
    /// `PTRACE_EVENT_VFORK_DONE`.
    pub const VFORK_DONE: i32 = libc::PTRACE_EVENT_VFORK_DONE;
}

/// A decoded `waitpid` status of one traced thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// The thread (or, for the leader, the process) exited with a code.
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
    /// Signal-delivery-stop (or group-stop, which without SEIZE looks the
    /// same) with this signal.
    Stopped(i32),
    /// `PTRACE_EVENT_*` stop.
    Event(i32),
    /// Syscall-stop (not used; kept for completeness).
    Syscall,
}

impl WaitStatus {
    /// Decode a raw status word.
    pub fn from_raw(status: libc::c_int) -> Option<WaitStatus> {
        if libc::WIFEXITED(status) {
            Some(WaitStatus::Exited(libc::WEXITSTATUS(status)))
        } else if libc::WIFSIGNALED(status) {
            Some(WaitStatus::Signaled(libc::WTERMSIG(status)))
        } else if libc::WIFSTOPPED(status) {
            let sig = libc::WSTOPSIG(status);
            let ev = (status >> 16) & 0xff;
            if ev != 0 {
                Some(WaitStatus::Event(ev))
            } else if sig == (libc::SIGTRAP | 0x80) {
                Some(WaitStatus::Syscall)
            } else {
                Some(WaitStatus::Stopped(sig))
            }
        } else {
            None
        }
    }
}

fn log_result<T: std::fmt::Debug>(what: &str, tid: RawTid, r: &Result<T, Errno>) {
    tracing::trace!(target: "ptrace", "{what}(tid={tid}) -> {r:?}");
}

/// Raw request with integer results (`PEEK*` use errno to signal errors).
fn raw(req: libc::c_uint, tid: RawTid, addr: usize, data: usize) -> Result<libc::c_long, Errno> {
    Errno::clear();
    // SAFETY: ptrace with integer/pointer arguments; callers pass pointers
    // to live buffers of the size the request expects (see each wrapper).
    let r = unsafe { libc::ptrace(req, tid, addr as *mut c_void, data as *mut c_void) };
    if r == -1 {
        let e = Errno::last();
        if e != Errno::UnknownErrno {
            return Err(e);
        }
    }
    Ok(r)
}

/// `PTRACE_TRACEME` (in the forked child; async-signal-safe).
pub fn traceme() -> Result<(), Errno> {
    // SAFETY: no pointers involved.
    let r = unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0usize, 0usize) };
    if r == -1 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

/// `PTRACE_ATTACH`.
pub fn attach(tid: RawTid) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_ATTACH, tid, 0, 0).map(drop);
    log_result("PTRACE_ATTACH", tid, &r);
    r
}

/// `PTRACE_SETOPTIONS`.
pub fn set_options(tid: RawTid, options: libc::c_int) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SETOPTIONS, tid, 0, options as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_SETOPTIONS(tid={tid}, {options:#x}) -> {r:?}");
    r
}

/// `PTRACE_CONT` with a signal to deliver (0 = none).
pub fn cont(tid: RawTid, sig: i32) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_CONT, tid, 0, sig as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_CONT(tid={tid}, sig={sig}) -> {r:?}");
    r
}

/// `PTRACE_SYSCALL`: continue to the next system-call entry or exit.
pub fn syscall(tid: RawTid, sig: i32) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SYSCALL, tid, 0, sig as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_SYSCALL(tid={tid}, sig={sig}) -> {r:?}");
    r
}

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3): whether a syscall-stop is an
/// entry (`PTRACE_SYSCALL_INFO_ENTRY` = 1) or an exit (2), and at entry
/// the number. Returns (op, number-at-entry).
pub fn syscall_info(tid: RawTid) -> Result<(u8, u64), Errno> {
    // struct ptrace_syscall_info: op u8 @0, arch u32 @4, ip @8, sp @16,
    // then entry.nr @24 (88 bytes in all).
    let mut buf = [0u8; 88];
    let r = raw(
        0x420e, // PTRACE_GET_SYSCALL_INFO
        tid,
        buf.len(),
        buf.as_mut_ptr() as usize,
    );
    tracing::trace!(target: "ptrace", "PTRACE_GET_SYSCALL_INFO(tid={tid}) -> {r:?}");
    r?;
    let mut nr = [0u8; 8];
    nr.copy_from_slice(&buf[24..32]);
    Ok((buf[0], u64::from_le_bytes(nr)))
}

/// `PTRACE_SINGLESTEP` with a signal to deliver (0 = none).
pub fn step(tid: RawTid, sig: i32) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SINGLESTEP, tid, 0, sig as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_SINGLESTEP(tid={tid}, sig={sig}) -> {r:?}");
    r
}

/// `PTRACE_DETACH` with a signal to deliver (0 = none).
pub fn detach(tid: RawTid, sig: i32) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_DETACH, tid, 0, sig as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_DETACH(tid={tid}, sig={sig}) -> {r:?}");
    r
}

/// `PTRACE_GETEVENTMSG`.
pub fn event_msg(tid: RawTid) -> Result<u64, Errno> {
    let mut msg: libc::c_ulong = 0;
    let r = raw(
        libc::PTRACE_GETEVENTMSG,
        tid,
        0,
        &mut msg as *mut _ as usize,
    )
    .map(|_| msg);
    log_result("PTRACE_GETEVENTMSG", tid, &r);
    r
}

/// `PTRACE_GETREGS`.
pub fn get_regs(tid: RawTid) -> Result<libc::user_regs_struct, Errno> {
    // SAFETY: plain-old-data struct of integers; all-zero is valid.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    let r = raw(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize).map(|_| regs);
    tracing::trace!(target: "ptrace", "PTRACE_GETREGS(tid={tid}) -> {:?}", r.as_ref().map(|r| r.rip));
    r
}

/// `PTRACE_SETREGS`.
pub fn set_regs(tid: RawTid, regs: &libc::user_regs_struct) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SETREGS, tid, 0, regs as *const _ as usize).map(drop);
    log_result("PTRACE_SETREGS", tid, &r);
    r
}

/// `PTRACE_GETFPREGS` (the 512-byte FXSAVE area).
pub fn get_fpregs(tid: RawTid) -> Result<[u8; 512], Errno> {
    let mut buf = [0u8; 512];
    let r = raw(libc::PTRACE_GETFPREGS, tid, 0, buf.as_mut_ptr() as usize).map(|_| buf);
    log_result("PTRACE_GETFPREGS", tid, &r.map(drop));
    r
}

/// `PTRACE_SETFPREGS`.
pub fn set_fpregs(tid: RawTid, buf: &[u8; 512]) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SETFPREGS, tid, 0, buf.as_ptr() as usize).map(drop);
    log_result("PTRACE_SETFPREGS", tid, &r);
    r
}

/// `NT_X86_XSTATE` note type for `PTRACE_GETREGSET`.
pub const NT_X86_XSTATE: usize = 0x202;

/// `PTRACE_GETREGSET`: fills `buf`, returns the length the kernel wrote.
pub fn get_regset(tid: RawTid, note: usize, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut c_void,
        iov_len: buf.len(),
    };
    let r = raw(
        libc::PTRACE_GETREGSET,
        tid,
        note,
        &mut iov as *mut _ as usize,
    )
    .map(|_| iov.iov_len);
    tracing::trace!(target: "ptrace", "PTRACE_GETREGSET(tid={tid}, note={note:#x}) -> {r:?}");
    r
}

/// `PTRACE_SETREGSET`.
pub fn set_regset(tid: RawTid, note: usize, buf: &[u8]) -> Result<(), Errno> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut c_void,
        iov_len: buf.len(),
    };
    let r = raw(
        libc::PTRACE_SETREGSET,
        tid,
        note,
        &mut iov as *mut _ as usize,
    )
    .map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_SETREGSET(tid={tid}, note={note:#x}) -> {r:?}");
    r
}

/// `PTRACE_PEEKUSER` at a byte offset in `struct user`.
pub fn peek_user(tid: RawTid, offset: usize) -> Result<u64, Errno> {
    let r = raw(libc::PTRACE_PEEKUSER, tid, offset, 0).map(|v| v as u64);
    tracing::trace!(target: "ptrace", "PTRACE_PEEKUSER(tid={tid}, off={offset}) -> {r:x?}");
    r
}

/// `PTRACE_POKEUSER` at a byte offset in `struct user`.
pub fn poke_user(tid: RawTid, offset: usize, value: u64) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_POKEUSER, tid, offset, value as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_POKEUSER(tid={tid}, off={offset}, {value:#x}) -> {r:?}");
    r
}

/// `PTRACE_GETSIGINFO` as the raw 128-byte `siginfo_t`.
pub fn get_siginfo(tid: RawTid) -> Result<[u8; 128], Errno> {
    let mut buf = [0u8; 128];
    let r = raw(libc::PTRACE_GETSIGINFO, tid, 0, buf.as_mut_ptr() as usize).map(|_| buf);
    tracing::trace!(target: "ptrace", "PTRACE_GETSIGINFO(tid={tid}) -> {:?}",
        r.as_ref().map(|b| (i32::from_ne_bytes([b[0], b[1], b[2], b[3]]), i32::from_ne_bytes([b[8], b[9], b[10], b[11]]))));
    r
}

/// `PTRACE_SETSIGINFO` from a raw 128-byte `siginfo_t`.
pub fn set_siginfo(tid: RawTid, buf: &[u8; 128]) -> Result<(), Errno> {
    let r = raw(libc::PTRACE_SETSIGINFO, tid, 0, buf.as_ptr() as usize).map(drop);
    tracing::trace!(target: "ptrace", "PTRACE_SETSIGINFO(tid={tid}) -> {r:?}");
    r
}

/// `si_signo` and `si_code` of a raw siginfo.
pub fn siginfo_signo_code(buf: &[u8; 128]) -> (i32, i32) {
    (
        i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]),
        i32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]),
    )
}

/// `waitpid(tid, flags | __WALL)`. `Ok(None)` when `WNOHANG` found nothing.
/// Which child (process or thread, `__WALL`) has a wait status now,
/// without reaping it (`waitid(P_ALL, WNOHANG | WNOWAIT)`): `Ok(None)` when
/// none has. Lets a target reap only the threads that have news instead of
/// a `waitpid` per thread.
pub fn peek_any() -> Result<Option<RawTid>, Errno> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value of the plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid out-pointer for waitid.
        let r = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WSTOPPED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
            )
        };
        if r == -1 {
            let e = Errno::last();
            if e == Errno::EINTR {
                continue;
            }
            return Err(e);
        }
        // SAFETY: waitid filled `info` (si_pid is 0 when no child had a status).
        let pid = unsafe { info.si_pid() };
        return Ok((pid != 0).then_some(pid as RawTid));
    }
}

pub fn wait(tid: RawTid, nohang: bool) -> Result<Option<WaitStatus>, Errno> {
    let mut flags = libc::__WALL;
    if nohang {
        flags |= libc::WNOHANG;
    }
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(tid, &mut status, flags) };
        if r == -1 {
            let e = Errno::last();
            if e == Errno::EINTR {
                continue;
            }
            tracing::trace!(target: "ptrace", "waitpid({tid}) -> {e}");
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        let st = WaitStatus::from_raw(status);
        tracing::trace!(target: "ptrace", "waitpid({tid}) -> {status:#x} {st:?}");
        return Ok(st);
    }
}

/// `tgkill(pid, tid, sig)`.
pub fn tgkill(pid: RawTid, tid: RawTid, sig: i32) -> Result<(), Errno> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
    let r = if r == -1 { Err(Errno::last()) } else { Ok(()) };
    tracing::trace!(target: "ptrace", "tgkill({pid}, {tid}, {sig}) -> {r:?}");
    r
}

/// `kill(pid, sig)`.
pub fn kill(pid: RawTid, sig: i32) -> Result<(), Errno> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::kill(pid, sig) };
    let r = if r == -1 { Err(Errno::last()) } else { Ok(()) };
    tracing::trace!(target: "ptrace", "kill({pid}, {sig}) -> {r:?}");
    r
}
