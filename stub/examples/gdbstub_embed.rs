//! Embedding a gdbstub 0.7 target in gdbmux: one line puts any
//! `gdbstub::target::Target` on gdbmux's socket, engine and lldb dialect.
//!
//! Serves the in-memory demo CPU (`stub::adapters::gdbstub::demo::DemoCpu`,
//! a gdbstub `Target` with the ARMv4T register file) through
//! [`GdbstubAdapter`]:
//!
//! ```text
//! cargo run -p stub --features gdbstub-adapter --example gdbstub_embed -- 127.0.0.1:2345
//! ```
//! then drive it with any RSP client (stock x86 gdb has no ARM support;
//! `gdb-multiarch` does; protocol-tests' `RspClient` works too).

#[cfg(feature = "gdbstub-adapter")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use stub::adapters::gdbstub::demo::DemoCpu;
    use stub::adapters::gdbstub::GdbstubAdapter;
    use stub::server::ServerBuilder;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let server = ServerBuilder::new(&addr)?
        .target(
            Box::new(GdbstubAdapter::new(DemoCpu::new())?),
            GdbstubAdapter::<DemoCpu>::initial_stop(),
        )
        .build()?;
    eprintln!("Listening on {}", server.local_address());
    server.run()?;
    Ok(())
}

#[cfg(not(feature = "gdbstub-adapter"))]
fn main() {
    eprintln!("build with --features gdbstub-adapter");
}
