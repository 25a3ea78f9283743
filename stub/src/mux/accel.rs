//! The lldb accelerator-plugin packets, typed (lldb 23.1 schema, as
//! observed on the wire: research/lldb-accelerator.md §1).
//!
//! JSON travels `}`-escaped in both directions; the framer undoes the
//! escapes on input and the encoder applies them on output, so this module
//! only sees plain JSON.

use serde::Deserialize;
use serde::Serialize;

/// Our plugin's name (the client's dedup key).
pub const PLUGIN_NAME: &str = "amd-gpu";

/// `by_name` breakpoint spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByName {
    /// Function to break on.
    pub function_name: String,
    /// Limit to this shared library (file name), or `null`.
    pub shlib: Option<String>,
}

/// `by_address` breakpoint spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByAddress {
    /// Load address in the native process (lldb may send it signed).
    #[serde(deserialize_with = "u64_or_i64")]
    pub load_address: u64,
}

/// lldb 23.1 types `load_address` as u64 but upstream's `toJSON` casts it
/// to int64 (research/lldb-accelerator.md §1.5): accept both forms.
fn u64_or_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        U(u64),
        I(i64),
    }
    Ok(match Num::deserialize(d)? {
        Num::U(u) => u,
        Num::I(i) => i as u64,
    })
}

/// `AcceleratorBreakpointInfo`. All four keys are always sent (23.1
/// requires `symbol_names`; nulls are accepted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakpointInfo {
    /// Plugin-chosen id, echoed on hit.
    pub identifier: i64,
    /// By name, or null.
    pub by_name: Option<ByName>,
    /// By address, or null.
    pub by_address: Option<ByAddress>,
    /// Symbols whose values the client sends with the hit.
    pub symbol_names: Vec<String>,
}

/// `connect_info`. 23.1 requires `platform_name`, `triple` and
/// `synchronous` even though the header documents defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectInfo {
    /// `connect://HOST:PORT` or `unix-connect://PATH`.
    pub connect_url: String,
    /// Platform for the new target (`host`).
    pub platform_name: String,
    /// `amdgpu-amd-amdhsa--gfxNNN` (never `amdgcn`: 23.1 rejects it).
    pub triple: String,
    /// Block until the GPU process is connected and stopped.
    pub synchronous: bool,
}

/// `AcceleratorActions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actions {
    /// Plugin name.
    pub plugin_name: String,
    /// Label for the GPU session.
    pub session_name: String,
    /// Strictly increasing id (from the ledger).
    pub identifier: i64,
    /// Breakpoints for the client to set in the native process.
    pub breakpoints: Vec<BreakpointInfo>,
    /// Connection request, when an offer is made.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connect_info: Option<ConnectInfo>,
}

/// One `symbol_values` entry of a hit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SymbolValue {
    /// Symbol name.
    pub name: String,
    /// Its load address, or null when not found.
    pub value: Option<u64>,
}

/// `jAcceleratorPluginBreakpointHit:` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BreakpointHit {
    /// Routes the hit.
    pub plugin_name: String,
    /// The breakpoint as we sent it.
    pub breakpoint: BreakpointInfo,
    /// Symbol values, in `symbol_names` order.
    #[serde(default)]
    pub symbol_values: Vec<SymbolValue>,
}

/// `jAcceleratorPluginBreakpointHit` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HitResponse {
    /// Remove the breakpoint.
    pub disable_bp: bool,
    /// Resume the native process without showing the stop.
    pub auto_resume_native: bool,
    /// More actions (e.g. the connection offer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Actions>,
}

/// Serialize to JSON bytes (infallible for these types).
pub fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_else(|_| b"[]".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema() {
        let a = Actions {
            plugin_name: PLUGIN_NAME.into(),
            session_name: "AMD GPU".into(),
            identifier: 1,
            breakpoints: vec![BreakpointInfo {
                identifier: 1,
                by_name: Some(ByName {
                    function_name: "hook".into(),
                    shlib: None,
                }),
                by_address: None,
                symbol_names: vec!["hook".into()],
            }],
            connect_info: None,
        };
        let j = String::from_utf8(to_json(&vec![a])).unwrap();
        assert!(j.contains("\"breakpoints\":[{"), "{j}");
        assert!(j.contains("\"by_address\":null"), "{j}");
        assert!(j.contains("\"session_name\""), "{j}");
        assert!(!j.contains("connect_info"), "{j}");
        let hit: BreakpointHit = serde_json::from_str(
            r#"{"breakpoint":{"by_address":null,"by_name":{"function_name":"hook","shlib":null},"identifier":1,"symbol_names":["hook"]},"plugin_name":"amd-gpu","symbol_values":[{"name":"hook","value":93824992235833}]}"#,
        )
        .unwrap();
        assert_eq!(hit.symbol_values[0].value, Some(93824992235833));
        let big: SymbolValue =
            serde_json::from_str(r#"{"name":"x","value":18446744073709551615}"#).unwrap();
        assert_eq!(big.value, Some(u64::MAX));
    }
}
