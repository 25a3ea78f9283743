//! `reply::StopReply::parse` on arbitrary bytes.
//!
//! Checks: no panic (in the parser and in every accessor); a parsed reply
//! is stable under re-parsing its thread ids from their `Display` form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::reply::StopReply;
use protocol_tests::reply::ThreadId;

fn tid_roundtrip(t: &ThreadId) {
    assert_eq!(ThreadId::parse(t.to_string().as_bytes()).as_ref(), Ok(t));
}

fuzz_target!(|data: &[u8]| {
    let Ok(r) = StopReply::parse(data) else {
        return;
    };
    match &r {
        StopReply::Signal(s) => {
            assert!(r.signal().is_some());
            for &n in s.registers.keys() {
                let _ = s.register_u64(n);
            }
            let _ = s.is_swbreak();
            let _ = s.watch_addr();
            s.thread.iter().chain(&s.threads).for_each(tid_roundtrip);
        }
        StopReply::ThreadExited { thread, .. } => tid_roundtrip(thread),
        _ => assert!(r.signal().is_none()),
    }
    // A reply that parsed is deterministic.
    assert_eq!(StopReply::parse(data), Ok(r));
});
