//! Memory: `m`, `M`, `x`, `X` (packets: `packet/memory.rs`).

use crate::session::Session;
use crate::session::SessionControl;
use crate::session::SessionRole;
use crate::session::MAX_PACKET;
use crate::target::Target;
use crate::target::TargetError;
use crate::wire::Encoder;

/// Bytes of target memory read and framed per step of a streamed `x`
/// reply ([`Session::start_memory_stream`]): while the server writes one
/// piece the client receives it and the next is read. While a reply
/// streams, the output holds at most one escaped piece (at most twice
/// this) beyond what the socket took.
///
/// 256 KiB: against 128 KiB, one `process_vm_readv`, one `sendto` and one
/// turn of the flush loop per 256 KiB instead of two cut the server's CPU
/// per MiB of a large read by about an eighth on the development VM (a
/// raw-socket client reading 128 MiB in 1 MiB `x` packets, 8 alternating
/// runs of each build: 565 against 646 µs median; rsp-bench's A/B in
/// README.md);
/// 512 KiB saved about 3 % more but leaves only two pieces of a 1 MiB
/// reply to overlap the reading with the client's receiving.
pub const STREAM_PIECE: usize = 256 << 10;

/// A streamed `x` reply in progress: where the next piece starts, how much
/// is left, and the checksum of the body so far.
#[derive(Debug)]
pub(in crate::session) struct MemStream {
    addr: u64,
    left: usize,
    sum: u8,
    /// The `$` and a first piece are out.
    started: bool,
}

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
        if binary && len > STREAM_PIECE && self.framer.no_ack() && !self.encoder.rle() {
            self.start_memory_stream(addr, len);
            return;
        }
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

    /// An `x` reply longer than [`STREAM_PIECE`], sent in pieces: the
    /// first piece now, the others by [`Session::stream_more`] each time
    /// the server has written everything before them (the client receives
    /// one piece while the next is read). The reply is the readable prefix,
    /// as [`Session::reply_memory`]'s: an error when nothing is readable,
    /// and the packet ends at the first piece that comes up short.
    fn start_memory_stream(&mut self, addr: u64, len: usize) {
        let mut s = MemStream {
            addr,
            left: len,
            sum: 0,
            started: false,
        };
        match self.memory_piece(&mut s) {
            Err(e) => self.send_target_error(&e),
            Ok(more) => {
                tracing::trace!(target: "packets", session = self.id, "--> binary of up to {len} bytes, streamed");
                if more {
                    self.mem_stream = Some(s);
                } else {
                    Encoder::close_packet(s.sum, &mut self.out);
                }
            }
        }
    }

    /// Read the next piece of `s` and append it, escaped, to the output
    /// (the `$` first, for the first piece). `Ok(true)`: more to come;
    /// `Ok(false)`: the reply's body is complete (all read, or a short
    /// read); `Err`: the first piece could not be read at all (nothing was
    /// appended); a later piece that fails ends the body.
    fn memory_piece(&mut self, s: &mut MemStream) -> Result<bool, TargetError> {
        let first = !s.started;
        let want = s.left.min(STREAM_PIECE);
        let mut buf = std::mem::take(&mut self.mem_scratch);
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let r = match buf.get_mut(..want) {
            Some(dst) => self
                .current_target()
                .and_then(|t| t.read_memory_into(s.addr, dst)),
            None => Ok(0),
        };
        let result = match r {
            Err(e) if first => Err(e),
            Err(e) => {
                tracing::debug!(target: "packets", session = self.id, "streamed read ends early: {e}");
                Ok(false)
            }
            Ok(n) => {
                if first {
                    Encoder::open_packet(&mut self.out);
                    s.started = true;
                }
                let data = buf.get(..n).unwrap_or_default();
                s.sum = s.sum.wrapping_add(Encoder::body_piece(data, &mut self.out));
                s.addr = s.addr.wrapping_add(n as u64);
                s.left = s.left.saturating_sub(n);
                Ok(n == want && s.left > 0)
            }
        };
        self.mem_scratch = buf;
        result
    }

    /// Continue a streamed reply ([`Session::start_memory_stream`]): append
    /// its next piece (and, after the last, the checksum; then the input
    /// held meanwhile is handled). `None` when no reply is streaming.
    pub fn stream_more(&mut self) -> Option<SessionControl> {
        let mut s = self.mem_stream.take()?;
        let more = self.memory_piece(&mut s).unwrap_or(false);
        if more {
            self.mem_stream = Some(s);
            return Some(self.control);
        }
        Encoder::close_packet(s.sum, &mut self.out);
        Some(self.release_held_input())
    }

    /// Complete a streamed reply into the output at once, before anything
    /// else is appended to it (a stop, a notification, program output).
    pub(in crate::session) fn finish_memory_stream(&mut self) {
        while self.mem_stream.is_some() {
            self.stream_more();
        }
    }

    /// Whether a streamed reply is in progress (the client's input waits).
    pub(in crate::session) fn memory_streaming(&self) -> bool {
        self.mem_stream.is_some()
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
        if r.is_ok() && !data.is_empty() {
            // The recorded stop's stack bytes may be stale now.
            self.journal.memory_written();
        }
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
