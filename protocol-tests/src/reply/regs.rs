//! `g` replies: a block of register bytes in hex, `xx` for unavailable bytes.

use super::hex_digit;
use super::ErrorReply;
use super::ParseError;

/// A decoded `g` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBlock {
    /// Register bytes, target order; `None` for `xx`.
    pub bytes: Vec<Option<u8>>,
}

impl RegisterBlock {
    /// Parse a `g` reply.
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        if raw.is_empty() {
            return Err(ParseError::Empty);
        }
        let bad = || ParseError::BadHex {
            field: "register block",
            text: String::from_utf8_lossy(raw).into_owned(),
        };
        if !raw.len().is_multiple_of(2) {
            return Err(bad());
        }
        let bytes = raw
            .chunks(2)
            .map(|p| match p {
                [b'x', b'x'] | [b'X', b'X'] => Ok(None),
                [h, l] => Ok(Some(
                    hex_digit(*h).ok_or_else(bad)? << 4 | hex_digit(*l).ok_or_else(bad)?,
                )),
                _ => Err(bad()),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { bytes })
    }

    /// Little-endian value of `len` bytes at `offset` (len ≤ 8), if all available.
    pub fn u64_le(&self, offset: usize, len: usize) -> Option<u64> {
        if len == 0 || len > 8 {
            return None;
        }
        let slice = self.bytes.get(offset..offset.checked_add(len)?)?;
        slice
            .iter()
            .rev()
            .try_fold(0u64, |acc, b| Some(acc << 8 | u64::from((*b)?)))
    }

    /// amd64 `rip` (byte offset 128 in both gdbserver's and lldb-server's layout).
    pub fn amd64_rip(&self) -> Option<u64> {
        self.u64_le(16 * 8, 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block() {
        let b = RegisterBlock::parse(b"0102xx04").unwrap();
        assert_eq!(b.bytes, vec![Some(1), Some(2), None, Some(4)]);
        assert_eq!(b.u64_le(0, 2), Some(0x0201));
        assert_eq!(b.u64_le(1, 2), None);
        assert_eq!(b.u64_le(3, 8), None);
        assert!(RegisterBlock::parse(b"123").is_err());
        assert!(RegisterBlock::parse(b"zz").is_err());
    }
}
