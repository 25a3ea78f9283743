//! The small reply parsers on arbitrary bytes: `qSupported` features,
//! `qXfer` chunks, thread ids and `qfThreadInfo` lists, `key:value;`
//! replies, memory regions, `g` register blocks, error replies, `m` hex.
//!
//! Checks: no panic; each parsed value re-encodes to a form that parses
//! back to the same value (ids through `Display`, chunks through
//! `framing::escape`, key/values and register blocks through their wire
//! syntax); hex encode/decode round trip. The property lives in
//! `protocol_tests::properties::reply_misc`, shared with the proptests.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::properties;

fuzz_target!(|data: &[u8]| properties::reply_misc(data));
