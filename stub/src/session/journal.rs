//! The stop journal: what the last stop was, captured at the moment it
//! happened, and rendered into reply bytes at most once per negotiated
//! option set. `?`, `qThreadStopInfo` and the vRun/vAttach replies read it;
//! reading never touches a target, never drains events and never delivers
//! an action, so N replays give N identical byte strings.

use std::collections::BTreeMap;

use crate::packet::stop_reply;
use crate::packet::stop_reply::StopInfos;
use crate::packet::stop_reply::StopReplyOptions;
use crate::packet::stop_reply::StopSnapshot;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Tid;
use crate::wire::hex;

#[derive(Debug, Clone)]
struct Rendered {
    opts: StopReplyOptions,
    bytes: Vec<u8>,
}

/// The last stop of a session.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    primary: Option<StopSnapshot>,
    others: BTreeMap<Tid, StopSnapshot>,
    /// The quiet (signal-0) snapshots of the threads without a stop reason
    /// were not captured with the stop: they are built on their first
    /// `qThreadStopInfo` (see [`Journal::wants_quiet`]).
    lazy_quiet: bool,
    rendered: Option<Rendered>,
}

impl Journal {
    /// Record a new stop (replaces the previous one).
    pub fn record(&mut self, primary: StopSnapshot, others: BTreeMap<Tid, StopSnapshot>) {
        self.primary = Some(primary);
        self.others = others;
        self.lazy_quiet = false;
        self.rendered = None;
    }

    /// Record a new stop whose `others` hold only the threads with a stop
    /// reason: the quiet snapshot of another listed thread is added by
    /// [`Journal::add_quiet`] when a `qThreadStopInfo` asks for it. With
    /// [`StopInfos::WithReason`] lldb asks for none of them, so a stop of
    /// 10,000 GPU waves reads no registers of the 9,999 quiet ones.
    pub fn record_lazy(&mut self, primary: StopSnapshot, others: BTreeMap<Tid, StopSnapshot>) {
        self.record(primary, others);
        self.lazy_quiet = true;
    }

    /// The (pid, tid) whose quiet snapshot [`Journal::thread_reply`] needs
    /// and the stop did not capture: `tid` is a thread of the recorded stop
    /// other than the reporting one, with no snapshot yet.
    pub fn wants_quiet(&self, tid: Tid) -> Option<(u32, Tid)> {
        if !self.lazy_quiet || self.others.contains_key(&tid) {
            return None;
        }
        let primary = self.primary.as_ref()?;
        match &primary.event {
            StopEvent::Stopped { pid, tid: ptid, .. }
                if *ptid != tid && primary.threads.iter().any(|t| t.tid == tid) =>
            {
                Some((*pid, tid))
            }
            _ => None,
        }
    }

    /// Add the quiet snapshot [`Journal::wants_quiet`] asked for (kept for
    /// the replays of the same stop; the stopped thread's registers do not
    /// change until the next resume records a new stop).
    pub fn add_quiet(&mut self, snap: StopSnapshot) {
        if let StopEvent::Stopped { tid, .. } = &snap.event {
            self.others.insert(*tid, snap);
        }
    }

    /// The name of `tid` as the recorded stop captured it, when the stop
    /// captured one for that thread (`None`: not captured, read it). A
    /// stopped thread cannot rename itself, so until the next resume
    /// records a new stop this is the name `/proc` would give.
    pub fn thread_name(&self, tid: Tid) -> Option<&str> {
        let primary = self.primary.as_ref()?;
        let snap = match &primary.event {
            StopEvent::Stopped { tid: ptid, .. } if *ptid == tid => primary,
            StopEvent::Stopped { .. } => self.others.get(&tid)?,
            _ => return None,
        };
        snap.thread_name.as_deref()
    }

    /// The client wrote memory: the stack bytes captured with the stop
    /// (`StopSnapshot::memory`, for lldb's cache) may no longer be what
    /// memory holds, so later replays of the stop leave them out. Without
    /// a write in between, every replay is still the same bytes.
    pub fn memory_written(&mut self) {
        if let Some(p) = self.primary.as_mut() {
            if !p.memory.is_empty() {
                p.memory.clear();
                self.rendered = None;
            }
        }
    }

    /// Forget everything (no process).
    pub fn clear(&mut self) {
        *self = Journal::default();
    }

    /// The recorded event, if any.
    pub fn event(&self) -> Option<&StopEvent> {
        self.primary.as_ref().map(|s| &s.event)
    }

    /// The stops with a reason (a signal) recorded for threads other than
    /// the reporting one.
    pub fn other_reasons(&self) -> BTreeMap<Tid, StopEvent> {
        self.others
            .iter()
            .filter(|(_, s)| {
                matches!(
                    s.event,
                    StopEvent::Stopped { signal, ref kind, .. }
                        if signal != 0 || *kind == StopKind::Initial
                )
            })
            .map(|(t, s)| (*t, s.event.clone()))
            .collect()
    }

    /// Reply bytes for `?` (rendered once per option set, then replayed).
    pub fn reply(&mut self, opts: &StopReplyOptions) -> Option<Vec<u8>> {
        let snap = self.primary.as_ref()?;
        match &self.rendered {
            Some(r) if r.opts == *opts => Some(r.bytes.clone()),
            _ => {
                let mut bytes = stop_reply::build(snap, opts);
                if opts.stop_infos != StopInfos::Off && bytes.first() == Some(&b'T') {
                    if let Some(json) = self.stop_infos(opts.stop_infos) {
                        bytes.extend_from_slice(b"jstopinfo:");
                        hex::encode(json.as_bytes(), &mut bytes);
                        bytes.push(b';');
                    }
                }
                self.rendered = Some(Rendered {
                    opts: *opts,
                    bytes: bytes.clone(),
                });
                Some(bytes)
            }
        }
    }

    /// Reply for `qThreadStopInfo<tid>`: the primary stop for the reporting
    /// thread, a signal-0 stop for the others.
    pub fn thread_reply(&mut self, tid: Tid, opts: &StopReplyOptions) -> Option<Vec<u8>> {
        let primary_tid = match self.event()? {
            StopEvent::Stopped { tid, .. } => *tid,
            _ => return self.reply(opts),
        };
        if primary_tid == tid {
            return self.reply(opts);
        }
        let snap = self.others.get(&tid)?;
        Some(stop_reply::build(snap, opts))
    }

    /// lldb-server's `jstopinfo` for the recorded stop: a JSON array with
    /// the threads' ids, names, and their stop reasons and signals when they
    /// have one (lldb then asks no `qThreadStopInfo`, and takes a thread
    /// missing a reason, or missing from the array, as one that has none).
    /// `which` says whether every thread is listed or only those with a
    /// reason. Sent, as by lldb-server
    /// (GDBRemoteCommunicationServerLLGS::PrepareStopReplyPacketForThread),
    /// only when the process has more than one thread.
    fn stop_infos(&self, which: StopInfos) -> Option<String> {
        let primary = self.primary.as_ref()?;
        let StopEvent::Stopped { tid: ptid, .. } = &primary.event else {
            return None;
        };
        if primary.threads.len() < 2 {
            return None;
        }
        let mut out = Vec::with_capacity(primary.threads.len());
        for t in &primary.threads {
            let snap = if t.tid == *ptid {
                Some(primary)
            } else {
                self.others.get(&t.tid)
            };
            let has_reason = |s: &StopSnapshot| {
                matches!(&s.event, StopEvent::Stopped { signal, kind, .. }
                    if *signal != 0 || *kind != StopKind::Signal)
            };
            if which == StopInfos::WithReason && !snap.is_some_and(has_reason) {
                continue;
            }
            let mut o = serde_json::Map::new();
            o.insert("tid".into(), t.tid.into());
            if let Some(s) = snap {
                if let StopEvent::Stopped { signal, kind, .. } = &s.event {
                    if has_reason(s) {
                        let f = lldb_stop_fields(*signal, kind);
                        o.insert("signal".into(), f.signal.into());
                        o.insert("reason".into(), f.reason.into());
                        if let Some(d) = f.description {
                            o.insert("description".into(), d.into());
                        }
                    }
                }
                if let Some(name) = &s.thread_name {
                    o.insert("name".into(), name.clone().into());
                }
            }
            out.push(serde_json::Value::Object(o));
        }
        Some(serde_json::Value::Array(out).to_string())
    }

    /// A signal-0 snapshot for a thread that did not report the stop.
    pub fn quiet(
        pid: u32,
        tid: Tid,
        expedited: Vec<(u32, Vec<u8>)>,
        name: Option<String>,
    ) -> StopSnapshot {
        StopSnapshot {
            event: StopEvent::Stopped {
                pid,
                tid,
                signal: 0,
                kind: StopKind::Signal,
            },
            expedited,
            threads: Vec::new(),
            thread_name: name,
            core: None,
            memory: Vec::new(),
        }
    }
}

/// How lldb is told why a thread stopped (`jThreadsInfo`, `jstopinfo`):
/// lldb-server's reason names (GetStopReasonString), the signal lldb shows
/// and a description.
pub struct LldbStopFields {
    /// `breakpoint`, `trace`, `watchpoint` or `signal`.
    pub reason: &'static str,
    /// The native signal: an interrupt or the first stop shows SIGSTOP, as
    /// with lldb-server.
    pub signal: i32,
    /// A fault's description.
    pub description: Option<String>,
}

/// [`LldbStopFields`] of a stop with `signal` and `kind`.
pub fn lldb_stop_fields(signal: i32, kind: &StopKind) -> LldbStopFields {
    let reason = match kind {
        StopKind::SwBreak | StopKind::HwBreak => "breakpoint",
        StopKind::Step => "trace",
        StopKind::Watch { .. } | StopKind::ReadWatch { .. } | StopKind::AccessWatch { .. } => {
            "watchpoint"
        }
        _ => "signal",
    };
    let signal = if matches!(kind, StopKind::Interrupt | StopKind::Initial) {
        libc::SIGSTOP
    } else {
        signal
    };
    let description = match kind {
        StopKind::Fault { description } => Some(description.clone()),
        _ => None,
    };
    LldbStopFields {
        reason,
        signal,
        description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_is_identical_and_cached() {
        let mut j = Journal::default();
        assert!(j.reply(&StopReplyOptions::default()).is_none());
        j.record(
            Journal::quiet(1, 1, vec![(0x10, vec![1; 8])], None),
            BTreeMap::new(),
        );
        let o = StopReplyOptions::default();
        let a = j.reply(&o).unwrap();
        for _ in 0..100 {
            assert_eq!(j.reply(&o).unwrap(), a);
        }
        assert_eq!(j.thread_reply(1, &o).unwrap(), a);
        assert!(j.thread_reply(2, &o).is_none());
    }

    /// A memory write drops the stack bytes from later replays; replays
    /// before and after it are each identical.
    #[test]
    fn a_memory_write_drops_the_stack_bytes() {
        let mut j = Journal::default();
        let mut snap = Journal::quiet(1, 1, vec![(0x10, vec![1; 8])], None);
        snap.memory = vec![(0x7000, vec![0xab; 4])];
        j.record(snap, BTreeMap::new());
        let o = StopReplyOptions {
            list_threads: true,
            ..StopReplyOptions::default()
        };
        let with = j.reply(&o).unwrap();
        assert!(String::from_utf8_lossy(&with).contains("memory:0x7000=abababab;"));
        assert_eq!(j.reply(&o).unwrap(), with);
        j.memory_written();
        let without = j.reply(&o).unwrap();
        assert!(!String::from_utf8_lossy(&without).contains("memory:"));
        assert_eq!(j.reply(&o).unwrap(), without);
    }

    #[test]
    fn lazy_quiet_snapshot_replies_as_an_eager_one() {
        use crate::packet::stop_reply::ThreadSnapshot;
        let mut primary = Journal::quiet(1, 1, vec![(0x10, vec![1; 8])], None);
        primary.threads = vec![
            ThreadSnapshot { tid: 1, pc: 0x100 },
            ThreadSnapshot { tid: 2, pc: 0x200 },
        ];
        let quiet2 = Journal::quiet(1, 2, vec![(0x10, vec![2; 8])], Some("w2".into()));
        let o = StopReplyOptions {
            stop_infos: StopInfos::WithReason,
            ..StopReplyOptions::default()
        };
        let mut eager = Journal::default();
        eager.record(primary.clone(), BTreeMap::from([(2, quiet2.clone())]));
        let mut lazy = Journal::default();
        lazy.record_lazy(primary, BTreeMap::new());
        assert_eq!(lazy.reply(&o), eager.reply(&o));
        assert_eq!(lazy.wants_quiet(1), None, "the reporting thread");
        assert_eq!(lazy.wants_quiet(3), None, "not a thread of the stop");
        assert_eq!(lazy.wants_quiet(2), Some((1, 2)));
        assert!(lazy.thread_reply(2, &o).is_none());
        lazy.add_quiet(quiet2);
        assert_eq!(lazy.wants_quiet(2), None);
        assert_eq!(lazy.thread_reply(2, &o), eager.thread_reply(2, &o));
        assert_eq!(eager.wants_quiet(2), None, "an eager stop captured it");
    }
}
