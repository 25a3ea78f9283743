//! Error codes and tiers, in one place.
//!
//! - [`ErrorCode`]: every `Exx` code gdbmux sends, by name. gdb ignores the
//!   number; lldb shows it and, for a few packets, expects lldb-server's.
//!   [`ErrorCode::wire`] is the only place a name becomes a number, and
//!   [`crate::target::TargetError::code`] the only place a target error
//!   becomes a name.
//! - Tiers: a *request* error answers one packet with `Exx` and the session
//!   carries on; a *session* error closes one connection (its processes are
//!   killed or detached by the disconnect policy); a *fatal* error ends the
//!   server ([`crate::server::ServerError`], or a panic in the loop), and then every process is
//!   **detached and left stopped** ([`crate::target::Target::abandon`]), never
//!   killed, so a person can attach another debugger and lose nothing.

/// A named `Exx` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// `EPERM`: not permitted (attach refused by the kernel).
    NotPermitted,
    /// `ENOENT`: no such file (vRun program, working directory).
    NoSuchFile,
    /// `ESRCH`: no such process or thread, or none selected.
    NoSuchProcess,
    /// `EIO`: the target failed in a way it could not name.
    Io,
    /// `E2BIG`: a packet over the size limit.
    TooBig,
    /// `EFAULT`: a memory access failed.
    Fault,
    /// `EBUSY`: the target is running.
    Busy,
    /// `EINVAL`: a malformed or out-of-range request.
    Invalid,
    /// `ENOSPC`: no free hardware debug register.
    NoSpace,
    /// `ENOSYS`: the target does not implement the operation.
    NotImplemented,
    /// `ENOTSUP`: a protocol mode gdbmux does not offer here (non-stop on the GPU connection).
    NotSupported,
    /// Another errno from a system call, passed through.
    Errno(nix::errno::Errno),
    /// The connection is refused by the accept policy (the first packet
    /// of a refused connection is answered with it, then it is closed).
    ConnectionRefused,
    /// `qProcessInfo` without a process: lldb-server answers `E44` (68).
    LldbNoProcessInfo,
    /// `qRegisterInfo` past the last register: lldb-server answers `E45`
    /// (69), and lldb stops iterating at it.
    LldbNoRegisterInfo,
    /// An accelerator-plugin request failed: lldb-server 23.1 answers
    /// `Eff` (research/lldb-accelerator.md §1.3).
    Accelerator,
}

impl ErrorCode {
    /// The number on the wire.
    pub fn wire(self) -> u8 {
        use nix::errno::Errno;
        let errno = |e: Errno| (e as i32).clamp(1, 255) as u8;
        match self {
            ErrorCode::NotPermitted => errno(Errno::EPERM),
            ErrorCode::NoSuchFile => errno(Errno::ENOENT),
            ErrorCode::NoSuchProcess => errno(Errno::ESRCH),
            ErrorCode::Io => errno(Errno::EIO),
            ErrorCode::TooBig => errno(Errno::E2BIG),
            ErrorCode::Fault => errno(Errno::EFAULT),
            ErrorCode::Busy => errno(Errno::EBUSY),
            ErrorCode::Invalid => errno(Errno::EINVAL),
            ErrorCode::NoSpace => errno(Errno::ENOSPC),
            ErrorCode::NotImplemented => errno(Errno::ENOSYS),
            ErrorCode::NotSupported => errno(Errno::ENOTSUP),
            ErrorCode::Errno(e) => errno(e),
            ErrorCode::ConnectionRefused => 0x01,
            ErrorCode::LldbNoProcessInfo => 0x44,
            ErrorCode::LldbNoRegisterInfo => 0x45,
            ErrorCode::Accelerator => 0xff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes clients see are the ones documented above.
    #[test]
    fn wire_numbers() {
        assert_eq!(ErrorCode::NoSuchProcess.wire(), 3);
        assert_eq!(ErrorCode::Invalid.wire(), 22);
        assert_eq!(ErrorCode::LldbNoProcessInfo.wire(), 68);
        assert_eq!(ErrorCode::LldbNoRegisterInfo.wire(), 69);
        assert_eq!(ErrorCode::Accelerator.wire(), 0xff);
        assert_eq!(ErrorCode::ConnectionRefused.wire(), 1);
        assert_eq!(ErrorCode::Errno(nix::errno::Errno::EACCES).wire(), 13);
    }
}
