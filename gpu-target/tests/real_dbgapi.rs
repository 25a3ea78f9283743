//! AMD's real amd-dbgapi libraries (0.76.0 and 0.77.0, built from AMD's
//! sources) loaded through the binding, on a machine with no GPU: the
//! library initializes, attaches to a process with its null driver, reports
//! 0 agents and answers architecture queries.
//!
//! The libraries live outside the repository, in `$GDBMUX_REAL_DBGAPI_DIR`;
//! without them each test prints a `SKIPPED` line and returns
//! ([`gpu_target::dbgapi::testing`]).

use std::path::PathBuf;
use std::process::Child;
use std::process::Command;

use std::collections::HashSet;

use gpu_target::dbgapi::registers;
use gpu_target::dbgapi::registers::ArchRegister;
use gpu_target::dbgapi::sys;
use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::testing;
use gpu_target::dbgapi::testing::serial;
use gpu_target::dbgapi::DbgApiBackend;
use gpu_target::model::AddressSpace;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::HostProcess;
use gpu_target::model::RegisterClass;

fn real_library(test: &str, version: &str) -> Option<PathBuf> {
    testing::real_libraries(&format!("gpu-target::real_dbgapi::{test}"), &[version])
        .map(|mut v| v.remove(0))
}

fn real_libraries(test: &str, versions: &[&str]) -> Option<Vec<PathBuf>> {
    testing::real_libraries(&format!("gpu-target::real_dbgapi::{test}"), versions)
}

struct Host {
    pid: i32,
}

impl HostProcess for Host {
    fn os_pid(&self) -> i32 {
        self.pid
    }
    fn insert_breakpoint(&mut self, _addr: u64, _id: BreakpointId) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("no host breakpoints in this test"))
    }
    fn remove_breakpoint(&mut self, _id: BreakpointId) -> Result<(), GpuError> {
        Err(GpuError::NotSupported("no host breakpoints in this test"))
    }
}

struct Inferior(Child);

impl Inferior {
    fn start() -> Self {
        Inferior(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("spawn sleep"),
        )
    }
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Inferior {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Load, version, build name, attach, OS id (per-version query number),
/// notifier, 0 agents, no events, detach, finalize.
fn load_and_attach(test: &str, version: &str, minor: u32) {
    let Some(lib) = real_library(test, version) else {
        return;
    };
    let _g = serial();
    let report = sys::inspect(&lib).expect("inspect");
    assert_eq!(report.version, (0, minor, 0));
    assert!(report.version_supported());
    assert!(
        report.build_name.starts_with(&format!("0.{minor}.0")),
        "{}",
        report.build_name
    );
    let missing: Vec<_> = report.missing().collect();
    assert!(missing.is_empty(), "unresolved: {missing:?}");
    let gi = report
        .symbols
        .iter()
        .find(|c| c.function == "process_get_info")
        .unwrap();
    assert_eq!(
        gi.resolved,
        Some(if minor == 76 { "0.56" } else { "0.77" }),
        "process_get_info resolves at this library's node"
    );

    let api = DbgApi::load(Some(&lib)).expect("load the real library");
    assert_eq!(api.version(), (0, minor, 0));
    assert_eq!(
        api.constants().process_info_os_id,
        if minor == 76 { 5 } else { 6 }
    );
    let child = Inferior::start();
    let process = api
        .attach(Box::new(Host { pid: child.pid() }))
        .expect("attach");
    assert_eq!(
        process.os_id().expect("PROCESS_INFO_OS_ID"),
        child.pid(),
        "the OS id query uses this version's number"
    );
    assert!(process.notifier().expect("notifier") >= 0);
    assert_eq!(process.agents().expect("agents"), Vec::<u64>::new());
    assert_eq!(process.next_event().expect("event"), None);
    drop(process);
    drop(api);
}

#[test]
fn real_0_76_loads_and_attaches() {
    load_and_attach("real_0_76_loads_and_attaches", "0.76.0", 76);
}

#[test]
fn real_0_77_loads_and_attaches() {
    load_and_attach("real_0_77_loads_and_attaches", "0.77.0", 77);
}

/// Both libraries, one after the other, in one process: finalize releases
/// the one-library-per-process guard.
#[test]
fn both_real_libraries_in_turn() {
    let test = "both_real_libraries_in_turn";
    let Some(libs) = real_libraries(test, &["0.76.0", "0.77.0"]) else {
        return;
    };
    let _g = serial();
    for (lib, minor) in libs.into_iter().zip([76, 77]) {
        let api = DbgApi::load(Some(&lib)).expect("load");
        assert_eq!(api.version(), (0, minor, 0));
        let child = Inferior::start();
        let p = api.attach(Box::new(Host { pid: child.pid() })).unwrap();
        assert_eq!(p.os_id().unwrap(), child.pid());
    }
}

/// The real gfx90a register list, without a GPU: 734 registers, `s0`–`s101`
/// listed twice (the second time without DWARF numbers); the table clients
/// see has unique names, the library's sizes and types, and groups by type.
fn gfx90a_table(test: &str, version: &str) {
    let Some(lib) = real_library(test, version) else {
        return;
    };
    let _g = serial();
    let api = DbgApi::load(Some(&lib)).expect("load");
    let arch = api
        .architecture(gpu_target::sim::elf::EF_AMDGPU_MACH_GFX90A)
        .expect("get_architecture(gfx90a) works with no GPU");
    let facts = api.architecture_info(arch).unwrap();
    assert_eq!(facts.name, "gfx90a");
    assert_eq!(facts.breakpoint_instruction.len(), 4);
    let raw = api.architecture_registers(arch).unwrap();
    assert_eq!(raw.len(), 734, "AMD's gfx90a list");
    let table = registers::architecture_registers(&api, arch).unwrap();
    assert_eq!(table.len(), 734);
    let names: HashSet<&str> = table.iter().map(|r| r.desc.name.as_str()).collect();
    assert_eq!(names.len(), 734, "every name shown to clients is unique");
    let by_name = |n: &str| {
        table
            .iter()
            .find(|r| r.desc.name == n)
            .unwrap_or_else(|| panic!("no {n}"))
    };
    let shadows: Vec<&ArchRegister> = table
        .iter()
        .filter(|r| r.desc.name.ends_with("_shadow"))
        .collect();
    assert_eq!(shadows.len(), 102, "s0..s101 appear twice");
    assert!(shadows
        .iter()
        .all(|r| r.desc.dwarf.is_none() && r.desc.size == 4));
    assert_ne!(by_name("s0").handle, by_name("s0_shadow").handle);
    assert_eq!(by_name("s0").desc.dwarf, Some(32));
    assert_eq!(by_name("s101").desc.dwarf, Some(1125));
    let v0 = &by_name("v0").desc;
    assert_eq!(
        (v0.size, v0.type_name.as_str(), v0.dwarf),
        (256, "int32_t[64]", Some(2560))
    );
    assert_eq!(v0.class, RegisterClass::Vector);
    assert_eq!(by_name("a0").desc.class, RegisterClass::Vector);
    let pc = by_name("pc");
    assert_eq!(pc.handle, facts.pc_register);
    assert_eq!((pc.desc.size, pc.desc.class), (8, RegisterClass::System));
    assert_eq!(by_name("status").desc.class, RegisterClass::System);
    assert!(by_name("trapsts").desc.type_name.starts_with("flags32_t"));
    let vcc = &by_name("vcc").desc;
    assert_eq!(
        (vcc.size, vcc.class, vcc.dwarf),
        (8, RegisterClass::Scalar, Some(768))
    );
    assert_eq!(by_name("exec").desc.dwarf, Some(17));
}

#[test]
fn real_0_76_gfx90a_register_table() {
    gfx90a_table("real_0_76_gfx90a_register_table", "0.76.0");
}

#[test]
fn real_0_77_gfx90a_register_table() {
    gfx90a_table("real_0_77_gfx90a_register_table", "0.77.0");
}

/// The backend with 0 agents: no architecture is assumed, agents are an
/// empty list, and memory without a wave says there is no agent.
#[test]
fn real_0_77_backend_with_no_agents() {
    let Some(lib) = real_library("real_0_77_backend_with_no_agents", "0.77.0") else {
        return;
    };
    let _g = serial();
    let api = DbgApi::load(Some(&lib)).unwrap();
    let child = Inferior::start();
    let mut b = DbgApiBackend::attach(&api, Box::new(Host { pid: child.pid() })).unwrap();
    assert_eq!(b.agents().unwrap(), vec![]);
    assert_eq!(b.waves().unwrap(), vec![]);
    let mut buf = [0u8; 4];
    let e = b
        .read_memory(AddressSpace::Global, None, 0x1000, &mut buf)
        .unwrap_err();
    assert!(e.to_string().contains("no GPU agent"), "{e}");
}
