//! Threads: `H`, `T`, `qC`, `qfThreadInfo`/`qsThreadInfo`, `qAttached`,
//! `qThreadExtraInfo`, `qGetTLSAddr`, and the mapping of wire thread ids
//! to processes and threads (packets: `packet/query.rs`, `packet/thread_id.rs`).

use crate::packet::reply;
use crate::packet::stop_reply::thread_id;
use crate::packet::HOp;
use crate::packet::IdSel;
use crate::packet::ThreadId;
use crate::session::Session;
use crate::session::SessionRole;
use crate::stop::StopEvent;
use crate::target::Pid;
use crate::target::Tid;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_thread_alive(&mut self, id: ThreadId) {
        let ok = self
            .resolve_thread(Some(id))
            .is_some_and(|(pid, tid)| self.procs.get(&pid).is_some_and(|t| t.has_thread(tid)));
        if ok {
            self.send(&reply::ok());
        } else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no such thread");
        }
    }

    pub(in crate::session) fn handle_thread_info_first(&mut self) {
        if self.features.disabled.qfthreadinfo {
            self.send(&reply::empty());
            return;
        }
        self.thread_cursor = true;
        if let Err(e) = self.send_thread_list() {
            self.send_target_error(&e);
        }
    }

    pub(in crate::session) fn handle_thread_info_next(&mut self) {
        if self.features.disabled.qfthreadinfo {
            self.send(&reply::empty());
            return;
        }
        self.thread_cursor = false;
        self.send(b"l");
    }

    pub(in crate::session) fn handle_attached(&mut self) {
        match self.current_target() {
            Ok(t) => {
                let a = if t.attached() { b"1" } else { b"0" };
                self.send(a);
            }
            Err(e) => self.send_target_error(&e),
        }
    }

    pub(in crate::session) fn handle_thread_extra_info(&mut self, id: ThreadId) {
        let name = self
            .resolve_thread(Some(id))
            .and_then(|(pid, tid)| self.procs.get(&pid)?.thread_name(tid))
            .unwrap_or_default();
        self.send(&reply::hex_bytes(name.as_bytes()));
    }

    /// `qGetTLSAddr`: computed from glibc's thread_db descriptors
    /// (native::tls), as libthread_db does for gdbserver.
    pub(in crate::session) fn handle_get_tls_addr(
        &mut self,
        thread: ThreadId,
        offset: u64,
        lm: u64,
    ) {
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

    pub(in crate::session) fn handle_qc(&mut self) {
        if self.features.disabled.qc {
            self.send(&reply::empty());
            return;
        }
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
                let multiprocess = self.features.multiprocess;
                self.send_built(|out| {
                    out.extend_from_slice(b"QC");
                    thread_id(out, pid, tid, multiprocess);
                });
            }
            None => self.send_error(crate::error::ErrorCode::NoSuchProcess, "no thread"),
        }
    }

    pub(in crate::session) fn handle_set_thread(&mut self, op: HOp, id: ThreadId) {
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
    pub(in crate::session) fn resolve_thread(&self, id: Option<ThreadId>) -> Option<(Pid, Tid)> {
        let id = id?;
        let pid = match id.pid {
            Some(IdSel::Id(p)) => Pid::try_from(p).ok()?,
            _ => self.current.or_else(|| self.procs.keys().next().copied())?,
        };
        let t = self.procs.get(&pid)?;
        match id.tid {
            IdSel::Id(tid) => t.has_thread(tid).then_some((pid, tid)),
            IdSel::Any | IdSel::All => {
                let stopped = match self.journal.event() {
                    Some(StopEvent::Stopped { pid: p, tid, .. }) if *p == pid => Some(*tid),
                    _ => None,
                };
                let tid = stopped
                    .filter(|t| self.procs.get(&pid).is_some_and(|x| x.has_thread(*t)))
                    .or_else(|| t.threads().first().copied())?;
                Some((pid, tid))
            }
        }
    }
}
