//! The multiplexer: the only module that knows several sessions exist.
//!
//! - [`ledger`]: strictly increasing action identifiers, and the fate of
//!   every GPU connection offer (offered → claimed → closed).
//! - [`accel`]: the lldb accelerator-plugin JSON (`jAcceleratorPlugin*`).

pub mod accel;
pub mod ledger;
