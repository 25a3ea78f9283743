//! The GPU state machine. Its transitions are private to the multiplexer
//! and each one starts from a typed event; every state below is reachable
//! (tests: `gpu_mux`, `gpu_faults`, and the unit test here).
//!
//! ```text
//! Unloaded                      (no GPU library)
//! LibraryInitialized ─attach──→ ProcessAttached ─runtime loaded──→ RuntimeLoaded
//!                               ↑   runtime unloaded ←──────────── ↙ offer (Initialize / hook hit)
//!                               │                          Offered ─claim─→ Connected
//!                               │                RuntimeLoaded ←─GPU session closed─┘
//! any attached state ─CPU process exited or killed─→ Exited
//!                    ─CPU process detached────────→ Detached
//! Exited | Detached ─a new CPU process attached───→ ProcessAttached
//! ```

use std::fmt;

/// GPU state (as `monitor gpu` shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuState {
    /// No GPU library.
    Unloaded,
    /// Library loaded and initialized; no CPU process yet.
    LibraryInitialized,
    /// Attached to the CPU process; its GPU runtime is not up.
    ProcessAttached,
    /// The GPU runtime is up; no offer made in this lifetime yet (or the
    /// GPU session of this lifetime closed).
    RuntimeLoaded,
    /// A connection was offered to the client.
    Offered,
    /// A GPU session is connected.
    Connected,
    /// The CPU process ended (exit, death, kill).
    Exited,
    /// The CPU process was detached.
    Detached,
}

impl fmt::Display for GpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            GpuState::Unloaded => "Unloaded",
            GpuState::LibraryInitialized => "LibraryInitialized",
            GpuState::ProcessAttached => "ProcessAttached",
            GpuState::RuntimeLoaded => "RuntimeLoaded",
            GpuState::Offered => "Offered",
            GpuState::Connected => "Connected",
            GpuState::Exited => "Exited",
            GpuState::Detached => "Detached",
        };
        f.write_str(s)
    }
}

/// The machine: only the multiplexer holds one.
#[derive(Debug)]
pub(super) struct Machine(GpuState);

impl Machine {
    pub(super) fn new(library: bool) -> Self {
        Machine(if library {
            GpuState::LibraryInitialized
        } else {
            GpuState::Unloaded
        })
    }

    pub(super) fn get(&self) -> GpuState {
        self.0
    }

    fn go(&mut self, to: GpuState, why: &str) {
        if self.0 != to {
            tracing::info!(target: "mux", from = %self.0, to = %to, why, "GPU state");
            self.0 = to;
        }
    }

    pub(super) fn process_attached(&mut self) {
        if self.0 != GpuState::Unloaded {
            self.go(GpuState::ProcessAttached, "CPU process attached");
        }
    }

    pub(super) fn runtime_loaded(&mut self) {
        if matches!(
            self.0,
            GpuState::ProcessAttached | GpuState::LibraryInitialized
        ) {
            self.go(GpuState::RuntimeLoaded, "runtime loaded");
        }
    }

    pub(super) fn runtime_unloaded(&mut self) {
        if matches!(
            self.0,
            GpuState::RuntimeLoaded | GpuState::Offered | GpuState::Connected
        ) {
            self.go(GpuState::ProcessAttached, "runtime unloaded");
        }
    }

    pub(super) fn offered(&mut self) {
        if self.0 == GpuState::RuntimeLoaded {
            self.go(GpuState::Offered, "offer made");
        }
    }

    pub(super) fn connected(&mut self) {
        if self.0 == GpuState::Offered {
            self.go(GpuState::Connected, "offer claimed");
        }
    }

    pub(super) fn disconnected(&mut self) {
        if self.0 == GpuState::Connected {
            self.go(GpuState::RuntimeLoaded, "GPU session closed");
        }
    }

    pub(super) fn cpu_gone(&mut self, to: GpuState) {
        if self.0 != GpuState::Unloaded {
            self.go(to, "CPU process gone");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state is reachable through the machine's own transitions.
    #[test]
    fn every_state_is_reachable() {
        let mut seen = vec![];
        let mut m = Machine::new(false);
        seen.push(m.get());
        m.process_attached();
        assert_eq!(m.get(), GpuState::Unloaded, "no library, no attach");
        let mut m = Machine::new(true);
        seen.push(m.get());
        m.process_attached();
        seen.push(m.get());
        m.runtime_loaded();
        seen.push(m.get());
        m.offered();
        seen.push(m.get());
        m.connected();
        seen.push(m.get());
        m.disconnected();
        assert_eq!(m.get(), GpuState::RuntimeLoaded);
        m.cpu_gone(GpuState::Exited);
        seen.push(m.get());
        m.process_attached();
        assert_eq!(m.get(), GpuState::ProcessAttached);
        m.cpu_gone(GpuState::Detached);
        seen.push(m.get());
        assert_eq!(
            seen,
            vec![
                GpuState::Unloaded,
                GpuState::LibraryInitialized,
                GpuState::ProcessAttached,
                GpuState::RuntimeLoaded,
                GpuState::Offered,
                GpuState::Connected,
                GpuState::Exited,
                GpuState::Detached,
            ]
        );
    }
}
