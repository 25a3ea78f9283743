//! GPU faults (the hardening issue's "Faults" list), end to end against the
//! `gdbmux` binary with the simulated GPU, seen by a raw RSP client speaking
//! lldb's dialect:
//!
//! - the GPU runtime unloads: the GPU session ends with `W00` and closes; no
//!   connection can claim anything until a new runtime load makes a new
//!   offer (through the hook breakpoint's hit), which can be claimed;
//! - the GPU library returns errors (`SIMGPU_FAIL`): readable `E` replies,
//!   the session stays usable, gdbmux does not panic;
//! - the simulated device stalls (`SIMGPU_STALL`): an interrupt whose waves
//!   never report their stop is answered after gdbmux's stop timeout, and
//!   the CPU session is served meanwhile.
//!
//! Every wait is on an event (a reply, a line of the sample) with a
//! deadline.

mod gpu_support;

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;
use std::time::Instant;

use gpu_support::*;
use protocol_tests::client::ClientError;
use protocol_tests::client::RspClient;
use protocol_tests::framing;
use protocol_tests::reply::AcceleratorActions;
use protocol_tests::reply::ErrorReply;
use protocol_tests::reply::IdPart;
use protocol_tests::reply::StopReply;
use protocol_tests::LLDB_QSUPPORTED;

// ---------------------------------------------------------------- helpers

fn gpu_state(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("GPU state: "))
        .unwrap_or_else(|| panic!("no 'GPU state:' line in:\n{text}"))
        .trim()
        .to_string()
}

fn offers(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("offer "))
        .map(str::to_string)
        .collect()
}

/// `jAcceleratorPluginBreakpointHit` for the hook breakpoint, as lldb sends
/// it; returns the reply's `actions` (if any).
fn hook_hit_actions(cpu: &mut RspClient, hook: u64) -> Option<AcceleratorActions> {
    let reply = breakpoint_hit(cpu, hook);
    assert_eq!(reply["auto_resume_native"], serde_json::Value::Bool(true));
    if reply["actions"].is_null() {
        return None;
    }
    Some(hit_actions(&reply))
}

/// Claim the offer with a new connection; its `?` names the shadow thread.
fn connect_gpu(port: u16) -> RspClient {
    let (mut gpu, accel) = lldb_client(port);
    assert!(
        !accel,
        "the GPU session does not offer accelerator-plugins+"
    );
    let (stop, _) = gpu.stop_reply("?").expect("GPU ?");
    let t = signal_stop(stop, "GPU ?").thread.expect("thread");
    assert_eq!(t.tid, IdPart::Id(1), "the shadow thread");
    gpu
}

/// The connection was closed by the server (within 10 s).
fn assert_closed(c: &mut RspClient, what: &str) {
    match c.recv_packet_within(Duration::from_secs(10)) {
        Err(ClientError::Closed { .. }) => {}
        Err(ClientError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("{what}: connection not closed: {other:?}"),
    }
}

fn lifecycle(env: &GpuEnv) -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| env.build_sample("lifecycle"))
}

/// Continue the CPU session and wait for a breakpoint stop at `pc`.
fn cont_to(cpu: &mut RspClient, pc: u64, what: &str) {
    let (stop, _) = cpu.wait_stop(what).expect(what);
    let s = signal_stop(stop, what);
    assert!(s.is_swbreak(), "{what}: not a breakpoint stop: {s:?}");
    assert_eq!(s.thread_pcs.first().copied(), Some(pc), "{what}: wrong pc");
}

// ------------------------------------------------------------------ tests

/// The runtime unloads while a GPU session runs: that session gets `W00`
/// and is closed; a new connection is refused (no offer pending); when the
/// runtime loads again, the hook breakpoint's hit makes a NEW offer (a new
/// identifier), which a new connection claims; the second lifetime ends the
/// same way and the program passes.
#[test]
fn runtime_unload_ends_gpu_session_and_reload_offers_anew() {
    let env = GpuEnv::get();
    let exe = lifecycle(env);
    let mut sample = Sample::start(env, exe);
    sample.expect("checkpoint start");
    let server = env.serve_attach(sample.pid());
    let (mut cpu, accel) = lldb_client(server.port);
    assert!(accel);
    let (stop, _) = cpu.stop_reply("?").expect("?");
    signal_stop(stop, "first stop");
    let init = plugin_initialize(&mut cpu);
    assert!(init.connect_info.is_none(), "runtime down: no offer");
    let hook = load_base(u64::from(sample.pid()), "libsimgpu_rt.so")
        + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);

    // Lifetime 1: the hook hit offers; a connection claims it.
    cpu.expect_ok(&format!("Z0,{hook:x},1")).expect("Z0 hook");
    cpu.send_packet(b"vCont;c").expect("vCont;c");
    sample.release(1);
    cont_to(&mut cpu, hook, "hook stop (lifetime 1)");
    let first = hook_hit_actions(&mut cpu, hook)
        .and_then(|a| a.connect_info.map(|c| (a.identifier, c)))
        .expect("the hit in lifetime 1 offers");
    cpu.expect_ok(&format!("z0,{hook:x},1")).expect("z0 hook");
    let mut gpu = connect_gpu(server.port);
    let text = monitor(&mut cpu, "gpu");
    assert_eq!(gpu_state(&text), "Connected", "{text}");

    // The runtime runs its kernel, then shuts down.
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    sample.expect("checkpoint up");
    sample.release(1);
    let (stop, _) = gpu.wait_stop("GPU vCont;c").expect("GPU session end");
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "the GPU session ends with W00 when the runtime unloads: {stop:?}"
    );
    assert_closed(&mut gpu, "GPU session after the runtime unloaded");
    sample.expect("checkpoint down");

    // Runtime down: nothing to claim.
    cpu.interrupt().expect("interrupt");
    let (stop, _) = cpu.wait_stop("\\x03").expect("CPU interrupt stop");
    signal_stop(stop, "interrupt");
    let text = monitor(&mut cpu, "gpu");
    assert_eq!(gpu_state(&text), "ProcessAttached", "{text}");
    assert_eq!(
        offers(&text),
        vec![format!(
            "offer {}: {} {} [Closed]",
            first.0, first.1.connect_url, first.1.triple
        )],
        "{text}"
    );
    let why = refused(server.port, LLDB_QSUPPORTED);
    assert!(why.contains("no GPU connection offer is pending"), "{why}");

    // Lifetime 2: the runtime loads again; the hook hit makes a new offer.
    cpu.expect_ok(&format!("Z0,{hook:x},1")).expect("Z0 hook");
    cpu.send_packet(b"vCont;c").expect("vCont;c");
    sample.release(1);
    cont_to(&mut cpu, hook, "hook stop (lifetime 2)");
    let second = hook_hit_actions(&mut cpu, hook)
        .and_then(|a| a.connect_info.map(|c| (a.identifier, c)))
        .expect("the hit in lifetime 2 offers anew");
    assert!(
        second.0 > first.0,
        "a new identifier: {} after {}",
        second.0,
        first.0
    );
    assert_eq!(
        hook_hit_actions(&mut cpu, hook).and_then(|a| a.connect_info),
        None,
        "one offer per lifetime"
    );
    cpu.expect_ok(&format!("z0,{hook:x},1")).expect("z0 hook");
    let mut gpu = connect_gpu(server.port);
    let text = monitor(&mut cpu, "gpu");
    assert_eq!(gpu_state(&text), "Connected", "{text}");
    assert!(
        offers(&text)
            .iter()
            .any(|o| o.starts_with(&format!("offer {}: ", second.0)) && o.contains("[Claimed")),
        "{text}"
    );

    // To the end: the second unload ends this GPU session too.
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    sample.expect("checkpoint again");
    sample.release(1);
    let (stop, _) = gpu.wait_stop("GPU vCont;c").expect("GPU session end");
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "{stop:?}"
    );
    let (stop, _) = cpu.wait_stop("vCont;c").expect("CPU end");
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "{stop:?}"
    );
    sample.expect("lifecycle: PASS");
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

/// gdbmux attached to `pid` with extra environment (the GPU library reads
/// its fault knobs from gdbmux's environment).
fn serve_attach_env(pid: u32, envs: &[(&str, String)]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "--attach"])
        .arg(pid.to_string())
        .arg("127.0.0.1:0");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    Server::start(cmd)
}

/// `vector_add --wait` with its runtime up, gdbmux attached (with `envs`),
/// a GPU session claimed, a GPU breakpoint on the kernel's entry, both
/// sessions resumed and the kernel launched. Returns the pieces and the
/// breakpoint address.
struct AtKernel {
    sample: Sample,
    server: Server,
    cpu: RspClient,
    gpu: RspClient,
    kaddr: u64,
}

fn launch_to_kernel_breakpoint(env: &GpuEnv, envs: &[(&str, String)]) -> AtKernel {
    let mut sample = Sample::runtime_up(env);
    let server = serve_attach_env(sample.pid(), envs);
    let (mut cpu, _) = lldb_client(server.port);
    let (stop, _) = cpu.stop_reply("?").expect("?");
    signal_stop(stop, "first stop");
    let init = plugin_initialize(&mut cpu);
    assert!(init.connect_info.is_some(), "runtime up: Initialize offers");
    let mut gpu = connect_gpu(server.port);

    // Let the program load its code object, then find the kernel.
    cpu.send_packet(b"vCont;c").expect("vCont;c");
    sample.release(1);
    sample.expect("checkpoint loaded");
    cpu.interrupt().expect("interrupt");
    let (stop, _) = cpu.wait_stop("\\x03").expect("CPU interrupt stop");
    signal_stop(stop, "CPU interrupt");
    let text = monitor(&mut cpu, "gpu");
    let load = text
        .lines()
        .find_map(|l| {
            let rest = l.split("(load address ").nth(1)?;
            u64::from_str_radix(rest.trim_end_matches(')').trim_start_matches("0x"), 16).ok()
        })
        .unwrap_or_else(|| panic!("no code object in:\n{text}"));
    let kaddr = load
        + kernel_symbol(
            &env.root.join("samples/kernels/vector_add.hsaco"),
            "vector_add",
        );
    gpu.expect_ok(&format!("Z0,{kaddr:x},4"))
        .expect("GPU Z0 at the kernel entry");
    // A client write over the breakpoint (the original bytes, as a
    // debugger restoring code would write) keeps the breakpoint: the read
    // shows the written bytes, the trap stays in memory and is hit below.
    let orig = gpu
        .request(format!("m{kaddr:x},4").as_bytes())
        .expect("m at the kernel entry");
    let orig = String::from_utf8(orig).expect("hex");
    gpu.expect_ok(&format!("M{kaddr:x},4:{orig}"))
        .expect("M over the GPU breakpoint");
    let again = gpu
        .request(format!("m{kaddr:x},4").as_bytes())
        .expect("m after M");
    assert_eq!(String::from_utf8_lossy(&again), orig, "reads stay masked");
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    sample.release(1);
    AtKernel {
        sample,
        server,
        cpu,
        gpu,
        kaddr,
    }
}

/// The error reply's message (panics on anything but `E..;text`).
fn error_text(raw: &[u8], what: &str) -> String {
    ErrorReply::parse(raw)
        .unwrap_or_else(|| {
            panic!(
                "{what}: expected an E reply, got {}",
                framing::printable(raw)
            )
        })
        .message
        .unwrap_or_else(|| panic!("{what}: the E reply carries no text"))
}

/// The GPU library fails `read_register` and `read_memory`, then also
/// `wave_list` and `wave_info` (switched on through `SIMGPU_FAIL_FILE` while
/// a wave is stopped at a breakpoint): `p` and `m` get `E..;text` replies
/// naming the failing call, so do the thread lists (`qfThreadInfo`,
/// `jThreadsInfo`), `monitor gpu waves` says why it cannot list the waves,
/// gdbmux does not panic; once the faults are off the same session reads
/// the register.
#[test]
fn dbgapi_errors_become_readable_error_replies() {
    let env = GpuEnv::get();
    let fail_file = env
        .samples
        .join(format!("simgpu-fail-{}", std::process::id()));
    let _ = std::fs::remove_file(&fail_file);
    let mut at = launch_to_kernel_breakpoint(
        env,
        &[("SIMGPU_FAIL_FILE", fail_file.display().to_string())],
    );
    let (stop, _) = at
        .gpu
        .wait_stop("GPU vCont;c")
        .expect("wave at the breakpoint");
    let s = signal_stop(stop, "GPU breakpoint");
    assert!(s.is_swbreak(), "{s:?}");
    let tid = match s.thread.expect("thread").tid {
        IdPart::Id(t) => t,
        other => panic!("thread id {other:?}"),
    };
    assert_ne!(tid, 1, "a wave, not the shadow thread");
    at.gpu
        .expect_ok("QEnableErrorStrings")
        .expect("QEnableErrorStrings");
    let p = format!("p0;thread:{tid:x};");
    let good = at.gpu.request(p.as_bytes()).expect("p");
    assert!(
        ErrorReply::parse(&good).is_none(),
        "p before the faults: {}",
        framing::printable(&good)
    );

    std::fs::write(&fail_file, "read_register,read_memory").expect("fail file");
    let raw = at.gpu.request(p.as_bytes()).expect("p");
    let why = error_text(&raw, "p");
    assert!(why.contains("read_register"), "p: {why}");
    let raw = at
        .gpu
        .request(format!("m{:x},4", at.kaddr).as_bytes())
        .expect("m");
    let why = error_text(&raw, "m");
    assert!(why.contains("memory"), "m: {why}");
    // The wave list fails too: the thread lists answer an error naming it.
    std::fs::write(&fail_file, "read_register,read_memory,wave_list,wave_info").expect("fail file");
    let raw = at.gpu.request(b"qfThreadInfo").expect("qfThreadInfo");
    let why = error_text(&raw, "qfThreadInfo");
    assert!(why.contains("wave_list"), "qfThreadInfo: {why}");
    let raw = at.gpu.request(b"jThreadsInfo").expect("jThreadsInfo");
    let why = error_text(&raw, "jThreadsInfo");
    assert!(why.contains("wave_list"), "jThreadsInfo: {why}");
    at.cpu.interrupt().expect("CPU interrupt");
    let (stop, _) = at.cpu.wait_stop("\\x03").expect("CPU interrupt stop");
    signal_stop(stop, "CPU interrupt");
    let text = monitor(&mut at.cpu, "gpu waves");
    assert!(
        text.contains("cannot list the waves") && text.contains("wave_list"),
        "{text}"
    );
    let raw = at.gpu.request(p.as_bytes()).expect("p");
    assert!(
        ErrorReply::parse(&raw).is_some(),
        "p: {}",
        framing::printable(&raw)
    );

    // Faults off: the same session works.
    std::fs::write(&fail_file, "").expect("fail file");
    let raw = at.gpu.request(p.as_bytes()).expect("p");
    assert_eq!(raw, good, "p after the faults");
    let (stop, _) = at.gpu.stop_reply("?").expect("GPU ?");
    signal_stop(stop, "GPU ? after the faults");
    assert!(!at.server.log().contains("panicked"), "{}", at.server.log());
    let _ = std::fs::remove_file(&fail_file);
    drop(at.sample);
}

/// The device stalls (`SIMGPU_STALL=1`): waves stop at a breakpoint but the
/// device never reports it, and stop requests never complete. An interrupt
/// of the running GPU session is answered after gdbmux's stop timeout (a
/// SIGSTOP on the shadow thread, the timeout logged), and the CPU session
/// answers `?` and `qC` meanwhile.
#[test]
fn stalled_device_interrupt_times_out_and_cpu_stays_served() {
    let env = GpuEnv::get();
    let timeout = Duration::from_millis(1500);
    let mut at = launch_to_kernel_breakpoint(
        env,
        &[
            ("SIMGPU_STALL", "1".to_string()),
            (
                "GDBMUX_GPU_STOP_TIMEOUT_MS",
                timeout.as_millis().to_string(),
            ),
        ],
    );
    at.server.wait_log("fault injection active", 10);
    // The waves reach the breakpoint (the device holds them), unreported.
    // The program submits the dispatch once it runs: stop the CPU, look,
    // and let it run on until the waves are there.
    let waves_deadline = Instant::now() + Duration::from_secs(20);
    loop {
        at.cpu.interrupt().expect("CPU interrupt");
        let (stop, _) = at.cpu.wait_stop("\\x03").expect("CPU interrupt stop");
        signal_stop(stop, "CPU interrupt");
        let text = monitor(&mut at.cpu, "gpu waves");
        if text.contains("Running") {
            break;
        }
        assert!(Instant::now() < waves_deadline, "no waves:\n{text}");
        at.cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    }

    let t0 = Instant::now();
    at.gpu.interrupt().expect("GPU interrupt");
    // Meanwhile the loop serves the CPU session.
    let mut trips = 0;
    while t0.elapsed() < timeout / 2 {
        let r0 = Instant::now();
        let (stop, _) = at.cpu.stop_reply("?").expect("CPU ? during the stall");
        signal_stop(stop, "CPU ?");
        let qc = at.cpu.request(b"qC").expect("CPU qC during the stall");
        assert!(qc.starts_with(b"QC"), "{}", framing::printable(&qc));
        assert!(
            r0.elapsed() < Duration::from_secs(1),
            "CPU round trip took {:?}",
            r0.elapsed()
        );
        trips += 1;
    }
    assert!(trips > 0);
    at.gpu.set_timeout(timeout + Duration::from_secs(10));
    let (stop, _) = at.gpu.wait_stop("\\x03").expect("GPU interrupt answered");
    let waited = t0.elapsed();
    let s = signal_stop(stop, "GPU interrupt");
    assert_eq!(s.signo, 19, "SIGSTOP: {s:?}");
    assert_eq!(
        s.thread.map(|t| t.tid),
        Some(IdPart::Id(1)),
        "shadow thread"
    );
    assert!(
        waited >= timeout - Duration::from_millis(100),
        "answered before the timeout: {waited:?}"
    );
    at.server.wait_log("GPU stop requests timed out", 10);
    // Both sessions remain usable.
    let (stop, _) = at.gpu.stop_reply("?").expect("GPU ?");
    signal_stop(stop, "GPU ? after the timeout");
    let (stop, _) = at.cpu.stop_reply("?").expect("CPU ?");
    signal_stop(stop, "CPU ? after the timeout");
    assert!(!at.server.log().contains("panicked"), "{}", at.server.log());
    drop(at.sample);
}
