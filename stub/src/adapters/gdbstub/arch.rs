//! Register layouts for gdbstub architectures.
//!
//! gdbstub describes a register file only through
//! `Registers::gdb_serialize` (a byte stream in `g` order); gdbmux needs a
//! [`RegisterInfo`] table to answer `p`, target.xml and `qRegisterInfo`.
//! [`AdapterArch`] supplies that table for a gdbstub `Arch`.

use ::gdbstub::arch::Arch;

use crate::target::ArchInfo;
use crate::target::RegisterInfo;

/// A gdbstub architecture with the register table gdbmux needs.
///
/// Contract: `register_infos()` lists every register that
/// `Registers::gdb_serialize` writes, in the same order, with
/// `in_g_packet = true` and `bitsize` equal to the bytes written × 8.
pub trait AdapterArch: Arch {
    /// Triple, gdb architecture name, pointer size.
    fn arch_info() -> ArchInfo;
    /// The `g`-order register table.
    fn register_infos() -> Vec<RegisterInfo>;
}

#[allow(clippy::too_many_arguments)]
fn reg(
    name: &str,
    bitsize: u32,
    regnum: u32,
    generic: Option<&'static str>,
    reg_type: &str,
    feature: &str,
    group: &'static str,
    encoding: &'static str,
    format: &'static str,
) -> RegisterInfo {
    RegisterInfo {
        name: name.to_string(),
        bitsize,
        regnum,
        dwarf: None,
        generic,
        reg_type: reg_type.to_string(),
        feature: feature.to_string(),
        group: Some(group),
        in_g_packet: true,
        encoding,
        format,
    }
}

/// ARMv4T as gdbstub_arch serializes it: r0–r12, sp, lr, pc, the eight
/// 96-bit FPA registers f0–f7 and fps (always "unavailable" in gdbstub,
/// zeros here), then cpsr — gdb's classic `arm-core` + `arm-fpa` layout,
/// 168 bytes.
impl AdapterArch for ::gdbstub_arch::arm::Armv4t {
    fn arch_info() -> ArchInfo {
        ArchInfo {
            triple: "armv4t-none-eabi".into(),
            gdb_arch: "armv4t".into(),
            osabi: None,
            ptr_size: 4,
            xml_types: String::new(),
        }
    }

    fn register_infos() -> Vec<RegisterInfo> {
        const CORE: &str = "org.gnu.gdb.arm.core";
        const FPA: &str = "org.gnu.gdb.arm.fpa";
        let mut v = Vec::with_capacity(26);
        for i in 0..13u32 {
            let generic = match i {
                0 => Some("arg1"),
                1 => Some("arg2"),
                2 => Some("arg3"),
                3 => Some("arg4"),
                11 => Some("fp"),
                _ => None,
            };
            let mut r = reg(
                &format!("r{i}"),
                32,
                i,
                generic,
                "uint32",
                CORE,
                "general",
                "uint",
                "hex",
            );
            r.dwarf = Some(i);
            v.push(r);
        }
        for (i, (name, generic, ty)) in [
            ("sp", "sp", "data_ptr"),
            ("lr", "ra", "code_ptr"),
            ("pc", "pc", "code_ptr"),
        ]
        .into_iter()
        .enumerate()
        {
            let n = 13 + i as u32;
            let mut r = reg(
                name,
                32,
                n,
                Some(generic),
                ty,
                CORE,
                "general",
                "uint",
                "hex",
            );
            r.dwarf = Some(n);
            v.push(r);
        }
        for i in 0..8u32 {
            v.push(reg(
                &format!("f{i}"),
                96,
                16 + i,
                None,
                "arm_fpa_ext",
                FPA,
                "float",
                "vector",
                "vector-uint8",
            ));
        }
        v.push(reg("fps", 32, 24, None, "int", FPA, "float", "uint", "hex"));
        v.push(reg(
            "cpsr",
            32,
            25,
            Some("flags"),
            "int",
            CORE,
            "general",
            "uint",
            "hex",
        ));
        v
    }
}
