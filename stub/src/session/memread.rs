//! `m` and `x` replies without per-packet allocation: the target reads
//! into a buffer the session keeps (grown once to the largest request,
//! at most [`MAX_PACKET`](super::MAX_PACKET) bytes), and the reply is
//! framed from it straight into the output queue (escaped for `x`, hex
//! for `m`) in one pass each.

use super::Session;

impl Session {
    /// Reply to `m`/`x` for `len` bytes at `addr` (`len` already bounded
    /// by the caller to what one reply may carry).
    pub(super) fn reply_memory(&mut self, addr: u64, len: usize, binary: bool) {
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

    /// [`Session::send`] of the hex text of `data`, encoded in place.
    fn send_hex(&mut self, data: &[u8]) {
        tracing::trace!(target: "packets", session = self.id, "--> hex of {} bytes", data.len());
        let start = self.out.len();
        self.encoder.packet_hex(data, &mut self.out);
        if !self.framer.no_ack() {
            self.resend.sent(self.out.get(start..).unwrap_or_default());
        }
    }
}
