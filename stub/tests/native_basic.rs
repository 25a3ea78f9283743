//! Native target: launch, registers, memory, breakpoints, stepping,
//! watchpoints, exit codes (single-threaded fixtures).

mod native_support;

use native_support::*;
use stub::stop::StopEvent;
use stub::stop::StopKind;
use stub::target::AuxvOps;
use stub::target::BreakpointKind;
use stub::target::Capabilities;
use stub::target::LibrariesSvr4Ops;
use stub::target::MemoryRegionOps;
use stub::target::ResumeAction;
use stub::target::ResumePlan;
use stub::target::SiginfoOps;
use stub::target::Target;

fn stopped(ev: &StopEvent) -> (u64, i32, StopKind) {
    match ev {
        StopEvent::Stopped {
            tid, signal, kind, ..
        } => (*tid, *signal, kind.clone()),
        other => panic!("expected a stop, got {other:?}"),
    }
}

#[test]
fn launch_registers_memory_and_exit() {
    let _g = serial();
    let (mut p, fd) = launch("single", &["3"]);
    let pid = p.pid();
    let tid = u64::from(pid);
    assert!(p.is_stopped());
    assert_eq!(p.threads(), vec![tid]);
    assert!(!p.attached());
    assert!(p.exec_file().unwrap().ends_with("/single"));

    // Registers: g block = all registers, rip consistent with pc().
    let g = p.read_g_registers(tid).unwrap();
    let total: u32 = p
        .registers()
        .iter()
        .filter(|r| r.in_g_packet)
        .map(|r| r.bitsize / 8)
        .sum();
    assert_eq!(g.len(), total as usize);
    let pc = p.pc(tid).unwrap();
    assert_eq!(reg(&mut p, tid, "rip"), pc);
    assert_eq!(
        u64::from_le_bytes(g[16 * 8..17 * 8].try_into().unwrap()),
        pc
    );
    let rsp = reg(&mut p, tid, "rsp");
    assert_ne!(rsp, 0);
    // Write one register, read it back; orig_rax = -1 must work (gdb's P39).
    let rax = regnum(&p, "rax");
    p.write_register(tid, rax, &0x1122334455667788u64.to_le_bytes())
        .unwrap();
    assert_eq!(reg(&mut p, tid, "rax"), 0x1122334455667788);
    assert_eq!(reg(&mut p, tid, "rsp"), rsp, "write touched only rax");
    let orig = regnum(&p, "orig_rax");
    p.write_register(tid, orig, &u64::MAX.to_le_bytes())
        .unwrap();
    assert_eq!(reg(&mut p, tid, "orig_rax"), u64::MAX);
    // xmm / ymm upper / x87 control round trip.
    let xmm1 = regnum(&p, "xmm1");
    let v: Vec<u8> = (1..=16).collect();
    p.write_register(tid, xmm1, &v).unwrap();
    assert_eq!(p.read_register(tid, xmm1).unwrap(), v);
    if p.registers().iter().any(|r| r.name == "ymm1h") {
        let y = regnum(&p, "ymm1h");
        let w: Vec<u8> = (101..=116).collect();
        p.write_register(tid, y, &w).unwrap();
        assert_eq!(p.read_register(tid, y).unwrap(), w);
        assert_eq!(p.read_register(tid, xmm1).unwrap(), v);
    }
    let fctrl = regnum(&p, "fctrl");
    assert_eq!(p.read_register(tid, fctrl).unwrap(), 0x37fu32.to_le_bytes());
    let st0 = regnum(&p, "st0");
    assert_eq!(p.read_register(tid, st0).unwrap().len(), 10);
    // G write of the same block is accepted.
    let g2 = p.read_g_registers(tid).unwrap();
    p.write_g_registers(tid, &g2).unwrap();
    assert_eq!(p.read_g_registers(tid).unwrap(), g2);

    // The typed capabilities the session advertises before a process
    // exists (extended mode) are exactly the native target's.
    assert_eq!(Capabilities::of(&mut p), stub::native::CAPABILITIES);

    // Memory.
    let buf = sym("single", "g_buf");
    assert_eq!(&p.read_memory(buf, 10).unwrap(), b"abcdefghij");
    p.write_memory(buf, b"XY").unwrap();
    assert_eq!(&p.read_memory(buf, 4).unwrap(), b"XYcd");
    // A read running off the end of a mapping returns the readable prefix.
    let region = p.memory_region(buf).unwrap();
    assert!(region.read && region.write);
    let end = region.start + region.size;
    let tail = p.read_memory(end - 16, 64).unwrap();
    assert_eq!(tail.len(), 16);
    assert!(p.read_memory(8, 16).is_err());
    let gap = p.memory_region(end).unwrap();
    if !gap.read {
        assert_eq!(gap.start, end);
    }
    // Text is writable through the debugger.
    let work = sym("single", "work");
    let orig = p.read_memory(work, 1).unwrap();
    p.write_memory(work, &orig).unwrap();

    // auxv, svr4 (empty before the loader ran), process info.
    let auxv = p.auxv().unwrap();
    assert_eq!(auxv.len() % 16, 0);
    let xml = p.libraries_svr4_xml().unwrap();
    assert!(
        xml.starts_with("<library-list-svr4 version=\"1.0\""),
        "{xml}"
    );
    let info = p.process_info().unwrap();
    assert_eq!(info.pid, pid);
    assert_eq!(info.ppid, std::process::id());
    assert!(p.thread_name(tid).unwrap().starts_with("single"));
    assert!(p.thread_core(tid).is_some());
    assert_eq!(p.siginfo(tid).unwrap().len(), 128);
    assert_eq!(p.hw_watchpoint_slots(), 4);

    // Run to main, then the loader has filled r_debug.
    let main = sym("single", "main");
    p.insert_breakpoint(BreakpointKind::Software, main, 1)
        .unwrap();
    let (_, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((sig, kind), (5, StopKind::SwBreak));
    assert_eq!(p.pc(tid).unwrap(), main);
    let xml = p.libraries_svr4_xml().unwrap();
    assert!(xml.contains("main-lm=") && xml.contains("libc.so"), "{xml}");
    p.remove_breakpoint(BreakpointKind::Software, main, 1)
        .unwrap();

    let ev = cont(&mut p, &fd);
    assert_eq!(ev, StopEvent::Exited { pid, code: 0 });
    assert!(p.read_memory(buf, 1).is_err());
}

#[test]
fn breakpoint_step_over_and_masking() {
    let _g = serial();
    let (mut p, fd) = launch("single", &["100"]);
    let tid = u64::from(p.pid());
    let work = sym("single", "work");
    let counter = sym("single", "g_counter");
    let orig = p.read_memory(work, 4).unwrap();
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    // Reads mask our int3; writes over it update the saved byte.
    assert_eq!(p.read_memory(work - 2, 6).unwrap()[2..], orig[..]);
    let (t, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((t, sig, kind), (tid, 5, StopKind::SwBreak));
    assert_eq!(p.pc(tid).unwrap(), work, "pc rewound onto the breakpoint");
    let c0 = read_u64(&mut p, counter);

    // Step over: remove, step, reinsert, continue.
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    p.resume(&ResumePlan {
        threads: vec![(tid, ResumeAction::Step(None))],
        default: None,
    })
    .unwrap();
    let (t, sig, kind) = stopped(&wait_event(&mut p, &fd));
    assert_eq!((t, sig, kind), (tid, 5, StopKind::Step));
    let pc1 = p.pc(tid).unwrap();
    assert!(
        pc1 > work && pc1 < work + 8,
        "one instruction later: {pc1:#x}"
    );
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::SwBreak);
    assert_eq!(read_u64(&mut p, counter), c0 + 1);

    // Internal + client share the patch (step off the breakpoint first).
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    resume_all(&mut p, ResumeAction::Step(None));
    assert_eq!(stopped(&wait_event(&mut p, &fd)).2, StopKind::Step);
    p.insert_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    p.insert_internal_breakpoint(work).unwrap();
    assert!(p.is_internal_breakpoint(work) && p.is_client_breakpoint(work));
    p.remove_breakpoint(BreakpointKind::Software, work, 1)
        .unwrap();
    assert!(p.is_internal_breakpoint(work) && !p.is_client_breakpoint(work));
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::SwBreak);
    assert_eq!(read_u64(&mut p, counter), c0 + 2);
    p.remove_internal_breakpoint(work).unwrap();
    assert!(!p.is_internal_breakpoint(work));
    assert_eq!(p.read_memory(work, 4).unwrap(), orig);

    // Range step through the rest of work(): one report, outside the range.
    let (start, size) = symbols("single")["work"];
    p.resume(&ResumePlan {
        threads: vec![(
            tid,
            ResumeAction::RangeStep {
                start,
                end: start + size,
            },
        )],
        default: None,
    })
    .unwrap();
    let (_, _, kind) = stopped(&wait_event(&mut p, &fd));
    assert_eq!(kind, StopKind::Step);
    let pc = p.pc(tid).unwrap();
    assert!(
        !(start..start + size).contains(&pc),
        "left the range: {pc:#x}"
    );
    let (mstart, msize) = symbols("single")["main"];
    assert!(
        (mstart..mstart + msize).contains(&pc),
        "back in main: {pc:#x}"
    );

    p.kill().unwrap();
    assert_eq!(
        wait_event(&mut p, &fd),
        StopEvent::Terminated {
            pid: p.pid(),
            signal: 9
        }
    );
}

#[test]
fn hardware_watchpoint_and_breakpoint() {
    let _g = serial();
    let (mut p, fd) = launch("single", &["100"]);
    let tid = u64::from(p.pid());
    let counter = sym("single", "g_counter");
    // An unaligned range is split over debug registers as gdbserver does:
    // counter+1..counter+9 is 1+2+4+1 bytes, all four registers.
    p.insert_breakpoint(BreakpointKind::WatchWrite, counter + 1, 8)
        .unwrap();
    assert!(
        p.insert_breakpoint(BreakpointKind::WatchWrite, counter + 64, 1)
            .is_err(),
        "all four debug registers are in use"
    );
    p.remove_breakpoint(BreakpointKind::WatchWrite, counter + 1, 8)
        .unwrap();
    p.insert_breakpoint(BreakpointKind::WatchWrite, counter, 8)
        .unwrap();
    let (t, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((t, sig, kind), (tid, 5, StopKind::Watch { addr: counter }));
    assert_eq!(read_u64(&mut p, counter), 1, "x86 traps after the write");
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::Watch { addr: counter });
    assert_eq!(read_u64(&mut p, counter), 2);
    p.remove_breakpoint(BreakpointKind::WatchWrite, counter, 8)
        .unwrap();

    let work = sym("single", "work");
    p.insert_breakpoint(BreakpointKind::Hardware, work, 1)
        .unwrap();
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::HwBreak);
    assert_eq!(p.pc(tid).unwrap(), work);
    // Continuing from a hw breakpoint does not re-trigger at once (RF).
    let (_, _, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!(kind, StopKind::HwBreak);
    assert_eq!(read_u64(&mut p, counter), 3);
    p.remove_breakpoint(BreakpointKind::Hardware, work, 1)
        .unwrap();
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 0
        }
    );
}

#[test]
fn single_step_instructions() {
    let _g = serial();
    let (mut p, fd) = launch("single", &["1"]);
    let tid = u64::from(p.pid());
    let mut last = p.pc(tid).unwrap();
    for _ in 0..5 {
        resume_all(&mut p, ResumeAction::Step(None));
        let (t, sig, kind) = stopped(&wait_event(&mut p, &fd));
        assert_eq!((t, sig, kind), (tid, 5, StopKind::Step));
        let pc = p.pc(tid).unwrap();
        assert_ne!(pc, last);
        last = pc;
    }
    drop(p); // launched: killed on drop
}

#[test]
fn signals_reported_and_passed() {
    let _g = serial();
    let (mut p, fd) = launch("sig", &[]);
    let (_, sig, kind) = stopped(&cont(&mut p, &fd));
    assert_eq!((sig, kind), (libc::SIGUSR1, StopKind::Signal));
    assert_eq!(
        p.siginfo(u64::from(p.pid())).unwrap()[0],
        libc::SIGUSR1 as u8
    );
    // Deliver each one on resume: the handler counts them.
    for _ in 0..2 {
        resume_all(&mut p, ResumeAction::Continue(Some(libc::SIGUSR1)));
        let (_, sig, kind) = stopped(&wait_event(&mut p, &fd));
        assert_eq!((sig, kind), (libc::SIGUSR1, StopKind::Signal));
    }
    resume_all(&mut p, ResumeAction::Continue(Some(libc::SIGUSR1)));
    assert_eq!(
        wait_event(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 3
        }
    );

    // Passed signals never stop.
    let (mut p, fd) = launch("sig", &[]);
    p.set_pass_signals(&[libc::SIGUSR1]);
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 3
        }
    );

    // Suppressed signals (resume without the signal) never reach the handler.
    let (mut p, fd) = launch("sig", &[]);
    for _ in 0..3 {
        let (_, sig, _) = stopped(&cont(&mut p, &fd));
        assert_eq!(sig, libc::SIGUSR1);
    }
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 0
        }
    );
}

#[test]
fn launch_errors_are_clear() {
    let _g = serial();
    let e = stub::native::LinuxProcess::launch(&stub::native::LaunchOptions::new(
        "/nonexistent/prog",
        &[],
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("/nonexistent/prog"), "{e}");
    let plain = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("native-not-executable");
    std::fs::write(&plain, "x").unwrap();
    let e = stub::native::LinuxProcess::launch(&stub::native::LaunchOptions::new(&plain, &[]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("not executable"), "{e}");
    let e = stub::native::LinuxProcess::launch(&stub::native::LaunchOptions::new(
        "no-such-program-xyz",
        &[],
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("PATH"), "{e}");
}

#[test]
fn startup_with_shell_and_aslr() {
    let _g = serial();
    let fd = stub::native::SigchldFd::new().unwrap();
    let mut opts = stub::native::LaunchOptions::new(fixture("single"), &["2"]);
    opts.startup_with_shell = true;
    opts.disable_aslr = true;
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("native-shell-out.txt");
    opts.stdout = Some(out.clone());
    let (mut p, _) = stub::native::LinuxProcess::launch(&opts).unwrap();
    assert!(
        p.exec_file().unwrap().ends_with("/single"),
        "shell exec'd the program"
    );
    assert_eq!(
        cont(&mut p, &fd),
        StopEvent::Exited {
            pid: p.pid(),
            code: 0
        }
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("done acc="), "{text}");
}

/// The fatal tier: an abandoned process is detached and left stopped (a
/// group stop: state `T`), alive for the next debugger, never killed.
#[test]
fn abandon_leaves_the_process_stopped() {
    let _g = serial();
    let (mut p, _fd) = launch("single", &["3"]);
    let pid = p.pid();
    p.abandon().expect("abandon");
    drop(p);
    assert_left_stopped_then_kill(pid);
}
