//! The GPU side of gdbmux, adapted to our [`crate::target::Target`]
//! contract: the controller (library, waves ↔ thread ids,
//! GPU breakpoints), the GPU session's target, the host-breakpoint bridge
//! and the register table generated from the library's descriptions.

pub mod allstop;
pub mod controller;
pub mod host;
pub mod launcher;
pub mod regs;
pub mod symbols;
pub mod target;

pub use controller::GpuController;
pub use controller::GpuNews;
pub use target::GpuShared;
pub use target::GpuTarget;

/// `monitor gpu`'s line when the library reports no agent (no AMD GPU is
/// visible to the process: no `/dev/kfd`, or no device in it).
pub const NO_AGENTS: &str = "agents: none (the library sees no AMD GPU in this process; \
     `gdbmux doctor` checks /dev/kfd and the library)";
