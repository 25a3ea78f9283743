//! Stop replies (`T`, `W`, `X`), built in exactly one place from a typed
//! [`StopEvent`] plus a snapshot of the registers and threads taken at the
//! moment of the stop.
//!
//! ```text
//! T AA [key:value;]…     W AA[;process:pid]     X AA[;process:pid]
//! ```
//! Keys emitted (see research/client-traces.md §6):
//! - always: `thread:`, expedited registers `NN:value;` (pc, sp, fp);
//! - gdb: `swbreak:;`/`hwbreak:;` when negotiated, `watch:`/`rwatch:`/
//!   `awatch:<addr>`, `fork:`/`vfork:`/`vforkdone:`/`exec:` when negotiated,
//!   `core:`;
//! - lldb (`QListThreadsInStopReply`): `name:`, `threads:`, `thread-pcs:`
//!   and `reason:` (`breakpoint`, `trace`, `watchpoint`, `signal`, …).
//!
//! The session stores the bytes in its stop journal; `?` and
//! `qThreadStopInfo` replay them verbatim.

use std::fmt::Write as _;

use super::reply::push_hex_u8;
use super::signals::linux_to_gdb;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::Pid;
use crate::target::Tid;
use crate::wire::hex;

/// What the client negotiated that changes stop replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopReplyOptions {
    /// `multiprocess+`: `p<pid>.<tid>` ids and `;process:` on W/X.
    pub multiprocess: bool,
    /// Linux signal numbers (lldb with `native-signals+`).
    pub native_signals: bool,
    /// `swbreak+`
    pub swbreak: bool,
    /// `hwbreak+`
    pub hwbreak: bool,
    /// `fork-events+`
    pub fork_events: bool,
    /// `vfork-events+`
    pub vfork_events: bool,
    /// `exec-events+`
    pub exec_events: bool,
    /// lldb `QListThreadsInStopReply` (also turns on `name:`/`reason:`).
    pub list_threads: bool,
    /// Interrupts are reported as SIGINT (gdb) instead of SIGSTOP (lldb).
    pub interrupt_as_sigint: bool,
    /// gdbserver `--disable-packet=T`: plain `S` replies.
    pub no_t: bool,
    /// gdbserver `--disable-packet=Tthread`: no `thread:` field.
    pub no_thread: bool,
    /// lldb-server's `jstopinfo:` key in `T` replies (threads' stop
    /// infos, so lldb asks no `qThreadStopInfo` per thread). Added by the
    /// stop journal, which holds the other threads' stops.
    pub stop_infos: StopInfos,
    /// `threads:` without `thread-pcs:` from [`OMIT_PCS_MIN_THREADS`]
    /// threads on (the GPU session). lldb 23.1 sets
    /// each listed thread's pc as it creates the thread
    /// (`ProcessGDBRemote::SetThreadPc`), which builds the thread's
    /// register context there and then; for a GPU wave that is the whole
    /// gfx90a register file, so 10,000 threads end up far apart in lldb's
    /// heap, and `thread list`, which finds every thread by a linear scan
    /// of them (`ThreadList::FindThreadByID` per thread), waits on memory
    /// for each step. Without the key the pcs come with the `jThreadsInfo`
    /// lldb fetches at every public stop (`WillPublicStop`), after all
    /// threads exist. The price is one `p` of the reporting thread's pc
    /// per stop (lldb 23.1 asks it although the reply expedites it), so
    /// small lists keep the key.
    pub omit_thread_pcs: bool,
}

/// The thread count from which [`StopReplyOptions::omit_thread_pcs`]
/// leaves `thread-pcs:` out: 10,000 waves listed in 1.1–1.4 s without the
/// key, 1.9–3.1 s with it (lldb 23.1, 2-vCPU VM); 1000 in 0.05–0.07 s
/// either way, where the extra round trip is what counts.
pub const OMIT_PCS_MIN_THREADS: usize = 1024;

/// Which threads a stop reply's `jstopinfo` lists. lldb takes a thread
/// that is missing from it as one with no stop reason, and then asks no
/// `qThreadStopInfo` for it (ProcessGDBRemote::CalculateThreadStopInfo).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StopInfos {
    /// No `jstopinfo` (gdb; lldb before `QListThreadsInStopReply`).
    #[default]
    Off,
    /// Every thread, with its name: lldb shows names without a
    /// `qThreadStopInfo` each.
    AllThreads,
    /// Only the threads with a stop reason, as lldb-server sends it
    /// (`threads_with_valid_stop_info_only` in
    /// GDBRemoteCommunicationServerLLGS::PrepareStopReplyPacketForThread):
    /// a GPU stop's reply stays short with thousands of waves.
    WithReason,
}

/// State of one thread at the stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSnapshot {
    /// Thread id.
    pub tid: Tid,
    /// Program counter.
    pub pc: u64,
}

/// Everything a stop reply needs, captured when the stop happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopSnapshot {
    /// The event.
    pub event: StopEvent,
    /// Expedited registers of the reporting thread: (regnum, bytes).
    pub expedited: Vec<(u32, Vec<u8>)>,
    /// All threads with their PCs (lldb `threads:`/`thread-pcs:`).
    pub threads: Vec<ThreadSnapshot>,
    /// Reporting thread's name.
    pub thread_name: Option<String>,
    /// Core the reporting thread ran on.
    pub core: Option<u32>,
    /// Stack memory of the reporting thread sent with the reply: (address,
    /// bytes). lldb only (`memory:0x<addr>=<hex>;`, debugserver's key):
    /// lldb puts each piece in its process memory cache
    /// (`ProcessGDBRemote::SetThreadStopInfo`, key `memory`), so the
    /// stack read with which it checks frame 0 and its caller after every
    /// stop (a 512-byte `x` of the line holding the stack pointer) is
    /// answered there, without a round trip. Empty for gdb.
    pub memory: Vec<(u64, Vec<u8>)>,
}

/// Format a thread id the way the client negotiated.
pub fn thread_id(out: &mut Vec<u8>, pid: Pid, tid: Tid, multiprocess: bool) {
    // By hand, not `write!`: a thread list of 10,000 GPU waves formats
    // 10,000 ids, and the formatter cost most of the reply's time.
    if multiprocess {
        out.push(b'p');
        push_hex(out, pid.into());
        out.push(b'.');
    }
    push_hex(out, tid);
}

/// `{v:x}`: lower-case hex digits without leading zeros.
fn push_hex(out: &mut Vec<u8>, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = (64 - v.leading_zeros()).div_ceil(4).max(1);
    for i in (0..n).rev() {
        out.push(DIGITS[(v >> (4 * i)) as usize & 0xf]);
    }
}

/// `{v:016x}`: sixteen lower-case hex digits.
fn push_hex16(out: &mut Vec<u8>, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for i in (0..16).rev() {
        out.push(DIGITS[(v >> (4 * i)) as usize & 0xf]);
    }
}

struct Buf<'a>(&'a mut Vec<u8>);
impl std::fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn wire_signal(sig: i32, o: &StopReplyOptions) -> u8 {
    if o.native_signals {
        u8::try_from(sig).unwrap_or(0)
    } else {
        linux_to_gdb(sig)
    }
}

/// Build the stop reply payload for `snap`.
pub fn build(snap: &StopSnapshot, o: &StopReplyOptions) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    match &snap.event {
        StopEvent::Exited { pid, code } => {
            out.push(b'W');
            push_hex_u8(&mut out, (*code & 0xff) as u8);
            if o.multiprocess {
                let _ = write!(Buf(&mut out), ";process:{pid:x}");
            }
        }
        StopEvent::Terminated { pid, signal } => {
            out.push(b'X');
            push_hex_u8(&mut out, wire_signal(*signal, o));
            if o.multiprocess {
                let _ = write!(Buf(&mut out), ";process:{pid:x}");
            }
        }
        StopEvent::Stopped {
            pid,
            tid,
            signal,
            kind,
        } => build_t(&mut out, snap, o, *pid, *tid, *signal, kind),
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn build_t(
    out: &mut Vec<u8>,
    snap: &StopSnapshot,
    o: &StopReplyOptions,
    pid: Pid,
    tid: Tid,
    signal: i32,
    kind: &StopKind,
) {
    let signal = match kind {
        StopKind::Interrupt if o.interrupt_as_sigint => libc::SIGINT,
        StopKind::Interrupt => libc::SIGSTOP,
        // lldb-server reports the first stop after a launch or an attach
        // as SIGSTOP (lldb shows "stop reason = signal SIGSTOP"), whatever
        // the kernel's exec SIGTRAP was.
        StopKind::Initial if o.list_threads => libc::SIGSTOP,
        _ => signal,
    };
    if o.no_t {
        out.push(b'S');
        push_hex_u8(out, wire_signal(signal, o));
        return;
    }
    out.push(b'T');
    push_hex_u8(out, wire_signal(signal, o));
    // gdbserver puts the syscall key first (server.cc, prepare_resume_reply).
    match kind {
        StopKind::SyscallEntry { number } => {
            let _ = write!(Buf(out), "syscall_entry:{number:x};");
        }
        StopKind::SyscallReturn { number } => {
            let _ = write!(Buf(out), "syscall_return:{number:x};");
        }
        _ => {}
    }
    if !o.no_thread {
        out.extend_from_slice(b"thread:");
        thread_id(out, pid, tid, o.multiprocess);
        out.push(b';');
    }
    if o.list_threads {
        if let Some(name) = &snap.thread_name {
            // lldb-server sends the name hex-encoded when it has special
            // characters; plain names are sent as is.
            if name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                let _ = write!(Buf(out), "name:{name};");
            } else {
                out.extend_from_slice(b"hexname:");
                hex::encode(name.as_bytes(), out);
                out.push(b';');
            }
        }
        // By hand, not `write!`: a stop of 10,000 GPU waves lists 10,000
        // ids and pcs, and the formatter was a tenth of the stop's time.
        out.extend_from_slice(b"threads:");
        for (i, t) in snap.threads.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_hex(out, t.tid);
        }
        if !(o.omit_thread_pcs && snap.threads.len() >= OMIT_PCS_MIN_THREADS) {
            out.extend_from_slice(b";thread-pcs:");
            for (i, t) in snap.threads.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_hex16(out, t.pc);
            }
        }
        out.push(b';');
    }
    for (regnum, value) in &snap.expedited {
        // Register numbers are plain hex of any width (GPU tables go far
        // past 0xff); two digits at least, as gdbserver writes them.
        let _ = write!(Buf(out), "{regnum:02x}");
        out.push(b':');
        hex::encode(value, out);
        out.push(b';');
    }
    if o.list_threads {
        for (addr, bytes) in &snap.memory {
            // lldb reads the address with `getAsInteger(0, …)`: the `0x`
            // prefix makes it hex.
            out.extend_from_slice(b"memory:0x");
            push_hex(out, *addr);
            out.push(b'=');
            hex::encode(bytes, out);
            out.push(b';');
        }
    }
    let reason = match kind {
        StopKind::SwBreak => {
            if o.swbreak {
                out.extend_from_slice(b"swbreak:;");
            }
            "breakpoint"
        }
        StopKind::HwBreak => {
            if o.hwbreak {
                out.extend_from_slice(b"hwbreak:;");
            }
            "breakpoint"
        }
        StopKind::Watch { addr }
        | StopKind::ReadWatch { addr }
        | StopKind::AccessWatch { addr } => {
            let key = match kind {
                StopKind::Watch { .. } => "watch",
                StopKind::ReadWatch { .. } => "rwatch",
                _ => "awatch",
            };
            let _ = write!(Buf(out), "{key}:{addr:x};");
            if o.list_threads {
                // lldb-server's form: "<addr> <index> <hit addr>", hex-encoded.
                let desc = format!("{addr} 0 {}", u64::MAX);
                out.extend_from_slice(b"description:");
                hex::encode(desc.as_bytes(), out);
                out.push(b';');
            }
            "watchpoint"
        }
        StopKind::Step => "trace",
        StopKind::Fault { description } => {
            if o.list_threads {
                out.extend_from_slice(b"description:");
                hex::encode(description.as_bytes(), out);
                out.push(b';');
            }
            "signal"
        }
        StopKind::Fork {
            child_pid,
            child_tid,
        } if o.fork_events => {
            out.extend_from_slice(b"fork:");
            thread_id(out, *child_pid, *child_tid, true);
            out.push(b';');
            "fork"
        }
        StopKind::VFork {
            child_pid,
            child_tid,
        } if o.vfork_events => {
            out.extend_from_slice(b"vfork:");
            thread_id(out, *child_pid, *child_tid, true);
            out.push(b';');
            "vfork"
        }
        StopKind::VForkDone if o.vfork_events => {
            out.extend_from_slice(b"vforkdone:;");
            "vforkdone"
        }
        StopKind::Exec { path } if o.exec_events => {
            out.extend_from_slice(b"exec:");
            hex::encode(path.as_bytes(), out);
            out.push(b';');
            "exec"
        }
        // lldb-server reports an exec as `reason:exec` alone; lldb then
        // reloads the process's modules.
        StopKind::Exec { .. } if o.list_threads => "exec",
        _ => "signal",
    };
    let quiet = signal == 0 && reason == "signal";
    if o.list_threads && !quiet {
        let _ = write!(Buf(out), "reason:{reason};");
    } else if let Some(core) = snap.core.filter(|_| !o.list_threads) {
        let _ = write!(Buf(out), "core:{core:x};");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(kind: StopKind, signal: i32) -> StopSnapshot {
        StopSnapshot {
            event: StopEvent::Stopped {
                pid: 0x10,
                tid: 0x11,
                signal,
                kind,
            },
            expedited: vec![(6, vec![1, 0, 0, 0, 0, 0, 0, 0]), (0x10, vec![0xaa; 8])],
            threads: vec![
                ThreadSnapshot { tid: 0x10, pc: 1 },
                ThreadSnapshot { tid: 0x11, pc: 2 },
            ],
            thread_name: Some("prog".into()),
            core: Some(1),
            memory: Vec::new(),
        }
    }

    #[test]
    fn thread_ids_are_formatted_as_by_the_formatter() {
        for (pid, tid) in [
            (0, 0),
            (1, 0xf),
            (0x10, 0x11),
            (u32::MAX, u64::MAX),
            (4242, 1 << 40),
        ] {
            let mut out = Vec::new();
            thread_id(&mut out, pid, tid, true);
            assert_eq!(out, format!("p{pid:x}.{tid:x}").into_bytes());
            out.clear();
            thread_id(&mut out, pid, tid, false);
            assert_eq!(out, format!("{tid:x}").into_bytes());
        }
    }

    #[test]
    fn gdb_breakpoint() {
        let o = StopReplyOptions {
            multiprocess: true,
            swbreak: true,
            interrupt_as_sigint: true,
            ..Default::default()
        };
        let r = build(&snap(StopKind::SwBreak, 5), &o);
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "T05thread:p10.11;06:0100000000000000;10:aaaaaaaaaaaaaaaa;swbreak:;core:1;"
        );
    }

    #[test]
    fn lldb_breakpoint() {
        let o = StopReplyOptions {
            native_signals: true,
            list_threads: true,
            ..Default::default()
        };
        let r = String::from_utf8(build(&snap(StopKind::SwBreak, 5), &o)).unwrap();
        assert_eq!(
            r,
            "T05thread:11;name:prog;threads:10,11;thread-pcs:0000000000000001,0000000000000002;\
             06:0100000000000000;10:aaaaaaaaaaaaaaaa;reason:breakpoint;"
        );
    }

    #[test]
    fn lldb_threads_without_pcs() {
        let o = StopReplyOptions {
            native_signals: true,
            list_threads: true,
            omit_thread_pcs: true,
            ..Default::default()
        };
        // A short list keeps its pcs.
        let r = String::from_utf8(build(&snap(StopKind::SwBreak, 5), &o)).unwrap();
        assert!(
            r.contains(";thread-pcs:0000000000000001,0000000000000002;"),
            "{r}"
        );
        let mut long = snap(StopKind::SwBreak, 5);
        long.threads = (0..OMIT_PCS_MIN_THREADS as u64)
            .map(|i| ThreadSnapshot {
                tid: 0x10 + i,
                pc: 1,
            })
            .collect();
        let r = String::from_utf8(build(&long, &o)).unwrap();
        assert!(!r.contains("thread-pcs"), "{r}");
        let ids: Vec<String> = (0..OMIT_PCS_MIN_THREADS as u64)
            .map(|i| format!("{:x}", 0x10 + i))
            .collect();
        assert!(r.contains(&format!("threads:{};", ids.join(","))));
        let r = String::from_utf8(build(
            &long,
            &StopReplyOptions {
                omit_thread_pcs: false,
                ..o
            },
        ))
        .unwrap();
        assert!(r.contains(";thread-pcs:0000000000000001,"), "{r}");
    }

    #[test]
    fn fault_description_for_lldb_only() {
        let kind = StopKind::Fault {
            description: "SIGFPE: integer divide by zero".into(),
        };
        let lldb = StopReplyOptions {
            native_signals: true,
            list_threads: true,
            ..Default::default()
        };
        let r = String::from_utf8(build(&snap(kind.clone(), libc::SIGFPE), &lldb)).unwrap();
        let hex: String = "SIGFPE: integer divide by zero"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(r.starts_with("T08"), "{r}");
        assert!(
            r.ends_with(&format!("description:{hex};reason:signal;")),
            "{r}"
        );
        let gdb = StopReplyOptions::default();
        let r = String::from_utf8(build(&snap(kind, libc::SIGFPE), &gdb)).unwrap();
        assert!(r.starts_with("T08") && !r.contains("description"), "{r}");
    }

    #[test]
    fn signals_and_interrupts() {
        let gdb = StopReplyOptions {
            interrupt_as_sigint: true,
            ..Default::default()
        };
        let lldb = StopReplyOptions {
            native_signals: true,
            list_threads: true,
            ..Default::default()
        };
        assert!(build(&snap(StopKind::Signal, 10), &gdb).starts_with(b"T1e"));
        assert!(build(&snap(StopKind::Signal, 10), &lldb).starts_with(b"T0a"));
        assert!(build(&snap(StopKind::Interrupt, 19), &gdb).starts_with(b"T02"));
        assert!(build(&snap(StopKind::Interrupt, 19), &lldb).starts_with(b"T13"));
        let w = build(
            &StopSnapshot {
                event: StopEvent::Terminated {
                    pid: 0x4d,
                    signal: 9,
                },
                ..snap(StopKind::Signal, 0)
            },
            &StopReplyOptions {
                multiprocess: true,
                ..gdb
            },
        );
        assert_eq!(w, b"X09;process:4d");
        let w = build(
            &StopSnapshot {
                event: StopEvent::Exited { pid: 0x4d, code: 3 },
                ..snap(StopKind::Signal, 0)
            },
            &gdb,
        );
        assert_eq!(w, b"W03");
    }

    /// Stack memory goes to lldb only, as debugserver writes it: a `0x`
    /// address (lldb's `getAsInteger(0, …)`), `=`, the bytes in hex.
    #[test]
    fn expedited_memory_for_lldb_only() {
        let with = StopSnapshot {
            memory: vec![(0x7ffd_1000, vec![0xde, 0xad]), (0x7ffd_2000, vec![1])],
            ..snap(StopKind::Step, 5)
        };
        let lldb = StopReplyOptions {
            list_threads: true,
            ..Default::default()
        };
        let r = String::from_utf8(build(&with, &lldb)).unwrap();
        assert!(
            r.contains(";memory:0x7ffd1000=dead;memory:0x7ffd2000=01;"),
            "{r}"
        );
        let r = String::from_utf8(build(&with, &StopReplyOptions::default())).unwrap();
        assert!(!r.contains("memory"), "{r}");
    }

    #[test]
    fn watch_and_fork() {
        let o = StopReplyOptions {
            multiprocess: true,
            fork_events: true,
            ..Default::default()
        };
        let r = String::from_utf8(build(&snap(StopKind::Watch { addr: 0x4010 }, 5), &o)).unwrap();
        assert!(r.contains("watch:4010;"), "{r}");
        let r = String::from_utf8(build(
            &snap(
                StopKind::Fork {
                    child_pid: 0x20,
                    child_tid: 0x20,
                },
                5,
            ),
            &o,
        ))
        .unwrap();
        assert!(r.contains("fork:p20.20;"), "{r}");
    }
}
