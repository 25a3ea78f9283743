//! An architecture's register table as a client shows it, from the
//! library's own register list.
//!
//! AMD's gfx90a list (amd-dbgapi 0.77, measured: 734 registers) names 102
//! registers twice: `s0`–`s101` with DWARF numbers, then `s0`–`s101` again
//! without (a second view of the same SGPR file). gdb and lldb address
//! registers by name, so every name after its first occurrence gets a
//! `_shadow` suffix (`s0_shadow`; `_shadow2`, ... if a name came three or
//! more times). Handles stay the library's: the same rule names a wave's
//! registers (see [`super::DbgApiBackend`]), so a name always means one
//! register.

use std::collections::HashMap;
use std::collections::HashSet;

use super::sys::DbgApi;
use super::sys::DbgApiError;
use super::sys::RegisterFacts;
use crate::model::RegisterClass;
use crate::model::RegisterDesc;

/// One register of an architecture with the name clients see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchRegister {
    /// The library's register handle.
    pub handle: u64,
    /// Unique name, size, C type, DWARF number and class.
    pub desc: RegisterDesc,
}

/// Names for `names` (in list order) that are unique: the first occurrence
/// keeps its name, later ones get `_shadow`, `_shadow2`, ... (skipping any
/// name the list already uses).
pub fn unique_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let names: Vec<&str> = names.into_iter().collect();
    let mut taken: HashSet<String> = names.iter().map(|n| n.to_string()).collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let count = seen.entry(n).or_insert(0);
        *count += 1;
        if *count == 1 {
            out.push(n.to_string());
            continue;
        }
        let mut k = *count - 1;
        let unique = loop {
            let candidate = if k == 1 {
                format!("{n}_shadow")
            } else {
                format!("{n}_shadow{k}")
            };
            if !taken.contains(&candidate) {
                break candidate;
            }
            k += 1;
        };
        taken.insert(unique.clone());
        out.push(unique);
    }
    out
}

/// The group of a register: per-lane arrays (`int32_t[64]`) are vector
/// registers; the PC and the hardware state words (`status`, `mode`,
/// `trapsts`, typed `flags32_t ...` by AMD's library) are system registers.
pub fn class_of(f: &RegisterFacts, pc_register: u64) -> RegisterClass {
    if f.handle == pc_register
        || f.type_name.starts_with("flags")
        || matches!(f.name.as_str(), "pc" | "status" | "mode" | "trapsts")
    {
        RegisterClass::System
    } else if f.type_name.contains('[') {
        RegisterClass::Vector
    } else {
        RegisterClass::Scalar
    }
}

/// The register table of architecture `arch` (a handle from
/// [`DbgApi::architecture`]), in the library's order, with unique names.
/// Works without a GPU: architecture queries need no agent.
pub fn architecture_registers(api: &DbgApi, arch: u64) -> Result<Vec<ArchRegister>, DbgApiError> {
    let pc = api.architecture_info(arch)?.pc_register;
    let facts = api
        .architecture_registers(arch)?
        .into_iter()
        .map(|r| api.register_info(r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(describe(&facts, pc))
}

/// [`ArchRegister`]s for `facts` (in list order).
pub fn describe(facts: &[RegisterFacts], pc_register: u64) -> Vec<ArchRegister> {
    let names = unique_names(facts.iter().map(|f| f.name.as_str()));
    facts
        .iter()
        .zip(names)
        .map(|(f, name)| ArchRegister {
            handle: f.handle,
            desc: RegisterDesc {
                name,
                size: f.size,
                type_name: f.type_name.clone(),
                dwarf: f.dwarf,
                class: class_of(f, pc_register),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_get_shadow_names() {
        let n = unique_names(["s0", "s1", "s0", "s1", "s0", "s0_shadow2", "pc"]);
        assert_eq!(
            n,
            [
                "s0",
                "s1",
                "s0_shadow",
                "s1_shadow",
                "s0_shadow3",
                "s0_shadow2",
                "pc"
            ]
        );
    }

    #[test]
    fn classes_by_type() {
        let f = |name: &str, ty: &str| RegisterFacts {
            handle: 1,
            name: name.into(),
            size: 4,
            type_name: ty.into(),
            dwarf: None,
        };
        assert_eq!(class_of(&f("vcc", "uint64_t"), 0), RegisterClass::Scalar);
        assert_eq!(class_of(&f("v0", "int32_t[64]"), 0), RegisterClass::Vector);
        assert_eq!(class_of(&f("a3", "int32_t[64]"), 0), RegisterClass::Vector);
        assert_eq!(
            class_of(&f("mode", "flags32_t mode { }"), 0),
            RegisterClass::System
        );
        assert_eq!(class_of(&f("x", "void (*)()"), 1), RegisterClass::System);
    }
}
