//! Extended-remote process creation: `vRun`, `vAttach` and the settings
//! packets that shape a launch (`QEnvironment*`, `QSetWorkingDir`,
//! `QDisableRandomization`, `QStartupWithShell`).

use std::path::PathBuf;

use crate::native::LaunchOptions;
use crate::native::LinuxProcess;
use crate::packet::reply;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::Pid;
use crate::target::Target;

/// Launch settings: from the command line, then adjusted by the client.
#[derive(Debug, Clone, Default)]
pub struct LaunchDefaults {
    /// Program given on the command line (used by `vRun;` with an empty
    /// program).
    pub program: Option<PathBuf>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment for new processes; `None` = inherit ours.
    pub env: Option<Vec<(String, String)>>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Disable ASLR.
    pub disable_aslr: bool,
    /// Start through `$SHELL -c exec …`.
    pub startup_with_shell: bool,
    /// gdbserver's `--wrapper` command.
    pub wrapper: Option<String>,
    /// The protocol runs on the server's stdin/stdout (see
    /// [`LaunchOptions::protocol_on_stdio`]).
    pub protocol_on_stdio: bool,
    /// gdbserver's `--disable-packet=…` (server-wide; each connection
    /// starts with it).
    pub disabled: DisabledPackets,
    /// The server's output terminal, for launched programs' stdout and
    /// stderr ([`crate::native::OutputTerminal`]); `None` inherits ours.
    pub output_fd: Option<std::os::fd::RawFd>,
    /// `--no-lldb-interrupt-echo`: the stop reply to an lldb client's
    /// interrupt goes out once, as lldb-server sends it. Off (the default):
    /// it goes out twice, as debugserver sends it
    /// ([`crate::session::Session`]'s `interrupt_echo_due` and
    /// `stop_echo_owed`).
    pub no_lldb_interrupt_echo: bool,
}

/// Packets turned off with gdbserver's `--disable-packet=` (server.cc:
/// the gdb testsuite uses it to test clients against older servers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DisabledPackets {
    /// `vCont`, `vCont?`: answered empty.
    pub vcont: bool,
    /// `T` stop replies: `S` is sent instead.
    pub t: bool,
    /// The `thread:` field of `T` stop replies.
    pub tthread: bool,
    /// `qC`: answered empty.
    pub qc: bool,
    /// `qfThreadInfo`/`qsThreadInfo`: answered empty.
    pub qfthreadinfo: bool,
}

impl DisabledPackets {
    /// Turn off one of gdbserver's names (`threads` = all thread packets).
    /// Returns false for a name gdbserver does not know.
    pub fn disable(&mut self, name: &str) -> bool {
        match name {
            "vCont" => self.vcont = true,
            "T" => self.t = true,
            "Tthread" => self.tthread = true,
            "qC" => self.qc = true,
            "qfThreadInfo" => self.qfthreadinfo = true,
            "threads" => {
                self.vcont = true;
                self.tthread = true;
                self.qc = true;
                self.qfthreadinfo = true;
            }
            _ => return false,
        }
        true
    }
}

impl LaunchDefaults {
    fn env_mut(&mut self) -> &mut Vec<(String, String)> {
        self.env.get_or_insert_with(|| std::env::vars().collect())
    }

    /// `QEnvironmentHexEncoded:` / `QEnvironment:` (`NAME=VALUE`). Refused,
    /// with the environment unchanged, past the bounds of
    /// [`crate::bounds::EnvLimits`].
    pub fn set_env(&mut self, kv: &[u8]) -> Result<(), String> {
        let kv = String::from_utf8_lossy(kv);
        let (k, v) = kv.split_once('=').unwrap_or((&kv, ""));
        let (k, v) = (k.to_string(), v.to_string());
        let env = self.env_mut();
        let entry = |(a, b): &(String, String)| a.len() + b.len() + 1;
        let old = env.iter().find(|(name, _)| *name == k).map(entry);
        let vars = env.len() + usize::from(old.is_none());
        let bytes = env.iter().map(entry).sum::<usize>() - old.unwrap_or(0) + k.len() + v.len() + 1;
        crate::bounds::EnvLimits::check_totals(vars, bytes)?;
        env.retain(|(name, _)| *name != k);
        env.push((k, v));
        Ok(())
    }

    /// `QEnvironmentUnset:`
    pub fn unset_env(&mut self, k: &[u8]) {
        let k = String::from_utf8_lossy(k).into_owned();
        self.env_mut().retain(|(name, _)| *name != k);
    }

    /// `QEnvironmentReset`: back to the server's own environment.
    pub fn reset_env(&mut self) {
        self.env = None;
    }

    /// Options for launching `program` with `args`.
    pub fn options(&self, program: PathBuf, args: Vec<String>) -> LaunchOptions {
        LaunchOptions {
            program,
            args,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            disable_aslr: self.disable_aslr,
            startup_with_shell: self.startup_with_shell,
            wrapper: self.wrapper.clone(),
            protocol_on_stdio: self.protocol_on_stdio,
            output_fd: self.output_fd,
            ..LaunchOptions::default()
        }
    }
}

impl<R: SessionRole> Session<R> {
    pub(super) fn handle_vrun(&mut self, args: Vec<Vec<u8>>) {
        let mut it = args.into_iter();
        let prog = it.next().unwrap_or_default();
        let program = if prog.is_empty() {
            match &self.launch.program {
                Some(p) => p.clone(),
                None => {
                    self.send_error(
                        crate::error::ErrorCode::NoSuchFile,
                        "vRun without a program and none given on the command line",
                    );
                    return;
                }
            }
        } else {
            let p = crate::native::program_path(&String::from_utf8_lossy(&prog));
            self.launch.program = Some(PathBuf::from(&p));
            PathBuf::from(p)
        };
        let shell = self.launch.startup_with_shell;
        let mut args: Vec<String> = it
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .map(|a| {
                if shell {
                    crate::native::vrun_argument(&a)
                } else {
                    a
                }
            })
            .collect();
        if prog.is_empty() && args.is_empty() {
            args = self.launch.args.clone();
        }
        // The launch is tried first: a vRun that fails (no such program)
        // is answered with an error and leaves the debugged processes as
        // they were (gdbserver keeps them too). Only a process that did
        // start replaces them, and only outside extended-remote with
        // multiprocess+: there gdbserver runs the new process beside the
        // others (server.cc refuses a vRun while one runs only when
        // either is off), and gdb's `add-inferior` + `run` wants both
        // (gdb testsuite kill-detach-inferiors-cmd).
        // Kept for `R` (restart), as gdbserver keeps program_args.
        self.launch.args = args.clone();
        let opts = self.launch.options(program.clone(), args);
        match LinuxProcess::launch(&opts) {
            Ok((proc_, stop)) => {
                tracing::info!(target: "ptrace", session = self.id, pid = proc_.pid(), program = %program.display(), "launched");
                if !(self.features.extended && self.features.multiprocess) {
                    self.kill_all();
                }
                self.install(Box::new(proc_), stop);
            }
            Err(e) => {
                tracing::warn!(target: "ptrace", session = self.id, "launch failed: {e}");
                self.send_error(crate::error::ErrorCode::NoSuchFile, &e.to_string());
            }
        }
    }

    /// `R`: kill the processes and start the last program again with its
    /// arguments (gdbserver, server.cc); gdb sends no reply for it and
    /// asks `?` next, which answers the new process's initial stop.
    pub(super) fn handle_restart(&mut self) {
        let Some(program) = self.launch.program.clone() else {
            tracing::warn!(target: "session", session = self.id, "R without a program to restart");
            return;
        };
        self.kill_all();
        let opts = self
            .launch
            .options(program.clone(), self.launch.args.clone());
        match LinuxProcess::launch(&opts) {
            Ok((proc_, stop)) => {
                tracing::info!(target: "ptrace", session = self.id, pid = proc_.pid(), program = %program.display(), "restarted");
                self.adopt_launched(Box::new(proc_), stop);
            }
            Err(e) => tracing::warn!(target: "ptrace", session = self.id, "restart failed: {e}"),
        }
    }

    pub(super) fn handle_vattach(&mut self, pid: u64) {
        let Ok(pid) = Pid::try_from(pid) else {
            self.send_error(crate::error::ErrorCode::Invalid, "bad pid");
            return;
        };
        match LinuxProcess::attach(pid) {
            Ok((proc_, stop)) => {
                tracing::info!(target: "ptrace", session = self.id, pid, "attached");
                self.install(Box::new(proc_), stop);
            }
            Err(e) => {
                tracing::warn!(target: "ptrace", session = self.id, pid, "attach failed: {e}");
                self.send_error(crate::error::ErrorCode::NotPermitted, &e.to_string());
            }
        }
    }

    /// Adopt a fresh process and answer with its initial stop (a journal
    /// replay, like `?`).
    fn install(&mut self, t: Box<dyn Target>, stop: crate::stop::StopEvent) {
        self.adopt_launched(t, stop);
        let opts = self.features.stop_options();
        match self.journal.reply(&opts) {
            Some(r) => self.send(&r),
            None => self.send(&reply::error(
                crate::error::ErrorCode::Io,
                "no initial stop",
                self.features.error_strings,
            )),
        }
    }

    /// Adopt a fresh process with the session's settings (no reply).
    pub(in crate::session) fn adopt_launched(
        &mut self,
        mut t: Box<dyn Target>,
        stop: crate::stop::StopEvent,
    ) {
        let forks = self.features.fork_events || self.features.vfork_events;
        t.set_report_forks(forks);
        t.set_report_exec(self.features.report_exec());
        if !self.pass_signals.is_empty() {
            t.set_pass_signals(&self.pass_signals);
        }
        self.adopt(t, stop);
    }

    fn kill_all(&mut self) {
        self.client_bps.clear();
        for (pid, mut t) in std::mem::take(&mut self.procs) {
            if let Err(e) = t.kill() {
                tracing::warn!(target: "ptrace", pid, "kill before vRun: {e}");
            }
        }
        self.current = None;
        self.journal.clear();
    }
}
