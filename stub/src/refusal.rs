//! A refused connection: answered with the reason, within a budget.
//!
//! A connection the server does not serve (a second client while a session
//! is live, a GPU claim that fails) gets one error reply with the reason to
//! its first packet and is closed. It must not cost the live sessions
//! anything: it is read at most [`crate::bounds::REFUSED_TURN_BYTES`] per
//! loop turn (the server comes back to it on the next turn, after the
//! other connections), [`crate::bounds::REFUSED_TOTAL_BYTES`] in all, and
//! for at most [`crate::bounds::REFUSED_DEADLINE`]; when either runs out
//! it is answered as if it had sent its packet, and closed.
//!
//! The reply is `E.` followed by the reason as text: gdb treats any reply
//! that starts with `E.` as an error and prints it whole ("Remote failure
//! reply: E.…", `packet_check_result` in gdb's `remote.c`), where the hex
//! of the `E01;HEX` form (which only a client that sent
//! `QEnableErrorStrings` can decode) shows as digits.

use std::time::Instant;

use crate::bounds::ConnBudget;
use crate::wire::Encoder;
use crate::wire::Framer;
use crate::wire::WireEvent;

/// Body size limit of a refused connection's framer: it only has to find
/// the end of one packet.
const REFUSED_MAX_PACKET: usize = 4096;

/// The error payload that carries `reason` as text (`E.reason`).
pub fn refusal_payload(reason: &str) -> Vec<u8> {
    let mut p = b"E.".to_vec();
    p.extend_from_slice(reason.as_bytes());
    p
}

/// The framed refusal (`$E.reason#cc`), acknowledged first with `+` so a
/// client in ack mode takes it.
pub fn refusal_frames(reason: &str) -> Vec<u8> {
    let mut out = b"+".to_vec();
    Encoder::new().packet(&refusal_payload(reason), &mut out);
    out
}

/// One refused connection.
#[derive(Debug)]
pub struct Refusal {
    framer: Framer,
    reason: String,
    out: Vec<u8>,
    budget: ConnBudget,
    answered: bool,
}

impl Refusal {
    /// A connection refused at `now` for `reason`.
    pub fn new(reason: String, now: Instant) -> Self {
        Self {
            framer: Framer::new(REFUSED_MAX_PACKET),
            reason,
            out: Vec::new(),
            budget: ConnBudget::new(now),
            answered: false,
        }
    }

    /// The reason it was refused.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// How many bytes may be read from it in loop turn `turn` (0: come
    /// back next turn).
    pub fn allowance(&mut self, turn: u64) -> usize {
        if self.answered {
            return 0;
        }
        self.budget.allowance(turn)
    }

    /// Feeds bytes read in loop turn `turn`. Returns true once the
    /// connection is answered (flush [`Refusal::out`], then close).
    pub fn on_input(&mut self, turn: u64, data: &[u8]) -> bool {
        self.budget.spend(turn, data.len());
        self.framer.push(data);
        while let Some(ev) = self.framer.next_event() {
            if matches!(
                ev,
                WireEvent::Packet(_) | WireEvent::Oversize | WireEvent::BadEscape
            ) {
                self.answer();
                return true;
            }
        }
        if self.budget.exhausted() {
            tracing::debug!(target: "mux", "refused connection sent its byte budget without a packet");
            self.answer();
        }
        self.answered
    }

    /// The deadline passed (`now`): answer and close. Returns true when
    /// it did.
    pub fn on_tick(&mut self, now: Instant) -> bool {
        if !self.answered && now >= self.budget.deadline() {
            tracing::debug!(target: "mux", "refused connection sent no packet in time");
            self.answer();
        }
        self.answered
    }

    /// When [`Refusal::on_tick`] must run at the latest (`None` once
    /// answered).
    pub fn deadline(&self) -> Option<Instant> {
        (!self.answered).then(|| self.budget.deadline())
    }

    fn answer(&mut self) {
        if !self.answered {
            self.answered = true;
            self.out = refusal_frames(&self.reason);
        }
    }

    /// Bytes to write to the connection.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::bounds::REFUSED_DEADLINE;
    use crate::bounds::REFUSED_TOTAL_BYTES;
    use crate::bounds::REFUSED_TURN_BYTES;

    #[test]
    fn first_packet_is_answered_with_text() {
        let now = Instant::now();
        let mut r = Refusal::new("busy".into(), now);
        assert!(!r.on_input(1, b"+$qSupp"));
        assert!(r.out().is_empty());
        assert!(r.on_input(1, b"orted#37"));
        assert_eq!(r.out().as_slice(), b"+$E.busy#36");
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
            assert_eq!(r.allowance(turn), n);
            r.on_input(turn, &junk[..n]);
            assert_eq!(r.allowance(turn), 0, "one budget per turn");
        }
        assert_eq!(turn as usize, REFUSED_TOTAL_BYTES / REFUSED_TURN_BYTES + 1);
        assert!(r.out().starts_with(b"+$E.busy"));
    }

    #[test]
    fn silence_is_answered_at_the_deadline() {
        let now = Instant::now();
        let mut r = Refusal::new("busy".into(), now);
        assert!(!r.on_tick(now));
        assert_eq!(r.deadline(), Some(now + REFUSED_DEADLINE));
        assert!(r.on_tick(now + REFUSED_DEADLINE));
        assert_eq!(r.deadline(), None);
        assert!(r.out().starts_with(b"+$E.busy"));
    }
}
