//! A software breakpoint whose `int3` the program wrote over (or whose page
//! was mapped again: the dynamic loader maps a library's whole span from
//! file offset 0 first, then each segment over it at its own offset, so a
//! breakpoint planted in between is lost and its saved byte is one of the
//! wrong file offset). Removing it must not write the saved byte back over
//! what the program has there now, as gdb's `memory_validate_breakpoint`
//! does not. Before, gdbmux wrote it back: the GPU soak planted a breakpoint
//! on `simgpu_launch` while `libsimgpu_rt.so` was being mapped, and its
//! removal left a byte of the wrong offset in the function's code (the
//! program then crashed with SIGSEGV at every later launch).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod native_support;

use native_support::cont;
use native_support::launch;
use stub::stop::StopEvent;
use stub::target::BreakpointKind;
use stub::target::Target;

fn at_sigusr1(ev: StopEvent, what: &str) {
    match ev {
        StopEvent::Stopped { signal, .. } if signal == libc::SIGUSR1 => {}
        other => panic!("{what}: expected the SIGUSR1 stop, got {other:?}"),
    }
}

fn run(owner_internal: bool) {
    let _serial = native_support::serial();
    let site = native_support::sym("overwritten_breakpoint", "patch_site");
    let (mut p, fd) = launch("overwritten_breakpoint", &[]);
    at_sigusr1(cont(&mut p, &fd), "first raise");
    if owner_internal {
        p.insert_internal_breakpoint(site).expect("internal");
    } else {
        p.insert_breakpoint(BreakpointKind::Software, site, 1)
            .expect("Z0");
    }
    // The program writes 0x22 over the int3.
    at_sigusr1(cont(&mut p, &fd), "second raise");
    if owner_internal {
        p.remove_internal_breakpoint(site).expect("internal");
    } else {
        p.remove_breakpoint(BreakpointKind::Software, site, 1)
            .expect("z0");
    }
    match cont(&mut p, &fd) {
        StopEvent::Exited { code, .. } => assert_eq!(
            code, 0,
            "the breakpoint's removal wrote its saved byte over the program's"
        ),
        other => panic!("expected the exit, got {other:?}"),
    }
}

#[test]
fn removing_a_breakpoint_the_program_wrote_over_keeps_the_programs_byte() {
    run(false);
}

#[test]
fn removing_an_internal_breakpoint_the_program_wrote_over_keeps_the_programs_byte() {
    run(true);
}
