//! The GPU session's one register table for agents of several
//! architectures (issue 12), built from AMD's REAL register lists: gfx90a
//! (wave64 only, 734 registers) and gfx1030 (744 registers: wave64 and
//! wave32 views of the vector registers, a 32-bit `exec`, `vcc` and
//! `xnack_mask` beside the 64-bit ones, `s102`–`s105`). Registers equal in
//! name, size, type and DWARF number are one row; a register whose name is
//! taken by a different one gets `NAME_ARCH`; each architecture's names map
//! onto the table. Real libraries are in `$GDBMUX_REAL_DBGAPI_DIR` (skipped
//! by name without it).

use std::collections::HashSet;

use gpu_target::dbgapi::registers::architecture_registers;
use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::testing;
use gpu_target::model::RegisterDesc;
use stub::gpu::regs::table;
use stub::gpu::regs::RegisterUnion;

/// `EF_AMDGPU_MACH_AMDGCN_GFX1030`.
const MACH_GFX1030: u32 = 0x36;

fn list(api: &DbgApi, mach: u32) -> Vec<RegisterDesc> {
    let arch = api.architecture(mach).expect("architecture");
    architecture_registers(api, arch)
        .expect("register list")
        .into_iter()
        .map(|r| r.desc)
        .collect()
}

#[test]
fn union_of_real_gfx90a_and_gfx1030() {
    let Some(libs) = testing::real_libraries(
        "stub::gpu_register_union::union_of_real_gfx90a_and_gfx1030",
        &["0.77.0"],
    ) else {
        return;
    };
    let _g = testing::serial();
    let api = DbgApi::load(Some(&libs[0])).expect("load");
    let gfx90a = list(&api, gpu_target::sim::elf::EF_AMDGPU_MACH_GFX90A);
    let gfx1030 = list(&api, MACH_GFX1030);
    assert_eq!((gfx90a.len(), gfx1030.len()), (734, 744));
    let u = RegisterUnion::of(&[
        ("gfx90a".into(), gfx90a.clone()),
        ("gfx1030".into(), gfx1030.clone()),
    ]);
    let t = table(&u.descs);
    let names: HashSet<&str> = t.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), t.len(), "unique names");
    let nums: HashSet<u32> = t.iter().map(|r| r.regnum).collect();
    assert_eq!(nums.len(), t.len(), "unique numbers");
    let r = |n: &str| {
        t.iter()
            .find(|r| r.name == n)
            .unwrap_or_else(|| panic!("{n} in the table"))
    };
    // gfx90a's registers keep their names and numbers (the first agent's).
    for (i, d) in gfx90a.iter().enumerate() {
        assert_eq!(r(&d.name).regnum as usize, i, "{}", d.name);
    }
    // Shared: gfx1030's wave64 v0 equals gfx90a's.
    assert_eq!(
        (r("v0").bitsize, r("v0").reg_type.as_str()),
        (2048, "v64i32")
    );
    // Only gfx1030's: its wave32 view of v0 (named `v0_shadow` within
    // gfx1030, its second `v0`), s105, and the 32-bit exec, renamed.
    assert_eq!(
        (r("v0_shadow").bitsize, r("v0_shadow").reg_type.as_str()),
        (1024, "v32i32")
    );
    assert_eq!(r("s105").bitsize, 32);
    assert_eq!((r("exec_gfx1030").bitsize, r("exec").bitsize), (32, 64));
    assert_eq!(r("xnack_mask_gfx1030").bitsize, 32);
    // Each architecture's names map onto the table's.
    let mapped: Vec<String> = u.rename(&gfx1030).into_iter().map(|d| d.name).collect();
    for n in &mapped {
        assert!(names.contains(n.as_str()), "{n}");
    }
    assert!(mapped.contains(&"exec_gfx1030".to_string()));
    assert_eq!(
        u.rename(&gfx90a),
        gfx90a,
        "the first architecture is unchanged"
    );
    assert!(t.len() > 734 && t.len() < 734 + 744);
    eprintln!("union of real gfx90a and gfx1030: {} registers", t.len());
}
