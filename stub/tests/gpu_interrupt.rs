//! An interrupt of the GPU session while a wave runs (issue 15, GPU
//! stop-all): `samples/hostile/hostile.c --hang` runs one wave that never
//! ends. The GPU session, claimed as lldb 23.1 does, resumes and is
//! interrupted: the stop arrives once the wave has stopped, well before
//! gdbmux's 3 s stop timeout, names the wave (not the shadow thread), and
//! the wave is stopped (its pc reads). Before, the wave stopped for the
//! interrupt was resumed at once and the interrupt reported after the
//! timeout, with the wave running.
//!
//! gdbmux asks the library only for a WAVE_STOP's reason when the stop was
//! requested, and for the stopped wave's pc and exec when a client wants
//! them: the pc and exec the stop reply expedites, `p` reads and
//! `jThreadsInfo` lists are the same values.

mod gpu_support;

use std::time::Duration;
use std::time::Instant;

use gpu_support::*;
use protocol_tests::reply::IdPart;

#[test]
fn gpu_interrupt_stops_the_running_wave_without_the_timeout() {
    let env = GpuEnv::get();
    let (server, exe) = env.hang_server("hostile-interrupt", &[]);
    let (mut cpu, _) = lldb_client(server.port);
    let stop = signal_stop(cpu.stop_reply("?").expect("?").0, "?");
    let pid = stop_pid(&stop);
    // Run to main (the runtime library is mapped), then to the runtime's
    // hook: the runtime is up and the hook hit carries the offer.
    let main = load_base(pid, "hostile") + nm(&exe, "main", false);
    cpu.expect_ok(&format!("Z0,{main:x},1")).expect("Z0 main");
    cpu.stop_reply("vCont;c").expect("to main");
    cpu.expect_ok(&format!("z0,{main:x},1")).expect("z0 main");
    let hook =
        load_base(pid, "libsimgpu_rt.so") + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);
    cpu.expect_ok(&format!("Z0,{hook:x},1")).expect("Z0 hook");
    cpu.stop_reply("vCont;c").expect("to the hook");
    let offer = hit_actions(&breakpoint_hit(&mut cpu, hook))
        .connect_info
        .expect("the hook hit offers the GPU");
    assert!(offer.connect_url.ends_with(&format!(":{}", server.port)));
    let (mut gpu, _) = lldb_client(server.port);
    gpu.stop_reply("?").expect("GPU ?");
    cpu.expect_ok(&format!("z0,{hook:x},1")).expect("z0 hook");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    server.wait_log("launching hang", 30);

    // The hang kernel's wave shows up in the wave list (the launch is
    // under way): ask until it does, bounded.
    let deadline = Instant::now() + Duration::from_secs(30);
    let wave_tid = loop {
        let r = gpu.request(b"qfThreadInfo").expect("qfThreadInfo");
        let text = String::from_utf8_lossy(&r).into_owned();
        let ids: Vec<u64> = text
            .strip_prefix('m')
            .unwrap_or("")
            .split(',')
            .filter_map(|t| u64::from_str_radix(t.rsplit('.').next()?, 16).ok())
            .collect();
        // Tid 1 is the shadow thread, listed only while no wave exists.
        if let Some(t) = ids.iter().copied().find(|t| *t != 1) {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "no wave within 30 s: {text}\n{}",
            server.log()
        );
    };

    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    let t = Instant::now();
    gpu.interrupt().expect("GPU interrupt");
    let (stop, _) = gpu.wait_stop("\\x03").expect("GPU interrupt stop");
    let took = t.elapsed();
    let s = signal_stop(stop, "GPU interrupt");
    assert!(
        took < Duration::from_secs(2),
        "the interrupt took {took:?} (the stop timeout is 3 s)\n{}",
        server.log()
    );
    assert_eq!(
        s.thread.map(|t| t.tid),
        Some(IdPart::Id(wave_tid)),
        "the interrupt names the wave it stopped: {s:?}"
    );
    assert!(
        !server.log().contains("GPU stop requests timed out"),
        "{}",
        server.log()
    );
    // Stopped: its pc reads (a running wave's registers do not).
    let pc_reg = regnum(&mut gpu, "generic:pc;");
    let exec_reg = regnum(&mut gpu, "name:exec;");
    let read = |gpu: &mut protocol_tests::client::RspClient, n: u32| {
        let v = gpu
            .request(format!("p{n:x};thread:{wave_tid:x};").as_bytes())
            .expect("p");
        assert!(
            v.len() == 16 && v.iter().all(u8::is_ascii_hexdigit),
            "register {n} of the stopped wave: {}",
            String::from_utf8_lossy(&v)
        );
        String::from_utf8(v).expect("hex")
    };
    let pc = read(&mut gpu, pc_reg);
    let exec = read(&mut gpu, exec_reg);
    assert_ne!(pc, "0000000000000000", "the stopped wave's pc");
    // The stop reply's expedited pc and thread-pcs, and `jThreadsInfo`,
    // agree with the reads (the pc and exec asked for after the stop).
    if let Some(v) = s.registers.get(&pc_reg) {
        assert_eq!(v, &pc, "expedited pc");
    }
    if let Some(at) = s.threads.iter().position(|t| t.tid == IdPart::Id(wave_tid)) {
        if let Some(v) = s.thread_pcs.get(at) {
            assert_eq!(v.to_le_bytes().map(|b| format!("{b:02x}")).concat(), pc);
        }
    }
    let infos = protocol_tests::reply::parse_threads_info(
        &gpu.request(b"jThreadsInfo").expect("jThreadsInfo"),
    )
    .expect("jThreadsInfo parses");
    let wave = infos
        .iter()
        .find(|t| t.tid == wave_tid)
        .expect("the wave in jThreadsInfo");
    assert_eq!(wave.registers.get(&pc_reg), Some(&pc), "{:?}", wave.raw);
    assert_eq!(wave.registers.get(&exec_reg), Some(&exec), "{:?}", wave.raw);
    assert_eq!(read(&mut gpu, pc_reg), pc, "the pc read again");
}

/// The number of the GPU register whose `qRegisterInfo` has `key` (e.g.
/// `generic:pc;`).
fn regnum(gpu: &mut protocol_tests::client::RspClient, key: &str) -> u32 {
    for n in 0..4096u32 {
        let r = gpu
            .request(format!("qRegisterInfo{n:x}").as_bytes())
            .expect("qRegisterInfo");
        let text = String::from_utf8_lossy(&r).into_owned();
        if text.contains(key) {
            return n;
        }
        assert!(!text.starts_with('E'), "no {key} in the register table");
    }
    panic!("no {key} in the register table")
}
