//! The breakpoints and watchpoints the client inserted (`Z0`..`Z4`), per
//! process.
//!
//! With `--multi` a client can vanish while its breakpoints are still in
//! its processes. The next client does not know them, so they would trap
//! at addresses it never set: the session takes them out as soon as the
//! processes are stopped (docs/decisions.md §6). The stub's own internal
//! breakpoints (the GPU runtime hook) are not the client's and stay: a
//! target shares a patch between both owners and removing the client's
//! claim keeps the internal one planted.

use std::collections::BTreeMap;

use super::Session;
use super::SessionRole;
use crate::target::BreakpointKind;
use crate::target::Pid;

/// One breakpoint or watchpoint as the client's `Z` packet named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientBreakpoint {
    /// Process it was inserted in.
    pub pid: Pid,
    /// `Z0`..`Z4`.
    pub kind: BreakpointKind,
    /// Address.
    pub addr: u64,
    /// Length (instruction kind for `Z0`/`Z1`, bytes for watchpoints).
    pub len: u64,
}

/// What makes two insertions the same one for a target: `Z0`/`Z1` are one
/// per address (targets ignore or normalise their length: the client owns
/// a patch or not, it holds no count), a watchpoint is one per
/// (address, length).
type Key = (Pid, u8, u64, u64);

fn key(pid: Pid, kind: BreakpointKind, addr: u64, len: u64) -> Key {
    let (code, len) = match kind {
        BreakpointKind::Software => (0, 0),
        BreakpointKind::Hardware => (1, 0),
        BreakpointKind::WatchWrite => (2, len),
        BreakpointKind::WatchRead => (3, len),
        BreakpointKind::WatchAccess => (4, len),
    };
    (pid, code, addr, len)
}

/// The client's insertions that are still in place, mirroring the targets:
/// [`crate::target::Target::insert_breakpoint`] is idempotent, so
/// inserting the same one again (gdb re-sends `Z0` for an address it
/// already set) is one entry, and one `z` removes it.
#[derive(Debug, Clone, Default)]
pub struct ClientBreakpoints {
    map: BTreeMap<Key, ClientBreakpoint>,
}

impl ClientBreakpoints {
    /// A `Z` packet succeeded.
    pub fn inserted(&mut self, bp: ClientBreakpoint) {
        self.map.insert(key(bp.pid, bp.kind, bp.addr, bp.len), bp);
    }

    /// A `z` packet succeeded.
    pub fn removed(&mut self, pid: Pid, kind: BreakpointKind, addr: u64, len: u64) {
        self.map.remove(&key(pid, kind, addr, len));
    }

    /// The process is gone (exited, killed, detached): nothing of it is
    /// left to remove.
    pub fn forget_process(&mut self, pid: Pid) {
        self.map.retain(|k, _| k.0 != pid);
    }

    /// The process exec'd: its software breakpoints went with the old image
    /// (debug registers survive exec).
    pub fn forget_software(&mut self, pid: Pid) {
        self.map
            .retain(|k, b| k.0 != pid || b.kind != BreakpointKind::Software);
    }

    /// A traced fork child was adopted: it has a copy of its parent's
    /// memory, `int3` patches included (debug registers are not inherited).
    pub fn forked(&mut self, parent: Pid, child: Pid) {
        let copies: Vec<ClientBreakpoint> = self
            .map
            .values()
            .filter(|b| b.pid == parent && b.kind == BreakpointKind::Software)
            .map(|b| ClientBreakpoint { pid: child, ..*b })
            .collect();
        for b in copies {
            self.inserted(b);
        }
    }

    /// Forget everything (every process was released).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Number of insertions in place.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is in place.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Take every entry out (ordered by process, kind, address).
    pub fn take_all(&mut self) -> Vec<ClientBreakpoint> {
        std::mem::take(&mut self.map).into_values().collect()
    }
}

impl<R: SessionRole> Session<R> {
    /// `--multi`: the client that inserted these vanished. Take its
    /// breakpoints and watchpoints out of the (stopped) processes; the next
    /// client inserts its own. Internal breakpoints at the same addresses
    /// stay planted. The stop journal is not touched: the stop already
    /// happened and `?` replays it as it was.
    pub(super) fn remove_client_breakpoints(&mut self) {
        if self.client_bps.is_empty() {
            return;
        }
        let all = self.client_bps.take_all();
        let mut removed = 0usize;
        for bp in &all {
            let ClientBreakpoint {
                pid,
                kind,
                addr,
                len,
            } = *bp;
            let Some(t) = self.procs.get_mut(&pid) else {
                continue;
            };
            match t.remove_breakpoint(kind, addr, len) {
                Ok(()) => {
                    removed += 1;
                    tracing::info!(target: "session", session = self.id, pid, "removed {kind:?} at {addr:#x} (len {len}) that the vanished client inserted");
                }
                Err(e) => {
                    tracing::warn!(target: "session", session = self.id, pid, "cannot remove {kind:?} at {addr:#x} (len {len}) that the vanished client inserted: {e}");
                }
            }
        }
        tracing::info!(target: "session", session = self.id, removed, failed = all.len() - removed, "the vanished client's breakpoints and watchpoints are out of its processes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bp(pid: Pid, kind: BreakpointKind, addr: u64, len: u64) -> ClientBreakpoint {
        ClientBreakpoint {
            pid,
            kind,
            addr,
            len,
        }
    }

    #[test]
    fn repeated_insert_is_one_entry_removed_by_one_z() {
        let mut s = ClientBreakpoints::default();
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 1));
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 1));
        assert_eq!(s.len(), 1);
        s.removed(1, BreakpointKind::Software, 0x1000, 1);
        assert!(s.is_empty());
        // Removing what is not there is fine, as for targets.
        s.removed(1, BreakpointKind::Software, 0x1000, 1);
        assert!(s.is_empty());
    }

    #[test]
    fn execution_breakpoints_are_per_address_watchpoints_per_length() {
        let mut s = ClientBreakpoints::default();
        // The instruction kind of Z0/Z1 does not make another breakpoint.
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 1));
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 4));
        s.inserted(bp(1, BreakpointKind::Hardware, 0x1000, 1));
        assert_eq!(s.len(), 2);
        s.removed(1, BreakpointKind::Software, 0x1000, 2);
        s.removed(1, BreakpointKind::Hardware, 0x1000, 0);
        assert!(s.is_empty());

        s.inserted(bp(1, BreakpointKind::WatchWrite, 0x2000, 4));
        s.inserted(bp(1, BreakpointKind::WatchWrite, 0x2000, 8));
        s.inserted(bp(1, BreakpointKind::WatchAccess, 0x2000, 4));
        assert_eq!(s.len(), 3);
        s.removed(1, BreakpointKind::WatchWrite, 0x2000, 8);
        assert_eq!(
            s.take_all(),
            vec![
                bp(1, BreakpointKind::WatchWrite, 0x2000, 4),
                bp(1, BreakpointKind::WatchAccess, 0x2000, 4),
            ]
        );
        assert!(s.is_empty());
    }

    #[test]
    fn entries_are_per_process() {
        let mut s = ClientBreakpoints::default();
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 1));
        s.inserted(bp(2, BreakpointKind::Software, 0x1000, 1));
        s.inserted(bp(2, BreakpointKind::WatchWrite, 0x2000, 8));
        s.removed(1, BreakpointKind::Software, 0x1000, 1);
        assert_eq!(s.len(), 2);
        s.forget_process(2);
        assert!(s.is_empty());
    }

    #[test]
    fn fork_child_inherits_software_breakpoints_exec_drops_them() {
        let mut s = ClientBreakpoints::default();
        s.inserted(bp(1, BreakpointKind::Software, 0x1000, 1));
        s.inserted(bp(1, BreakpointKind::WatchWrite, 0x2000, 8));
        s.forked(1, 7);
        assert_eq!(s.len(), 3);
        s.forget_software(1);
        assert_eq!(
            s.take_all(),
            vec![
                bp(1, BreakpointKind::WatchWrite, 0x2000, 8),
                bp(7, BreakpointKind::Software, 0x1000, 1),
            ]
        );
    }

    #[test]
    fn take_all_empties() {
        let mut s = ClientBreakpoints::default();
        s.inserted(bp(3, BreakpointKind::WatchRead, 0x10, 2));
        assert_eq!(s.take_all().len(), 1);
        assert!(s.take_all().is_empty());
        s.inserted(bp(3, BreakpointKind::WatchRead, 0x10, 2));
        s.clear();
        assert!(s.is_empty());
    }
}
