//! What gdbmux keeps per GPU wave stays flat under code-object reloads
//! (issue 16, the `soak --gpu` RSS growth): `samples/reload_loop.c` loads
//! a code object, launches one wave, unloads it, and again. Each round,
//! as the soak's gdb-shaped session does, the CPU stops at `simgpu_launch`,
//! a GPU breakpoint on the kernel stops the wave, its registers are read,
//! and it runs to its end. A wave that ends on its own reports no dbgapi
//! event, so before the fix every such wave's register map stayed in the
//! GPU controller for good (one more per round). `monitor gpu` counts what
//! is kept per wave; at each round's `simgpu_launch` stop (the previous
//! code object unloaded) nothing of the ended waves is left.

mod gpu_support;

use gpu_support::*;
use protocol_tests::client::RspClient;
use protocol_tests::reply::StopReply;

/// `kept per wave: T thread ids, R register maps, S stepping …, Q
/// waiting …` of `monitor gpu`: (T, R, S + Q).
fn kept(c: &mut RspClient) -> (usize, usize, usize) {
    let info = monitor(c, "gpu");
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("kept per wave: "))
        .unwrap_or_else(|| panic!("no `kept per wave` line in:\n{info}"));
    let n: Vec<usize> = line
        .split(", ")
        .map(|part| {
            part.split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("bad count in {line}"))
        })
        .collect();
    assert_eq!(n.len(), 4, "{line}");
    (n[0], n[1], n[2] + n[3])
}

/// Continue to a breakpoint at `addr` (inserted for this stop only).
fn run_to(c: &mut RspClient, addr: u64, what: &str) {
    c.expect_ok(&format!("Z0,{addr:x},1")).expect("Z0");
    let (stop, _) = c.stop_reply("vCont;c").expect(what);
    assert!(matches!(stop, StopReply::Signal(_)), "{what}: {stop:?}");
    c.expect_ok(&format!("z0,{addr:x},1")).expect("z0");
}

#[test]
fn ended_waves_leave_nothing_behind() {
    const ROUNDS: usize = 6;
    let env = GpuEnv::get();
    let exe = env.build_sample("reload_loop");
    let server = env.serve(&["reload_loop"]);
    let mut c = RspClient::connect(("127.0.0.1", server.port)).expect("connect");
    c.handshake_gdb().expect("handshake");
    c.stop_reply("?").expect("?");
    let qc = String::from_utf8_lossy(&c.request(b"qC").expect("qC")).into_owned();
    let pid = qc
        .strip_prefix("QCp")
        .and_then(|r| r.split('.').next())
        .and_then(|p| u64::from_str_radix(p, 16).ok())
        .unwrap_or_else(|| panic!("qC answered {qc}"));
    // At `main` the runtime library is mapped.
    run_to(
        &mut c,
        load_base(pid, "reload_loop") + nm(&exe, "main", false),
        "main",
    );
    let rt = env.bin_dir.join("libsimgpu_rt.so");
    let launch = load_base(pid, "libsimgpu_rt.so") + nm(&rt, "simgpu_launch", true);
    let mut seen = Vec::new();
    for round in 0..ROUNDS {
        run_to(&mut c, launch, "simgpu_launch");
        let (tids, reg_maps, stepping) = kept(&mut c);
        seen.push(reg_maps);
        assert!(
            tids <= 1 && reg_maps <= 1 && stepping == 0,
            "round {round}: the ended waves are still kept: {tids} thread ids, {reg_maps} register maps, {stepping} stepping (per round: {seen:?})"
        );
        let out = monitor(&mut c, "gpu break vector_add");
        assert!(out.contains("GPU breakpoint at"), "gpu break: {out}");
        c.send_packet(b"vCont;c").expect("vCont;c");
        let (_, text) = c.wait_stop("vCont;c to the GPU breakpoint").expect("stop");
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("GPU wave"), "not the wave's stop: {text}");
        let waves = monitor(&mut c, "gpu waves");
        let (wave, pc) = waves
            .lines()
            .find_map(|l| {
                let rest = l.strip_prefix("wave ")?;
                let (id, rest) = rest.split_once(' ')?;
                let pc = rest.split_once("): Stopped pc=0x")?.1.split(' ').next()?;
                Some((id.parse::<u64>().ok()?, u64::from_str_radix(pc, 16).ok()?))
            })
            .unwrap_or_else(|| panic!("no stopped wave in:\n{waves}"));
        let regs = monitor(&mut c, &format!("gpu regs {wave} pc exec v0"));
        assert!(regs.contains(&format!("{pc:#x}")), "regs: {regs}");
        assert_eq!(kept(&mut c).1, 1, "the stopped wave's register map");
        let out = monitor(&mut c, &format!("gpu delete {pc:#x}"));
        assert!(out.contains("deleted"), "gpu delete: {out}");
        let out = monitor(&mut c, "gpu continue");
        assert!(out.contains("resumed"), "gpu continue: {out}");
    }
}
