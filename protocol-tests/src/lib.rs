//! # protocol-tests: a conformance suite for GDB remote serial protocol stubs
//!
//! This crate tests *any* GDB-remote stub — gdbmux, GNU `gdbserver`,
//! `lldb-server gdbserver` — from the outside, the way real clients use it.
//! It never shares code with the stub it tests: framing, escaping and reply
//! parsing are implemented here independently.
//!
//! ## Layers
//!
//! * [`framing`] — `$…#cs` / `%…#cs` frames, checksums, `}` escapes, RLE,
//!   and an incremental [`framing::FrameDecoder`].
//! * [`client`] — [`client::RspClient`], a blocking client over TCP or a unix
//!   socket: ack and no-ack modes, NAK + retransmit, `\x03` interrupts, `%`
//!   notifications, raw byte writes for framing tests, and deadlines on every
//!   wait (10 s by default) that fail loudly.
//! * [`reply`] — typed parsers for what servers send back: stop replies
//!   (`T`/`S`/`W`/`X`/`O`), `qSupported` features, `qXfer` chunks, thread
//!   lists and ids (`p<pid>.<tid>`, `-1`, `0`), `g` register blocks,
//!   `key:value;` replies (`qHostInfo`, `qProcessInfo`, `qMemoryRegionInfo`),
//!   `jThreadsInfo`, schema-checked `jAcceleratorPluginInitialize` JSON and
//!   error replies (`Exx`, `Exx;hex`, `E.msg`). They are property-tested to
//!   never panic.
//! * [`drivers`] — runs stock `gdb -batch` and `lldb --batch` with a hard
//!   timeout, builds the C fixtures in `fixtures/` once, and launches stubs
//!   from command templates ([`drivers::Stub`]).
//! * [`scenarios`] — raw-protocol scenarios shared by `tests/raw_protocol.rs`
//!   and the `rsp-conform` runner: Rust ones, and
//! * [`transcript`] — scenarios as data (`scenarios/*.txt`: `send:` /
//!   `expect:` lines with regex captures), parsed and run by the same code.
//!
//! ## Choosing the stub under test
//!
//! Every test reads `RSP_STUB`:
//!
//! | `RSP_STUB` | command | ready when |
//! |---|---|---|
//! | unset / `gdbmux` | `gdbmux --once {addr} -- {prog} {args}` (binary from `GDBMUX_BIN`, `$CARGO_TARGET_DIR/debug`, or `target/debug`; built once if missing) | it prints `Listening on 127.0.0.1:PORT` |
//! | `gdbserver` | `gdbserver --once {addr} {prog} {args}` | it prints `Listening on port PORT` |
//! | `lldb-server` | `lldb-server gdbserver --named-pipe {portpipe} {addr} -- {prog} {args}` | it writes the port it got (it listens on port 0) to the FIFO `{portpipe}` |
//! | anything else | used as a template verbatim | it prints a line containing `Listening on`, or writes its port to `{portpipe}` |
//!
//! Placeholders: `{addr}` (`127.0.0.1:PORT`), `{port}`, `{prog}`, `{args}`
//! (zero or more words), `{pid}` (attach mode) and `{portpipe}`: the path of
//! a FIFO the harness creates and reads the stub's port from (decimal text,
//! ended by a NUL, a newline or the close), for stubs that print nothing
//! when they listen; with it, `{addr}` and `{port}` stand for port 0. A
//! template must use one of the two readiness signals: the harness never
//! probes the port (lldb-server accepts one connection) and never polls; a
//! stub that gives neither fails after 20 s with its output. An
//! `lldb-server gdbserver` template without `{portpipe}` gets
//! `--named-pipe {portpipe}` added.
//!
//! ```text
//! RSP_STUB=gdbserver   cargo test -p protocol-tests
//! RSP_STUB=lldb-server cargo test -p protocol-tests --test raw_protocol
//! cargo run -p protocol-tests --bin rsp-conform -- --stub 'gdbserver {addr} {prog} {args}'
//! ```
//!
//! Each scenario is tagged [`scenarios::Requirement::Required`] (every stub
//! serving gdb 13 and lldb 23.1 must pass) or
//! [`scenarios::Requirement::ImplementationDefined`] (the protocol allows
//! several answers; the result is reported, not enforced). Where the two
//! reference servers legitimately differ (signal numbering, stop-reply keys),
//! expectations are keyed by [`drivers::Dialect`].
//!
//! ## Example
//!
//! ```no_run
//! use protocol_tests::client::RspClient;
//! use protocol_tests::reply::StopReply;
//!
//! let mut c = RspClient::connect("127.0.0.1:1234")?;
//! let features = c.handshake_gdb()?;
//! assert!(features.packet_size().is_some());
//! let (stop, _console) = c.stop_reply("?")?;
//! if let StopReply::Signal(s) = stop {
//!     println!("stopped with signal {} in {:?}", s.signo, s.thread);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod client;
pub mod drivers;
pub mod framing;
/// Properties checked by both the cargo-fuzz targets and the proptests.
#[doc(hidden)]
pub mod properties;
pub mod reply;
pub mod scenarios;
pub mod transcript;

/// The `qSupported` request gdb 13 sends (research/client-traces.md §4).
pub const GDB_QSUPPORTED: &str = "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;vfork-events+;exec-events+;vContSupported+;QThreadEvents+;no-resumed+;memory-tagging+;xmlRegisters=i386";

/// The `qSupported` request lldb 23 sends (research/client-traces.md §4).
pub const LLDB_QSUPPORTED: &str = "qSupported:xmlRegisters=i386,arm,mips,arc;multiprocess+;fork-events+;vfork-events+;swbreak+;hwbreak+;qXfer:libraries:read+;qXfer:libraries-svr4:read+";

/// Report a skipped test: `SKIPPED NAME: REASON` on stderr and, when
/// `RSP_SKIP_LOG` names a file, one line `NAME: REASON` appended to it, so
/// `tools/test-all.sh` counts skips by name instead of as passes.
pub fn record_skip(test: &str, reason: &str) {
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(path) = std::env::var_os("RSP_SKIP_LOG") {
        use std::io::Write as _;
        let line = format!("{test}: {}\n", reason.replace('\n', " "));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot record the skip in {}: {e}", path.to_string_lossy());
        }
    }
}
