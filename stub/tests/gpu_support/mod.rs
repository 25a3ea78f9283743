//! Shared set-up for the GPU end-to-end tests: the sample programs (built
//! with cc against the workspace's `libsimgpu_rt.so`), gdbmux serving one
//! of them with the simulated GPU, and runners for the debuggers.
#![allow(dead_code)]

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::ChildStdin;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;

use protocol_tests::client::ClientError;
use protocol_tests::client::RspClient;
use protocol_tests::framing;
use protocol_tests::reply::decode_hex;
use protocol_tests::reply::encode_hex;
use protocol_tests::reply::parse_accelerator_actions;
use protocol_tests::reply::parse_json_reply;
use protocol_tests::reply::AcceleratorActions;
use protocol_tests::reply::ErrorReply;
use protocol_tests::reply::StopReply;
use protocol_tests::reply::StopSignal;

/// The GPU runtime's hook (lldb's by-name breakpoint).
pub const HOOK: &str = "_simgpu_loader_debug_state";
/// The accelerator plugin gdbmux names.
pub const PLUGIN: &str = "amd-gpu";

/// Paths the GPU tests need.
pub struct GpuEnv {
    /// Workspace root.
    pub root: PathBuf,
    /// Directory with gdbmux, libsimgpu_dbgapi.so and libsimgpu_rt.so.
    pub bin_dir: PathBuf,
    /// Built samples.
    pub samples: PathBuf,
}

static ENV: OnceLock<GpuEnv> = OnceLock::new();

impl GpuEnv {
    /// Build the samples once. A missing GPU library fails the test (no
    /// silent skip): `cargo build --workspace` first.
    pub fn get() -> &'static GpuEnv {
        ENV.get_or_init(|| {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            let gdbmux = PathBuf::from(env!("CARGO_BIN_EXE_gdbmux"));
            let bin_dir = gdbmux.parent().expect("bin dir").to_path_buf();
            for lib in ["libsimgpu_dbgapi.so", "libsimgpu_rt.so"] {
                assert!(
                    bin_dir.join(lib).exists(),
                    "{} is missing: build the workspace first (`cargo build --workspace`)",
                    bin_dir.join(lib).display()
                );
            }
            let samples = bin_dir.join("gpu-test-samples");
            std::fs::create_dir_all(&samples).expect("samples dir");
            let env = GpuEnv {
                root,
                bin_dir,
                samples,
            };
            for name in ["vector_add", "reduce", "divergent", "fault"] {
                env.build_sample(name);
            }
            env
        })
    }

    /// Build one more sample of `samples/` (one that `get` does not build)
    /// and return its path.
    pub fn build_sample(&self, name: &str) -> PathBuf {
        let out = self.samples.join(name);
        let kernels = format!(
            "-DKERNEL_DIR=\"{}\"",
            self.root.join("samples/kernels").display()
        );
        self.build_host(
            &self.root.join(format!("samples/{name}.c")),
            &out,
            &["-O1", &kernels],
        );
        out
    }

    /// Compile the host program `src` (C) to `exe` against the workspace's
    /// `libsimgpu_rt.so` (rpath set), with `-g -Wall` and `flags`.
    pub fn build_host(&self, src: &Path, exe: &Path, flags: &[&str]) {
        let st = Command::new("cc")
            .args(["-g", "-Wall"])
            .args(flags)
            .arg(format!("-I{}", self.root.join("samples/include").display()))
            .arg(src)
            .arg("-o")
            .arg(exe)
            .arg(format!("-L{}", self.bin_dir.display()))
            .arg("-lsimgpu_rt")
            .arg(format!("-Wl,-rpath,{}", self.bin_dir.display()))
            .status()
            .expect("cc");
        assert!(st.success(), "building {}", src.display());
    }

    /// Compile the OpenCL kernel file `src` with clang-19 for gfx90a (with
    /// DWARF) to the code object `hsaco`.
    pub fn build_kernel(&self, src: &Path, hsaco: &Path) {
        let st = Command::new("clang-19")
            .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O1", "-g"])
            .args(["-nogpulib", "-cl-std=CL2.0", "-x", "cl"])
            .arg(format!("-I{}", self.root.join("samples/kernels").display()))
            .arg(src)
            .arg("-o")
            .arg(hsaco)
            .status()
            .expect("clang-19");
        assert!(st.success(), "compiling {}", src.display());
    }

    /// `samples/hostile/`: hostile.hsaco and the hostile host program,
    /// built into `samples/NAME` (one directory per test binary: they run
    /// in parallel). Returns (that directory, the program), which the
    /// program finds its kernels in through `SIMGPU_KERNEL_DIR`.
    pub fn build_hostile(&self, name: &str) -> (PathBuf, PathBuf) {
        let dir = self.samples.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let src = self.root.join("samples/hostile");
        self.build_kernel(&src.join("hostile.cl"), &dir.join("hostile.hsaco"));
        let exe = dir.join("hostile");
        self.build_host(&src.join("hostile.c"), &exe, &["-O1"]);
        (dir, exe)
    }

    /// gdbmux (log channels `mux`, `dbgapi`) on a free port serving
    /// `hostile --hang`, built by [`GpuEnv::build_hostile`] into
    /// `samples/NAME`, with `vars` in its environment. Returns the server
    /// and the program.
    pub fn hang_server(&self, name: &str, vars: &[(&str, &str)]) -> (Server, PathBuf) {
        let (dir, exe) = self.build_hostile(name);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
        cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
            .arg(&exe)
            .arg("--hang")
            .env("SIMGPU_KERNEL_DIR", &dir)
            .envs(vars.iter().copied());
        (Server::start(cmd), exe)
    }

    /// A program of `stub/tests/gpu/typed/` built at test time into its own
    /// directory `bin_dir/group/test` (tests run in parallel): the host
    /// `host_c` (built with `flags`) and the kernels `KERNEL.cl` as
    /// `KERNEL.hsaco` beside it. Returns (host executable, that directory,
    /// which the typed programs take as their argument).
    pub fn build_typed(
        &self,
        group: &str,
        test: &str,
        host_c: &str,
        kernels: &[&str],
        flags: &[&str],
    ) -> (PathBuf, PathBuf) {
        let src = self.root.join("stub/tests/gpu/typed");
        let out = self.bin_dir.join(group).join(test);
        std::fs::create_dir_all(&out).expect("out dir");
        for k in kernels {
            self.build_kernel(
                &src.join(format!("{k}.cl")),
                &out.join(format!("{k}.hsaco")),
            );
        }
        let host = out.join(host_c.trim_end_matches(".c"));
        self.build_host(&src.join(host_c), &host, flags);
        (host, out)
    }

    /// gdbmux (its `mux` channel logged) serving `host` with the argument
    /// `arg`, on a free port.
    pub fn serve_program(&self, host: &Path, arg: &Path) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
        cmd.args(["--log-channels", "mux", "127.0.0.1:0", "--"]);
        cmd.arg(host).arg(arg);
        Server::start(cmd)
    }

    /// gdbmux (its `mux` and `dbgapi` channels logged) serving `host` with
    /// the argument `arg`, the simulated library set up by `vars` (e.g.
    /// `SIMGPU_AGENTS`), on a free port.
    pub fn serve_program_with(&self, host: &Path, arg: &Path, vars: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
        cmd.envs(vars.iter().copied())
            .args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
            .arg(host)
            .arg(arg);
        Server::start(cmd)
    }

    /// Stock `lldb -b` on `exe`: the shipped helper imported, connected to
    /// gdbmux on `port`, then `cmds`; its output (fails after 120 s).
    pub fn lldb_batch(&self, port: u16, cmds: &[&str], exe: &Path) -> String {
        lldb_batch_args(&self.lldb_connect_args(port, exe), cmds)
    }

    /// lldb's arguments for gdbmux's connect line with the shipped helper
    /// (`-o 'command script import HELPER' -o 'gdb-remote …' PROGRAM`).
    pub fn lldb_connect_args(&self, port: u16, exe: &Path) -> Vec<String> {
        let helper = self.root.join("tools/lldb/gdbmux_lldb.py");
        vec![
            "-o".to_string(),
            format!("command script import {}", helper.display()),
            "-o".to_string(),
            format!("gdb-remote 127.0.0.1:{port}"),
            exe.display().to_string(),
        ]
    }

    /// Interactive stock lldb with `args` (its connect line), typed through
    /// a pseudo-terminal (`tests/gpu/lldb_pty.py`): each command once the
    /// prompt shows, then its output read until the regex (Python `re`,
    /// dot matching newlines) matches. Fails the test with the transcript
    /// and `server`'s log on the first expectation not met; returns the
    /// transcript.
    pub fn lldb_pty(&self, args: &[String], script: &[(&str, &str)], server: &Server) -> String {
        let script: Vec<[&str; 2]> = script.iter().map(|(c, e)| [*c, *e]).collect();
        let out = run_python(
            &self.root.join("stub/tests/gpu/lldb_pty.py"),
            &[
                &serde_json::to_string(args).expect("json"),
                &serde_json::to_string(&script).expect("json"),
            ],
        );
        assert!(
            out.contains("PTY ALL EXPECTATIONS MET"),
            "interactive lldb:\n{out}\n--- gdbmux ---\n{}",
            server.log()
        );
        out
    }

    /// A built sample.
    pub fn sample(&self, name: &str) -> PathBuf {
        self.samples.join(name)
    }

    /// Start gdbmux on a free port serving `args[0]` (a sample name) with
    /// the rest as its arguments.
    pub fn serve(&self, args: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
        cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"]);
        cmd.arg(self.sample(args[0]));
        cmd.args(&args[1..]);
        Server::start(cmd)
    }
}

impl GpuEnv {
    /// Start gdbmux on a free port, attached to the running process `pid`.
    pub fn serve_attach(&self, pid: u32) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
        cmd.args(["--log-channels", "mux,dbgapi", "--attach"]);
        cmd.arg(pid.to_string());
        cmd.arg("127.0.0.1:0");
        Server::start(cmd)
    }
}

/// A running gdbmux.
pub struct Server {
    child: Child,
    /// Its port.
    pub port: u16,
    log: Arc<Mutex<String>>,
    /// Notified whenever a line is appended to `log`.
    log_cv: Arc<Condvar>,
}

impl Server {
    /// Start and wait for "Listening on" (fails loudly after 20 s).
    pub fn start(mut cmd: Command) -> Server {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start gdbmux");
        let log = Arc::new(Mutex::new(String::new()));
        let log_cv = Arc::new(Condvar::new());
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("stderr");
        let l2 = log.clone();
        let cv2 = log_cv.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("Listening on ") {
                    let _ = tx.send(addr.to_string());
                }
                if let Ok(mut l) = l2.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
                cv2.notify_all();
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let l3 = log.clone();
        let cv3 = log_cv.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(mut l) = l3.lock() {
                    l.push_str("[inferior] ");
                    l.push_str(&line);
                    l.push('\n');
                }
                cv3.notify_all();
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| {
                panic!(
                    "gdbmux did not print 'Listening on' within 20 s:\n{}",
                    log.lock().map(|l| l.clone()).unwrap_or_default()
                )
            });
        let port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        Server {
            child,
            port,
            log,
            log_cv,
        }
    }

    /// Wait until the log (gdbmux's and its inferior's output) contains
    /// `needle`; fails loudly after `secs`.
    pub fn wait_log(&self, needle: &str, secs: u64) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        let mut l = self.log.lock().expect("log lock");
        loop {
            if l.contains(needle) {
                return l.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "no '{needle}' in the gdbmux log within {secs} s:\n{}",
                *l
            );
            l = self.log_cv.wait_timeout(l, left).expect("log lock").0;
        }
    }

    /// The gdbmux process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything gdbmux and the inferior printed so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Wait for the server to exit (fails after `secs`).
    pub fn wait_exit(&mut self, secs: u64) -> std::process::ExitStatus {
        // Wait on the process's pidfd (an event), then reap it.
        let exited =
            protocol_tests::drivers::process::wait_gone(self.child.id(), Duration::from_secs(secs))
                .expect("pidfd");
        assert!(exited, "gdbmux did not exit:\n{}", self.log());
        self.child.wait().expect("wait")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Stock `gdb -batch` on `exe`, connected to gdbmux on `port`, then
/// `cmds`; its output (fails after 120 s).
pub fn gdb_batch(port: u16, cmds: &[&str], exe: &Path) -> String {
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx"])
        .args(["-ex", &format!("target remote 127.0.0.1:{port}")]);
    for c in cmds {
        gdb.args(["-ex", c]);
    }
    gdb.arg(exe);
    run_with_timeout(&mut gdb, 120)
}

/// Stock `lldb -b` with `args` (a connect line: options, then the program
/// last) and `cmds` after them; its output (fails after 120 s).
pub fn lldb_batch_args(args: &[String], cmds: &[&str]) -> String {
    let (prog, pre) = args.split_last().expect("lldb arguments");
    let mut lldb = Command::new("lldb");
    lldb.arg("-b").args(pre);
    for c in cmds {
        lldb.args(["-o", c]);
    }
    lldb.arg(prog);
    run_with_timeout(&mut lldb, 120)
}

/// Checks `lldb -b`'s output `out` against `session`: each command ran, in
/// order, and what it printed (up to the next prompt) matches its regex
/// (Python `re`, dot matching newlines). Fails the test with the session
/// and `server`'s log.
pub fn assert_batch_session(out: &str, session: &[(&str, &str)], server: &Server) {
    let mut rest = out;
    for (c, expect) in session {
        let at = rest
            .find(&format!("(lldb) {c}\n"))
            .unwrap_or_else(|| panic!("{c:?} not run:\n{out}\n--- gdbmux ---\n{}", server.log()));
        rest = &rest[at + c.len() + 8..];
        let end = rest.find("(lldb) ").unwrap_or(rest.len());
        assert!(
            python_re_search(expect, &rest[..end]),
            "{c:?} printed no /{expect}/:\n{}\n--- whole session ---\n{out}\n--- gdbmux ---\n{}",
            &rest[..end],
            server.log()
        );
    }
}

/// How many stops of a wave lldb printed in full in `out` (a stop's
/// `* thread #N, name = 'wave…', stop reason = …` line; `thread list`
/// prints `thread #N: tid = …` instead).
pub fn wave_stops_printed(out: &str) -> usize {
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix("* thread #"))
        .filter(|l| {
            let rest = l.trim_start_matches(|c: char| c.is_ascii_digit());
            rest.starts_with(", name = 'wave") && rest.contains("stop reason = ")
        })
        .count()
}

/// Whether the Python regex `expect` (dot matching newlines) matches in
/// `text` (the tests depend on python3 for lldb already).
pub fn python_re_search(expect: &str, text: &str) -> bool {
    let st = Command::new("python3")
        .args([
            "-c",
            "import re,sys; sys.exit(0 if re.search(sys.argv[1], sys.stdin.read(), re.S) else 1)",
            expect,
        ])
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            if let Some(mut i) = c.stdin.take() {
                i.write_all(text.as_bytes())?;
            }
            c.wait()
        })
        .expect("python3");
    st.success()
}

/// Run a Python script (with lldb's module importable) and return its
/// output; killed after 120 s.
pub fn run_python(script: &Path, args: &[&str]) -> String {
    protocol_tests::drivers::versions::require_lldb();
    run_with_timeout(Command::new("python3").arg(script).args(args), 120)
}

/// Run a command with a hard timeout; returns stdout+stderr. A stock
/// debugger (`gdb`, `lldb`) must be the pinned version first.
pub fn run_with_timeout(cmd: &mut Command, secs: u64) -> String {
    require_pinned(cmd);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(o)) => format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Ok(Err(e)) => panic!("command failed: {e}"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            // What the command printed before it hung says where it hung.
            let printed = match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(o)) => format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
                _ => "(no output collected)".to_string(),
            };
            panic!("command timed out after {secs} s: {cmd:?}\nit printed:\n{printed}");
        }
    }
}

/// Offset of a kernel's entry in its code object (from the ELF symbol
/// table).
pub fn kernel_symbol(hsaco: &Path, name: &str) -> u64 {
    let data = std::fs::read(hsaco).expect("read hsaco");
    let elf = gpu_target::sim::elf::Elf::parse(&data).expect("parse hsaco");
    let sym = elf
        .symbol(name)
        .unwrap_or_else(|e| panic!("no symbol {name} in {}: {e}", hsaco.display()));
    sym.value
}

/// Run stock gdb in batch mode on `exe` with a Python script and
/// environment; returns its output; killed after 120 s.
pub fn run_gdb(script: &Path, exe: &Path, envs: &[(&str, String)]) -> String {
    protocol_tests::drivers::versions::require_gdb();
    let mut cmd = Command::new("gdb");
    cmd.args(["-batch", "-nx", "-x"]).arg(script).arg(exe);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_with_timeout(&mut cmd, 120)
}

/// Directory with gdbmux and `libsimgpu_dbgapi.so`, without building the
/// samples (fails loudly when the library was not built).
pub fn bin_dir_with_dbgapi() -> PathBuf {
    let gdbmux = PathBuf::from(env!("CARGO_BIN_EXE_gdbmux"));
    let bin_dir = gdbmux.parent().expect("bin dir").to_path_buf();
    assert!(
        bin_dir.join("libsimgpu_dbgapi.so").exists(),
        "{} is missing: build the workspace first (`cargo build --workspace`)",
        bin_dir.join("libsimgpu_dbgapi.so").display()
    );
    bin_dir
}

/// Resident memory of a process in KiB (`VmRSS` of /proc/PID/status);
/// `None` once it is gone.
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Symbol value from `nm` (`dynamic`: the dynamic symbol table).
pub fn nm(path: &Path, sym: &str, dynamic: bool) -> u64 {
    let mut cmd = Command::new("nm");
    if dynamic {
        cmd.arg("-D");
    }
    let out = cmd.arg(path).output().expect("run nm");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [v, _, name] if *name == sym => u64::from_str_radix(v, 16).ok(),
                _ => None,
            }
        })
        .unwrap_or_else(|| panic!("no symbol {sym} in {}", path.display()))
}

/// Load base of the object whose path ends in `/name` in process `pid`.
pub fn load_base(pid: u64, name: &str) -> u64 {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("read maps");
    maps.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [range, _, off, _, _, path]
                    if path.ends_with(&format!("/{name}"))
                        && u64::from_str_radix(off, 16) == Ok(0) =>
                {
                    range
                        .split('-')
                        .next()
                        .and_then(|s| u64::from_str_radix(s, 16).ok())
                }
                _ => None,
            }
        })
        .unwrap_or_else(|| panic!("{name} is not mapped in {pid}:\n{maps}"))
}

// ------------------------------------------------- raw RSP (lldb dialect)

/// Connect and run lldb 23.1's handshake: `+`, `QStartNoAckMode`, its
/// `qSupported`, `QThreadSuffixSupported`, `QListThreadsInStopReply`.
/// Returns the client and whether `accelerator-plugins+` was offered.
pub fn lldb_client(port: u16) -> (RspClient, bool) {
    let mut c = RspClient::connect(("127.0.0.1", port)).expect("connect to gdbmux");
    let features = c.handshake_lldb().expect("lldb handshake");
    c.expect_ok("QThreadSuffixSupported")
        .expect("QThreadSuffixSupported");
    c.expect_ok("QListThreadsInStopReply")
        .expect("QListThreadsInStopReply");
    (c, features.supports("accelerator-plugins"))
}

/// A `T` stop reply (panics on anything else).
pub fn signal_stop(stop: StopReply, what: &str) -> StopSignal {
    match stop {
        StopReply::Signal(s) => s,
        other => panic!("{what}: expected a T stop reply, got {other:?}"),
    }
}

/// The process id of a multiprocess stop reply's thread (panics on a
/// reply without one).
pub fn stop_pid(stop: &StopSignal) -> u64 {
    stop.thread
        .and_then(|t| t.pid)
        .and_then(protocol_tests::reply::IdPart::id)
        .expect("multiprocess thread id")
}

/// `monitor CMD` through qRcmd: the console text (O packets) up to `OK`.
pub fn monitor(c: &mut RspClient, cmd: &str) -> String {
    c.send_packet(format!("qRcmd,{}", encode_hex(cmd.as_bytes())).as_bytes())
        .expect("send qRcmd");
    let mut out = Vec::new();
    loop {
        let r = c.recv_packet().expect("qRcmd reply");
        if r == b"OK" {
            return String::from_utf8_lossy(&out).into_owned();
        }
        match r.strip_prefix(b"O") {
            Some(hex) if !hex.is_empty() => {
                out.extend(decode_hex(hex).expect("hex console output"));
            }
            _ => panic!("unexpected qRcmd reply {}", framing::printable(&r)),
        }
    }
}

/// `jAcceleratorPluginInitialize`: the one plugin's actions.
pub fn plugin_initialize(cpu: &mut RspClient) -> AcceleratorActions {
    let raw = cpu
        .request(b"jAcceleratorPluginInitialize")
        .expect("jAcceleratorPluginInitialize");
    let mut actions = parse_accelerator_actions(&raw).expect("Initialize reply schema");
    assert_eq!(actions.len(), 1, "one plugin: {actions:?}");
    actions.remove(0)
}

/// Send `jAcceleratorPluginBreakpointHit` for the hook breakpoint (at
/// `hook`), as lldb does; returns the decoded reply object.
pub fn breakpoint_hit(cpu: &mut RspClient, hook: u64) -> serde_json::Value {
    let hit = serde_json::json!({
        "plugin_name": PLUGIN,
        "breakpoint": {
            "identifier": 1,
            "by_name": {"function_name": HOOK, "shlib": null},
            "by_address": null,
            "symbol_names": [HOOK],
        },
        "symbol_values": [{"name": HOOK, "value": hook}],
    });
    let mut p = b"jAcceleratorPluginBreakpointHit:".to_vec();
    p.extend(framing::escape(hit.to_string().as_bytes()));
    let raw = cpu.request(&p).expect("jAcceleratorPluginBreakpointHit");
    parse_json_reply(&raw).expect("BreakpointHit reply")
}

/// The `actions` of a BreakpointHit reply, schema-checked by the same
/// parser as Initialize replies.
pub fn hit_actions(reply: &serde_json::Value) -> AcceleratorActions {
    let one = serde_json::Value::Array(vec![reply["actions"].clone()]);
    let wire = framing::escape(one.to_string().as_bytes());
    let mut v = parse_accelerator_actions(&wire).expect("hit actions schema");
    v.remove(0)
}

/// What a refused connection is told: connect, send `first` as its first
/// packet, decode the `E..;text` reply, and check the server closes it.
pub fn refused(port: u16, first: &str) -> String {
    let mut c = RspClient::connect(("127.0.0.1", port)).expect("connect extra");
    c.send_ack().expect("ack");
    let raw = c.request(first.as_bytes()).expect("refusal reply");
    let e = ErrorReply::parse(&raw)
        .unwrap_or_else(|| panic!("extra connection not refused: {}", framing::printable(&raw)));
    match c.recv_packet_within(Duration::from_secs(10)) {
        // Our `+` for the refusal may reach the socket after the server
        // closed it: a reset is a close too.
        Err(ClientError::Closed { .. }) => {}
        Err(ClientError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("refused connection not closed: {other:?}"),
    }
    e.message.expect("refusal carries a readable reason")
}

// ------------------------------------------------------ a --wait sample

/// A sample program we start ourselves with `--wait` (it stops at named
/// checkpoints until a line arrives on its stdin).
pub struct Sample {
    /// The sample process.
    pub child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Sample {
    /// Start `exe --wait` (its stdout is read line by line).
    pub fn start(env: &GpuEnv, exe: &Path) -> Sample {
        let mut child = Command::new(exe)
            .arg("--wait")
            .env("SIMGPU_KERNEL_DIR", env.root.join("samples/kernels"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the sample");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Sample {
            child,
            stdin,
            lines,
        }
    }

    /// Start `vector_add --wait` and run it until its runtime is up
    /// (`simgpu_init` done; blocked at the `init` checkpoint).
    pub fn runtime_up(env: &GpuEnv) -> Sample {
        let mut s = Sample::start(env, &env.sample("vector_add"));
        s.expect("checkpoint start");
        s.release(1);
        s.expect("checkpoint init");
        s
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for a line containing `needle` (fails after 20 s).
    pub fn expect(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(20)) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(e) => panic!("sample did not print '{needle}': {e}"),
            }
        }
    }

    /// Let it pass `n` checkpoints.
    pub fn release(&mut self, n: usize) {
        self.stdin
            .write_all("go\n".repeat(n).as_bytes())
            .expect("write to the sample");
        self.stdin.flush().expect("flush");
    }

    /// Wait for its exit status (fails after 20 s).
    pub fn wait(&mut self) -> i32 {
        // Wait on the sample's pidfd (an event), then reap it.
        let exited =
            protocol_tests::drivers::process::wait_gone(self.child.id(), Duration::from_secs(20))
                .expect("pidfd");
        assert!(exited, "sample did not exit");
        self.child.wait().expect("wait sample").code().unwrap_or(-1)
    }
}

impl Drop for Sample {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Panic unless the stock debugger `cmd` runs (`gdb`, `lldb`; anything
/// else is not checked) is the version the tests are pinned to (gdb 13,
/// lldb 23.1: `protocol_tests::drivers::versions`).
pub fn require_pinned(cmd: &Command) {
    match cmd.get_program().to_str() {
        Some("gdb") => protocol_tests::drivers::versions::require_gdb(),
        Some("lldb") => protocol_tests::drivers::versions::require_lldb(),
        _ => {}
    }
}
