//! Stock lldb 23.1 (the PyPI `lldb-for-pwndbg` build, `lldb` on PATH) in batch mode.
//!
//! ```no_run
//! use protocol_tests::drivers::lldb::LldbSession;
//! # let port = 1u16;
//! # let prog = std::path::PathBuf::new();
//! let out = LldbSession::new(Some(&prog))
//!     .o(format!("gdb-remote {port}"))
//!     .o("breakpoint set -n work")
//!     .o("process continue")
//!     .run();
//! out.assert_contains("stop reason = breakpoint 1.1");
//! ```

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::process::run_with_timeout;
use super::process::CommandOutput;

/// Default hard timeout for one lldb session.
pub const LLDB_TIMEOUT: Duration = Duration::from_secs(90);

/// A scripted lldb session.
#[derive(Debug, Clone)]
pub struct LldbSession {
    program: Option<PathBuf>,
    commands: Vec<String>,
    timeout: Duration,
}

impl LldbSession {
    /// A session with `program` as the target.
    pub fn new(program: Option<&Path>) -> Self {
        Self {
            program: program.map(Path::to_path_buf),
            commands: Vec::new(),
            timeout: LLDB_TIMEOUT,
        }
    }

    /// Add a `-o` command.
    pub fn o(mut self, c: impl Into<String>) -> Self {
        self.commands.push(c.into());
        self
    }

    /// Add a marker line that makes output sections easy to split.
    pub fn mark(self, name: &str) -> Self {
        self.o(format!("script print('=== {name} ===')"))
    }

    /// Change the hard timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Run lldb and capture its output.
    pub fn run(&self) -> CommandOutput {
        super::versions::require_lldb();
        let mut cmd = Command::new("lldb");
        cmd.args(["--batch", "--no-lldbinit"]);
        if let Some(p) = &self.program {
            cmd.arg(p);
        }
        for c in &self.commands {
            cmd.arg("-o").arg(c);
        }
        run_with_timeout(cmd, self.timeout).unwrap_or_else(|e| panic!("cannot run lldb: {e}"))
    }
}
