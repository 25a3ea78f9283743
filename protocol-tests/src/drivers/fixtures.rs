//! The C fixtures in `protocol-tests/fixtures/`, built once per process with
//! `gcc -g -O0` into `<target dir>/rsp-fixtures/`.
//!
//! | fixture | what |
//! |---|---|
//! | `single` | `work()` called in a loop (`argv[1]` iterations, default 1000), `g_counter` |
//! | `threads` | 4 workers looping over `thread_work()`, `g_counter`, SIGUSR1 handler `on_sigusr1` |
//! | `bench` | 16 MiB buffer and `bench_func()` in a tight loop (non-PIE) |
//! | `fork` | forks; the child calls `child_work()`, the parent `parent_work()` and waits |

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// A fixture program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fixture {
    /// `single.c`
    Single,
    /// `threads.c`
    Threads,
    /// `bench.c`
    Bench,
    /// `fork.c`
    Fork,
    /// `gpu_runtime.c`: brings the simulated GPU runtime up (linked with
    /// `libsimgpu_rt.so` from gdbmux's directory when it is there).
    GpuRuntime,
}

impl Fixture {
    /// All fixtures.
    pub const ALL: [Fixture; 5] = [
        Self::Single,
        Self::Threads,
        Self::Bench,
        Self::Fork,
        Self::GpuRuntime,
    ];

    /// Base name (source is `<name>.c`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Threads => "threads",
            Self::Bench => "bench",
            Self::Fork => "fork",
            Self::GpuRuntime => "gpu_runtime",
        }
    }

    fn extra_flags(self) -> &'static [&'static str] {
        match self {
            Self::Threads => &["-pthread"],
            Self::Bench => &["-no-pie"],
            Self::Single | Self::Fork | Self::GpuRuntime => &[],
        }
    }
}

/// The source directory of the fixtures.
pub fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The cargo target directory this crate is built in.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

fn build_all() -> Result<BTreeMap<Fixture, PathBuf>, String> {
    let out_dir = target_dir().join("rsp-fixtures");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let mut map = BTreeMap::new();
    for f in Fixture::ALL {
        let src = source_dir().join(format!("{}.c", f.name()));
        let exe = out_dir.join(f.name());
        // Build to a per-process temporary name and rename: concurrent test
        // binaries never see a half-written executable.
        let tmp = out_dir.join(format!(".{}.{}", f.name(), std::process::id()));
        let out = Command::new("gcc")
            .args(["-g", "-O0"])
            .args(f.extra_flags())
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            // Libraries after the source (the linker drops unneeded ones).
            .args(if f == Fixture::GpuRuntime {
                gpu_runtime_flags()
            } else {
                Vec::new()
            })
            .output()
            .map_err(|e| format!("cannot run gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc failed for {}: {}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&tmp, &exe).map_err(|e| format!("rename {}: {e}", exe.display()))?;
        map.insert(f, exe);
    }
    Ok(map)
}

/// Link flags for [`Fixture::GpuRuntime`]: the simulated runtime next to
/// the gdbmux binary, or `-DNO_RUNTIME` when there is none (then the
/// accelerator scenario reports it cannot run, never a pass).
fn gpu_runtime_flags() -> Vec<String> {
    let dir = super::stub::locate_gdbmux()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| d.join("libsimgpu_rt.so").is_file());
    match dir {
        Some(d) => vec![
            format!("-L{}", d.display()),
            "-lsimgpu_rt".into(),
            format!("-Wl,-rpath,{}", d.display()),
        ],
        None => vec!["-DNO_RUNTIME".into()],
    }
}

/// Path to a built fixture (builds all of them on first use; panics with
/// gcc's output if the build fails).
pub fn fixture(f: Fixture) -> PathBuf {
    static BUILT: OnceLock<Result<BTreeMap<Fixture, PathBuf>, String>> = OnceLock::new();
    match BUILT.get_or_init(build_all) {
        Ok(m) => m[&f].clone(),
        Err(e) => panic!("building the C fixtures failed: {e}"),
    }
}
