//! GPU breakpoints across code-object unloads and reloads.
//!
//! A code object that unloads takes its memory, and the `s_trap`s written
//! into it, with it; one that loads again (a new program phase, a kernel
//! reloaded) comes with fresh code. So on every code-object list update:
//! - a breakpoint set by name (`monitor gpu break KERNEL` / `FILE:LINE`)
//!   whose address no longer holds that name goes back to pending, and is
//!   inserted again wherever a code object defines the name (the pending
//!   path, [`GpuController::resolve_pending`]);
//! - a breakpoint set by address (gdb's `monitor gpu break ADDR`, lldb's
//!   `Z0` on the GPU connection) whose address left every loaded code object
//!   becomes dormant: forgotten in memory (nothing is written to memory that
//!   is gone) and written again when a code object covers the address once
//!   more. lldb keeps such a location while the helper leaves the module
//!   loaded (docs/gpu-lldb.md), so its breakpoint works again after the
//!   reload.
//!
//! Only addresses that were inside a code object gdbmux could read the
//! symbols of are judged (a `memory://` object it cannot read keeps its
//! breakpoints as they are). Bounded: at most
//! [`super::MAX_PENDING_BREAKPOINTS`] dormant addresses (the oldest are
//! dropped with a log line).

use super::GpuController;
use super::GpuNews;
use super::MAX_PENDING_BREAKPOINTS;

impl GpuController {
    /// Whether `addr` lies in a function of a loaded code object.
    pub(super) fn in_loaded_code(&mut self, addr: u64) -> bool {
        self.symbolizer.describe(&self.code_objects, addr).is_some()
    }

    /// Called when a breakpoint is inserted: remembers whether its address
    /// is in known code (and, for a named one, the name).
    pub(super) fn note_inserted(&mut self, addr: u64, name: Option<&str>) {
        if self.in_loaded_code(addr) {
            self.located_bps.insert(addr);
        }
        if let Some(name) = name {
            self.named_bps.insert(name.to_string(), addr);
        }
    }

    /// Called when a breakpoint is removed by the client.
    pub(super) fn note_removed(&mut self, addr: u64) {
        self.located_bps.remove(&addr);
        self.dormant_bps.remove(&addr);
        self.named_bps.retain(|_, a| *a != addr);
    }

    /// Re-evaluate every breakpoint after a code-object list update
    /// (before the pending ones are resolved).
    pub(super) fn rebind_breakpoints(&mut self, news: &mut GpuNews) {
        // Named breakpoints whose code went away (or moved) are pending.
        let named: Vec<(String, u64)> = self
            .named_bps
            .iter()
            .map(|(n, a)| (n.clone(), *a))
            .collect();
        for (name, addr) in named {
            if self.resolve(&name) == Some(addr) {
                continue;
            }
            self.named_bps.remove(&name);
            self.forget_in_memory(addr);
            if !self.pending_bps.contains(&name) && self.pending_bps.len() < MAX_PENDING_BREAKPOINTS
            {
                self.pending_bps.push(name.clone());
            }
            tracing::info!(target: "dbgapi", kernel = %name, addr = format_args!("{addr:#x}"), "GPU breakpoint pending again: its code object unloaded");
            news.console.push(format!(
                "gdbmux: GPU breakpoint {name} (was at {addr:#x}) is pending again: its code object unloaded\n"
            ));
        }
        // Address breakpoints whose code went away sleep until it is back.
        let located: Vec<u64> = self.located_bps.iter().copied().collect();
        for addr in located {
            if self.gpu_bps.contains(addr) && !self.in_loaded_code(addr) {
                self.forget_in_memory(addr);
                if self.dormant_bps.len() >= MAX_PENDING_BREAKPOINTS {
                    if let Some(old) = self.dormant_bps.pop_first() {
                        tracing::warn!(target: "dbgapi", addr = format_args!("{old:#x}"), "too many dormant GPU breakpoints: dropped");
                    }
                }
                self.dormant_bps.insert(addr);
                tracing::info!(target: "dbgapi", addr = format_args!("{addr:#x}"), "GPU breakpoint dormant: its code object unloaded");
            }
        }
        let dormant: Vec<u64> = self.dormant_bps.iter().copied().collect();
        for addr in dormant {
            if !self.in_loaded_code(addr) {
                continue;
            }
            self.dormant_bps.remove(&addr);
            match self.insert_gpu_breakpoint(addr) {
                Ok(()) => {
                    tracing::info!(target: "dbgapi", addr = format_args!("{addr:#x}"), "dormant GPU breakpoint inserted again: a code object covers it");
                }
                Err(e) => news.console.push(format!(
                    "gdbmux: GPU breakpoint at {addr:#x} could not be inserted again: {e}\n"
                )),
            }
        }
    }

    /// Drop a breakpoint's bookkeeping without writing its original bytes
    /// back: the memory they belonged to is gone.
    fn forget_in_memory(&mut self, addr: u64) {
        self.gpu_bps.forget(addr);
        self.located_bps.remove(&addr);
    }
}
