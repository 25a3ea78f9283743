//! R6 of issue 16: input a new `--multi` client sends while the vanished
//! client's resume is still ending (or any client sends while a vFile reply
//! is prepared off the loop) is held, up to
//! [`crate::bounds::HELD_INPUT_LIMIT`]; past it the connection is closed
//! with a logged error, and memory stays bounded. (Through the binary the
//! window is a few milliseconds, the stop of an interrupted process, so the
//! bound is tested on the session itself.)
#![allow(clippy::unwrap_used)]

use super::LaunchDefaults;
use super::Session;
use super::SessionControl;
use crate::bounds::HELD_INPUT_LIMIT;

#[test]
fn held_input_is_bounded() {
    let mut s = Session::new(1, LaunchDefaults::default());
    s.run = super::RunState::Orphaned;
    let chunk = vec![b'x'; 64 * 1024];
    let mut pushed = 0;
    while s.on_input(&chunk) == SessionControl::Continue {
        pushed += chunk.len();
        assert!(pushed <= HELD_INPUT_LIMIT, "held past the limit");
    }
    assert_eq!(s.run, super::RunState::Orphaned);
    assert!(s.framer.pending_input() > HELD_INPUT_LIMIT);
    // The input buffer grows by doubling: at most twice what it holds.
    assert!(s.framer.buffered_bytes() <= 2 * (HELD_INPUT_LIMIT + chunk.len()));
}

#[test]
fn held_input_within_the_limit_waits() {
    let mut s = Session::new(1, LaunchDefaults::default());
    s.run = super::RunState::Orphaned;
    assert_eq!(s.on_input(b"$qC#b4"), SessionControl::Continue);
    assert!(s.out.is_empty(), "held, not answered");
    assert_eq!(s.framer.pending_input(), 6);
}

/// A vFile reply being prepared off the loop holds input by the same
/// mechanism and the same bound; its reply releases what waits.
#[test]
fn vfile_wait_holds_input_by_the_same_bound() {
    let mut s = Session::new(1, LaunchDefaults::default());
    s.vfile_pending = Some(7);
    assert_eq!(s.on_input(b"$qC#b4"), SessionControl::Continue);
    assert!(s.out.is_empty(), "held, not answered");
    // A stale reply releases nothing.
    assert_eq!(s.on_vfile_done(6, b"F0"), SessionControl::Continue);
    assert!(s.out.is_empty());
    assert_eq!(s.on_vfile_done(7, b"F0"), SessionControl::Continue);
    assert_eq!(s.framer.pending_input(), 0, "the held qC was handled");
    let out = String::from_utf8_lossy(&s.out).to_string();
    assert!(out.starts_with("$F0#"), "vFile reply first: {out}");
    assert!(out.matches('$').count() == 2, "then the qC reply: {out}");

    let mut s = Session::new(1, LaunchDefaults::default());
    s.vfile_pending = Some(1);
    let chunk = vec![b'x'; 64 * 1024];
    let mut pushed = 0;
    while s.on_input(&chunk) == SessionControl::Continue {
        pushed += chunk.len();
        assert!(pushed <= HELD_INPUT_LIMIT, "held past the limit");
    }
}
