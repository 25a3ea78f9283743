//! Embedding a gdbstub 0.7 target in gdbmux's engine.
//!
//! Wraps the in-memory demo CPU (`stub::adapters::gdbstub::demo::DemoCpu`,
//! a gdbstub `Target` with the ARMv4T register file) in
//! [`GdbstubAdapter`] and serves it with a gdbmux [`Session`] on a TCP
//! port, one client at a time. The loop waits on the socket and on the
//! adapter's event fd with `poll(2)`: while the target runs, each wake-up
//! executes one slice of instructions (`process_events`), and client
//! packets (including `\x03`) are served in between.
//!
//! ```text
//! cargo run -p stub --features gdbstub-adapter --example gdbstub_embed -- 127.0.0.1:2345
//! ```
//! then drive it with any RSP client, e.g. `protocol-tests`' `RspClient`
//! (stock x86 gdb has no ARM support; `gdb-multiarch` does).

#[cfg(feature = "gdbstub-adapter")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Read;
    use std::io::Write;
    use std::net::TcpListener;
    use std::os::fd::AsFd;
    use std::os::fd::BorrowedFd;

    use nix::poll::poll;
    use nix::poll::PollFd;
    use nix::poll::PollFlags;
    use nix::poll::PollTimeout;
    use stub::adapters::gdbstub::demo::DemoCpu;
    use stub::adapters::gdbstub::GdbstubAdapter;
    use stub::session::LaunchDefaults;
    use stub::session::Session;
    use stub::session::SessionControl;
    use stub::target::Target as _;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2345".into());
    let listener = TcpListener::bind(&addr)?;
    eprintln!("gdbstub demo target on {}", listener.local_addr()?);
    let (mut conn, peer) = listener.accept()?;
    eprintln!("client {peer}");
    let adapter = GdbstubAdapter::new(DemoCpu::new())?;
    let event_fd = adapter.event_fd().ok_or("adapter has no event fd")?;
    let mut session = Session::new(1, LaunchDefaults::default());
    session.adopt(Box::new(adapter), GdbstubAdapter::<DemoCpu>::initial_stop());
    let mut buf = [0u8; 65536];
    loop {
        let out = std::mem::take(session.pending_output());
        conn.write_all(&out)?;
        // SAFETY: the adapter (owned by the session, alive for the whole
        // loop) keeps its event socket open as long as it exists.
        let ev = unsafe { BorrowedFd::borrow_raw(event_fd) };
        let mut fds = [
            PollFd::new(conn.as_fd(), PollFlags::POLLIN),
            PollFd::new(ev, PollFlags::POLLIN),
        ];
        poll(&mut fds, PollTimeout::NONE)?;
        let client_ready = fds[0].any().unwrap_or(false);
        let target_ready = fds[1].any().unwrap_or(false);
        if client_ready {
            let n = conn.read(&mut buf)?;
            if n == 0 {
                session.on_disconnect();
                return Ok(());
            }
            if session.on_input(&buf[..n]) != SessionControl::Continue {
                let out = std::mem::take(session.pending_output());
                conn.write_all(&out)?;
                return Ok(());
            }
        }
        if target_ready {
            session.on_target_event();
        }
    }
}

#[cfg(not(feature = "gdbstub-adapter"))]
fn main() {
    eprintln!("build with `--features gdbstub-adapter`");
}
