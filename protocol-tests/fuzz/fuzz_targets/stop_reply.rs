//! `reply::StopReply::parse` on arbitrary bytes.
//!
//! Checks: no panic (in the parser and in every accessor); a parsed reply
//! is stable under re-parsing its thread ids from their `Display` form.
//! The property lives in `protocol_tests::properties::stop_reply`, shared
//! with the proptests.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::properties;

fuzz_target!(|data: &[u8]| properties::stop_reply(data));
