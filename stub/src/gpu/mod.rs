//! The GPU side of gdbmux, adapted to our [`crate::target::Target`]
//! contract: the controller (library, waves ↔ thread ids,
//! GPU breakpoints), the GPU session's target, the host-breakpoint bridge
//! and the register table generated from the library's descriptions.

pub mod controller;
pub mod host;
pub mod regs;
pub mod symbols;
pub mod target;

pub use controller::GpuController;
pub use controller::GpuNews;
pub use target::GpuShared;
pub use target::GpuTarget;
