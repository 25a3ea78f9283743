//! Arbitrary bytes into `Session::on_input` of a session with no target
//! (so every target request is answered with an error), pushed in
//! arbitrary splits: either raw wire bytes, or newline-separated payloads
//! that the target frames with good checksums first; with or without a
//! multiplexer (no GPU library) behind the session.
//!
//! Checks: no panic; after every `on_input` the pending output is bounded
//! by the events the input carried; everything the session writes is
//! well-framed (acknowledgements and packets with good checksums).
//!
//! Packets that would touch the host are skipped, not fed: `vRun` (starts
//! a program), `vAttach` (ptrace-attaches to any pid on the machine) and
//! `vFile` (host I/O: open/unlink/pwrite). A shadow framer finds them;
//! the framer's events do not depend on ack mode, so the shadow sees
//! exactly the packets the session will see.
#![no_main]

use std::cell::RefCell;
use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use stub::mux::Mux;
use stub::packet::parse;
use stub::packet::Command;
use stub::session::Session;
use stub::session::SessionControl;
use stub::session::MAX_PACKET;
use stub::wire::Encoder;
use stub::wire::Framer;
use stub::wire::WireEvent;

/// Reply budget per input event (largest fixed reply with room to spare,
/// plus a NAK replay of the previous one).
const PER_EVENT: usize = 16 * 1024;

/// Output budget for `chunk`, or `None` if it holds a host-touching packet.
fn budget(shadow: &mut Framer, chunk: &[u8]) -> Option<usize> {
    shadow.push(chunk);
    let mut budget = 0usize;
    while let Some(ev) = shadow.next_event() {
        if let WireEvent::Packet(p) = &ev {
            if matches!(
                parse(p),
                Ok(Command::VRun(_) | Command::VAttach(_) | Command::VFile(_))
            ) {
                return None;
            }
            // Echo-like replies may be hex of the packet.
            budget += 4 * p.len();
        }
        budget += PER_EVENT;
    }
    Some(budget)
}

fn check_framing(out: &[u8]) {
    let mut f = Framer::client(MAX_PACKET * 4);
    f.push(out);
    while let Some(ev) = f.next_event() {
        assert!(
            matches!(
                ev,
                WireEvent::Ack | WireEvent::Nak | WireEvent::Packet(_) | WireEvent::Notification(_)
            ),
            "{ev:?} in session output"
        );
    }
    // The output ends between frames: a sentinel `+` reads as an ack (a
    // partial body would swallow it, a partial checksum would fail).
    f.push(b"+");
    assert_eq!(
        f.next_event(),
        Some(WireEvent::Ack),
        "partial frame in {out:?}"
    );
    assert_eq!(f.next_event(), None);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (sizes, rest) = rest.split_at(usize::from((mode >> 1) % 8).min(rest.len()));
    // Odd mode: raw wire bytes. Even mode: newline-separated payloads,
    // each framed with a good checksum, so that the fuzzer reaches the
    // command handlers without having to guess checksums.
    let framed;
    let wire = if mode & 1 == 1 {
        rest
    } else {
        let mut w = Vec::with_capacity(rest.len() + 64);
        for payload in rest.split(|&b| b == b'\n') {
            Encoder::new().packet(payload, &mut w);
        }
        framed = w;
        &framed[..]
    };
    // Vet the whole input first so nothing host-touching is ever fed.
    let mut shadow = Framer::new(MAX_PACKET);
    let mut budgets = Vec::new();
    let mut rest = wire;
    let mut it = sizes.iter().cycle();
    while !rest.is_empty() {
        let n = it.next().map_or(rest.len(), |&s| usize::from(s).max(1));
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        let Some(b) = budget(&mut shadow, chunk) else {
            return;
        };
        budgets.push((chunk, b));
    }

    let mut session = Session::new(1, Default::default());
    if mode & 0x10 != 0 {
        // The CPU side of a multiplexer without a GPU library: the
        // accelerator packets and `monitor gpu` take their mux paths.
        let mux = Rc::new(RefCell::new(Mux::new(None, "hook".into(), true, true)));
        session = session.with_mux(mux);
    }
    for (chunk, budget) in budgets {
        let control = session.on_input(chunk);
        let out = std::mem::take(session.pending_output());
        // Acknowledgements are one byte per packet, within the budget.
        assert!(
            out.len() <= budget,
            "{} output bytes for a {}-byte chunk",
            out.len(),
            chunk.len()
        );
        check_framing(&out);
        // After `Close`/`ExitServer` the server stops feeding input.
        if control != SessionControl::Continue {
            break;
        }
    }
    assert!(!session.is_running());
    assert!(!session.has_process());
});
