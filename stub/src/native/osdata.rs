//! `qXfer:osdata:read:ANNEX` (gdb's `info os`): tables of the host read
//! from /proc, in gdbserver's format (gdb/nat/linux-osdata.c: an
//! `<osdata type=…>` document of `<item>`s of named `<column>`s).

use std::fmt::Write;

use super::procfs;
use crate::target::Pid;

/// The tables served, with gdbserver's descriptions and titles.
const TYPES: &[(&str, &str, &str)] = &[
    ("processes", "Listing of all processes", "Processes"),
    ("threads", "Listing of all threads", "Threads"),
];

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn item(out: &mut String, cols: &[(&str, String)]) {
    out.push_str("<item>\n");
    for (name, value) in cols {
        let _ = writeln!(
            out,
            "<column name=\"{name}\">{}</column>",
            xml_escape(value)
        );
    }
    out.push_str("</item>\n");
}

fn pids() -> Vec<Pid> {
    let mut v: Vec<Pid> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

fn user_names() -> Vec<(u32, String)> {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid = f.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

fn uid(pid: Pid) -> Option<u32> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    st.lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn command(pid: Pid) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    words.join(" ")
}

/// The document for `annex` (`""` or `types` lists the tables); `None`
/// for a table not served.
pub fn document(annex: &str) -> Option<String> {
    let kind = if annex.is_empty() { "types" } else { annex };
    let mut out = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"osdata.dtd\">\n<osdata type=\"{kind}\">\n"
    );
    match kind {
        "types" => {
            for (t, d, title) in TYPES {
                item(
                    &mut out,
                    &[
                        ("Type", t.to_string()),
                        ("Description", d.to_string()),
                        ("Title", title.to_string()),
                    ],
                );
            }
        }
        "processes" => {
            let users = user_names();
            for pid in pids() {
                let user = uid(pid)
                    .map(|u| {
                        users
                            .iter()
                            .find(|(id, _)| *id == u)
                            .map(|(_, n)| n.clone())
                            .unwrap_or_else(|| u.to_string())
                    })
                    .unwrap_or_default();
                let mut cores: Vec<u32> = procfs::task_ids(pid)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|t| procfs::thread_core(pid, t as u64))
                    .collect();
                cores.sort_unstable();
                cores.dedup();
                let cores: Vec<String> = cores.iter().map(u32::to_string).collect();
                item(
                    &mut out,
                    &[
                        ("pid", pid.to_string()),
                        ("user", user),
                        ("command", command(pid)),
                        ("cores", cores.join(",")),
                    ],
                );
            }
        }
        "threads" => {
            for pid in pids() {
                let cmd = procfs::thread_name(pid, u64::from(pid)).unwrap_or_default();
                for tid in procfs::task_ids(pid).unwrap_or_default() {
                    let core = procfs::thread_core(pid, tid as u64)
                        .map(|c| c.to_string())
                        .unwrap_or_default();
                    item(
                        &mut out,
                        &[
                            ("pid", pid.to_string()),
                            ("command", cmd.clone()),
                            ("tid", tid.to_string()),
                            ("core", core),
                        ],
                    );
                }
            }
        }
        _ => return None,
    }
    out.push_str("</osdata>\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_lists_this_process() {
        let doc = document("processes").unwrap();
        let me = format!("<column name=\"pid\">{}</column>", std::process::id());
        assert!(doc.contains(&me), "{doc}");
        assert!(document("").unwrap().contains(">processes<"));
        assert!(document("nonsense").is_none());
    }
}
