//! A refused connection: answered with the reason, within a budget.
//!
//! A connection the server does not serve (a second client while a session
//! is live, a GPU claim that fails) gets an error reply with the reason to
//! each packet it sends, and is closed [`REFUSED_LINGER`] after its last
//! answer. It must not cost the live sessions
//! anything: it is read once a loop turn, at most
//! [`crate::bounds::REFUSED_TURN_BYTES`] (the server comes back to it on
//! the next turn, after the other connections; `server/turns.rs` counts
//! what each turn read), [`crate::bounds::REFUSED_TOTAL_BYTES`] in all, and
//! for at most [`crate::bounds::REFUSED_DEADLINE`]; when either runs out
//! it is answered as if it had sent its packet, and closed.
//!
//! The reply is `E.` followed by the reason as text: gdb treats any reply
//! that starts with `E.` as an error and prints it whole ("Remote failure
//! reply: E.…", `packet_check_result` in gdb's `remote.c`), where the hex
//! of the `E01;HEX` form (which only a client that sent
//! `QEnableErrorStrings` can decode) shows as digits.

use std::time::Duration;
use std::time::Instant;

use crate::bounds::ConnBudget;
use crate::wire::Encoder;
use crate::wire::Framer;
use crate::wire::WireEvent;

/// Body size limit of a refused connection's framer: it only has to find
/// the end of one packet.
const REFUSED_MAX_PACKET: usize = 4096;

/// How long a refused connection stays open after its last answer, for
/// the client's next packets: gdb and lldb go on with their handshake after
/// a failure and end cleanly only when those packets are answered too
/// (lldb 23.1 waits 150 s for a stop when the connection is simply closed).
pub const REFUSED_LINGER: Duration = Duration::from_secs(1);

/// The error payload that carries `reason` as text (`E.reason`).
pub fn refusal_payload(reason: &str) -> Vec<u8> {
    let mut p = b"E.".to_vec();
    p.extend_from_slice(reason.as_bytes());
    p
}

/// The framed refusal (`$E.reason#cc`).
pub fn refusal_frames(reason: &str) -> Vec<u8> {
    let mut out = Vec::new();
    Encoder::new().packet(&refusal_payload(reason), &mut out);
    out
}

/// lldb 23.1 prints no error text while it connects (every failure of
/// its connect sequence ends in its own message), but it prints a stop's
/// `description`: it shows "Process 1 stopped / * thread #1, stop reason =
/// REASON" (`ProcessGDBRemote::SetThreadStopInfo` takes the hex
/// `description` key of a `T` reply as the stop's text). So the refusal
/// answers `?` with a stop of a placeholder thread 1 that carries the
/// reason, `qC` and the thread list name that thread, and `qRegisterInfo`
/// ends lldb's register scan with `E45` (any other reply makes lldb ask for
/// the next register number for ever). lldb then prints the reason and,
/// with nothing else to do, ends (`-b`) or waits at its prompt; gdb 13
/// sends `qSupported` first, gets `E.REASON` and ends there, as before.
pub fn lldb_answer(packet: &[u8], reason: &str) -> Option<Vec<u8>> {
    let p = packet;
    if p == b"?" {
        let mut t = b"T13thread:1;reason:exception;description:".to_vec();
        crate::wire::hex::encode(reason.as_bytes(), &mut t);
        t.push(b';');
        return Some(t);
    }
    if p == b"qC" {
        return Some(b"QC1".to_vec());
    }
    if p.starts_with(b"qfThreadInfo") {
        return Some(b"m1".to_vec());
    }
    if p.starts_with(b"qsThreadInfo") {
        return Some(b"l".to_vec());
    }
    if p.starts_with(b"qRegisterInfo") {
        return Some(b"E45".to_vec());
    }
    None
}

/// Where a refused connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No packet yet.
    Waiting,
    /// Answered; open for the client's next packets until then.
    Lingering(Instant),
    /// To be closed.
    Done,
}

/// One refused connection.
#[derive(Debug)]
pub struct Refusal {
    framer: Framer,
    reason: String,
    out: Vec<u8>,
    budget: ConnBudget,
    phase: Phase,
}

impl Refusal {
    /// A connection refused at `now` for `reason`.
    pub fn new(reason: String, now: Instant) -> Self {
        Self {
            framer: Framer::new(REFUSED_MAX_PACKET),
            reason,
            out: Vec::new(),
            budget: ConnBudget::new(now),
            phase: Phase::Waiting,
        }
    }

    /// The reason it was refused.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// How many bytes may be read from it in loop turn `turn` (0: come
    /// back next turn, or never once it is to be closed).
    pub fn allowance(&mut self, turn: u64) -> usize {
        if self.phase == Phase::Done {
            return 0;
        }
        self.budget.allowance(turn)
    }

    /// Feeds bytes read in loop turn `turn` at `now`; every packet gets
    /// its answer. Returns true when the connection is to be closed (after
    /// [`Refusal::out`] is flushed).
    pub fn on_input(&mut self, turn: u64, now: Instant, data: &[u8]) -> bool {
        self.budget.spend(turn, data.len());
        self.framer.push(data);
        while let Some(ev) = self.framer.next_event() {
            if let Some(acks) = self.framer.take_replies() {
                self.out.extend_from_slice(&acks);
            }
            match ev {
                WireEvent::Packet(p) => self.answer(&p, now),
                WireEvent::Oversize | WireEvent::BadEscape => self.answer(b"", now),
                _ => {}
            }
        }
        if self.budget.exhausted() && self.phase != Phase::Done {
            tracing::debug!(target: "mux", "refused connection used its byte budget");
            if self.phase == Phase::Waiting {
                self.out.extend_from_slice(&refusal_frames(&self.reason));
            }
            self.phase = Phase::Done;
        }
        self.phase == Phase::Done
    }

    /// Time passed (`now`): a connection past its deadline without a
    /// packet gets its answer; one that lingered long enough is done.
    /// Returns true when the connection is to be closed.
    pub fn on_tick(&mut self, now: Instant) -> bool {
        match self.phase {
            Phase::Waiting if now >= self.budget.deadline() => {
                tracing::debug!(target: "mux", "refused connection sent no packet in time");
                self.out.extend_from_slice(&refusal_frames(&self.reason));
                self.phase = Phase::Done;
            }
            Phase::Lingering(until) if now >= until.min(self.budget.deadline()) => {
                self.phase = Phase::Done;
            }
            _ => {}
        }
        self.phase == Phase::Done
    }

    /// When [`Refusal::on_tick`] must run at the latest (`None` once it is
    /// to be closed).
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Waiting => Some(self.budget.deadline()),
            Phase::Lingering(until) => Some(until.min(self.budget.deadline())),
            Phase::Done => None,
        }
    }

    /// The answer to one packet: the reason as an error (gdb prints it),
    /// except for the packets lldb's connect sequence needs to show it
    /// ([`lldb_answer`]).
    fn answer(&mut self, packet: &[u8], now: Instant) {
        let payload =
            lldb_answer(packet, &self.reason).unwrap_or_else(|| refusal_payload(&self.reason));
        Encoder::new().packet(&payload, &mut self.out);
        self.phase = Phase::Lingering(now + REFUSED_LINGER);
    }

    /// Bytes to write to the connection.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::bounds::REFUSED_DEADLINE;
    use crate::bounds::REFUSED_TOTAL_BYTES;
    use crate::bounds::REFUSED_TURN_BYTES;

    #[test]
    fn every_packet_is_answered_with_text_then_it_lingers() {
        let now = Instant::now();
        let mut r = Refusal::new("busy".into(), now);
        assert!(!r.on_input(1, now, b"+$qSupp"));
        assert!(r.out().is_empty());
        assert!(!r.on_input(1, now, b"orted#37"));
        assert_eq!(std::mem::take(r.out()), b"+$E.busy#36");
        assert!(!r.on_input(1, now, b"+$qfThreadInfo#bb"));
        assert_eq!(std::mem::take(r.out()), b"+$m1#9e");
        assert_eq!(r.deadline(), Some(now + REFUSED_LINGER));
        assert!(!r.on_tick(now));
        assert!(r.on_tick(now + REFUSED_LINGER), "closed after the linger");
        assert_eq!(r.allowance(2), 0, "nothing more is read");
    }

    #[test]
    fn a_flood_is_read_within_budget_then_answered() {
        let now = Instant::now();
        let mut r = Refusal::new("busy".into(), now);
        let junk = vec![b'x'; REFUSED_TURN_BYTES];
        let mut turn = 0;
        loop {
            turn += 1;
            let n = r.allowance(turn);
            assert!(n <= REFUSED_TURN_BYTES);
            if n == 0 {
                break;
            }
            r.on_input(turn, now, &junk[..n]);
            assert_eq!(r.allowance(turn), 0, "one budget per turn");
        }
        assert_eq!(turn as usize, REFUSED_TOTAL_BYTES / REFUSED_TURN_BYTES + 1);
        assert!(r.out().starts_with(b"$E.busy"));
    }

    #[test]
    fn silence_is_answered_at_the_deadline() {
        let now = Instant::now();
        let mut r = Refusal::new("busy".into(), now);
        assert!(!r.on_tick(now));
        assert_eq!(r.deadline(), Some(now + REFUSED_DEADLINE));
        assert!(r.on_tick(now + REFUSED_DEADLINE));
        assert_eq!(r.deadline(), None);
        assert!(r.out().starts_with(b"$E.busy"));
    }
}
