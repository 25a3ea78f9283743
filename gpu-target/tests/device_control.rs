//! Debugger control of the device: stop a running wave, read it, resume,
//! single-step, patch code through the device and let the waves finish.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use gpu_target::model::ResumeMode;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveState;
use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DeviceEvent;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::memory::BufferMemory;
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
