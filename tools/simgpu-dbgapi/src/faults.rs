//! Fault injection, read from the environment when a process is attached.
//!
//! - `SIMGPU_FAIL=CALL[=STATUS],…`: the named calls fail with STATUS (an
//!   `AMD_DBGAPI_STATUS_*` number, default `AMD_DBGAPI_STATUS_ERROR`).
//!   Calls: `read_register`, `write_register`, `read_memory`,
//!   `write_memory`, `wave_list`, `wave_info`, `wave_stop`, `wave_resume`,
//!   `displaced_stepping_start` (`=-3`, NOT_IMPLEMENTED, as a library
//!   without displaced stepping answers).
//! - `SIMGPU_FAIL_FILE=PATH`: the same list, read from PATH at every call
//!   (a missing file is an empty list): a test switches failures on and off
//!   while a session lives.
//! - `SIMGPU_STALL=1`: the device stalls: its events are never delivered
//!   (its threads block on the full hand-off) and wave stop requests are
//!   accepted but never complete. Library events (runtime, code objects)
//!   still flow.
//! - `SIMGPU_QUIET_RESUME=N`: the first N `BREAKPOINT_RESUME`s that follow
//!   a HALTed runtime-breakpoint hit are late and quiet: each is not queued
//!   when its code-object update is processed but on the client's next pass
//!   after that one, and the notifier is not written for it. Only a client that
//!   polls the library again by itself (a `monitor gpu` command) takes it
//!   in, so a test can fix which session does (AMD's library sends it from
//!   its own threads, at a moment of its choosing).
//! - `SIMGPU_DISPLACED_BUFFERS=N`: the process has N displaced stepping
//!   buffers (default [`DEFAULT_DISPLACED_BUFFERS`]; at least 1, as the
//!   header promises: "there is always at least one"). One more
//!   `displaced_stepping_start` while N are active answers
//!   `DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE`: a test with 1 buffer and
//!   several waves on one breakpoint makes the client queue its steps.

use gpu_target::dbgapi::abi::status as st;
use gpu_target::dbgapi::abi::Status;

/// Environment variable of the failing calls.
pub const FAIL_ENV: &str = "SIMGPU_FAIL";
/// Environment variable of the failing-calls file.
pub const FAIL_FILE_ENV: &str = "SIMGPU_FAIL_FILE";
/// Environment variable of the device stall.
pub const STALL_ENV: &str = "SIMGPU_STALL";
/// Environment variable of the late, quiet breakpoint resume.
pub const QUIET_RESUME_ENV: &str = "SIMGPU_QUIET_RESUME";
/// Environment variable of the number of displaced stepping buffers.
pub const DISPLACED_BUFFERS_ENV: &str = "SIMGPU_DISPLACED_BUFFERS";
/// Displaced stepping buffers a process has unless
/// [`DISPLACED_BUFFERS_ENV`] says otherwise.
pub const DEFAULT_DISPLACED_BUFFERS: usize = 1024;

/// Calls that can be made to fail.
pub const CALLS: [&str; 9] = [
    "read_register",
    "write_register",
    "read_memory",
    "write_memory",
    "wave_list",
    "wave_info",
    "wave_stop",
    "wave_resume",
    "displaced_stepping_start",
];

/// The faults asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    fail: Vec<(&'static str, Status)>,
    file: Option<std::path::PathBuf>,
    /// The device stalls.
    pub stall: bool,
    /// How many more `BREAKPOINT_RESUME`s come one pass late, without a
    /// notifier write.
    pub quiet_resume: u32,
    /// Displaced stepping buffers ([`DISPLACED_BUFFERS_ENV`]); `None`:
    /// [`DEFAULT_DISPLACED_BUFFERS`].
    pub displaced_buffers: Option<usize>,
}

impl Faults {
    /// Parse the two variables' values; unknown call names are reported in
    /// the error list and ignored.
    pub fn parse(fail: Option<&str>, stall: Option<&str>) -> (Faults, Vec<String>) {
        let mut f = Faults::default();
        let mut errors = Vec::new();
        for item in fail.unwrap_or("").split(',').map(str::trim) {
            if item.is_empty() {
                continue;
            }
            let (name, status) = match item.split_once('=') {
                Some((n, s)) => match s.trim().parse::<Status>() {
                    Ok(s) => (n.trim(), s),
                    Err(_) => {
                        errors.push(format!("{FAIL_ENV}: bad status in '{item}'"));
                        continue;
                    }
                },
                None => (item, st::ERROR),
            };
            match CALLS.iter().find(|c| **c == name) {
                Some(c) => f.fail.push((c, status)),
                None => errors.push(format!("{FAIL_ENV}: unknown call '{name}'")),
            }
        }
        f.stall = matches!(stall.map(str::trim), Some(s) if !s.is_empty() && s != "0");
        (f, errors)
    }

    /// From the environment.
    pub fn from_env() -> (Faults, Vec<String>) {
        let fail = std::env::var(FAIL_ENV).ok();
        let stall = std::env::var(STALL_ENV).ok();
        let (mut f, e) = Faults::parse(fail.as_deref(), stall.as_deref());
        f.file = std::env::var_os(FAIL_FILE_ENV).map(Into::into);
        f.quiet_resume = std::env::var(QUIET_RESUME_ENV)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let (mut f, mut e) = (f, e);
        if let Ok(v) = std::env::var(DISPLACED_BUFFERS_ENV) {
            match v.trim().parse::<usize>() {
                Ok(n) if n >= 1 => f.displaced_buffers = Some(n),
                _ => e.push(format!(
                    "{DISPLACED_BUFFERS_ENV}: '{v}' is not a count of at least 1"
                )),
            }
        }
        (f, e)
    }

    /// Displaced stepping buffers of the process.
    pub fn displaced_buffers(&self) -> usize {
        self.displaced_buffers.unwrap_or(DEFAULT_DISPLACED_BUFFERS)
    }

    /// `Err(status)` when `call` is made to fail.
    pub fn check(&self, call: &str) -> Result<(), Status> {
        if let Some((_, s)) = self.fail.iter().find(|(c, _)| *c == call) {
            return Err(*s);
        }
        if let Some(path) = &self.file {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let (f, _) = Faults::parse(Some(&text), None);
            if let Some((_, s)) = f.fail.iter().find(|(c, _)| *c == call) {
                return Err(*s);
            }
        }
        Ok(())
    }

    /// Whether any fault is active.
    pub fn any(&self) -> bool {
        self.stall
            || self.quiet_resume > 0
            || !self.fail.is_empty()
            || self.file.is_some()
            || self.displaced_buffers.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls_statuses_and_stall() {
        let (f, e) = Faults::parse(
            Some("read_register, wave_list=-4,bogus,read_memory=x"),
            Some("1"),
        );
        assert_eq!(f.check("read_register"), Err(st::ERROR));
        assert_eq!(f.check("wave_list"), Err(-4));
        assert_eq!(f.check("read_memory"), Ok(()));
        assert!(f.stall);
        assert_eq!(e.len(), 2, "{e:?}");
        let (f, e) = Faults::parse(None, Some("0"));
        assert!(!f.any() && e.is_empty());
    }
}
