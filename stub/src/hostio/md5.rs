//! A small streaming MD5 ([RFC 1321]) for lldb's `vFile:MD5`.
//!
//! lldb only uses the digest to decide whether a file on the target equals
//! its local copy, so speed and cryptographic strength do not matter; a
//! 60-line implementation beats a new dependency.
//!
//! [RFC 1321]: https://www.rfc-editor.org/rfc/rfc1321

/// Per-step left rotations, four per round.
const SHIFTS: [[u32; 4]; 4] = [
    [7, 12, 17, 22],
    [5, 9, 14, 20],
    [4, 11, 16, 23],
    [6, 10, 15, 21],
];

/// The incremental hasher.
pub(super) struct Md5 {
    state: [u32; 4],
    /// Total message length in bytes.
    len: u64,
    /// A partial block.
    block: Vec<u8>,
    /// `floor(|sin(i + 1)| * 2^32)`, RFC 1321 section 3.4.
    k: [u32; 64],
}

impl Md5 {
    pub(super) fn new() -> Self {
        let mut k = [0u32; 64];
        for (i, v) in k.iter_mut().enumerate() {
            // Exact in double precision for all 64 entries (checked by the
            // RFC test vectors below).
            *v = ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32;
        }
        Self {
            state: [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476],
            len: 0,
            block: Vec::with_capacity(64),
            k,
        }
    }

    pub(super) fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        while !data.is_empty() {
            let take = (64 - self.block.len()).min(data.len());
            let (head, tail) = data.split_at(take);
            self.block.extend_from_slice(head);
            data = tail;
            if self.block.len() == 64 {
                let mut block = [0u8; 64];
                block.copy_from_slice(&self.block);
                self.compress(&block);
                self.block.clear();
            }
        }
    }

    pub(super) fn finish(mut self) -> [u8; 16] {
        let bits = self.len.wrapping_mul(8);
        let mut pad = vec![0x80u8];
        let used = (self.block.len() + 1) % 64;
        pad.resize(1 + (56 + 64 - used) % 64, 0);
        pad.extend_from_slice(&bits.to_le_bytes());
        let len = self.len;
        self.update(&pad);
        self.len = len;
        let mut out = [0u8; 16];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    fn compress(&mut self, block: &[u8; 64]) {
        let mut m = [0u32; 16];
        for (word, bytes) in m.iter_mut().zip(block.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let [mut a, mut b, mut c, mut d] = self.state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f = f.wrapping_add(a).wrapping_add(self.k[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f.rotate_left(SHIFTS[i / 16][i % 4]));
        }
        for (s, v) in self.state.iter_mut().zip([a, b, c, d]) {
            *s = s.wrapping_add(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    fn md5_hex(data: &[u8]) -> String {
        let mut h = Md5::new();
        h.update(data);
        hex::encode_to_string(&h.finish())
    }

    #[test]
    fn rfc_1321_test_suite() {
        for (input, want) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            assert_eq!(md5_hex(input.as_bytes()), want, "{input:?}");
        }
    }

    #[test]
    fn split_updates_match_one_update() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        for split in [0, 1, 55, 56, 63, 64, 65, 128, 999, 1000] {
            let mut h = Md5::new();
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(
                hex::encode_to_string(&h.finish()),
                md5_hex(&data),
                "{split}"
            );
        }
    }
}
