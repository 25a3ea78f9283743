//! Signal numbering: GDB's remote protocol numbers vs Linux numbers.
//!
//! gdb and gdbserver use GDB signal numbers (`include/gdb/signals.def`:
//! SIGUSR1 = 30). lldb uses the host's (Linux) numbers whenever the server
//! advertises `native-signals+`, and sends them even when it does not
//! (research/client-traces.md §0.2: lldb's `C0A` became SIGBUS on
//! gdbserver). The session picks the numbering once per connection.

/// (Linux signal, GDB signal) pairs for the classic signals.
const MAP: &[(i32, u8)] = &[
    (1, 1),   // HUP
    (2, 2),   // INT
    (3, 3),   // QUIT
    (4, 4),   // ILL
    (5, 5),   // TRAP
    (6, 6),   // ABRT
    (7, 10),  // BUS
    (8, 8),   // FPE
    (9, 9),   // KILL
    (10, 30), // USR1
    (11, 11), // SEGV
    (12, 31), // USR2
    (13, 13), // PIPE
    (14, 14), // ALRM
    (15, 15), // TERM
    (17, 20), // CHLD
    (18, 19), // CONT
    (19, 17), // STOP
    (20, 18), // TSTP
    (21, 21), // TTIN
    (22, 22), // TTOU
    (23, 16), // URG
    (24, 24), // XCPU
    (25, 25), // XFSZ
    (26, 26), // VTALRM
    (27, 27), // PROF
    (28, 28), // WINCH
    (29, 23), // IO/POLL
    (30, 32), // PWR
    (31, 12), // SYS
];

/// GDB's "unknown signal" number.
pub const GDB_SIGNAL_UNKNOWN: u8 = 143;

/// Linux → GDB numbering.
pub fn linux_to_gdb(sig: i32) -> u8 {
    if sig == 0 {
        return 0;
    }
    if let Some((_, g)) = MAP.iter().find(|(l, _)| *l == sig) {
        return *g;
    }
    match sig {
        // STKFLT has no GDB number. The real-time block is not contiguous
        // in gdb's numbering (gdb/include/gdb/signals.def: REALTIME_32 = 77,
        // REALTIME_33..63 = 45..75, REALTIME_64 = 78; gdb's
        // linux_gdb_signal_from_target maps SIGRTMAX to REALTIME_64).
        32 => 77,
        33..=63 => (sig - 33 + 45) as u8,
        64 => 78,
        _ => GDB_SIGNAL_UNKNOWN,
    }
}

/// GDB → Linux numbering. `None` for numbers Linux has no signal for.
pub fn gdb_to_linux(sig: u8) -> Option<i32> {
    if sig == 0 {
        return Some(0);
    }
    if let Some((l, _)) = MAP.iter().find(|(_, g)| *g == sig) {
        return Some(*l);
    }
    match sig {
        77 => Some(32),
        78 => Some(64),
        45..=75 => Some(i32::from(sig) - 45 + 33),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        assert_eq!(linux_to_gdb(10), 0x1e);
        assert_eq!(gdb_to_linux(0x1e), Some(10));
        assert_eq!(linux_to_gdb(7), 10);
        assert_eq!(linux_to_gdb(19), 17);
        for l in 1..=64 {
            if l == 16 {
                continue;
            }
            let g = linux_to_gdb(l);
            if g != GDB_SIGNAL_UNKNOWN {
                assert_eq!(gdb_to_linux(g), Some(l), "linux {l}");
            }
        }
        assert_eq!(gdb_to_linux(200), None);
    }
}
