//! Shared set-up for the GPU end-to-end tests: the sample programs (built
//! with cc against the workspace's `libsimgpu_rt.so`), gdbmux serving one
//! of them with the simulated GPU, and runners for the debuggers.
#![allow(dead_code)]

use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Duration;

/// Paths the GPU tests need.
pub struct GpuEnv {
    /// Workspace root.
    pub root: PathBuf,
    /// Directory with gdbmux, libsimgpu_dbgapi.so and libsimgpu_rt.so.
    pub bin_dir: PathBuf,
    /// Built samples.
    pub samples: PathBuf,
}

static ENV: OnceLock<Option<GpuEnv>> = OnceLock::new();

impl GpuEnv {
    /// Build the samples once. `None` (with a loud message) only when the
    /// GPU libraries were not built (`cargo build --workspace` first).
    pub fn get() -> Option<&'static GpuEnv> {
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
            for name in ["vector_add", "reduce", "divergent", "fault"] {
                let st = Command::new("cc")
                    .args(["-g", "-O1", "-Wall"])
                    .arg(format!("-I{}", root.join("samples/include").display()))
                    .arg(format!(
                        "-DKERNEL_DIR=\"{}\"",
                        root.join("samples/kernels").display()
                    ))
                    .arg(root.join(format!("samples/{name}.c")))
                    .arg("-o")
                    .arg(samples.join(name))
                    .arg(format!("-L{}", bin_dir.display()))
                    .arg("-lsimgpu_rt")
                    .arg(format!("-Wl,-rpath,{}", bin_dir.display()))
                    .status()
                    .expect("cc");
                assert!(st.success(), "building sample {name}");
            }
            Some(GpuEnv {
                root,
                bin_dir,
                samples,
            })
        })
        .as_ref()
    }

    /// Build one more sample of `samples/` (one that `get` does not build)
    /// and return its path.
    pub fn build_sample(&self, name: &str) -> PathBuf {
        let out = self.samples.join(name);
        let st = Command::new("cc")
            .args(["-g", "-O1", "-Wall"])
            .arg(format!("-I{}", self.root.join("samples/include").display()))
            .arg(format!(
                "-DKERNEL_DIR=\"{}\"",
                self.root.join("samples/kernels").display()
            ))
            .arg(self.root.join(format!("samples/{name}.c")))
            .arg("-o")
            .arg(&out)
            .arg(format!("-L{}", self.bin_dir.display()))
            .arg("-lsimgpu_rt")
            .arg(format!("-Wl,-rpath,{}", self.bin_dir.display()))
            .status()
            .expect("cc");
        assert!(st.success(), "building sample {name}");
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
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                return st;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "gdbmux did not exit:\n{}",
                self.log()
            );
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run a Python script (with lldb's module importable) and return its
/// output; killed after 120 s.
pub fn run_python(script: &Path, args: &[&str]) -> String {
    run_with_timeout(Command::new("python3").arg(script).args(args), 120)
}

/// Run a command with a hard timeout; returns stdout+stderr.
pub fn run_with_timeout(cmd: &mut Command, secs: u64) -> String {
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
            panic!("command timed out after {secs} s: {cmd:?}");
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
