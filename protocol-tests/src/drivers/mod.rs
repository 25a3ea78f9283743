//! Drivers for real debuggers, fixtures and stubs.
//!
//! * [`process`]: run a command with a hard timeout, capturing output.
//! * [`fixtures`]: build the C fixtures once per test process.
//! * [`stub`]: launch a stub from a command template, wait until it listens,
//!   kill it (and its inferiors) on drop.
//! * [`gdb`] / [`lldb`]: batch-mode sessions of stock gdb 13 and lldb 23.1.

pub mod fixtures;
pub mod gdb;
pub mod lldb;
pub mod process;
pub mod stub;
pub mod versions;

pub use fixtures::fixture;
pub use fixtures::Fixture;
pub use process::CommandOutput;
pub use stub::Dialect;
pub use stub::Stub;
pub use stub::StubError;
pub use stub::StubSpec;
