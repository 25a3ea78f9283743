//! `gdbmux doctor [--dbgapi PATH]`: the self-check to run on a ROCm machine
//! before debugging a GPU program.
//!
//! It finds the amd-dbgapi library (`--dbgapi`, `$GDBMUX_DBGAPI`, then the
//! usual ROCm places), prints its version and build name, checks that every
//! function gdbmux binds resolves at its ELF symbol version, initializes it
//! and lists the agents a process sees (architecture, or the library's
//! reason it cannot debug one), and checks what debugging needs from the
//! system: ptrace (Yama `ptrace_scope`, `CAP_SYS_PTRACE`, seccomp, and a
//! real `PTRACE_SEIZE` of a child) and `/dev/kfd`. Each finding is `ok`,
//! `warn` or `FAIL` with the fix; the exit status is 1 when debugging would
//! fail, 0 otherwise, 2 on a usage error.

use gpu_target::dbgapi::abi::SYMBOL_PREFIX as P;
use std::fmt::Write as _;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;

use gpu_target::dbgapi::sys;
use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::DbgApiBackend;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::HostProcess;

/// How a check came out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Level {
    /// Fine.
    Ok,
    /// Works, with a caveat.
    Warn,
    /// Debugging would fail.
    Fail,
}

/// One finding.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Outcome.
    pub level: Level,
    /// What was checked and what was found.
    pub text: String,
    /// What to do (for warn/fail).
    pub fix: Option<String>,
}

/// The whole report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Findings in order.
    pub findings: Vec<Finding>,
}

impl Report {
    fn push(&mut self, level: Level, text: impl Into<String>, fix: Option<String>) {
        self.findings.push(Finding {
            level,
            text: text.into(),
            fix,
        });
    }
    fn ok(&mut self, text: impl Into<String>) {
        self.push(Level::Ok, text, None);
    }
    fn warn(&mut self, text: impl Into<String>, fix: impl Into<String>) {
        self.push(Level::Warn, text, Some(fix.into()));
    }
    fn fail(&mut self, text: impl Into<String>, fix: impl Into<String>) {
        self.push(Level::Fail, text, Some(fix.into()));
    }

    /// Whether any check failed.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Fail)
    }

    /// The text printed to the user.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.findings {
            let tag = match f.level {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            let _ = writeln!(s, "[{tag}] {}", f.text);
            if let Some(fix) = &f.fix {
                let _ = writeln!(s, "       fix: {fix}");
            }
        }
        let _ = writeln!(
            s,
            "{}",
            if self.failed() {
                "gdbmux doctor: GPU debugging would fail (see FAIL above)"
            } else {
                "gdbmux doctor: ready to debug AMD GPU programs"
            }
        );
        s
    }
}

/// Where ROCm installs the library, in the order tried after `--dbgapi` and
/// `$GDBMUX_DBGAPI`; the bare soname last (the dynamic loader's search).
pub fn candidates() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(root) = std::env::var_os("ROCM_PATH") {
        v.push(PathBuf::from(root).join("lib/librocm-dbgapi.so.0"));
    }
    v.push(PathBuf::from("/opt/rocm/lib/librocm-dbgapi.so.0"));
    v.push(PathBuf::from("/opt/rocm/lib64/librocm-dbgapi.so.0"));
    // Versioned installs side by side: /opt/rocm-6.3.0/lib/...
    if let Ok(dir) = std::fs::read_dir("/opt") {
        let mut versioned: Vec<PathBuf> = dir
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rocm-"))
            })
            .map(|p| p.join("lib/librocm-dbgapi.so.0"))
            .collect();
        versioned.sort();
        versioned.reverse();
        v.extend(versioned);
    }
    v.push(PathBuf::from(
        "/usr/lib/x86_64-linux-gnu/librocm-dbgapi.so.0",
    ));
    v.push(PathBuf::from("/usr/lib64/librocm-dbgapi.so.0"));
    v
}

/// The library to check and how it was chosen.
fn locate(explicit: Option<PathBuf>) -> (PathBuf, String) {
    if let Some(p) = explicit {
        return (p, "--dbgapi".into());
    }
    if let Some(p) = std::env::var_os("GDBMUX_DBGAPI") {
        return (PathBuf::from(p), "$GDBMUX_DBGAPI".into());
    }
    match candidates().into_iter().find(|p| p.exists()) {
        Some(p) => (p, "found in the usual ROCm places".into()),
        None => (
            PathBuf::from(sys::DEFAULT_SONAME),
            "not in the usual ROCm places; trying the dynamic loader's search path".into(),
        ),
    }
}

/// A child process for the library to attach to (and for the ptrace
/// check); killed on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> std::io::Result<Self> {
        Command::new("sleep").arg("30").spawn().map(Sleeper)
    }
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The library may ask for host breakpoints (a GPU runtime in the process);
/// `sleep` has none, so none are planted.
struct NoBreakpoints(i32);

impl HostProcess for NoBreakpoints {
    fn os_pid(&self) -> i32 {
        self.0
    }
    fn insert_breakpoint(&mut self, _addr: u64, _id: BreakpointId) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("doctor plants no breakpoints"))
    }
    fn remove_breakpoint(&mut self, _id: BreakpointId) -> Result<(), GpuError> {
        Ok(())
    }
}

fn library_checks(r: &mut Report, path: &Path, how: &str) -> bool {
    let report = match sys::inspect(path) {
        Ok(rep) => rep,
        Err(e) => {
            let text = e.to_string();
            let fix = if text.contains("comgr") {
                "install its dependency amd_comgr: ROCm's `comgr` package, or Debian/Ubuntu `apt-get install libamd-comgr2`".to_string()
            } else {
                "install ROCm's rocm-dbgapi (it ships /opt/rocm/lib/librocm-dbgapi.so.0) or pass `--dbgapi PATH` / set GDBMUX_DBGAPI".to_string()
            };
            r.fail(format!("library {} ({how}): {text}", path.display()), fix);
            return false;
        }
    };
    let (a, b, c) = report.version;
    r.ok(format!(
        "library {} ({how}): amd-dbgapi {a}.{b}.{c}, build {}",
        report.path, report.build_name
    ));
    if !report.version_supported() {
        r.fail(
            format!("amd-dbgapi {a}.{b}.{c} is not supported (gdbmux needs 0.76 or newer, 0.x)"),
            "install ROCm 6.2 or newer (amd-dbgapi 0.76+) or pass `--dbgapi` a newer library",
        );
        return false;
    }
    let total = report.symbols.len();
    let mut lines = String::new();
    for s in &report.symbols {
        match s.resolved {
            Some(node) if Some(&node) == s.tried.first() => {
                let _ = write!(lines, " {}@{node}", s.function);
            }
            Some(node) => {
                let _ = write!(lines, " {}@{node} (older node)", s.function);
            }
            None => {}
        }
    }
    let missing: Vec<String> = report
        .missing()
        .map(|s| format!("{P}{}@AMD_DBGAPI_{}", s.function, s.tried.join("|")))
        .collect();
    if missing.is_empty() {
        r.ok(format!(
            "all {total} bound functions resolve at their versions:{lines}"
        ));
        true
    } else {
        r.fail(
            format!("{} of {total} bound functions are missing: {}", missing.len(), missing.join(", ")),
            "the library is not a compatible amd-dbgapi build; install ROCm's rocm-dbgapi 0.76 or newer",
        );
        false
    }
}

/// Loads the library, attaches to a child and lists the agents; returns
/// whether the library is the simulated one.
fn agent_checks(r: &mut Report, path: &Path) -> bool {
    let api = match DbgApi::load(Some(path)) {
        Ok(a) => a,
        Err(e) => {
            r.fail(
                format!("{P}initialize: {e}"),
                "see the library's message above",
            );
            return false;
        }
    };
    let simulated = api.build_name().contains("simgpu");
    let child = match Sleeper::start() {
        Ok(c) => c,
        Err(e) => {
            r.warn(
                format!("cannot start a process to attach to: {e}"),
                "check that `sleep` is installed",
            );
            return simulated;
        }
    };
    let mut backend = match DbgApiBackend::attach(&api, Box::new(NoBreakpoints(child.pid()))) {
        Ok(b) => b,
        Err(e) => {
            r.fail(
                format!("{P}process_attach to a child process: {e}"),
                "run `gdbmux --log-channels dbgapi` for the library's messages",
            );
            return simulated;
        }
    };
    match backend.agents() {
        Ok(agents) if agents.is_empty() => r.fail(
            "agents: none (the library sees no AMD GPU from this process)",
            "see the /dev/kfd check; `rocminfo` must list a GPU agent for this user",
        ),
        Ok(agents) => {
            let usable = agents.iter().filter(|a| a.architecture.is_ok()).count();
            for a in &agents {
                match &a.architecture {
                    Ok(_) => r.ok(format!("{a}")),
                    Err(_) => r.warn(
                        format!("{a}"),
                        "this agent is skipped; its waves cannot be debugged with this library",
                    ),
                }
            }
            if usable == 0 {
                r.fail(
                    "no agent can be debugged with this library",
                    "install a ROCm whose amd-dbgapi supports your GPU's architecture",
                );
            }
        }
        Err(e) => r.fail(
            format!("agents: {e}"),
            "run `gdbmux --log-channels dbgapi` for the library's messages",
        ),
    }
    simulated
}

fn status_field(key: &str) -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
}

fn ptrace_checks(r: &mut Report) {
    const CAP_SYS_PTRACE: u32 = 19;
    let cap = status_field("CapEff:")
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .is_some_and(|c| c & (1 << CAP_SYS_PTRACE) != 0);
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").map(|s| s.trim().to_string()) {
        Ok(v) if v == "0" => r.ok("ptrace_scope 0: any process of this user can be attached"),
        Ok(v) if v == "1" && !cap => r.warn(
            "ptrace_scope 1: gdbmux can debug the programs it launches, but `--attach PID` needs CAP_SYS_PTRACE",
            "`echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope`, or run gdbmux with CAP_SYS_PTRACE to attach",
        ),
        Ok(v) if v == "2" && !cap => r.fail(
            "ptrace_scope 2: only processes with CAP_SYS_PTRACE may trace",
            "run gdbmux with CAP_SYS_PTRACE (`sudo setcap cap_sys_ptrace+ep gdbmux`, `docker run --cap-add=SYS_PTRACE`), or `echo 1 | sudo tee /proc/sys/kernel/yama/ptrace_scope`",
        ),
        Ok(v) if v == "3" => r.fail(
            "ptrace_scope 3: ptrace is disabled until reboot",
            "set kernel.yama.ptrace_scope to 0 or 1 at boot (sysctl.d) and reboot",
        ),
        Ok(v) => r.ok(format!("ptrace_scope {v}, with CAP_SYS_PTRACE")),
        Err(_) => r.ok("no Yama ptrace_scope (not restricted by Yama)"),
    }
    if cap {
        r.ok("CAP_SYS_PTRACE: held (processes of other users can be attached)");
    } else {
        r.ok("CAP_SYS_PTRACE: not held (fine for processes of this user)");
    }
    if status_field("Seccomp:").as_deref() == Some("2") {
        r.warn(
            "a seccomp filter is active (Seccomp: 2); it may deny ptrace",
            "`docker run --cap-add=SYS_PTRACE` (docker's default profile then allows ptrace) or `--security-opt seccomp=unconfined`",
        );
    }
    // The real test: trace a child like gdbmux does.
    match Sleeper::start() {
        Ok(child) => {
            let pid = nix::unistd::Pid::from_raw(child.pid());
            match nix::sys::ptrace::seize(pid, nix::sys::ptrace::Options::empty()) {
                Ok(()) => {
                    let _ = nix::sys::ptrace::detach(pid, None);
                    r.ok("PTRACE_SEIZE of a child process: allowed");
                }
                Err(e) => r.fail(
                    format!("PTRACE_SEIZE of a child process: {e}"),
                    "ptrace is denied (seccomp, an LSM, or ptrace_scope 3); in docker: `--cap-add=SYS_PTRACE --security-opt seccomp=unconfined`",
                ),
            }
        }
        Err(e) => r.warn(
            format!("cannot start a process to trace: {e}"),
            "check that `sleep` is installed",
        ),
    }
}

fn kfd_check(r: &mut Report) {
    use std::os::unix::fs::MetadataExt as _;
    let path = Path::new("/dev/kfd");
    match std::fs::OpenOptions::new().read(true).write(true).open(path) {
        Ok(_) => r.ok("/dev/kfd: readable and writable"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => r.fail(
            "/dev/kfd does not exist: no AMD GPU driver here",
            "load the amdgpu kernel driver (`sudo modprobe amdgpu`; ROCm's amdgpu-dkms); in a container pass the devices: `docker run --device=/dev/kfd --device=/dev/dri --group-add video --group-add render`",
        ),
        Err(e) => {
            let gid = std::fs::metadata(path).map(|m| m.gid()).ok();
            let group = gid
                .and_then(|g| nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(g)).ok().flatten())
                .map(|g| g.name)
                .unwrap_or_else(|| "render".into());
            r.fail(
                format!("/dev/kfd: {e}"),
                format!("add this user to the `{group}` group (`sudo usermod -aG {group},video $USER`, then log in again)"),
            )
        }
    }
}

/// ROCr's debugger hook (`rocr::_loader_debug_state()`), lldb's by-name
/// breakpoint for the GPU offer (`stub::mux`).
pub const ROCR_HOOK: &str = "_ZN4rocr19_loader_debug_stateEv";

/// Where ROCr (`libhsa-runtime64.so.1`) is looked for: beside the
/// amd-dbgapi library (ROCm installs both in one directory), then the
/// system library directories.
fn rocr_candidates(dbgapi: &Path) -> Vec<PathBuf> {
    let name = "libhsa-runtime64.so.1";
    let mut v = Vec::new();
    if let Some(dir) = dbgapi.parent().filter(|d| !d.as_os_str().is_empty()) {
        v.push(dir.join(name));
    }
    v.push(PathBuf::from("/usr/lib/x86_64-linux-gnu").join(name));
    v.push(PathBuf::from("/usr/lib64").join(name));
    v
}

/// Whether ROCr carries the hook symbol lldb's by-name breakpoint needs (a
/// stripped build, e.g. Debian's, has no `.symtab`).
fn rocr_check(r: &mut Report, dbgapi: &Path) {
    let Some(path) = rocr_candidates(dbgapi).into_iter().find(|p| p.exists()) else {
        r.ok("ROCr (libhsa-runtime64.so.1) not found beside the library or in the system directories; not checked");
        return;
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            r.warn(
                format!("ROCr {}: {e}", path.display()),
                "check its permissions",
            );
            return;
        }
    };
    use object::Object as _;
    use object::ObjectSymbol as _;
    let has = |f: &object::File<'_>, name: &str| {
        f.symbols()
            .chain(f.dynamic_symbols())
            .any(|s| s.name() == Ok(name))
    };
    let exported = crate::mux::exported_hook("");
    match object::File::parse(&*bytes) {
        Ok(elf) if has(&elf, ROCR_HOOK) => r.ok(format!(
            "ROCr {} has the debugger hook {ROCR_HOOK} (lldb's GPU offer by name)",
            path.display()
        )),
        Ok(elf) if has(&elf, exported) => r.ok(format!(
            "ROCr {} has no symbol {ROCR_HOOK} (stripped); lldb gets the GPU offer through the exported \
             {exported} when the runtime first starts, and by the runtime's r_brk address after",
            path.display()
        )),
        Ok(_) => r.warn(
            format!(
                "ROCr {} has neither {ROCR_HOOK} (stripped) nor the exported {exported}: lldb gets the GPU offer when the \
                 runtime is already up as it connects, and by the runtime's r_brk address from the second runtime \
                 lifetime on, but not when the runtime first starts",
                path.display()
            ),
            "install ROCr's symbols (ROCm's own packages keep them), or start gdbmux with \
             `--gpu-hook FUNCTION` naming an exported function the program calls once its GPU runtime is up",
        ),
        Err(e) => r.warn(format!("ROCr {}: not a readable ELF ({e})", path.display()), "reinstall ROCr"),
    }
}

/// Runs every check with the library at `explicit` (or the one found).
pub fn check(explicit: Option<PathBuf>) -> Report {
    let mut r = Report::default();
    let searched = explicit.is_none() && std::env::var_os("GDBMUX_DBGAPI").is_none();
    let (path, how) = locate(explicit);
    if searched {
        let sim = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join("libsimgpu_dbgapi.so")))
            .filter(|p| p.exists());
        if let Some(sim) = sim {
            r.ok(format!(
                "note: without --dbgapi, gdbmux serves the simulated GPU ({}); this check is about AMD's library",
                sim.display()
            ));
        }
    }
    let simulated = if library_checks(&mut r, &path, &how) {
        agent_checks(&mut r, &path)
    } else {
        false
    };
    if !simulated {
        rocr_check(&mut r, &path);
    }
    ptrace_checks(&mut r);
    if simulated {
        r.ok("/dev/kfd: not needed (the simulated GPU library)");
    } else {
        kfd_check(&mut r);
    }
    r
}

const USAGE: &str = "usage: gdbmux doctor [--dbgapi PATH]\n\
  Checks that gdbmux can debug AMD GPU programs here: finds amd-dbgapi (--dbgapi, $GDBMUX_DBGAPI,\n\
  $ROCM_PATH/lib, /opt/rocm/lib, /opt/rocm-*/lib, the system library paths), prints its version and\n\
  build, checks every function gdbmux binds, lists the GPU agents, and checks ptrace and /dev/kfd.\n\
  Exit status: 0 ready, 1 something would fail (with the fix), 2 usage error.\n";

/// `gdbmux doctor ARGS…` (the arguments after `doctor`); returns the exit
/// status.
pub fn main(args: impl IntoIterator<Item = String>) -> u8 {
    let mut explicit = None;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dbgapi" => match args.next() {
                Some(p) => explicit = Some(PathBuf::from(p)),
                None => {
                    eprint!("gdbmux doctor: --dbgapi needs a PATH\n{USAGE}");
                    return 2;
                }
            },
            s if s.starts_with("--dbgapi=") => {
                explicit = Some(PathBuf::from(&s["--dbgapi=".len()..]))
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return 0;
            }
            other => {
                eprint!("gdbmux doctor: unknown argument {other:?}\n{USAGE}");
                return 2;
            }
        }
    }
    let report = check(explicit);
    print!("{}", report.render());
    u8::from(report.failed())
}
