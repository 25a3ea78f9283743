//! Native target: threads and all-stop, interrupt, attach/detach, kill,
//! fork and exec events.

mod native_support;

use std::process::Command;
use std::process::Stdio;

use native_support::*;
use stub::native::LinuxProcess;
use stub::native::SigchldFd;
use stub::stop::StopEvent;
use stub::stop::StopKind;
use stub::target::BreakpointKind;
use stub::target::ResumeAction;
use stub::target::ResumePlan;
use stub::target::Target;

fn stopped(ev: &StopEvent) -> (u64, i32, StopKind) {
    match ev {
        StopEvent::Stopped {
            tid, signal, kind, ..
        } => (*tid, *signal, kind.clone()),
        other => panic!("expected a stop, got {other:?}"),
    }
}

fn assert_all_stopped(p: &dyn Target) {
    assert!(p.is_stopped());
    for t in p.threads() {
        assert_eq!(
            thread_state(p.pid(), t),
            't',
            "thread {t} is in tracing stop"
        );
    }
}

#[test]
fn all_stop_with_four_threads() {
    let _g = serial();
    let (mut p, fd) = launch("threads", &["30"]);
    let work = sym("threads", "thread_work");
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    let (tid, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((sig, kind), (5, StopKind::SwBreak));
    assert_ne!(tid, u64::from(p.pid()), "a worker hit it");
    assert_eq!(p.threads().len(), 5);
    assert_eq!(p.threads()[0], u64::from(p.pid()), "leader first");
    assert_all_stopped(&p);
    assert_eq!(p.pc(tid).unwrap(), work);
    for t in p.threads() {
        p.read_g_registers(t).unwrap();
        assert!(p.thread_name(t).is_some());
    }

    // Several rounds of breakpoint hits; pending stops of other threads
    // come out one per resume, each at the breakpoint.
    let counter = sym("threads", "g_counter");
    let mut hits = std::collections::HashSet::new();
    hits.insert(tid);
    for _ in 0..12 {
        // Step every thread sitting on the breakpoint off it, then
        // continue all.
        p.remove_breakpoint(BreakpointKind::Software, work, 1)
            .unwrap();
        let cur: Vec<u64> = p
            .threads()
            .into_iter()
            .filter(|t| p.pc(*t).ok() == Some(work))
            .collect();
        for t in cur {
            p.resume(&ResumePlan {
                threads: vec![(t, ResumeAction::Step(None))],
                default: None,
            })
            .unwrap();
            let (st, _, k) = stopped(&wait_event(&mut p, &fd));
            if st == t {
                assert_eq!(k, StopKind::Step);
            }
        }
        p.insert_breakpoint(BreakpointKind::Software, work, 1)
            .unwrap();
        let (t, sig, kind) = stopped(&cont(&mut p, &fd));
        assert_eq!((sig, kind), (5, StopKind::SwBreak));
        assert_eq!(p.pc(t).unwrap(), work);
        assert_all_stopped(&p);
        hits.insert(t);
    }
    assert!(read_u64(&mut p, counter) >= 4);
    assert!(hits.len() >= 2, "more than one thread hit: {hits:?}");

    // Interrupt a running multi-threaded process.
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    resume_all(&mut p, ResumeAction::Continue(None));
    assert!(!p.is_stopped());
    p.interrupt().unwrap();
    let ev = wait_event(&mut p, &fd);
    let (_, sig, _) = stopped(&ev);
    assert_all_stopped(&p);
    assert!(sig == libc::SIGSTOP || sig == 5, "{ev:?}");

    // Kill reports termination.
    p.kill().unwrap();
    assert_eq!(
        wait_event(&mut p, &fd),
        StopEvent::Terminated {
            pid: p.pid(),
            signal: 9
        }
    );
}

fn spawn_spinner() -> std::process::Child {
    Command::new(fixture("spin"))
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn spin")
}

#[test]
fn attach_interrupt_detach_non_group_leader() {
    let _g = serial();
    let fd = SigchldFd::new().unwrap();
    let mut child = spawn_spinner();
    let pid = child.id();
    // The spinner shares our process group: it is not a group leader.
    assert_ne!(
        nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid as i32)))
            .unwrap()
            .as_raw() as u32,
        pid
    );
    let (mut p, ev) = LinuxProcess::attach(pid).unwrap();
    assert_eq!(
        ev,
        StopEvent::Stopped {
            pid,
            tid: u64::from(pid),
            signal: 0,
            kind: StopKind::Initial
        }
    );
    assert!(p.attached());
    assert_all_stopped(&p);
    let iter = sym("spin", "g_iter");
    let before = read_u64(&mut p, iter);

    // Resume, interrupt: SIGSTOP reported as an interrupt, not redelivered.
    for _ in 0..3 {
        resume_all(&mut p, ResumeAction::Continue(None));
        p.interrupt().unwrap();
        let (tid, sig, kind) = stopped(&wait_event(&mut p, &fd));
        assert_eq!(
            (tid, sig, kind),
            (u64::from(pid), libc::SIGSTOP, StopKind::Interrupt)
        );
        assert_all_stopped(&p);
    }

    // Hit a breakpoint after interrupts: the SIGSTOP was not re-delivered.
    let tick = sym("spin", "tick");
    p.insert_breakpoint(BreakpointKind::Software, tick, 1)
        .unwrap();
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::SwBreak);
    assert!(read_u64(&mut p, iter) >= before);

    // Tell it to finish, detach: breakpoints are removed, it runs to exit.
    p.write_memory(sym("spin", "g_done"), &1i32.to_le_bytes())
        .unwrap();
    p.detach().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
}

#[test]
fn attach_multithreaded_and_drop_detaches() {
    let _g = serial();
    let mut child = Command::new(fixture("threads"))
        .arg("1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait (a blocking read: an event, not a poll) until the fixture says
    // all its workers exist (5 tasks).
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().expect("stderr")),
        &mut line,
    )
    .expect("read the fixture's ready line");
    assert_eq!(line.trim(), "ready", "workers never started");
    let (p, _) = LinuxProcess::attach(pid).unwrap();
    assert_eq!(p.threads().len(), 5);
    assert_all_stopped(&p);
    drop(p); // attached: detached on drop
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn attach_errors() {
    let _g = serial();
    let e = LinuxProcess::attach(0x7fff_fff0).err().unwrap();
    assert!(e.to_string().contains("no process"), "{e}");
    // Already traced by someone else: name the tracer.
    let mut child = spawn_spinner();
    let pid = child.id();
    let (mut p, _) = LinuxProcess::attach(pid).unwrap();
    let tracer = std::thread::spawn(move || LinuxProcess::attach(pid).err().map(|e| e.to_string()))
        .join()
        .unwrap()
        .unwrap();
    assert!(tracer.contains("already traced by process"), "{tracer}");
    p.write_memory(sym("spin", "g_done"), &1i32.to_le_bytes())
        .unwrap();
    p.detach().unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(3), "{st:?}");
    assert!(stub::native::pid_by_name("no-such-process-name-xyz").is_err());
}

#[test]
fn fork_with_and_without_reporting() {
    let _g = serial();
    // Without fork reporting the child is detached and runs freely, even
    // with a breakpoint on the code it runs.
    let (mut p, fd) = launch("forker", &[]);
    p.set_pass_signals(&[libc::SIGCHLD]);
    let work = sym("forker", "child_work");
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    let (tid, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((tid, kind), (u64::from(p.pid()), StopKind::SwBreak));
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 43
        }
    );

    // vfork without reporting: patches are lifted while the child runs.
    let (mut p, fd) = launch("forker", &["v"]);
    p.set_pass_signals(&[libc::SIGCHLD]);
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    let (tid, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((tid, kind), (u64::from(p.pid()), StopKind::SwBreak));
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 43
        }
    );

    // With reporting: stop at the fork, the child is handed over stopped.
    let (mut p, fd) = launch("forker", &[]);
    p.set_pass_signals(&[libc::SIGCHLD]);
    p.set_report_forks(true);
    let (tid, sig, kind) = stopped(&cont(&mut p, &fd));
    let StopKind::Fork {
        child_pid,
        child_tid,
    } = kind
    else {
        panic!("expected fork, got {kind:?}")
    };
    assert_eq!((tid, sig), (u64::from(p.pid()), 5));
    assert_eq!(u64::from(child_pid), child_tid);
    let mut c = p.take_fork_child(child_pid).expect("child handed over");
    assert!(p.take_fork_child(child_pid).is_none());
    assert_eq!(c.pid(), child_pid);
    assert!(c.is_stopped());
    assert_eq!(thread_state(child_pid, child_tid), 't');
    // Child runs to its exit first (the parent waits for it).
    assert_eq!(
        cont(c.as_mut(), &fd),
        StopEvent::Exited {
            pid: child_pid,
            code: 42
        }
    );
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 43
        }
    );
}

#[test]
fn exec_event_and_silent_exec() {
    let _g = serial();
    let (mut p, fd) = launch("execer", &[]);
    p.set_report_exec(true);
    let (tid, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((tid, sig), (u64::from(p.pid()), 5));
    match kind {
        StopKind::Exec { path } => assert!(path.ends_with("/execer"), "{path}"),
        other => panic!("expected exec, got {other:?}"),
    }
    assert_eq!(p.threads(), vec![u64::from(p.pid())]);
    // After exec the new image is debuggable: breakpoint in main.
    let main = sym("execer", "main");
    p.insert_breakpoint(BreakpointKind::Software, main, 1)
        .unwrap();
    assert_eq!(stopped(&cont(&mut p, &fd)).2, StopKind::SwBreak);
    p.remove_breakpoint(BreakpointKind::Software, main, 1)
        .unwrap();
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 5
        }
    );

    let (mut p, fd) = launch("execer", &[]);
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 5
        }
    );
}
