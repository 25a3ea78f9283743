//! Target-side breakpoint conditions (gdb's `ConditionalBreakpoints+`)
//! and commands (`BreakpointCommands+`).
//!
//! A software breakpoint may carry agent-expression conditions
//! ([`crate::agentexpr`]). When a thread hits it, the conditions are
//! evaluated on the spot; when none is true (and none failed: an
//! evaluation error counts as true, so the stop is reported rather than
//! lost, as gdbserver does) the hit is not reported: the thread steps over
//! the breakpoint (its original byte put back for one single-step, then
//! the `int3` again) and runs on as it was resumed. If the process is
//! already stopping for another reason, the thread is left stopped at the
//! breakpoint address instead and re-evaluates the hit when it runs again.
//!
//! A breakpoint with commands (gdb's `dprintf` with `set dprintf-style
//! agent`: one `printf` bytecode) runs them at each hit whose condition
//! holds and is never reported, as gdbserver (linux-low.cc reports a
//! breakpoint hit only when `gdb_no_commands_at_breakpoint`); the thread
//! steps over it as over a false condition. What `printf` prints goes to
//! gdbmux's stderr (gdbserver prints it on its stdout, which in stdio
//! mode is the protocol; gdb sees it in neither case).
//!
//! The other threads are stopped for that step and held until it is done
//! (`StepOverHold` in `process.rs`), as gdbserver does, in all-stop and in
//! non-stop mode: no thread runs through the address while the original
//! byte is back. In non-stop mode the client sees none of those stops; a
//! held thread it asks to stop (`vCont;t`) is reported at once, and one
//! it resumes waits for the end of the step.

use std::collections::BTreeMap;

use super::ptrace::RawTid;
use crate::agentexpr::AgentContext;

/// Conditions per address and the threads stepping over a breakpoint.
#[derive(Debug, Default, Clone)]
pub struct Conditions {
    by_addr: BTreeMap<u64, Vec<Vec<u8>>>,
    commands: BTreeMap<u64, Vec<Vec<u8>>>,
    stepping: BTreeMap<RawTid, u64>,
}

impl Conditions {
    /// Replace the conditions at `addr` (empty: unconditional).
    pub fn set(&mut self, addr: u64, conds: Vec<Vec<u8>>) {
        if conds.is_empty() {
            self.by_addr.remove(&addr);
        } else {
            self.by_addr.insert(addr, conds);
        }
    }

    /// Replace the commands at `addr` (empty: none).
    pub fn set_commands(&mut self, addr: u64, cmds: Vec<Vec<u8>>) {
        if cmds.is_empty() {
            self.commands.remove(&addr);
        } else {
            self.commands.insert(addr, cmds);
        }
    }

    /// The commands at `addr`, if any.
    pub fn commands_at(&self, addr: u64) -> Option<Vec<Vec<u8>>> {
        self.commands.get(&addr).cloned()
    }

    /// The conditions at `addr`, if any.
    pub fn at(&self, addr: u64) -> Option<Vec<Vec<u8>>> {
        self.by_addr.get(&addr).cloned()
    }

    /// `tid` steps over the breakpoint at `addr`.
    pub fn begin_step_over(&mut self, tid: RawTid, addr: u64) {
        self.stepping.insert(tid, addr);
    }

    /// Whether a thread is stepping over the breakpoint at `addr` now
    /// (its original byte is in memory).
    pub fn stepping_over(&self, addr: u64) -> bool {
        self.stepping.values().any(|a| *a == addr)
    }

    /// Whether `tid` is stepping over a breakpoint now.
    pub fn is_stepping(&self, tid: RawTid) -> bool {
        self.stepping.contains_key(&tid)
    }

    /// The breakpoint `tid` was stepping over, now done.
    pub fn end_step_over(&mut self, tid: RawTid) -> Option<u64> {
        self.stepping.remove(&tid)
    }
}

/// Run a breakpoint's commands (gdb's agent-style `dprintf`); returns
/// what their `printf`s print. A command that fails is logged and ends
/// the run, as in gdbserver's `run_breakpoint_commands`.
pub fn run_commands(cmds: &[Vec<u8>], ctx: &mut dyn AgentContext) -> String {
    let mut out = String::new();
    for c in cmds {
        if let Err(e) = crate::agentexpr::run_command(c, ctx, &mut out) {
            tracing::debug!(target: "native", "breakpoint command: {e}");
            break;
        }
    }
    out
}

/// Whether the hit is reported: some condition is true or fails.
pub fn any_true(conds: &[Vec<u8>], ctx: &mut dyn AgentContext) -> bool {
    conds.iter().any(|c| match crate::agentexpr::eval(c, ctx) {
        Ok(v) => v != 0,
        Err(e) => {
            tracing::debug!(target: "native", "breakpoint condition: {e}; reporting the hit");
            true
        }
    })
}
