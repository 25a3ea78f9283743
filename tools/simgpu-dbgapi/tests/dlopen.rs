//! The simulated amd-dbgapi library, loaded with dlopen through
//! `gpu_target::dbgapi` exactly as the stub loads the real one, debugging a
//! running sample program.

mod common;

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::os::fd::BorrowedFd;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::DbgApiBackend;
use gpu_target::model::AddressSpace;
use gpu_target::model::BreakpointAction;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::GpuEvent;
use gpu_target::model::HostProcess;
use gpu_target::model::ResumeMode;
use gpu_target::model::RuntimeState;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveId;
use gpu_target::model::WaveState;
use gpu_target::sim::elf::Elf;

const TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Clone, Default)]
struct Host {
    pid: i32,
    bps: Arc<Mutex<Vec<(u64, BreakpointId)>>>,
}

impl HostProcess for Host {
    fn os_pid(&self) -> i32 {
        self.pid
    }
    fn insert_breakpoint(&mut self, addr: u64, id: BreakpointId) -> Result<(), GpuError> {
        self.bps.lock().unwrap().push((addr, id));
        Ok(())
    }
    fn remove_breakpoint(&mut self, id: BreakpointId) -> Result<(), GpuError> {
        self.bps.lock().unwrap().retain(|b| b.1 != id);
        Ok(())
    }
}

struct Sample {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Sample {
    fn expect_line(&mut self, want: &str) {
        let mut line = String::new();
        self.out.read_line(&mut line).expect("read sample stdout");
        assert_eq!(line.trim(), want, "sample said {line:?}");
    }
    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("write");
        stdin.flush().expect("flush");
    }
}

/// Waits (on the notifier fd, with a deadline) for the next event.
fn next_event(b: &mut DbgApiBackend) -> (gpu_target::model::EventId, GpuEvent) {
    let fd = b.notifier_fd().expect("notifier");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(e) = b.next_event().expect("next_event") {
            return e;
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .expect("timed out waiting for a GPU event");
        // SAFETY: the notifier stays open while the backend lives.
        let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
        let mut fds = [nix::poll::PollFd::new(bfd, nix::poll::PollFlags::POLLIN)];
        let ms = left.as_millis().min(u16::MAX as u128) as u16;
        nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).expect("poll");
    }
}

fn reg_index(b: &mut DbgApiBackend, w: WaveId, name: &str) -> usize {
    b.registers(w)
        .expect("registers")
        .iter()
        .position(|r| r.name == name)
        .unwrap_or_else(|| panic!("no register {name}"))
}

fn read_u64(b: &mut DbgApiBackend, w: WaveId, name: &str) -> u64 {
    let i = reg_index(b, w, name);
    let size = b.registers(w).unwrap()[i].size;
    let mut buf = vec![0u8; size];
    b.read_register(w, i, &mut buf).expect("read_register");
    let mut v = [0u8; 8];
    let n = size.min(8);
    v[..n].copy_from_slice(&buf[..n]);
    u64::from_le_bytes(v)
}

#[test]
fn debug_a_running_sample_through_dlopen() {
    let exe = common::build_sample("vector_add");
    let mut child = Command::new(&exe)
        .arg("--wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sample");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut s = Sample { child, out };
    s.expect_line("checkpoint start");
    s.go();
    s.expect_line("checkpoint init");

    // Initialize and attach to the running program.
    let api = DbgApi::load(Some(&common::library())).expect("load libsimgpu_dbgapi.so");
    assert_eq!(api.version().1, 77);
    let host = Host {
        pid: s.child.id() as i32,
        ..Host::default()
    };
    let bps = host.bps.clone();
    let mut b = DbgApiBackend::attach(&api, Box::new(host)).expect("attach");
    let agents = b.agents().expect("agents");
    let arch = agents[0].architecture.as_ref().expect("a supported agent");
    assert_eq!(arch.name, "gfx90a");
    assert_eq!(arch.breakpoint_instruction, [1, 0, 0x92, 0xbf]);

    // The runtime comes up: RUNTIME(LOADED) after the library asked for the
    // hook breakpoint.
    s.go();
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::Runtime(RuntimeState::Loaded));
    let (hook, bp) = *bps
        .lock()
        .unwrap()
        .first()
        .expect("insert_breakpoint was called");
    assert_ne!(hook, 0);
    b.event_processed(ev).unwrap();
    // The runtime is released on the client's next event pass (after it
    // planted the hook breakpoint): end this pass, start the next one.
    assert_eq!(b.next_event().unwrap(), None);
    assert_eq!(b.next_event().unwrap(), None);
    s.expect_line("checkpoint loaded");

    // The program passed the hook (as if the host breakpoint hit): the
    // library halts it and announces the new code object.
    assert_eq!(
        b.report_breakpoint_hit(bp, 1).unwrap(),
        BreakpointAction::Halt
    );
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::CodeObjectListUpdated);
    let cos = b.code_objects().unwrap();
    assert_eq!(cos.len(), 1);
    let co = &cos[0];
    assert!(co.uri.starts_with("file:///"), "{}", co.uri);
    assert!(
        co.uri.contains("vector_add.hsaco#offset=0&size="),
        "{}",
        co.uri
    );
    b.event_processed(ev).unwrap();
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::BreakpointResume { breakpoint: bp });
    b.event_processed(ev).unwrap();
    // Nothing changed since: a second hit resumes.
    assert_eq!(
        b.report_breakpoint_hit(bp, 1).unwrap(),
        BreakpointAction::Resume
    );

    // A GPU breakpoint at the kernel entry: s_trap 1 written with write_memory.
    let path = co
        .uri
        .trim_start_matches("file://")
        .split('#')
        .next()
        .unwrap();
    let bytes = std::fs::read(path).unwrap();
    let elf = Elf::parse_code_object(&bytes).unwrap();
    let entry = (co.load_address as u64) + elf.symbol("vector_add").unwrap().value;
    let mut orig = [0u8; 4];
    assert_eq!(
        b.read_memory(AddressSpace::Global, None, entry, &mut orig)
            .unwrap(),
        4
    );
    let sym = elf.symbol("vector_add").unwrap().value;
    assert_eq!(&orig[..], elf.read_vaddr(sym, 4).unwrap());
    b.write_memory(AddressSpace::Global, None, entry, &[1, 0, 0x92, 0xbf])
        .unwrap();

    // Launch: 1024 work-items in workgroups of 256 = 16 waves, all stop.
    s.go();
    let mut stopped = Vec::new();
    while stopped.len() < 16 {
        let (ev, e) = next_event(&mut b);
        match e {
            GpuEvent::WaveStop { wave } => stopped.push((ev, wave)),
            other => panic!("unexpected {other:?}"),
        }
    }
    let waves = b.waves().unwrap();
    assert_eq!(waves.len(), 16, "wave list during the dispatch");
    for &(ev, w) in &stopped {
        let i = b.wave_info(w).unwrap();
        assert_eq!(i.state, WaveState::Stopped);
        assert_eq!(i.stop_reason, Some(StopReasons::BREAKPOINT));
        assert_eq!(i.pc, Some(entry + 4));
        assert_eq!(i.exec, Some(u64::MAX));
        assert_eq!(i.lane_count, 64);
        let coord = i.workgroup_coord.unwrap();
        let n = i.wave_number_in_workgroup.unwrap();
        // s8 = workgroup id x; v0 = work-item id x.
        assert_eq!(read_u64(&mut b, w, "s8") as u32, coord[0]);
        let vi = reg_index(&mut b, w, "v0");
        let mut v0 = vec![0u8; 256];
        b.read_register(w, vi, &mut v0).unwrap();
        for lane in 0..64 {
            let x = u32::from_le_bytes(v0[lane * 4..lane * 4 + 4].try_into().unwrap());
            assert_eq!(x, n * 64 + lane as u32);
        }
        // Resuming before the stop event is processed is refused.
        assert!(matches!(
            b.resume_wave(w, ResumeMode::Normal),
            Err(GpuError::WaveNotResumable(_))
        ));
        b.event_processed(ev).unwrap();
    }

    // Displaced stepping over the breakpoint (amd-dbgapi 0.76's contract):
    // the wave steps a copy of the original instruction out of line and
    // the trap never leaves memory.
    let (w0, w1) = (stopped[0].1, stopped[1].1);
    let pci = reg_index(&mut b, w0, "pc");
    let status = |r: Result<(), GpuError>| match r {
        Err(GpuError::Library { status, .. }) => status,
        other => panic!("expected a library status, got {other:?}"),
    };
    let trap_in_memory = |b: &mut DbgApiBackend| {
        let mut m = [0u8; 4];
        b.read_memory(AddressSpace::Global, None, entry, &mut m)
            .unwrap();
        m == [1, 0, 0x92, 0xbf]
    };
    b.write_register(w0, pci, &entry.to_le_bytes()).unwrap();
    let ds = b.displaced_step_start(w0, &orig).unwrap();
    let buffer = b.wave_info(w0).unwrap().pc.unwrap();
    assert_ne!(buffer, entry, "the pc moved to the buffer");
    // DISPLACED_STEPPING_ACTIVE; RESUME_DISPLACED_STEPPING for a normal
    // resume: refused, nothing changed.
    assert_eq!(status(b.displaced_step_start(w0, &orig).map(|_| ())), -28);
    assert_eq!(status(b.resume_wave(w0, ResumeMode::Normal)), -29);
    let i = b.wave_info(w0).unwrap();
    assert_eq!((i.state, i.pc), (WaveState::Stopped, Some(buffer)));
    assert!(trap_in_memory(&mut b));
    // One single step: s_load_dword (8 bytes: the 4 saved bytes and the
    // 4 after them) out of line.
    b.resume_wave(w0, ResumeMode::SingleStep).unwrap();
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::WaveStop { wave: w0 });
    let i = b.wave_info(w0).unwrap();
    assert_eq!(i.stop_reason, Some(StopReasons::SINGLE_STEP));
    assert_eq!(i.pc, Some(buffer + 8));
    b.event_processed(ev).unwrap();
    assert!(trap_in_memory(&mut b), "the trap stays during the step");
    // Stepped once already: only completing it is allowed.
    assert_eq!(status(b.resume_wave(w0, ResumeMode::SingleStep)), -29);
    b.displaced_step_complete(w0, ds).unwrap();
    assert_eq!(b.wave_info(w0).unwrap().pc, Some(entry + 8));
    // The handle is released: INVALID_DISPLACED_STEPPING_ID.
    assert_eq!(status(b.displaced_step_complete(w0, ds)), -26);
    // Completed without stepping: back on the breakpoint.
    b.write_register(w1, pci, &entry.to_le_bytes()).unwrap();
    let ds1 = b.displaced_step_start(w1, &orig).unwrap();
    // Another wave's handle: INVALID_ARGUMENT_COMPATIBILITY.
    assert_eq!(status(b.displaced_step_complete(w0, ds1)), -7);
    b.displaced_step_complete(w1, ds1).unwrap();
    assert_eq!(b.wave_info(w1).unwrap().pc, Some(entry));

    // Global memory through the library: kernarg (s[6:7]) → a[0..4].
    let kernarg = read_u64(&mut b, w0, "s6") as u32 as u64 | (read_u64(&mut b, w0, "s7") << 32);
    let mut ptr = [0u8; 8];
    b.read_memory(AddressSpace::Global, None, kernarg, &mut ptr)
        .unwrap();
    let mut a = [0u8; 16];
    b.read_memory(AddressSpace::Global, None, u64::from_le_bytes(ptr), &mut a)
        .unwrap();
    let a: Vec<i32> = a
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(a, [0, 3, 6, 9]);

    // Remove the breakpoint and rewind every wave's PC (write_register).
    b.write_memory(AddressSpace::Global, None, entry, &orig)
        .unwrap();
    let pci = reg_index(&mut b, w0, "pc");
    for &(_, w) in &stopped {
        b.write_register(w, pci, &entry.to_le_bytes()).unwrap();
        assert_eq!(b.wave_info(w).unwrap().pc, Some(entry));
    }

    // Single-step one wave: s_load_dword is 8 bytes.
    b.resume_wave(w0, ResumeMode::SingleStep).unwrap();
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::WaveStop { wave: w0 });
    let i = b.wave_info(w0).unwrap();
    assert_eq!(i.stop_reason, Some(StopReasons::SINGLE_STEP));
    assert_eq!(i.pc, Some(entry + 8));
    b.event_processed(ev).unwrap();

    // Two waves left in displaced steps at the detach (the breakpoint is
    // out of memory by now, as a client takes it out before detaching):
    // one displaced and not resumed, one resumed single-step and not
    // waited for. The detach stops and completes both (the header:
    // "Any waves with a displaced stepping buffer are stopped and the
    // displaced stepping buffer completed"); neither runs from its buffer
    // (a wave that did would fault there and fail the dispatch).
    let (w2, w3) = (stopped[2].1, stopped[3].1);
    b.displaced_step_start(w2, &orig).unwrap();
    b.displaced_step_start(w3, &orig).unwrap();
    b.resume_wave(w3, ResumeMode::SingleStep).unwrap();

    // The other waves run on.
    for &(_, w) in &stopped {
        if w != w2 && w != w3 {
            b.resume_wave(w, ResumeMode::Normal).unwrap();
        }
    }

    // Detach: the program finishes with the correct result.
    drop(b);
    drop(api);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "sample did not finish after detach"
        );
        // The child's exit is the event; wait on its stdout closing.
        let mut line = String::new();
        if s.out.read_line(&mut line).unwrap() > 0 {
            assert_eq!(line.trim(), "vector_add: PASS (1000 elements)");
        }
    };
    assert!(status.success(), "sample exit {status:?}");
}
