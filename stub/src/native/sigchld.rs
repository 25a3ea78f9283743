//! The process-wide SIGCHLD signalfd that tells the loop when traced
//! threads changed state.

use std::os::fd::AsRawFd;
use std::os::fd::RawFd;

use nix::sys::signal::SigSet;
use nix::sys::signal::Signal;
use nix::sys::signalfd::SfdFlags;
use nix::sys::signalfd::SignalFd;

use super::errors::NativeError;

/// Block SIGCHLD in the calling thread. Call once at program start, before
/// any thread is spawned, so every thread inherits the mask and the signal
/// stays pending for the signalfd instead of being discarded.
pub fn block_sigchld() -> Result<(), NativeError> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    set.thread_block()
        .map_err(|e| NativeError::sys("block SIGCHLD", e))
}

/// Non-blocking `signalfd(SIGCHLD)`. Register [`SigchldFd::as_raw_fd`] with
/// the loop; when readable, call [`SigchldFd::drain`] and then
/// `process_events` on every native target.
pub struct SigchldFd {
    fd: SignalFd,
}

impl SigchldFd {
    /// Create the fd (SIGCHLD must be blocked, see [`block_sigchld`]).
    pub fn new() -> Result<Self, NativeError> {
        let mut set = SigSet::empty();
        set.add(Signal::SIGCHLD);
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| NativeError::sys("signalfd(SIGCHLD)", e))?;
        Ok(SigchldFd { fd })
    }

    /// Consume every queued SIGCHLD. Returns whether one may stand for a
    /// death (a child exited or was killed) rather than only a ptrace or
    /// job-control stop: `false` only when every siginfo says
    /// `CLD_TRAPPED`, `CLD_STOPPED` or `CLD_CONTINUED`. Callers use it to
    /// skip the check for a stopped tracee killed from outside after
    /// ordinary stops.
    ///
    /// Up to two SIGCHLDs can be queued (one process-wide from the kernel,
    /// one thread-directed from [`raise_sigchld`]); one `read` with room
    /// for several takes them all, and a short read means the fd is
    /// drained (the loop is edge-triggered, so it must be). The limit of
    /// the hint: a death whose SIGCHLD merged into a still-pending stop's
    /// is not flagged here; the next resume's `waitpid` finds it.
    pub fn drain(&self) -> bool {
        const INFO: usize = std::mem::size_of::<libc::signalfd_siginfo>();
        const SLOTS: usize = 4;
        let mut buf = [0u8; INFO * SLOTS];
        let mut maybe_death = false;
        let mut n_infos = 0usize;
        loop {
            let n = match nix::unistd::read(self.fd.as_raw_fd(), &mut buf) {
                Ok(n) => n,
                Err(nix::errno::Errno::EAGAIN) => 0,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    tracing::warn!(target: "ptrace", "reading the SIGCHLD signalfd: {e}");
                    return true;
                }
            };
            for info in buf.get(..n).unwrap_or_default().chunks_exact(INFO) {
                n_infos += 1;
                // struct signalfd_siginfo: u32 ssi_signo, i32 ssi_errno,
                // i32 ssi_code, u32 ssi_pid, ...
                let code = info
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map(i32::from_ne_bytes)
                    .unwrap_or(0);
                if !matches!(
                    code,
                    libc::CLD_TRAPPED | libc::CLD_STOPPED | libc::CLD_CONTINUED
                ) {
                    maybe_death = true;
                }
            }
            if n < buf.len() {
                break;
            }
        }
        tracing::trace!(target: "ptrace", n_infos, maybe_death, "SIGCHLD signalfd drained");
        // A wake-up with nothing queued explains nothing: stay careful.
        maybe_death || n_infos == 0
    }
}

impl AsRawFd for SigchldFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Make the SIGCHLD signalfd readable on purpose (a stored event is ready
/// to report without any kernel state change). SIGCHLD is blocked, so the
/// signal just stays pending for the signalfd.
pub(crate) fn raise_sigchld() {
    if let Err(e) = nix::sys::signal::raise(Signal::SIGCHLD) {
        tracing::warn!(target: "native", "raise(SIGCHLD): {e}");
    }
}
