//! The `qfThreadInfo` reply, kept while the thread lists are unchanged.
//!
//! A thread list of 10,000 GPU waves formats 10,000 thread ids (about
//! 100 KB); lldb and the bench ask for it again and again while the waves
//! stay the same. The GPU target hands out the same shared thread-id slice
//! until its waves change ([`crate::target::Target::try_thread_ids`]), so
//! the formatted reply is reused while every target's slice is the one it
//! was made from. A CPU target makes a new slice per call: its reply is
//! made each time, as before.

use std::rc::Rc;

use crate::packet::stop_reply::thread_id;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::Pid;
use crate::target::TargetResult;
use crate::target::Tid;

/// The last thread-list reply and what it was made from. Bounded by the
/// targets' thread counts (one reply).
#[derive(Default)]
pub(super) struct ThreadListCache {
    /// Each process's thread-id slice the reply was made from; holding
    /// them keeps their addresses from being reused.
    from: Vec<(Pid, Rc<[Tid]>)>,
    multiprocess: bool,
    /// `m` and the ids, or `l` when there are none; empty when not made.
    reply: Vec<u8>,
}

impl ThreadListCache {
    fn holds(&self, lists: &[(Pid, Rc<[Tid]>)], multiprocess: bool) -> bool {
        !self.reply.is_empty()
            && self.multiprocess == multiprocess
            && self.from.len() == lists.len()
            && self
                .from
                .iter()
                .zip(lists)
                .all(|(a, b)| a.0 == b.0 && Rc::ptr_eq(&a.1, &b.1))
    }

    fn make(&mut self, lists: Vec<(Pid, Rc<[Tid]>)>, multiprocess: bool) {
        let out = &mut self.reply;
        out.clear();
        out.push(b'm');
        let mut first = true;
        for (pid, tids) in &lists {
            for tid in tids.iter() {
                if !first {
                    out.push(b',');
                }
                first = false;
                thread_id(out, *pid, *tid, multiprocess);
            }
        }
        if first {
            // No thread: lldb-server answers `l`.
            out.clear();
            out.push(b'l');
        }
        self.from = lists;
        self.multiprocess = multiprocess;
    }
}

impl<R: SessionRole> Session<R> {
    /// Send the `qfThreadInfo` reply: every process's threads, made again
    /// only when a thread list changed.
    pub(in crate::session) fn send_thread_list(&mut self) -> TargetResult<()> {
        let mp = self.features.multiprocess;
        let mut lists = Vec::with_capacity(self.procs.len());
        for (pid, t) in &self.procs {
            lists.push((*pid, t.try_thread_ids()?));
        }
        if !self.thread_list.holds(&lists, mp) {
            self.thread_list.make(lists, mp);
        }
        let reply = std::mem::take(&mut self.thread_list.reply);
        self.send(&reply);
        self.thread_list.reply = reply;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_kept_while_the_slices_are_the_same() {
        let waves: Rc<[Tid]> = Rc::from(vec![0x10, 0x2a, 0x1_0000_0000]);
        let mut c = ThreadListCache::default();
        let lists = vec![(7, waves.clone())];
        assert!(!c.holds(&lists, false));
        c.make(lists.clone(), false);
        assert_eq!(c.reply, b"m10,2a,100000000");
        assert!(c.holds(&lists, false));
        // Multiprocess ids are another reply.
        assert!(!c.holds(&lists, true));
        c.make(lists.clone(), true);
        assert_eq!(c.reply, b"mp7.10,p7.2a,p7.100000000");
        // The same ids in a new slice (a changed list) make it again.
        let again: Rc<[Tid]> = Rc::from(vec![0x10, 0x2a, 0x1_0000_0000]);
        assert!(!c.holds(&[(7, again)], true));
        assert!(!c.holds(&[(7, waves.clone()), (8, waves)], true));
        c.make(Vec::new(), false);
        assert_eq!(c.reply, b"l");
    }
}
