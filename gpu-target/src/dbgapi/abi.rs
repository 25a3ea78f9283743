//! The amd-dbgapi C ABI (0.76/0.77): handle and callback layouts, status
//! codes, enum values and function signatures. One definition shared by the
//! client binding ([`super::sys`]) and the simulated library
//! (`tools/simgpu-dbgapi`), so the two cannot drift apart.
//!
//! Enums are plain `i32`/`u32` constants, never Rust enums: a newer library
//! may return values we do not know. Numbers come from `amd-dbgapi.h` (see
//! research/amd-dbgapi.md §2).
#![allow(missing_docs)]

use std::ffi::c_char;
use std::ffi::c_void;

/// `amd_dbgapi_status_t`.
pub type Status = i32;
/// Every `amd_dbgapi_<x>_id_t` is `struct { uint64_t handle; }`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    pub handle: u64,
}

impl Handle {
    pub const NONE: Self = Self { handle: 0 };
    pub const fn new(handle: u64) -> Self {
        Self { handle }
    }
}

/// `AMD_DBGAPI_ADDRESS_SPACE_GLOBAL`.
pub const ADDRESS_SPACE_GLOBAL: Handle = Handle { handle: 1 };
/// `AMD_DBGAPI_LANE_NONE`.
pub const LANE_NONE: u32 = u32::MAX;

pub mod status {
    pub const SUCCESS: i32 = 0;
    pub const ERROR: i32 = -1;
    pub const FATAL: i32 = -2;
    pub const ERROR_NOT_IMPLEMENTED: i32 = -3;
    pub const ERROR_NOT_AVAILABLE: i32 = -4;
    pub const ERROR_NOT_SUPPORTED: i32 = -5;
    pub const ERROR_INVALID_ARGUMENT: i32 = -6;
    pub const ERROR_INVALID_ARGUMENT_COMPATIBILITY: i32 = -7;
    pub const ERROR_ALREADY_INITIALIZED: i32 = -8;
    pub const ERROR_NOT_INITIALIZED: i32 = -9;
    pub const ERROR_RESTRICTION: i32 = -10;
    pub const ERROR_ALREADY_ATTACHED: i32 = -11;
    pub const ERROR_INVALID_ARCHITECTURE_ID: i32 = -12;
    pub const ERROR_ILLEGAL_INSTRUCTION: i32 = -13;
    pub const ERROR_INVALID_CODE_OBJECT_ID: i32 = -14;
    pub const ERROR_INVALID_ELF_AMDGPU_MACHINE: i32 = -15;
    pub const ERROR_INVALID_PROCESS_ID: i32 = -16;
    pub const ERROR_PROCESS_EXITED: i32 = -17;
    pub const ERROR_INVALID_AGENT_ID: i32 = -18;
    pub const ERROR_INVALID_QUEUE_ID: i32 = -19;
    pub const ERROR_INVALID_DISPATCH_ID: i32 = -20;
    pub const ERROR_INVALID_WAVE_ID: i32 = -21;
    pub const ERROR_WAVE_NOT_STOPPED: i32 = -22;
    pub const ERROR_WAVE_STOPPED: i32 = -23;
    pub const ERROR_WAVE_OUTSTANDING_STOP: i32 = -24;
    pub const ERROR_WAVE_NOT_RESUMABLE: i32 = -25;
    pub const ERROR_INVALID_REGISTER_ID: i32 = -33;
    pub const ERROR_INVALID_LANE_ID: i32 = -34;
    pub const ERROR_INVALID_ADDRESS_SPACE_ID: i32 = -36;
    pub const ERROR_MEMORY_ACCESS: i32 = -37;
    pub const ERROR_INVALID_EVENT_ID: i32 = -39;
    pub const ERROR_INVALID_BREAKPOINT_ID: i32 = -40;
    pub const ERROR_CLIENT_CALLBACK: i32 = -41;
    pub const ERROR_INVALID_CLIENT_PROCESS_ID: i32 = -42;
    pub const ERROR_SYMBOL_NOT_FOUND: i32 = -43;
    pub const ERROR_REGISTER_NOT_AVAILABLE: i32 = -44;
    pub const ERROR_INVALID_WORKGROUP_ID: i32 = -45;
    pub const ERROR_INCOMPATIBLE_PROCESS_STATE: i32 = -46;
    pub const ERROR_INVALID_DISPLACED_STEPPING_ID: i32 = -26;
    pub const ERROR_DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE: i32 = -27;
    pub const ERROR_DISPLACED_STEPPING_ACTIVE: i32 = -28;
    pub const ERROR_RESUME_DISPLACED_STEPPING: i32 = -29;
    pub const ERROR_INVALID_WATCHPOINT_ID: i32 = -30;
    pub const ERROR_NO_WATCHPOINT_AVAILABLE: i32 = -31;
    pub const ERROR_INVALID_REGISTER_CLASS_ID: i32 = -32;
    pub const ERROR_INVALID_ADDRESS_CLASS_ID: i32 = -35;
    pub const ERROR_INVALID_ADDRESS_SPACE_CONVERSION: i32 = -38;
    pub const ERROR_PROCESS_FROZEN: i32 = -47;
    pub const ERROR_PROCESS_ALREADY_FROZEN: i32 = -48;
    pub const ERROR_PROCESS_NOT_FROZEN: i32 = -49;

    /// English text for a status (what `get_status_string` returns): AMD's
    /// library 0.77's texts, word for word (clients may show them).
    pub fn text(s: i32) -> &'static str {
        match s {
            SUCCESS => "The function has executed successfully",
            ERROR => "A generic error has occurred",
            FATAL => "A fatal error has occurred",
            ERROR_NOT_IMPLEMENTED => "The operation is not currently implemented",
            ERROR_NOT_AVAILABLE => "The requested information is not available",
            ERROR_NOT_SUPPORTED => "The operation is not supported",
            ERROR_INVALID_ARGUMENT => "An invalid argument was given to the function",
            ERROR_INVALID_ARGUMENT_COMPATIBILITY => "An invalid combination of arguments was given to the function",
            ERROR_ALREADY_INITIALIZED => "The library is already initialized",
            ERROR_NOT_INITIALIZED => "The library is not initialized",
            ERROR_RESTRICTION => "There is a restriction that prevents debugging",
            ERROR_ALREADY_ATTACHED => "The process is already attached to the given inferior process",
            ERROR_INVALID_ARCHITECTURE_ID => "The architecture handle is invalid",
            ERROR_ILLEGAL_INSTRUCTION => "The bytes being disassembled are not a legal instruction",
            ERROR_INVALID_CODE_OBJECT_ID => "The code object handle is invalid",
            ERROR_INVALID_ELF_AMDGPU_MACHINE => "The ELF AMD GPU machine value is invalid or unsupported",
            ERROR_INVALID_PROCESS_ID => "The process handle is invalid",
            ERROR_PROCESS_EXITED => "The native operating system process associated with a client process has exited",
            ERROR_INVALID_AGENT_ID => "The agent handle is invalid",
            ERROR_INVALID_QUEUE_ID => "The queue handle is invalid",
            ERROR_INVALID_DISPATCH_ID => "The dispatch handle is invalid",
            ERROR_INVALID_WAVE_ID => "The wave handle is invalid",
            ERROR_WAVE_NOT_STOPPED => "The wave is not stopped",
            ERROR_WAVE_STOPPED => "The wave is stopped",
            ERROR_WAVE_OUTSTANDING_STOP => "The wave has an outstanding stop request",
            ERROR_WAVE_NOT_RESUMABLE => "The wave cannot be resumed",
            ERROR_INVALID_DISPLACED_STEPPING_ID => "The displaced stepping handle is invalid",
            ERROR_DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE => "No more displaced stepping buffers are available that are suitable for the requested wave",
            ERROR_DISPLACED_STEPPING_ACTIVE => "The wave has an active displaced stepping buffer",
            ERROR_RESUME_DISPLACED_STEPPING => "The wave cannot be resumed in the manner requested due to displaced stepping restrictions.",
            ERROR_INVALID_WATCHPOINT_ID => "The watchpoint handle is invalid",
            ERROR_NO_WATCHPOINT_AVAILABLE => "No more watchpoints available",
            ERROR_INVALID_REGISTER_CLASS_ID => "The register class handle is invalid",
            ERROR_INVALID_REGISTER_ID => "The register handle is invalid",
            ERROR_INVALID_LANE_ID => "The lane handle is invalid",
            ERROR_INVALID_ADDRESS_CLASS_ID => "The address class handle is invalid",
            ERROR_INVALID_ADDRESS_SPACE_ID => "The address space handle is invalid",
            ERROR_MEMORY_ACCESS => "An error occurred while trying to access memory in the inferior",
            ERROR_INVALID_ADDRESS_SPACE_CONVERSION => "The segment address cannot be converted to the requested address space",
            ERROR_INVALID_EVENT_ID => "The event handle is invalid",
            ERROR_INVALID_BREAKPOINT_ID => "The breakpoint handle is invalid",
            ERROR_CLIENT_CALLBACK => "A callback to the client reported an error",
            ERROR_INVALID_CLIENT_PROCESS_ID => "The client process handle is invalid",
            ERROR_SYMBOL_NOT_FOUND => "The symbol was not found",
            ERROR_REGISTER_NOT_AVAILABLE => "The register handle is valid, but specifies a register that is not allocated in the associated wave",
            ERROR_INVALID_WORKGROUP_ID => "The workgroup handle is invalid",
            ERROR_INCOMPATIBLE_PROCESS_STATE => "The process is in a state incompatible with the requested operation",
            ERROR_PROCESS_FROZEN => "The process is in the frozen state",
            ERROR_PROCESS_ALREADY_FROZEN => "The process is already in the frozen state",
            ERROR_PROCESS_NOT_FROZEN => "The process is not in the frozen state",
            _ => "unknown status",
        }
    }
}

pub const CHANGED_NO: i32 = 0;
pub const CHANGED_YES: i32 = 1;

pub mod event_kind {
    pub const NONE: i32 = 0;
    pub const WAVE_STOP: i32 = 1;
    pub const WAVE_COMMAND_TERMINATED: i32 = 2;
    pub const CODE_OBJECT_LIST_UPDATED: i32 = 3;
    pub const BREAKPOINT_RESUME: i32 = 4;
    pub const RUNTIME: i32 = 5;
    pub const QUEUE_ERROR: i32 = 6;
}

pub mod runtime_state {
    pub const LOADED_SUCCESS: i32 = 1;
    pub const UNLOADED: i32 = 2;
    pub const LOADED_ERROR_RESTRICTION: i32 = 3;
}

pub mod wave_state {
    pub const RUN: i32 = 1;
    pub const SINGLE_STEP: i32 = 2;
    pub const STOP: i32 = 3;
}

pub const RESUME_MODE_NORMAL: i32 = 0;
pub const RESUME_MODE_SINGLE_STEP: i32 = 1;
pub const PROGRESS_NORMAL: i32 = 0;
pub const PROGRESS_NO_FORWARD: i32 = 1;
pub const WAVE_CREATION_NORMAL: i32 = 0;
pub const WAVE_CREATION_STOP: i32 = 1;
pub const BREAKPOINT_ACTION_RESUME: i32 = 1;
pub const BREAKPOINT_ACTION_HALT: i32 = 2;
pub const REGISTER_ABSENT: i32 = 0;
pub const REGISTER_PRESENT: i32 = 1;
pub const CLIENT_PROCESS_INFO_OS_PID: i32 = 1;

/// `amd_dbgapi_agent_state_t`.
pub mod agent_state {
    pub const SUPPORTED: i32 = 1;
    pub const NOT_SUPPORTED: i32 = 2;
}

pub mod log_level {
    pub const NONE: i32 = 0;
    pub const FATAL_ERROR: i32 = 1;
    pub const WARNING: i32 = 2;
    pub const INFO: i32 = 3;
    pub const TRACE: i32 = 4;
    pub const VERBOSE: i32 = 5;
}

/// `amd_dbgapi_wave_stop_reasons_t` bits used by the simulator.
pub mod stop_reason {
    pub const NONE: u32 = 0;
    pub const BREAKPOINT: u32 = 1 << 0;
    pub const WATCHPOINT: u32 = 1 << 1;
    pub const SINGLE_STEP: u32 = 1 << 2;
    pub const DEBUG_TRAP: u32 = 1 << 10;
    pub const ASSERT_TRAP: u32 = 1 << 11;
    pub const TRAP: u32 = 1 << 12;
    pub const MEMORY_VIOLATION: u32 = 1 << 13;
    pub const ILLEGAL_INSTRUCTION: u32 = 1 << 15;
}

/// `amd_dbgapi_exceptions_t` (wave bits).
pub mod exceptions {
    pub const NONE: u32 = 0;
    pub const WAVE_ABORT: u32 = 1 << 0;
    pub const WAVE_TRAP: u32 = 1 << 1;
    pub const WAVE_MATH_ERROR: u32 = 1 << 2;
    pub const WAVE_ILLEGAL_INSTRUCTION: u32 = 1 << 3;
    pub const WAVE_MEMORY_VIOLATION: u32 = 1 << 4;
    pub const WAVE_ADDRESS_ERROR: u32 = 1 << 5;
}

/// `*_get_info` query numbers.
pub mod info {
    pub mod architecture {
        pub const NAME: i32 = 1;
        pub const ELF_AMDGPU_MACHINE: i32 = 2;
        pub const LARGEST_INSTRUCTION_SIZE: i32 = 3;
        pub const MINIMUM_INSTRUCTION_ALIGNMENT: i32 = 4;
        pub const BREAKPOINT_INSTRUCTION_SIZE: i32 = 5;
        pub const BREAKPOINT_INSTRUCTION: i32 = 6;
        pub const BREAKPOINT_INSTRUCTION_PC_ADJUST: i32 = 7;
        pub const PC_REGISTER: i32 = 8;
    }
    /// 0.77 numbering.
    pub mod process {
        pub const NOTIFIER: i32 = 1;
        pub const WATCHPOINT_COUNT: i32 = 2;
        pub const WATCHPOINT_SHARE: i32 = 3;
        pub const PRECISE_MEMORY_SUPPORTED: i32 = 4;
        pub const PRECISE_ALU_EXCEPTIONS_SUPPORTED: i32 = 5;
        pub const OS_ID: i32 = 6;
        /// 0.76 numbering of OS_ID.
        pub const OS_ID_V076: i32 = 5;
    }
    pub mod agent {
        pub const PROCESS: i32 = 1;
        pub const NAME: i32 = 2;
        pub const ARCHITECTURE: i32 = 3;
        pub const STATE: i32 = 4;
        pub const PCI_DOMAIN: i32 = 5;
        pub const PCI_SLOT: i32 = 6;
        pub const PCI_VENDOR_ID: i32 = 7;
        pub const PCI_DEVICE_ID: i32 = 8;
        pub const EXECUTION_UNIT_COUNT: i32 = 9;
        pub const MAX_WAVES_PER_EXECUTION_UNIT: i32 = 10;
        pub const OS_ID: i32 = 11;
    }
    pub mod queue {
        pub const AGENT: i32 = 1;
        pub const PROCESS: i32 = 2;
        pub const ARCHITECTURE: i32 = 3;
        pub const TYPE: i32 = 4;
        pub const STATE: i32 = 5;
        pub const ERROR_REASON: i32 = 6;
        pub const ADDRESS: i32 = 7;
        pub const SIZE: i32 = 8;
        pub const OS_ID: i32 = 9;
    }
    pub mod dispatch {
        pub const QUEUE: i32 = 1;
        pub const AGENT: i32 = 2;
        pub const PROCESS: i32 = 3;
        pub const ARCHITECTURE: i32 = 4;
        pub const OS_QUEUE_PACKET_ID: i32 = 5;
        pub const BARRIER: i32 = 6;
        pub const ACQUIRE_FENCE: i32 = 7;
        pub const RELEASE_FENCE: i32 = 8;
        pub const GRID_DIMENSIONS: i32 = 9;
        pub const WORKGROUP_SIZES: i32 = 10;
        pub const GRID_SIZES: i32 = 11;
        pub const PRIVATE_SEGMENT_SIZE: i32 = 12;
        pub const GROUP_SEGMENT_SIZE: i32 = 13;
        pub const KERNEL_ARGUMENT_SEGMENT_ADDRESS: i32 = 14;
        pub const KERNEL_DESCRIPTOR_ADDRESS: i32 = 15;
        pub const KERNEL_CODE_ENTRY_ADDRESS: i32 = 16;
        pub const KERNEL_COMPLETION_ADDRESS: i32 = 17;
    }
    pub mod wave {
        pub const STATE: i32 = 1;
        pub const STOP_REASON: i32 = 2;
        pub const WATCHPOINTS: i32 = 3;
        pub const WORKGROUP: i32 = 4;
        pub const DISPATCH: i32 = 5;
        pub const QUEUE: i32 = 6;
        pub const AGENT: i32 = 7;
        pub const PROCESS: i32 = 8;
        pub const ARCHITECTURE: i32 = 9;
        pub const PC: i32 = 10;
        pub const EXEC_MASK: i32 = 11;
        pub const WORKGROUP_COORD: i32 = 12;
        pub const WAVE_NUMBER_IN_WORKGROUP: i32 = 13;
        pub const LANE_COUNT: i32 = 14;
    }
    pub mod code_object {
        pub const PROCESS: i32 = 1;
        pub const URI_NAME: i32 = 2;
        pub const LOAD_ADDRESS: i32 = 3;
    }
    pub mod event {
        pub const PROCESS: i32 = 1;
        pub const KIND: i32 = 2;
        pub const WAVE: i32 = 3;
        pub const BREAKPOINT: i32 = 4;
        pub const CLIENT_THREAD: i32 = 5;
        pub const RUNTIME_STATE: i32 = 6;
        pub const QUEUE: i32 = 7;
    }
    pub mod address_space {
        pub const NAME: i32 = 1;
        pub const ADDRESS_SIZE: i32 = 2;
        pub const NULL_ADDRESS: i32 = 3;
        pub const ACCESS: i32 = 4;
        pub const DWARF: i32 = 5;
        /// `AMD_DBGAPI_ADDRESS_SPACE_ACCESS_ALL`.
        pub const ACCESS_ALL: i32 = 1;
    }
    pub mod register {
        pub const ARCHITECTURE: i32 = 1;
        pub const NAME: i32 = 2;
        pub const SIZE: i32 = 3;
        pub const TYPE: i32 = 4;
        pub const DWARF: i32 = 5;
        pub const PROPERTIES: i32 = 6;
    }
}

/// `amd_dbgapi_watchpoint_list_t`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct WatchpointList {
    pub count: usize,
    pub watchpoint_ids: *mut Handle,
}

/// `amd_dbgapi_client_process_id_t` (opaque client pointer).
pub type ClientProcess = *mut c_void;
/// `amd_dbgapi_client_thread_id_t` (opaque client pointer).
pub type ClientThread = *mut c_void;

/// `struct amd_dbgapi_callbacks_s`, 0.76+ layout (7 pointers).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct Callbacks {
    pub allocate_memory: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    pub deallocate_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    pub client_process_get_info:
        Option<unsafe extern "C" fn(ClientProcess, i32, usize, *mut c_void) -> Status>,
    pub insert_breakpoint: Option<unsafe extern "C" fn(ClientProcess, u64, Handle) -> Status>,
    pub remove_breakpoint: Option<unsafe extern "C" fn(ClientProcess, Handle) -> Status>,
    pub xfer_global_memory: Option<
        unsafe extern "C" fn(ClientProcess, u64, *mut u64, *mut c_void, *const c_void) -> Status,
    >,
    pub log_message: Option<unsafe extern "C" fn(i32, *const c_char)>,
}

/// Signatures of the functions the client binds (C names in the comments).
pub mod fns {
    use super::*;
    /// `amd_dbgapi_get_version`
    pub type GetVersion = unsafe extern "C" fn(*mut u32, *mut u32, *mut u32);
    /// `amd_dbgapi_get_build_name`
    pub type GetBuildName = unsafe extern "C" fn() -> *const c_char;
    /// `amd_dbgapi_get_status_string`
    pub type GetStatusString = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
    /// `amd_dbgapi_initialize`
    pub type Initialize = unsafe extern "C" fn(*mut Callbacks) -> Status;
    /// `amd_dbgapi_finalize`
    pub type Finalize = unsafe extern "C" fn() -> Status;
    /// `amd_dbgapi_set_log_level`
    pub type SetLogLevel = unsafe extern "C" fn(i32);
    /// `amd_dbgapi_process_attach`
    pub type ProcessAttach = unsafe extern "C" fn(ClientProcess, *mut Handle) -> Status;
    /// `amd_dbgapi_process_detach`, `amd_dbgapi_wave_stop`,
    /// `amd_dbgapi_event_processed`
    pub type HandleOnly = unsafe extern "C" fn(Handle) -> Status;
    /// `amd_dbgapi_*_get_info`
    pub type GetInfo = unsafe extern "C" fn(Handle, i32, usize, *mut c_void) -> Status;
    /// `amd_dbgapi_process_set_progress`, `_set_wave_creation`
    pub type HandleI32 = unsafe extern "C" fn(Handle, i32) -> Status;
    /// `amd_dbgapi_process_next_pending_event`
    pub type NextPendingEvent = unsafe extern "C" fn(Handle, *mut Handle, *mut i32) -> Status;
    /// `amd_dbgapi_process_{agent,queue,dispatch,wave,code_object}_list`
    pub type ProcessList =
        unsafe extern "C" fn(Handle, *mut usize, *mut *mut Handle, *mut i32) -> Status;
    /// `amd_dbgapi_architecture_register_list`, `amd_dbgapi_wave_register_list`
    pub type List = unsafe extern "C" fn(Handle, *mut usize, *mut *mut Handle) -> Status;
    /// `amd_dbgapi_wave_resume`
    pub type WaveResume = unsafe extern "C" fn(Handle, i32, u32) -> Status;
    /// `amd_dbgapi_get_architecture`
    pub type GetArchitecture = unsafe extern "C" fn(u32, *mut Handle) -> Status;
    /// `amd_dbgapi_wave_register_exists`
    pub type WaveRegisterExists = unsafe extern "C" fn(Handle, Handle, *mut i32) -> Status;
    /// `amd_dbgapi_read_register`
    pub type ReadRegister = unsafe extern "C" fn(Handle, Handle, u64, u64, *mut c_void) -> Status;
    /// `amd_dbgapi_write_register`
    pub type WriteRegister =
        unsafe extern "C" fn(Handle, Handle, u64, u64, *const c_void) -> Status;
    /// `amd_dbgapi_read_memory`
    pub type ReadMemory =
        unsafe extern "C" fn(Handle, Handle, u32, Handle, u64, *mut u64, *mut c_void) -> Status;
    /// `amd_dbgapi_write_memory`
    pub type WriteMemory =
        unsafe extern "C" fn(Handle, Handle, u32, Handle, u64, *mut u64, *const c_void) -> Status;
    /// `amd_dbgapi_dwarf_address_space_to_address_space`
    pub type DwarfAddressSpace = unsafe extern "C" fn(Handle, u64, *mut Handle) -> Status;
    /// `amd_dbgapi_displaced_stepping_start`
    pub type DisplacedSteppingStart =
        unsafe extern "C" fn(Handle, *const c_void, *mut Handle) -> Status;
    /// `amd_dbgapi_displaced_stepping_complete`
    pub type DisplacedSteppingComplete = unsafe extern "C" fn(Handle, Handle) -> Status;
    /// `amd_dbgapi_report_breakpoint_hit`
    pub type ReportBreakpointHit = unsafe extern "C" fn(Handle, ClientThread, *mut i32) -> Status;
}

/// Exported symbols and their ELF version nodes (research §1.4, v0.77).
pub const SYMBOL_VERSIONS: &[(&str, &str)] = &[
    ("address_is_in_address_class", "0.54"),
    ("architecture_address_class_list", "0.54"),
    ("architecture_address_space_list", "0.54"),
    ("architecture_get_info", "0.54"),
    ("architecture_register_class_get_info", "0.54"),
    ("architecture_register_class_list", "0.54"),
    ("architecture_register_list", "0.54"),
    ("breakpoint_get_info", "0.54"),
    ("code_object_get_info", "0.54"),
    ("disassemble_instruction", "0.54"),
    ("dispatch_get_info", "0.54"),
    ("displaced_stepping_get_info", "0.54"),
    ("dwarf_address_class_to_address_class", "0.54"),
    ("dwarf_address_space_to_address_space", "0.54"),
    ("dwarf_register_to_register", "0.54"),
    ("event_get_info", "0.54"),
    ("event_processed", "0.54"),
    ("finalize", "0.54"),
    ("get_architecture", "0.54"),
    ("get_build_name", "0.54"),
    ("get_status_string", "0.54"),
    ("get_version", "0.54"),
    ("process_agent_list", "0.54"),
    ("process_code_object_list", "0.54"),
    ("process_detach", "0.54"),
    ("process_dispatch_list", "0.54"),
    ("process_next_pending_event", "0.54"),
    ("process_queue_list", "0.54"),
    ("process_wave_list", "0.54"),
    ("queue_packet_list", "0.54"),
    ("read_memory", "0.54"),
    ("register_is_in_register_class", "0.54"),
    ("report_breakpoint_hit", "0.54"),
    ("set_log_level", "0.54"),
    ("set_memory_precision", "0.54"),
    ("wave_register_exists", "0.54"),
    ("wave_register_list", "0.54"),
    ("process_attach", "0.56"),
    ("classify_instruction", "0.58"),
    ("address_class_get_info", "0.62"),
    ("address_space_get_info", "0.62"),
    ("convert_address_space", "0.62"),
    ("prefetch_register", "0.62"),
    ("read_register", "0.62"),
    ("watchpoint_get_info", "0.62"),
    ("address_dependency", "0.64"),
    ("process_workgroup_list", "0.64"),
    ("wave_get_info", "0.64"),
    ("workgroup_get_info", "0.64"),
    ("agent_get_info", "0.67"),
    ("queue_get_info", "0.68"),
    ("register_get_info", "0.70"),
    ("displaced_stepping_complete", "0.76"),
    ("displaced_stepping_start", "0.76"),
    ("initialize", "0.76"),
    ("process_freeze", "0.76"),
    ("process_set_progress", "0.76"),
    ("process_set_wave_creation", "0.76"),
    ("process_unfreeze", "0.76"),
    ("remove_watchpoint", "0.76"),
    ("set_watchpoint", "0.76"),
    ("wave_resume", "0.76"),
    ("wave_stop", "0.76"),
    ("write_memory", "0.76"),
    ("write_register", "0.76"),
    ("process_get_info", "0.77"),
    ("set_alu_exceptions_precision", "0.77"),
];

/// The version nodes in chain order.
pub const VERSION_NODES: &[&str] = &[
    "0.54", "0.56", "0.58", "0.62", "0.64", "0.67", "0.68", "0.70", "0.76", "0.77",
];

/// A GNU ld version script declaring [`SYMBOL_VERSIONS`].
pub fn version_script() -> String {
    let mut s = String::new();
    let mut prev: Option<&str> = None;
    for node in VERSION_NODES {
        s.push_str(&format!("AMD_DBGAPI_{node} {{\n"));
        let syms: Vec<&str> = SYMBOL_VERSIONS
            .iter()
            .filter(|(_, n)| n == node)
            .map(|(f, _)| *f)
            .collect();
        if !syms.is_empty() {
            s.push_str("  global:\n");
            for f in syms {
                s.push_str(&format!("    amd_dbgapi_{f};\n"));
            }
        }
        if prev.is_none() {
            s.push_str("  local:\n    *;\n");
        }
        match prev {
            Some(p) => s.push_str(&format!("}} AMD_DBGAPI_{p};\n")),
            None => s.push_str("};\n"),
        }
        prev = Some(node);
    }
    s
}

/// The prefix of every exported function name (`amd_dbgapi_initialize`):
/// for messages that name a function, e.g. `gdbmux doctor`'s.
pub const SYMBOL_PREFIX: &str = "amd_dbgapi_";
