//! The protocol engine's dispatch: every typed [`Command`] goes to the
//! handler of its packet family, one module each, mirroring `packet/`:
//!
//! | family | handlers | packets |
//! |---|---|---|
//! | negotiation, general queries | `query.rs` | `packet/query.rs` |
//! | threads | `thread.rs` | `packet/query.rs`, `packet/thread_id.rs` |
//! | registers | `regs.rs` | `packet/regs.rs` |
//! | memory | `memory.rs` | `packet/memory.rs` |
//! | breakpoints | `breakpoint.rs` | `packet/breakpoint.rs` |
//! | resume | `resume.rs` | `packet/resume.rs` |
//! | stops (`?`, the stop journal) | `stop.rs` | `packet/stop_reply.rs` |
//! | qXfer objects | `xfer.rs` | `packet/xfer.rs` |
//! | process control (`D`, `k`, `vKill`, `R`, launch settings) | `extended.rs` | `packet/extended.rs` |
//! | `vRun`, `vAttach` | `launch.rs` | `packet/extended.rs` |
//! | host I/O (`vFile`) | `hostio.rs` | `hostio/` |
//! | `qRcmd` (monitor) | `monitor.rs`, `monitor_gpu.rs` | `packet/query.rs` |
//! | lldb dialect | `lldb.rs` | `packet/lldb.rs` |
//! | lldb accelerator plugin | `../gpu.rs` | `packet/lldb.rs` |
//!
//! This module also holds what every family shares: which process a
//! packet addresses, and the plain `OK`/error reply.

mod breakpoint;
mod extended;
mod hostio;
pub(in crate::session) mod launch;
mod lldb;
mod memory;
mod monitor;
mod monitor_gpu;
mod query;
mod regs;
mod resume;
mod stop;
mod thread;
mod xfer;

pub(in crate::session) use memory::MemStream;
pub use monitor::LogControl;
pub use monitor::{log_timestamps, parse_debug_format, set_log_control, set_log_timestamps};
pub(in crate::session) use resume::VContScope;
pub use xfer::target_xml;

use crate::packet::reply;
use crate::packet::signals;
use crate::packet::Command;
use crate::session::Dialect;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::Pid;
use crate::target::Target;
use crate::target::TargetError;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn dispatch(&mut self, cmd: Command) {
        if self.is_running() {
            // All-stop: while a resume is pending the client may only
            // interrupt. Anything else is a protocol error we answer
            // without disturbing the pending stop.
            self.send_error(crate::error::ErrorCode::Busy, "target is running");
            return;
        }
        if let Err(how) = self.role.serves(&cmd) {
            // A packet of the other role (`role.rs`): answered as an
            // unsupported one (or with the role's error), never carried out.
            tracing::debug!(target: "packets", session = self.id, role = ?R::ROLE, "packet of the other role: not served");
            match how {
                crate::session::role::NotServed::Unsupported => self.send(&reply::empty()),
                crate::session::role::NotServed::Error(code, why) => self.send_error(code, why),
            }
            return;
        }
        // Non-stop mode's own meaning of `?`, `vCont`, `c` and `s`
        // (session/nonstop.rs).
        let Some(cmd) = self.nonstop_dispatch(cmd) else {
            return;
        };
        match cmd {
            // --- negotiation, general queries (query.rs) ---
            Command::QSupported(f) => self.handle_qsupported(&f),
            Command::QStartNoAckMode => self.handle_start_no_ack(),
            Command::VMustReplyEmpty => self.handle_must_reply_empty(),
            Command::ExtendedMode => self.handle_extended_mode(),
            Command::PassSignals(sigs) => self.handle_pass_signals(&sigs),
            Command::ProgramSignals(_) => self.handle_program_signals(),
            Command::Symbol => self.handle_symbol(),
            Command::Offsets => self.handle_offsets(),
            Command::NonStop(on) => self.handle_nonstop(on),
            Command::VStopped => self.handle_vstopped(),
            Command::CatchSyscalls(set) => self.handle_catch_syscalls(set),
            // --- threads (thread.rs) ---
            Command::SetThread(op, id) => self.handle_set_thread(op, id),
            Command::ThreadAlive(id) => self.handle_thread_alive(id),
            Command::CurrentThread => self.handle_qc(),
            Command::GetTlsAddr { thread, offset, lm } => {
                self.handle_get_tls_addr(thread, offset, lm)
            }
            Command::ThreadInfoFirst => self.handle_thread_info_first(),
            Command::ThreadInfoNext => self.handle_thread_info_next(),
            Command::Attached(_) => self.handle_attached(),
            Command::ThreadExtraInfo(id) => self.handle_thread_extra_info(id),
            // --- registers (regs.rs) ---
            // lldb's register view (session::lldb_regs) of an x86-64 target.
            Command::ReadRegisters { thread } if self.lldb_view_for(thread).is_some() => {
                if let Some(v) = self.lldb_view_for(thread) {
                    self.lldb_read_all(&v, thread);
                }
            }
            Command::WriteRegisters { data, thread } if self.lldb_view_for(thread).is_some() => {
                if let Some(v) = self.lldb_view_for(thread) {
                    self.lldb_write_all(&v, &data, thread);
                }
            }
            Command::ReadRegister { regnum, thread } if self.lldb_view_for(thread).is_some() => {
                if let Some(v) = self.lldb_view_for(thread) {
                    self.lldb_read_register(&v, regnum, thread);
                }
            }
            Command::WriteRegister {
                regnum,
                value,
                thread,
            } if self.lldb_view_for(thread).is_some() => {
                if let Some(v) = self.lldb_view_for(thread) {
                    self.lldb_write_register(&v, regnum, &value, thread);
                }
            }
            Command::ReadRegisters { thread } => self.handle_g(thread),
            Command::WriteRegisters { data, thread } => self.handle_big_g(&data, thread),
            Command::ReadRegister { regnum, thread } => self.handle_p(regnum, thread),
            Command::WriteRegister {
                regnum,
                value,
                thread,
            } => self.handle_big_p(regnum, &value, thread),
            // --- memory (memory.rs) ---
            Command::ReadMemory { addr, len } => self.handle_m(addr, len),
            Command::ReadMemoryBinary { addr, len } => self.handle_x(addr, len),
            Command::WriteMemory { addr, data } | Command::WriteMemoryBinary { addr, data } => {
                self.handle_write_memory(addr, &data)
            }
            // --- breakpoints (breakpoint.rs) ---
            Command::InsertBreakpoint { kind, addr, len } => self.handle_z(true, kind, addr, len),
            Command::InsertConditionalBreakpoint {
                addr,
                len,
                conditions,
                commands,
            } => self.handle_z_conditional(addr, len, conditions, commands),
            Command::RemoveBreakpoint { kind, addr, len } => self.handle_z(false, kind, addr, len),
            // --- resume (resume.rs) ---
            Command::Continue { signal, addr } => self.handle_c_s(false, signal, addr),
            Command::Step { signal, addr } => self.handle_c_s(true, signal, addr),
            Command::VContQuery => self.handle_vcont_query(),
            Command::VCont(actions) => self.handle_vcont(&actions),
            // --- stops (stop.rs) ---
            Command::QuestionMark => self.handle_question(),
            // --- qXfer (xfer.rs) ---
            Command::XferRead(x) => self.handle_xfer(&x),
            Command::XferWrite {
                object,
                offset,
                data,
                ..
            } => self.handle_xfer_write(&object, offset, &data),
            // --- process control (extended.rs, launch.rs) ---
            Command::Detach(pid) => self.handle_detach(pid),
            Command::Kill => self.handle_kill(None, false),
            Command::VKill(pid) => self.handle_kill(Some(pid), true),
            Command::VRun(args) => self.handle_vrun(args),
            Command::VAttach(pid) => self.handle_vattach(pid),
            Command::Restart => self.handle_r(),
            Command::DisableRandomization(on) => self.handle_disable_randomization(on),
            Command::SetEnv(kv) => self.handle_set_env(&kv),
            Command::ResetEnv => self.handle_reset_env(),
            Command::UnsetEnv(k) => self.handle_unset_env(&k),
            Command::SetWorkingDir(dir) => self.handle_set_working_dir(dir),
            Command::StartupWithShell(on) => self.handle_startup_with_shell(on),
            // --- host I/O (hostio.rs) ---
            Command::VFile(args) => self.handle_vfile(&args),
            // --- monitor (monitor.rs) ---
            Command::Rcmd(cmd) => self.handle_monitor(&cmd),
            // --- lldb dialect (lldb.rs) ---
            Command::HostInfo => self.handle_host_info(),
            Command::ProcessInfo => self.handle_process_info(),
            Command::ThreadSuffixSupported => self.handle_thread_suffix_supported(),
            Command::ListThreadsInStopReply => self.handle_list_threads_in_stop_reply(),
            Command::JThreadsInfo => self.handle_jthreads_info(),
            Command::ThreadStopInfo(tid) => self.handle_thread_stop_info(tid),
            Command::MemoryRegionInfo(addr) => self.handle_memory_region(addr),
            Command::GetWorkingDir => self.handle_get_working_dir(),
            Command::EnableErrorStrings => self.handle_enable_error_strings(),
            Command::Echo(e) => self.handle_echo(&e),
            Command::StructuredDataPlugins => self.handle_structured_data_plugins(),
            Command::LldbTraceSupported => self.handle_trace_supported(),
            Command::ShlibInfoAddr => self.handle_shlib_info_addr(),
            Command::WatchpointSupportInfo => self.handle_watchpoint_support_info(),
            Command::RegisterInfo(n) => self.handle_register_info(n),
            Command::VAttachOrWaitSupported => self.handle_vattach_or_wait_supported(),
            Command::ThreadExtendedInfo => self.handle_thread_extended_info(),
            Command::SetDetachOnError(_) => self.handle_set_detach_on_error(),
            Command::ServerVersion => self.handle_server_version(),
            // --- lldb accelerator plugin (../gpu.rs) ---
            Command::AcceleratorInitialize => R::accel_initialize(self),
            Command::AcceleratorBreakpointHit(json) => R::accel_hit(self, &json),
            Command::Unknown(p) => self.handle_unknown(&p),
        }
    }

    fn handle_unknown(&mut self, p: &[u8]) {
        if let Some(prefix) = self.unknown_logged.first_sight(p) {
            tracing::debug!(target: "packets", session = self.id, len = p.len(), "unknown packet: {}", String::from_utf8_lossy(prefix));
        }
        self.send(&reply::empty());
    }

    pub(in crate::session) fn reply_unit(&mut self, r: Result<(), TargetError>) {
        match r {
            // A literal, not `reply::ok()`: no allocation per reply.
            Ok(()) => self.send(b"OK"),
            Err(e) => self.send_target_error(&e),
        }
    }

    pub(in crate::session) fn target_mut(
        &mut self,
        pid: Pid,
    ) -> Result<&mut Box<dyn Target>, TargetError> {
        self.procs
            .get_mut(&pid)
            .ok_or(TargetError::Gone(u64::from(pid)))
    }

    /// Drop a process that is gone (exited, killed, detached) from the
    /// session: its target, its client breakpoints, and `current` if it
    /// was that one.
    pub(in crate::session) fn release_process(&mut self, pid: Pid) -> Option<Box<dyn Target>> {
        let t = self.procs.remove(&pid);
        self.client_bps.forget_process(pid);
        if self.current == Some(pid) {
            self.current = self.procs.keys().next().copied();
        }
        t
    }

    /// The process memory and breakpoint packets address.
    pub(in crate::session) fn current_pid(&self) -> Result<Pid, TargetError> {
        self.current
            .or_else(|| self.procs.keys().next().copied())
            .ok_or_else(|| TargetError::Invalid("no process".into()))
    }

    pub(in crate::session) fn current_target(
        &mut self,
    ) -> Result<&mut Box<dyn Target>, TargetError> {
        let pid = self.current_pid()?;
        self.target_mut(pid)
    }

    pub(in crate::session) fn signal_from_wire(&self, s: u8) -> Option<i32> {
        match self.features.dialect {
            Dialect::Lldb => Some(i32::from(s)),
            Dialect::Gdb => signals::gdb_to_linux(s),
        }
    }
}
