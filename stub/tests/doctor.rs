//! `gdbmux doctor` against AMD's real amd-dbgapi 0.76.0 and 0.77.0 (from
//! `$GDBMUX_REAL_DBGAPI_DIR`; a `SKIPPED` line without them), the
//! simulated library, and a path with no library. This machine has no AMD
//! GPU: with a real library the doctor must say so (no agent, no
//! /dev/kfd) and exit 1 with the fix; with the simulated one it is ready.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use gpu_target::dbgapi::testing;

fn doctor(args: &[&str]) -> (i32, String) {
    doctor_with(args, &[])
}

/// `gdbmux doctor ARGS` with the environment `envs` added.
fn doctor_with(args: &[&str], envs: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gdbmux"))
        .arg("doctor")
        .args(args)
        .env_remove("GDBMUX_DBGAPI")
        .envs(envs.iter().copied())
        .output()
        .expect("run gdbmux doctor");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn real(version: &str, minor: u32) {
    let test = format!("stub::doctor::real_0_{minor}");
    let Some(libs) = testing::real_libraries(&test, &[version]) else {
        return;
    };
    let lib = libs[0].to_str().unwrap();
    let (code, out) = doctor(&["--dbgapi", lib]);
    assert!(
        out.contains(&format!(
            "[ok  ] library {lib} (--dbgapi): amd-dbgapi {version}, build {version}-"
        )),
        "{out}"
    );
    assert!(out.contains("all 35 bound functions resolve"), "{out}");
    let node = if minor == 76 {
        "process_get_info@0.56 (older node)"
    } else {
        "process_get_info@0.77"
    };
    assert!(out.contains(node), "{out}");
    assert!(out.contains("PTRACE_SEIZE of a child process"), "{out}");
    if Path::new("/dev/kfd").exists() {
        testing::skip(
            &test,
            "this machine has /dev/kfd: the no-GPU expectations do not apply",
        );
        return;
    }
    assert!(out.contains("[FAIL] agents: none"), "{out}");
    assert!(out.contains("[FAIL] /dev/kfd does not exist"), "{out}");
    assert!(
        out.contains("--device=/dev/kfd"),
        "the fix is named:\n{out}"
    );
    assert_eq!(code, 1, "{out}");
}

#[test]
fn real_0_76() {
    real("0.76.0", 76);
}

#[test]
fn real_0_77() {
    real("0.77.0", 77);
}

fn simulated_library() -> PathBuf {
    let sim = PathBuf::from(env!("CARGO_BIN_EXE_gdbmux"))
        .parent()
        .unwrap()
        .join("libsimgpu_dbgapi.so");
    assert!(sim.exists(), "build the workspace first: {}", sim.display());
    sim
}

/// Several agents (the simulated library's `SIMGPU_AGENTS`): each listed
/// with its own architecture; the one the library cannot debug is a
/// warning with the library's reason, not a failure.
#[test]
fn simulated_agents_of_which_one_is_unsupported() {
    let sim = simulated_library();
    let (_, out) = doctor_with(
        &["--dbgapi", sim.to_str().unwrap()],
        &[("SIMGPU_AGENTS", "gfx1036,gfx90a")],
    );
    let warn = out
        .lines()
        .find(|l| l.contains("gfx1036"))
        .unwrap_or_else(|| panic!("the gfx1036 agent is listed:\n{out}"));
    assert!(
        warn.contains("[warn]") && warn.contains("architecture not supported by this amd-dbgapi"),
        "{warn}\n{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("[ok") && l.ends_with("(gfx90a)")),
        "the gfx90a agent is usable:\n{out}"
    );
    assert!(!out.contains("no agent can be debugged"), "{out}");
}

#[test]
fn simulated_library_is_ready() {
    let sim = simulated_library();
    let (code, out) = doctor(&["--dbgapi", sim.to_str().unwrap()]);
    assert!(out.contains("build 0.77.0-simgpu"), "{out}");
    assert!(
        out.contains("(gfx90a)"),
        "the simulated agent is listed:\n{out}"
    );
    assert!(out.contains("/dev/kfd: not needed"), "{out}");
    if out.contains("[FAIL]") {
        // Only ptrace can fail here (e.g. a seccomp filter in CI).
        assert!(
            out.contains("PTRACE_SEIZE") || out.contains("ptrace_scope"),
            "{out}"
        );
        assert_eq!(code, 1);
    } else {
        assert!(out.contains("ready to debug AMD GPU programs"), "{out}");
        assert_eq!(code, 0, "{out}");
    }
}

#[test]
fn missing_library_fails_with_the_fix() {
    let (code, out) = doctor(&["--dbgapi", "/nonexistent/librocm-dbgapi.so.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[FAIL] library /nonexistent/librocm-dbgapi.so.0"),
        "{out}"
    );
    assert!(out.contains("fix: install ROCm's rocm-dbgapi"), "{out}");
    let (code, out) = doctor(&["--bogus"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("usage: gdbmux doctor"), "{out}");
}

/// ROCr beside the library: with its debugger hook symbol the doctor says
/// so; a stripped one (no hook) is fine when it exports
/// `hsa_executable_freeze` (the first offer's breakpoint), and gets a
/// warning with the fix when it does not. The three ROCr stand-ins are
/// real shared objects built here.
#[test]
fn rocr_hook_symbol_check() {
    let Some(libs) = testing::real_libraries("stub::doctor::rocr_hook_symbol_check", &["0.77.0"])
    else {
        return;
    };
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("doctor-rocr-{}", std::process::id()));
    for (dir, with_hook, exported) in [
        ("with", true, true),
        ("stripped", false, true),
        ("bare", false, false),
    ] {
        let dir = base.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("librocm-dbgapi.so.0");
        std::fs::copy(&libs[0], &lib).unwrap();
        let src = dir.join("rocr.c");
        let mut body = String::from("int hsa_init(void) { return 0; }\n");
        if with_hook {
            body += "void hook(void) __asm__(\"_ZN4rocr19_loader_debug_stateEv\");\nvoid hook(void) {}\n";
        }
        if exported {
            body += "int hsa_executable_freeze(void) { return 0; }\n";
        }
        std::fs::write(&src, body).unwrap();
        let st = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join("libhsa-runtime64.so.1"))
            .arg(&src)
            .status()
            .expect("cc");
        assert!(st.success());
        if !with_hook {
            let st = Command::new("strip")
                .arg(dir.join("libhsa-runtime64.so.1"))
                .status()
                .expect("strip");
            assert!(st.success());
        }
        let (_, out) = doctor(&["--dbgapi", lib.to_str().unwrap()]);
        if with_hook {
            assert!(
                out.contains("has the debugger hook _ZN4rocr19_loader_debug_stateEv"),
                "{out}"
            );
        } else if exported {
            // Stripped, but the exported API carries the first offer.
            let line = out
                .lines()
                .find(|l| l.contains("(stripped)"))
                .unwrap_or_else(|| panic!("{out}"));
            assert!(line.starts_with("[ok"), "{line}\n{out}");
            assert!(
                line.contains("through the exported hsa_executable_freeze"),
                "{out}"
            );
        } else {
            assert!(out.contains("[warn] ROCr"), "{out}");
            assert!(out.contains("(stripped)"), "{out}");
            assert!(out.contains("--gpu-hook FUNCTION"), "{out}");
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}
