//! Every sample program gives the CPU-checked result standalone (the
//! runtime's own interpreter) and when its dispatches run on the device of
//! the simulated library (attached through dlopen); the faulting sample
//! reports a memory violation both ways, and as a WAVE_STOP when attached.

mod common;

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::fd::BorrowedFd;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::DbgApiBackend;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::GpuEvent;
use gpu_target::model::HostProcess;
use gpu_target::model::StopReasons;
use gpu_target::model::WaveException;

const SAMPLES: [(&str, i32, &str); 4] = [
    ("vector_add", 0, "vector_add: PASS"),
    ("reduce", 0, "reduce: PASS"),
    ("divergent", 0, "divergent: PASS"),
    (
        "fault",
        3,
        "fault: launch returned 5 (memory violation in a kernel)",
    ),
];

#[test]
fn samples_standalone() {
    for (name, code, text) in SAMPLES {
        let exe = common::build_sample(name);
        let out = Command::new(&exe).output().expect("run sample");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{name}: {stdout}");
        assert!(stdout.contains(text), "{name}: {stdout}");
    }
}

struct Host(i32);

impl HostProcess for Host {
    fn os_pid(&self) -> i32 {
        self.0
    }
    fn insert_breakpoint(&mut self, _: u64, _: BreakpointId) -> Result<(), GpuError> {
        Ok(())
    }
    fn remove_breakpoint(&mut self, _: BreakpointId) -> Result<(), GpuError> {
        Ok(())
    }
}

/// Waits until one of `fds` is readable (deadline fails loudly).
fn wait_readable(fds: &[i32], deadline: Instant) -> Vec<bool> {
    let left = deadline
        .checked_duration_since(Instant::now())
        .expect("timed out waiting for the sample");
    // SAFETY: both descriptors stay open for the duration of the call.
    let borrowed: Vec<BorrowedFd<'_>> = fds
        .iter()
        .map(|&f| unsafe { BorrowedFd::borrow_raw(f) })
        .collect();
    let mut pfds: Vec<_> = borrowed
        .iter()
        .map(|b| nix::poll::PollFd::new(*b, nix::poll::PollFlags::POLLIN))
        .collect();
    let ms = left.as_millis().min(u16::MAX as u128) as u16;
    nix::poll::poll(&mut pfds, nix::poll::PollTimeout::from(ms)).expect("poll");
    pfds.iter()
        .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
        .collect()
}

#[test]
fn samples_on_the_simulated_device() {
    let api = DbgApi::load(Some(&common::library())).expect("load");
    for (name, code, text) in SAMPLES {
        let exe = common::build_sample(name);
        let mut child = Command::new(&exe)
            .arg("--wait")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let out_fd = stdout.as_raw_fd();
        let mut out = BufReader::new(stdout);
        let mut stdin = child.stdin.take().expect("stdin");
        let mut b =
            Some(DbgApiBackend::attach(&api, Box::new(Host(child.id() as i32))).expect("attach"));
        let fd = b.as_ref().and_then(|b| b.notifier_fd()).expect("notifier");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut runtime_up = false;
        let mut fault_stop = None;
        let mut queue_error = false;
        let mut lines = Vec::new();
        loop {
            if let Some(be) = b.as_mut() {
                while let Some((ev, e)) = be.next_event().expect("next_event") {
                    match e {
                        GpuEvent::Runtime(_) => runtime_up = true,
                        GpuEvent::WaveStop { wave } => {
                            fault_stop = be.wave_info(wave).expect("wave info").stop_reason;
                            be.event_processed(ev).expect("processed");
                            // Continue with the signal: the runtime sees it.
                            be.resume_wave_with_exception(wave, WaveException::MemoryViolation)
                                .expect("resume with exception");
                            continue;
                        }
                        GpuEvent::QueueError { .. } => queue_error = true,
                        _ => {}
                    }
                    be.event_processed(ev).expect("processed");
                }
            }
            let fds: Vec<i32> = if b.is_some() {
                vec![out_fd, fd]
            } else {
                vec![out_fd]
            };
            let ready = wait_readable(&fds, deadline);
            if ready[0] {
                let mut line = String::new();
                if out.read_line(&mut line).expect("read") == 0 {
                    break;
                }
                if line.starts_with("checkpoint") {
                    stdin.write_all(b"go\n").expect("go");
                    stdin.flush().expect("flush");
                }
                lines.push(line.trim().to_owned());
            }
        }
        let st = child.wait().expect("wait");
        assert_eq!(st.code(), Some(code), "{name}: {lines:?}");
        assert!(runtime_up, "{name}: no RUNTIME event");
        assert!(
            lines.iter().any(|l| l.starts_with(text)),
            "{name}: {lines:?}"
        );
        if name == "fault" {
            assert_eq!(fault_stop, Some(StopReasons::MEMORY_VIOLATION));
            assert!(queue_error, "no QUEUE_ERROR event");
        } else {
            assert_eq!(fault_stop, None);
        }
    }
}
