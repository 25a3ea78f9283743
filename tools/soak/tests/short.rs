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
