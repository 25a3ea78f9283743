//! Scenarios as data: transcripts in `protocol-tests/scenarios/*.txt`.
//!
//! A transcript is a header (`key: value` lines up to `---`) and a body of
//! directives, one per line; `#` starts a comment line. Every directive
//! argument goes through [variable substitution](#variables) first.
//!
//! ```text
//! name: memory-write-read
//! requirement: required                 # or implementation-defined
//! description: M writes g_buf, m reads it back
//! fixture: single                       # single | threads | bench | fork
//! args: 100                             # fixture arguments (optional)
//! handshake: auto                       # auto (by dialect) | gdb | lldb | none
//! relaxed-for: lldb-server              # dialects for which it is only implementation-defined
//! ---
//! stopped:                              # `?`; sets $tid, $pid, $stop0
//! send: M${sym:g_buf},4:01020304        # send a packet, read one reply
//! expect: OK                            # the reply must match the regex
//! send: m${sym:g_buf},4
//! expect: (?P<bytes>[0-9a-f]{8})        # named groups become variables
//! ```
//!
//! ## Directives
//!
//! | directive | effect |
//! |---|---|
//! | `send: P` | send packet payload `P` (`\xNN` escapes allowed), read one reply (RLE expanded) |
//! | `send-raw: B` | write bytes `B` verbatim (`\xNN` escapes), read nothing |
//! | `send-nowait: P` | send packet `P` (a resume), read nothing |
//! | `wait-stop:` | wait for a stop reply (`O` output skipped) |
//! | `recv:` | read the next packet |
//! | `resume: P` | send `P`, wait for a stop reply (`O` output skipped) |
//! | `interrupt:` | send `\x03`, wait for a stop reply |
//! | `stopped:` | `?`; must be a `T`/`S` stop; sets `$tid` (as spelled), `$pid` (hex), `$stop0` |
//! | `expect: RE` | the reply (printable form, `\xNN` for other bytes) fully matches `RE` |
//! | `expect@D1,D2: RE` | the same, only for those dialects (`gdbmux`, `gdbserver`, `lldb-server`, `custom`) |
//! | `expect-kind: K\|K` | reply kind is one of `ok`, `error`, `empty`, `stop`, `exit`, `hex`, `other` |
//! | `expect-same: V` | reply is byte-identical to variable `V` |
//! | `expect-frame: +` | the next frame is an ack (`+`) or NAK (`-`) |
//! | `expect-silence: MS` | nothing arrives within `MS` milliseconds |
//! | `expect-gone:` | the inferior `$pid` exits (or is a zombie) within the timeout |
//! | `capture: V` | store the whole reply in variable `V` |
//! | `unsupported-if: RE` | if the reply matches `RE`, end with verdict *unsupported* |
//! | `skip@D: REASON` | for dialect `D`, end with verdict *unsupported* (`REASON`) |
//! | `signal: N` | send signal `N` (Linux number or name like `SIGUSR1`) to `$pid` |
//! | `ack-mode: on\|off` | switch the client's ack handling locally |
//! | `note: TEXT` | add `TEXT` to the pass note |
//!
//! ## Variables
//!
//! `$name` or `${name}`: a capture or one of `tid`, `pid`, `stop0`,
//! `sigusr1` (two hex digits, the dialect's number for SIGUSR1). In
//! `expect` lines, substituted values are regex-escaped. Functions:
//! `${sym:NAME}` (hex run-time address of symbol `NAME` of the fixture,
//! from `nm` and `/proc/$pid/maps`), `${le:V}` (little-endian hex bytes of
//! `V` as a hex number), `${add:V:HEX}` (hex sum), `${hex:TEXT}` (hex-encode
//! text), `${fill:C:N}` (character `C` repeated `N` (decimal) times),
//! `${prog}` / `${prog_hex}` (the fixture path, plain / hex-encoded).

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

use crate::client::ClientError;
use crate::drivers::process;
use crate::drivers::Dialect;
use crate::drivers::Fixture;
use crate::framing;
use crate::framing::Frame;
use crate::reply;
use crate::reply::classify;
use crate::reply::ReplyKind;
use crate::reply::StopReply;
use crate::scenarios::Ctx;
use crate::scenarios::Failure;
use crate::scenarios::Requirement;
use crate::scenarios::ScenarioResult;
use crate::scenarios::Verdict;

/// Errors reading a transcript.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// File could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// Syntax error.
    #[error("{path}:{line}: {msg}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
}

/// How to greet the stub before the body runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// gdb order for gdb-dialect stubs, lldb order for lldb-server.
    Auto,
    /// gdb 13's order (plus `Hgp0.0`).
    Gdb,
    /// lldb 23's order.
    Lldb,
    /// Nothing is sent (framing scenarios start with `send-raw: +`).
    None,
}

/// One body line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// Directive keyword (`send`, `expect`, ...).
    pub op: String,
    /// Dialect filter from `op@d1,d2` (empty: all).
    pub dialects: Vec<String>,
    /// Argument text (not yet substituted).
    pub arg: String,
    /// 1-based line number, for messages.
    pub line: usize,
}

/// A parsed transcript.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Scenario name.
    pub name: String,
    /// Requirement.
    pub requirement: Requirement,
    /// One line of what it checks.
    pub description: String,
    /// Fixture launched under the stub.
    pub fixture: Fixture,
    /// Fixture arguments.
    pub args: Vec<String>,
    /// Handshake.
    pub handshake: Handshake,
    /// Dialects for which a required transcript is implementation-defined
    /// (header `relaxed-for: lldb-server`).
    pub relaxed_for: Vec<String>,
    /// Body.
    pub body: Vec<Directive>,
    /// Source file.
    pub path: PathBuf,
}

const OPS: &[&str] = &[
    "send",
    "send-nowait",
    "wait-stop",
    "send-raw",
    "recv",
    "resume",
    "interrupt",
    "stopped",
    "expect",
    "expect-kind",
    "expect-same",
    "expect-frame",
    "expect-silence",
    "expect-gone",
    "capture",
    "unsupported-if",
    "skip",
    "signal",
    "ack-mode",
    "note",
];

fn fixture_named(s: &str) -> Option<Fixture> {
    Fixture::ALL.into_iter().find(|f| f.name() == s)
}

impl Transcript {
    /// Parse transcript text (`path` is used in messages).
    pub fn parse(text: &str, path: &Path) -> Result<Self, TranscriptError> {
        let p = path.display().to_string();
        let err = |line: usize, msg: String| TranscriptError::Syntax {
            path: p.clone(),
            line,
            msg,
        };
        let mut header: BTreeMap<String, String> = BTreeMap::new();
        let mut body = Vec::new();
        let mut in_body = false;
        let vars = Regex::new(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
            .map_err(|e| err(0, e.to_string()))?;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = raw.trim_end();
            if l.trim_start().starts_with('#') || l.trim().is_empty() {
                continue;
            }
            if l.trim() == "---" {
                in_body = true;
                continue;
            }
            let (key, arg) = match l.split_once(':') {
                Some((k, v)) => (k.trim(), v.strip_prefix(' ').unwrap_or(v)),
                None => return Err(err(line, format!("expected `key: value`, got {l:?}"))),
            };
            if !in_body {
                header.insert(key.to_string(), arg.trim().to_string());
                continue;
            }
            let (op, dialects) = match key.split_once('@') {
                Some((o, d)) => (o, d.split(',').map(|s| s.trim().to_string()).collect()),
                None => (key, Vec::new()),
            };
            if !OPS.contains(&op) {
                return Err(err(line, format!("unknown directive {op:?}")));
            }
            if matches!(op, "expect" | "unsupported-if") {
                // Variables are substituted (escaped) at run time: check the
                // regex with a placeholder in their place.
                Regex::new(&vars.replace_all(arg, "X"))
                    .map_err(|e| err(line, format!("bad regex: {e}")))?;
            }
            body.push(Directive {
                op: op.to_string(),
                dialects,
                arg: arg.to_string(),
                line,
            });
        }
        let get = |k: &str| header.get(k).cloned();
        let name = get("name").ok_or_else(|| err(1, "missing `name:`".into()))?;
        let requirement = match get("requirement").as_deref() {
            Some("required") => Requirement::Required,
            Some("implementation-defined") | Some("impl-def") => Requirement::ImplementationDefined,
            other => return Err(err(1, format!("bad requirement {other:?}"))),
        };
        let fixture_name = get("fixture").unwrap_or_else(|| "single".into());
        let fixture = fixture_named(&fixture_name)
            .ok_or_else(|| err(1, format!("unknown fixture {fixture_name:?}")))?;
        let handshake = match get("handshake").as_deref().unwrap_or("auto") {
            "auto" => Handshake::Auto,
            "gdb" => Handshake::Gdb,
            "lldb" => Handshake::Lldb,
            "none" => Handshake::None,
            other => return Err(err(1, format!("bad handshake {other:?}"))),
        };
        Ok(Self {
            name,
            requirement,
            description: get("description").unwrap_or_default(),
            fixture,
            args: get("args")
                .map(|a| a.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            handshake,
            relaxed_for: get("relaxed-for")
                .map(|a| a.split(',').map(|d| d.trim().to_string()).collect())
                .unwrap_or_default(),
            body,
            path: path.to_path_buf(),
        })
    }

    /// Read and parse one file.
    pub fn load(path: &Path) -> Result<Self, TranscriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, path)
    }
}

/// The transcript directory: `RSP_SCENARIOS_DIR`, else the crate's `scenarios/`.
pub fn default_dir() -> PathBuf {
    std::env::var_os("RSP_SCENARIOS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"))
}

/// Load every `*.txt` in `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Transcript>, TranscriptError> {
    let rd = std::fs::read_dir(dir).map_err(|source| TranscriptError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths.iter().map(|p| Transcript::load(p)).collect()
}

/// The name dialect filters use.
pub fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::Gdbmux => "gdbmux",
        Dialect::Gdbserver => "gdbserver",
        Dialect::LldbServer => "lldb-server",
        Dialect::Custom => "custom",
    }
}

fn fail(msg: impl Into<String>) -> Failure {
    Failure {
        message: msg.into(),
        ..Failure::default()
    }
}

fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decode `\xNN` escapes (and `\\`) in a directive argument.
pub fn unescape_arg(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            if let Some(v) = b
                .get(i + 2..i + 4)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Run-time address of `sym` in the fixture `prog` running as `pid`.
pub fn symbol_address(prog: &Path, pid: u64, sym: &str) -> Result<u64, String> {
    let out = std::process::Command::new("nm")
        .arg(prog)
        .output()
        .map_err(|e| format!("cannot run nm: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let off = text
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            let (a, _, n) = (w.next()?, w.next()?, w.next()?);
            (n == sym)
                .then(|| u64::from_str_radix(a, 16).ok())
                .flatten()
        })
        .ok_or_else(|| format!("symbol {sym} not in {}", prog.display()))?;
    // PIE: add the load base (start of the first mapping of the file).
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    let canon = std::fs::canonicalize(prog).unwrap_or_else(|_| prog.to_path_buf());
    let base = maps.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 6 && Path::new(f[5]) == canon && f[2].chars().all(|c| c == '0') {
            u64::from_str_radix(f[0].split('-').next()?, 16).ok()
        } else {
            None
        }
    });
    match base {
        // A non-PIE executable's symbols are absolute already.
        Some(b) if off < b => Ok(b + off),
        _ => Ok(off),
    }
}

struct Runner<'a> {
    ctx: &'a mut Ctx,
    t: &'a Transcript,
    vars: BTreeMap<String, String>,
    reply: Option<Vec<u8>>,
    last_request: String,
    notes: Vec<String>,
    rle_replies: usize,
}

impl Runner<'_> {
    fn var(&self, name: &str) -> Result<String, String> {
        if let Some(v) = self.vars.get(name) {
            return Ok(v.clone());
        }
        match name {
            "sigusr1" => Ok(format!("{:02x}", self.ctx.dialect.sigusr1())),
            "prog" => Ok(self.prog()?.display().to_string()),
            "prog_hex" => Ok(hex_encode(self.prog()?.display().to_string().as_bytes())),
            _ => Err(format!("unknown variable ${name}")),
        }
    }

    fn prog(&self) -> Result<PathBuf, String> {
        self.ctx
            .program
            .clone()
            .ok_or_else(|| "no fixture program known (--addr mode)".to_string())
    }

    fn pid(&self) -> Result<u64, String> {
        let p = self.var("pid")?;
        u64::from_str_radix(&p, 16).map_err(|_| format!("bad $pid {p:?}"))
    }

    fn function(&self, expr: &str) -> Result<String, String> {
        let (f, rest) = expr.split_once(':').unwrap_or((expr, ""));
        match f {
            "sym" => {
                let a = symbol_address(&self.prog()?, self.pid()?, rest)?;
                Ok(format!("{a:x}"))
            }
            "le" => {
                let v = self.var(rest)?;
                let bytes = reply::decode_hex(v.as_bytes())
                    .filter(|b| !b.is_empty() && b.len() <= 8)
                    .ok_or_else(|| format!("${{le:{rest}}}: {v:?} is not 1..8 hex bytes"))?;
                let n = bytes.iter().rev().fold(0u64, |a, b| a << 8 | u64::from(*b));
                Ok(format!("{n:x}"))
            }
            "add" => {
                let (v, k) = rest.split_once(':').ok_or("${add:V:HEX}")?;
                let a = u64::from_str_radix(&self.resolve(v)?, 16).map_err(|e| e.to_string())?;
                let b = u64::from_str_radix(k, 16).map_err(|e| e.to_string())?;
                Ok(format!("{:x}", a.wrapping_add(b)))
            }
            "hex" => Ok(hex_encode(rest.as_bytes())),
            "fill" => {
                let (c, n) = rest.split_once(':').ok_or("${fill:C:N}")?;
                let n: usize = n.parse().map_err(|_| format!("bad count {n:?}"))?;
                Ok(c.repeat(n))
            }
            _ if rest.is_empty() => self.var(f),
            _ => Err(format!("unknown function {f}")),
        }
    }

    /// A name or a `${…}` expression body.
    fn resolve(&self, s: &str) -> Result<String, String> {
        if s.contains(':') {
            self.function(s)
        } else {
            self.var(s)
        }
    }

    fn subst(&self, s: &str, for_regex: bool) -> Result<String, String> {
        let mut out = String::with_capacity(s.len());
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'$' {
                let ch = s[i..].chars().next().unwrap_or('?');
                out.push(ch);
                i += ch.len_utf8();
                continue;
            }
            let (val, next) = if b.get(i + 1) == Some(&b'{') {
                let end = s[i..]
                    .find('}')
                    .ok_or_else(|| format!("unclosed ${{ in {s:?}"))?
                    + i;
                (self.resolve(&s[i + 2..end])?, end + 1)
            } else {
                let len = s[i + 1..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(s.len() - i - 1);
                if len == 0 {
                    // A literal `$` (regex end anchor, packet byte).
                    out.push('$');
                    i += 1;
                    continue;
                }
                (self.var(&s[i + 1..i + 1 + len])?, i + 1 + len)
            };
            if for_regex {
                out.push_str(&regex::escape(&val));
            } else {
                out.push_str(&val);
            }
            i = next;
        }
        Ok(out)
    }

    fn reply(&self, d: &Directive) -> Result<&[u8], Failure> {
        self.reply
            .as_deref()
            .ok_or_else(|| fail(format!("line {}: `{}` before any reply", d.line, d.op)))
    }

    fn read_reply(&mut self) -> Result<Vec<u8>, Failure> {
        let r = self.ctx.client.recv_packet()?;
        if self.ctx.client.last_reply_raw().contains(&b'*') {
            self.rle_replies += 1;
        }
        Ok(r)
    }

    fn wait_stop(&mut self, what: &str) -> Result<(), Failure> {
        let (_, _) = self.ctx.client.wait_stop(what)?;
        let raw = self.ctx.client.last_reply_raw().to_vec();
        self.reply = Some(framing::rle_decode(&raw).unwrap_or(raw));
        Ok(())
    }

    fn differ(&self, d: &Directive, expected: String) -> Failure {
        Failure {
            message: format!(
                "{}:{}: reply does not match `{}`",
                self.t
                    .path
                    .file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default(),
                d.line,
                d.op
            ),
            request: Some(self.last_request.clone()),
            expected: Some(expected),
            got: Some(
                self.reply
                    .as_deref()
                    .map(framing::printable)
                    .unwrap_or_else(|| "(nothing)".into()),
            ),
        }
    }

    fn step(&mut self, d: &Directive) -> Result<Option<Verdict>, Failure> {
        let dialect = dialect_name(self.ctx.dialect);
        if !d.dialects.is_empty() && !d.dialects.iter().any(|x| x == dialect) {
            return Ok(None);
        }
        let line_err = |e: String| fail(format!("line {}: {e}", d.line));
        let regex_arg = matches!(d.op.as_str(), "expect" | "unsupported-if");
        let arg = self.subst(&d.arg, regex_arg).map_err(line_err)?;
        match d.op.as_str() {
            "send" => {
                let payload = unescape_arg(&arg);
                self.last_request = framing::printable(&payload);
                self.ctx.client.send_packet(&payload)?;
                self.reply = Some(self.read_reply()?);
            }
            "send-raw" => {
                let bytes = unescape_arg(&arg);
                self.last_request = framing::printable(&bytes);
                self.ctx.client.send_raw(&bytes)?;
            }
            "send-nowait" => {
                let payload = unescape_arg(&arg);
                self.last_request = framing::printable(&payload);
                self.ctx.client.send_packet(&payload)?;
            }
            "wait-stop" => {
                let what = self.last_request.clone();
                self.wait_stop(&what)?;
            }
            "recv" => self.reply = Some(self.read_reply()?),
            "resume" => {
                self.last_request = arg.clone();
                self.ctx.client.send_packet(&unescape_arg(&arg))?;
                self.wait_stop(&arg)?;
            }
            "interrupt" => {
                self.last_request = "\\x03".into();
                self.ctx.client.interrupt()?;
                self.wait_stop("\\x03")?;
            }
            "stopped" => {
                self.last_request = "?".into();
                let (stop, _) = self.ctx.client.stop_reply("?")?;
                self.reply = Some(self.ctx.client.last_reply_raw().to_vec());
                let StopReply::Signal(s) = stop else {
                    return Err(self.differ(d, "a T/S stop reply".into()));
                };
                let raw = String::from_utf8_lossy(self.ctx.client.last_reply_raw()).into_owned();
                self.vars.insert("stop0".into(), raw.clone());
                let tid_text = raw
                    .split(';')
                    .find_map(|kv| kv.split_once(':').filter(|(k, _)| k.ends_with("thread")))
                    .map(|(_, v)| v.to_string());
                if let Some(t) = tid_text {
                    self.vars.insert("tid".into(), t);
                }
                let pid = s
                    .thread
                    .and_then(|t| t.pid.and_then(|p| p.id()).or(t.tid.id()));
                if let Some(p) = pid {
                    self.vars.insert("pid".into(), format!("{p:x}"));
                }
            }
            "expect" => {
                let re =
                    Regex::new(&format!("^(?:{arg})$")).map_err(|e| line_err(e.to_string()))?;
                let text = framing::printable(self.reply(d)?);
                let Some(caps) = re.captures(&text) else {
                    return Err(self.differ(d, format!("/{arg}/")));
                };
                for name in re.capture_names().flatten() {
                    if let Some(m) = caps.name(name) {
                        self.vars.insert(name.to_string(), m.as_str().to_string());
                    }
                }
            }
            "expect-kind" => {
                let r = self.reply(d)?;
                let kind = match classify(r) {
                    ReplyKind::Ok => "ok",
                    ReplyKind::Empty => "empty",
                    ReplyKind::Error(_) => "error",
                    ReplyKind::Other => match StopReply::parse(r) {
                        Ok(StopReply::Signal(_)) => "stop",
                        Ok(StopReply::Exited { .. }) | Ok(StopReply::Terminated { .. }) => "exit",
                        _ if reply::decode_hex(r).is_some() => "hex",
                        _ => "other",
                    },
                };
                // A stop reply like `S05` is also hex: accept either name.
                let hexlike = kind == "stop" && reply::decode_hex(r).is_some();
                if !arg
                    .split('|')
                    .any(|k| k.trim() == kind || (hexlike && k.trim() == "hex"))
                {
                    return Err(self.differ(d, format!("a reply of kind {arg} (got {kind})")));
                }
            }
            "expect-same" => {
                let want = self.var(arg.trim()).map_err(line_err)?;
                if self.reply(d)? != want.as_bytes() {
                    return Err(
                        self.differ(d, format!("byte-identical to ${}: {want}", arg.trim()))
                    );
                }
            }
            "capture" => {
                let r = String::from_utf8_lossy(self.reply(d)?).into_owned();
                self.vars.insert(arg.trim().to_string(), r);
            }
            "expect-frame" => {
                let t = self.ctx.client.timeout();
                let f = self.ctx.client.next_frame("ack/nak", t)?;
                let ok = match arg.trim() {
                    "+" => f == Frame::Ack,
                    "-" => f == Frame::Nak,
                    other => return Err(line_err(format!("expect-frame {other:?}: use + or -"))),
                };
                if !ok {
                    self.reply = Some(format!("{f:?}").into_bytes());
                    return Err(self.differ(d, format!("frame {}", arg.trim())));
                }
            }
            "expect-silence" => {
                let ms: u64 = arg
                    .trim()
                    .parse()
                    .map_err(|_| line_err("bad milliseconds".into()))?;
                match self
                    .ctx
                    .client
                    .recv_packet_within(Duration::from_millis(ms))
                {
                    Err(ClientError::Timeout { .. }) => {}
                    Ok(r) => {
                        self.reply = Some(r);
                        return Err(self.differ(d, format!("no packet within {ms} ms")));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            "expect-gone" => {
                let pid = self.pid().map_err(line_err)?;
                let pid = u32::try_from(pid).map_err(|_| line_err(format!("pid {pid}")))?;
                // Gone, or a zombie waiting for its reaper.
                match process::wait_gone(pid, self.ctx.client.timeout()) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(fail(format!("line {}: process {pid} still alive", d.line)))
                    }
                    Err(e) => return Err(line_err(format!("cannot watch process {pid}: {e}"))),
                }
            }
            "unsupported-if" => {
                let re =
                    Regex::new(&format!("^(?:{arg})$")).map_err(|e| line_err(e.to_string()))?;
                if re.is_match(&framing::printable(self.reply(d)?)) {
                    return Ok(Some(Verdict::Unsupported(format!(
                        "{} -> {}",
                        self.last_request,
                        framing::printable(self.reply(d)?)
                    ))));
                }
            }
            "skip" => return Ok(Some(Verdict::Unsupported(arg))),
            "signal" => {
                let pid = self.pid().map_err(line_err)?;
                let sig = parse_signal(arg.trim())
                    .ok_or_else(|| line_err(format!("bad signal {arg:?}")))?;
                let p = i32::try_from(pid).map_err(|_| line_err("pid out of range".into()))?;
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), sig)
                    .map_err(|e| line_err(format!("kill({pid}, {sig}): {e}")))?;
            }
            "ack-mode" => self.ctx.client.set_ack_mode(arg.trim() == "on"),
            "note" => self.notes.push(arg),
            other => return Err(line_err(format!("unknown directive {other}"))),
        }
        Ok(None)
    }
}

fn parse_signal(s: &str) -> Option<nix::sys::signal::Signal> {
    use std::str::FromStr;
    if let Ok(n) = s.parse::<i32>() {
        return nix::sys::signal::Signal::try_from(n).ok();
    }
    nix::sys::signal::Signal::from_str(s).ok()
}

/// Run a transcript on a fresh connection (`ctx`).
pub fn run(t: &Transcript, ctx: &mut Ctx) -> ScenarioResult {
    let hs = match t.handshake {
        Handshake::Auto if ctx.dialect == Dialect::LldbServer => Handshake::Lldb,
        Handshake::Auto => Handshake::Gdb,
        h => h,
    };
    match hs {
        Handshake::Gdb => {
            ctx.client.handshake_gdb()?;
            ctx.client
                .request(b"Hgp0.0")
                .map_err(|e| fail(format!("Hgp0.0: {e}")))?;
        }
        Handshake::Lldb => {
            ctx.client.handshake_lldb()?;
        }
        Handshake::Auto | Handshake::None => {}
    }
    let mut r = Runner {
        ctx,
        t,
        vars: BTreeMap::new(),
        reply: None,
        last_request: String::new(),
        notes: Vec::new(),
        rle_replies: 0,
    };
    for d in &t.body {
        if let Some(v) = r.step(d)? {
            return Ok(v);
        }
    }
    if r.rle_replies > 0 {
        r.notes.push(format!("RLE in {} replies", r.rle_replies));
    }
    Ok(Verdict::Pass(r.notes.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_and_body() {
        let t = Transcript::parse(
            "# c\nname: x\nrequirement: required\nfixture: threads\nargs: 1 2\n---\nsend: m0,4\nexpect@gdbserver,lldb-server: E..\n",
            Path::new("x.txt"),
        )
        .unwrap();
        assert_eq!(t.name, "x");
        assert_eq!(t.fixture, Fixture::Threads);
        assert_eq!(t.args, ["1", "2"]);
        assert_eq!(t.body.len(), 2);
        assert_eq!(t.body[1].dialects, ["gdbserver", "lldb-server"]);
        assert!(Transcript::parse(
            "name: x\nrequirement: required\n---\nbogus: 1\n",
            Path::new("y")
        )
        .is_err());
        assert!(Transcript::parse(
            "name: x\nrequirement: required\n---\nexpect: (\n",
            Path::new("y")
        )
        .is_err());
    }

    #[test]
    fn unescapes_args() {
        assert_eq!(unescape_arg(r"a\x03b\\"), b"a\x03b\\".to_vec());
        assert_eq!(unescape_arg(r"\xzz"), b"\\xzz".to_vec());
    }

    #[test]
    fn every_shipped_transcript_parses() {
        let all = load_dir(&default_dir()).unwrap();
        assert!(!all.is_empty());
        let mut names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "duplicate scenario names");
    }
}
