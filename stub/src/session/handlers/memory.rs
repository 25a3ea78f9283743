//! Memory: `m`, `M`, `x`, `X` (packets: `packet/memory.rs`).

use crate::session::Session;
use crate::session::SessionRole;
use crate::session::MAX_PACKET;
use crate::target::Target;
use crate::target::TargetError;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_m(&mut self, addr: u64, len: u64) {
        let len = (len as usize).min((MAX_PACKET - 16) / 2);
        self.reply_memory(addr, len, false);
    }

    pub(in crate::session) fn handle_x(&mut self, addr: u64, len: u64) {
        if len == 0 {
            // lldb's `x0,0` probe for binary reads.
            self.send(b"OK");
            return;
        }
        let len = (len as usize).min(MAX_PACKET - 16);
        self.reply_memory(addr, len, true);
    }

    /// Reply to `m`/`x` for `len` bytes at `addr` (`len` already bounded
    /// by the caller to what one reply may carry), without per-packet allocation: the target reads into a buffer
    /// the session keeps (grown once to the largest request, at most
    /// [`MAX_PACKET`] bytes), and the reply is framed from it straight into
    /// the output queue (escaped for `x`, hex for `m`), one pass each.
    fn reply_memory(&mut self, addr: u64, len: usize, binary: bool) {
        let mut buf = std::mem::take(&mut self.mem_scratch);
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let r = match buf.get_mut(..len) {
            Some(dst) => self
                .current_target()
                .and_then(|t| t.read_memory_into(addr, dst)),
            None => Ok(0),
        };
        match r {
            Ok(n) => {
                let data = buf.get(..n).unwrap_or_default();
                if binary {
                    // lldb 23 expects raw binary without gdb 16's `b`
                    // prefix (research/client-traces.md §0.6). gdb 16 only
                    // uses `x` with `binary-upload+`, which we do not
                    // advertise.
                    self.send(data);
                } else {
                    self.send_hex(data);
                }
            }
            Err(e) => self.send_target_error(&e),
        }
        self.mem_scratch = buf;
    }

    /// [`Session::send`] of the hex text of `data`, encoded in place (no
    /// allocation: `m` replies and register reads).
    pub(in crate::session) fn send_hex(&mut self, data: &[u8]) {
        tracing::trace!(target: "packets", session = self.id, "--> hex of {} bytes", data.len());
        let start = self.out.len();
        self.encoder.packet_hex(data, &mut self.out);
        if !self.framer.no_ack() {
            self.resend.sent(self.out.get(start..).unwrap_or_default());
        }
    }

    /// `M` and `X`.
    pub(in crate::session) fn handle_write_memory(&mut self, addr: u64, data: &[u8]) {
        let r = if data.is_empty() {
            Ok(())
        } else {
            self.current_target()
                .and_then(|t| write_memory_whole(t.as_mut(), addr, data))
        };
        self.reply_unit(r);
    }
}

/// `M`/`X`: all of `data` or nothing. A range that runs off the end of a
/// mapping is refused before anything is written (the kernel would write
/// the mapped part and stop); should a write still come up short, what it
/// wrote is put back.
fn write_memory_whole(t: &mut dyn Target, addr: u64, data: &[u8]) -> Result<(), TargetError> {
    let short = |what: &str| TargetError::Errno {
        what: format!(
            "{what} at {addr:#x}: {} bytes do not fit the mapping",
            data.len()
        ),
        errno: nix::errno::Errno::EFAULT,
    };
    let old = t.read_memory(addr, data.len())?;
    if old.len() < data.len() {
        return Err(short("write"));
    }
    let n = t.write_memory(addr, data)?;
    if n == data.len() {
        return Ok(());
    }
    if let Some(put_back) = old.get(..n) {
        if let Err(e) = t.write_memory(addr, put_back) {
            tracing::warn!(target: "ptrace", "putting back a short write at {addr:#x}: {e}");
        }
    }
    Err(short("short write"))
}
