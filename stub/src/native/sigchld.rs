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

    /// Read every queued siginfo until `EAGAIN`.
    pub fn drain(&self) {
        let mut n = 0u32;
        while let Ok(Some(_)) = self.fd.read_signal() {
            n += 1;
        }
        tracing::trace!(target: "ptrace", "SIGCHLD signalfd drained ({n})");
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
