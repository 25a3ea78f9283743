//! `soak --gpu PROGRAM`: GPU sessions through gdbmux, shaped as stock gdb
//! 13 drives the GPU (the CPU session's `monitor gpu` commands, which gdb
//! sends as `qRcmd`). PROGRAM is `samples/reload_loop.c` built: it loads a
//! code object, launches one wave of `vector_add`, unloads, and again,
//! forever. gdbmux serves it without `--once`, so the process and the GPU
//! library outlive each client.
//!
//! One session: connect as gdb, `?`, set a GPU breakpoint on the kernel,
//! continue until the wave stops there (reported to the CPU session with a
//! console line), list the waves, read the wave's registers, step it, read
//! CPU registers, memory and threads, delete the breakpoint, resume the
//! wave, continue and interrupt the CPU (the program unloads and reloads
//! its code object meanwhile), and disconnect.

use std::time::Duration;

use anyhow::bail;
use anyhow::Context;
use anyhow::Result;
use protocol_tests::client::RspClient;
use protocol_tests::reply::decode_hex;
use protocol_tests::reply::encode_hex;
use protocol_tests::reply::StopReply;

use crate::Rng;

/// What the GPU sessions did.
#[derive(Default, Debug)]
pub struct GpuStats {
    /// Sessions run.
    pub sessions: u64,
    /// Wave stops at the kernel breakpoint.
    pub breakpoint_stops: u64,
    /// Wave single steps.
    pub steps: u64,
    /// Code-object load/unload events the GPU library reported (from
    /// `monitor gpu`).
    pub code_object_updates: u64,
    /// Packets sent.
    pub packets: u64,
}

/// Runs `monitor CMD` as gdb does and returns the console text.
pub fn monitor(c: &mut RspClient, stats: &mut GpuStats, cmd: &str) -> Result<String> {
    stats.packets += 1;
    c.send_packet(format!("qRcmd,{}", encode_hex(cmd.as_bytes())).as_bytes())?;
    let mut out = Vec::new();
    loop {
        let r = c.recv_packet().with_context(|| format!("monitor {cmd}"))?;
        if r == b"OK" {
            return Ok(String::from_utf8_lossy(&out).into_owned());
        }
        match r.strip_prefix(b"O").and_then(decode_hex) {
            Some(text) => out.extend(text),
            None => bail!("monitor {cmd}: reply {}", String::from_utf8_lossy(&r)),
        }
    }
}

/// The first `wave N (dbgapi M): Stopped pc=0x…` line: (N, pc).
fn stopped_wave(waves: &str) -> Option<(u64, u64)> {
    waves.lines().find_map(|l| {
        let rest = l.strip_prefix("wave ")?;
        let (id, rest) = rest.split_once(' ')?;
        let pc = rest.split_once("): Stopped pc=0x")?.1.split(' ').next()?;
        Some((id.parse().ok()?, u64::from_str_radix(pc, 16).ok()?))
    })
}

/// `events: … N code-object updates` of `monitor gpu`.
fn code_object_updates(info: &str) -> Option<u64> {
    let line = info.lines().find(|l| l.starts_with("events: "))?;
    let before = line.split(" code-object updates").next()?;
    before.rsplit(' ').next()?.parse().ok()
}

/// The address of `simgpu_launch` in the debugged program: the load base
/// of its `libsimgpu_rt.so` (from `/proc/PID/maps`, the pid from `qC`) plus
/// the symbol's value (`nm -D`).
fn simgpu_launch_addr(c: &mut RspClient, stats: &mut GpuStats) -> Result<u64> {
    stats.packets += 1;
    let qc = String::from_utf8_lossy(&c.request(b"qC")?).into_owned();
    let pid = qc
        .strip_prefix("QCp")
        .and_then(|r| r.split('.').next())
        .and_then(|p| u64::from_str_radix(p, 16).ok())
        .with_context(|| format!("qC answered {qc}"))?;
    // Right after the launch the program is at its first instruction,
    // before the dynamic loader mapped the runtime: let it run a little.
    // Each continue + interrupt may let it run only microseconds on a
    // loaded machine (20 tries were too few with four soaks and busy loops
    // on 2 CPUs), hence the generous bound. The runtime's code is in
    // place once its executable segment is mapped: the loader maps the
    // library's whole span from file offset 0 first, then each segment
    // over it at its own offset, and a breakpoint planted in between is
    // lost with the first mapping (the text segment's offset and address
    // differ by a page), so the program never stopped at `simgpu_launch`
    // (the CI flake of 2026-12: the first session timed out).
    let mut tries = 0;
    let maps = loop {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
        let text_mapped = maps.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1).is_some_and(|p| p.contains('x'))
                && f.get(5).is_some_and(|p| p.ends_with("libsimgpu_rt.so"))
        });
        if text_mapped || tries == 2000 {
            break maps;
        }
        tries += 1;
        stats.packets += 1;
        c.send_packet(b"vCont;c")?;
        c.interrupt()?;
        c.wait_stop("vCont;c + interrupt (runtime not mapped yet)")
            .context("vCont;c + interrupt (runtime not mapped yet)")?;
    };
    let (base, path) = maps
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = *f.get(5)?;
            (path.ends_with("libsimgpu_rt.so") && *f.get(2)? == "00000000").then(|| {
                let start = f[0].split('-').next().unwrap_or("0");
                (u64::from_str_radix(start, 16).unwrap_or(0), path.to_owned())
            })
        })
        .context("the program maps no libsimgpu_rt.so")?;
    let nm = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&path)
        .output()
        .context("running nm")?;
    let value = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.last() == Some(&"simgpu_launch")).then(|| u64::from_str_radix(f[0], 16).ok())?
        })
        .with_context(|| format!("no simgpu_launch in {path}"))?;
    Ok(base + value)
}

/// Waits for a stop, collecting console output; returns the text.
fn stop_text(c: &mut RspClient, what: &str) -> Result<(StopReply, String)> {
    let (stop, out) = c.wait_stop(what).with_context(|| what.to_string())?;
    Ok((stop, String::from_utf8_lossy(&out).into_owned()))
}

/// One GPU session (see the module comment).
pub fn session(c: &mut RspClient, rng: &mut Rng, stats: &mut GpuStats) -> Result<()> {
    stats.sessions += 1;
    c.handshake_gdb().context("handshake")?;
    stats.packets += 3;
    stats.packets += 1;
    let (stop, _) = c.stop_reply("?").context("?")?;
    if matches!(
        stop,
        StopReply::Exited { .. } | StopReply::Terminated { .. }
    ) {
        bail!("the GPU program is gone: {stop:?}");
    }
    // As gdb's `break simgpu_launch` + `continue`: stop the CPU where the
    // code object is loaded, then break on the kernel there (a kernel
    // breakpoint lasts as long as its code object: the program unloads it
    // after the launch).
    let launch = simgpu_launch_addr(c, stats)?;
    stats.packets += 1;
    c.expect_ok(&format!("Z0,{launch:x},1"))
        .context("Z0 simgpu_launch")?;
    stats.packets += 1;
    let (stop, _) = c
        .stop_reply("vCont;c")
        .context("vCont;c to simgpu_launch")?;
    if !matches!(stop, StopReply::Signal(_)) {
        bail!("no stop at simgpu_launch: {stop:?}");
    }
    stats.packets += 1;
    c.expect_ok(&format!("z0,{launch:x},1"))
        .context("z0 simgpu_launch")?;
    let out = monitor(c, stats, "gpu break vector_add")?;
    if !out.contains("GPU breakpoint at") {
        bail!("gpu break: {out}");
    }
    stats.packets += 1;
    c.send_packet(b"vCont;c")?;
    let (stop, text) = stop_text(c, "vCont;c to the GPU breakpoint")?;
    if !text.contains("GPU wave") {
        bail!("the stop is not the GPU breakpoint's: {stop:?}, console {text:?}");
    }
    stats.breakpoint_stops += 1;
    let waves = monitor(c, stats, "gpu waves")?;
    let Some((wave, pc)) = stopped_wave(&waves) else {
        bail!("no stopped wave in: {waves}");
    };
    let regs = monitor(c, stats, &format!("gpu regs {wave} pc exec v0"))?;
    if !regs.contains(&format!("{pc:#x}")) {
        bail!("wave {wave} pc is not {pc:#x}: {regs}");
    }
    // CPU-side traffic as gdb sends it at a stop.
    for p in [
        "g",
        "qfThreadInfo",
        "qsThreadInfo",
        "qXfer:threads:read::0,fff",
    ] {
        stats.packets += 1;
        c.request(p.as_bytes()).with_context(|| p.to_string())?;
    }
    let out = monitor(c, stats, &format!("gpu delete {pc:#x}"))?;
    if !out.contains("deleted") {
        bail!("gpu delete: {out}");
    }
    if rng.below(2) == 0 {
        // Step the wave, then let the continue report the step's stop.
        let out = monitor(c, stats, &format!("gpu step {wave}"))?;
        if !out.contains("stepping") {
            bail!("gpu step: {out}");
        }
        stats.packets += 1;
        c.send_packet(b"vCont;c")?;
        let (stop, text) = stop_text(c, "vCont;c for the step")?;
        if !text.contains("single step") {
            bail!("the stop is not the step's: {stop:?}, console {text:?}");
        }
        stats.steps += 1;
    }
    let out = monitor(c, stats, "gpu continue")?;
    if !out.contains("resumed") {
        bail!("gpu continue: {out}");
    }
    // Let the program run (it unloads and reloads its code object), then
    // interrupt it as gdb's Ctrl-C does.
    stats.packets += 1;
    c.send_packet(b"vCont;c")?;
    c.interrupt()?;
    let (stop, _) = stop_text(c, "vCont;c + interrupt")?;
    if matches!(
        stop,
        StopReply::Exited { .. } | StopReply::Terminated { .. }
    ) {
        bail!("the GPU program ended: {stop:?}");
    }
    let info = monitor(c, stats, "gpu")?;
    if let Some(n) = code_object_updates(&info) {
        stats.code_object_updates = n;
    }
    Ok(())
}

/// A quiet moment to sample: one client connected, the program stopped.
pub fn settle(c: &mut RspClient) -> Result<()> {
    c.set_timeout(Duration::from_secs(30));
    c.handshake_gdb()?;
    c.stop_reply("?")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_monitor_text() {
        let w = "wave 2 (dbgapi 77): Stopped pc=0x5555555633c0 exec=0xffffffffffffffff stop=(breakpoint) workgroup=(0,0,0) wave#0 dispatch 5\n";
        assert_eq!(stopped_wave(w), Some((2, 0x5555555633c0)));
        assert_eq!(
            stopped_wave("wave 3 (dbgapi 9): Running pc=- exec=-\n"),
            None
        );
        let i = "events: 1 wave stops, 0 wave ends, 17 code-object updates, 1 runtime\n";
        assert_eq!(code_object_updates(i), Some(17));
    }
}
