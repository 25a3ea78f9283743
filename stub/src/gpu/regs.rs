//! GPU register descriptions → our runtime [`RegisterInfo`] table, from
//! which the GPU session generates target.xml and `qRegisterInfo` (the
//! architecture is only known once the runtime is up: no compile-time
//! arch).

use gpu_target::model::Architecture;
use gpu_target::model::RegisterClass;
use gpu_target::model::RegisterDesc;

use crate::target::ArchInfo;
use crate::target::RegisterInfo;

/// target.xml vector types for per-lane registers (wave64 and wave32).
pub const XML_TYPES: &str = "<vector id=\"v64i32\" type=\"int32\" count=\"64\"/>\n\
<vector id=\"v64u32\" type=\"uint32\" count=\"64\"/>\n\
<vector id=\"v64f32\" type=\"ieee_single\" count=\"64\"/>\n\
<vector id=\"v32i32\" type=\"int32\" count=\"32\"/>\n\
<vector id=\"v32u32\" type=\"uint32\" count=\"32\"/>\n\
<vector id=\"v32f32\" type=\"ieee_single\" count=\"32\"/>\n";

/// (target.xml type, lldb encoding, lldb format) of a register with the
/// library's C type `c_type` (`int32_t[64]`, `uint64_t`, `void (*)()`,
/// `flags32_t status {...}`) and `size` bytes.
pub fn xml_type(c_type: &str, size: usize) -> (&'static str, &'static str, &'static str) {
    let lanes = c_type
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .and_then(|(n, _)| n.trim().parse::<usize>().ok());
    let float = c_type.starts_with("float");
    let unsigned = c_type.starts_with("uint");
    match lanes {
        Some(64) if float => ("v64f32", "vector", "vector-float32"),
        Some(64) if unsigned => ("v64u32", "vector", "vector-uint32"),
        Some(64) => ("v64i32", "vector", "vector-sint32"),
        Some(32) if float => ("v32f32", "vector", "vector-float32"),
        Some(32) if unsigned => ("v32u32", "vector", "vector-uint32"),
        Some(32) => ("v32i32", "vector", "vector-sint32"),
        _ if c_type.contains('(') => ("code_ptr", "uint", "hex"),
        _ if size == 8 => ("uint64", "uint", "hex"),
        _ if size == 4 => ("uint32", "uint", "hex"),
        _ if size == 2 => ("uint16", "uint", "hex"),
        _ => ("uint8", "uint", "hex"),
    }
}

/// Build the table from the backend's architecture registers (their
/// order is the register numbering; the backend makes the names unique:
/// AMD's gfx90a list names `s0`–`s101` twice).
pub fn table(regs: &[RegisterDesc]) -> Vec<RegisterInfo> {
    let mut out = Vec::with_capacity(regs.len());
    for (i, f) in regs.iter().enumerate() {
        let (ty, encoding, format) = xml_type(&f.type_name, f.size);
        let (feature, group) = match f.class {
            RegisterClass::System => ("org.gdbmux.amdgpu.system", "system"),
            RegisterClass::Vector => ("org.gdbmux.amdgpu.vector", "vector"),
            RegisterClass::Scalar => ("org.gdbmux.amdgpu.scalar", "general"),
        };
        let generic = match f.name.as_str() {
            "pc" => Some("pc"),
            _ => None,
        };
        out.push(RegisterInfo {
            name: f.name.clone(),
            bitsize: (f.size * 8) as u32,
            regnum: i as u32,
            dwarf: f.dwarf.and_then(|d| u32::try_from(d).ok()),
            generic,
            reg_type: ty.to_string(),
            feature: feature.to_string(),
            group: Some(group),
            in_g_packet: false,
            encoding,
            format,
        });
    }
    // Group features together (target.xml wants one block per feature),
    // keeping the library's numbering.
    out.sort_by(|a, b| a.feature.cmp(&b.feature).then(a.regnum.cmp(&b.regnum)));
    out
}

/// Architecture facts for the GPU session.
pub fn arch_info(arch: &Architecture) -> ArchInfo {
    ArchInfo {
        triple: format!("amdgpu-amd-amdhsa--{}", arch.name),
        gdb_arch: "amdgcn".to_string(),
        osabi: None,
        ptr_size: 8,
        xml_types: XML_TYPES.to_string(),
    }
}
