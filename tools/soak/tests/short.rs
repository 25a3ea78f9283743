//! A few seconds of soak against the workspace's gdbmux (CI-sized; the
//! 10-minute run is in README "Soak").
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn five_second_soak_passes() {
    let soak = PathBuf::from(env!("CARGO_BIN_EXE_soak"));
    let gdbmux = soak.with_file_name("gdbmux");
    assert!(
        gdbmux.exists(),
        "{} is missing: build the workspace first (`cargo build --workspace`)",
        gdbmux.display()
    );
    let out = Command::new(&soak)
        .args(["--secs", "5", "--seed", "12345"])
        .arg("--gdbmux")
        .arg(&gdbmux)
        .output()
        .expect("run soak");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("result:     PASS"), "{text}");
}

/// A short GPU soak (`soak --gpu`): gdb-shaped GPU sessions against
/// `samples/reload_loop.c` (load, launch, unload, again), each stopping a
/// wave at a kernel breakpoint, reading it, stepping it, resuming it and
/// interrupting the CPU; no fd or RSS growth.
#[test]
fn twenty_second_gpu_soak_passes() {
    let soak = PathBuf::from(env!("CARGO_BIN_EXE_soak"));
    let bin = soak.parent().expect("bin dir").to_path_buf();
    let gdbmux = bin.join("gdbmux");
    for f in [
        &gdbmux,
        &bin.join("libsimgpu_rt.so"),
        &bin.join("libsimgpu_dbgapi.so"),
    ] {
        assert!(
            f.exists(),
            "{} is missing: build the workspace first (`cargo build --workspace`)",
            f.display()
        );
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reload_loop");
    let st = Command::new("cc")
        .args(["-g", "-O1", "-Wall"])
        .arg(format!("-I{}", root.join("samples/include").display()))
        .arg(format!(
            "-DKERNEL_DIR=\"{}\"",
            root.join("samples/kernels").display()
        ))
        .arg(root.join("samples/reload_loop.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", bin.display()))
        .arg("-lsimgpu_rt")
        .arg(format!("-Wl,-rpath,{}", bin.display()))
        .status()
        .expect("cc");
    assert!(st.success(), "building samples/reload_loop.c");
    let out = Command::new(&soak)
        .args(["--secs", "20", "--seed", "4242"])
        .arg("--gdbmux")
        .arg(&gdbmux)
        .arg("--gpu")
        .arg(&exe)
        .output()
        .expect("run soak --gpu");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("result:     PASS"), "{text}");
    let stops: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("GPU breakpoint stops: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(stops >= 3, "too few GPU sessions completed:\n{text}");
}
