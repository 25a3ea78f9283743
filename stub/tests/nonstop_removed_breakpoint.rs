//! A software breakpoint the client removes while a thread runs (gdb does
//! so in non-stop mode), after the thread executed its `int3` and before
//! the stub collected that stop: the thread's pc is backed up over the
//! `int3` and the thread goes on as it was resumed, unreported, the
//! instruction the `int3` replaced running now. gdbserver backs the pc up
//! over every `int3` trap (`save_stop_reason`, linux-low.cc) and reports a
//! software-breakpoint stop that gdb drops as a hit of a removed
//! ("moribund") location; either way gdb sees no stop. gdbmux reported a
//! SIGTRAP at the byte after the `int3` (or, for a thread range-stepping,
//! stepped on from there, in the middle of an instruction): the thread
//! left at an address outside any function in
//! gdb.threads/non-stop-fair-events.exp under load.
//!
//! The ordering is made certain with the kernel, not with timing: the test
//! thread is the tracer, and `waitid(WNOWAIT)` waits for the thread's
//! `int3` stop without collecting it; only then is the breakpoint removed
//! and the stop collected by the target.
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
use stub::target::BreakpointKind;
use stub::target::ResumeAction;
use stub::target::ResumePlan;
use stub::target::Target;

fn run(non_stop: bool) {
    let _serial = native_support::serial();
    let prog = native_support::fixture("removed_breakpoint");
    let site = native_support::sym("removed_breakpoint", "moribund_site");
    let fd = SigchldFd::new().expect("signalfd");
    let (mut p, _) = LinuxProcess::launch(&LaunchOptions::new(&prog, &[])).expect("launch");
    let pid = p.pid();
    p.set_non_stop(non_stop).expect("non-stop");
    p.insert_breakpoint(BreakpointKind::Software, site, 1)
        .expect("Z0");
    p.resume(&ResumePlan {
        threads: vec![],
        default: Some(ResumeAction::Continue(None)),
    })
    .expect("resume");

    // The thread executed the int3: its stop is there, not collected.
    let child = nix::unistd::Pid::from_raw(pid as i32);
    let st = waitid(
        Id::Pid(child),
        WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::__WALL,
    )
    .expect("waitid");
    // (waitid reports a ptrace stop as CLD_TRAPPED, which nix calls a
    // ptrace event; event 0 is a plain signal stop.)
    assert!(
        matches!(
            st,
            WaitStatus::Stopped(_, Signal::SIGTRAP)
                | WaitStatus::PtraceEvent(_, Signal::SIGTRAP, 0)
        ),
        "expected the int3 stop, got {st:?}"
    );

    // The client takes the breakpoint out while (as far as the stub
    // knows) the thread runs.
    p.remove_breakpoint(BreakpointKind::Software, site, 1)
        .expect("z0");

    // The thread runs the instruction the int3 replaced and the program
    // exits normally, with no stop reported.
    match wait_event(&mut p, &fd) {
        StopEvent::Exited { code, .. } => assert_eq!(code, 7, "the program went astray"),
        other => panic!("a hit of the removed breakpoint was reported: {other:?}"),
    }
}

#[test]
fn non_stop_hit_of_a_removed_breakpoint_is_not_reported() {
    run(true);
}

#[test]
fn all_stop_hit_of_a_removed_breakpoint_is_not_reported() {
    run(false);
}
