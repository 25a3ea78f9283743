//! The fault description lldb-server gives a crash signal's stop.
//!
//! lldb-server (`NativeThreadLinux::SetStoppedBySignal`) describes a stop
//! by SIGSEGV, SIGBUS, SIGFPE or SIGILL from the thread's siginfo, with
//! the signal-code table of lldb's `LinuxSignals.cpp` and the format of
//! `UnixSignals::GetSignalDescription`, prefixed with `signal ` on the
//! wire, e.g. `signal SIGSEGV: address not mapped to object (fault
//! address=0x0)`. The stop reply carries it hex-encoded in
//! `description:` (and jThreadsInfo in `"description"`); lldb prints it
//! as the stop reason.

/// How a code's description is completed.
#[derive(Clone, Copy)]
enum Extra {
    None,
    Address,
    Bounds,
}

/// (signal, si_code, description, extra) for the four crash signals.
const CODES: &[(i32, i32, &str, Extra)] = &[
    (libc::SIGILL, 1, "illegal opcode", Extra::None),
    (libc::SIGILL, 2, "illegal operand", Extra::None),
    (libc::SIGILL, 3, "illegal addressing mode", Extra::None),
    (libc::SIGILL, 4, "illegal trap", Extra::None),
    (libc::SIGILL, 5, "privileged opcode", Extra::None),
    (libc::SIGILL, 6, "privileged register", Extra::None),
    (libc::SIGILL, 7, "coprocessor error", Extra::None),
    (libc::SIGILL, 8, "internal stack error", Extra::None),
    (libc::SIGBUS, 1, "illegal alignment", Extra::None),
    (libc::SIGBUS, 2, "illegal address", Extra::None),
    (libc::SIGBUS, 3, "hardware error", Extra::None),
    (libc::SIGFPE, 1, "integer divide by zero", Extra::None),
    (libc::SIGFPE, 2, "integer overflow", Extra::None),
    (
        libc::SIGFPE,
        3,
        "floating point divide by zero",
        Extra::None,
    ),
    (libc::SIGFPE, 4, "floating point overflow", Extra::None),
    (libc::SIGFPE, 5, "floating point underflow", Extra::None),
    (
        libc::SIGFPE,
        6,
        "floating point inexact result",
        Extra::None,
    ),
    (
        libc::SIGFPE,
        7,
        "floating point invalid operation",
        Extra::None,
    ),
    (libc::SIGFPE, 8, "subscript out of range", Extra::None),
    (
        libc::SIGSEGV,
        1,
        "address not mapped to object",
        Extra::Address,
    ),
    (
        libc::SIGSEGV,
        2,
        "invalid permissions for mapped object",
        Extra::Address,
    ),
    (
        libc::SIGSEGV,
        3,
        "failed address bounds checks",
        Extra::Bounds,
    ),
    (libc::SIGSEGV, 8, "async tag check fault", Extra::None),
    (libc::SIGSEGV, 9, "sync tag check fault", Extra::Address),
    (libc::SIGSEGV, 10, "control protection fault", Extra::None),
    (libc::SIGSEGV, 0x80, "invalid address", Extra::Address),
];

fn u64_at(info: &[u8; 128], off: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = info.get(off..off + 8) {
        b.copy_from_slice(s);
    }
    u64::from_ne_bytes(b)
}

fn i32_at(info: &[u8; 128], off: usize) -> i32 {
    let mut b = [0u8; 4];
    if let Some(s) = info.get(off..off + 4) {
        b.copy_from_slice(s);
    }
    i32::from_ne_bytes(b)
}

/// lldb-server's description of a stop by the signal in `info` (a raw
/// x86-64 `siginfo_t`: si_signo at 0, si_code at 8, si_addr at 16, the
/// bounds at 32 and 40); `None` for a signal it gives none.
pub fn lldb_description(info: &[u8; 128]) -> Option<String> {
    let signo = i32_at(info, 0);
    let code = i32_at(info, 8);
    let name = match signo {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => return None,
    };
    let mut s = format!("signal {name}");
    if let Some((_, _, desc, extra)) = CODES.iter().find(|(s, c, _, _)| *s == signo && *c == code) {
        s.push_str(": ");
        let addr = u64_at(info, 16);
        match extra {
            Extra::None => s.push_str(desc),
            Extra::Address => {
                s.push_str(desc);
                s.push_str(&format!(" (fault address={addr:#x})"));
            }
            Extra::Bounds => {
                let (lower, upper) = (u64_at(info, 32), u64_at(info, 40));
                let which = if addr < lower { "lower" } else { "upper" };
                s.push_str(&format!(
                    "{which} bound violation (fault address={addr:#x}, lower bound={lower:#x}, upper bound={upper:#x})"
                ));
            }
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(signo: i32, code: i32, addr: u64) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&signo.to_ne_bytes());
        b[8..12].copy_from_slice(&code.to_ne_bytes());
        b[16..24].copy_from_slice(&addr.to_ne_bytes());
        b
    }

    #[test]
    fn lldb_servers_strings() {
        assert_eq!(
            lldb_description(&info(libc::SIGSEGV, 1, 0)).unwrap(),
            "signal SIGSEGV: address not mapped to object (fault address=0x0)"
        );
        assert_eq!(
            lldb_description(&info(libc::SIGSEGV, 2, 0x5555_0000)).unwrap(),
            "signal SIGSEGV: invalid permissions for mapped object (fault address=0x55550000)"
        );
        assert_eq!(
            lldb_description(&info(libc::SIGFPE, 1, 0x401000)).unwrap(),
            "signal SIGFPE: integer divide by zero"
        );
        // kill -SEGV: SI_USER is no fault code.
        assert_eq!(
            lldb_description(&info(libc::SIGSEGV, 0, 0)).unwrap(),
            "signal SIGSEGV"
        );
        assert_eq!(lldb_description(&info(libc::SIGUSR1, 0, 0)), None);
    }
}
