//! Run a child process with a hard timeout and capture its output; wait for
//! any process to exit.
//!
//! No sleeping: a waiter thread blocks in `wait()` and reports over a
//! channel; the caller waits on the channel with `recv_timeout` and kills the
//! child if the deadline passes. Processes that are not our children (a
//! stub's inferior) are waited for through a pidfd ([`wait_gone`]).

use std::io::Read;
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;

use nix::sys::signal::kill;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use rustix::event::PollFd;
use rustix::event::PollFlags;
use rustix::event::Timespec;
use rustix::io::Errno;
use rustix::process::PidfdFlags;

/// Output of a finished (or killed) command.
#[derive(Debug, Clone)]
pub struct CommandOutput {
    /// The command line, for messages.
    pub command: String,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
    /// Exit code, `None` if killed by a signal.
    pub code: Option<i32>,
    /// True if the hard timeout killed it.
    pub timed_out: bool,
    /// Wall time.
    pub elapsed: Duration,
}

impl CommandOutput {
    /// stdout followed by stderr.
    pub fn combined(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Panic with the whole output unless `needle` occurs in stdout or stderr.
    #[track_caller]
    pub fn assert_contains(&self, needle: &str) {
        assert!(
            self.combined().contains(needle),
            "expected {needle:?} in the output of `{}`{}\n{}",
            self.command,
            if self.timed_out { " (TIMED OUT)" } else { "" },
            self.dump()
        );
    }

    /// Panic with the whole output if `needle` occurs.
    #[track_caller]
    pub fn assert_not_contains(&self, needle: &str) {
        assert!(
            !self.combined().contains(needle),
            "unexpected {needle:?} in the output of `{}`\n{}",
            self.command,
            self.dump()
        );
    }

    /// Human-readable dump for failure messages.
    pub fn dump(&self) -> String {
        format!(
            "--- exit {:?} after {:?}{} ---\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            self.elapsed,
            if self.timed_out { " TIMED OUT" } else { "" },
            self.stdout,
            self.stderr
        )
    }
}

/// Spawn a thread that reads a pipe to its end.
pub fn drain<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// Send SIGKILL to `pid`, ignoring "no such process".
pub fn kill_pid(pid: u32) {
    if let Ok(p) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
}

/// Block until `fd` polls readable (or hung up): `Ok(true)`, or until
/// `deadline` passes: `Ok(false)`. `None` waits without a deadline.
pub(crate) fn poll_readable(fd: impl AsFd, deadline: Option<Instant>) -> std::io::Result<bool> {
    loop {
        let left = match deadline {
            None => None,
            Some(d) => Some(
                Timespec::try_from(d.saturating_duration_since(Instant::now()))
                    .map_err(std::io::Error::other)?,
            ),
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, left.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A pidfd for `pid` (any process, not only a child; the pidfd keeps
/// referring to that process even if the pid is reused later), or `None` if
/// there is no such process (any more).
pub fn pidfd(pid: u32) -> std::io::Result<Option<OwnedFd>> {
    let p = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("pid {pid}"))
        })?;
    match rustix::process::pidfd_open(p, PidfdFlags::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::SRCH) => Ok(None),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Block until the process behind `pidfd` has exited (a zombie counts: a
/// pidfd polls readable once its process exits), or `deadline` passes.
/// Returns whether it exited.
pub fn wait_pidfd(pidfd: &OwnedFd, deadline: Option<Instant>) -> std::io::Result<bool> {
    poll_readable(pidfd, deadline)
}

/// Wait up to `timeout` until process `pid` (not necessarily our child) is
/// gone or a zombie. Returns whether it is; an error only if the pidfd
/// cannot be opened or polled (never a silent "gone").
pub fn wait_gone(pid: u32, timeout: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + timeout;
    match pidfd(pid)? {
        None => Ok(true),
        Some(fd) => wait_pidfd(&fd, Some(deadline)),
    }
}

/// Pids of all descendants of `pid` (from `/proc/*/stat`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // comm may contain spaces: fields after the last ')'.
            let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
                continue;
            };
            if let Some(ppid) = after.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
                parent_of.push((p, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(cur) = frontier.pop() {
        for &(p, pp) in &parent_of {
            if pp == cur && !out.contains(&p) {
                out.push(p);
                frontier.push(p);
            }
        }
    }
    out
}

/// Kill `child` and all its descendants, then reap it.
pub fn kill_tree(child: &mut Child) {
    let pid = child.id();
    // Descendants first (deepest first), while their tracer still holds
    // them: a tracee whose tracer dies first is detached and runs on, and
    // a debug server may fork again in between, so scan twice.
    for _ in 0..2 {
        let kids = descendants(pid);
        for k in kids.iter().rev() {
            kill_pid(*k);
        }
    }
    kill_pid(pid);
    for k in descendants(pid) {
        kill_pid(k);
    }
    let _ = child.wait();
}

/// Run `cmd` to completion with a hard `timeout`; stdin is closed.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> std::io::Result<CommandOutput> {
    let command = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    let timed_out = rx.recv_timeout(timeout).is_err();
    if timed_out {
        for k in descendants(pid) {
            kill_pid(k);
        }
        kill_pid(pid);
    }
    let status = waiter
        .join()
        .map_err(|_| std::io::Error::other("waiter thread panicked"))??;
    let text = |h: Option<JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(CommandOutput {
        command,
        stdout: text(out),
        stderr: text(err),
        code: status.code(),
        timed_out,
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_gone_sees_exit_and_zombies() {
        let mut child = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = child.id();
        // Still running: the wait times out.
        assert!(!wait_gone(pid, Duration::from_millis(20)).unwrap());
        kill_pid(pid);
        // Unreaped, it is a zombie: gone as far as wait_gone cares.
        assert!(wait_gone(pid, Duration::from_secs(10)).unwrap());
        child.wait().unwrap();
    }
}
