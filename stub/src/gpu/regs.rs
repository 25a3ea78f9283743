//! GPU register descriptions → our runtime [`RegisterInfo`] table, from
//! which the GPU session generates target.xml and `qRegisterInfo` (the
//! architecture is only known once the runtime is up: no compile-time
//! arch).

use std::collections::HashMap;
use std::collections::HashSet;

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

/// What makes two registers of different architectures the same row of
/// the served table: name, size, C type and DWARF number.
type RegKey = (String, usize, String, Option<u64>);

fn key_of(d: &RegisterDesc) -> RegKey {
    (d.name.clone(), d.size, d.type_name.clone(), d.dwarf)
}

/// The one register table served for agents of several architectures
/// (lldb 23.1 keeps one register table per process, gdb 13 one target
/// description), and how each architecture's registers are named in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegisterUnion {
    /// The union, in order: the first architecture's registers, then each
    /// later architecture's registers the table does not have yet.
    pub descs: Vec<RegisterDesc>,
    /// (name, size, type, DWARF) of an architecture's register → its name
    /// in [`Self::descs`] (absent: the same name).
    renamed: HashMap<RegKey, String>,
}

impl RegisterUnion {
    /// The union of `archs` (name, register list), in the order given.
    ///
    /// A register equal in name, size, C type and DWARF number to one
    /// already in the table is that row. One whose name is taken by a
    /// different register (another size or type, as a wave32
    /// architecture's `v0` beside a wave64 one's) gets the distinct name
    /// `NAME_ARCH` (`v0_gfx1030`; `NAME_ARCH_2`, ... if that is taken too).
    pub fn of(archs: &[(String, Vec<RegisterDesc>)]) -> RegisterUnion {
        let mut u = RegisterUnion::default();
        let mut rows: HashMap<RegKey, usize> = HashMap::new();
        let mut names: HashSet<String> = HashSet::new();
        for (arch, regs) in archs {
            for d in regs {
                let key = key_of(d);
                if rows.contains_key(&key) {
                    continue;
                }
                let mut row = d.clone();
                if names.contains(&d.name) {
                    let base = format!("{}_{arch}", d.name);
                    let mut name = base.clone();
                    let mut k = 2;
                    while names.contains(&name) {
                        name = format!("{base}_{k}");
                        k += 1;
                    }
                    u.renamed.insert(key.clone(), name.clone());
                    row.name = name;
                }
                names.insert(row.name.clone());
                rows.insert(key, u.descs.len());
                u.descs.push(row);
            }
        }
        u
    }

    /// A wave's register list (its architecture's names) with the names
    /// the table gives them.
    pub fn rename(&self, descs: &[RegisterDesc]) -> Vec<RegisterDesc> {
        descs
            .iter()
            .map(|d| match self.renamed.get(&key_of(d)) {
                Some(n) => RegisterDesc {
                    name: n.clone(),
                    ..d.clone()
                },
                None => d.clone(),
            })
            .collect()
    }

    /// Whether some architecture's registers were renamed.
    pub fn has_renames(&self) -> bool {
        !self.renamed.is_empty()
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_target::model::RegisterClass;

    fn d(name: &str, size: usize, ty: &str, dwarf: Option<u64>) -> RegisterDesc {
        RegisterDesc {
            name: name.into(),
            size,
            type_name: ty.into(),
            dwarf,
            class: RegisterClass::Scalar,
        }
    }

    #[test]
    fn equal_registers_are_shared_and_different_ones_renamed() {
        let a = vec![
            d("v0", 256, "int32_t[64]", Some(2560)),
            d("exec", 8, "uint64_t", Some(17)),
            d("a0", 256, "int32_t[64]", Some(3072)),
        ];
        let b = vec![
            d("v0", 128, "int32_t[32]", Some(2560)),
            d("exec", 8, "uint64_t", Some(17)),
            d("s105", 4, "int32_t", Some(1129)),
        ];
        let u = RegisterUnion::of(&[("gfx90a".into(), a.clone()), ("gfx1030".into(), b.clone())]);
        let names: Vec<&str> = u.descs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["v0", "exec", "a0", "v0_gfx1030", "s105"]);
        assert!(u.has_renames());
        let first: Vec<String> = u.rename(&a).into_iter().map(|r| r.name).collect();
        assert_eq!(first, ["v0", "exec", "a0"]);
        let second: Vec<String> = u.rename(&b).into_iter().map(|r| r.name).collect();
        assert_eq!(second, ["v0_gfx1030", "exec", "s105"]);
        // The table numbers the rows in union order.
        let t = table(&u.descs);
        let v0b = t.iter().find(|r| r.name == "v0_gfx1030").unwrap();
        assert_eq!(
            (v0b.regnum, v0b.bitsize, v0b.reg_type.as_str()),
            (3, 1024, "v32i32")
        );
    }

    #[test]
    fn identical_architectures_serve_one_table() {
        let a = vec![
            d("v0", 256, "int32_t[64]", Some(2560)),
            d("pc", 8, "void (*)()", Some(16)),
        ];
        let u = RegisterUnion::of(&[("gfx908".into(), a.clone()), ("gfx90a".into(), a.clone())]);
        assert_eq!(u.descs, a);
        assert!(!u.has_renames());
    }

    #[test]
    fn a_taken_distinct_name_gets_a_number() {
        let a = vec![d("x", 4, "uint32_t", None), d("x_g2", 8, "uint64_t", None)];
        let b = vec![d("x", 2, "uint16_t", None)];
        let c = vec![d("x", 1, "uint8_t", None)];
        let u = RegisterUnion::of(&[("g1".into(), a), ("g2".into(), b), ("g2".into(), c)]);
        let names: Vec<&str> = u.descs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["x", "x_g2", "x_g2_2", "x_g2_3"]);
    }
}
