//! Breakpoints and watchpoints: `Z`/`z` (packets: `packet/breakpoint.rs`).

use crate::session::breakpoints::ClientBreakpoint;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::BreakpointKind;

impl<R: SessionRole> Session<R> {
    /// `Z` (`insert`) or `z` on the current process; what succeeds is
    /// tracked as the client's (taken out if it vanishes with `--multi`).
    pub(in crate::session) fn handle_z(
        &mut self,
        insert: bool,
        kind: BreakpointKind,
        addr: u64,
        len: u64,
    ) {
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
    pub(in crate::session) fn handle_z_conditional(
        &mut self,
        addr: u64,
        len: u64,
        conditions: Vec<Vec<u8>>,
        commands: Vec<Vec<u8>>,
    ) {
        let r = self.current_pid().and_then(|pid| {
            let t = self.target_mut(pid)?;
            t.insert_breakpoint(BreakpointKind::Software, addr, len)?;
            t.set_breakpoint_conditions(addr, conditions)?;
            t.set_breakpoint_commands(addr, commands)?;
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
}
