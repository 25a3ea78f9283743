//! `framing::FrameDecoder` fed arbitrary bytes in arbitrary splits, and
//! the pure helpers (`escape`/`unescape`, `rle_decode`, `encode_packet`).
//!
//! Checks: no panic; the frames do not depend on how the stream was split;
//! the decoder buffers no more than it was fed; an encoded payload decodes
//! to itself with a good checksum; `unescape(escape(x)) == x`. The property
//! lives in `protocol_tests::properties::frame_decoder`, shared with the
//! proptests.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_tests::properties;

fuzz_target!(|data: &[u8]| properties::frame_decoder(data));
