//! Embedding gdbmux: serve one program to gdb or lldb from your own binary.
//!
//! ```text
//! cargo run -p stub --example embed -- /bin/ls -l
//! ```
//! then `gdb -ex 'target remote <printed address>'` or
//! `lldb -o 'gdb-remote <printed address>'`.

use stub::server::ServerBuilder;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let program = args.next().unwrap_or_else(|| "/bin/true".to_string());
    let rest: Vec<String> = args.collect();
    let server = ServerBuilder::new("127.0.0.1:0")?
        .launch(&program, &rest)
        .build()
        .map_err(|e| e.to_string())?;
    eprintln!("Listening on {}", server.local_address());
    server.run().map_err(|e| e.to_string())
}
