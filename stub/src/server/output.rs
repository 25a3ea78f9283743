//! Routing launched programs' output ([`crate::native::OutputTerminal`]).
//!
//! lldb-server's rule (`GDBRemoteCommunicationServerLLGS`: output is
//! forwarded as `O` packets while the process runs; on a stop or exit
//! what is pending is sent first, then the reply), applied to what the
//! terminal holds when it becomes readable:
//!
//! - the CPU session's client speaks lldb and its process runs: `O`
//!   packets (bytes as a default terminal writes them, `\n` as `\r\n`);
//! - the CPU session's client speaks lldb and its process is stopped: held
//!   (at most [`crate::native::output::HELD_OUTPUT_LIMIT`] bytes) and sent
//!   once it runs again, as lldb-server leaves it in its terminal;
//! - otherwise (a gdb client, as gdbserver whose program writes to its
//!   terminal, or no client): only gdbmux's own stdout.
//!
//! Whatever the route, every byte is also copied to gdbmux's stdout as it
//! is read (`ProgramOutput::take_all`), so the terminal gdbmux runs in
//! shows the program's output as it would a gdbserver's program's.
//!
//! The CPU session also reads the terminal itself right before it sends a
//! stop or exit reply to an lldb client (`Session::forward_program_output`),
//! so what the program wrote before it stopped goes out before the reply.

use super::ClientKind;
use super::Server;

/// Most bytes read from the terminal in one loop turn.
pub(super) const TURN_LIMIT: usize = 1 << 20;

impl Server {
    /// Read the output terminal and route what it holds (and what was held
    /// for a session that now runs).
    pub(super) fn pump_output(&mut self) {
        let Some(po) = self.output.clone() else {
            return;
        };
        let lldb = self
            .cpu_session
            .and_then(|t| match self.clients.get(&t).map(|c| &c.kind) {
                Some(ClientKind::Session(s)) if s.speaks_lldb() => Some((t, s.is_running())),
                _ => None,
            });
        match lldb {
            Some((t, true)) => {
                let data = po.borrow_mut().take_all(TURN_LIMIT);
                if !data.is_empty() {
                    if let Some(ClientKind::Session(s)) =
                        self.clients.get_mut(&t).map(|c| &mut c.kind)
                    {
                        s.send_program_output(&data);
                    }
                    self.flush(t);
                }
            }
            Some((_, false)) => {
                let mut p = po.borrow_mut();
                let data = p.take_all(TURN_LIMIT);
                p.hold(&data);
            }
            None => {
                // take_all has copied it to our stdout.
                po.borrow_mut().take_all(TURN_LIMIT);
            }
        }
    }

    /// Whether output is held for a stopped lldb session that may now run.
    pub(super) fn output_held(&self) -> bool {
        self.output.as_ref().is_some_and(|o| o.borrow().has_held())
    }
}
