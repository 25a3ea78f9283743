//! Errors of the native target, with remediation hints where the kernel's
//! errno alone would leave the user guessing.

use std::path::PathBuf;

use nix::errno::Errno;

use crate::target::Pid;
use crate::target::TargetError;

/// Errors from launching, attaching and process lookup.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The program could not be started.
    #[error("cannot launch {}: {reason}", program.display())]
    Launch {
        /// Program path as given.
        program: PathBuf,
        /// Why.
        reason: String,
    },
    /// `PTRACE_ATTACH` was refused; `detail` names the likely cause and fix.
    #[error("cannot attach to process {pid}: {detail}")]
    AttachDenied {
        /// Target process.
        pid: Pid,
        /// Cause and fix.
        detail: String,
    },
    /// No such process (or not visible in our PID namespace).
    #[error("no process {pid} (it does not exist or is in another PID namespace)")]
    NoSuchProcess {
        /// Requested pid.
        pid: Pid,
    },
    /// A system call failed.
    #[error("{what}: {errno}")]
    Sys {
        /// What we were doing.
        what: String,
        /// The errno.
        errno: Errno,
    },
    /// The process went away during setup.
    #[error("process {pid} {how} during {during}")]
    Vanished {
        /// Process.
        pid: Pid,
        /// "exited with code N" / "was killed by signal N".
        how: String,
        /// Setup step.
        during: &'static str,
    },
    /// `--attach-name` matched nothing.
    #[error("no process named {0:?}")]
    NameNotFound(String),
    /// `--attach-name` matched several processes.
    #[error("{} processes are named {name:?} (pids {pids:?}); attach by pid instead", pids.len())]
    NameAmbiguous {
        /// Name looked up.
        name: String,
        /// Matching pids.
        pids: Vec<Pid>,
    },
}

impl NativeError {
    pub(crate) fn sys(what: impl Into<String>, errno: Errno) -> Self {
        NativeError::Sys {
            what: what.into(),
            errno,
        }
    }
}

impl From<NativeError> for TargetError {
    fn from(e: NativeError) -> Self {
        match e {
            NativeError::Sys { what, errno } => TargetError::Errno { what, errno },
            NativeError::NoSuchProcess { pid } => TargetError::Gone(u64::from(pid)),
            other => TargetError::Invalid(other.to_string()),
        }
    }
}

/// Convert an errno from an operation on thread `tid` into a
/// [`TargetError`]: `ESRCH` means the thread died (pete's `died_if_esrch`).
pub(crate) fn terr(what: &str, tid: i32, errno: Errno) -> TargetError {
    if errno == Errno::ESRCH {
        TargetError::Gone(tid as u64)
    } else {
        TargetError::Errno {
            what: format!("{what} (thread {tid})"),
            errno,
        }
    }
}

fn status_field(pid: Pid, key: &str) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
}

fn have_cap_sys_ptrace() -> bool {
    const CAP_SYS_PTRACE: u32 = 19;
    status_field(std::process::id(), "CapEff:")
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .map(|caps| caps & (1 << CAP_SYS_PTRACE) != 0)
        .unwrap_or(false)
}

/// Explain an `EPERM` from `PTRACE_ATTACH` on `pid`: already traced (and by
/// whom), Yama `ptrace_scope` (with its value), missing `CAP_SYS_PTRACE`,
/// a seccomp filter, or a PID namespace boundary.
pub(crate) fn explain_attach_eperm(pid: Pid) -> String {
    let mut causes = Vec::new();
    if let Some(tracer) = status_field(pid, "TracerPid:").and_then(|v| v.parse::<u32>().ok()) {
        if tracer != 0 {
            let comm = std::fs::read_to_string(format!("/proc/{tracer}/comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            causes.push(format!(
                "it is already traced by process {tracer} ({comm}); detach that debugger/tracer first"
            ));
        }
    }
    let cap = have_cap_sys_ptrace();
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        let v = v.trim().to_string();
        let meaning = match v.as_str() {
            "0" => "classic: same uid may attach",
            "1" => "restricted: only descendants may be attached unless CAP_SYS_PTRACE",
            "2" => "admin-only: CAP_SYS_PTRACE required",
            "3" => "no attach at all, even as root (needs a reboot to change)",
            _ => "unknown value",
        };
        if v != "0" {
            causes.push(format!(
                    "/proc/sys/kernel/yama/ptrace_scope is {v} ({meaning}); fix: `echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope` or run with CAP_SYS_PTRACE"
                ));
        }
    }
    if !cap {
        causes.push(
            "this process lacks CAP_SYS_PTRACE (needed for processes of other users or setuid programs); fix: run as the same user, as root, or `setcap cap_sys_ptrace+ep` / `docker run --cap-add=SYS_PTRACE`".into(),
        );
    }
    // Seccomp mode 2 (a filter, as docker's default profile installs) can
    // deny ptrace with EPERM whatever the capabilities say.
    if status_field(std::process::id(), "Seccomp:").as_deref() == Some("2") {
        causes.push(
            "a seccomp filter is active on this process (Seccomp: 2) and may deny ptrace; fix: `docker run --cap-add=SYS_PTRACE` (docker's default profile allows ptrace with it) or `--security-opt seccomp=unconfined`".into(),
        );
    }
    if let Some(nspid) = status_field(pid, "NSpid:") {
        if nspid.split_whitespace().count() > 1 {
            causes.push(format!(
                "the process lives in a nested PID namespace (NSpid: {nspid}); attach from inside that namespace"
            ));
        }
    }
    if causes.is_empty() {
        causes.push("operation not permitted (EPERM); the process may be a kernel thread, exiting, or protected by an LSM (SELinux/AppArmor)".into());
    }
    causes.join("; ")
}
