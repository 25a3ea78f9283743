//! Helpers shared by the dlopen tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>` of this test binary.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .to_path_buf()
}

/// The simulated library built alongside the tests: `cargo test` leaves it
/// in `deps/` (the lib is also an rlib so that cargo builds it for the
/// tests); `cargo build` uplifts it to `target/<profile>`. The newer wins.
pub fn library() -> PathBuf {
    let candidates = [
        target_dir().join("deps/libsimgpu_dbgapi.so"),
        target_dir().join("libsimgpu_dbgapi.so"),
    ];
    candidates
        .into_iter()
        .filter_map(|p| {
            let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((t, p))
        })
        .max()
        .map(|(_, p)| p)
        .expect("libsimgpu_dbgapi.so not built")
}

/// Builds a sample program statically linked with simgpu-rt.
pub fn build_sample(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out_dir = target_dir().join("sample-tests");
    std::fs::create_dir_all(&out_dir).expect("mkdir");
    // One file per test thread: concurrent tests must not rewrite a binary
    // another one is running (ETXTBSY).
    let tag = std::thread::current()
        .name()
        .unwrap_or("main")
        .replace("::", "_");
    let out = out_dir.join(format!("{name}-{}-{tag}", std::process::id()));
    let rt = target_dir().join("deps/libsimgpu_rt.a");
    assert!(rt.exists(), "{} not built", rt.display());
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg("-g")
        .arg(format!("-I{}", root.join("samples/include").display()))
        .arg(format!(
            "-DKERNEL_DIR=\"{}\"",
            root.join("samples/kernels").display()
        ))
        .arg(root.join(format!("samples/{name}.c")))
        .arg("-o")
        .arg(&out)
        .arg(&rt)
        .args(["-lpthread", "-ldl", "-lm"])
        .status()
        .expect("run cc");
    assert!(st.success(), "cc failed for {name}");
    out
}
