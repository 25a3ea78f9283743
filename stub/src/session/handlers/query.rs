//! Negotiation and general queries: `qSupported`, `QStartNoAckMode`,
//! `vMustReplyEmpty`, `!`, `qSymbol`, `qOffsets` (`QNonStop` and `vStopped`: `../nonstop.rs`),
//! `QPassSignals`, `QProgramSignals`, `QCatchSyscalls`
//! (packets: `packet/query.rs`).

use crate::packet::reply;
use crate::session::Dialect;
use crate::session::Session;
use crate::session::SessionRole;
use crate::session::MAX_PACKET;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_start_no_ack(&mut self) {
        self.send(&reply::ok());
        self.framer.set_no_ack(true);
    }

    pub(in crate::session) fn handle_must_reply_empty(&mut self) {
        self.send(&reply::empty());
    }

    pub(in crate::session) fn handle_extended_mode(&mut self) {
        self.features.extended = true;
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_pass_signals(&mut self, sigs: &[u8]) {
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

    pub(in crate::session) fn handle_program_signals(&mut self) {
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_symbol(&mut self) {
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_offsets(&mut self) {
        self.send(&reply::empty());
    }

    pub(in crate::session) fn handle_catch_syscalls(&mut self, set: Option<Vec<u64>>) {
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

    /// The capabilities `qSupported` and `vCont?` advertise: the current
    /// target's; before a CPU session has a process (extended mode), those
    /// of the native Linux target its `vRun`/`vAttach` will create.
    pub(in crate::session) fn capabilities(&mut self) -> crate::target::Capabilities {
        match self.current_target() {
            Ok(t) => crate::target::Capabilities::of(t.as_mut()),
            Err(_) => self.role.idle_capabilities(),
        }
    }

    pub(in crate::session) fn handle_qsupported(&mut self, features: &[String]) {
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
        ] {
            if flag {
                r.push(';');
                r.push_str(name);
            }
        }
        // What the role adds (`role.rs`): syscall stops and osdata on the
        // CPU session.
        for name in self.role.qsupported_features() {
            r.push(';');
            r.push_str(name);
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
        let gpu = self
            .mux
            .as_ref()
            .is_some_and(|m| m.borrow().gpu().is_some());
        if let Some(f) = self.role.accelerator_feature(gpu) {
            r.push(';');
            r.push_str(f);
        }
        self.send(r.as_bytes());
    }
}
