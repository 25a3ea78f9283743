//! Loop-turn accounting: the loop's fairness, counted in turns and bytes
//! rather than in wall-clock time (README "Security and limits").
//!
//! A *turn* is one pass of the loop: one `poll`, then the refused
//! connections' backlog and every event it returned. Per turn the server
//! records what it did for refused connections (bytes and `read` calls,
//! per connection and together; each is bounded by
//! [`crate::bounds::REFUSED_TURN_BYTES`] a connection), and, while refused
//! connections are open, whether a session ended the turn with bytes of
//! its client still unread in its socket and read nothing in it. The
//! longest run of turn ends through which a session's bytes sat unread
//! is how long a live session can be kept waiting by hostile connections:
//! a session's bytes that arrive during a turn are read by the next one,
//! so a fair loop keeps it at 1.
//!
//! `monitor loop` prints the counts ([`LoopStats::report`]); they are
//! maxima and totals since the server started. The socket check is one
//! `recv(MSG_PEEK | MSG_DONTWAIT)` a session a turn, made only while
//! refused connections are open (the only load that competes with the
//! sessions for a turn's work), so an idle or busy-polling server pays
//! nothing for it.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::os::fd::RawFd;
use std::rc::Rc;

use mio::Token;

use super::tokens::IdMap;

/// What the loop did, counted (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Loop turns so far (the server's turn number, `Server::turn`, as of
    /// the last turn's end).
    pub turns: u64,
    /// Connections refused so far (the connection limit's turn-aways not
    /// counted: they are answered at once and never read).
    pub refused_connections: u64,
    /// Bytes read from refused connections, in all.
    pub refused_bytes: u64,
    /// Most bytes read from one refused connection in one turn.
    pub max_connection_turn_bytes: usize,
    /// Most `read` calls made on one refused connection in one turn.
    pub max_connection_turn_reads: usize,
    /// Most bytes read from all refused connections together in one turn.
    pub max_turn_refused_bytes: usize,
    /// Most refused connections open at the end of a turn.
    pub max_refused_open: usize,
    /// Turns that ended with refused connections open.
    pub contended_turns: u64,
    /// Reads of a session's client bytes in turns that ended with refused
    /// connections open.
    pub contended_session_reads: u64,
    /// The most turn ends in a row through which bytes of a session's
    /// client sat unread in its socket, while refused connections were
    /// open: a turn that ends with bytes unread counts one more when the
    /// session read nothing in it, and starts a new run of 1 when it read
    /// (those bytes came after its read).
    pub max_session_wait_turns: u64,
}

impl LoopStats {
    /// The text of `monitor loop`: one `name value` line per count.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let mut line = |name: &str, v: u64| {
            let _ = writeln!(s, "{name} {v}");
        };
        line("turns", self.turns);
        line("refused-connections", self.refused_connections);
        line("refused-bytes", self.refused_bytes);
        line(
            "max-connection-turn-bytes",
            self.max_connection_turn_bytes as u64,
        );
        line(
            "max-connection-turn-reads",
            self.max_connection_turn_reads as u64,
        );
        line("max-turn-refused-bytes", self.max_turn_refused_bytes as u64);
        line("max-refused-open", self.max_refused_open as u64);
        line("contended-turns", self.contended_turns);
        line("contended-session-reads", self.contended_session_reads);
        line("max-session-wait-turns", self.max_session_wait_turns);
        line(
            "refused-turn-budget-bytes",
            crate::bounds::REFUSED_TURN_BYTES as u64,
        );
        s
    }
}

/// The counts, shared by the server (the one writer) with its sessions
/// (`monitor loop` reads them).
pub type SharedLoopStats = Rc<RefCell<LoopStats>>;

/// The server's per-turn bookkeeping behind [`LoopStats`].
#[derive(Debug, Default)]
pub(super) struct TurnCounter {
    stats: SharedLoopStats,
    /// This turn's refused reads: connection → (bytes, reads).
    refused_now: IdMap<Token, (usize, usize)>,
    /// The sessions that read input this turn, and how many reads.
    session_read_now: IdMap<Token, u64>,
    /// Consecutive turns each session ended with input unread.
    waiting: IdMap<Token, u64>,
}

impl TurnCounter {
    /// The counts, for sessions.
    pub(super) fn shared(&self) -> SharedLoopStats {
        self.stats.clone()
    }

    /// A refused connection was accepted.
    pub(super) fn refused_opened(&mut self) {
        self.stats.borrow_mut().refused_connections += 1;
    }

    /// `bytes` were read from refused connection `t` in one `read` call
    /// (0: a call that found nothing).
    pub(super) fn refused_read(&mut self, t: Token, bytes: usize) {
        let e = self.refused_now.entry(t).or_default();
        e.0 += bytes;
        e.1 += 1;
    }

    /// Session `t` read bytes from its client (one `read` call).
    pub(super) fn session_read(&mut self, t: Token) {
        *self.session_read_now.entry(t).or_default() += 1;
    }

    /// Close turn number `turn`. `refused_open`: refused connections open now;
    /// `sessions`: each session's connection token and socket fd (`None`
    /// for stdio, which cannot be peeked).
    pub(super) fn end_turn(
        &mut self,
        turn: u64,
        refused_open: usize,
        sessions: &[(Token, Option<RawFd>)],
    ) {
        let mut st = self.stats.borrow_mut();
        st.turns = turn;
        let mut together = 0;
        for (bytes, reads) in self.refused_now.drain().map(|(_, v)| v) {
            together += bytes;
            st.refused_bytes += bytes as u64;
            st.max_connection_turn_bytes = st.max_connection_turn_bytes.max(bytes);
            st.max_connection_turn_reads = st.max_connection_turn_reads.max(reads);
        }
        st.max_turn_refused_bytes = st.max_turn_refused_bytes.max(together);
        st.max_refused_open = st.max_refused_open.max(refused_open);
        // Cleared, not replaced: the map keeps its capacity, so an ordinary
        // turn allocates nothing.
        let read = &mut self.session_read_now;
        if refused_open == 0 {
            // (`clear` on an empty map still rewrites its control bytes:
            // a turn without refused connections touches nothing.)
            if !self.waiting.is_empty() {
                self.waiting.clear();
            }
            if !read.is_empty() {
                read.clear();
            }
            return;
        }
        st.contended_turns += 1;
        st.contended_session_reads += read.values().sum::<u64>();
        self.waiting
            .retain(|t, _| sessions.iter().any(|(s, _)| s == t));
        for (t, fd) in sessions {
            let unread = fd.is_some_and(has_unread);
            let w = self.waiting.entry(*t).or_default();
            *w = match (unread, read.contains_key(t)) {
                (false, _) => 0,
                (true, true) => 1,
                (true, false) => *w + 1,
            };
            st.max_session_wait_turns = st.max_session_wait_turns.max(*w);
        }
        read.clear();
    }
}

/// Whether the socket `fd` holds bytes not read yet (a non-blocking
/// peek; not a socket, or an error: no).
fn has_unread(fd: RawFd) -> bool {
    use nix::sys::socket::recv;
    use nix::sys::socket::MsgFlags;
    let mut one = [0u8; 1];
    matches!(
        recv(fd, &mut one, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT),
        Ok(n) if n > 0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_turn_and_session_waits() {
        let mut c = TurnCounter::default();
        let (a, b) = (Token(20), Token(21));
        c.refused_opened();
        c.refused_opened();
        c.refused_read(a, 100);
        c.refused_read(a, 50);
        c.refused_read(b, 10);
        c.end_turn(1, 2, &[]);
        c.refused_read(a, 7);
        c.end_turn(2, 2, &[]);
        let live = std::os::unix::net::UnixStream::pair().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&live.1);
        std::io::Write::write_all(&mut &live.0, b"$").unwrap();
        let s = Token(30);
        c.end_turn(3, 1, &[(s, Some(fd))]);
        c.end_turn(4, 1, &[(s, Some(fd))]);
        let st = c.shared().borrow().clone();
        assert_eq!(st.turns, 4);
        assert_eq!(st.refused_connections, 2);
        assert_eq!(st.refused_bytes, 167);
        assert_eq!(st.max_connection_turn_bytes, 150);
        assert_eq!(st.max_connection_turn_reads, 2);
        assert_eq!(st.max_turn_refused_bytes, 160);
        assert_eq!(st.max_refused_open, 2);
        assert_eq!(st.max_session_wait_turns, 2, "unread twice in a row");
        // Read, and more bytes came after the read: a new run of 1.
        let mut got = [0u8; 1];
        std::io::Read::read_exact(&mut &live.1, &mut got).unwrap();
        std::io::Write::write_all(&mut &live.0, b"$").unwrap();
        c.session_read(s);
        c.end_turn(5, 1, &[(s, Some(fd))]);
        let st = c.shared().borrow().clone();
        assert_eq!(st.max_session_wait_turns, 2);
        // Read again and nothing came after: the run ends.
        std::io::Read::read_exact(&mut &live.1, &mut got).unwrap();
        c.session_read(s);
        c.end_turn(6, 1, &[(s, Some(fd))]);
        std::io::Write::write_all(&mut &live.0, b"$").unwrap();
        c.end_turn(7, 1, &[(s, Some(fd))]);
        let st = c.shared().borrow().clone();
        assert_eq!(st.max_session_wait_turns, 2);
        assert_eq!(st.contended_session_reads, 2);
        assert!(st.report().contains("max-session-wait-turns 2\n"));
    }
}
