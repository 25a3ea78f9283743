//! Packets that gdb sends for gdbserver parity, sent raw to a live gdbmux
//! (their gdb-level tests are in `gdbserver_compat.rs`): `QCatchSyscalls`,
//! `qGetTLSAddr` and `R`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use harden_support::*;

fn spin_server(extra: &[&str]) -> Gdbmux {
    let spin = helper("spin");
    let mut args = vec!["--no-gpu"];
    args.extend_from_slice(extra);
    args.push("127.0.0.1:0");
    args.push("--");
    let prog = spin.display().to_string();
    args.push(&prog);
    Gdbmux::start(&args)
}

/// `QCatchSyscalls:1;NR…` turns catching on, `:0` off; the next
/// continue stops at a system call entry (`syscall_entry:`) while on.
#[test]
fn catch_syscalls_on_and_off() {
    let g = spin_server(&[]);
    let mut c = g.connect();
    c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    assert_eq!(c.request_str("QCatchSyscalls:1").unwrap(), "OK");
    let stop = c.request_str("c").unwrap();
    assert!(
        stop.contains("syscall_entry:") || stop.contains("syscall_return:"),
        "no syscall stop: {stop}"
    );
    assert_eq!(c.request_str("QCatchSyscalls:0").unwrap(), "OK");
    assert!(c
        .request_str("QCatchSyscalls:1;zz")
        .unwrap()
        .starts_with('E'));
}

/// `qGetTLSAddr` with a link map that is not one of the process's is an
/// error, not a made-up address.
#[test]
fn get_tls_addr_of_an_unknown_module_is_an_error() {
    let g = spin_server(&[]);
    let mut c = g.connect();
    let pid = inferior_pid(&g);
    let r = c.request_str(&format!("qGetTLSAddr:{pid:x},0,1")).unwrap();
    assert!(r.starts_with('E'), "{r}");
}

/// `R` in extended mode starts the program again: a new process, stopped
/// at its first instruction, and no reply to `R` itself.
#[test]
fn restart_starts_a_new_process() {
    let g = spin_server(&["--multi"]);
    let mut c = g.connect();
    assert_eq!(c.request_str("!").unwrap(), "OK");
    let before = inferior_pid(&g);
    c.send_packet(b"R00").unwrap();
    let stop = c.request_str("?").unwrap();
    assert!(stop.starts_with('T'), "{stop}");
    let qc = c.request_str("qC").unwrap();
    let now = i32::from_str_radix(
        qc.trim_start_matches("QC")
            .split('.')
            .next()
            .unwrap()
            .trim_start_matches('p'),
        16,
    )
    .unwrap();
    assert_ne!(now, before, "R kept the old process");
    assert!(std::path::Path::new(&format!("/proc/{now}")).exists());
}
