//! # gdbmux `stub`
//!
//! An embeddable GDB Remote Serial Protocol server ("stub") that speaks both
//! the gdb and the lldb dialects, with a Linux ptrace CPU target and (through
//! `gpu-target`) AMD GPU targets multiplexed on one listening socket.
//!
//! Layers (docs/architecture.md draws them, with "where is the one file
//! for X"):
//! - [`wire`]: I/O-free framing (acks, checksums, escapes, RLE, interrupts).
//! - [`packet`]: typed commands, one module per packet family; typed replies.
//! - [`session`]: one per connection; negotiated features, stop journal, the
//!   two roles (CPU, GPU) over one engine, one handler module per packet
//!   family.
//! - [`target`]: the contract a debuggable thing implements.
//! - [`native`]: the Linux ptrace target (x86-64).
//! - [`swbreak`]: the breakpoint-patch table the native and GPU targets share.
//! - [`hostio`]: gdb's host I/O (`vFile:`) so clients can read files.
//! - [`mux`]: several sessions on one listener: the accept policy, offers,
//!   ledger, the GPU state machine; the one writer of cross-session facts.
//! - [`gpu`]: the GPU side adapted to [`target`] (controller, GPU target).
//! - [`error`]: named error codes and the error tiers.
//! - [`server`]: the mio loop, transports and the embedding builder.
//!
//! Embedding:
//! ```no_run
//! let server = stub::server::ServerBuilder::new("127.0.0.1:0")?
//!     .launch("/bin/true", &[])
//!     .build()
//!     .map_err(|e| e.to_string())?;
//! eprintln!("Listening on {}", server.local_address());
//! server.run().map_err(|e| e.to_string())?;
//! # Ok::<(), String>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(feature = "gdbstub-adapter")]
pub mod adapters;
pub mod agentexpr;
pub mod bounds;
pub mod doctor;
pub mod error;
pub mod gpu;
pub mod hostio;
pub mod mux;
pub mod native;
pub mod packet;
pub mod refusal;
pub mod selftest;
pub mod server;
pub mod session;
pub mod stop;
pub mod swbreak;
pub mod target;
pub mod wire;
