//! The incremental decoder: raw bytes in, [`WireEvent`]s out.

use tracing::debug;
use tracing::trace;

use super::hex;
use super::rle_repeats;
use super::Unescaper;
use super::WireEvent;
use super::LOG_TARGET;
use super::RLE_MARKER;

/// Input capacity kept around after the input buffer empties; a larger
/// buffer (from one huge [`Framer::push`]) is given back.
const INPUT_KEEP: usize = 64 * 1024;

/// Largest packet body capacity [`Framer::recycle`] takes back (larger
/// ones, from a big `X` or `vFile:pwrite`, are freed).
const BODY_KEEP: usize = 64 * 1024;

/// Where the framer is in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between packets.
    Idle,
    /// Inside a body, after `$` or `%`.
    Body,
    /// After `#`, waiting for the first checksum digit.
    Checksum1,
    /// After the first checksum digit.
    Checksum2(u8),
}

/// What started the current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Packet,
    Notification,
}

/// An incremental RSP decoder for one connection.
///
/// Feed it whatever a non-blocking read returned, split anywhere, with
/// [`Framer::push`]; then call [`Framer::next_event`] until it returns
/// `None`, and send what [`Framer::take_replies`] returns. Parsing is lazy:
/// input is only looked at by `next_event`, so the acknowledgement of a
/// packet is decided in the mode that is current when the packet is handed
/// out. That makes `QStartNoAckMode` exact: reply `OK`, call
/// [`Framer::set_no_ack`], and the next packet is not acknowledged.
///
/// Memory is bounded: a packet body is stored only up to the maximum packet
/// size (longer bodies are scanned for their end and reported as
/// [`WireEvent::Oversize`]), and the input buffer holds only what was pushed
/// and not yet consumed.
#[derive(Debug)]
pub struct Framer {
    max_packet: usize,
    /// Client mode: expand run-length markers in incoming replies.
    rle: bool,
    no_ack: bool,
    /// Pushed bytes; `input[pos..]` is not consumed yet.
    input: Vec<u8>,
    pos: usize,
    state: State,
    kind: Kind,
    /// The decoded body of the current frame.
    body: Vec<u8>,
    /// Wire length of the current body.
    raw_len: usize,
    /// Running checksum of the current body's wire bytes.
    sum: u8,
    /// The body outgrew `max_packet`; its bytes are no longer stored.
    oversize: bool,
    unescaper: Unescaper,
    /// Client mode: a `*` was seen and its count is next.
    rle_pending: bool,
    /// Client mode: the last wire byte of the body (what `*` repeats).
    last_raw: Option<u8>,
    /// `+`/`-` bytes to send.
    replies: Vec<u8>,
    /// Noise bytes skipped since the last log line.
    skipped: usize,
}

impl Framer {
    /// A framer for the server side: undoes `}` escapes, leaves `*` alone
    /// (clients never run-length encode), accepts bodies of up to
    /// `max_packet` bytes as they are on the wire.
    pub fn new(max_packet: usize) -> Self {
        Self::with_mode(max_packet, false)
    }

    /// A framer for the client side (tests, tools): like [`Framer::new`] but
    /// also expands run-length markers in replies. The expanded body is also
    /// limited to `max_packet` bytes.
    pub fn client(max_packet: usize) -> Self {
        Self::with_mode(max_packet, true)
    }

    fn with_mode(max_packet: usize, rle: bool) -> Self {
        Self {
            max_packet,
            rle,
            no_ack: false,
            input: Vec::new(),
            pos: 0,
            state: State::Idle,
            kind: Kind::Packet,
            body: Vec::new(),
            raw_len: 0,
            sum: 0,
            oversize: false,
            unescaper: Unescaper::default(),
            rle_pending: false,
            last_raw: None,
            replies: Vec::new(),
            skipped: 0,
        }
    }

    /// Switches no-ack mode. In no-ack mode checksums are still verified,
    /// but neither `+` nor `-` is queued.
    pub fn set_no_ack(&mut self, on: bool) {
        self.no_ack = on;
    }

    /// Whether no-ack mode is on.
    pub fn no_ack(&self) -> bool {
        self.no_ack
    }

    /// The body size limit this framer was made with.
    pub fn max_packet(&self) -> usize {
        self.max_packet
    }

    /// Bytes of heap this framer holds (buffer capacities). Bounded by
    /// `max_packet` plus whatever was pushed and not yet consumed; the
    /// memory tests and the fuzzer check it.
    pub fn buffered_bytes(&self) -> usize {
        self.input.capacity() + self.body.capacity() + self.replies.capacity()
    }

    /// Bytes pushed and not consumed yet (input that waits because the
    /// caller stopped calling [`Framer::next_event`]).
    pub fn pending_input(&self) -> usize {
        self.input.len().saturating_sub(self.pos)
    }

    /// Appends bytes read from the peer. Call [`Framer::next_event`] until
    /// it returns `None` afterwards; unconsumed input stays buffered.
    pub fn push(&mut self, data: &[u8]) {
        if self.pos >= self.input.len() {
            self.input.clear();
            if self.input.capacity() > INPUT_KEEP && data.len() <= INPUT_KEEP {
                self.input.shrink_to(INPUT_KEEP);
            }
        } else if self.pos > 0 {
            self.input.drain(..self.pos);
        }
        self.pos = 0;
        self.input.extend_from_slice(data);
    }

    /// Takes the acknowledgement bytes queued so far (`+` for each good
    /// packet, `-` for each bad one, in ack mode only), or `None`.
    pub fn take_replies(&mut self) -> Option<Vec<u8>> {
        if self.replies.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.replies))
        }
    }

    /// Appends the acknowledgement bytes queued so far to `out` (what
    /// [`Framer::take_replies`] returns) and keeps the queue's buffer, so
    /// acknowledging costs no allocation per packet.
    pub fn append_replies(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.replies);
        self.replies.clear();
    }

    /// Gives back the body of a [`WireEvent::Packet`] or
    /// [`WireEvent::Notification`] the caller has handled, to be reused for
    /// the next frame: the server's steady state then allocates nothing per
    /// packet (the body is otherwise handed out by value and a fresh one
    /// grown for the next frame). Kept only while no frame has started a
    /// body since, and only up to [`BODY_KEEP`] bytes of capacity, so the
    /// framer's memory stays bounded as [`Framer::buffered_bytes`] says.
    pub fn recycle(&mut self, mut body: Vec<u8>) {
        if self.body.capacity() == 0 && body.capacity() <= BODY_KEEP.min(self.max_packet) {
            body.clear();
            self.body = body;
        }
    }

    /// The next event in the pushed input, or `None` when more input is
    /// needed.
    pub fn next_event(&mut self) -> Option<WireEvent> {
        while let Some(&b) = self.input.get(self.pos) {
            self.pos += 1;
            if let Some(event) = self.step(b) {
                self.log_skipped();
                return Some(event);
            }
        }
        self.log_skipped();
        None
    }

    fn log_skipped(&mut self) {
        if self.skipped > 0 {
            trace!(target: LOG_TARGET, skipped = self.skipped, "skipped noise between packets");
            self.skipped = 0;
        }
    }

    /// Advances the state machine by one wire byte.
    fn step(&mut self, b: u8) -> Option<WireEvent> {
        match self.state {
            State::Idle => match b {
                b'$' => self.start(Kind::Packet),
                b'%' => self.start(Kind::Notification),
                b'+' => return Some(WireEvent::Ack),
                b'-' => return Some(WireEvent::Nak),
                0x03 => return Some(WireEvent::Interrupt),
                _ => self.skipped += 1,
            },
            State::Body => match b {
                b'$' => {
                    debug!(target: LOG_TARGET, discarded = self.raw_len, "'$' inside a packet: restarting");
                    self.start(Kind::Packet);
                }
                b'#' => self.state = State::Checksum1,
                _ => self.body_byte(b),
            },
            State::Checksum1 | State::Checksum2(_) if b == b'$' => {
                debug!(target: LOG_TARGET, "'$' in place of a checksum digit: restarting");
                self.start(Kind::Packet);
            }
            State::Checksum1 => self.state = State::Checksum2(b),
            State::Checksum2(hi) => return Some(self.finish(hi, b)),
        }
        None
    }

    fn start(&mut self, kind: Kind) {
        self.state = State::Body;
        self.kind = kind;
        self.body.clear();
        self.raw_len = 0;
        self.sum = 0;
        self.oversize = false;
        self.unescaper = Unescaper::default();
        self.rle_pending = false;
        self.last_raw = None;
    }

    fn body_byte(&mut self, b: u8) {
        self.sum = self.sum.wrapping_add(b);
        self.raw_len += 1;
        if self.raw_len > self.max_packet {
            self.set_oversize();
        }
        if self.oversize {
            return;
        }
        if !self.rle {
            self.decode_byte(b);
        } else if std::mem::take(&mut self.rle_pending) {
            match (self.last_raw, rle_repeats(b)) {
                (Some(last), Some(repeats)) => {
                    if self.body.len() + usize::from(repeats) > self.max_packet {
                        self.set_oversize();
                        return;
                    }
                    for _ in 0..repeats {
                        self.decode_byte(last);
                    }
                }
                // Lenient: keep a malformed marker and its count literally;
                // the packet layer rejects what it cannot parse.
                _ => {
                    self.decode_byte(RLE_MARKER);
                    self.decode_byte(b);
                    self.last_raw = Some(b);
                }
            }
        } else if b == RLE_MARKER {
            self.rle_pending = true;
        } else {
            self.decode_byte(b);
            self.last_raw = Some(b);
        }
    }

    /// Unescapes one wire byte into the body, respecting the limit.
    fn decode_byte(&mut self, b: u8) {
        if self.body.len() >= self.max_packet {
            self.set_oversize();
            return;
        }
        self.reserve_body(1);
        self.unescaper.feed(b, &mut self.body);
    }

    /// Grows the body by doubling, but never past `max_packet`, so its
    /// capacity stays bounded by the limit.
    fn reserve_body(&mut self, additional: usize) {
        let len = self.body.len();
        if self.body.capacity() - len >= additional {
            return;
        }
        let doubled = len.max(64);
        let room = self.max_packet.saturating_sub(len).max(additional);
        self.body.reserve_exact(doubled.min(room).max(additional));
    }

    fn set_oversize(&mut self) {
        if !self.oversize {
            debug!(target: LOG_TARGET, max = self.max_packet, "packet exceeds the maximum size: discarding its body");
            self.oversize = true;
            self.body = Vec::new();
        }
    }

    /// Completes the frame once both checksum characters are in.
    fn finish(&mut self, hi: u8, lo: u8) -> WireEvent {
        self.state = State::Idle;
        let expected = hex::digit_value(hi).zip(hex::digit_value(lo));
        let good = expected.is_some_and(|(h, l)| h << 4 | l == self.sum);
        let is_packet = self.kind == Kind::Packet;
        if !good {
            debug!(
                target: LOG_TARGET,
                computed = self.sum,
                received = %String::from_utf8_lossy(&[hi, lo]),
                "bad checksum"
            );
            if is_packet && !self.no_ack {
                self.replies.push(b'-');
            }
            self.body.clear();
            return WireEvent::BadChecksum;
        }
        if is_packet && !self.no_ack {
            self.replies.push(b'+');
        }
        if self.oversize {
            return WireEvent::Oversize;
        }
        if self.rle && std::mem::take(&mut self.rle_pending) {
            // A `*` right before `#` has no count: keep it literally.
            self.decode_byte(RLE_MARKER);
        }
        if !self.oversize {
            self.reserve_body(1);
            // Client mode stays lenient (a test client reading replies).
            if self.unescaper.finish(&mut self.body) && !self.rle {
                debug!(target: LOG_TARGET, "packet ends with a lone '}}' escape: dropped");
                self.body.clear();
                return WireEvent::BadEscape;
            }
        }
        if self.oversize {
            return WireEvent::Oversize;
        }
        let body = std::mem::take(&mut self.body);
        match self.kind {
            Kind::Packet => WireEvent::Packet(body),
            Kind::Notification => WireEvent::Notification(body),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::wire::Encoder;
    use crate::wire::DEFAULT_MAX_PACKET;

    fn events(f: &mut Framer, data: &[u8]) -> Vec<WireEvent> {
        f.push(data);
        std::iter::from_fn(|| f.next_event()).collect()
    }

    fn pkt(p: &[u8]) -> WireEvent {
        WireEvent::Packet(p.to_vec())
    }

    fn framed(p: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        Encoder::new().packet(p, &mut out);
        out
    }

    #[test]
    fn single_packet_is_acked() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$OK#9a"), vec![pkt(b"OK")]);
        assert_eq!(f.take_replies().unwrap(), b"+");
        assert_eq!(f.take_replies(), None);
    }

    #[test]
    fn empty_packet() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$#00"), vec![pkt(b"")]);
    }

    #[test]
    fn checksum_digits_in_either_case() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$OK#9A"), vec![pkt(b"OK")]);
    }

    #[test]
    fn ack_nak_interrupt_between_packets() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(
            events(&mut f, b"+-\x03$OK#9a+"),
            vec![
                WireEvent::Ack,
                WireEvent::Nak,
                WireEvent::Interrupt,
                pkt(b"OK"),
                WireEvent::Ack
            ]
        );
    }

    #[test]
    fn specials_inside_a_body_are_data() {
        // '+', '-', '%' and 0x03 inside a packet are just bytes.
        let payload = b"X1000,4:+-%\x03";
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, &framed(payload)), vec![pkt(payload)]);
    }

    #[test]
    fn noise_between_packets_is_skipped() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(
            events(&mut f, b"garbage\r\n\x00\xff$OK#9ajunk"),
            vec![pkt(b"OK")]
        );
        assert_eq!(f.take_replies().unwrap(), b"+");
    }

    #[test]
    fn bad_checksum_queues_nak_in_ack_mode() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(
            events(&mut f, b"$OK#00$OK#zz$OK#9a"),
            vec![WireEvent::BadChecksum, WireEvent::BadChecksum, pkt(b"OK")]
        );
        assert_eq!(f.take_replies().unwrap(), b"--+");
    }

    #[test]
    fn no_ack_mode_verifies_but_queues_nothing() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        f.set_no_ack(true);
        assert!(f.no_ack());
        assert_eq!(
            events(&mut f, b"$OK#00$OK#9a"),
            vec![WireEvent::BadChecksum, pkt(b"OK")]
        );
        assert_eq!(f.take_replies(), None);
    }

    #[test]
    fn switching_to_no_ack_affects_only_later_packets() {
        // Both packets arrive in one read; the ack decision is made when
        // each packet is handed out.
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        let mut wire = framed(b"QStartNoAckMode");
        wire.extend(framed(b"qSupported"));
        f.push(&wire);
        assert_eq!(f.next_event(), Some(pkt(b"QStartNoAckMode")));
        f.set_no_ack(true);
        assert_eq!(f.next_event(), Some(pkt(b"qSupported")));
        assert_eq!(f.next_event(), None);
        assert_eq!(f.take_replies().unwrap(), b"+");
    }

    #[test]
    fn dollar_inside_body_restarts() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$qSupp$OK#9a"), vec![pkt(b"OK")]);
        assert_eq!(f.take_replies().unwrap(), b"+");
    }

    #[test]
    fn dollar_in_checksum_restarts() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$qSupp#$OK#9a"), vec![pkt(b"OK")]);
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, b"$OK#9$OK#9a"), vec![pkt(b"OK")]);
        assert_eq!(f.take_replies().unwrap(), b"+");
    }

    #[test]
    fn escapes_are_undone_in_server_mode() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        // X packet carrying '#', '$', '}', '*'; checksum over the wire bytes.
        let body = b"X0,4:}\x03}\x04}]}\x0a";
        let mut wire = vec![b'$'];
        wire.extend_from_slice(body);
        wire.push(b'#');
        hex::encode(&[crate::wire::checksum(body)], &mut wire);
        assert_eq!(events(&mut f, &wire), vec![pkt(b"X0,4:#$}*")]);
    }

    #[test]
    fn server_mode_keeps_star() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        let body = b"a* ";
        let mut wire = vec![b'$'];
        wire.extend_from_slice(body);
        wire.push(b'#');
        hex::encode(&[crate::wire::checksum(body)], &mut wire);
        assert_eq!(events(&mut f, &wire), vec![pkt(b"a* ")]);
    }

    #[test]
    fn client_mode_expands_rle() {
        let mut f = Framer::client(DEFAULT_MAX_PACKET);
        let mut e = Encoder::new();
        e.set_rle(true);
        let payload = b"00000000000000000000000000000000ffff}}}}";
        let mut wire = Vec::new();
        e.packet(payload, &mut wire);
        assert!(wire.contains(&b'*'));
        assert_eq!(events(&mut f, &wire), vec![pkt(payload)]);
    }

    #[test]
    fn client_mode_count_char_is_not_an_escape() {
        // `x*}` = x + 96 repeats; the `}` is a count, not an escape.
        let body = b"x*}y";
        let mut wire = vec![b'$'];
        wire.extend_from_slice(body);
        wire.push(b'#');
        hex::encode(&[crate::wire::checksum(body)], &mut wire);
        let mut f = Framer::client(DEFAULT_MAX_PACKET);
        let mut want = vec![b'x'; 97];
        want.push(b'y');
        assert_eq!(events(&mut f, &wire), vec![pkt(&want)]);
    }

    #[test]
    fn client_mode_malformed_rle_is_kept_literally() {
        for (body, want) in [
            (&b"*!a"[..], &b"*!a"[..]),
            (b"a*", b"a*"),
            (b"a*\x1f", b"a*\x1f"),
        ] {
            let mut wire = vec![b'$'];
            wire.extend_from_slice(body);
            wire.push(b'#');
            hex::encode(&[crate::wire::checksum(body)], &mut wire);
            let mut f = Framer::client(DEFAULT_MAX_PACKET);
            assert_eq!(events(&mut f, &wire), vec![pkt(want)], "{body:?}");
        }
    }

    fn raw_frame(body: &[u8]) -> Vec<u8> {
        let mut wire = vec![b'$'];
        wire.extend_from_slice(body);
        wire.push(b'#');
        hex::encode(&[crate::wire::checksum(body)], &mut wire);
        wire
    }

    /// R3 of issue 16: `X404060,1:}` was written as 0x7d. A lone `}` at the
    /// end of a body is refused (acked: the frame itself arrived intact),
    /// and the framer goes on with the next packet.
    #[test]
    fn dangling_escape_is_refused() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        let mut wire = raw_frame(b"X404060,1:}");
        wire.extend_from_slice(&raw_frame(b"ab}]"));
        assert_eq!(
            events(&mut f, &wire),
            vec![WireEvent::BadEscape, pkt(b"ab}")]
        );
        assert_eq!(f.take_replies().unwrap(), b"++");
        // The client side stays lenient.
        let mut c = Framer::client(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut c, &raw_frame(b"ab}")), vec![pkt(b"ab}")]);
    }

    #[test]
    fn notifications_are_decoded_and_not_acked() {
        let mut f = Framer::client(DEFAULT_MAX_PACKET);
        let mut wire = Vec::new();
        Encoder::new().notification(b"Stop:T05", &mut wire);
        assert_eq!(
            events(&mut f, &wire),
            vec![WireEvent::Notification(b"Stop:T05".to_vec())]
        );
        assert_eq!(f.take_replies(), None);
        // A bad notification is reported but not NAKed.
        assert_eq!(
            events(&mut f, b"%Stop:T05#00"),
            vec![WireEvent::BadChecksum]
        );
        assert_eq!(f.take_replies(), None);
    }

    #[test]
    fn percent_inside_packet_is_data_and_dollar_inside_notification_restarts() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        assert_eq!(events(&mut f, &framed(b"a%b")), vec![pkt(b"a%b")]);
        assert_eq!(events(&mut f, b"%Sto$OK#9a"), vec![pkt(b"OK")]);
    }

    #[test]
    fn byte_at_a_time() {
        let mut wire = framed(b"vCont;c");
        wire.extend(b"\x03+");
        wire.extend(framed(b"m1000,40"));
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        let mut got = Vec::new();
        for b in &wire {
            got.extend(events(&mut f, std::slice::from_ref(b)));
        }
        assert_eq!(
            got,
            vec![
                pkt(b"vCont;c"),
                WireEvent::Interrupt,
                WireEvent::Ack,
                pkt(b"m1000,40")
            ]
        );
    }

    #[test]
    fn oversize_packet_is_discarded_then_reported() {
        let mut f = Framer::new(16);
        let big = vec![b'a'; 17];
        assert_eq!(events(&mut f, &framed(&big)), vec![WireEvent::Oversize]);
        assert_eq!(f.take_replies().unwrap(), b"+");
        // Exactly at the limit is fine, and the framer recovers.
        let ok = vec![b'b'; 16];
        assert_eq!(events(&mut f, &framed(&ok)), vec![pkt(&ok)]);
        assert!(f.body.capacity() <= 16);
    }

    #[test]
    fn oversize_with_bad_checksum_is_bad_checksum() {
        let mut f = Framer::new(4);
        assert_eq!(
            events(&mut f, b"$aaaaaaaa#00"),
            vec![WireEvent::BadChecksum]
        );
        assert_eq!(f.take_replies().unwrap(), b"-");
    }

    #[test]
    fn limit_counts_wire_bytes_in_server_mode() {
        // 8 escaped bytes are 16 on the wire: over a limit of 10.
        let mut f = Framer::new(10);
        assert_eq!(
            events(&mut f, &framed(b"}}}}}}}}")),
            vec![WireEvent::Oversize]
        );
    }

    #[test]
    fn client_mode_limits_expanded_size() {
        let mut e = Encoder::new();
        e.set_rle(true);
        let mut wire = Vec::new();
        e.packet(&[b'0'; 300], &mut wire);
        assert!(wire.len() < 20);
        let mut f = Framer::client(100);
        assert_eq!(events(&mut f, &wire), vec![WireEvent::Oversize]);
        let mut f = Framer::client(300);
        assert_eq!(events(&mut f, &wire), vec![pkt(&[b'0'; 300])]);
    }

    #[test]
    fn unconsumed_input_survives_push() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        f.push(b"$OK#9a$O");
        assert_eq!(f.next_event(), Some(pkt(b"OK")));
        f.push(b"K#9a");
        assert_eq!(f.next_event(), Some(pkt(b"OK")));
        assert_eq!(f.next_event(), None);
    }

    #[test]
    fn garbage_stream_uses_bounded_memory() {
        // 10 MB in 64 KiB reads: pseudo-random noise, then one endless body.
        let max = 4096;
        let mut f = Framer::new(max);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut chunk = vec![0u8; 64 * 1024];
        let mut peak = 0;
        for round in 0..160 {
            for b in chunk.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = if round >= 80 { b'a' } else { seed as u8 };
            }
            if round == 80 {
                chunk[0] = b'$';
            }
            f.push(&chunk);
            while f.next_event().is_some() {}
            f.take_replies();
            peak = peak.max(f.buffered_bytes());
        }
        assert!(peak <= 64 * 1024 + max + 64, "peak {peak} bytes buffered");
    }

    #[test]
    fn a_recycled_body_is_reused_for_the_next_packet() {
        let mut f = Framer::new(DEFAULT_MAX_PACKET);
        f.set_no_ack(true);
        f.push(b"$qC#b4");
        let Some(WireEvent::Packet(first)) = f.next_event() else {
            panic!("no packet");
        };
        assert_eq!(first, b"qC");
        let ptr = first.as_ptr();
        f.recycle(first);
        f.push(b"$qC#b4");
        let Some(WireEvent::Packet(second)) = f.next_event() else {
            panic!("no packet");
        };
        assert_eq!(second, b"qC");
        assert_eq!(second.as_ptr(), ptr, "the body's buffer was not reused");
        // A buffer larger than the keep limit is not taken back.
        f.recycle(Vec::with_capacity(BODY_KEEP + 1));
        assert_eq!(f.buffered_bytes(), f.input.capacity());
        // Acknowledgements are appended without giving up their buffer.
        let mut acks = Framer::new(64);
        acks.push(b"$qC#b4");
        assert!(acks.next_event().is_some());
        let mut out = Vec::new();
        acks.append_replies(&mut out);
        assert_eq!(out, b"+");
        assert!(acks.take_replies().is_none());
    }
}
