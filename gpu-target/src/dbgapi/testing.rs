//! For tests: where AMD's real amd-dbgapi libraries are, and the skip line
//! printed when they are not.
//!
//! The libraries are AMD's builds, outside the repository, in
//! `$GDBMUX_REAL_DBGAPI_DIR/<version>/librocm-dbgapi.so.0` (with the
//! headers in `<version>/include/`); `tools/test-all.sh` sets the variable
//! when the project's copy is at hand. A test that needs one and does not find it
//! prints `SKIPPED <crate>::<test>: <why>` straight to stderr (past the test
//! harness's capture), appends the line to `$GDBMUX_SKIP_LOG` when set, and
//! returns; `tools/test-all.sh` counts and names those lines, so a skip is
//! never reported as a pass.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::MutexGuard;

/// The versions of AMD's library the tests load.
pub const REAL_VERSIONS: &[&str] = &["0.76.0", "0.77.0"];

/// The directory holding the real libraries (`$GDBMUX_REAL_DBGAPI_DIR`;
/// unset: a path that does not exist, so every such test is skipped by name).
pub fn real_dir() -> PathBuf {
    std::env::var_os("GDBMUX_REAL_DBGAPI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("$GDBMUX_REAL_DBGAPI_DIR (unset)"))
}

/// The real libraries of `versions`, or `None` after printing one skip line
/// naming `test` (`crate::test`).
pub fn real_libraries(test: &str, versions: &[&str]) -> Option<Vec<PathBuf>> {
    let libs: Vec<PathBuf> = versions
        .iter()
        .map(|v| real_dir().join(v).join("librocm-dbgapi.so.0"))
        .collect();
    if let Some(missing) = libs.iter().find(|l| !l.exists()) {
        skip(
            test,
            &format!("{} not found (AMD's real amd-dbgapi)", missing.display()),
        );
        return None;
    }
    Some(libs)
}

/// Environment variable naming a file every skip line is appended to
/// (`tools/test-all.sh` counts its lines: test output on a shared
/// terminal can interleave lines).
pub const SKIP_LOG_ENV: &str = "GDBMUX_SKIP_LOG";

/// Prints `SKIPPED {test}: {why}` to stderr, uncaptured, on a line of its
/// own, and appends it to `$GDBMUX_SKIP_LOG` when set.
pub fn skip(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = write!(std::io::stderr().lock(), "\n{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One short write with O_APPEND: lines of parallel tests do not mix.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

/// Only one amd-dbgapi library may be initialized per process: tests that
/// load one take turns through this lock.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}
