//! The terminal launched programs write their stdout and stderr to.
//!
//! lldb-server (`GDBRemoteCommunicationServerLLGS::LaunchProcess`) gives a
//! program it launches a pseudo-terminal for its standard streams and
//! forwards what the program writes to the client as `O` packets while
//! it runs; before a stop or exit reply it first sends what is pending.
//! gdbmux does the same with one pseudo-terminal for the whole server:
//! every program it launches (command line, `vRun`, `A`) without a file
//! of its own for stdout/stderr gets the terminal's slave side as both.
//! The server reads the master side in its loop and routes each chunk
//! (see `server::output`): to an lldb client whose process runs, as `O`
//! packets; otherwise to gdbmux's own stdout, where a gdbserver's program
//! would have written it.
//!
//! The terminal is raw (no `\n` to `\r\n` translation), so the bytes
//! reach gdbmux's stdout unchanged; [`onlcr`] applies the translation a
//! default terminal (and so lldb-server's wire) has for `O` packets.

use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::fd::RawFd;

use super::NativeError;

/// One pseudo-terminal: the master read by the server, the slave given
/// to launched programs. The slave stays open in the server, so reading
/// the master never sees a hang-up when a program exits.
#[derive(Debug)]
pub struct OutputTerminal {
    master: OwnedFd,
    slave: OwnedFd,
}

impl OutputTerminal {
    /// Open a raw pseudo-terminal with a non-blocking, close-on-exec
    /// master.
    pub fn open() -> Result<Self, NativeError> {
        let pty = nix::pty::openpty(None, None).map_err(|e| NativeError::sys("openpty", e))?;
        let mut t = nix::sys::termios::tcgetattr(&pty.slave)
            .map_err(|e| NativeError::sys("tcgetattr", e))?;
        nix::sys::termios::cfmakeraw(&mut t);
        nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &t)
            .map_err(|e| NativeError::sys("tcsetattr", e))?;
        for fd in [&pty.master, &pty.slave] {
            nix::fcntl::fcntl(
                fd.as_raw_fd(),
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )
            .map_err(|e| NativeError::sys("fcntl", e))?;
        }
        nix::fcntl::fcntl(
            pty.master.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .map_err(|e| NativeError::sys("fcntl", e))?;
        Ok(OutputTerminal {
            master: pty.master,
            slave: pty.slave,
        })
    }

    /// The master side, for the poll registry.
    pub fn master_fd(&self) -> RawFd {
        self.master.as_raw_fd()
    }

    /// The slave side, duplicated onto a launched program's fds 1 and 2.
    pub fn slave_fd(&self) -> RawFd {
        self.slave.as_raw_fd()
    }

    /// Read what is pending, up to `buf.len()` bytes; 0 when nothing is.
    pub fn read(&self, buf: &mut [u8]) -> usize {
        match nix::unistd::read(self.master.as_raw_fd(), buf) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EIO) => 0,
            Err(e) => {
                tracing::warn!(target: "ptrace", "reading the program output terminal: {e}");
                0
            }
        }
    }

    /// Keep the terminal read after gdbmux exits, for programs that outlive
    /// it (detached, or left running): a child process takes the master
    /// side and copies what the programs write to gdbmux's stdout until no
    /// program holds the slave side any more (the read then fails), as a
    /// gdbserver's detached program goes on writing to the stdout it
    /// inherited. The child keeps only fds 0–2 and the master, so no
    /// listening socket or connection outlives gdbmux.
    pub fn relay_after_exit(&self) {
        let master = self.master.as_raw_fd();
        // SAFETY: fork has no memory-safety precondition; the child below
        // is restricted to async-signal-safe calls (the process may have
        // other threads).
        match unsafe { nix::unistd::fork() } {
            // SAFETY: in the child only async-signal-safe raw syscalls
            // (dup2, close_range, fcntl, read, write, _exit) on a stack buffer
            // whose bounds every read/write respects, and its own fds; it
            // never returns into Rust code.
            Ok(nix::unistd::ForkResult::Child) => unsafe {
                const FD: i32 = 3;
                if master != FD && libc::dup2(master, FD) < 0 {
                    libc::_exit(1);
                }
                libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
                let fl = libc::fcntl(FD, libc::F_GETFL);
                libc::fcntl(FD, libc::F_SETFL, fl & !libc::O_NONBLOCK);
                let mut buf = [0u8; 4096];
                loop {
                    let n = libc::read(FD, buf.as_mut_ptr().cast(), buf.len());
                    if n < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    if n <= 0 {
                        libc::_exit(0);
                    }
                    let mut off = 0isize;
                    while off < n {
                        let w = libc::write(1, buf.as_ptr().offset(off).cast(), (n - off) as usize);
                        if w < 0 && *libc::__errno_location() == libc::EINTR {
                            continue;
                        }
                        if w <= 0 {
                            libc::_exit(0);
                        }
                        off += w;
                    }
                }
            },
            Ok(nix::unistd::ForkResult::Parent { child }) => {
                tracing::debug!(target: "ptrace", relay = child.as_raw(), "program output relayed after exit");
            }
            Err(e) => {
                tracing::warn!(target: "ptrace", "cannot keep relaying program output after exit: {e}");
            }
        }
    }
}

/// Most program output held for a stopped lldb session (bytes).
pub const HELD_OUTPUT_LIMIT: usize = crate::bounds::HELD_PROGRAM_OUTPUT;

/// The terminal and what is held for a stopped lldb session, shared by
/// the server (which reads it when the terminal is readable) and the CPU
/// session (which reads it right before it sends a stop reply, so what
/// the program wrote before it stopped or exited goes out first).
#[derive(Debug)]
pub struct ProgramOutput {
    /// The terminal.
    pub term: OutputTerminal,
    held: Vec<u8>,
}

/// A [`ProgramOutput`] shared within the loop's thread.
pub type SharedProgramOutput = std::rc::Rc<std::cell::RefCell<ProgramOutput>>;

impl ProgramOutput {
    /// Over a freshly opened terminal.
    pub fn new(term: OutputTerminal) -> Self {
        ProgramOutput {
            term,
            held: Vec::new(),
        }
    }

    /// Whether output is held.
    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// Hold `chunk` (the oldest bytes beyond [`HELD_OUTPUT_LIMIT`] are
    /// dropped, with a warning).
    pub fn hold(&mut self, chunk: &[u8]) {
        self.held.extend_from_slice(chunk);
        if self.held.len() > HELD_OUTPUT_LIMIT {
            let drop = self.held.len() - HELD_OUTPUT_LIMIT;
            tracing::warn!(target: "mux", dropped = drop, "program output held for a stopped lldb session exceeds its limit: oldest bytes dropped");
            self.held.drain(..drop);
        }
    }

    /// What is held, then what the terminal has (at most `limit` bytes
    /// read from it). What is read is also copied to gdbmux's stdout at
    /// once, whoever it is forwarded to: gdbmux's terminal shows the
    /// program's output as it would show a gdbserver's program's.
    pub fn take_all(&mut self, limit: usize) -> Vec<u8> {
        let mut data = std::mem::take(&mut self.held);
        let mut buf = [0u8; 16 * 1024];
        let mut read = 0;
        while read < limit {
            let n = self.term.read(&mut buf);
            if n == 0 {
                break;
            }
            read += n;
            let chunk = buf.get(..n).unwrap_or_default();
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(chunk).and_then(|_| out.flush()) {
                tracing::debug!(target: "mux", "copying program output to stdout: {e}");
            }
            data.extend_from_slice(chunk);
        }
        data
    }
}

/// `\n` becomes `\r\n`, as a terminal's default `ONLCR` output mode
/// writes it (lldb-server's `O` packets carry the terminal's bytes).
pub fn onlcr(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 8);
    for &b in bytes {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onlcr_translates_newlines_only() {
        assert_eq!(onlcr(b"a\nb\r\n"), b"a\r\nb\r\r\n");
        assert_eq!(onlcr(b""), b"");
    }

    #[test]
    fn a_write_to_the_slave_is_read_raw_from_the_master() {
        let t = OutputTerminal::open().unwrap();
        nix::unistd::write(&t.slave, b"x\ny\n").unwrap();
        let mut buf = [0u8; 64];
        let n = t.read(&mut buf);
        assert_eq!(&buf[..n], b"x\ny\n");
        assert_eq!(t.read(&mut buf), 0);
    }
}
