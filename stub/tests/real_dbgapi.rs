//! gdbmux with AMD's real amd-dbgapi (0.76.0 and 0.77.0, from
//! `$GDBMUX_REAL_DBGAPI_DIR`) on a machine without a GPU: stock gdb 13 and
//! stock lldb 23.1 debug a CPU program to its exit through it, and
//! `monitor gpu` names the library and says there is no agent. The GPU
//! target description is built from the real gfx90a register list.
//! Without the libraries each test prints a `SKIPPED` line
//! (`gpu_target::dbgapi::testing`).

mod gpu_support;
mod harden_support;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use gpu_support::run_with_timeout;
use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::testing;
use gpu_target::model::Architecture;
use harden_support::Gdbmux;

fn real_library(test: &str, version: &str) -> Option<std::path::PathBuf> {
    testing::real_libraries(&format!("stub::real_dbgapi::{test}"), &[version])
        .map(|mut v| v.remove(0))
}

fn serve(lib: &Path) -> Gdbmux {
    let lib = lib.to_str().expect("utf-8 path");
    Gdbmux::start(&[
        "--dbgapi",
        lib,
        "127.0.0.1:0",
        "--",
        "/bin/sh",
        "-c",
        "echo real-dbgapi-run; exit 7",
    ])
}

fn check_monitor(out: &str, version: &str) {
    assert!(
        out.contains(&format!("(amd-dbgapi {version})")),
        "monitor gpu names the library:\n{out}"
    );
    assert!(
        out.contains(stub::gpu::NO_AGENTS),
        "monitor gpu says there is no agent:\n{out}"
    );
    assert!(
        !out.contains("gfx90a"),
        "no architecture is assumed:\n{out}"
    );
    assert!(
        out.contains("GPU runtime: not seen yet"),
        "monitor gpu shows the runtime state:\n{out}"
    );
}

fn gdb_runs_to_exit(test: &str, version: &str) {
    let Some(lib) = real_library(test, version) else {
        return;
    };
    let g = serve(&lib);
    let out = run_with_timeout(
        Command::new("gdb").args([
            "-batch",
            "-nx",
            "-ex",
            &format!("target remote {}", g.addr),
            "-ex",
            "monitor gpu",
            "-ex",
            "continue",
            "/bin/sh",
        ]),
        120,
    );
    check_monitor(&out, version);
    assert!(
        out.contains("exited with code 07"),
        "gdb sees the exit:\n{out}\n{}",
        g.log()
    );
}

fn lldb_runs_to_exit(test: &str, version: &str) {
    let Some(lib) = real_library(test, version) else {
        return;
    };
    let g = serve(&lib);
    let out = run_with_timeout(
        Command::new("lldb").args([
            "-b",
            "-o",
            "settings set stop-disassembly-display never",
            "-o",
            &format!("gdb-remote {}", g.addr),
            "-o",
            "process plugin packet monitor gpu",
            "-o",
            "continue",
            "/bin/sh",
        ]),
        120,
    );
    check_monitor(&out, version);
    assert!(
        out.contains("exited with status = 7"),
        "lldb sees the exit:\n{out}\n{}",
        g.log()
    );
}

#[test]
fn gdb_with_real_0_76() {
    gdb_runs_to_exit("gdb_with_real_0_76", "0.76.0");
}

#[test]
fn gdb_with_real_0_77() {
    gdb_runs_to_exit("gdb_with_real_0_77", "0.77.0");
}

#[test]
fn lldb_with_real_0_76() {
    lldb_runs_to_exit("lldb_with_real_0_76", "0.76.0");
}

#[test]
fn lldb_with_real_0_77() {
    lldb_runs_to_exit("lldb_with_real_0_77", "0.77.0");
}

/// The GPU session's register table (target.xml / qRegisterInfo rows) from
/// the real gfx90a list: unique names, the library's sizes, vector types
/// for per-lane registers, the PC as the generic pc.
#[test]
fn gpu_register_table_from_real_gfx90a() {
    for version in testing::REAL_VERSIONS {
        let Some(lib) = real_library("gpu_register_table_from_real_gfx90a", version) else {
            return;
        };
        let _g = testing::serial();
        let api = DbgApi::load(Some(&lib)).expect("load");
        let handle = api
            .architecture(gpu_target::sim::elf::EF_AMDGPU_MACH_GFX90A)
            .unwrap();
        let facts = api.architecture_info(handle).unwrap();
        let arch = Architecture {
            name: facts.name,
            elf_machine: facts.elf_machine,
            breakpoint_instruction: facts.breakpoint_instruction,
            breakpoint_pc_adjust: facts.breakpoint_pc_adjust,
            largest_instruction_size: facts.largest_instruction_size,
        };
        let descs: Vec<_> = gpu_target::dbgapi::registers::architecture_registers(&api, handle)
            .expect("register list")
            .into_iter()
            .map(|r| r.desc)
            .collect();
        let table = stub::gpu::regs::table(&descs);
        assert_eq!(table.len(), 734, "{version}");
        let names: HashSet<&str> = table.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names.len(), 734, "{version}: unique names");
        let nums: HashSet<u32> = table.iter().map(|r| r.regnum).collect();
        assert_eq!(nums.len(), 734);
        assert_eq!(*nums.iter().max().unwrap(), 733);
        let r = |n: &str| table.iter().find(|r| r.name == n).unwrap();
        assert_eq!(
            (r("v0").bitsize, r("v0").reg_type.as_str(), r("v0").format),
            (2048, "v64i32", "vector-sint32")
        );
        assert_eq!(r("v0").feature, "org.gdbmux.amdgpu.vector");
        assert_eq!(r("a255").bitsize, 2048);
        assert_eq!((r("s5").bitsize, r("s5").dwarf), (32, Some(37)));
        assert_eq!((r("s5_shadow").bitsize, r("s5_shadow").dwarf), (32, None));
        assert_eq!(r("pc").generic, Some("pc"));
        assert_eq!(
            (r("pc").bitsize, r("pc").reg_type.as_str()),
            (64, "code_ptr")
        );
        assert_eq!(r("status").feature, "org.gdbmux.amdgpu.system");
        assert_eq!(r("mode").reg_type, "uint32");
        assert_eq!(
            (r("vcc").bitsize, r("vcc").feature.as_str()),
            (64, "org.gdbmux.amdgpu.scalar")
        );
        let ai = stub::gpu::regs::arch_info(&arch);
        assert_eq!(ai.triple, "amdgpu-amd-amdhsa--gfx90a");
    }
}
