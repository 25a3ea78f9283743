//! What differs between the amd-dbgapi 0.x libraries the binding accepts
//! (0.76 and newer): the ELF version node each bound function is exported
//! at, and the numbering of some `*_get_info` queries.
//!
//! Facts, from `nm -D --with-symbol-versions` on AMD's builds and their
//! configured headers:
//! - 0.77 (ROCm 6.3+) exports `amd_dbgapi_process_get_info@@AMD_DBGAPI_0.77`;
//!   0.76 (ROCm 6.2) exports it `@@AMD_DBGAPI_0.56`, with the same C
//!   signature. Every other bound function has the same node in both.
//! - `amd_dbgapi_process_info_t`: 0.77 inserted
//!   `PRECISE_ALU_EXCEPTIONS_SUPPORTED = 5`, moving `OS_ID` from 5 to 6.
//!
//! [`abi::SYMBOL_VERSIONS`] stays the 0.77 export map (the simulated library
//! exports it); the older nodes are fallbacks tried after it.

use super::abi;

/// Older version nodes of functions whose node changed, newest first, after
/// the [`abi::SYMBOL_VERSIONS`] node.
const NODES: &[(&str, &[&str])] = &[("process_get_info", &["0.77", "0.56"])];

/// The version nodes `func` (without `amd_dbgapi_`) is looked up at, newest
/// first.
pub fn version_nodes(func: &str) -> &'static [&'static str] {
    if let Some((_, nodes)) = NODES.iter().find(|(f, _)| *f == func) {
        return nodes;
    }
    match abi::SYMBOL_VERSIONS.iter().find(|(f, _)| *f == func) {
        Some(entry) => std::slice::from_ref(&entry.1),
        None => &["0.54"],
    }
}

/// Whether the binding supports a library of this version: 0.x from 0.76
/// (the 7-callback `amd_dbgapi_callbacks_t` of ROCm 6.2+).
pub fn supported(version: (u32, u32, u32)) -> bool {
    version.0 == 0 && version.1 >= 76
}

/// Query numbers that depend on the library version.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AbiConstants {
    /// `AMD_DBGAPI_PROCESS_INFO_OS_ID`.
    pub process_info_os_id: i32,
    /// `AMD_DBGAPI_PROCESS_INFO_PRECISE_ALU_EXCEPTIONS_SUPPORTED` (0.77+).
    pub process_info_precise_alu_exceptions: Option<i32>,
}

impl AbiConstants {
    /// The constants of library version `version` (one [`supported`]).
    pub fn for_version(version: (u32, u32, u32)) -> Self {
        if version.1 <= 76 {
            Self {
                process_info_os_id: abi::info::process::OS_ID_V076,
                process_info_precise_alu_exceptions: None,
            }
        } else {
            Self {
                process_info_os_id: abi::info::process::OS_ID,
                process_info_precise_alu_exceptions: Some(
                    abi::info::process::PRECISE_ALU_EXCEPTIONS_SUPPORTED,
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_get_info_falls_back_to_the_0_76_node() {
        assert_eq!(version_nodes("process_get_info"), &["0.77", "0.56"]);
        assert_eq!(version_nodes("wave_stop"), &["0.76"]);
        assert_eq!(version_nodes("get_version"), &["0.54"]);
    }

    #[test]
    fn version_gate_and_constants() {
        assert!(!supported((0, 75, 0)));
        assert!(supported((0, 76, 0)));
        assert!(supported((0, 78, 1)));
        assert!(!supported((1, 0, 0)));
        assert_eq!(AbiConstants::for_version((0, 76, 0)).process_info_os_id, 5);
        assert_eq!(AbiConstants::for_version((0, 77, 0)).process_info_os_id, 6);
        assert_eq!(
            AbiConstants::for_version((0, 77, 0)).process_info_precise_alu_exceptions,
            Some(5)
        );
    }
}
