//! `qRcmd` (gdb `monitor …`, lldb `process plugin packet monitor …`).
//! Output goes out as `O` packets, then `OK`.

use std::fmt::Write as _;

use crate::packet::reply;
use crate::session::Session;
use crate::session::SessionControl;
use crate::session::SessionRole;

const HELP: &str = "The following monitor commands are supported (gdbmux):\n\
  help              this text\n\
  info | ps         the debugged processes and their threads (tid, name, pc)\n\
  exit              stop the gdbmux server after this session\n\
  loop              the server loop's counts: turns, refused connections' bytes per turn,\n\
                    the longest a session waited with input unread (in turns)\n\
  set debug 0|1     gdbserver's debug output (ptrace, native, session channels)\n\
  set remote-debug 0|1   gdbserver's protocol debug output (packets channel)\n\
  set debug-format all|none|timestamp   timestamps on log lines (on unless turned off)\n\
  set libthread-db-search-path [PATH]   where qGetTLSAddr's libthread_db is looked for\n\
                    (`:`-separated; $pdir, $sdir; empty: the default $sdir:$pdir)\n\
  gpu               GPU state, agents, code objects, kernels with addresses, the offer, how to reach the GPU\n\
  gpu waves         waves (id, pc, exec, stop reason, workgroup, wave number)\n\
  gpu regs W [R..]  registers of wave W (all, or the named ones)\n\
  gpu mem [global|local] ADDR LEN [W]   memory of an address space\n\
  gpu mem private ADDR LEN W [LANE]   a lane's private memory (private-wave: the wave's)\n\
  gpu break ADDR|KERNEL|FILE:LINE  set a GPU breakpoint (one not loaded yet is pending\n\
                    until a code object defines it);  gpu breaks: list;  gpu delete ADDR|SPEC\n\
  gpu step W        single-step wave W;  gpu continue [W]: resume one or all waves\n\
                    (a wave on a GPU breakpoint steps off it first)\n\
  gpu stop          stop every running wave (a hung kernel: then gpu waves / gpu regs)\n\
  gpu stops report|log   report GPU stops to this session, or only log them\n";

/// Changes the log filter at run time: given the channels to add (e.g.
/// `,packets=trace`) to the filter the server started with.
pub type LogControl = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

static LOG_CONTROL: std::sync::OnceLock<LogControl> = std::sync::OnceLock::new();

/// gdbserver's debug switches, as set by `monitor set debug|remote-debug`.
static LOG_SWITCHES: std::sync::Mutex<(bool, bool)> = std::sync::Mutex::new((false, false));

/// Whether log lines carry timestamps: gdbserver's debug format option
/// (`--debug-format`, `monitor set debug-format`). gdbmux's log lines have
/// them unless they are turned off.
static LOG_TIMESTAMPS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether log lines carry timestamps now (read by the binary's log timer).
pub fn log_timestamps() -> bool {
    LOG_TIMESTAMPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Turns timestamps on log lines on or off.
pub fn set_log_timestamps(on: bool) {
    LOG_TIMESTAMPS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// gdbserver's debug-format list (`all`, `none`, `timestamp`, comma
/// separated, empty items ignored), applied in order from "all off" as
/// gdbserver 13's `parse_debug_format_options` does: the resulting
/// timestamp switch and gdbserver's confirmation line for each option.
/// An unknown option is an error with gdbserver's message, and nothing is
/// applied.
pub fn parse_debug_format(list: &str) -> Result<(bool, String), String> {
    let mut on = false;
    let mut said = String::new();
    for opt in list.trim_start().split(',') {
        match opt {
            "all" => {
                on = true;
                said.push_str("All extra debug format options enabled.\n");
            }
            "none" => {
                on = false;
                said.push_str("All extra debug format options disabled.\n");
            }
            "timestamp" => {
                on = true;
                said.push_str("Timestamps will be added to debug output.\n");
            }
            "" => {}
            other => return Err(format!("Unknown debug-format argument: \"{other}\"\n")),
        }
    }
    Ok((on, said))
}

/// Install the log control (the binary does, after setting up logging);
/// without it `monitor set debug` answers that logging is not adjustable.
pub fn set_log_control(f: LogControl) {
    let _ = LOG_CONTROL.set(f);
}

/// `monitor set debug 0|1` / `monitor set remote-debug 0|1`: gdbserver's
/// general and protocol debug output, here the `ptrace,native,session`
/// channels and the `packets` channel at trace level (to stderr or
/// --log-file). Returns gdbserver's confirmation line.
fn set_debug(which: &str, on: bool) -> Result<String, String> {
    let control = LOG_CONTROL
        .get()
        .ok_or("logging cannot be changed at run time here")?;
    let mut sw = LOG_SWITCHES.lock().unwrap_or_else(|e| e.into_inner());
    let mut next = *sw;
    if which == "debug" {
        next.0 = on;
    } else {
        next.1 = on;
    }
    let mut extra = String::new();
    if next.0 {
        extra.push_str(",ptrace=trace,native=trace,session=trace");
    }
    if next.1 {
        extra.push_str(",packets=trace");
    }
    control(&extra)?;
    *sw = next;
    let state = if on { "enabled" } else { "disabled" };
    Ok(if which == "debug" {
        format!("Debug output {state}.\n")
    } else {
        format!("Protocol debug output {state}.\n")
    })
}

impl<R: SessionRole> Session<R> {
    pub(super) fn handle_monitor(&mut self, cmd: &[u8]) {
        let cmd = String::from_utf8_lossy(cmd).trim().to_string();
        // gdbserver (thread-db.cc, thread_db_handle_monitor_command): the
        // exact words, then the rest of the line.
        if let Some(rest) = cmd.strip_prefix("set libthread-db-search-path") {
            if rest.is_empty() || rest.starts_with(' ') {
                let path = crate::native::thread_db::set_search_path(rest);
                self.console_then_ok(&format!("libthread-db-search-path set to `{path}'\n"));
                return;
            }
        }
        let mut words = cmd.split_whitespace();
        match words.next().unwrap_or("") {
            "set" if cmd.split_whitespace().nth(1) == Some("debug-format") => {
                // The rest of the line, as gdbserver takes it.
                let rest = cmd.split_once("debug-format").map(|(_, r)| r).unwrap_or("");
                match parse_debug_format(rest) {
                    Ok((on, said)) => {
                        set_log_timestamps(on);
                        self.console_then_ok(&said);
                    }
                    // gdbserver 13: the complaint, the help, an error.
                    Err(complaint) => {
                        self.send(&reply::console(&complaint));
                        self.help_then_error("bad debug-format argument");
                    }
                }
            }
            "set" => {
                let what = words.next().unwrap_or("");
                let val = words.next().unwrap_or("");
                match (what, val) {
                    ("debug" | "remote-debug", "0" | "1") => match set_debug(what, val == "1") {
                        Ok(text) => self.console_then_ok(&text),
                        Err(e) => self.send_error(crate::error::ErrorCode::NotSupported, &e),
                    },
                    _ => self.unknown_monitor(),
                }
            }
            "help" => self.console_then_ok(HELP),
            "info" | "ps" | "threads" => {
                let text = self.monitor_info();
                self.console_then_ok(&text);
            }
            "loop" => match self.loop_stats.as_ref().map(|l| l.borrow().report()) {
                Some(text) => self.console_then_ok(&text),
                None => self.send_error(
                    crate::error::ErrorCode::NotSupported,
                    "this session is not served by a server loop",
                ),
            },
            "gpu" => {
                let args: Vec<String> = words.map(str::to_string).collect();
                let text = self.monitor_gpu(&args);
                self.console_then_ok(&text);
            }
            "exit" => {
                // Silent, as gdbserver (gdb.server/monitor-exit-quit.exp
                // expects no output).
                self.send(&reply::ok());
                self.control = SessionControl::ExitServer;
            }
            _ => self.unknown_monitor(),
        }
    }

    /// gdbserver's answer to an unknown (or empty) monitor command: the
    /// line, the help, then an error (gdb: "Protocol error with Rcmd").
    fn unknown_monitor(&mut self) {
        self.send(&reply::console("Unknown monitor command.\n\n"));
        self.help_then_error("unknown monitor command");
    }

    fn help_then_error(&mut self, why: &str) {
        for chunk in HELP.as_bytes().chunks(1024) {
            self.send(&reply::console(&String::from_utf8_lossy(chunk)));
        }
        self.send_error(crate::error::ErrorCode::Invalid, why);
    }

    fn console_then_ok(&mut self, text: &str) {
        // Keep O packets well under the client's buffer.
        let bytes = text.as_bytes();
        for chunk in bytes.chunks(1024) {
            self.send(&reply::console(&String::from_utf8_lossy(chunk)));
        }
        self.send(&reply::ok());
    }

    fn monitor_info(&mut self) -> String {
        let mut s = String::new();
        if self.procs.is_empty() {
            s.push_str("no process\n");
        }
        let pids: Vec<_> = self.procs.keys().copied().collect();
        for pid in pids {
            let Some(t) = self.procs.get_mut(&pid) else {
                continue;
            };
            let exe = t.exec_file().unwrap_or_else(|| "?".into());
            let _ = writeln!(
                s,
                "process {pid} ({}) {exe}{}",
                if t.attached() { "attached" } else { "launched" },
                if pid == self.current.unwrap_or(0) {
                    " [current]"
                } else {
                    ""
                }
            );
            for tid in t.threads() {
                let name = t.thread_name(tid).unwrap_or_default();
                let pc = t
                    .pc(tid)
                    .map(|p| format!("{p:#x}"))
                    .unwrap_or_else(|_| "?".into());
                let _ = writeln!(s, "  thread {tid} {name:<16} pc={pc}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::parse_debug_format;

    #[test]
    fn debug_format_applies_options_in_order_from_all_off() {
        let (on, said) = parse_debug_format("all,none").expect("valid");
        assert!(!on);
        assert_eq!(
            said,
            "All extra debug format options enabled.\nAll extra debug format options disabled.\n"
        );
        let (on, said) = parse_debug_format(" none,,timestamp").expect("valid");
        assert!(on);
        assert!(said.ends_with("Timestamps will be added to debug output.\n"));
        assert_eq!(
            parse_debug_format("").expect("valid"),
            (false, String::new())
        );
    }

    #[test]
    fn unknown_debug_format_is_refused_with_gdbservers_message() {
        assert_eq!(
            parse_debug_format("all,bogus"),
            Err("Unknown debug-format argument: \"bogus\"\n".to_string())
        );
    }
}
