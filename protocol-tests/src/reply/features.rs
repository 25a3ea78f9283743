//! `qSupported` replies.
//!
//! ```text
//! reply   := feature (';' feature)*
//! feature := name '+' | name '-' | name '?' | name '=' value
//! ```

use std::collections::BTreeMap;

use super::malformed;
use super::parse_hex_u64;
use super::ErrorReply;
use super::ParseError;

/// One advertised feature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feature {
    /// `name+`
    Supported,
    /// `name-`
    Unsupported,
    /// `name?`
    Maybe,
    /// `name=value`
    Value(String),
}

/// The feature map of a `qSupported` reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Features by name.
    pub map: BTreeMap<String, Feature>,
    /// Names in the order the server sent them.
    pub order: Vec<String>,
}

impl Features {
    /// Parse a `qSupported` reply (the empty reply gives an empty map).
    pub fn parse(raw: &[u8]) -> Result<Self, ParseError> {
        if let Some(e) = ErrorReply::parse(raw) {
            return Err(ParseError::ErrorReply(e));
        }
        let text = std::str::from_utf8(raw).map_err(|e| malformed("qSupported", e.to_string()))?;
        let mut f = Self::default();
        for item in text.split(';').filter(|i| !i.is_empty()) {
            let (name, feat) = if let Some((n, v)) = item.split_once('=') {
                (n, Feature::Value(v.to_string()))
            } else if let Some(n) = item.strip_suffix('+') {
                (n, Feature::Supported)
            } else if let Some(n) = item.strip_suffix('-') {
                (n, Feature::Unsupported)
            } else if let Some(n) = item.strip_suffix('?') {
                (n, Feature::Maybe)
            } else {
                return Err(malformed("qSupported feature", item));
            };
            if name.is_empty() {
                return Err(malformed("qSupported feature", item));
            }
            f.order.push(name.to_string());
            f.map.insert(name.to_string(), feat);
        }
        Ok(f)
    }

    /// True for `name+`.
    pub fn supports(&self, name: &str) -> bool {
        self.map.get(name) == Some(&Feature::Supported)
    }

    /// The value of `name=value`.
    pub fn value(&self, name: &str) -> Option<&str> {
        match self.map.get(name)? {
            Feature::Value(v) => Some(v),
            _ => None,
        }
    }

    /// `PacketSize`, read as hex as the protocol says.
    pub fn packet_size(&self) -> Option<u64> {
        parse_hex_u64(self.value("PacketSize")?.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdbserver_reply() {
        let f = Features::parse(b"PacketSize=47ff;QPassSignals+;swbreak+;foo-;bar?").unwrap();
        assert_eq!(f.packet_size(), Some(0x47ff));
        assert!(f.supports("swbreak"));
        assert!(!f.supports("foo"));
        assert_eq!(f.map.get("bar"), Some(&Feature::Maybe));
        assert_eq!(f.order[0], "PacketSize");
        assert!(Features::parse(b"").unwrap().map.is_empty());
        assert!(Features::parse(b"junk").is_err());
        assert!(Features::parse(b"+").is_err());
    }
}
