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

/// Who owns the breakpoint: the client (`Z0`/`z0`) or the stub itself
/// (an internal breakpoint, e.g. the GPU runtime hook's, dropped while
/// the thread runs).
#[derive(Clone, Copy, Debug)]
enum Owner {
    Client,
    Internal,
}

fn run(non_stop: bool, owner: Owner) {
    let _serial = native_support::serial();
    let prog = native_support::fixture("removed_breakpoint");
    let site = native_support::sym("removed_breakpoint", "moribund_site");
    let fd = SigchldFd::new().expect("signalfd");
    let (mut p, _) = LinuxProcess::launch(&LaunchOptions::new(&prog, &[])).expect("launch");
    let pid = p.pid();
    p.set_non_stop(non_stop).expect("non-stop");
    match owner {
        Owner::Client => p
            .insert_breakpoint(BreakpointKind::Software, site, 1)
            .expect("Z0"),
        Owner::Internal => p.insert_internal_breakpoint(site).expect("internal"),
    }
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
    match owner {
        Owner::Client => p
            .remove_breakpoint(BreakpointKind::Software, site, 1)
            .expect("z0"),
        Owner::Internal => p.remove_internal_breakpoint(site).expect("internal"),
    }

    // The thread runs the instruction the int3 replaced and the program
    // exits normally, with no stop reported.
    match wait_event(&mut p, &fd) {
        StopEvent::Exited { code, .. } => assert_eq!(code, 7, "the program went astray"),
        other => panic!("{owner:?}: a hit of the removed breakpoint was reported: {other:?}"),
    }
}

#[test]
fn non_stop_hit_of_a_removed_breakpoint_is_not_reported() {
    run(true, Owner::Client);
}

#[test]
fn all_stop_hit_of_a_removed_breakpoint_is_not_reported() {
    run(false, Owner::Client);
}

/// The same for a breakpoint of the stub's own, removed while the thread
/// runs (`remove_internal_breakpoint`).
#[test]
fn non_stop_hit_of_a_removed_internal_breakpoint_is_not_reported() {
    run(true, Owner::Internal);
}

#[test]
fn all_stop_hit_of_a_removed_internal_breakpoint_is_not_reported() {
    run(false, Owner::Internal);
}
