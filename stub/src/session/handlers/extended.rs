//! Process control: `D`, `k`, `vKill`, `R`, and the launch settings
//! (`QEnvironment*`, `QSetWorkingDir`, `QDisableRandomization`,
//! `QStartupWithShell`); `vRun`/`vAttach` are in `launch.rs`
//! (packets: `packet/extended.rs`, `packet/query.rs`).

use crate::packet::reply;
use crate::session::Session;
use crate::session::SessionControl;
use crate::session::SessionRole;
use crate::stop::StopEvent;
use crate::target::Pid;

impl<R: SessionRole> Session<R> {
    /// `R`: only in extended mode; gdbserver answers `R` outside it as
    /// unknown.
    pub(in crate::session) fn handle_r(&mut self) {
        if self.features.extended {
            self.handle_restart();
        } else {
            self.send(&reply::empty());
        }
    }

    pub(in crate::session) fn handle_disable_randomization(&mut self, on: bool) {
        self.launch.disable_aslr = on;
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_set_env(&mut self, kv: &[u8]) {
        match self.launch.set_env(kv) {
            Ok(()) => self.send(&reply::ok()),
            Err(e) => self.send_error(crate::error::ErrorCode::TooBig, &e),
        }
    }

    pub(in crate::session) fn handle_reset_env(&mut self) {
        self.launch.reset_env();
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_unset_env(&mut self, k: &[u8]) {
        self.launch.unset_env(k);
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_set_working_dir(&mut self, dir: Option<Vec<u8>>) {
        self.launch.cwd = dir.map(|d| String::from_utf8_lossy(&d).into_owned().into());
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_startup_with_shell(&mut self, on: bool) {
        self.launch.startup_with_shell = on;
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_detach(&mut self, pid: Option<u64>) {
        let pid = match pid {
            Some(p) => Pid::try_from(p).ok(),
            None => self.current,
        };
        let Some(pid) = pid.filter(|p| self.procs.contains_key(p)) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process");
            return;
        };
        self.gpu_before_detach(pid);
        let r = self.procs.get_mut(&pid).map(|t| t.detach());
        match r {
            Some(Ok(())) => {
                // Detaching took every breakpoint out of the process.
                self.release_process(pid);
                self.send(&reply::ok());
                tracing::info!(target: "ptrace", session = self.id, pid, "detached");
                self.cpu_process_released(pid, crate::mux::Release::Detached);
                self.journal_forget(pid);
                if self.procs.is_empty() {
                    self.journal.clear();
                    if !self.features.extended {
                        self.control = SessionControl::Close;
                    }
                }
            }
            Some(Err(e)) => self.send_target_error(&e),
            None => self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process"),
        }
    }

    pub(in crate::session) fn handle_kill(&mut self, pid: Option<u64>, vkill: bool) {
        let pid = match pid {
            Some(p) => Pid::try_from(p).ok(),
            None => self.current,
        };
        let Some(pid) = pid.filter(|p| self.procs.contains_key(p)) else {
            if pid.is_none() && !vkill {
                // `k` with nothing to kill.
                self.send(b"X09");
            } else {
                self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process");
            }
            return;
        };
        if let Some(mut t) = self.release_process(pid) {
            if let Err(e) = t.kill() {
                tracing::warn!(target: "ptrace", pid, "kill: {e}");
            }
            self.cpu_process_released(pid, crate::mux::Release::Killed);
        }
        let stop = StopEvent::Terminated {
            pid,
            signal: libc::SIGKILL,
        };
        self.record_stop(stop);
        // vKill answers OK; `k` answers the exit like lldb-server
        // (`X09;process:pid`, lldb waits for it; gdb ignores it).
        let opts = self.features.stop_options();
        if vkill {
            self.send(&reply::ok());
        } else if let Some(r) = self.journal.reply(&opts) {
            self.send(&r);
        }
        self.journal_forget(pid);
        if self.procs.is_empty() && !self.features.extended {
            self.control = SessionControl::Close;
        }
    }
}
