//! Hostile GPU programs against the runtime: `samples/hostile/hostile.cl`
//! (OpenCL C, compiled here by clang-19) has kernels that store through a
//! wild pointer, execute an illegal instruction, hang, and trap half-way
//! through a dispatch. `samples/hostile/hostile.c` (built here, linked
//! statically with this runtime) launches each, checks the status and the
//! error text (kernel, pc, reason), runs 25 good launches after each with
//! checked results, and checks guard words around its buffers. It runs
//! natively and under valgrind's memcheck (`--error-exitcode`): no invalid
//! access or corruption in the host.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `target/<profile>` of this test binary.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .to_path_buf()
}

/// Compiles hostile.cl and builds hostile.c into a fresh directory.
fn build(tag: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{tag}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = root().join("samples/hostile");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang-19".into());
    let st = Command::new(&clang)
        .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O1", "-g"])
        .args(["-nogpulib", "-cl-std=CL2.0", "-x", "cl"])
        .arg(src.join("hostile.cl"))
        .arg("-o")
        .arg(dir.join("hostile.hsaco"))
        .status()
        .unwrap_or_else(|e| panic!("run {clang} (needed to compile the kernels): {e}"));
    assert!(st.success(), "{clang} failed on hostile.cl");
    let rt = target_dir().join("deps/libsimgpu_rt.a");
    assert!(rt.exists(), "{} not built", rt.display());
    let exe = dir.join("hostile");
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-g", "-O1", "-Wall"])
        .arg(format!("-I{}", root().join("samples/include").display()))
        .arg(src.join("hostile.c"))
        .arg("-o")
        .arg(&exe)
        .arg(&rt)
        .args(["-lpthread", "-ldl", "-lm"])
        .status()
        .expect("run cc");
    assert!(st.success(), "cc failed for hostile.c");
    (dir, exe)
}

fn run(exe: &Path, dir: &Path, watchdog_ms: u64) -> Output {
    Command::new(exe)
        .env("SIMGPU_KERNEL_DIR", dir)
        .env("SIMGPU_WATCHDOG_MS", watchdog_ms.to_string())
        .output()
        .expect("run hostile")
}

fn check(out: &Output, what: &str, watchdog_ms: u64) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("hostile: PASS"),
        "{what}: {:?}\n{text}",
        out.status
    );
    for line in [
        "wild_store: dispatch aborted: memory violation at pc 0x",
        // Whichever wave faults first is reported (waves run on several
        // device threads): its first lane's address is 0xdead0000xxxx.
        "address 0xdead0000",
        ": global_store_dword v[",
        "illegal: dispatch aborted: illegal instruction at pc 0x",
        "(bytes ff ff ff ff",
        "trap_mid: dispatch aborted: assert trap (llvm.trap) at pc 0x",
        "s_trap 2",
    ] {
        assert!(text.contains(line), "{what}: no {line:?} in\n{text}");
    }
    let hang = format!(
        "hang: kernel timed out (watchdog): hang: watchdog: the dispatch did not finish within {watchdog_ms} ms (SIMGPU_WATCHDOG_MS); wave "
    );
    assert!(text.contains(&hang), "{what}: no {hang:?} in\n{text}");
    text
}

#[test]
fn hostile_kernels_then_good_ones() {
    let (dir, exe) = build("native");
    let out = run(&exe, &dir, 300);
    check(&out, "native", 300);
}

/// The same program under valgrind's memcheck: any invalid read or write,
/// use of freed memory or corrupted heap in the host makes it exit 99.
#[test]
fn hostile_kernels_under_valgrind() {
    let (dir, exe) = build("valgrind");
    let mut cmd = Command::new("valgrind");
    cmd.args(["-q", "--error-exitcode=99"])
        .arg(&exe)
        .env("SIMGPU_KERNEL_DIR", &dir)
        .env("SIMGPU_WATCHDOG_MS", "3000");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("valgrind is needed for this test: {e}"));
    check(&out, "valgrind", 3000);
}
