//! Stops: `?`, and what happens when a target reports a stop: the stop
//! journal records it and the one stop reply of a resume goes out
//! (replies: `packet/stop_reply.rs`).

use std::collections::BTreeMap;

use crate::packet::stop_reply::StopSnapshot;
use crate::packet::stop_reply::ThreadSnapshot;
use crate::session::Journal;
use crate::session::Session;
use crate::session::SessionRole;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;
use crate::target::Target;
use crate::target::Tid;

impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_question(&mut self) {
        let opts = self.features.stop_options();
        match self.journal.reply(&opts) {
            Some(r) => self.send(&r),
            // No process and nothing recorded (extended mode): gdbserver
            // answers W00.
            None => self.send(b"W00"),
        }
    }

    /// What a stop changes in the session's processes, in all-stop and
    /// non-stop alike: a fork's child is adopted (with the client's
    /// breakpoints), an exec forgets the old image's software breakpoints.
    pub(in crate::session) fn process_bookkeeping(&mut self, stop: &StopEvent) {
        if let StopEvent::Stopped {
            pid,
            kind: StopKind::Fork { child_pid, .. } | StopKind::VFork { child_pid, .. },
            ..
        } = stop
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
        } = stop
        {
            self.client_bps.forget_software(*pid);
        }
    }

    /// A target reported a stop (or exit).
    pub(in crate::session) fn on_stop(&mut self, stop: StopEvent) {
        self.forward_program_output();
        self.process_bookkeeping(&stop);
        if self.is_running() && R::intercept_stop(self, &stop) {
            return;
        }
        self.role.stop_reaches_client();
        let stop = if self.is_running() {
            R::decorate_stop(self, stop)
        } else {
            stop
        };
        let ended = matches!(
            stop,
            StopEvent::Exited { .. } | StopEvent::Terminated { .. }
        );
        if ended {
            self.cpu_process_ended(&stop);
        }
        // lldb reads a second reply only after a `T`/`S` (an exit ends
        // its wait for the stop at once).
        let stopped = matches!(stop, StopEvent::Stopped { .. });
        let echo = std::mem::take(&mut self.interrupt_echo_due) && stopped;
        self.record_stop(stop);
        if self.is_running() {
            let orphaned = self.run == crate::session::RunState::Orphaned;
            self.run = crate::session::RunState::Stopped;
            if orphaned {
                // A new client's bytes held meanwhile are handled at the
                // end of this wake-up.
                if self.framer.pending_input() > 0 {
                    self.run = crate::session::RunState::StoppedWithHeldInput;
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
                if echo {
                    // lldb's interrupt is answered twice
                    // (`interrupt_echo_due`).
                    self.send(&r);
                } else {
                    // An interrupt that comes before the next packet is
                    // answered with this reply again (`stop_echo_owed`).
                    self.stop_echo_owed = stopped && self.lldb_echoes();
                }
            }
        }
    }

    /// Capture everything a stop reply needs, now, into the journal.
    pub(in crate::session) fn record_stop(&mut self, stop: StopEvent) {
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
                        memory: Vec::new(),
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
        let expedited_regs: Vec<u32> = crate::session::expedited_registers(t.registers());
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
        // lldb told of the threads with a reason only (`jstopinfo`): the
        // quiet threads' snapshots are built if a `qThreadStopInfo` asks.
        let lazy = !initial
            && self.features.list_threads
            && self.features.stop_infos == crate::packet::stop_reply::StopInfos::WithReason;
        let omit_pcs = self.features.omit_thread_pcs
            && threads.len() >= crate::packet::stop_reply::OMIT_PCS_MIN_THREADS;
        let mut snaps = Vec::with_capacity(threads.len());
        let mut others = BTreeMap::new();
        for th in &threads {
            // No pc asked for where the reply leaves the pcs out.
            let pc = if omit_pcs { 0 } else { t.pc(*th).unwrap_or(0) };
            snaps.push(ThreadSnapshot { tid: *th, pc });
            if *th != tid && !lazy && (self.features.list_threads || initial) {
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
        if self.features.dialect == crate::session::Dialect::Lldb {
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
        let expedited = expedite(t, tid);
        // lldb: the reporting thread's stack top and frame links, as
        // `jThreadsInfo` sends them (`StopSnapshot::memory`).
        let mut memory = Vec::new();
        if self.features.list_threads && self.role.expedites_stack() {
            if let Some((sp, fp)) = super::lldb::stack_pointers(&**t, &expedited) {
                super::lldb::stop_stack(&mut **t, sp, fp, &mut memory);
            }
        }
        let snap = StopSnapshot {
            expedited,
            threads: snaps,
            thread_name,
            core: None,
            event: stop,
            memory,
        };
        if lazy {
            self.journal.record_lazy(snap, others);
        } else {
            self.journal.record(snap, others);
        }
    }

    /// The quiet snapshot of `tid`, a thread of the recorded stop without
    /// a reason, as [`Session::record_stop`] captures it for every thread
    /// when the stop is not recorded lazily.
    pub(in crate::session) fn quiet_snapshot(
        &mut self,
        pid: Pid,
        tid: Tid,
    ) -> Option<StopSnapshot> {
        let t = self.procs.get_mut(&pid)?;
        let expedited_regs: Vec<u32> = crate::session::expedited_registers(t.registers());
        let ex = expedited_regs
            .iter()
            .filter_map(|r| t.read_register(tid, *r).ok().map(|v| (*r, v)))
            .collect();
        Some(Journal::quiet(pid, tid, ex, t.thread_name(tid)))
    }

    /// `pid` is gone (detached, killed) while other processes stay: a
    /// later `?` must not replay its stop, so the journal gets a quiet stop
    /// (signal 0) of the process that is now current. With no process left
    /// the journal is as the caller left it.
    pub(in crate::session) fn journal_forget(&mut self, pid: Pid) {
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
}
