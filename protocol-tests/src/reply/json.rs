//! JSON replies (lldb dialect): `jThreadsInfo` and the accelerator packets.
//!
//! JSON travels binary-escaped (`}` as `}]`); [`parse_json_reply`] undoes the
//! escaping before parsing. The accelerator parser checks the schema that
//! lldb 23.1's client enforces (see research/lldb-accelerator.md §1.2–1.4) and
//! names the JSON path of the first violation.

use std::collections::BTreeMap;

use serde_json::Map;
use serde_json::Value;

use super::malformed;
use super::ErrorReply;
use super::ParseError;
use crate::framing;

/// Unescape and parse a JSON reply.
pub fn parse_json_reply(raw: &[u8]) -> Result<Value, ParseError> {
    if let Some(e) = ErrorReply::parse(raw) {
        return Err(ParseError::ErrorReply(e));
    }
    if raw.is_empty() {
        return Err(ParseError::Empty);
    }
    let text = framing::unescape(raw).map_err(|e| malformed("JSON reply", e.to_string()))?;
    serde_json::from_slice(&text).map_err(|e| malformed("JSON reply", e.to_string()))
}

/// One entry of a `jThreadsInfo` reply.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonThreadInfo {
    /// `tid`
    pub tid: u64,
    /// `name`
    pub name: Option<String>,
    /// `reason`
    pub reason: Option<String>,
    /// `signal`
    pub signal: Option<u64>,
    /// `registers`: decimal register number → hex value.
    pub registers: BTreeMap<u32, String>,
    /// The raw object.
    pub raw: Value,
}

/// Parse a `jThreadsInfo` reply.
pub fn parse_threads_info(raw: &[u8]) -> Result<Vec<JsonThreadInfo>, ParseError> {
    let v = parse_json_reply(raw)?;
    let arr = v
        .as_array()
        .ok_or_else(|| malformed("jThreadsInfo", "not an array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, t)| {
            let obj = t
                .as_object()
                .ok_or_else(|| malformed("jThreadsInfo", format!("[{i}] is not an object")))?;
            let tid = obj
                .get("tid")
                .and_then(Value::as_u64)
                .ok_or_else(|| malformed("jThreadsInfo", format!("[{i}].tid missing")))?;
            let mut registers = BTreeMap::new();
            if let Some(regs) = obj.get("registers").and_then(Value::as_object) {
                for (k, v) in regs {
                    if let (Ok(n), Some(s)) = (k.parse::<u32>(), v.as_str()) {
                        registers.insert(n, s.to_string());
                    }
                }
            }
            Ok(JsonThreadInfo {
                tid,
                name: obj.get("name").and_then(Value::as_str).map(str::to_string),
                reason: obj
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                signal: obj.get("signal").and_then(Value::as_u64),
                registers,
                raw: t.clone(),
            })
        })
        .collect()
}

/// `connect_info` of an accelerator action set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectInfo {
    /// `connect_url`, e.g. `connect://localhost:1234`.
    pub connect_url: String,
    /// `platform_name` (may be empty).
    pub platform_name: String,
    /// `triple` (may be empty).
    pub triple: String,
    /// `synchronous`
    pub synchronous: bool,
    /// `exe_path`
    pub exe_path: Option<String>,
}

/// A breakpoint requested by an accelerator plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceleratorBreakpoint {
    /// `identifier`
    pub identifier: i64,
    /// `by_name.function_name`
    pub function_name: Option<String>,
    /// `by_name.shlib`
    pub shlib: Option<String>,
    /// `by_address.load_address`
    pub load_address: Option<u64>,
    /// `symbol_names`
    pub symbol_names: Vec<String>,
}

/// One element of a `jAcceleratorPluginInitialize` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceleratorActions {
    /// `plugin_name`
    pub plugin_name: String,
    /// `session_name`
    pub session_name: String,
    /// `identifier`
    pub identifier: i64,
    /// `breakpoints`
    pub breakpoints: Vec<AcceleratorBreakpoint>,
    /// `connect_info`, absent or null when no connection is offered.
    pub connect_info: Option<ConnectInfo>,
}

const ACC: &str = "accelerator JSON";

fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ParseError> {
    v.as_object()
        .ok_or_else(|| malformed(ACC, format!("{path}: expected an object")))
}

fn req<'a>(o: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, ParseError> {
    o.get(key)
        .ok_or_else(|| malformed(ACC, format!("{path}.{key}: missing value")))
}

fn opt<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

fn string(v: &Value, path: &str) -> Result<String, ParseError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| malformed(ACC, format!("{path}: expected a string")))
}

fn int(v: &Value, path: &str) -> Result<i64, ParseError> {
    v.as_i64()
        .ok_or_else(|| malformed(ACC, format!("{path}: expected an integer")))
}

fn parse_breakpoint(v: &Value, path: &str) -> Result<AcceleratorBreakpoint, ParseError> {
    let o = obj(v, path)?;
    let identifier = int(req(o, "identifier", path)?, &format!("{path}.identifier"))?;
    let names = req(o, "symbol_names", path)?
        .as_array()
        .ok_or_else(|| malformed(ACC, format!("{path}.symbol_names: expected an array")))?;
    let symbol_names = names
        .iter()
        .enumerate()
        .map(|(i, n)| string(n, &format!("{path}.symbol_names[{i}]")))
        .collect::<Result<_, _>>()?;
    let (mut function_name, mut shlib, mut load_address) = (None, None, None);
    if let Some(by_name) = opt(o, "by_name") {
        let p = format!("{path}.by_name");
        let bn = obj(by_name, &p)?;
        function_name = Some(string(
            req(bn, "function_name", &p)?,
            &format!("{p}.function_name"),
        )?);
        shlib = opt(bn, "shlib")
            .map(|s| string(s, &format!("{p}.shlib")))
            .transpose()?;
    }
    if let Some(by_addr) = opt(o, "by_address") {
        let p = format!("{path}.by_address");
        let ba = obj(by_addr, &p)?;
        let la = req(ba, "load_address", &p)?;
        // The client types it u64 but upstream's toJSON casts to int64: accept both.
        load_address = Some(
            la.as_u64()
                .or_else(|| la.as_i64().map(|v| v as u64))
                .ok_or_else(|| malformed(ACC, format!("{p}.load_address: expected an integer")))?,
        );
    }
    match (&function_name, load_address) {
        (Some(_), Some(_)) => Err(malformed(
            ACC,
            format!("{path}: both by_name and by_address"),
        )),
        (None, None) => Err(malformed(
            ACC,
            format!("{path}: neither by_name nor by_address"),
        )),
        _ => Ok(AcceleratorBreakpoint {
            identifier,
            function_name,
            shlib,
            load_address,
            symbol_names,
        }),
    }
}

fn parse_connect_info(v: &Value, path: &str) -> Result<ConnectInfo, ParseError> {
    let o = obj(v, path)?;
    let s = |k: &str| -> Result<String, ParseError> {
        string(req(o, k, path)?, &format!("{path}.{k}"))
    };
    Ok(ConnectInfo {
        connect_url: s("connect_url")?,
        platform_name: s("platform_name")?,
        triple: s("triple")?,
        synchronous: req(o, "synchronous", path)?
            .as_bool()
            .ok_or_else(|| malformed(ACC, format!("{path}.synchronous: expected a bool")))?,
        exe_path: opt(o, "exe_path")
            .map(|e| string(e, &format!("{path}.exe_path")))
            .transpose()?,
    })
}

/// Schema-check one `AcceleratorActions` object at JSON `path`.
pub fn parse_accelerator_action(v: &Value, path: &str) -> Result<AcceleratorActions, ParseError> {
    let o = obj(v, path)?;
    let bps = req(o, "breakpoints", path)?
        .as_array()
        .ok_or_else(|| malformed(ACC, format!("{path}.breakpoints: expected an array")))?;
    Ok(AcceleratorActions {
        plugin_name: string(req(o, "plugin_name", path)?, &format!("{path}.plugin_name"))?,
        session_name: string(
            req(o, "session_name", path)?,
            &format!("{path}.session_name"),
        )?,
        identifier: int(req(o, "identifier", path)?, &format!("{path}.identifier"))?,
        breakpoints: bps
            .iter()
            .enumerate()
            .map(|(i, b)| parse_breakpoint(b, &format!("{path}.breakpoints[{i}]")))
            .collect::<Result<_, _>>()?,
        connect_info: opt(o, "connect_info")
            .map(|c| parse_connect_info(c, &format!("{path}.connect_info")))
            .transpose()?,
    })
}

/// Parse and schema-check a `jAcceleratorPluginInitialize` reply (an array).
pub fn parse_accelerator_actions(raw: &[u8]) -> Result<Vec<AcceleratorActions>, ParseError> {
    let v = parse_json_reply(raw)?;
    let arr = v
        .as_array()
        .ok_or_else(|| malformed(ACC, "AcceleratorActions: expected an array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, a)| parse_accelerator_action(a, &format!("AcceleratorActions[{i}]")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> Vec<u8> {
        framing::escape(s.as_bytes())
    }

    #[test]
    fn accelerator_ok() {
        let j = r#"[{"plugin_name":"amd-gpu","session_name":"gpu","identifier":1,
            "breakpoints":[{"identifier":1,"by_name":{"function_name":"gpu_runtime_init","shlib":null},"by_address":null,"symbol_names":["a"]},
                           {"identifier":2,"by_address":{"load_address":18446744073709551615},"symbol_names":[]}],
            "connect_info":{"connect_url":"connect://localhost:1","platform_name":"","triple":"amdgpu-amd-amdhsa--gfx90a","synchronous":true}}]"#;
        let a = parse_accelerator_actions(&esc(j)).unwrap();
        assert_eq!(a[0].identifier, 1);
        assert_eq!(a[0].breakpoints[1].load_address, Some(u64::MAX));
        assert_eq!(
            a[0].breakpoints[0].function_name.as_deref(),
            Some("gpu_runtime_init")
        );
        assert!(a[0].connect_info.as_ref().unwrap().synchronous);
        assert!(parse_accelerator_actions(b"[]").unwrap().is_empty());
    }

    #[test]
    fn accelerator_schema_violations() {
        let cases = [
            (
                r#"[{"plugin_name":"m","session_name":"","identifier":0}]"#,
                "breakpoints",
            ),
            (
                r#"[{"plugin_name":"m","session_name":"","identifier":"0","breakpoints":[]}]"#,
                "identifier",
            ),
            (r#"{"plugin_name":"m"}"#, "array"),
            (
                r#"[{"plugin_name":"m","session_name":"","identifier":0,"breakpoints":[{"identifier":1,"symbol_names":[]}]}]"#,
                "neither",
            ),
            (
                r#"[{"plugin_name":"m","session_name":"","identifier":0,"breakpoints":[],"connect_info":{"connect_url":"x","platform_name":"","triple":""}}]"#,
                "synchronous",
            ),
        ];
        for (j, needle) in cases {
            let e = parse_accelerator_actions(&esc(j)).unwrap_err().to_string();
            assert!(e.contains(needle), "{j}: {e}");
        }
    }

    #[test]
    fn threads_info_escaped() {
        let raw = esc(
            r#"[{"tid":17,"name":"single","reason":"breakpoint","signal":5,"registers":{"16":"00ff"}}]"#,
        );
        assert!(raw.windows(2).any(|w| w == b"}]"));
        let t = parse_threads_info(&raw).unwrap();
        assert_eq!(t[0].tid, 17);
        assert_eq!(t[0].registers.get(&16).map(String::as_str), Some("00ff"));
    }
}
