//! Linux ptrace CPU target (x86-64).
//!
//! - [`LinuxProcess`] implements [`crate::target::Target`] for one traced
//!   process (all-stop; non-stop, gdb's `QNonStop:1`, in
//!   `process/nonstop.rs`). See `process` for the event model.
//! - [`SigchldFd`] is the process-wide SIGCHLD signalfd the loop watches;
//!   [`block_sigchld`] must run at program start before any thread exists.
//! - Raw ptrace calls live only in `ptrace` (logged on the `ptrace` tracing
//!   target); all x86-64 register knowledge lives in `x86_64`.

mod attach;
mod breakpoints;
mod condbp;
mod errors;
mod fault;
mod hwdebug;
mod launch;
mod memory;
pub mod osdata;
pub mod output;
mod process;
mod procfs;
mod ptrace;
mod sigchld;
mod svr4;
mod thread;
pub mod thread_db;
mod tls;
mod x86_64;

pub use errors::NativeError;
pub use launch::construct_inferior_arguments;
pub use launch::program_path;
pub use launch::vrun_argument;
pub use launch::LaunchOptions;
pub use output::onlcr;
pub use output::OutputTerminal;
pub use output::ProgramOutput;
pub use output::SharedProgramOutput;
pub use process::LinuxProcess;
pub use process::CAPABILITIES;
pub use procfs::pid_by_name;
pub use procfs::process_info;
pub use procfs::working_dir;
pub use sigchld::block_sigchld;
pub use sigchld::SigchldFd;
pub use tls::builtin_tls_address;
pub use tls::tls_address;

/// gdbmux's x86-64 register descriptions (`avx`: with `ymm0h`–`ymm15h`;
/// no AVX-512, no `pkru`), as a launched process on such a CPU has them.
pub fn x86_64_registers(avx: bool) -> Vec<crate::target::RegisterInfo> {
    x86_64::register_table(x86_64::XFeatures {
        avx,
        ..Default::default()
    })
    .infos
}

/// gdbmux's x86-64 architecture facts (target.xml's architecture, osabi,
/// shared vector types).
pub fn x86_64_arch_info() -> crate::target::ArchInfo {
    x86_64::arch_info()
}

/// The x86-64 register tables gdbmux can describe (SSE only, AVX, AVX-512
/// with pkru), labelled, for self-checks.
pub fn x86_64_register_tables() -> Vec<(&'static str, Vec<crate::target::RegisterInfo>)> {
    let f =
        |avx, avx512, pkru| x86_64::register_table(x86_64::XFeatures { avx, avx512, pkru }).infos;
    vec![
        ("sse", f(false, false, false)),
        ("avx", f(true, false, false)),
        ("avx512", f(true, true, true)),
    ]
}
