//! The GPU session's wave list (`qfThreadInfo`/`qsThreadInfo`) follows the
//! waves while gdbmux keeps the framed reply of an unchanged list
//! (`stub/src/session/thread_list.rs`): waves appear (a launch), stop (an
//! interrupt of the GPU session) and disappear (the kernel ends) between
//! lists, in lldb's dialect (the pid on the first id only) and in gdb's
//! (the pid on every id). A kept reply sent for a changed wave set would
//! show the old waves: the list never reaches the launch's waves, or still
//! shows them once the launch has returned.
//!
//! `stub/tests/gpu/wave_list_host.c` launches the `spin` kernel of
//! `tools/bench/fixtures/gpu_spin.cl` with [`WAVES`] waves that stay
//! resident while `wave_list_hold` is set; the test clears it through the
//! CPU session and waits for the CPU at `wave_list_done` (the launch has
//! returned: every wave has ended).

mod gpu_support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use gpu_support::*;
use protocol_tests::client::RspClient;

const WAVES: usize = 8;

/// The shadow thread, listed while no wave exists.
const SHADOW_TID: u64 = 1;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dialect {
    Gdb,
    Lldb,
}

/// The host program and the code object, built once per dialect's test
/// into its own directory (the tests run in parallel).
fn build(dialect: Dialect) -> (PathBuf, PathBuf) {
    let env = GpuEnv::get();
    let dir = env
        .bin_dir
        .join("gpu-wave-list")
        .join(format!("{dialect:?}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let hsaco = dir.join("gpu_spin.hsaco");
    env.build_kernel(&env.root.join("tools/bench/fixtures/gpu_spin.cl"), &hsaco);
    let exe = dir.join("wave_list_host");
    env.build_host(
        &env.root.join("stub/tests/gpu/wave_list_host.c"),
        &exe,
        &["-O1"],
    );
    (exe, hsaco)
}

/// The wave list as the client reads it: every id with the pid it carries
/// (if any). Checks the `m…`/`l` framing and that `qsThreadInfo` ends it.
fn wave_list(gpu: &mut RspClient) -> Vec<(Option<u64>, u64)> {
    let first = gpu.request(b"qfThreadInfo").expect("qfThreadInfo");
    let text = String::from_utf8_lossy(&first).into_owned();
    let mut ids = Vec::new();
    if let Some(list) = text.strip_prefix('m') {
        for id in list.split(',') {
            let (pid, tid) = match id.strip_prefix('p') {
                Some(pt) => {
                    let (p, t) = pt.split_once('.').expect("p<pid>.<tid>");
                    (Some(u64::from_str_radix(p, 16).expect("pid")), t)
                }
                None => (None, id),
            };
            ids.push((pid, u64::from_str_radix(tid, 16).expect("tid")));
        }
        let next = gpu.request(b"qsThreadInfo").expect("qsThreadInfo");
        assert_eq!(next, b"l", "qsThreadInfo ends the list");
    } else {
        assert_eq!(text, "l", "qfThreadInfo");
    }
    ids
}

/// The waves' thread ids of a list (the shadow thread left out), after
/// checking each id's form for the dialect and that each wave is alive
/// (`T`: the waves of this test end only when the test releases them).
fn waves(gpu: &mut RspClient, dialect: Dialect) -> Vec<u64> {
    let ids = wave_list(gpu);
    let gpu_pid = ids.first().and_then(|i| i.0);
    for (i, (pid, tid)) in ids.iter().enumerate() {
        match dialect {
            // gdb: every id carries its pid.
            Dialect::Gdb => assert!(pid.is_some(), "gdb: id {i} has no pid: {ids:x?}"),
            // lldb, one process: the pid on the first id only.
            Dialect::Lldb => assert_eq!(pid.is_some(), i == 0, "lldb: id {i}: {ids:x?}"),
        }
        // The shadow thread goes when the first wave comes: not asked.
        if *tid == SHADOW_TID {
            continue;
        }
        let pid = pid.or(gpu_pid).expect("a pid");
        let alive = gpu
            .request(format!("Tp{pid:x}.{tid:x}").as_bytes())
            .expect("T");
        assert_eq!(alive, b"OK", "listed thread {tid:x} is alive");
    }
    let mut tids: Vec<u64> = ids
        .into_iter()
        .map(|i| i.1)
        .filter(|t| *t != SHADOW_TID)
        .collect();
    let n = tids.len();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), n, "no id listed twice");
    tids
}

fn waves_appear_stop_and_disappear(dialect: Dialect) {
    let (exe, hsaco) = build(dialect);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(&exe)
        .arg(WAVES.to_string())
        .arg(&hsaco);
    let server = Server::start(cmd);

    // The CPU session (lldb's dialect, as lldb drives the GPU offer) runs
    // to wave_list_ready: the runtime is up, nothing launched yet.
    let (mut cpu, _) = lldb_client(server.port);
    let stop = signal_stop(cpu.stop_reply("?").expect("?").0, "?");
    let pid = stop_pid(&stop);
    let base = load_base(pid, "wave_list_host");
    let ready = base + nm(&exe, "wave_list_ready", false);
    let done = base + nm(&exe, "wave_list_done", false);
    let hold = base + nm(&exe, "wave_list_hold", false);
    cpu.expect_ok(&format!("Z0,{ready:x},1")).expect("Z0 ready");
    cpu.stop_reply("vCont;c").expect("to wave_list_ready");
    cpu.expect_ok(&format!("z0,{ready:x},1")).expect("z0 ready");
    let offer = plugin_initialize(&mut cpu)
        .connect_info
        .expect("the runtime is up: the GPU is offered");
    let port: u16 = offer
        .connect_url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("offer port");
    let mut gpu = match dialect {
        Dialect::Lldb => lldb_client(port).0,
        Dialect::Gdb => {
            let mut c = RspClient::connect(("127.0.0.1", port)).expect("connect");
            c.handshake_gdb().expect("gdb handshake");
            c
        }
    };
    gpu.stop_reply("?").expect("GPU ?");

    // No wave yet; asked twice (the second answer is the kept one).
    assert_eq!(
        waves(&mut gpu, dialect),
        Vec::<u64>::new(),
        "before the launch"
    );
    assert_eq!(
        waves(&mut gpu, dialect),
        Vec::<u64>::new(),
        "before the launch"
    );

    // Waves appear: the CPU launches; list until all are there (bounded).
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let w = waves(&mut gpu, dialect);
        if w.len() == WAVES {
            break w;
        }
        assert!(
            w.len() < WAVES && Instant::now() < deadline,
            "{dialect:?}: {} waves listed, {WAVES} launched\n{}",
            w.len(),
            server.log()
        );
    };
    assert_eq!(waves(&mut gpu, dialect), running, "unchanged while running");

    // The waves stop (stop-all of the GPU session): the same waves.
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    gpu.interrupt().expect("GPU interrupt");
    gpu.wait_stop("GPU \\x03").expect("GPU stop");
    assert_eq!(waves(&mut gpu, dialect), running, "the stopped waves");
    assert_eq!(
        waves(&mut gpu, dialect),
        running,
        "the stopped waves, again"
    );

    // The waves disappear: release them, run the GPU, and wait for the CPU
    // after the launch (every wave has ended by then).
    cpu.interrupt().expect("CPU interrupt");
    cpu.wait_stop("CPU \\x03").expect("CPU stop");
    cpu.expect_ok(&format!("M{hold:x},4:00000000"))
        .expect("clear wave_list_hold");
    cpu.expect_ok(&format!("Z0,{done:x},1")).expect("Z0 done");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    let stop = signal_stop(
        cpu.wait_stop("to wave_list_done").expect("CPU stop").0,
        "done",
    );
    assert_eq!(stop.signo, 5, "the CPU stops at wave_list_done: {stop:?}");
    gpu.interrupt().expect("GPU interrupt");
    gpu.wait_stop("GPU \\x03 after the launch")
        .expect("GPU stop");
    assert_eq!(
        waves(&mut gpu, dialect),
        Vec::<u64>::new(),
        "{dialect:?}: the launch returned, no wave is left\n{}",
        server.log()
    );
}

#[test]
fn lldb_wave_list_follows_the_waves() {
    waves_appear_stop_and_disappear(Dialect::Lldb);
}

#[test]
fn gdb_wave_list_follows_the_waves() {
    waves_appear_stop_and_disappear(Dialect::Gdb);
}
