//! Packets that gdb sends for gdbserver parity, sent raw to a live gdbmux
//! (their gdb-level tests are in `gdbserver_compat.rs`): `QCatchSyscalls`,
//! `qGetTLSAddr` and `R`; the launch settings, checked in the launched
//! process's `/proc` entry; lldb's queries and the fixed-answer packets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gpu_support;
mod harden_support;

use harden_support::*;

fn spin_server(extra: &[&str]) -> Gdbmux {
    harden_support::spin_server(extra).0
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

/// The pid in a `qC` reply (`QCp<pid>.<tid>`).
fn qc_pid(c: &mut RspClient) -> i32 {
    let qc = c.request_str("qC").unwrap();
    i32::from_str_radix(
        qc.trim_start_matches("QC")
            .split('.')
            .next()
            .unwrap()
            .trim_start_matches('p'),
        16,
    )
    .unwrap()
}

/// The launch settings shape the next `vRun`: the environment
/// (`QEnvironmentHexEncoded`, `QEnvironmentUnset`, `QEnvironmentReset`),
/// the working directory (`QSetWorkingDir`), address randomization
/// (`QDisableRandomization`) and a direct exec (`QStartupWithShell:0`),
/// each checked in the new process's `/proc` entry.
#[test]
fn launch_settings_shape_the_next_vrun() {
    let g = spin_server(&["--multi"]);
    let mut c = g.connect();
    c.request_str("qSupported:multiprocess+;swbreak+;vContSupported+")
        .unwrap();
    assert_eq!(c.request_str("!").unwrap(), "OK");
    let spin = helper("spin");
    let dir = std::env::temp_dir().canonicalize().unwrap();
    for p in [
        format!("QEnvironmentHexEncoded:{}", hex(b"GDBMUX_SET=1")),
        format!("QEnvironmentHexEncoded:{}", hex(b"GDBMUX_GONE=2")),
        format!("QEnvironmentUnset:{}", hex(b"GDBMUX_GONE")),
        format!("QSetWorkingDir:{}", hex(dir.to_str().unwrap().as_bytes())),
        "QDisableRandomization:1".to_string(),
        "QStartupWithShell:0".to_string(),
    ] {
        assert_eq!(c.request_str(&p).unwrap(), "OK", "{p}");
    }
    let run = |c: &mut RspClient| {
        let stop = c
            .request_str(&format!("vRun;{}", hex(spin.to_str().unwrap().as_bytes())))
            .unwrap();
        assert!(stop.starts_with('T'), "vRun: {stop}");
        qc_pid(c)
    };
    let pid = run(&mut c);
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
    assert!(vars.contains(&&b"GDBMUX_SET=1"[..]), "environment set");
    assert!(
        !vars.iter().any(|v| v.starts_with(b"GDBMUX_GONE=")),
        "environment unset"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        dir,
        "working directory"
    );
    let persona = std::fs::read_to_string(format!("/proc/{pid}/personality")).unwrap();
    let persona = u64::from_str_radix(persona.trim(), 16).unwrap();
    assert_ne!(
        persona & libc::ADDR_NO_RANDOMIZE as u64,
        0,
        "randomization off"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(),
        spin.canonicalize().unwrap(),
        "the program itself, no shell"
    );
    assert_eq!(c.request_str(&format!("vKill;{pid:x}")).unwrap(), "OK");

    // Reset: the next launch has the server's own environment again.
    assert_eq!(c.request_str("QEnvironmentReset").unwrap(), "OK");
    let pid = run(&mut c);
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(
        !environ
            .split(|b| *b == 0)
            .any(|v| v.starts_with(b"GDBMUX_SET=")),
        "environment reset"
    );
    assert_eq!(c.request_str(&format!("vKill;{pid:x}")).unwrap(), "OK");
}

/// lldb's queries and the packets gdbmux answers with a fixed reply, as
/// lldb-server and gdbserver answer them: the version, `qEcho`, the working
/// directory of the process (its `/proc` entry), no tracing, no shlib info
/// address, no structured data plugins, four x86 debug registers, and the
/// settings acknowledged.
#[test]
fn lldb_queries_and_fixed_answers() {
    let g = spin_server(&[]);
    let mut c = g.connect();
    let pid = inferior_pid(&g);
    let v = c.request_str("qGDBServerVersion").unwrap();
    assert_eq!(
        v,
        format!("name:gdbmux;version:{};", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(c.request_str("qEcho:12345").unwrap(), "qEcho:12345");
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(
        c.request_str("qGetWorkingDir").unwrap(),
        hex(cwd.to_str().unwrap().as_bytes()),
        "the process's working directory"
    );
    let trace = c.request_str("jLLDBTraceSupported").unwrap();
    assert!(
        trace.starts_with('E') && trace.contains("not supported"),
        "{trace}"
    );
    assert_eq!(c.request_str("qOffsets").unwrap(), "", "no relocation");
    assert_eq!(c.request_str("qShlibInfoAddr").unwrap(), "");
    assert_eq!(c.request_str("qStructuredDataPlugins").unwrap(), "[]");
    assert_eq!(c.request_str("jThreadExtendedInfo:").unwrap(), "");
    assert_eq!(c.request_str("qWatchpointSupportInfo:").unwrap(), "num:4;");
    assert_eq!(c.request_str("qSymbol::").unwrap(), "OK");
    assert_eq!(c.request_str("QProgramSignals:e;1f").unwrap(), "OK");
    assert_eq!(c.request_str("QSetDetachOnError:1").unwrap(), "OK");
    // The session still answers with the same stop.
    assert!(c.request_str("?").unwrap().starts_with('T'));
}
