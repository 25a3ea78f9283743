//! Launching a program under ptrace: fork, `PTRACE_TRACEME`, exec, and the
//! stop at the exec `SIGTRAP`.

use std::ffi::CString;
use std::fs::File;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::path::PathBuf;

use nix::errno::Errno;

use super::errors::NativeError;
use super::process::LinuxProcess;
use super::process::BASE_OPTIONS;
use super::ptrace;
use super::ptrace::WaitStatus;
use super::thread::Thread;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;

/// How to start the inferior.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Program to run (a path, or a name looked up in `PATH`).
    pub program: PathBuf,
    /// Arguments after `argv[0]`.
    pub args: Vec<String>,
    /// Environment; `None` inherits ours.
    pub env: Option<Vec<(String, String)>>,
    /// Working directory; `None` inherits ours.
    pub cwd: Option<PathBuf>,
    /// `personality(ADDR_NO_RANDOMIZE)`.
    pub disable_aslr: bool,
    /// Run through `$SHELL -c 'exec [WRAPPER] PROGRAM ARGS'` (gdb's
    /// startup-with-shell). As in gdbserver 13, every argument is escaped
    /// for the shell ([`construct_inferior_arguments`]), so it arrives as
    /// given: no splitting, no `$VAR` expansion, empty arguments kept.
    pub startup_with_shell: bool,
    /// gdbserver's `--wrapper WRAPPER --`: a command (shell words) that
    /// starts the program; it must exec it (one more exec to skip).
    pub wrapper: Option<String>,
    /// The server talks the protocol on its stdin/stdout (`gdbmux - …`):
    /// as gdbserver does, the program gets `/dev/null` as stdin and the
    /// server's stderr as stdout, and "stdin/stdout redirected" is written
    /// to stderr, so its output never lands in the protocol stream.
    pub protocol_on_stdio: bool,
    /// File for stdin; `None` inherits ours.
    pub stdin: Option<PathBuf>,
    /// File for stdout; `None` inherits ours.
    pub stdout: Option<PathBuf>,
    /// File for stderr; `None` inherits ours.
    pub stderr: Option<PathBuf>,
    /// The server's output terminal ([`super::OutputTerminal`]): stdout
    /// and stderr without a file of their own go there instead of being
    /// inherited.
    pub output_fd: Option<std::os::fd::RawFd>,
}

impl LaunchOptions {
    /// Run `program` with `args`, everything else inherited.
    pub fn new(program: impl Into<PathBuf>, args: &[&str]) -> Self {
        LaunchOptions {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }
}

fn launch_err(program: &Path, reason: impl Into<String>) -> NativeError {
    NativeError::Launch {
        program: program.to_path_buf(),
        reason: reason.into(),
    }
}

fn cstr(program: &Path, s: &[u8]) -> Result<CString, NativeError> {
    CString::new(s).map_err(|_| launch_err(program, "argument contains a NUL byte"))
}

fn check_executable(program: &Path, p: &Path) -> Result<(), NativeError> {
    let md =
        std::fs::metadata(p).map_err(|e| launch_err(program, format!("{}: {e}", p.display())))?;
    if !md.is_file() {
        return Err(launch_err(
            program,
            format!("{} is not a regular file", p.display()),
        ));
    }
    if md.permissions().mode() & 0o111 == 0 {
        return Err(launch_err(
            program,
            format!(
                "{} is not executable (mode {:o})",
                p.display(),
                md.permissions().mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Resolve the program like `execvp` would, failing before any fork.
fn resolve(opts: &LaunchOptions) -> Result<PathBuf, NativeError> {
    let program = &opts.program;
    if program.as_os_str().is_empty() {
        return Err(launch_err(program, "empty program name"));
    }
    if program.as_os_str().as_bytes().contains(&b'/') {
        let p = match &opts.cwd {
            Some(cwd) if program.is_relative() => cwd.join(program),
            _ => program.clone(),
        };
        check_executable(program, &p)?;
        return Ok(program.clone());
    }
    let path = opts
        .env
        .as_ref()
        .and_then(|e| e.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()))
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let cand = Path::new(dir).join(program);
        if check_executable(program, &cand).is_ok() {
            return Ok(cand);
        }
    }
    Err(launch_err(program, "not found in PATH"))
}

/// Characters gdb escapes with a backslash for a Unix shell
/// (gdbsupport/common-inferior.cc, `construct_inferior_arguments`).
const SHELL_SPECIAL: &str = "\"!#$&*()\\|[]{}<>?'`~^; \t\n";

/// Escape one word the way gdb 13 does for the startup shell: a backslash
/// before each special character, a newline put inside quotes.
fn shell_escape(word: &str, out: &mut String) {
    for c in word.chars() {
        if c == '\n' {
            out.push_str("'\n'");
        } else {
            if SHELL_SPECIAL.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
}

/// gdb 13's `construct_inferior_arguments`: the argument string handed to
/// the program's start-up. With the shell, each argument is escaped so the
/// shell passes it through unchanged (`''` for an empty one). Without it
/// the words are joined by spaces and split again by whitespace at exec
/// (an argument that contains whitespace is refused, as in gdb).
pub fn construct_inferior_arguments(args: &[String], shell: bool) -> Result<String, String> {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if shell {
            if a.is_empty() {
                out.push_str("''");
            } else {
                shell_escape(a, &mut out);
            }
        } else if a.contains([' ', '\t', '\n']) {
            return Err("can't handle command-line argument containing whitespace".into());
        } else {
            out.push_str(a);
        }
    }
    Ok(out)
}

/// gdbserver 13's pre-quoting of each `vRun` argument (server.cc,
/// `handle_v_run`): a single quote gets a backslash and a newline is put
/// in quotes, before [`construct_inferior_arguments`] escapes the result
/// again. The double escaping is gdbserver 13's behaviour, kept so that a
/// program sees the same argv under both servers.
pub fn vrun_argument(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 2);
    let mut quoted = false;
    for c in arg.chars() {
        match c {
            '\n' => {
                out.push('\'');
                quoted = true;
            }
            '\'' => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    if quoted {
        out.push('\'');
    }
    out
}

/// gdbserver's `program_path.set`: a bare name (no `/`) that is a regular
/// file in the server's current directory means that file (made
/// absolute); any other bare name is looked up in `PATH` at start-up.
pub fn program_path(program: &str) -> String {
    if !program.contains('/') {
        if let Ok(md) = std::fs::metadata(program) {
            if md.is_file() {
                if let Ok(cwd) = std::env::current_dir() {
                    return cwd.join(program).display().to_string();
                }
            }
        }
    }
    program.to_string()
}

/// The shell gdb starts programs with: `$SHELL`, else `/bin/sh`.
fn startup_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into())
}

fn open_stdio(
    program: &Path,
    p: &Option<PathBuf>,
    write: bool,
) -> Result<Option<File>, NativeError> {
    let Some(p) = p else { return Ok(None) };
    let f = if write {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
    } else {
        OpenOptions::new().read(true).open(p)
    };
    f.map(Some)
        .map_err(|e| launch_err(program, format!("open {}: {e}", p.display())))
}

impl LinuxProcess {
    /// Start a program stopped at its first instruction after exec (the
    /// dynamic loader's entry), reported as `SIGTRAP` /
    /// [`StopKind::Initial`].
    pub fn launch(opts: &LaunchOptions) -> Result<(LinuxProcess, StopEvent), NativeError> {
        let program = &opts.program;
        let args = construct_inferior_arguments(&opts.args, opts.startup_with_shell)
            .map_err(|e| launch_err(program, e))?;
        // Everything the child needs is allocated before fork: after it,
        // only async-signal-safe calls are allowed.
        let (resolved, path, argv): (PathBuf, CString, Vec<CString>) = if opts.startup_with_shell {
            // As gdb: the shell finds the program (PATH) and reports a
            // missing one itself ("exec: PROG: not found", exit 127).
            let mut cmd = String::from("exec ");
            if let Some(w) = &opts.wrapper {
                cmd.push_str(w);
                cmd.push(' ');
            }
            shell_escape(&program.to_string_lossy(), &mut cmd);
            cmd.push(' ');
            cmd.push_str(&args);
            let shell = startup_shell();
            (
                program.clone(),
                cstr(program, shell.as_bytes())?,
                vec![
                    cstr(program, shell.as_bytes())?,
                    cstr(program, b"-c")?,
                    cstr(program, cmd.as_bytes())?,
                ],
            )
        } else {
            let resolved = resolve(opts)?;
            let mut argv = Vec::new();
            let mut words = opts
                .wrapper
                .iter()
                .flat_map(|w| w.split_whitespace())
                .map(str::to_string)
                .collect::<Vec<_>>();
            let exe = match words.first() {
                Some(w) => resolve(&LaunchOptions {
                    program: PathBuf::from(w),
                    ..opts.clone()
                })?,
                None => resolved.clone(),
            };
            words.push(program.to_string_lossy().into_owned());
            words.extend(
                args.split([' ', '\t', '\n'])
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
            for w in &words {
                argv.push(cstr(program, w.as_bytes())?);
            }
            (resolved, cstr(program, exe.as_os_str().as_bytes())?, argv)
        };
        let envp: Option<Vec<CString>> = match &opts.env {
            Some(env) => Some(
                env.iter()
                    .map(|(k, v)| cstr(program, format!("{k}={v}").as_bytes()))
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let envp_ptrs: Option<Vec<*const libc::c_char>> = envp.as_ref().map(|v| {
            let mut p: Vec<*const libc::c_char> = v.iter().map(|c| c.as_ptr()).collect();
            p.push(std::ptr::null());
            p
        });
        let cwd = match &opts.cwd {
            Some(c) => Some(cstr(program, c.as_os_str().as_bytes())?),
            None => None,
        };
        let stdin = match (&opts.stdin, opts.protocol_on_stdio) {
            (None, true) => Some(PathBuf::from("/dev/null")),
            (s, _) => s.clone(),
        };
        let stdout_to_stderr = opts.protocol_on_stdio && opts.stdout.is_none();
        let stdio = [
            open_stdio(program, &stdin, false)?,
            open_stdio(program, &opts.stdout, true)?,
            open_stdio(program, &opts.stderr, true)?,
        ];
        let mut stdio_fds: [i32; 3] =
            [0, 1, 2].map(|i| stdio[i].as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1));
        if let (Some(t), false) = (opts.output_fd, opts.protocol_on_stdio) {
            for fd in &mut stdio_fds[1..] {
                if *fd < 0 {
                    *fd = t;
                }
            }
        }
        let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| NativeError::sys("pipe2", e))?;
        let disable_aslr = opts.disable_aslr;

        // SAFETY: the child only calls async-signal-safe functions (raw
        // syscalls via libc) on memory prepared above, then execs or exits.
        let fork = unsafe { nix::unistd::fork() }.map_err(|e| NativeError::sys("fork", e))?;
        let child = match fork {
            nix::unistd::ForkResult::Child => {
                // SAFETY: async-signal-safe libc calls only; pointers refer
                // to CStrings and arrays that outlive this block.
                unsafe {
                    let wfd = wr.as_raw_fd();
                    let fail = |errno: i32| -> ! {
                        let b = errno.to_ne_bytes();
                        libc::write(wfd, b.as_ptr() as *const libc::c_void, 4);
                        libc::_exit(127)
                    };
                    let mut empty: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut empty);
                    libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
                    // Rust ignores SIGPIPE; ignored dispositions survive exec.
                    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                    for (target, fd) in stdio_fds.iter().enumerate() {
                        if *fd >= 0 && libc::dup2(*fd, target as i32) < 0 {
                            fail(*libc::__errno_location());
                        }
                    }
                    if stdout_to_stderr {
                        if libc::dup2(2, 1) < 0 {
                            fail(*libc::__errno_location());
                        }
                        let msg = b"stdin/stdout redirected\n";
                        libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
                    }
                    if let Some(c) = &cwd {
                        if libc::chdir(c.as_ptr()) < 0 {
                            fail(*libc::__errno_location());
                        }
                    }
                    if disable_aslr {
                        let cur = libc::personality(0xffff_ffff);
                        if cur != -1 {
                            libc::personality(
                                (cur as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                            );
                        }
                    }
                    if ptrace::traceme().is_err() {
                        fail(*libc::__errno_location());
                    }
                    match &envp_ptrs {
                        Some(e) => libc::execve(path.as_ptr(), argv_ptrs.as_ptr(), e.as_ptr()),
                        None => libc::execv(path.as_ptr(), argv_ptrs.as_ptr()),
                    };
                    fail(*libc::__errno_location())
                }
            }
            nix::unistd::ForkResult::Parent { child } => child.as_raw(),
        };
        drop(wr);
        drop(stdio);
        // EOF = exec succeeded (the CLOEXEC pipe closed before the exec stop).
        let mut buf = [0u8; 4];
        let n = nix::unistd::read(rd.as_raw_fd(), &mut buf).unwrap_or(0);
        drop(rd);
        if n == 4 {
            let _ = ptrace::wait(child, false);
            let errno = Errno::from_raw(i32::from_ne_bytes(buf));
            return Err(launch_err(
                program,
                format!("exec failed: {errno} ({})", errno.desc()),
            ));
        }
        // The shell execs once itself, a wrapper once more, then the
        // program (gdb's startup_inferior counts the same traps).
        let execs = 1 + usize::from(opts.startup_with_shell) + usize::from(opts.wrapper.is_some());
        let mut seen = 0;
        while seen < execs {
            match ptrace::wait(child, false) {
                Ok(Some(WaitStatus::Stopped(libc::SIGTRAP))) => {
                    seen += 1;
                    if seen < execs {
                        let _ = ptrace::cont(child, 0);
                    }
                }
                Ok(Some(WaitStatus::Stopped(sig))) => {
                    let _ = ptrace::cont(child, sig);
                }
                Ok(Some(WaitStatus::Exited(code))) => {
                    return Err(NativeError::Vanished {
                        pid: child as Pid,
                        how: format!("exited with code {code}"),
                        during: "launch",
                    })
                }
                Ok(Some(WaitStatus::Signaled(sig))) => {
                    return Err(NativeError::Vanished {
                        pid: child as Pid,
                        how: format!("was killed by signal {sig}"),
                        during: "launch",
                    })
                }
                Ok(Some(_)) | Ok(None) => {
                    let _ = ptrace::cont(child, 0);
                }
                Err(e) => return Err(NativeError::sys("waitpid after exec", e)),
            }
        }
        if let Err(e) = ptrace::set_options(child, BASE_OPTIONS | libc::PTRACE_O_EXITKILL) {
            let _ = ptrace::kill(child, libc::SIGKILL);
            let _ = ptrace::wait(child, false);
            return Err(NativeError::sys("PTRACE_SETOPTIONS", e));
        }
        tracing::debug!(target: "native", "launched {} as {child}", resolved.display());
        let proc_ = LinuxProcess::from_stopped(child, vec![Thread::stopped(child)], false);
        let ev = StopEvent::Stopped {
            pid: child as Pid,
            tid: child as u64,
            signal: libc::SIGTRAP,
            kind: StopKind::Initial,
        };
        Ok((proc_, ev))
    }
}
