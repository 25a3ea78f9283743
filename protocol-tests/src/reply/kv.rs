//! `key:value;` replies: `qHostInfo`, `qProcessInfo`, `qMemoryRegionInfo`.

use super::malformed;
use super::parse_hex_u64;
use super::ErrorReply;
use super::ParseError;

/// Ordered key/value pairs of an lldb-style reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValues {
    /// Pairs in order.
    pub pairs: Vec<(String, String)>,
}

impl KeyValues {
    /// Parse `k:v;k:v;` (trailing `;` optional).
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        if raw.is_empty() {
            return Err(ParseError::Empty);
        }
        let text =
            std::str::from_utf8(raw).map_err(|e| malformed("key:value reply", e.to_string()))?;
        let pairs = text
            .split(';')
            .filter(|f| !f.is_empty())
            .map(|f| {
                f.split_once(':')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| malformed("key:value pair", f))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { pairs })
    }

    /// First value for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// First value for `key` as hex.
    pub fn get_hex(&self, key: &str) -> Option<u64> {
        parse_hex_u64(self.get(key)?.as_bytes())
    }

    /// First value for `key` as a hex-encoded string (e.g. `triple`).
    pub fn get_hex_string(&self, key: &str) -> Option<String> {
        let bytes = super::decode_hex(self.get(key)?.as_bytes())?;
        String::from_utf8(bytes).ok()
    }
}

/// A `qMemoryRegionInfo` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRegion {
    /// `start:`
    pub start: u64,
    /// `size:`
    pub size: u64,
    /// `permissions:` (e.g. `rx`), empty when unmapped.
    pub permissions: String,
    /// Everything, for other keys.
    pub raw: KeyValues,
}

impl MemoryRegion {
    /// Parse a `qMemoryRegionInfo` reply.
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        let kv = KeyValues::parse(raw)?;
        Ok(Self {
            start: kv
                .get_hex("start")
                .ok_or_else(|| malformed("memory region", "missing start"))?,
            size: kv
                .get_hex("size")
                .ok_or_else(|| malformed("memory region", "missing size"))?,
            permissions: kv.get("permissions").unwrap_or("").to_string(),
            raw: kv,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_info() {
        let kv = KeyValues::parse(b"triple:7838365f3634;ptrsize:8;endian:little;").unwrap();
        assert_eq!(kv.get_hex_string("triple").as_deref(), Some("x86_64"));
        assert_eq!(kv.get_hex("ptrsize"), Some(8));
        assert!(KeyValues::parse(b"novalue").is_err());
        let r = MemoryRegion::parse(b"start:1000;size:2000;permissions:rx;").unwrap();
        assert_eq!(
            (r.start, r.size, r.permissions.as_str()),
            (0x1000, 0x2000, "rx")
        );
        assert!(MemoryRegion::parse(b"size:1;").is_err());
    }
}
