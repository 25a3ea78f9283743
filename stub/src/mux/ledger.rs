//! The action ledger: every accelerator action (a connection offer) gets a
//! strictly increasing identifier and a recorded fate: offered → claimed →
//! closed. lldb 23.1's own dedup only skips an identifier equal to the last
//! one it saw (research/lldb-accelerator.md §2.2), so exactly-once is the
//! server's job: an offer is made at most once per GPU process lifetime,
//! and a claim is accepted at most once per offer.

/// Fate of one offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferState {
    /// Offered to the CPU session's client; not yet claimed.
    Offered,
    /// A connection claimed it (session id).
    Claimed(u64),
    /// The GPU session ended, or the offer was withdrawn (runtime unloaded,
    /// process exited).
    Closed,
}

impl std::fmt::Display for OfferState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OfferState::Offered => f.write_str("Offered"),
            OfferState::Claimed(s) => write!(f, "Claimed by session {s}"),
            OfferState::Closed => f.write_str("Closed"),
        }
    }
}

/// One ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Identifier (strictly increasing, never reused).
    pub id: i64,
    /// GPU process lifetime this offer belongs to.
    pub lifetime: u64,
    /// The URL the client was told to connect to.
    pub url: String,
    /// Target triple offered.
    pub triple: String,
    /// Where it stands.
    pub state: OfferState,
}

/// Why a claim was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// No offer is pending.
    #[error("no GPU connection offer is pending on this server")]
    NoOffer,
    /// The pending offer was already claimed.
    #[error("the GPU connection offer {0} was already claimed by another connection")]
    AlreadyClaimed(i64),
}

/// The ledger.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    next_id: i64,
    offers: Vec<Offer>,
}

impl Ledger {
    /// Empty ledger; the first identifier is 1 (as lldb-server plugins do).
    pub fn new() -> Self {
        Ledger {
            next_id: 1,
            offers: Vec::new(),
        }
    }

    /// A fresh identifier for an action that is not an offer (e.g. the
    /// Initialize action that only carries breakpoints).
    pub fn next_identifier(&mut self) -> i64 {
        let id = self.next_id.max(1);
        self.next_id = id + 1;
        id
    }

    /// Record an offer for GPU process `lifetime`. Returns `None` when that
    /// lifetime already has one (exactly once per lifetime).
    pub fn offer(&mut self, lifetime: u64, url: &str, triple: &str) -> Option<&Offer> {
        if self.offers.iter().any(|o| o.lifetime == lifetime) {
            return None;
        }
        let id = self.next_identifier();
        self.offers.push(Offer {
            id,
            lifetime,
            url: url.to_string(),
            triple: triple.to_string(),
            state: OfferState::Offered,
        });
        self.offers.last()
    }

    /// The offer waiting for its connection, if any.
    pub fn pending(&self) -> Option<&Offer> {
        self.offers.iter().find(|o| o.state == OfferState::Offered)
    }

    /// The most recent offer.
    pub fn latest(&self) -> Option<&Offer> {
        self.offers.last()
    }

    /// A new connection claims the pending offer.
    pub fn claim(&mut self, session: u64) -> Result<i64, ClaimError> {
        if let Some(o) = self
            .offers
            .iter_mut()
            .find(|o| o.state == OfferState::Offered)
        {
            o.state = OfferState::Claimed(session);
            return Ok(o.id);
        }
        match self.offers.last() {
            Some(o) if matches!(o.state, OfferState::Claimed(_)) => {
                Err(ClaimError::AlreadyClaimed(o.id))
            }
            _ => Err(ClaimError::NoOffer),
        }
    }

    /// Why a claim would be refused now (no side effects).
    pub fn refusal(&self) -> Option<ClaimError> {
        if self.pending().is_some() {
            return None;
        }
        match self.offers.last() {
            Some(o) if matches!(o.state, OfferState::Claimed(_)) => {
                Some(ClaimError::AlreadyClaimed(o.id))
            }
            _ => Some(ClaimError::NoOffer),
        }
    }

    /// The GPU session of `session` ended, or the lifetime ended: close.
    pub fn close_session(&mut self, session: u64) {
        for o in &mut self.offers {
            if o.state == OfferState::Claimed(session) {
                o.state = OfferState::Closed;
            }
        }
    }

    /// Withdraw every offer of a lifetime (runtime unloaded, process gone).
    pub fn close_lifetime(&mut self, lifetime: u64) {
        for o in &mut self.offers {
            if o.lifetime == lifetime && o.state == OfferState::Offered {
                o.state = OfferState::Closed;
            }
        }
    }

    /// All entries (for `monitor gpu` and tests).
    pub fn offers(&self) -> &[Offer] {
        &self.offers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_once() {
        let mut l = Ledger::new();
        assert_eq!(l.claim(7), Err(ClaimError::NoOffer));
        let id = l.offer(1, "connect://127.0.0.1:1", "t").unwrap().id;
        assert_eq!(id, 1);
        assert!(
            l.offer(1, "connect://127.0.0.1:1", "t").is_none(),
            "one offer per lifetime"
        );
        assert_eq!(l.claim(2), Ok(1));
        assert_eq!(l.claim(3), Err(ClaimError::AlreadyClaimed(1)));
        l.close_session(2);
        assert_eq!(l.claim(4), Err(ClaimError::NoOffer));
        let id2 = l.offer(2, "u", "t").unwrap().id;
        assert!(id2 > id);
        assert_eq!(l.next_identifier(), id2 + 1);
    }
}
