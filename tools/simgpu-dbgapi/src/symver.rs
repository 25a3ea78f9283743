//! ELF symbol versions of the exports. Each C symbol `amd_dbgapi_<f>` is a
//! small assembly entry that jumps to the Rust function and carries its
//! version node with `.symver` (`<f>@@AMD_DBGAPI_<v>`); the nodes are
//! declared in `exports.map` (see build.rs). A test keeps this list equal to
//! `gpu_target::dbgapi::abi::SYMBOL_VERSIONS`.

macro_rules! export {
    ($f:ident, $v:literal) => {
        std::arch::global_asm!(
            concat!(".globl __simgpu_", stringify!($f)),
            concat!(".type __simgpu_", stringify!($f), ",@function"),
            concat!("__simgpu_", stringify!($f), ":"),
            "jmp {target}",
            concat!(".size __simgpu_", stringify!($f), ", . - __simgpu_", stringify!($f)),
            concat!(
                ".symver __simgpu_", stringify!($f), ", amd_dbgapi_", stringify!($f),
                "@@AMD_DBGAPI_", $v
            ),
            target = sym crate::ffi::exports::$f,
        );
    };
}

export!(address_is_in_address_class, "0.54");
export!(architecture_address_class_list, "0.54");
export!(architecture_address_space_list, "0.54");
export!(architecture_get_info, "0.54");
export!(architecture_register_class_get_info, "0.54");
export!(architecture_register_class_list, "0.54");
export!(architecture_register_list, "0.54");
export!(breakpoint_get_info, "0.54");
export!(code_object_get_info, "0.54");
export!(disassemble_instruction, "0.54");
export!(dispatch_get_info, "0.54");
export!(displaced_stepping_get_info, "0.54");
export!(dwarf_address_class_to_address_class, "0.54");
export!(dwarf_address_space_to_address_space, "0.54");
export!(dwarf_register_to_register, "0.54");
export!(event_get_info, "0.54");
export!(event_processed, "0.54");
export!(finalize, "0.54");
export!(get_architecture, "0.54");
export!(get_build_name, "0.54");
export!(get_status_string, "0.54");
export!(get_version, "0.54");
export!(process_agent_list, "0.54");
export!(process_code_object_list, "0.54");
export!(process_detach, "0.54");
export!(process_dispatch_list, "0.54");
export!(process_next_pending_event, "0.54");
export!(process_queue_list, "0.54");
export!(process_wave_list, "0.54");
export!(queue_packet_list, "0.54");
export!(read_memory, "0.54");
export!(register_is_in_register_class, "0.54");
export!(report_breakpoint_hit, "0.54");
export!(set_log_level, "0.54");
export!(set_memory_precision, "0.54");
export!(wave_register_exists, "0.54");
export!(wave_register_list, "0.54");
export!(process_attach, "0.56");
export!(classify_instruction, "0.58");
export!(address_class_get_info, "0.62");
export!(address_space_get_info, "0.62");
export!(convert_address_space, "0.62");
export!(prefetch_register, "0.62");
export!(read_register, "0.62");
export!(watchpoint_get_info, "0.62");
export!(address_dependency, "0.64");
export!(process_workgroup_list, "0.64");
export!(wave_get_info, "0.64");
export!(workgroup_get_info, "0.64");
export!(agent_get_info, "0.67");
export!(queue_get_info, "0.68");
export!(register_get_info, "0.70");
export!(displaced_stepping_complete, "0.76");
export!(displaced_stepping_start, "0.76");
export!(initialize, "0.76");
export!(process_freeze, "0.76");
export!(process_set_progress, "0.76");
export!(process_set_wave_creation, "0.76");
export!(process_unfreeze, "0.76");
export!(remove_watchpoint, "0.76");
export!(set_watchpoint, "0.76");
export!(wave_resume, "0.76");
export!(wave_stop, "0.76");
export!(write_memory, "0.76");
export!(write_register, "0.76");
export!(process_get_info, "0.77");
export!(set_alu_exceptions_precision, "0.77");
