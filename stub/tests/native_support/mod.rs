//! Shared helpers for the native target integration tests: fixture builds,
//! symbol lookup, event waiting with a timeout (poll on the SIGCHLD
//! signalfd, no sleeps), and serialisation of tests within one binary.
#![allow(dead_code)]

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

use stub::native::LinuxProcess;
use stub::native::SigchldFd;
use stub::stop::StopEvent;
use stub::target::ResumeAction;
use stub::target::ResumePlan;
use stub::target::Target;

/// Block SIGCHLD in the main thread before the test harness starts any
/// thread, so every thread inherits the mask and SIGCHLD always waits for
/// the signalfd (a thread with SIGCHLD unblocked would discard it).
extern "C" fn block_sigchld_early() {
    let _ = stub::native::block_sigchld();
}
#[used]
#[link_section = ".init_array"]
static BLOCK_SIGCHLD_EARLY: extern "C" fn() = block_sigchld_early;

/// Every test of a binary shares one process-wide SIGCHLD; run them one
/// at a time so one test's drain never eats another's notification.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const FIXTURES: &[&str] = &[
    "single",
    "threads",
    "spin",
    "sig",
    "forker",
    "execer",
    "held_signal",
    "removed_breakpoint",
    "overwritten_breakpoint",
];

/// Path of a fixture binary, built once per test binary with gcc.
pub fn fixture(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("native-fixtures");
        std::fs::create_dir_all(&out).unwrap();
        for f in FIXTURES {
            let dst = out.join(f);
            let tmp = out.join(format!("{f}.{}.tmp", std::process::id()));
            let st = Command::new("gcc")
                .args(["-g", "-O0", "-no-pie", "-pthread", "-o"])
                .arg(&tmp)
                .arg(src.join(format!("{f}.c")))
                .status()
                .expect("run gcc");
            assert!(st.success(), "gcc {f}.c failed");
            std::fs::rename(&tmp, &dst).unwrap();
        }
        out
    });
    assert!(FIXTURES.contains(&name), "unknown fixture {name}");
    dir.join(name)
}

/// Symbol table (`nm -S`): name -> (address, size).
pub fn symbols(name: &str) -> HashMap<String, (u64, u64)> {
    let out = Command::new("nm")
        .arg("-S")
        .arg(fixture(name))
        .output()
        .expect("run nm");
    let mut m = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            [addr, size, _kind, sym] => {
                m.insert(
                    sym.to_string(),
                    (
                        u64::from_str_radix(addr, 16).unwrap(),
                        u64::from_str_radix(size, 16).unwrap(),
                    ),
                );
            }
            [addr, _kind, sym] => {
                m.entry(sym.to_string())
                    .or_insert((u64::from_str_radix(addr, 16).unwrap(), 0));
            }
            _ => {}
        }
    }
    m
}

/// Address of a symbol in a fixture.
pub fn sym(fixture_name: &str, symbol: &str) -> u64 {
    symbols(fixture_name)
        .get(symbol)
        .unwrap_or_else(|| panic!("no symbol {symbol}"))
        .0
}

/// Wait for the next stop event, failing loudly after `timeout`.
pub fn wait_event_timeout(p: &mut dyn Target, fd: &SigchldFd, timeout: Duration) -> StopEvent {
    let deadline = Instant::now() + timeout;
    loop {
        fd.drain();
        if let Some(ev) = p.process_events().expect("process_events") {
            return ev;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "timed out waiting for a stop event");
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        assert!(
            r >= 0 || std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        );
    }
}

/// Wait up to 20 s for the next stop event.
pub fn wait_event(p: &mut dyn Target, fd: &SigchldFd) -> StopEvent {
    wait_event_timeout(p, fd, Duration::from_secs(20))
}

/// Resume every thread with `action`.
pub fn resume_all(p: &mut dyn Target, action: ResumeAction) {
    p.resume(&ResumePlan {
        threads: vec![],
        default: Some(action),
    })
    .expect("resume");
}

/// Continue everything and wait for the next event.
pub fn cont(p: &mut dyn Target, fd: &SigchldFd) -> StopEvent {
    resume_all(p, ResumeAction::Continue(None));
    wait_event(p, fd)
}

/// Launch a fixture stopped at exec.
pub fn launch(name: &str, args: &[&str]) -> (LinuxProcess, SigchldFd) {
    let fd = SigchldFd::new().expect("signalfd");
    let opts = stub::native::LaunchOptions::new(fixture(name), args);
    let (p, ev) = LinuxProcess::launch(&opts).expect("launch");
    match ev {
        StopEvent::Stopped { signal, tid, .. } => {
            assert_eq!(signal, libc::SIGTRAP);
            assert_eq!(tid, u64::from(p.pid()));
        }
        other => panic!("unexpected initial event {other:?}"),
    }
    (p, fd)
}

/// Read a little-endian u64 from memory.
pub fn read_u64(p: &mut dyn Target, addr: u64) -> u64 {
    let b = p.read_memory(addr, 8).expect("read memory");
    u64::from_le_bytes(b.try_into().unwrap())
}

/// Register number of a register by name.
pub fn regnum(p: &dyn Target, name: &str) -> u32 {
    p.registers()
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no register {name}"))
        .regnum
}

/// Read a 64-bit register by name.
pub fn reg(p: &mut dyn Target, tid: u64, name: &str) -> u64 {
    let n = regnum(p, name);
    let b = p.read_register(tid, n).expect("read register");
    let mut a = [0u8; 8];
    a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    u64::from_le_bytes(a)
}

/// State letter of a thread from /proc (t = tracing stop).
pub fn thread_state(pid: u32, tid: u64) -> char {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 2..].chars().next().unwrap()
}

/// The fatal tier's promise (`stub::error`): `pid`, our child, was detached
/// and left in a group stop (state `T`: stopped, not traced, not killed).
/// Waits for that stop through waitid(WSTOPPED) (the detach's SIGSTOP is
/// delivered at once), then kills and reaps the process.
pub fn assert_left_stopped_then_kill(pid: u32) {
    let child = nix::unistd::Pid::from_raw(pid as i32);
    let r = nix::sys::wait::waitid(
        nix::sys::wait::Id::Pid(child),
        nix::sys::wait::WaitPidFlag::WSTOPPED | nix::sys::wait::WaitPidFlag::WNOWAIT,
    )
    .expect("waitid: the process is alive");
    assert!(
        matches!(
            r,
            nix::sys::wait::WaitStatus::Stopped(_, nix::sys::signal::Signal::SIGSTOP)
        ),
        "{r:?}"
    );
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("alive");
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, after)| after.trim_start().chars().next());
    assert_eq!(state, Some('T'), "stopped, not traced, not killed");
    nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL).expect("clean up");
    let _ = nix::sys::wait::waitpid(child, None);
}
