//! Building the C programs of `tests/fixtures` (shared by the other
//! support modules, which include this file).

use std::path::Path;
use std::process::Command;

/// Build `tests/fixtures/NAME.c` for each of `names` with `gcc -g` and
/// `flags` into `out` (each through a temporary name, so a parallel test
/// never runs a half-written binary).
pub fn build_c(out: &Path, names: &[&str], flags: &[&str]) {
    std::fs::create_dir_all(out).expect("fixture dir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for f in names {
        let tmp = out.join(format!("{f}.{}.tmp", std::process::id()));
        let st = Command::new("gcc")
            .arg("-g")
            .args(flags)
            .arg("-o")
            .arg(&tmp)
            .arg(src.join(format!("{f}.c")))
            .status()
            .expect("run gcc");
        assert!(st.success(), "gcc {f}.c failed");
        std::fs::rename(&tmp, out.join(f)).expect("rename the fixture");
    }
}
