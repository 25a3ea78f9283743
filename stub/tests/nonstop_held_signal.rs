//! A signal the client passes silently (`QPassSignals`) that stops a
//! thread while the stub holds it stopped (here: an all-stop process
//! stopping for another thread's breakpoint) is reported when the client then steps
//! that thread, and delivered when it continues it. gdbserver keeps such a
//! stop as the thread's pending status and filters it when the thread
//! runs (linux-low.cc `linux_wait_1`: a passed signal is ignored, that is
//! delivered, only when the thread's `last_resume_kind` is not
//! `resume_step`). gdbmux delivered it with the step, which then ended at
//! the handler's first instruction.
//!
//! The ordering is made certain with the kernel: the test thread is the
//! tracer; `waitid(WNOWAIT)` sees the breakpoint stop and then the
//! signal's stop (the signal sent by the test) before the target collects
//! either, so the signal's stop is collected while the process stops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod native_support;

use native_support::wait_event;
use nix::sys::signal::Signal;
use nix::sys::wait::waitid;
use nix::sys::wait::Id;
use nix::sys::wait::WaitPidFlag;
use nix::sys::wait::WaitStatus;
use stub::native::LaunchOptions;
use stub::native::LinuxProcess;
use stub::native::SigchldFd;
use stub::stop::StopEvent;
use stub::stop::StopKind;
use stub::target::BreakpointKind;
use stub::target::ResumeAction;
use stub::target::ResumePlan;
use stub::target::Target;

fn nix_pid(tid: u64) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(tid as i32)
}

/// A plain signal stop (waitid reports a ptrace stop as CLD_TRAPPED,
/// which nix calls a ptrace event; event 0 is a plain signal stop).
fn plain_stop(st: &WaitStatus, sig: Signal) -> bool {
    matches!(st, WaitStatus::Stopped(_, s) | WaitStatus::PtraceEvent(_, s, 0) if *s == sig)
}

/// Runs the program to its breakpoint with the spinner's SIGUSR2 held;
/// returns the process, the spinner's tid and the handler's address.
fn breakpoint_with_a_held_signal(non_stop: bool, fd: &SigchldFd) -> (LinuxProcess, u64, u64, u64) {
    let prog = native_support::fixture("held_signal");
    let bp = native_support::sym("held_signal", "bp_here");
    let handler = native_support::sym("held_signal", "handler");
    let handled = native_support::sym("held_signal", "handled");
    let (mut p, _) = LinuxProcess::launch(&LaunchOptions::new(&prog, &[])).expect("launch");
    let main = u64::from(p.pid());
    p.set_pass_signals(&[libc::SIGUSR2]);
    p.set_non_stop(non_stop).expect("non-stop mode");
    p.insert_breakpoint(BreakpointKind::Software, bp, 1)
        .expect("Z0");
    p.resume(&ResumePlan {
        threads: vec![],
        default: Some(ResumeAction::Continue(None)),
    })
    .expect("resume");
    // Let the target handle the clone and the new thread's first stop
    // until the main thread's breakpoint stop is there, not collected.
    loop {
        let st = waitid(
            Id::All,
            WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL,
        )
        .expect("waitid");
        if st.pid() == Some(nix_pid(main)) && plain_stop(&st, Signal::SIGTRAP) {
            break;
        }
        assert!(
            p.process_events().expect("events").is_none(),
            "an event before the breakpoint"
        );
    }
    let spinner = p
        .threads()
        .into_iter()
        .find(|t| *t != main)
        .expect("the spinner");
    // The spinner takes SIGUSR2 (passed) before the stop reaches it: a
    // process-directed signal goes to a thread that is not stopped
    // (kernel `wants_signal`), and the main thread is in its breakpoint
    // stop.
    nix::sys::signal::kill(nix_pid(main), Signal::SIGUSR2).expect("kill");
    let st = waitid(
        Id::Pid(nix_pid(spinner)),
        WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL,
    )
    .expect("waitid spinner");
    assert!(plain_stop(&st, Signal::SIGUSR2), "{st:?}");
    match wait_event(&mut p, fd) {
        StopEvent::Stopped { tid, kind, .. } => {
            assert_eq!(tid, main);
            assert_eq!(kind, StopKind::SwBreak);
        }
        other => panic!("expected the breakpoint, got {other:?}"),
    }
    (p, spinner, handler, handled)
}

fn run(non_stop: bool) {
    let _serial = native_support::serial();
    let fd = SigchldFd::new().expect("signalfd");
    let (mut p, spinner, handler, handled) = breakpoint_with_a_held_signal(non_stop, &fd);
    let pc_before = native_support::reg(&mut p, spinner, "rip");
    // The client steps the spinner (the breakpoint's thread stays).
    p.resume(&ResumePlan {
        threads: vec![(spinner, ResumeAction::Step(None))],
        default: None,
    })
    .expect("step");
    let ev = wait_event(&mut p, &fd);
    let pc_after = native_support::reg(&mut p, spinner, "rip");
    let ran = native_support::read_u64(&mut p, handled) as u32;
    assert!(
        matches!(
            ev,
            StopEvent::Stopped { tid, signal: libc::SIGUSR2, kind: StopKind::Signal, .. } if tid == spinner
        ),
        "the step did not report the held SIGUSR2: {ev:?} (pc {pc_after:#x}, handler {handler:#x})"
    );
    assert_eq!(pc_after, pc_before, "the spinner moved");
    assert_eq!(ran, 0, "the handler ran");
    let _ = p.kill();
}

/// All-stop: the process stops for the main thread's breakpoint while the
/// spinner's SIGUSR2 arrives. (In non-stop mode the same holding comes
/// with a target-side condition's step-over; `report_held_passed` serves
/// both.)
#[test]
fn step_reports_a_held_passed_signal() {
    run(false);
}

/// Non-stop: the main thread's breakpoint stops it alone, so the spinner
/// is not held; it was resumed with a continue, and its passed SIGUSR2 is
/// delivered at once and never reported (gdbserver's `linux_wait_1`
/// resumes a thread with a passed signal unless it was stepping). When
/// the client then stops the spinner (`vCont;t`) the stop is a plain one
/// (signal 0) with the handler entered, and a step of it is a plain step:
/// no SIGUSR2 comes back, and the handler is not entered a second time.
#[test]
fn non_stop_passed_signal_of_a_running_thread_is_delivered_not_reported() {
    let _serial = native_support::serial();
    let fd = SigchldFd::new().expect("signalfd");
    let (mut p, spinner, handler, handled) = breakpoint_with_a_held_signal(true, &fd);
    p.stop_threads(Some(&[spinner])).expect("vCont;t");
    let ev = wait_event(&mut p, &fd);
    assert!(
        matches!(ev, StopEvent::Stopped { tid, signal: 0, .. } if tid == spinner),
        "the stop request was not answered with a plain stop: {ev:?}"
    );
    let pc = native_support::reg(&mut p, spinner, "rip");
    let ran = native_support::read_u64(&mut p, handled) as u32;
    // Delivered: the handler ran, or the stop came at its first
    // instructions (the signal frame is set up when the signal is
    // delivered; the stop may come before `handled++`).
    assert!(
        ran == 1 || (handler..handler + 32).contains(&pc),
        "SIGUSR2 was not delivered (handled {ran}, pc {pc:#x}, handler {handler:#x})"
    );
    p.resume(&ResumePlan {
        threads: vec![(spinner, ResumeAction::Step(None))],
        default: None,
    })
    .expect("step");
    let ev = wait_event(&mut p, &fd);
    assert!(
        matches!(ev, StopEvent::Stopped { tid, signal: libc::SIGTRAP, .. } if tid == spinner),
        "the step was not a plain step: {ev:?}"
    );
    let after = native_support::read_u64(&mut p, handled) as u32;
    assert!(after <= 1, "the handler ran {after} times");
    let _ = p.kill();
}

/// Non-stop with the hold: the main thread's breakpoint has a false
/// target-side condition, so gdbmux steps it over the breakpoint with the
/// other threads stopped (unseen by the client). The spinner's passed
/// SIGUSR2 stop and the main thread's trap are both in the kernel before
/// gdbmux collects either: the signal stop is met while the spinner is
/// held for that step-over, or (collected first) while it runs. It was
/// resumed with a continue, so either way the signal is delivered when the
/// spinner goes on, and nothing is reported: the program, which waits for its handler,
/// exits with status 1 (a lost signal would leave it spinning, a
/// reported one would be an event before the exit).
#[test]
fn non_stop_passed_signal_held_by_a_condition_step_over_is_delivered() {
    let _serial = native_support::serial();
    let fd = SigchldFd::new().expect("signalfd");
    let prog = native_support::fixture("held_signal");
    let bp = native_support::sym("held_signal", "bp_here");
    let (mut p, _) = LinuxProcess::launch(&LaunchOptions::new(&prog, &[])).expect("launch");
    let main = u64::from(p.pid());
    p.set_pass_signals(&[libc::SIGUSR2]);
    p.set_non_stop(true).expect("non-stop mode");
    p.insert_breakpoint(BreakpointKind::Software, bp, 1)
        .expect("Z0");
    // const8 0, end: a condition that is always false.
    p.set_breakpoint_conditions(bp, vec![vec![0x22, 0x00, 0x27]])
        .expect("condition");
    p.resume(&ResumePlan {
        threads: vec![],
        default: Some(ResumeAction::Continue(None)),
    })
    .expect("resume");
    loop {
        let st = waitid(
            Id::All,
            WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL,
        )
        .expect("waitid");
        if st.pid() == Some(nix_pid(main)) && plain_stop(&st, Signal::SIGTRAP) {
            break;
        }
        assert!(
            p.process_events().expect("events").is_none(),
            "an event before the breakpoint"
        );
    }
    let spinner = p
        .threads()
        .into_iter()
        .find(|t| *t != main)
        .expect("the spinner");
    nix::sys::signal::kill(nix_pid(main), Signal::SIGUSR2).expect("kill");
    let st = waitid(
        Id::Pid(nix_pid(spinner)),
        WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL,
    )
    .expect("waitid spinner");
    assert!(plain_stop(&st, Signal::SIGUSR2), "{st:?}");
    match wait_event(&mut p, &fd) {
        StopEvent::Exited { code, .. } => assert_eq!(code, 1, "handled count"),
        other => panic!("expected the exit, got {other:?}"),
    }
}
