//! Every packet type (`stub::packet::Command` variant) has a parser test
//! and a transcript test (a test that sends it to a running gdbmux).
//!
//! The variants and their wire forms are read from the doc comments of
//! `Command` in `stub/src/packet/mod.rs` (the backticked form on the line
//! before each variant). A form's *head* is its literal start (`qXfer:`,
//! `vKill;`, `m`). Coverage:
//! - parser: a byte string starting with the head in the packet module's
//!   tests (`stub/src/packet/**.rs`) or `stub/tests/props_parsers.rs`;
//! - transcript: a `$HEAD…` packet in `protocol-tests/scenarios/*.txt`, or a
//!   string starting with the head in `protocol-tests/src/scenarios.rs`,
//!   `protocol-tests/tests/*.rs` or `stub/tests/*.rs` (tests that talk to a
//!   real gdbmux).
//!
//! What is not covered yet is listed in [`KNOWN_GAPS`]; the test fails on
//! a new gap and on a listed gap that is now covered (so the list only
//! shrinks).

use std::collections::BTreeSet;
use std::path::Path;

/// `Variant: parser` or `Variant: transcript`, for what has no test yet.
const KNOWN_GAPS: &[&str] = &[
    "DisableRandomization: transcript",
    "Echo: transcript",
    "EnableErrorStrings: parser",
    "GetWorkingDir: parser",
    "GetWorkingDir: transcript",
    "ListThreadsInStopReply: parser",
    "LldbTraceSupported: parser",
    "LldbTraceSupported: transcript",
    "Offsets: parser",
    "Offsets: transcript",
    "ProgramSignals: parser",
    "ProgramSignals: transcript",
    "ResetEnv: parser",
    "ResetEnv: transcript",
    "ServerVersion: parser",
    "ServerVersion: transcript",
    "SetDetachOnError: parser",
    "SetDetachOnError: transcript",
    "SetWorkingDir: transcript",
    "ShlibInfoAddr: parser",
    "ShlibInfoAddr: transcript",
    "StartupWithShell: parser",
    "StartupWithShell: transcript",
    "StructuredDataPlugins: parser",
    "StructuredDataPlugins: transcript",
    "Symbol: parser",
    "Symbol: transcript",
    "ThreadExtendedInfo: parser",
    "ThreadExtendedInfo: transcript",
    "ThreadExtraInfo: parser",
    "ThreadSuffixSupported: parser",
    "UnsetEnv: parser",
    "UnsetEnv: transcript",
    "VAttachOrWaitSupported: parser",
    "VFile: parser",
    "VMustReplyEmpty: parser",
    "WatchpointSupportInfo: parser",
    "WatchpointSupportInfo: transcript",
];

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn files(dir: &Path, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, ext));
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(read(&p));
        }
    }
    out
}

/// `(variant, heads)` from the `Command` enum's doc comments.
fn variants(src: &str) -> Vec<(String, Vec<String>)> {
    let body = src
        .split_once("pub enum Command {")
        .and_then(|(_, rest)| rest.split_once("\n}\n"))
        .map(|(b, _)| b)
        .expect("the Command enum");
    let mut out = Vec::new();
    let mut doc = String::new();
    for line in body.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push_str(d);
            doc.push(' ');
            continue;
        }
        let name: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if !name.is_empty()
            && name.starts_with(|c: char| c.is_ascii_uppercase())
            && line.starts_with("    ")
            && !line.starts_with("        ")
        {
            let heads: Vec<String> = doc
                .split('`')
                .skip(1)
                .step_by(2)
                .map(head)
                .filter(|h| !h.is_empty())
                .collect();
            if !heads.is_empty() {
                out.push((name, heads));
            }
        }
        if !t.starts_with("///") && !t.is_empty() {
            doc.clear();
        }
    }
    out
}

/// The literal start of a wire form: up to and including the first `:`,
/// `;` or `,`, or up to the first space, `[` or `…`.
fn head(form: &str) -> String {
    let mut h = String::new();
    for (i, c) in form.chars().enumerate() {
        match c {
            ' ' | '[' | '…' => break,
            ':' | ';' | ',' if i > 0 => {
                h.push(c);
                break;
            }
            _ => h.push(c),
        }
    }
    h
}

/// Whether `text` has a string literal starting with `head` (`"HEAD` or
/// `b"HEAD`), not followed by a letter when the head is a short command.
fn has_literal(text: &str, head: &str) -> bool {
    let pat = format!("\"{head}");
    text.match_indices(&pat).any(|(i, _)| {
        let next = text[i + pat.len()..].chars().next();
        head.len() > 2 || !next.is_some_and(|c| c.is_ascii_alphabetic())
    })
}

fn has_packet(text: &str, head: &str) -> bool {
    let pat = format!("${head}");
    text.match_indices(&pat).any(|(i, _)| {
        let next = text[i + pat.len()..].chars().next();
        head.len() > 2 || !next.is_some_and(|c| c.is_ascii_alphabetic())
    })
}

#[test]
fn every_packet_type_has_a_parser_and_a_transcript_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cmds = variants(&read(&root.join("stub/src/packet/mod.rs")));
    assert!(cmds.len() > 50, "read {} variants only", cmds.len());
    let mut parser_src = files(&root.join("stub/src/packet"), "rs")
        .into_iter()
        .filter_map(|f| f.split_once("#[cfg(test)]").map(|(_, t)| t.to_string()))
        .collect::<Vec<_>>();
    parser_src.push(read(&root.join("stub/tests/props_parsers.rs")));
    let transcripts = files(&root.join("protocol-tests/scenarios"), "txt");
    let mut talk = vec![read(&root.join("protocol-tests/src/scenarios.rs"))];
    talk.extend(files(&root.join("protocol-tests/tests"), "rs"));
    talk.extend(
        std::fs::read_dir(root.join("stub/tests"))
            .expect("stub/tests")
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
            .filter(|e| {
                e.file_name() != "packet_coverage.rs" && e.file_name() != "props_parsers.rs"
            })
            .map(|e| read(&e.path())),
    );
    let mut gaps = BTreeSet::new();
    for (name, heads) in &cmds {
        let parsed = heads
            .iter()
            .any(|h| parser_src.iter().any(|s| has_literal(s, h)));
        let sent = heads.iter().any(|h| {
            transcripts.iter().any(|s| has_packet(s, h)) || talk.iter().any(|s| has_literal(s, h))
        });
        if !parsed {
            gaps.insert(format!("{name}: parser"));
        }
        if !sent {
            gaps.insert(format!("{name}: transcript"));
        }
    }
    let known: BTreeSet<String> = KNOWN_GAPS.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = gaps.difference(&known).collect();
    let closed: Vec<&String> = known.difference(&gaps).collect();
    assert!(
        new.is_empty() && closed.is_empty(),
        "packet types without a test (add the test): {new:#?}\nlisted gaps that are covered now (remove them from KNOWN_GAPS): {closed:#?}"
    );
}
