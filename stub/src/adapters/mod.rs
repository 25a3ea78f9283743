//! Adapters that serve targets written for other stub engines through
//! gdbmux's session engine.
//!
//! * [`gdbstub`]: any `gdbstub::target::Target` (gdbstub 0.7) becomes a
//!   [`crate::target::Target`]; enabled by the `gdbstub-adapter` feature.

pub mod gdbstub;
