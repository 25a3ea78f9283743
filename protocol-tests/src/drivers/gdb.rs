//! Stock gdb 13 in batch mode.
//!
//! ```no_run
//! use protocol_tests::drivers::gdb::GdbSession;
//! # let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
//! # let prog = std::path::PathBuf::new();
//! let out = GdbSession::new(Some(&prog))
//!     .ex(format!("target remote {addr}"))
//!     .ex("break work")
//!     .ex("continue")
//!     .run();
//! out.assert_contains("Breakpoint 1, work (");
//! ```

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::process::run_with_timeout;
use super::process::CommandOutput;

/// Default hard timeout for one gdb session.
pub const GDB_TIMEOUT: Duration = Duration::from_secs(90);

/// A scripted gdb session.
#[derive(Debug, Clone)]
pub struct GdbSession {
    program: Option<PathBuf>,
    init: Vec<String>,
    commands: Vec<String>,
    timeout: Duration,
}

impl GdbSession {
    /// A session loading symbols from `program`.
    pub fn new(program: Option<&Path>) -> Self {
        Self {
            program: program.map(Path::to_path_buf),
            // Keep sessions hermetic and quick: no debuginfod lookups, no
            // confirmation prompts, and a remote timeout that still finds a
            // stuck stub well inside the hard timeout.
            init: vec![
                "set debuginfod enabled off".into(),
                "set confirm off".into(),
                "set pagination off".into(),
                "set width 0".into(),
            ],
            commands: Vec::new(),
            timeout: GDB_TIMEOUT,
        }
    }

    /// Add an `-iex` command (run before loading the program).
    pub fn iex(mut self, c: impl Into<String>) -> Self {
        self.init.push(c.into());
        self
    }

    /// Add an `-ex` command.
    pub fn ex(mut self, c: impl Into<String>) -> Self {
        self.commands.push(c.into());
        self
    }

    /// Add a marker line (`echo`) that makes output sections easy to split.
    pub fn mark(self, name: &str) -> Self {
        self.ex(format!("echo \\n=== {name} ===\\n"))
    }

    /// Change the hard timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Run gdb and capture its output.
    pub fn run(&self) -> CommandOutput {
        super::versions::require_gdb();
        let mut cmd = Command::new("gdb");
        cmd.args(["-batch", "-nx", "-q"]);
        for c in &self.init {
            cmd.arg("-iex").arg(c);
        }
        for c in &self.commands {
            cmd.arg("-ex").arg(c);
        }
        if let Some(p) = &self.program {
            cmd.arg(p);
        }
        run_with_timeout(cmd, self.timeout).unwrap_or_else(|e| panic!("cannot run gdb: {e}"))
    }
}

/// The text between `=== name ===` and the next marker.
pub fn section<'a>(output: &'a str, name: &str) -> &'a str {
    let start_marker = format!("=== {name} ===");
    let Some(start) = output.find(&start_marker) else {
        return "";
    };
    let rest = &output[start + start_marker.len()..];
    match rest.find("\n=== ") {
        Some(end) => &rest[..end],
        None => rest,
    }
}
