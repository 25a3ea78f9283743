//! `qRcmd` (gdb `monitor …`, lldb `process plugin packet monitor …`).
//! Output goes out as `O` packets, then `OK`.

use std::fmt::Write as _;

use super::Session;
use super::SessionControl;
use crate::packet::reply;

const HELP: &str = "The following monitor commands are supported (gdbmux):\n\
  help              this text\n\
  info | ps         the debugged processes and their threads (tid, name, pc)\n\
  exit              stop the gdbmux server after this session\n\
  gpu               GPU state, agents, code objects, the offer, how to reach the GPU\n\
  gpu waves         waves (id, pc, exec, stop reason, workgroup, wave number)\n\
  gpu regs W [R..]  registers of wave W (all, or the named ones)\n\
  gpu mem [global|local|private] ADDR LEN [W]   memory of an address space\n\
  gpu break ADDR|KERNEL  set a GPU breakpoint;  gpu breaks: list;  gpu delete ADDR\n\
  gpu step W        single-step wave W;  gpu continue [W]: resume one or all waves\n\
  gpu stops report|log   report GPU stops to this session, or only log them\n";

impl Session {
    pub(super) fn handle_monitor(&mut self, cmd: &[u8]) {
        let cmd = String::from_utf8_lossy(cmd).trim().to_string();
        let mut words = cmd.split_whitespace();
        match words.next().unwrap_or("help") {
            "help" => self.console_then_ok(HELP),
            "info" | "ps" | "threads" => {
                let text = self.monitor_info();
                self.console_then_ok(&text);
            }
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
            other => {
                let msg = format!("unknown monitor command '{other}'; try 'monitor help'\n");
                self.console_then_ok(&msg);
            }
        }
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
