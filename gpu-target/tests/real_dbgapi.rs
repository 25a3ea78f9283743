//! AMD's real amd-dbgapi libraries (0.76.0 and 0.77.0, built from AMD's
//! sources) loaded through the binding, on a machine with no GPU: the
//! library initializes, attaches to a process with its null driver, reports
//! 0 agents and answers architecture queries.
//!
//! The libraries live outside the repository, in `../shared/real-amd-dbgapi`
//! (or `$GDBMUX_REAL_DBGAPI_DIR`). When they are absent each test prints
//! `SKIPPED <test>: <why>` straight to stderr (not captured by the test
//! harness) and returns; `tools/test-all.sh` counts and lists those lines,
//! so a skip is never mistaken for a pass.

use std::io::Write;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::sync::Mutex;
use std::sync::MutexGuard;

use gpu_target::dbgapi::sys;
use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuError;
use gpu_target::model::HostProcess;

/// One initialized amd-dbgapi per process: the tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The real libraries of `versions`, or `None` after printing one skip line
/// for `test`.
fn real_libraries(test: &str, versions: &[&str]) -> Option<Vec<PathBuf>> {
    let dir = std::env::var_os("GDBMUX_REAL_DBGAPI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/real-amd-dbgapi")
        });
    let libs: Vec<PathBuf> = versions
        .iter()
        .map(|v| dir.join(v).join("librocm-dbgapi.so.0"))
        .collect();
    if let Some(missing) = libs.iter().find(|l| !l.exists()) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED gpu-target::real_dbgapi::{test}: {} not found (AMD's real amd-dbgapi)",
            missing.display()
        );
        return None;
    }
    Some(libs)
}

fn real_library(test: &str, version: &str) -> Option<PathBuf> {
    real_libraries(test, &[version]).map(|mut v| v.remove(0))
}

struct Host {
    pid: i32,
}

impl HostProcess for Host {
    fn os_pid(&self) -> i32 {
        self.pid
    }
    fn insert_breakpoint(&mut self, _addr: u64, _id: BreakpointId) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("no host breakpoints in this test"))
    }
    fn remove_breakpoint(&mut self, _id: BreakpointId) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("no host breakpoints in this test"))
    }
}

struct Inferior(Child);

impl Inferior {
    fn start() -> Self {
        Inferior(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("spawn sleep"),
        )
    }
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Inferior {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Load, version, build name, attach, OS id (per-version query number),
/// notifier, 0 agents, no events, detach, finalize.
fn load_and_attach(test: &str, version: &str, minor: u32) {
    let Some(lib) = real_library(test, version) else {
        return;
    };
    let _g = serial();
    let report = sys::inspect(&lib).expect("inspect");
    assert_eq!(report.version, (0, minor, 0));
    assert!(report.version_supported());
    assert!(
        report.build_name.starts_with(&format!("0.{minor}.0")),
        "{}",
        report.build_name
    );
    let missing: Vec<_> = report.missing().collect();
    assert!(missing.is_empty(), "unresolved: {missing:?}");
    let gi = report
        .symbols
        .iter()
        .find(|c| c.function == "process_get_info")
        .unwrap();
    assert_eq!(
        gi.resolved,
        Some(if minor == 76 { "0.56" } else { "0.77" }),
        "process_get_info resolves at this library's node"
    );

    let api = DbgApi::load(Some(&lib)).expect("load the real library");
    assert_eq!(api.version(), (0, minor, 0));
    assert_eq!(
        api.constants().process_info_os_id,
        if minor == 76 { 5 } else { 6 }
    );
    let child = Inferior::start();
    let process = api
        .attach(Box::new(Host { pid: child.pid() }))
        .expect("attach");
    assert_eq!(
        process.os_id().expect("PROCESS_INFO_OS_ID"),
        child.pid(),
        "the OS id query uses this version's number"
    );
    assert!(process.notifier().expect("notifier") >= 0);
    assert_eq!(process.agents().expect("agents"), Vec::<u64>::new());
    assert_eq!(process.next_event().expect("event"), None);
    drop(process);
    drop(api);
}

#[test]
fn real_0_76_loads_and_attaches() {
    load_and_attach("real_0_76_loads_and_attaches", "0.76.0", 76);
}

#[test]
fn real_0_77_loads_and_attaches() {
    load_and_attach("real_0_77_loads_and_attaches", "0.77.0", 77);
}

/// Both libraries, one after the other, in one process: finalize releases
/// the one-library-per-process guard.
#[test]
fn both_real_libraries_in_turn() {
    let test = "both_real_libraries_in_turn";
    let Some(libs) = real_libraries(test, &["0.76.0", "0.77.0"]) else {
        return;
    };
    let _g = serial();
    for (lib, minor) in libs.into_iter().zip([76, 77]) {
        let api = DbgApi::load(Some(&lib)).expect("load");
        assert_eq!(api.version(), (0, minor, 0));
        let child = Inferior::start();
        let p = api.attach(Box::new(Host { pid: child.pid() })).unwrap();
        assert_eq!(p.os_id().unwrap(), child.pid());
    }
}
