//! Dispatch of typed commands, and the handlers for the core families
//! (negotiation, threads, registers, memory, breakpoints, resume, process
//! control).

use std::collections::BTreeMap;

use super::breakpoints::ClientBreakpoint;
use super::Dialect;
use super::Role;
use super::Session;
use super::SessionControl;
use super::MAX_PACKET;
use crate::packet::reply;
use crate::packet::signals;
use crate::packet::stop_reply::thread_id;
use crate::packet::stop_reply::StopSnapshot;
use crate::packet::stop_reply::ThreadSnapshot;
use crate::packet::Command;
use crate::packet::HOp;
use crate::packet::IdSel;
use crate::packet::ThreadId;
use crate::packet::VContAction;
use crate::packet::VContKind;
use crate::session::Journal;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::BreakpointKind;
use crate::target::Pid;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::Target;
use crate::target::TargetError;
use crate::target::Tid;

impl Session {
    pub(super) fn dispatch(&mut self, cmd: Command) {
        if self.is_running() {
            // All-stop: while a resume is pending the client may only
            // interrupt. Anything else is a protocol error we answer
            // without disturbing the pending stop.
            self.send_error(crate::error::ErrorCode::Busy, "target is running");
            return;
        }
        match cmd {
            Command::QSupported(f) => self.handle_qsupported(&f),
            Command::QStartNoAckMode => {
                self.send(&reply::ok());
                self.framer.set_no_ack(true);
            }
            Command::VMustReplyEmpty => self.send(&reply::empty()),
            Command::ExtendedMode => {
                self.features.extended = true;
                self.send(&reply::ok());
            }
            Command::QuestionMark => self.handle_question(),
            Command::SetThread(op, id) => self.handle_set_thread(op, id),
            Command::ThreadAlive(id) => {
                let ok = self.resolve_thread(Some(id)).is_some_and(|(pid, tid)| {
                    self.procs
                        .get(&pid)
                        .is_some_and(|t| t.threads().contains(&tid))
                });
                if ok {
                    self.send(&reply::ok());
                } else {
                    self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such thread");
                }
            }
            Command::CurrentThread if self.features.disabled.qc => self.send(&reply::empty()),
            Command::ThreadInfoFirst | Command::ThreadInfoNext
                if self.features.disabled.qfthreadinfo =>
            {
                self.send(&reply::empty())
            }
            Command::VContQuery | Command::VCont(_) if self.features.disabled.vcont => {
                self.send(&reply::empty())
            }
            Command::CurrentThread => self.handle_qc(),
            Command::GetTlsAddr { thread, offset, lm } => {
                self.handle_get_tls_addr(thread, offset, lm)
            }
            Command::ThreadInfoFirst => {
                self.thread_cursor = true;
                let mut out = vec![b'm'];
                let mp = self.features.multiprocess;
                let mut first = true;
                for (pid, t) in &self.procs {
                    let threads = match t.try_threads() {
                        Ok(v) => v,
                        Err(e) => {
                            self.send_target_error(&e);
                            return;
                        }
                    };
                    for tid in threads {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        thread_id(&mut out, *pid, tid, mp);
                    }
                }
                if first {
                    // No process: lldb-server answers `l`.
                    out = b"l".to_vec();
                }
                self.send(&out);
            }
            Command::ThreadInfoNext => {
                self.thread_cursor = false;
                self.send(b"l");
            }
            Command::Attached(_) => match self.current_target() {
                Ok(t) => {
                    let a = if t.attached() { b"1" } else { b"0" };
                    self.send(a);
                }
                Err(e) => self.send_target_error(&e),
            },
            Command::ThreadExtraInfo(id) => {
                let name = self
                    .resolve_thread(Some(id))
                    .and_then(|(pid, tid)| self.procs.get(&pid)?.thread_name(tid))
                    .unwrap_or_default();
                self.send(&reply::hex_bytes(name.as_bytes()));
            }
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
            Command::WriteRegisters { data, thread } => {
                let r = self
                    .reg_thread(thread)
                    .and_then(|(pid, tid)| self.target_mut(pid)?.write_g_registers(tid, &data));
                self.reply_unit(r);
            }
            Command::ReadRegister { regnum, thread } => {
                let r = self
                    .reg_thread(thread)
                    .and_then(|(pid, tid)| self.target_mut(pid)?.read_register(tid, regnum));
                match r {
                    Ok(v) => self.send(&reply::hex_bytes(&v)),
                    Err(e) => self.send_target_error(&e),
                }
            }
            Command::WriteRegister {
                regnum,
                value,
                thread,
            } => {
                let r = self.reg_thread(thread).and_then(|(pid, tid)| {
                    self.target_mut(pid)?.write_register(tid, regnum, &value)
                });
                self.reply_unit(r);
            }
            Command::ReadMemory { addr, len } => {
                let len = (len as usize).min((MAX_PACKET - 16) / 2);
                match self.current_target().and_then(|t| t.read_memory(addr, len)) {
                    Ok(data) => self.send(&reply::hex_bytes(&data)),
                    Err(e) => self.send_target_error(&e),
                }
            }
            Command::ReadMemoryBinary { addr, len } => {
                if len == 0 {
                    // lldb's `x0,0` probe for binary reads.
                    self.send(&reply::ok());
                    return;
                }
                let len = (len as usize).min(MAX_PACKET - 16);
                match self.current_target().and_then(|t| t.read_memory(addr, len)) {
                    // lldb 23 expects raw binary without gdb 16's `b` prefix
                    // (research/client-traces.md §0.6). gdb 16 only uses `x`
                    // with `binary-upload+`, which we do not advertise.
                    Ok(data) => self.send(&data),
                    Err(e) => self.send_target_error(&e),
                }
            }
            Command::WriteMemory { addr, data } | Command::WriteMemoryBinary { addr, data } => {
                let r = if data.is_empty() {
                    Ok(())
                } else {
                    self.current_target()
                        .and_then(|t| write_memory_whole(t.as_mut(), addr, &data))
                };
                self.reply_unit(r);
            }
            Command::InsertBreakpoint { kind, addr, len } => self.handle_z(true, kind, addr, len),
            Command::InsertConditionalBreakpoint {
                addr,
                len,
                conditions,
            } => self.handle_z_conditional(addr, len, conditions),
            Command::RemoveBreakpoint { kind, addr, len } => self.handle_z(false, kind, addr, len),
            Command::Continue { signal, addr } => self.handle_c_s(false, signal, addr),
            Command::Step { signal, addr } => self.handle_c_s(true, signal, addr),
            Command::VContQuery => {
                let caps = self.capabilities();
                self.send(caps.vcont_reply());
            }
            Command::VCont(actions) => self.handle_vcont(&actions),
            Command::XferRead(x) => self.handle_xfer(&x),
            Command::XferWrite {
                object,
                offset,
                data,
                ..
            } if object == "siginfo" => self.handle_siginfo_write(offset, &data),
            // Other objects are not writable (gdbserver: empty reply).
            Command::XferWrite { .. } => self.send(&reply::empty()),
            Command::Detach(pid) => self.handle_detach(pid),
            Command::Kill => self.handle_kill(None, false),
            Command::VKill(pid) => self.handle_kill(Some(pid), true),
            Command::VRun(args) => self.handle_vrun(args),
            Command::VAttach(pid) => self.handle_vattach(pid),
            Command::PassSignals(sigs) => {
                self.pass_signals = sigs
                    .iter()
                    .filter_map(|s| self.signal_from_wire(*s))
                    .filter(|s| *s != 0)
                    .collect();
                let ps = self.pass_signals.clone();
                for t in self.procs.values_mut() {
                    t.set_pass_signals(&ps);
                }
                self.send(&reply::ok());
            }
            Command::ProgramSignals(_) => self.send(&reply::ok()),
            Command::DisableRandomization(on) => {
                self.launch.disable_aslr = on;
                self.send(&reply::ok());
            }
            Command::SetEnv(kv) => match self.launch.set_env(&kv) {
                Ok(()) => self.send(&reply::ok()),
                Err(e) => self.send_error(crate::error::ErrorCode::TooBig, &e),
            },
            Command::ResetEnv => {
                self.launch.reset_env();
                self.send(&reply::ok());
            }
            Command::UnsetEnv(k) => {
                self.launch.unset_env(&k);
                self.send(&reply::ok());
            }
            Command::SetWorkingDir(dir) => {
                self.launch.cwd = dir.map(|d| String::from_utf8_lossy(&d).into_owned().into());
                self.send(&reply::ok());
            }
            Command::StartupWithShell(on) => {
                self.launch.startup_with_shell = on;
                self.send(&reply::ok());
            }
            Command::Symbol => self.send(&reply::ok()),
            Command::Restart if self.features.extended => self.handle_restart(),
            // gdbserver answers `R` outside extended mode as unknown.
            Command::Restart => self.send(&reply::empty()),
            Command::VFile(args) => {
                let r = self.hostio.handle(&args);
                self.send(&r);
            }
            Command::Rcmd(cmd) => self.handle_monitor(&cmd),
            Command::Offsets => self.send(&reply::empty()),
            Command::NonStop(false) => self.send(&reply::ok()),
            Command::CatchSyscalls(set) => {
                let mut ok = !self.procs.is_empty();
                for t in self.procs.values_mut() {
                    ok &= t.set_catch_syscalls(set.clone());
                }
                if ok {
                    self.send(&reply::ok());
                } else {
                    self.send_error(
                        crate::error::ErrorCode::Invalid,
                        "cannot catch system calls here",
                    );
                }
            }
            Command::NonStop(true) => self.send_error(
                crate::error::ErrorCode::NotSupported,
                "non-stop mode is not supported",
            ),
            Command::HostInfo => self.handle_host_info(),
            Command::ProcessInfo => self.handle_process_info(),
            Command::ThreadSuffixSupported => {
                self.features.thread_suffix = true;
                self.send(&reply::ok());
            }
            Command::ListThreadsInStopReply => {
                self.features.list_threads = true;
                self.send(&reply::ok());
            }
            Command::JThreadsInfo => self.handle_jthreads_info(),
            Command::ThreadStopInfo(tid) => {
                let opts = self.features.stop_options();
                match self.journal.thread_reply(tid, &opts) {
                    Some(r) => self.send(&r),
                    None => self.send_error(
                        crate::error::ErrorCode::NoSuchProcess,
                        "no stop recorded for this thread",
                    ),
                }
            }
            Command::MemoryRegionInfo(addr) => self.handle_memory_region(addr),
            Command::GetWorkingDir => self.handle_get_working_dir(),
            Command::EnableErrorStrings => {
                self.features.error_strings = true;
                self.send(&reply::ok());
            }
            Command::Echo(e) => {
                // lldb's qEcho: reply with the packet itself.
                let mut p = b"qEcho:".to_vec();
                p.extend_from_slice(&e);
                self.send(&p);
            }
            Command::StructuredDataPlugins => self.send(b"[]"),
            Command::LldbTraceSupported => self.send(b"E.tracing is not supported by gdbmux"),
            Command::ShlibInfoAddr => self.send(&reply::empty()),
            Command::WatchpointSupportInfo => {
                let n = self
                    .current_target()
                    .map(|t| t.hw_watchpoint_slots())
                    .unwrap_or(4);
                self.send(format!("num:{n};").as_bytes());
            }
            Command::RegisterInfo(n) => self.handle_register_info(n),
            Command::VAttachOrWaitSupported => self.send(&reply::empty()),
            Command::ThreadExtendedInfo => self.send(&reply::empty()),
            Command::SetDetachOnError(_) => self.send(&reply::ok()),
            Command::ServerVersion => {
                self.send(format!("name:gdbmux;version:{};", env!("CARGO_PKG_VERSION")).as_bytes())
            }
            Command::AcceleratorInitialize => self.handle_accel_initialize(),
            Command::AcceleratorBreakpointHit(json) => self.handle_accel_hit(&json),
            Command::Unknown(p) => {
                if let Some(prefix) = self.unknown_logged.first_sight(&p) {
                    tracing::debug!(target: "packets", session = self.id, len = p.len(), "unknown packet: {}", String::from_utf8_lossy(prefix));
                }
                self.send(&reply::empty());
            }
        }
    }

    fn reply_unit(&mut self, r: Result<(), TargetError>) {
        match r {
            Ok(()) => self.send(&reply::ok()),
            Err(e) => self.send_target_error(&e),
        }
    }

    /// The capabilities `qSupported` and `vCont?` advertise: the current
    /// target's; before a CPU session has a process (extended mode), those
    /// of the native Linux target its `vRun`/`vAttach` will create.
    pub(super) fn capabilities(&mut self) -> crate::target::Capabilities {
        let cpu = self.role == super::Role::Cpu;
        match self.current_target() {
            Ok(t) => crate::target::Capabilities::of(t.as_mut()),
            Err(_) if cpu => crate::native::CAPABILITIES,
            Err(_) => crate::target::Capabilities::NONE,
        }
    }

    fn handle_qsupported(&mut self, features: &[String]) {
        let has = |f: &str| features.iter().any(|x| x == f);
        // lldb's list (research/client-traces.md §4) has no vContSupported+
        // and offers xmlRegisters for several arches / qXfer:libraries.
        let lldb = !has("vContSupported+")
            && features.iter().any(|f| {
                f == "qXfer:libraries:read+" || (f.starts_with("xmlRegisters=") && f.contains(','))
            });
        if lldb {
            self.features.dialect = Dialect::Lldb;
        }
        self.features.multiprocess = has("multiprocess+");
        self.features.swbreak = has("swbreak+");
        self.features.hwbreak = has("hwbreak+");
        self.features.fork_events = has("fork-events+");
        self.features.vfork_events = has("vfork-events+");
        self.features.exec_events = has("exec-events+");
        let forks = self.features.fork_events || self.features.vfork_events;
        let exec = self.features.report_exec();
        for t in self.procs.values_mut() {
            t.set_report_forks(forks);
            t.set_report_exec(exec);
        }
        let caps = self.capabilities();
        let mut r = format!(
            "PacketSize={MAX_PACKET:x};QStartNoAckMode+;qXfer:features:read+;\
             qXfer:exec-file:read+;qXfer:threads:read+;\
             QPassSignals+;QProgramSignals+;QDisableRandomization+;QEnvironmentHexEncoded+;\
             QEnvironmentReset+;QEnvironmentUnset+;QSetWorkingDir+;QStartupWithShell+;\
             vContSupported+;QThreadSuffixSupported+;QListThreadsInStopReply+;qEcho+"
        );
        // What the target can do (typed capabilities, `target.rs`).
        for (flag, name) in [
            (caps.auxv, "qXfer:auxv:read+"),
            (caps.libraries_svr4, "qXfer:libraries-svr4:read+"),
            (caps.siginfo, "qXfer:siginfo:read+"),
            (caps.siginfo, "qXfer:siginfo:write+"),
            // ptrace's syscall stops and the host's /proc tables: the CPU
            // session's native targets only.
            (self.role == super::Role::Cpu, "QCatchSyscalls+"),
            (self.role == super::Role::Cpu, "qXfer:osdata:read+"),
            // Agent-expression conditions on software breakpoints,
            // evaluated by the native target (crate::agentexpr).
            (self.role == super::Role::Cpu, "ConditionalBreakpoints+"),
        ] {
            if flag {
                r.push(';');
                r.push_str(name);
            }
        }
        for (flag, name) in [
            (self.features.multiprocess, "multiprocess+"),
            (self.features.swbreak, "swbreak+"),
            (self.features.hwbreak, "hwbreak+"),
            (self.features.fork_events, "fork-events+"),
            (self.features.vfork_events, "vfork-events+"),
            (self.features.exec_events, "exec-events+"),
        ] {
            if flag {
                r.push(';');
                r.push_str(name);
            }
        }
        if self.features.dialect == Dialect::Lldb {
            r.push_str(";native-signals+");
        }
        // Only the CPU session offers accelerator plugins; lldb checks the
        // feature on every connection (research/lldb-accelerator.md §1.1).
        let gpu = self
            .mux
            .as_ref()
            .is_some_and(|m| m.borrow().gpu().is_some());
        if self.role == super::Role::Cpu && gpu {
            r.push_str(";accelerator-plugins+");
        }
        self.send(r.as_bytes());
    }

    fn handle_question(&mut self) {
        let opts = self.features.stop_options();
        match self.journal.reply(&opts) {
            Some(r) => self.send(&r),
            // No process and nothing recorded (extended mode): gdbserver
            // answers W00.
            None => self.send(b"W00"),
        }
    }

    /// `qGetTLSAddr`: computed from glibc's thread_db descriptors
    /// (native::tls), as libthread_db does for gdbserver.
    fn handle_get_tls_addr(&mut self, thread: ThreadId, offset: u64, lm: u64) {
        let Some((pid, tid)) = self.resolve_thread(Some(thread)) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such thread");
            return;
        };
        let Some(t) = self.procs.get_mut(&pid) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process");
            return;
        };
        match crate::native::tls_address(t.as_mut(), pid, tid, offset, lm) {
            Ok(addr) => self.send(format!("{addr:x}").as_bytes()),
            Err(e) => {
                tracing::debug!(target: "session", session = self.id, "qGetTLSAddr: {e}");
                self.send_error(crate::error::ErrorCode::Io, &e);
            }
        }
    }

    /// `qXfer:siginfo:write` on the general thread (as the read).
    fn handle_siginfo_write(&mut self, offset: u64, data: &[u8]) {
        let Some((pid, tid)) = self.g_thread.or_else(|| {
            self.resolve_thread(Some(ThreadId {
                pid: None,
                tid: crate::packet::IdSel::Any,
            }))
        }) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no thread");
            return;
        };
        self.xfer_cache.clear();
        let r = match self.procs.get_mut(&pid) {
            Some(t) => match t.support_siginfo() {
                Some(s) => s.write_siginfo(tid, offset, data),
                None => Err(TargetError::Unsupported("siginfo write")),
            },
            None => Err(TargetError::Invalid("no such process".into())),
        };
        match r {
            Ok(n) => self.send(format!("{n:x}").as_bytes()),
            Err(e) => self.send_target_error(&e),
        }
    }

    fn handle_qc(&mut self) {
        let Some(pid) = self.current else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        };
        let tid = match self.journal.event() {
            Some(StopEvent::Stopped { pid: p, tid, .. }) if *p == pid => Some(*tid),
            _ => self
                .procs
                .get(&pid)
                .and_then(|t| t.threads().first().copied()),
        };
        let tid = self
            .g_thread
            .filter(|(p, _)| *p == pid)
            .map(|(_, t)| t)
            .or(tid);
        match tid {
            Some(tid) => {
                let mut out = b"QC".to_vec();
                thread_id(&mut out, pid, tid, self.features.multiprocess);
                self.send(&out);
            }
            None => self.send_error(crate::error::ErrorCode::NoSuchProcess, "no thread"),
        }
    }

    fn handle_set_thread(&mut self, op: HOp, id: ThreadId) {
        if self.procs.is_empty() {
            // gdb sends Hgp0.0 / Hg0 before any process exists in
            // extended mode; gdbserver answers E01 there.
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        }
        let sel = if id.tid == IdSel::All {
            None
        } else {
            match self.resolve_thread(Some(id)) {
                Some(t) => Some(t),
                None => {
                    self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such thread");
                    return;
                }
            }
        };
        if let Some((pid, _)) = sel {
            self.current = Some(pid);
        }
        match op {
            HOp::General => self.g_thread = sel,
            HOp::Continue => self.c_thread = sel,
        }
        self.send(&reply::ok());
    }

    /// Map a wire thread id to (pid, tid). `Any` picks the stopped thread
    /// or the first one; `All` has no single answer.
    pub(super) fn resolve_thread(&self, id: Option<ThreadId>) -> Option<(Pid, Tid)> {
        let id = id?;
        let pid = match id.pid {
            Some(IdSel::Id(p)) => Pid::try_from(p).ok()?,
            _ => self.current.or_else(|| self.procs.keys().next().copied())?,
        };
        let t = self.procs.get(&pid)?;
        match id.tid {
            IdSel::Id(tid) => t.threads().contains(&tid).then_some((pid, tid)),
            IdSel::Any | IdSel::All => {
                let stopped = match self.journal.event() {
                    Some(StopEvent::Stopped { pid: p, tid, .. }) if *p == pid => Some(*tid),
                    _ => None,
                };
                let tid = stopped
                    .filter(|t| {
                        self.procs
                            .get(&pid)
                            .is_some_and(|x| x.threads().contains(t))
                    })
                    .or_else(|| t.threads().first().copied())?;
                Some((pid, tid))
            }
        }
    }

    pub(super) fn reg_thread(&self, suffix: Option<ThreadId>) -> Result<(Pid, Tid), TargetError> {
        if suffix.is_some() {
            return self
                .resolve_thread(suffix)
                .ok_or(TargetError::Invalid("no such thread".into()));
        }
        if let Some(t) = self
            .g_thread
            .filter(|(p, t)| self.procs.get(p).is_some_and(|x| x.threads().contains(t)))
        {
            return Ok(t);
        }
        self.resolve_thread(Some(ThreadId {
            pid: None,
            tid: IdSel::Any,
        }))
        .ok_or(TargetError::Invalid("no process".into()))
    }

    pub(super) fn target_mut(&mut self, pid: Pid) -> Result<&mut Box<dyn Target>, TargetError> {
        self.procs
            .get_mut(&pid)
            .ok_or(TargetError::Gone(u64::from(pid)))
    }

    /// `Z` (`insert`) or `z` on the current process; what succeeds is
    /// tracked as the client's (taken out if it vanishes with `--multi`).
    fn handle_z(&mut self, insert: bool, kind: BreakpointKind, addr: u64, len: u64) {
        let r = self.current_pid().and_then(|pid| {
            let t = self.target_mut(pid)?;
            if insert {
                t.insert_breakpoint(kind, addr, len)?;
            } else {
                t.remove_breakpoint(kind, addr, len)?;
            }
            Ok(pid)
        });
        if let Ok(pid) = r {
            if insert {
                self.client_bps.inserted(ClientBreakpoint {
                    pid,
                    kind,
                    addr,
                    len,
                });
            } else {
                self.client_bps.removed(pid, kind, addr, len);
            }
        }
        self.reply_unit(r.map(|_| ()));
    }

    /// `Z0` with conditions: inserted as a plain one, then the conditions
    /// set; an error in either answers the packet.
    fn handle_z_conditional(&mut self, addr: u64, len: u64, conditions: Vec<Vec<u8>>) {
        let r = self.current_pid().and_then(|pid| {
            let t = self.target_mut(pid)?;
            t.insert_breakpoint(BreakpointKind::Software, addr, len)?;
            t.set_breakpoint_conditions(addr, conditions)?;
            Ok(pid)
        });
        if let Ok(pid) = r {
            self.client_bps.inserted(ClientBreakpoint {
                pid,
                kind: BreakpointKind::Software,
                addr,
                len,
            });
        }
        self.reply_unit(r.map(|_| ()));
    }

    /// Drop a process that is gone (exited, killed, detached) from the
    /// session: its target, its client breakpoints, and `current` if it
    /// was that one.
    fn release_process(&mut self, pid: Pid) -> Option<Box<dyn Target>> {
        let t = self.procs.remove(&pid);
        self.client_bps.forget_process(pid);
        if self.current == Some(pid) {
            self.current = self.procs.keys().next().copied();
        }
        t
    }

    /// The process memory and breakpoint packets address.
    fn current_pid(&self) -> Result<Pid, TargetError> {
        self.current
            .or_else(|| self.procs.keys().next().copied())
            .ok_or(TargetError::Invalid("no process".into()))
    }

    pub(super) fn current_target(&mut self) -> Result<&mut Box<dyn Target>, TargetError> {
        let pid = self.current_pid()?;
        self.target_mut(pid)
    }

    fn handle_g(&mut self, thread: Option<ThreadId>) {
        let r = self
            .reg_thread(thread)
            .and_then(|(pid, tid)| self.target_mut(pid)?.read_g_registers(tid));
        match r {
            Ok(v) => self.send(&reply::hex_bytes(&v)),
            Err(e) => self.send_target_error(&e),
        }
    }

    pub(super) fn signal_from_wire(&self, s: u8) -> Option<i32> {
        match self.features.dialect {
            Dialect::Lldb => Some(i32::from(s)),
            Dialect::Gdb => signals::gdb_to_linux(s),
        }
    }

    fn handle_c_s(&mut self, step: bool, signal: Option<u8>, addr: Option<u64>) {
        let sig = match signal.map(|s| self.signal_from_wire(s)) {
            Some(None) => {
                self.send_error(crate::error::ErrorCode::Invalid, "unknown signal number");
                return;
            }
            Some(s) => s.filter(|s| *s != 0),
            None => None,
        };
        let Some(pid) = self.current.or_else(|| self.procs.keys().next().copied()) else {
            self.reply_no_process_resume();
            return;
        };
        let tid = self
            .c_thread
            .filter(|(p, _)| *p == pid)
            .map(|(_, t)| t)
            .or_else(|| {
                self.resolve_thread(Some(ThreadId {
                    pid: None,
                    tid: IdSel::Any,
                }))
                .map(|(_, t)| t)
            });
        let Some(tid) = tid else {
            self.reply_no_process_resume();
            return;
        };
        if let Some(addr) = addr {
            let pc_reg = self.procs.get(&pid).and_then(|t| {
                t.registers()
                    .iter()
                    .find(|r| r.generic == Some("pc"))
                    .map(|r| r.regnum)
            });
            if let Some(regnum) = pc_reg {
                if let Err(e) = self
                    .target_mut(pid)
                    .and_then(|t| t.write_register(tid, regnum, &addr.to_le_bytes()))
                {
                    self.send_target_error(&e);
                    return;
                }
            }
        }
        let action = if step {
            ResumeAction::Step(sig)
        } else {
            ResumeAction::Continue(sig)
        };
        let plan = if step {
            // `s`: only the selected thread moves (others stay stopped).
            ResumePlan {
                threads: vec![(tid, action)],
                default: None,
            }
        } else {
            ResumePlan {
                threads: vec![(tid, action)],
                default: Some(ResumeAction::Continue(None)),
            }
        };
        let mut plans = BTreeMap::new();
        plans.insert(pid, plan);
        self.start_resume(plans);
    }

    fn handle_vcont(&mut self, actions: &[VContAction]) {
        if self.procs.is_empty() {
            self.reply_no_process_resume();
            return;
        }
        let ranges = actions
            .iter()
            .any(|a| matches!(a.kind, VContKind::Range(..)));
        if ranges && !self.capabilities().range_step {
            // Not in our `vCont?` reply: refused, never narrowed to a step.
            self.send_target_error(&TargetError::Unsupported("range stepping (vCont;r)"));
            return;
        }
        let mut plans: BTreeMap<Pid, ResumePlan> = BTreeMap::new();
        let mut default: Option<ResumeAction> = None;
        for a in actions {
            let action = match a.kind {
                VContKind::Continue => ResumeAction::Continue(None),
                VContKind::Step => ResumeAction::Step(None),
                VContKind::Stop => ResumeAction::Stop,
                VContKind::Range(start, end) => ResumeAction::RangeStep { start, end },
                VContKind::ContinueSig(s) | VContKind::StepSig(s) => {
                    let Some(sig) = self.signal_from_wire(s) else {
                        self.send_error(crate::error::ErrorCode::Invalid, "unknown signal number");
                        return;
                    };
                    let sig = Some(sig).filter(|s| *s != 0);
                    if matches!(a.kind, VContKind::ContinueSig(_)) {
                        ResumeAction::Continue(sig)
                    } else {
                        ResumeAction::Step(sig)
                    }
                }
            };
            match a.thread {
                None => {
                    if default.is_none() {
                        default = Some(action);
                    }
                }
                Some(id) if id.tid == IdSel::All => {
                    // `p<pid>.-1` or `-1`: default for that process (or all).
                    match id.pid {
                        Some(IdSel::Id(p)) => {
                            let Ok(p) = Pid::try_from(p) else { continue };
                            let plan = plans.entry(p).or_insert_with(|| ResumePlan {
                                threads: vec![],
                                default: None,
                            });
                            if plan.default.is_none() {
                                plan.default = Some(action);
                            }
                        }
                        _ => {
                            if default.is_none() {
                                default = Some(action);
                            }
                        }
                    }
                }
                Some(id) => {
                    let Some((pid, tid)) = self.resolve_thread(Some(id)) else {
                        self.send_error(
                            crate::error::ErrorCode::NoSuchProcess,
                            "vCont names an unknown thread",
                        );
                        return;
                    };
                    let plan = plans.entry(pid).or_insert_with(|| ResumePlan {
                        threads: vec![],
                        default: None,
                    });
                    // The first action that matches a thread wins.
                    if !plan.threads.iter().any(|(t, _)| *t == tid) {
                        plan.threads.push((tid, action));
                    }
                }
            }
        }
        for pid in self.procs.keys() {
            let plan = plans.entry(*pid).or_insert_with(|| ResumePlan {
                threads: vec![],
                default: None,
            });
            if plan.default.is_none() {
                plan.default = default;
            }
        }
        plans.retain(|_, p| {
            !p.threads.iter().all(|(_, a)| *a == ResumeAction::Stop)
                || matches!(p.default, Some(a) if a != ResumeAction::Stop)
        });
        if plans.is_empty() {
            self.send_error(crate::error::ErrorCode::Invalid, "vCont resumes nothing");
            return;
        }
        self.start_resume(plans);
    }

    fn reply_no_process_resume(&mut self) {
        // The process is gone (e.g. killed from outside while stopped):
        // report its end again, or an error if nothing was ever recorded.
        let opts = self.features.stop_options();
        match self.journal.reply(&opts) {
            Some(r)
                if matches!(
                    self.journal.event(),
                    Some(StopEvent::Exited { .. } | StopEvent::Terminated { .. })
                ) =>
            {
                self.send(&r)
            }
            _ => self.send_error(
                crate::error::ErrorCode::NoSuchProcess,
                "no process to resume",
            ),
        }
    }

    fn start_resume(&mut self, plans: BTreeMap<Pid, ResumePlan>) {
        self.xfer_cache.clear();
        self.last_plans = plans.clone();
        // A thread sitting on one of the GPU library's own breakpoints must
        // get off it first, out of the client's sight.
        if self.gpu_prepare_resume(&plans) {
            self.run = super::RunState::Running;
            self.on_target_event();
            return;
        }
        let mut resumed = 0;
        for (pid, plan) in plans {
            let r = match self.procs.get_mut(&pid) {
                Some(t) => t.resume(&plan),
                None => continue,
            };
            match r {
                Ok(()) => resumed += 1,
                Err(TargetError::Running) => {}
                Err(e) => {
                    self.send_target_error(&e);
                    return;
                }
            }
        }
        if resumed == 0 {
            self.send_error(
                crate::error::ErrorCode::NoSuchProcess,
                "nothing was resumed",
            );
            return;
        }
        self.run = super::RunState::Running;
        // Events already queued by the target (pending stops of other
        // threads) are picked up at once, and so are GPU stops that
        // happened while the CPU was stopped (gdb's GPU path).
        self.on_target_event();
        self.gpu_report_stop();
    }

    pub(super) fn handle_interrupt(&mut self) {
        if !self.is_running() {
            tracing::debug!(target: "packets", session = self.id, "interrupt while stopped: ignored");
            return;
        }
        for t in self.procs.values_mut() {
            if let Err(e) = t.interrupt() {
                tracing::warn!(target: "ptrace", "interrupt failed: {e}");
            }
        }
        // A GPU target with no wave to stop reports the interrupt at once,
        // but it has no fd that would wake the loop: poll it now (lldb
        // interrupts the GPU process to insert breakpoints while it runs;
        // without this the client waits out its packet timeout).
        if self.role == Role::Gpu {
            self.on_target_wakeup(false);
        }
    }

    /// A target reported a stop (or exit).
    pub(super) fn on_stop(&mut self, stop: StopEvent) {
        self.forward_program_output();
        if let StopEvent::Stopped {
            pid,
            kind: StopKind::Fork { child_pid, .. } | StopKind::VFork { child_pid, .. },
            ..
        } = &stop
        {
            if let Some(child) = self
                .procs
                .get_mut(pid)
                .and_then(|t| t.take_fork_child(*child_pid))
            {
                self.procs.insert(*child_pid, child);
                self.client_bps.forked(*pid, *child_pid);
            }
        }
        if let StopEvent::Stopped {
            pid,
            kind: StopKind::Exec { .. },
            ..
        } = &stop
        {
            self.client_bps.forget_software(*pid);
        }
        if self.is_running() && self.gpu_intercept(&stop) {
            return;
        }
        let stop = if self.is_running() {
            self.gpu_decorate_stop(stop)
        } else {
            stop
        };
        let ended = matches!(
            stop,
            StopEvent::Exited { .. } | StopEvent::Terminated { .. }
        );
        if ended && self.role == super::Role::Cpu {
            self.mux_event(crate::mux::MuxEvent::CpuProcessEnded(&stop));
        }
        self.record_stop(stop);
        if self.is_running() {
            let orphaned = match self.run {
                super::RunState::Orphaned { input_held } => Some(input_held),
                _ => None,
            };
            self.run = super::RunState::Stopped;
            if let Some(input_held) = orphaned {
                if input_held {
                    self.run = super::RunState::StoppedWithHeldInput;
                }
                // The client that resumed is gone (`--multi`): the stop
                // waits in the journal for the next client's `?`.
                tracing::info!(target: "session", session = self.id, "stop journaled for the next client");
                // The processes are stopped now: take out what the vanished
                // client inserted (the journal keeps the stop as it was).
                self.remove_client_breakpoints();
                return;
            }
            let opts = self.features.stop_options();
            if let Some(r) = self.journal.reply(&opts) {
                self.send(&r);
            }
        }
    }

    /// Capture everything a stop reply needs, now, into the journal.
    pub(super) fn record_stop(&mut self, stop: StopEvent) {
        self.xfer_cache.clear();
        let (pid, tid) = match &stop {
            StopEvent::Stopped { pid, tid, .. } => (*pid, *tid),
            StopEvent::Exited { pid, .. } | StopEvent::Terminated { pid, .. } => {
                let pid = *pid;
                self.release_process(pid);
                self.g_thread = self.g_thread.filter(|(p, _)| *p != pid);
                self.c_thread = self.c_thread.filter(|(p, _)| *p != pid);
                self.journal.record(
                    StopSnapshot {
                        event: stop,
                        expedited: vec![],
                        threads: vec![],
                        thread_name: None,
                        core: None,
                    },
                    BTreeMap::new(),
                );
                return;
            }
        };
        self.current = Some(pid);
        self.g_thread = Some((pid, tid));
        self.c_thread = None;
        let Some(t) = self.procs.get_mut(&pid) else {
            return;
        };
        let expedited_regs: Vec<u32> = super::expedited_registers(t.registers());
        let expedite = |t: &mut Box<dyn Target>, tid: Tid| -> Vec<(u32, Vec<u8>)> {
            expedited_regs
                .iter()
                .filter_map(|r| t.read_register(tid, *r).ok().map(|v| (*r, v)))
                .collect()
        };
        let threads = t.threads();
        // The first stop of an attached process (the session's dialect is
        // not known yet when it is recorded).
        let initial = matches!(
            &stop,
            StopEvent::Stopped {
                kind: StopKind::Initial,
                ..
            }
        ) && t.attached();
        let mut snaps = Vec::with_capacity(threads.len());
        let mut others = BTreeMap::new();
        for th in &threads {
            let pc = t.pc(*th).unwrap_or(0);
            snaps.push(ThreadSnapshot { tid: *th, pc });
            if *th != tid && (self.features.list_threads || initial) {
                let ex = expedite(t, *th);
                let mut snap = Journal::quiet(pid, *th, ex, t.thread_name(*th));
                if initial {
                    // lldb-server: after an attach every thread shows the
                    // SIGSTOP that stopped it.
                    snap.event = StopEvent::Stopped {
                        pid,
                        tid: *th,
                        signal: 0,
                        kind: StopKind::Initial,
                    };
                }
                others.insert(*th, snap);
            }
        }
        if self.features.dialect == Dialect::Lldb {
            // lldb-server's model: every thread that stopped with a reason
            // shows it in this stop (jThreadsInfo, qThreadStopInfo).
            for (th, signal, kind) in t.take_other_stops() {
                let mut snap = Journal::quiet(pid, th, expedite(t, th), t.thread_name(th));
                snap.event = StopEvent::Stopped {
                    pid,
                    tid: th,
                    signal,
                    kind,
                };
                others.insert(th, snap);
            }
        }
        // The name (lldb's `name:`) costs a /proc read per stop: only for
        // clients that show it. `core:` is left out of stop replies (gdb
        // reads cores from qXfer:threads; lldb-server sends none): it
        // would cost another /proc read on every single step.
        let thread_name = if self.features.list_threads {
            t.thread_name(tid)
        } else {
            None
        };
        let snap = StopSnapshot {
            expedited: expedite(t, tid),
            threads: snaps,
            thread_name,
            core: None,
            event: stop,
        };
        self.journal.record(snap, others);
    }

    fn handle_detach(&mut self, pid: Option<u64>) {
        let pid = match pid {
            Some(p) => Pid::try_from(p).ok(),
            None => self.current,
        };
        let Some(pid) = pid.filter(|p| self.procs.contains_key(p)) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process");
            return;
        };
        let r = self.procs.get_mut(&pid).map(|t| t.detach());
        match r {
            Some(Ok(())) => {
                // Detaching took every breakpoint out of the process.
                self.release_process(pid);
                self.send(&reply::ok());
                tracing::info!(target: "ptrace", session = self.id, pid, "detached");
                if self.role == super::Role::Cpu {
                    self.mux_event(crate::mux::MuxEvent::CpuProcessReleased {
                        pid,
                        how: crate::mux::Release::Detached,
                    });
                }
                self.journal_forget(pid);
                if self.procs.is_empty() {
                    self.journal.clear();
                    if !self.features.extended {
                        self.control = SessionControl::Close;
                    }
                }
            }
            Some(Err(e)) => self.send_target_error(&e),
            None => self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process"),
        }
    }

    /// `pid` is gone (detached, killed) while other processes stay: a
    /// later `?` must not replay its stop, so the journal gets a quiet stop
    /// (signal 0) of the process that is now current. With no process left
    /// the journal is as the caller left it.
    fn journal_forget(&mut self, pid: Pid) {
        if self.journal.event().map(StopEvent::pid) != Some(pid) {
            return;
        }
        let Some(cur) = self.current.filter(|p| self.procs.contains_key(p)) else {
            return;
        };
        let tid = self
            .procs
            .get(&cur)
            .and_then(|t| t.threads().first().copied());
        if let Some(tid) = tid {
            self.record_stop(StopEvent::Stopped {
                pid: cur,
                tid,
                signal: 0,
                kind: crate::stop::StopKind::Signal,
            });
        }
    }

    fn handle_kill(&mut self, pid: Option<u64>, vkill: bool) {
        let pid = match pid {
            Some(p) => Pid::try_from(p).ok(),
            None => self.current,
        };
        let Some(pid) = pid.filter(|p| self.procs.contains_key(p)) else {
            if pid.is_none() && !vkill {
                // `k` with nothing to kill.
                self.send(b"X09");
            } else {
                self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such process");
            }
            return;
        };
        if let Some(mut t) = self.release_process(pid) {
            if let Err(e) = t.kill() {
                tracing::warn!(target: "ptrace", pid, "kill: {e}");
            }
            if self.role == super::Role::Cpu {
                self.mux_event(crate::mux::MuxEvent::CpuProcessReleased {
                    pid,
                    how: crate::mux::Release::Killed,
                });
            }
        }
        let stop = StopEvent::Terminated {
            pid,
            signal: libc::SIGKILL,
        };
        self.record_stop(stop);
        // vKill answers OK; `k` answers the exit like lldb-server
        // (`X09;process:pid`, lldb waits for it; gdb ignores it).
        let opts = self.features.stop_options();
        if vkill {
            self.send(&reply::ok());
        } else if let Some(r) = self.journal.reply(&opts) {
            self.send(&r);
        }
        self.journal_forget(pid);
        if self.procs.is_empty() && !self.features.extended {
            self.control = SessionControl::Close;
        }
    }
}

/// `M`/`X`: all of `data` or nothing. A range that runs off the end of a
/// mapping is refused before anything is written (the kernel would write
/// the mapped part and stop); should a write still come up short, what it
/// wrote is put back.
fn write_memory_whole(t: &mut dyn Target, addr: u64, data: &[u8]) -> Result<(), TargetError> {
    let short = |what: &str| TargetError::Errno {
        what: format!(
            "{what} at {addr:#x}: {} bytes do not fit the mapping",
            data.len()
        ),
        errno: nix::errno::Errno::EFAULT,
    };
    let old = t.read_memory(addr, data.len())?;
    if old.len() < data.len() {
        return Err(short("write"));
    }
    let n = t.write_memory(addr, data)?;
    if n == data.len() {
        return Ok(());
    }
    if let Some(put_back) = old.get(..n) {
        if let Err(e) = t.write_memory(addr, put_back) {
            tracing::warn!(target: "ptrace", "putting back a short write at {addr:#x}: {e}");
        }
    }
    Err(short("short write"))
}
