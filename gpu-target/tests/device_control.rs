//! Debugger control of the device: stop a running wave, read it, resume,
//! single-step, patch code through the device and let the waves finish.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use gpu_target::model::ResumeMode;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveId;
use gpu_target::model::WaveState;
use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DeviceError;
use gpu_target::sim::device::DeviceEvent;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::device::Undisplaced;
use gpu_target::sim::memory::BufferMemory;
use gpu_target::sim::memory::GlobalMemory;
use gpu_target::sim::synthetic::spin_image;
use gpu_target::sim::synthetic::SPIN_CODE_OFFSET;
use gpu_target::sim::synthetic::S_ENDPGM;

const CODE: u64 = 0x10_0000;
const PACKET: u64 = 0x20_0000;

fn wait_events(dev: &Device, rx: &std::sync::mpsc::Receiver<()>, n: usize) -> Vec<DeviceEvent> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < n {
        got.extend(dev.take_events());
        if got.len() >= n {
            break;
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .expect("timed out waiting for device events");
        let _ = rx.recv_timeout(left);
    }
    got
}

#[test]
fn stop_resume_step_patch() {
    let mem = Arc::new(BufferMemory::new());
    mem.map(CODE, spin_image());
    mem.map(
        PACKET,
        encode_dispatch_packet(CODE, 0, [128, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 2,
            quantum: 64,
            ..Default::default()
        },
    );
    dev.set_debug(true);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    dev.set_event_hook(Some(Box::new(move || {
        let _ = tx.lock().map(|t| t.send(()));
    })));
    let d = dev.submit(PACKET).unwrap();
    let waves = dev.wave_ids();
    assert_eq!(waves.len(), 2);
    let w = waves[0];

    // Stop a running wave.
    dev.stop_wave(w).unwrap();
    let ev = wait_events(&dev, &rx, 1);
    let i = dev.wave_info(w).unwrap();
    assert_eq!(
        ev,
        vec![DeviceEvent::WaveStop {
            wave: w,
            reasons: StopReasons::NONE,
            pc: i.pc,
            exec: i.exec,
        }],
        "the event carries the stop's pc and exec"
    );
    assert_eq!(i.state, WaveState::Stopped);
    let loop_pc = CODE + SPIN_CODE_OFFSET;
    assert!(i.pc == loop_pc || i.pc == loop_pc + 4, "pc {:#x}", i.pc);
    let count = dev.with_stopped_regs(w, |r| r.sgpr[0]).unwrap();
    assert!(dev.stop_wave(w).is_err(), "already stopped");

    // Single-step: exactly one instruction.
    dev.resume_wave(w, ResumeMode::SingleStep).unwrap();
    let ev = wait_events(&dev, &rx, 1);
    let j = dev.wave_info(w).unwrap();
    assert_eq!(
        ev,
        vec![DeviceEvent::WaveStop {
            wave: w,
            reasons: StopReasons::SINGLE_STEP,
            pc: j.pc,
            exec: j.exec,
        }]
    );
    assert_ne!(j.pc, i.pc);
    let count2 = dev.with_stopped_regs(w, |r| r.sgpr[0]).unwrap();
    assert!(count2 == count || count2 == count + 1);

    // Resume, then patch the loop into s_endpgm through the device (the
    // instruction cache must see it): every wave ends.
    dev.resume_wave(w, ResumeMode::Normal).unwrap();
    dev.write_memory(loop_pc, &S_ENDPGM).unwrap();
    dev.write_memory(loop_pc + 4, &S_ENDPGM).unwrap();
    assert_eq!(
        dev.wait(d, Some(Duration::from_secs(20))),
        Some(DispatchOutcome::Completed)
    );
    assert!(dev.wave_ids().is_empty());
}

#[test]
fn stopped_wave_creation_holds_new_workgroups() {
    let mem = Arc::new(BufferMemory::new());
    mem.map(CODE, spin_image());
    mem.map(
        PACKET,
        encode_dispatch_packet(CODE, 0, [256, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 1,
            ..Default::default()
        },
    );
    dev.set_wave_creation_stopped(true);
    let d = dev.submit(PACKET).unwrap();
    assert!(dev.wave_ids().is_empty());
    dev.set_wave_creation_stopped(false);
    assert_eq!(dev.wave_ids().len(), 4);
    dev.write_memory(CODE + SPIN_CODE_OFFSET, &S_ENDPGM)
        .unwrap();
    assert_eq!(
        dev.wait(d, Some(Duration::from_secs(20))),
        Some(DispatchOutcome::Completed)
    );
}

/// A stopped wave's private memory through both views the debugger has:
/// private_lane (per-lane offsets) and private_wave (the swizzled scratch
/// layout: dword k of lane l at k * 256 + l * 4).
#[test]
fn private_lane_and_wave_views() {
    let mem = Arc::new(BufferMemory::new());
    let mut image = spin_image();
    image[4..8].copy_from_slice(&16u32.to_le_bytes()); // private_segment_fixed_size
    mem.map(CODE, image);
    mem.map(
        PACKET,
        encode_dispatch_packet(CODE, 0, [64, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 1,
            quantum: 64,
            ..Default::default()
        },
    );
    dev.set_debug(true);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    dev.set_event_hook(Some(Box::new(move || {
        let _ = tx.lock().map(|t| t.send(()));
    })));
    let d = dev.submit(PACKET).unwrap();
    let w = dev.wave_ids()[0];
    dev.stop_wave(w).unwrap();
    wait_events(&dev, &rx, 1);
    let v = 0xdead_beef_u32.to_le_bytes();
    assert_eq!(dev.xfer_private(w, Some(3), 4, None, Some(&v)).unwrap(), 4);
    let mut got = [0u8; 4];
    assert_eq!(
        dev.xfer_private(w, None, 256 + 12, Some(&mut got), None)
            .unwrap(),
        4
    );
    assert_eq!(got, v);
    let mut back = [0u8; 4];
    dev.xfer_private(w, Some(3), 4, Some(&mut back), None)
        .unwrap();
    assert_eq!(back, v);
    // Past the 16 bytes of each lane: nothing.
    assert_eq!(
        dev.xfer_private(w, Some(3), 16, Some(&mut back), None)
            .unwrap(),
        0
    );
    dev.resume_wave(w, ResumeMode::Normal).unwrap();
    dev.write_memory(CODE + SPIN_CODE_OFFSET, &S_ENDPGM)
        .unwrap();
    dev.write_memory(CODE + SPIN_CODE_OFFSET + 4, &S_ENDPGM)
        .unwrap();
    assert_eq!(
        dev.wait(d, Some(Duration::from_secs(20))),
        Some(DispatchOutcome::Completed)
    );
}

/// The instruction words of the displaced-stepping kernel, at
/// `SPIN_CODE_OFFSET`: `s_nop 0; s_getpc_b64 s[2:3]; s_branch +1;
/// s_trap 2 (skipped); s_add_u32 s0, s0, 1; s_endpgm`.
const DISPLACED_CODE: [u32; 6] = [
    0xBF80_0000,
    0xBE82_1C00,
    0xBF82_0001,
    0xBF92_0002,
    0x8000_8100,
    0xBF81_0000,
];
const S_TRAP_1: [u8; 4] = [1, 0, 0x92, 0xbf];
/// A displaced stepping buffer address (the library's, in the real setup).
const BUFFER: u64 = 0x7e00_0000_0010;

fn single_step(dev: &Device, rx: &std::sync::mpsc::Receiver<()>, w: WaveId) -> u64 {
    dev.resume_wave(w, ResumeMode::SingleStep).unwrap();
    match wait_events(dev, rx, 1)[..] {
        [DeviceEvent::WaveStop {
            wave, reasons, pc, ..
        }] => {
            assert_eq!((wave, reasons), (w, StopReasons::SINGLE_STEP));
            pc
        }
        ref other => panic!("unexpected {other:?}"),
    }
}

/// A wave displaced-steps off a breakpoint: the `s_trap` never leaves
/// memory, so another wave running through the address meanwhile stops
/// there (the race the lift-the-trap step-over had); PC-relative
/// instructions stepped out of line (`s_getpc_b64`, a branch) leave the
/// same pc and registers as a normal step at the original address. No
/// timing: every wait is for the device's own events.
#[test]
fn displaced_step_keeps_the_breakpoint_and_relocates() {
    let mem = Arc::new(BufferMemory::new());
    let mut image = spin_image();
    let o = SPIN_CODE_OFFSET;
    for (i, w) in DISPLACED_CODE.iter().enumerate() {
        let at = o as usize + 4 * i;
        image[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }
    let (getpc, branch) = (CODE + o + 4, CODE + o + 8);
    // A breakpoint on the s_getpc_b64.
    image[o as usize + 4..o as usize + 8].copy_from_slice(&S_TRAP_1);
    mem.map(CODE, image);
    mem.map(
        PACKET,
        encode_dispatch_packet(CODE, 0, [128, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 2,
            ..Default::default()
        },
    );
    dev.set_debug(true);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    dev.set_event_hook(Some(Box::new(move || {
        let _ = tx.lock().map(|t| t.send(()));
    })));
    let d = dev.submit(PACKET).unwrap();
    let waves = dev.wave_ids();
    let (a, b) = (waves[0], waves[1]);
    for ev in wait_events(&dev, &rx, 2) {
        match ev {
            DeviceEvent::WaveStop { reasons, pc, .. } => {
                assert_eq!((reasons, pc), (StopReasons::BREAKPOINT, getpc + 4))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let set_pc = |w, pc| dev.with_stopped_regs(w, |r| r.pc = pc).unwrap();
    let trap_in_memory = |addr| {
        let mut m = [0u8; 4];
        mem.read_partial(addr, &mut m);
        m == S_TRAP_1
    };
    set_pc(a, getpc);
    let orig_getpc = DISPLACED_CODE[1].to_le_bytes();

    // Displaced and completed before the step: back on the breakpoint.
    assert_eq!(dev.displace(a, BUFFER, &orig_getpc).unwrap(), getpc);
    assert_eq!(dev.wave_info(a).unwrap().pc, BUFFER);
    assert!(matches!(
        dev.displace(a, BUFFER, &orig_getpc),
        Err(DeviceError::Displaced(_))
    ));
    assert_eq!(dev.undisplace(a).unwrap(), Undisplaced::NotExecuted);
    assert_eq!(dev.wave_info(a).unwrap().pc, getpc);
    assert!(matches!(
        dev.undisplace(a),
        Err(DeviceError::NotDisplaced(_))
    ));

    // Wave A displaced; wave B runs into the breakpoint meanwhile (from
    // the instruction before it) and stops there: the trap is in memory
    // all along.
    dev.displace(a, BUFFER, &orig_getpc).unwrap();
    assert!(trap_in_memory(getpc), "the trap stays while A is displaced");
    set_pc(b, CODE + o);
    dev.resume_wave(b, ResumeMode::Normal).unwrap();
    match wait_events(&dev, &rx, 1)[..] {
        [DeviceEvent::WaveStop {
            wave, reasons, pc, ..
        }] => {
            assert_eq!((wave, reasons, pc), (b, StopReasons::BREAKPOINT, getpc + 4))
        }
        ref other => panic!("unexpected {other:?}"),
    }

    // A steps its s_getpc_b64 out of line: its pc stops past the buffer's
    // copy, and completes past the original instruction with the pc the
    // instruction sees at its own address.
    assert_eq!(single_step(&dev, &rx, a), BUFFER + 4);
    assert!(trap_in_memory(getpc));
    assert_eq!(dev.undisplace(a).unwrap(), Undisplaced::Executed);
    let regs_of = |w| {
        dev.with_stopped_regs(w, |r| (r.pc, r.sgpr[2], r.sgpr[3]))
            .unwrap()
    };
    let displaced = regs_of(a);
    assert_eq!(
        displaced,
        (getpc + 4, (getpc + 4) as u32, ((getpc + 4) >> 32) as u32)
    );

    // The same instruction stepped in place by B (trap lifted for it):
    // the same pc and registers.
    dev.write_memory(getpc, &orig_getpc).unwrap();
    set_pc(b, getpc);
    dev.with_stopped_regs(b, |r| (r.sgpr[2], r.sgpr[3]) = (0, 0))
        .unwrap();
    assert_eq!(single_step(&dev, &rx, b), getpc + 4);
    assert_eq!(regs_of(b), displaced);

    // A branch on a breakpoint, displaced: it lands on the branch's target
    // as a branch at the original address does.
    dev.write_memory(branch, &S_TRAP_1).unwrap();
    let orig_branch = DISPLACED_CODE[2].to_le_bytes();
    dev.displace(a, BUFFER, &orig_branch).unwrap();
    let target = branch + 8;
    assert_eq!(single_step(&dev, &rx, a), target);
    assert_eq!(dev.undisplace(a).unwrap(), Undisplaced::Executed);
    dev.write_memory(branch, &orig_branch).unwrap();
    assert_eq!(single_step(&dev, &rx, b), target);
    assert_eq!(regs_of(a).0, regs_of(b).0);

    // Both run to the end.
    dev.resume_wave(a, ResumeMode::Normal).unwrap();
    dev.resume_wave(b, ResumeMode::Normal).unwrap();
    assert_eq!(
        dev.wait(d, Some(Duration::from_secs(20))),
        Some(DispatchOutcome::Completed)
    );
}

/// What a library's detach does to a displaced wave
/// (`Device::stop_undisplace`; amd-dbgapi's `amd_dbgapi_process_detach`:
/// "Any waves with a displaced stepping buffer are stopped and the
/// displaced stepping buffer completed"): stopped where it is, mid-step or
/// not, and put back on the breakpoint (the step had not executed) or past
/// the instruction (it had); never left to run from the buffer. The
/// mid-step case races the device thread by design: whichever way it goes,
/// the wave ends up at its own address, stopped, no longer displaced, and
/// runs to the end.
#[test]
fn displaced_step_stopped_and_completed_at_detach() {
    let mem = Arc::new(BufferMemory::new());
    let mut image = spin_image();
    let o = SPIN_CODE_OFFSET;
    for (i, w) in DISPLACED_CODE.iter().enumerate() {
        let at = o as usize + 4 * i;
        image[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }
    let getpc = CODE + o + 4;
    image[o as usize + 4..o as usize + 8].copy_from_slice(&S_TRAP_1);
    mem.map(CODE, image);
    mem.map(
        PACKET,
        encode_dispatch_packet(CODE, 0, [64, 1, 1], [64, 1, 1], 0).to_vec(),
    );
    let dev = Device::new(
        mem.clone(),
        DeviceConfig {
            threads: 2,
            ..Default::default()
        },
    );
    dev.set_debug(true);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    dev.set_event_hook(Some(Box::new(move || {
        let _ = tx.lock().map(|t| t.send(()));
    })));
    let d = dev.submit(PACKET).unwrap();
    let a = dev.wave_ids()[0];
    match wait_events(&dev, &rx, 1)[..] {
        [DeviceEvent::WaveStop { reasons, pc, .. }] => {
            assert_eq!((reasons, pc), (StopReasons::BREAKPOINT, getpc + 4))
        }
        ref other => panic!("unexpected {other:?}"),
    }
    let set_pc = |pc| dev.with_stopped_regs(a, |r| r.pc = pc).unwrap();
    let orig = DISPLACED_CODE[1].to_le_bytes();
    let stopped_at = |want: u64| {
        let i = dev.wave_info(a).unwrap();
        assert_eq!((i.state, i.pc), (WaveState::Stopped, want));
        assert!(matches!(
            dev.undisplace(a),
            Err(DeviceError::NotDisplaced(_))
        ));
    };

    // Displaced, not resumed: back on the breakpoint.
    set_pc(getpc);
    dev.displace(a, BUFFER, &orig).unwrap();
    assert_eq!(dev.stop_undisplace(a).unwrap(), Undisplaced::NotExecuted);
    stopped_at(getpc);
    // Not displaced any more: refused.
    assert!(matches!(
        dev.stop_undisplace(a),
        Err(DeviceError::NotDisplaced(_))
    ));

    // Stepped, its stop in: past the instruction.
    dev.displace(a, BUFFER, &orig).unwrap();
    assert_eq!(single_step(&dev, &rx, a), BUFFER + 4);
    assert_eq!(dev.stop_undisplace(a).unwrap(), Undisplaced::Executed);
    stopped_at(getpc + 4);

    // Resumed single-step and stopped at once (mid-step, or just after).
    set_pc(getpc);
    dev.displace(a, BUFFER, &orig).unwrap();
    dev.resume_wave(a, ResumeMode::SingleStep).unwrap();
    match dev.stop_undisplace(a).unwrap() {
        Undisplaced::NotExecuted => stopped_at(getpc),
        Undisplaced::Executed => stopped_at(getpc + 4),
    }

    // The client took its breakpoint out: the wave runs to the end.
    dev.write_memory(getpc, &orig).unwrap();
    dev.resume_wave(a, ResumeMode::Normal).unwrap();
    assert_eq!(
        dev.wait(d, Some(Duration::from_secs(20))),
        Some(DispatchOutcome::Completed)
    );
}
