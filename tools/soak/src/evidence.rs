//! What a failed GPU soak leaves behind to be read: gdbmux's own log (the
//! `packets`, `mux` and `dbgapi` channels, written to a file for the whole
//! run, kept when the run fails) with the first failed session's part, and a snapshot of every process and thread
//! involved taken the moment the first session failed (state, kernel wait
//! channel, current system call), with the GPU library's rendezvous
//! sockets (`@simgpu-dbgapi.PID` in `/proc/net/unix`).
//!
//! A CI run that fails keeps this in its output, so a flake that does not
//! reproduce elsewhere still leaves its evidence.

use std::fmt::Write as _;
use std::path::Path;
use std::path::PathBuf;

/// The most log lines printed of the failed session (its first and last
/// lines, what lies between them elided), and after its failure.
const SESSION_LINES: usize = 1500;
const LINES_AFTER: usize = 100;

/// gdbmux's log file and where the first failed session fell in it.
pub struct Evidence {
    log: PathBuf,
    /// Log length when the session now running began.
    session_start: u64,
    /// For the first failed session: the log length when it began and when
    /// it failed, and the snapshot then.
    first: Option<(u64, u64, String)>,
}

impl Evidence {
    /// A log file under the system's temp directory, named by our pid.
    pub fn new() -> Self {
        let log = std::env::temp_dir().join(format!("soak-gpu-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        Evidence {
            log,
            session_start: 0,
            first: None,
        }
    }

    fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0)
    }

    /// A session begins: its part of the log starts here.
    pub fn session_begins(&mut self) {
        self.session_start = self.log_len();
    }

    /// gdbmux's arguments that write the log.
    pub fn gdbmux_args(&self) -> Vec<std::ffi::OsString> {
        vec![
            "--log-file".into(),
            self.log.clone().into(),
            "--log-channels".into(),
            "packets,mux,dbgapi".into(),
        ]
    }

    /// Notes a failed session: the first one's moment is kept.
    pub fn failed(&mut self, gdbmux: u32) {
        if self.first.is_none() {
            self.first = Some((self.session_start, self.log_len(), snapshot(gdbmux)));
        }
    }

    /// Prints the snapshot and the log of the first failed session (and a
    /// little after it); the whole log is kept (a passing run keeps none).
    pub fn print(&self) {
        let Some((from, at, snap)) = &self.first else {
            return;
        };
        println!("---- processes when the first session failed ----\n{snap}");
        let text = std::fs::read(&self.log).unwrap_or_default();
        let at = (*at as usize).min(text.len());
        let from = (*from as usize).min(at);
        let session = String::from_utf8_lossy(&text[from..at]);
        let lines: Vec<&str> = session.lines().collect();
        println!(
            "---- gdbmux log ({}, kept), the failed session: {} lines ----",
            self.log.display(),
            lines.len()
        );
        if lines.len() <= SESSION_LINES {
            lines.iter().for_each(|l| println!("{l}"));
        } else {
            let head = SESSION_LINES / 3;
            let tail = SESSION_LINES - head;
            lines[..head].iter().for_each(|l| println!("{l}"));
            println!("[… {} lines …]", lines.len() - SESSION_LINES);
            lines[lines.len() - tail..]
                .iter()
                .for_each(|l| println!("{l}"));
        }
        println!("---- the failure; after it ----");
        for l in String::from_utf8_lossy(&text[at..])
            .lines()
            .take(LINES_AFTER)
        {
            println!("{l}");
        }
        println!("---- end of gdbmux log excerpt ----");
    }

    /// Removes the log of a run that passed.
    pub fn discard(&self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `pid`'s children, from `/proc/*/stat`'s parent field.
fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|e| format!("({e})"))
}

/// One line per thread of `pid` and of its descendants.
fn snapshot(pid: u32) -> String {
    let mut out = String::new();
    let mut todo = vec![(pid, 0usize)];
    while let Some((p, depth)) = todo.pop() {
        let base = PathBuf::from(format!("/proc/{p}"));
        let _ = writeln!(
            out,
            "{:indent$}process {p} {}: {}",
            "",
            read(&base.join("comm")),
            read(&base.join("cmdline")).replace('\0', " "),
            indent = depth * 2
        );
        let tasks = std::fs::read_dir(base.join("task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        for t in tasks {
            let tb = base.join(format!("task/{t}"));
            let stat = read(&tb.join("stat"));
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                .unwrap_or("?")
                .to_owned();
            let status = read(&tb.join("status"));
            let sig = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_default()
            };
            let _ = writeln!(
                out,
                "{:indent$}  thread {t} {} state {state} wchan {} syscall {} SigPnd {} SigBlk {} TracerPid {}",
                "",
                read(&tb.join("comm")),
                read(&tb.join("wchan")),
                read(&tb.join("syscall")),
                sig("SigPnd:"),
                sig("SigBlk:"),
                sig("TracerPid:"),
                indent = depth * 2
            );
        }
        for c in children(p) {
            todo.push((c, depth + 1));
        }
    }
    let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let socks: Vec<&str> = unix.lines().filter(|l| l.contains("simgpu")).collect();
    let _ = writeln!(out, "simgpu sockets in /proc/net/unix: {}", socks.len());
    for l in socks {
        let _ = writeln!(out, "  {l}");
    }
    out
}
