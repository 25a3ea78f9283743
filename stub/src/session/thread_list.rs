//! The `qfThreadInfo` reply, kept framed while the thread lists are
//! unchanged.
//!
//! A thread list of 10,000 GPU waves formats 10,000 thread ids; lldb and
//! the bench ask for it again and again while the waves stay the same. The
//! GPU target hands out the same shared thread-id slice until its waves
//! change ([`crate::target::Target::try_thread_ids`]), so the reply is
//! reused while every target's slice is the one it was made from, and it
//! is kept as the framed packet (`$…#cc`): an unchanged list is one copy
//! into the output queue, with no escaping or checksum pass over it. A CPU
//! target makes a new slice per call: its reply is made each time, as
//! before.
//!
//! The ids' form ([`IdForm`]): lldb (23.1) reads a thread id without the
//! `p<pid>.` part as one of the current process's
//! (`GDBRemoteCommunicationClient::GetCurrentThreadIDs` keeps an id whose
//! pid is not given), so an lldb session with one process gets the pid on
//! the first id only (which is where lldb looks for a pid when it has no
//! other way to learn it) and bare thread ids after it: 10,000 waves are
//! about 50 KB instead of 120 KB. gdb (13) would file a bare id under its
//! current inferior, which need not be the process the id belongs to, so a
//! gdb session keeps `p<pid>.<tid>` on every id.

use std::rc::Rc;

use crate::packet::stop_reply::thread_id;
use crate::session::Dialect;
use crate::session::Session;
use crate::session::SessionRole;
use crate::target::Pid;
use crate::target::TargetResult;
use crate::target::Tid;

/// How the thread ids of a list are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IdForm {
    /// `<tid>`: no `multiprocess+`.
    Bare,
    /// `p<pid>.<tid>` on every id: gdb with `multiprocess+`, and lldb
    /// while the session has more than one process.
    Multiprocess,
    /// `p<pid>.<tid>` on the first id, `<tid>` on the others: lldb with
    /// `multiprocess+` and one process.
    PidOnFirst,
}

/// The last thread-list reply, framed, and what it was made from. Bounded
/// by the targets' thread counts (one reply).
#[derive(Default)]
pub(super) struct ThreadListCache {
    /// Each process's thread-id slice the reply was made from; holding
    /// them keeps their addresses from being reused.
    from: Vec<(Pid, Rc<[Tid]>)>,
    form: Option<IdForm>,
    /// `m` and the ids, or `l` when there are none; empty when not made.
    reply: Vec<u8>,
    /// `reply` framed (`$…#cc`), and whether it was run-length encoded;
    /// `None` while not framed since `reply` was made.
    framed: Vec<u8>,
    framed_rle: Option<bool>,
    /// A list (`m…`) went out since the server last asked: the client's
    /// `qsThreadInfo` is due at once ([`Session::take_follow_up_due`]).
    follow_up_due: bool,
}

impl ThreadListCache {
    fn holds(&self, lists: &[(Pid, Rc<[Tid]>)], form: IdForm) -> bool {
        !self.reply.is_empty()
            && self.form == Some(form)
            && self.from.len() == lists.len()
            && self
                .from
                .iter()
                .zip(lists)
                .all(|(a, b)| a.0 == b.0 && Rc::ptr_eq(&a.1, &b.1))
    }

    fn make(&mut self, lists: Vec<(Pid, Rc<[Tid]>)>, form: IdForm) {
        let out = &mut self.reply;
        out.clear();
        out.push(b'm');
        let mut first = true;
        for (pid, tids) in &lists {
            for tid in tids.iter() {
                if !first {
                    out.push(b',');
                }
                let with_pid = match form {
                    IdForm::Bare => false,
                    IdForm::Multiprocess => true,
                    IdForm::PidOnFirst => first,
                };
                first = false;
                thread_id(out, *pid, *tid, with_pid);
            }
        }
        if first {
            // No thread: lldb-server answers `l`.
            out.clear();
            out.push(b'l');
        }
        self.from = lists;
        self.form = Some(form);
        self.framed.clear();
        self.framed_rle = None;
    }
}

impl<R: SessionRole> Session<R> {
    /// The form of the thread ids of this session's thread list.
    fn thread_list_form(&self) -> IdForm {
        if !self.features.multiprocess {
            IdForm::Bare
        } else if self.features.dialect == Dialect::Lldb && self.procs.len() == 1 {
            IdForm::PidOnFirst
        } else {
            IdForm::Multiprocess
        }
    }

    /// Send the `qfThreadInfo` reply: every process's threads, made and
    /// framed again only when a thread list changed.
    pub(in crate::session) fn send_thread_list(&mut self) -> TargetResult<()> {
        let form = self.thread_list_form();
        let mut lists = Vec::with_capacity(self.procs.len());
        for (pid, t) in &self.procs {
            lists.push((*pid, t.try_thread_ids()?));
        }
        let cache = &mut self.thread_list;
        if !cache.holds(&lists, form) {
            cache.make(lists, form);
        }
        let rle = self.encoder.rle();
        if cache.framed_rle != Some(rle) {
            cache.framed.clear();
            self.encoder.packet(&cache.reply, &mut cache.framed);
            cache.framed_rle = Some(rle);
        }
        let framed = std::mem::take(&mut self.thread_list.framed);
        self.send_framed(&framed);
        self.thread_list.framed = framed;
        self.thread_list.follow_up_due = self.thread_list.reply.first() == Some(&b'm');
        Ok(())
    }

    /// Whether a reply since the last call obliges the client to send its
    /// next packet at once: a `qfThreadInfo` list (`m…`) is followed by
    /// `qsThreadInfo` (the protocol's list ends only with `l`). The server
    /// then spins briefly for it even while a target runs (`busy`).
    pub fn take_follow_up_due(&mut self) -> bool {
        std::mem::take(&mut self.thread_list.follow_up_due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::GpuRole;
    use crate::target::TargetError;
    use crate::wire::Encoder;

    #[test]
    fn the_reply_is_kept_while_the_slices_are_the_same() {
        let waves: Rc<[Tid]> = Rc::from(vec![0x10, 0x2a, 0x1_0000_0000]);
        let mut c = ThreadListCache::default();
        let lists = vec![(7, waves.clone())];
        assert!(!c.holds(&lists, IdForm::Bare));
        c.make(lists.clone(), IdForm::Bare);
        assert_eq!(c.reply, b"m10,2a,100000000");
        assert!(c.holds(&lists, IdForm::Bare));
        // Multiprocess ids are another reply.
        assert!(!c.holds(&lists, IdForm::Multiprocess));
        c.make(lists.clone(), IdForm::Multiprocess);
        assert_eq!(c.reply, b"mp7.10,p7.2a,p7.100000000");
        // lldb with one process: the pid on the first id only.
        assert!(!c.holds(&lists, IdForm::PidOnFirst));
        c.make(lists.clone(), IdForm::PidOnFirst);
        assert_eq!(c.reply, b"mp7.10,2a,100000000");
        // The same ids in a new slice (a changed list) make it again.
        let again: Rc<[Tid]> = Rc::from(vec![0x10, 0x2a, 0x1_0000_0000]);
        assert!(!c.holds(&[(7, again)], IdForm::PidOnFirst));
        assert!(!c.holds(&[(7, waves.clone()), (8, waves)], IdForm::PidOnFirst));
        c.make(Vec::new(), IdForm::Bare);
        assert_eq!(c.reply, b"l");
    }

    /// Making the reply again drops the framed packet of the old one.
    #[test]
    fn a_new_reply_drops_the_old_framing() {
        let mut c = ThreadListCache::default();
        c.make(vec![(7, Rc::from(vec![2, 3]))], IdForm::PidOnFirst);
        Encoder::new().packet(&c.reply, &mut c.framed);
        c.framed_rle = Some(false);
        c.make(vec![(7, Rc::from(vec![2]))], IdForm::PidOnFirst);
        assert!(c.framed.is_empty());
        assert_eq!(c.framed_rle, None);
    }

    /// A target whose thread-id slice the test replaces, as the GPU target
    /// does when its waves change (the same slice while they do not).
    struct Waves {
        arch: crate::target::ArchInfo,
        pid: Pid,
        tids: Rc<std::cell::RefCell<Rc<[Tid]>>>,
    }

    impl crate::target::Target for Waves {
        fn arch(&self) -> &crate::target::ArchInfo {
            &self.arch
        }
        fn registers(&self) -> &[crate::target::RegisterInfo] {
            &[]
        }
        fn pid(&self) -> Pid {
            self.pid
        }
        fn threads(&self) -> Vec<Tid> {
            self.tids.borrow().to_vec()
        }
        fn try_thread_ids(&self) -> TargetResult<Rc<[Tid]>> {
            Ok(self.tids.borrow().clone())
        }
        fn thread_name(&self, _tid: Tid) -> Option<String> {
            None
        }
        fn is_stopped(&self) -> bool {
            true
        }
        fn read_register(&mut self, _tid: Tid, _regnum: u32) -> TargetResult<Vec<u8>> {
            Err(TargetError::Unsupported("registers"))
        }
        fn write_register(&mut self, _tid: Tid, _regnum: u32, _value: &[u8]) -> TargetResult<()> {
            Err(TargetError::Unsupported("registers"))
        }
        fn read_g_registers(&mut self, _tid: Tid) -> TargetResult<Vec<u8>> {
            Err(TargetError::Unsupported("registers"))
        }
        fn write_g_registers(&mut self, _tid: Tid, _data: &[u8]) -> TargetResult<()> {
            Err(TargetError::Unsupported("registers"))
        }
        fn pc(&mut self, _tid: Tid) -> TargetResult<u64> {
            Err(TargetError::Unsupported("registers"))
        }
        fn read_memory(&mut self, _addr: u64, _len: usize) -> TargetResult<Vec<u8>> {
            Err(TargetError::Unsupported("memory"))
        }
        fn write_memory(&mut self, _addr: u64, _data: &[u8]) -> TargetResult<usize> {
            Err(TargetError::Unsupported("memory"))
        }
        fn insert_breakpoint(
            &mut self,
            _kind: crate::target::BreakpointKind,
            _addr: u64,
            _len: u64,
        ) -> TargetResult<()> {
            Err(TargetError::Unsupported("breakpoints"))
        }
        fn remove_breakpoint(
            &mut self,
            _kind: crate::target::BreakpointKind,
            _addr: u64,
            _len: u64,
        ) -> TargetResult<()> {
            Err(TargetError::Unsupported("breakpoints"))
        }
        fn resume(&mut self, _plan: &crate::target::ResumePlan) -> TargetResult<()> {
            Err(TargetError::Unsupported("resume"))
        }
        fn interrupt(&mut self) -> TargetResult<()> {
            Ok(())
        }
        fn process_events(&mut self) -> TargetResult<Option<crate::stop::StopEvent>> {
            Ok(None)
        }
        fn kill(&mut self) -> TargetResult<()> {
            Ok(())
        }
        fn detach(&mut self) -> TargetResult<()> {
            Ok(())
        }
        fn attached(&self) -> bool {
            false
        }
    }

    type Slot = Rc<std::cell::RefCell<Rc<[Tid]>>>;

    /// A GPU session in `dialect`, with a process per pid whose waves the
    /// returned slots hold.
    fn session(
        dialect: Dialect,
        multiprocess: bool,
        pids: &[Pid],
    ) -> (Session<GpuRole>, Vec<Slot>) {
        let mut s = Session::new_gpu(1, 1, 100);
        s.features.dialect = dialect;
        s.features.multiprocess = multiprocess;
        let mut slots = Vec::new();
        for pid in pids {
            let slot: Slot = Rc::new(std::cell::RefCell::new(Rc::from(Vec::new())));
            let t = Waves {
                arch: crate::target::ArchInfo {
                    triple: String::new(),
                    gdb_arch: String::new(),
                    osabi: None,
                    ptr_size: 8,
                    xml_types: String::new(),
                },
                pid: *pid,
                tids: slot.clone(),
            };
            s.procs.insert(*pid, Box::new(t));
            slots.push(slot);
        }
        (s, slots)
    }

    /// `qfThreadInfo` then `qsThreadInfo` through the session's input:
    /// the two payloads, each frame's checksum checked.
    fn list(s: &mut Session<GpuRole>) -> (String, String) {
        s.out.clear();
        s.on_input(b"$qfThreadInfo#bb$qsThreadInfo#c8");
        let text = String::from_utf8(s.out.clone()).unwrap();
        let mut payloads = Vec::new();
        for frame in text.split('$').skip(1) {
            let (body, sum) = frame.split_once('#').unwrap();
            let want = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
            assert_eq!(&sum[..2], format!("{want:02x}"), "checksum of {body}");
            payloads.push(body.to_string());
        }
        assert_eq!(payloads.len(), 2, "{text}");
        (payloads[0].clone(), payloads[1].clone())
    }

    /// What the list must say: written here, not by the code under test.
    fn expected(ids: &[(Pid, &[Tid])], pid_on: impl Fn(usize) -> bool) -> String {
        let mut all = Vec::new();
        for (pid, tids) in ids {
            for t in *tids {
                let n = all.len();
                all.push(if pid_on(n) {
                    format!("p{pid:x}.{t:x}")
                } else {
                    format!("{t:x}")
                });
            }
        }
        if all.is_empty() {
            "l".to_string()
        } else {
            format!("m{}", all.join(","))
        }
    }

    /// Waves appear, disappear and stop between lists, in each dialect
    /// and id form: every list says what the target holds at that moment
    /// (a kept reply is never sent for a changed slice), and an unchanged
    /// list is the same bytes.
    #[test]
    fn lists_follow_the_waves_in_every_dialect() {
        // (dialect, multiprocess, which ids carry the pid)
        type Case = (Dialect, bool, fn(usize) -> bool);
        let cases: [Case; 4] = [
            (Dialect::Lldb, true, |n| n == 0),
            (Dialect::Gdb, true, |_| true),
            (Dialect::Lldb, false, |_| false),
            (Dialect::Gdb, false, |_| false),
        ];
        for (dialect, mp, pid_on) in cases {
            let (mut s, slots) = session(dialect, mp, &[0x4d2]);
            let what = format!("{dialect:?}, multiprocess {mp}");
            let set = |tids: &[Tid]| *slots[0].borrow_mut() = Rc::from(tids.to_vec());
            // No wave yet.
            assert_eq!(list(&mut s), ("l".into(), "l".into()), "{what}");
            // Waves appear.
            set(&[2, 3, 4]);
            let first = list(&mut s);
            assert_eq!(first.0, expected(&[(0x4d2, &[2, 3, 4])], pid_on), "{what}");
            assert_eq!(first.1, "l", "{what}");
            // Unchanged (the same slice): the same reply.
            assert_eq!(list(&mut s), first, "{what}");
            // One more appears.
            set(&[2, 3, 4, 0x1_0000]);
            assert_eq!(
                list(&mut s).0,
                expected(&[(0x4d2, &[2, 3, 4, 0x1_0000])], pid_on),
                "{what}"
            );
            // Some disappear.
            set(&[3, 0x1_0000]);
            assert_eq!(
                list(&mut s).0,
                expected(&[(0x4d2, &[3, 0x1_0000])], pid_on),
                "{what}"
            );
            // The same ids in a new slice (the waves stopped: the GPU
            // target hands out a new slice only when they change, but a
            // new one must be honoured too).
            set(&[3, 0x1_0000]);
            assert_eq!(
                list(&mut s).0,
                expected(&[(0x4d2, &[3, 0x1_0000])], pid_on),
                "{what}"
            );
            // All gone.
            set(&[]);
            assert_eq!(list(&mut s).0, "l", "{what}");
        }
    }

    /// lldb with two processes: every id carries its pid (a bare id would
    /// be taken as the current process's).
    /// A list (`m…`) marks its `qsThreadInfo` as due, once; an empty
    /// list (`l`) ends the exchange and marks nothing.
    #[test]
    fn a_list_marks_its_follow_up_due() {
        let (mut s, slots) = session(Dialect::Lldb, true, &[7]);
        s.out.clear();
        s.on_input(b"$qfThreadInfo#bb");
        assert!(s.out.ends_with(b"$l#6c"));
        assert!(!s.take_follow_up_due());
        *slots[0].borrow_mut() = Rc::from(vec![2, 3]);
        s.out.clear();
        s.on_input(b"$qfThreadInfo#bb");
        assert!(s.out.windows(2).any(|w| w == b"$m"));
        assert!(s.take_follow_up_due());
        assert!(!s.take_follow_up_due());
        // The kept reply, sent again, marks it again.
        s.on_input(b"$qfThreadInfo#bb");
        assert!(s.take_follow_up_due());
    }

    #[test]
    fn lldb_with_two_processes_gets_every_pid() {
        let (mut s, slots) = session(Dialect::Lldb, true, &[5, 6]);
        *slots[0].borrow_mut() = Rc::from(vec![2, 3]);
        *slots[1].borrow_mut() = Rc::from(vec![7]);
        assert_eq!(list(&mut s).0, "mp5.2,p5.3,p6.7");
        s.procs.remove(&6);
        assert_eq!(list(&mut s).0, "mp5.2,3");
    }

    /// In ack mode the kept packet is also kept for a resend (`-`).
    #[test]
    fn a_kept_reply_is_resent_on_a_nak() {
        let (mut s, slots) = session(Dialect::Lldb, true, &[5]);
        *slots[0].borrow_mut() = Rc::from(vec![2, 3]);
        list(&mut s);
        s.out.clear();
        s.on_input(b"$qfThreadInfo#bb");
        let sent = String::from_utf8(s.out.clone()).unwrap();
        assert!(sent.ends_with("$mp5.2,3#d1"), "{sent}");
        s.out.clear();
        s.on_input(b"-");
        let again = String::from_utf8(s.out.clone()).unwrap();
        assert_eq!(again, "$mp5.2,3#d1");
    }
}
