//! The launching thread's wait for its dispatch, with the runtime's one
//! direct system call.
//!
//! While a dispatch runs in the debugger's GPU library, the thread that
//! launched it blocks until the library's `DONE`. The `recvfrom` is issued
//! here rather than through libc's `recv`, so that this thread's innermost
//! frame is a function of the runtime, with a symbol and a source line:
//! gdb 13 reports a GPU stop on this thread (README, "Debugging the GPU"),
//! and a frame inside libc showed `recv.c: No such file or directory`.
//! gdbmux finds the thread by its blocked `recvfrom` on the runtime's
//! socket (`stub/src/gpu/launcher.rs`).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

use gpu_target::sim::rendezvous::Message;

/// Waits for the GPU library's reply to a dispatch (its `DONE`).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn wait_for_dispatch(s: &UnixStream) -> io::Result<Message> {
    /// x86-64 `recvfrom`.
    const SYS_RECVFROM: isize = 45;
    const EINTR: isize = 4;
    let fd = s.as_raw_fd() as isize;
    let mut b = [0u8; 16];
    let mut got = 0usize;
    while got < b.len() {
        let rest = &mut b[got..];
        let ret: isize;
        // SAFETY: recvfrom(fd, rest, len, 0, NULL, NULL) writes at most
        // `rest.len()` bytes into `rest`, which is live and exclusively
        // borrowed; the kernel clobbers only rcx and r11 (declared).
        unsafe {
            std::arch::asm!( // this thread launched a dispatch: wait for its end
                "syscall",
                inlateout("rax") SYS_RECVFROM => ret,
                in("rdi") fd,
                in("rsi") rest.as_mut_ptr(),
                in("rdx") rest.len(),
                in("r10") 0usize,
                in("r8") 0usize,
                in("r9") 0usize,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        match ret {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n if n > 0 => got += n as usize,
            e if -e == EINTR => continue,
            e => return Err(io::Error::from_raw_os_error(-e as i32)),
        }
    }
    Message::decode(&b).ok_or_else(|| io::Error::other("bad simgpu message"))
}

/// Waits for the GPU library's reply to a dispatch (its `DONE`).
#[cfg(not(target_arch = "x86_64"))]
pub fn wait_for_dispatch(s: &UnixStream) -> io::Result<Message> {
    let mut s = s;
    Message::read_from(&mut s)
}
