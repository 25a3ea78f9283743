//! Registers: `g`, `G`, `p`, `P`, with lldb's `;thread:` suffix
//! (packets: `packet/regs.rs`).

use crate::packet::IdSel;
use crate::packet::ThreadId;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::Pid;
use crate::target::TargetError;
use crate::target::Tid;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_big_g(&mut self, data: &[u8], thread: Option<ThreadId>) {
        let r = self
            .reg_thread(thread)
            .and_then(|(pid, tid)| self.target_mut(pid)?.write_g_registers(tid, data));
        self.reply_unit(r);
    }

    pub(in crate::session) fn handle_p(&mut self, regnum: u32, thread: Option<ThreadId>) {
        let r = self
            .reg_thread(thread)
            .and_then(|(pid, tid)| self.target_mut(pid)?.read_register(tid, regnum));
        match r {
            Ok(v) => self.send_hex(&v),
            Err(e) => self.send_target_error(&e),
        }
    }

    pub(in crate::session) fn handle_big_p(
        &mut self,
        regnum: u32,
        value: &[u8],
        thread: Option<ThreadId>,
    ) {
        let r = self
            .reg_thread(thread)
            .and_then(|(pid, tid)| self.target_mut(pid)?.write_register(tid, regnum, value));
        self.reply_unit(r);
    }

    pub(in crate::session) fn reg_thread(
        &self,
        suffix: Option<ThreadId>,
    ) -> Result<(Pid, Tid), TargetError> {
        if suffix.is_some() {
            return self
                .resolve_thread(suffix)
                .ok_or_else(|| TargetError::Invalid("no such thread".into()));
        }
        if let Some(t) = self
            .g_thread
            .filter(|(p, t)| self.procs.get(p).is_some_and(|x| x.has_thread(*t)))
        {
            return Ok(t);
        }
        self.resolve_thread(Some(ThreadId {
            pid: None,
            tid: IdSel::Any,
        }))
        .ok_or_else(|| TargetError::Invalid("no process".into()))
    }

    pub(in crate::session) fn handle_g(&mut self, thread: Option<ThreadId>) {
        let r = self
            .reg_thread(thread)
            .and_then(|(pid, tid)| self.target_mut(pid)?.read_g_registers(tid));
        match r {
            Ok(v) => self.send_hex(&v),
            Err(e) => self.send_target_error(&e),
        }
    }
}
