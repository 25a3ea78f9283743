//! The JSON reply parsers on arbitrary bytes, raw and as they travel
//! (`}`-escaped): `parse_json_reply`, `parse_threads_info`,
//! `parse_accelerator_actions`.
//!
//! Checks: no panic; a parsed accelerator reply, rebuilt as JSON from its
//! typed value and escaped, parses back to the same value; a parsed
//! `jThreadsInfo` keeps every thread's tid. The property lives in
//! `protocol_tests::properties::json_replies`, shared with the proptests.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::properties;

fuzz_target!(|data: &[u8]| properties::json_replies(data));
