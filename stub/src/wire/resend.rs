//! Retransmission on `-`, bounded, the way gdbserver and lldb-server
//! handle acknowledgements.
//!
//! gdbserver resends a packet only while it waits for that packet's
//! acknowledgement (`putpkt_binary_1` in `gdbserver/remote-utils.cc` loops
//! on the reply to one packet); a `-` that arrives at any other time is
//! discarded by `getpkt` with the other bytes before a `$`. In no-ack mode
//! neither side waits for acknowledgements, so a `-` means nothing. This
//! type keeps the last framed packet until it is acknowledged, hands it
//! out again on a `-` at most [`MAX_RESENDS`] times, and forgets it once a
//! `+` arrives: a stray `-` after a `+` resends nothing.

/// How many times one packet is sent again before further `-` for it are
/// ignored (a peer that keeps rejecting it cannot make the server send
/// without bound).
pub const MAX_RESENDS: u8 = 3;

/// Capacity kept for the copy of the last packet after it is acknowledged;
/// a larger buffer (a big reply) is given back.
const KEEP: usize = 4096;

/// The last packet sent in ack mode, until the peer acknowledges it.
#[derive(Debug, Default)]
pub struct Resender {
    last: Vec<u8>,
    awaiting_ack: bool,
    resends: u8,
}

impl Resender {
    /// Records `framed` (a whole `$...#cc` frame) as sent and not yet
    /// acknowledged. Call it in ack mode only.
    pub fn sent(&mut self, framed: &[u8]) {
        self.last.clear();
        self.last.extend_from_slice(framed);
        self.awaiting_ack = true;
        self.resends = 0;
    }

    /// The peer sent `+`: the packet arrived, nothing is kept for it.
    pub fn acked(&mut self) {
        self.forget();
    }

    /// The peer sent `-`: the packet to send again, if one still waits for
    /// its acknowledgement and has not been resent [`MAX_RESENDS`] times.
    pub fn nak(&mut self) -> Option<&[u8]> {
        if !self.awaiting_ack || self.resends >= MAX_RESENDS {
            return None;
        }
        self.resends += 1;
        Some(&self.last)
    }

    /// Forgets the last packet (acknowledged, no-ack mode, new connection).
    pub fn forget(&mut self) {
        self.awaiting_ack = false;
        self.resends = 0;
        self.last.clear();
        if self.last.capacity() > KEEP {
            self.last.shrink_to(KEEP);
        }
    }

    /// Heap bytes held (at most one frame, and only until it is
    /// acknowledged).
    pub fn buffered_bytes(&self) -> usize {
        self.last.capacity()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nak_before_ack_resends_bounded() {
        let mut r = Resender::default();
        r.sent(b"$OK#9a");
        for _ in 0..MAX_RESENDS {
            assert_eq!(r.nak().unwrap(), b"$OK#9a");
        }
        assert_eq!(r.nak(), None, "resends are bounded");
    }

    #[test]
    fn stray_nak_after_ack_is_ignored() {
        let mut r = Resender::default();
        r.sent(&vec![b'x'; 1 << 20]);
        r.acked();
        assert_eq!(r.nak(), None);
        assert!(r.buffered_bytes() <= KEEP, "the big copy is given back");
    }

    #[test]
    fn nothing_sent_nothing_resent() {
        let mut r = Resender::default();
        assert_eq!(r.nak(), None);
        r.sent(b"$a#61");
        r.forget();
        assert_eq!(r.nak(), None);
    }
}
