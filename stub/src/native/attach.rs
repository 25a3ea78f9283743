//! Attaching to a running process: `PTRACE_ATTACH` every thread in
//! `/proc/PID/task` until no new one appears.

use nix::errno::Errno;

use super::errors::explain_attach_eperm;
use super::errors::NativeError;
use super::process::LinuxProcess;
use super::process::BASE_OPTIONS;
use super::procfs;
use super::ptrace;
use super::ptrace::RawTid;
use super::ptrace::WaitStatus;
use super::thread::Thread;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;

/// Wait for the attach SIGSTOP of `tid`: `Ok(Some(None))`. A signal that
/// arrives first is returned as `Ok(Some(Some(sig)))`, the thread staying
/// in its stop with our SIGSTOP still queued. `Ok(None)` when the thread
/// died meanwhile.
fn wait_attach_stop(tid: RawTid) -> Result<Option<Option<i32>>, Errno> {
    loop {
        match ptrace::wait(tid, false)? {
            Some(WaitStatus::Stopped(libc::SIGSTOP)) => return Ok(Some(None)),
            // Attaching while the process is still finishing an execve
            // (e.g. right after it was spawned): the kernel's legacy
            // post-exec SIGTRAP arrives; delivering it later would kill
            // the untraced-by-design process, so drop it.
            Some(WaitStatus::Stopped(libc::SIGTRAP)) => ptrace::cont(tid, 0)?,
            // Another signal arrived first (a signal storm): the thread
            // stays in that signal's stop, as gdbserver leaves it
            // (linux-low's attach keeps the status pending): its siginfo
            // is that signal's (gdb's `$_siginfo`), and our SIGSTOP,
            // still queued, is swallowed when it runs again
            // (`sigstop_expected`) or discarded at detach. The main
            // thread's signal is the attach stop's (see `attach`).
            Some(WaitStatus::Stopped(sig)) => return Ok(Some(Some(sig))),
            Some(WaitStatus::Exited(_)) | Some(WaitStatus::Signaled(_)) => return Ok(None),
            Some(_) | None => ptrace::cont(tid, 0)?,
        }
    }
}

impl LinuxProcess {
    /// Attach to `pid` and every thread of it. All threads are stopped;
    /// the initial event has signal 0 and [`StopKind::Initial`].
    pub fn attach(pid: Pid) -> Result<(LinuxProcess, StopEvent), NativeError> {
        if pid == std::process::id() {
            return Err(NativeError::AttachDenied {
                pid,
                detail: "that is the debugger itself".into(),
            });
        }
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(NativeError::NoSuchProcess { pid });
        }
        let mut threads: Vec<Thread> = Vec::new();
        let mut main_signal = None;
        let cleanup = |threads: &[Thread]| {
            for t in threads {
                let _ = ptrace::detach(t.tid, t.deliver.unwrap_or(0));
            }
        };
        loop {
            let tids = match procfs::task_ids(pid) {
                Ok(t) => t,
                Err(_) => {
                    cleanup(&threads);
                    return Err(NativeError::NoSuchProcess { pid });
                }
            };
            let mut added = false;
            for tid in tids {
                if threads.iter().any(|t| t.tid == tid) {
                    continue;
                }
                match ptrace::attach(tid) {
                    Ok(()) => {}
                    Err(Errno::ESRCH) if tid != pid as RawTid => continue,
                    Err(Errno::ESRCH) => {
                        cleanup(&threads);
                        return Err(NativeError::NoSuchProcess { pid });
                    }
                    Err(Errno::EPERM) => {
                        cleanup(&threads);
                        return Err(NativeError::AttachDenied {
                            pid,
                            detail: explain_attach_eperm(pid),
                        });
                    }
                    Err(e) => {
                        cleanup(&threads);
                        return Err(NativeError::sys(format!("PTRACE_ATTACH {tid}"), e));
                    }
                }
                added = true;
                let main = tid == pid as RawTid;
                match wait_attach_stop(tid) {
                    Ok(Some(deliver)) => {
                        if let Err(e) = ptrace::set_options(tid, BASE_OPTIONS) {
                            tracing::warn!(target: "native", "PTRACE_SETOPTIONS {tid}: {e}");
                        }
                        let mut t = Thread::stopped(tid);
                        t.sigstop_expected = deliver.is_some();
                        if main && deliver.is_some() {
                            // gdbserver reports it as the attach stop
                            // ("Program received signal SIGALRM", gdb
                            // testsuite attach-into-signal); the client
                            // passes it on or not when it resumes.
                            main_signal = deliver;
                            t.attach_signal = deliver;
                        } else {
                            t.deliver = deliver;
                        }
                        threads.push(t);
                    }
                    Ok(None) if tid != pid as RawTid => {}
                    Ok(None) => {
                        cleanup(&threads);
                        return Err(NativeError::Vanished {
                            pid,
                            how: "exited".into(),
                            during: "attach",
                        });
                    }
                    Err(e) => {
                        cleanup(&threads);
                        return Err(NativeError::sys(format!("waitpid {tid} after attach"), e));
                    }
                }
            }
            if !added {
                break;
            }
        }
        threads.sort_by_key(|t| (t.tid != pid as RawTid, t.tid));
        tracing::debug!(target: "native", "attached to {pid} ({} threads)", threads.len());
        let p = LinuxProcess::from_stopped(pid as RawTid, threads, true);
        let ev = StopEvent::Stopped {
            pid,
            tid: u64::from(pid),
            signal: main_signal.unwrap_or(0),
            kind: StopKind::Initial,
        };
        Ok((p, ev))
    }
}
