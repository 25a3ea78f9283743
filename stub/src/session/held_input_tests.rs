//! R6 of issue 16: input a new `--multi` client sends while the vanished
//! client's resume is still ending is held, up to
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
    s.run = super::RunState::Orphaned { input_held: false };
    let chunk = vec![b'x'; 64 * 1024];
    let mut pushed = 0;
    while s.on_input(&chunk) == SessionControl::Continue {
        pushed += chunk.len();
        assert!(pushed <= HELD_INPUT_LIMIT, "held past the limit");
    }
    assert!(matches!(
        s.run,
        super::RunState::Orphaned { input_held: true }
    ));
    // The input buffer grows by doubling: at most twice what it holds.
    assert!(s.framer.buffered_bytes() <= 2 * (HELD_INPUT_LIMIT + chunk.len()));
}

#[test]
fn held_input_within_the_limit_waits() {
    let mut s = Session::new(1, LaunchDefaults::default());
    s.run = super::RunState::Orphaned { input_held: false };
    assert_eq!(s.on_input(b"$qC#b4"), SessionControl::Continue);
    assert!(s.out.is_empty(), "held, not answered");
    assert_eq!(s.framer.pending_input(), 6);
}
