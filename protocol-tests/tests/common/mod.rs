//! Shared helpers of the debugger-driven tests.
#![allow(dead_code)]

use std::process::Child;
use std::process::Command;
use std::process::Stdio;

use protocol_tests::drivers::process::kill_tree;
use protocol_tests::drivers::Dialect;
use protocol_tests::drivers::Stub;
use protocol_tests::drivers::StubSpec;

/// The stub from `RSP_STUB`, or `None` (test skipped, reason printed) when
/// the gdbmux binary is missing or `ok(dialect)` says the client cannot work
/// with this server at all.
pub fn spec(test: &str, ok: fn(Dialect) -> bool, why: &str) -> Option<StubSpec> {
    let spec = StubSpec::from_env_or_skip(test)?;
    if !ok(spec.dialect) {
        protocol_tests::record_skip(test, &format!("not applicable to {} ({why})", spec.name));
        return None;
    }
    Some(spec)
}

/// Start `spec` or panic with the reason.
pub fn launch(spec: &StubSpec, f: protocol_tests::drivers::Fixture, args: &[&str]) -> Stub {
    spec.launch(f, args)
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name))
}

/// A process started outside any debugger (for attach tests); killed on drop.
pub struct Inferior(pub Child);

impl Inferior {
    /// Start a fixture directly.
    pub fn start(f: protocol_tests::drivers::Fixture, args: &[&str]) -> Self {
        let child = Command::new(protocol_tests::drivers::fixture(f))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fixture");
        Self(child)
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Inferior {
    fn drop(&mut self) {
        kill_tree(&mut self.0);
    }
}

/// Whether this CPU has AVX (for `ymm` checks).
pub fn has_avx() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| c.split_whitespace().any(|w| w == "avx"))
        .unwrap_or(false)
}

/// The pid in lldb's "Process N ..." lines.
pub fn lldb_pid(output: &str) -> Option<u32> {
    output.lines().find_map(|l| {
        l.strip_prefix("Process ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}
