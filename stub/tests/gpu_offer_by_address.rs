//! The GPU offer reaches lldb without any symbol name: with the runtime
//! hook's name unresolvable (as in a stripped runtime, e.g. Debian's
//! libhsa-runtime64 without `.symtab`; here `--gpu-hook` names a symbol
//! that does not exist), the accelerator actions carry a by-address
//! breakpoint on the address the GPU library itself asked gdbmux to break
//! on (`insert_breakpoint`: the runtime's `r_brk`), and a hit of that
//! breakpoint is answered (`mux::Mux::breakpoint_hit` offers a runtime
//! lifetime not offered yet; here the lifetime was offered in the
//! Initialize reply).
//!
//! A launched program's first runtime lifetime, where the library asks for
//! `r_brk` only while the runtime comes up (no lldb breakpoint can carry
//! that address to lldb in time), is offered through the by-name
//! breakpoint on the runtime's exported API function (`.dynsym`, kept by
//! `strip`; `mux::exported_hook`): stock lldb 23.1 with the hook name
//! unresolvable still gets its GPU target in the first lifetime and stops
//! a kernel compiled at test time.
//!
//! The client speaks lldb 23.1's packets (research/lldb-accelerator.md §2):
//! it plants the by-address breakpoint (`Z0`) and reports its hit with the
//! exact breakpoint object it was given.

mod gpu_support;

use std::process::Command;

use gpu_support::*;
use protocol_tests::client::RspClient;
use protocol_tests::framing;
use protocol_tests::reply::parse_json_reply;

const STRIPPED_HOOK: &str = "_hook_name_absent_from_a_stripped_runtime";

fn stop_at(cpu: &mut RspClient, pc: u64, what: &str) {
    let (stop, _) = cpu.wait_stop(what).expect(what);
    let s = signal_stop(stop, what);
    assert!(s.is_swbreak(), "{what}: not a breakpoint stop: {s:?}");
    assert_eq!(s.thread_pcs.first().copied(), Some(pc), "{what}: wrong pc");
}

fn hit_by_address(cpu: &mut RspClient, id: i64, addr: u64) -> serde_json::Value {
    let hit = serde_json::json!({
        "plugin_name": PLUGIN,
        "breakpoint": {
            "identifier": id,
            "by_name": null,
            "by_address": {"load_address": addr},
            "symbol_names": [],
        },
        "symbol_values": [],
    });
    let mut p = b"jAcceleratorPluginBreakpointHit:".to_vec();
    p.extend(framing::escape(hit.to_string().as_bytes()));
    let raw = cpu.request(&p).expect("jAcceleratorPluginBreakpointHit");
    parse_json_reply(&raw).expect("BreakpointHit reply")
}

#[test]
fn offer_by_the_library_breakpoint_address() {
    let env = GpuEnv::get();
    let exe = env.build_sample("lifecycle");
    let mut sample = Sample::start(env, &exe);
    sample.expect("checkpoint start");
    sample.release(1);
    sample.expect("checkpoint up");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "--gpu-hook", STRIPPED_HOOK])
        .arg("--attach")
        .arg(sample.pid().to_string())
        .arg("127.0.0.1:0");
    let server = Server::start(cmd);
    let (mut cpu, accel) = lldb_client(server.port);
    assert!(accel);
    let (stop, _) = cpu.stop_reply("?").expect("?");
    signal_stop(stop, "first stop");

    // The runtime's hook, located only to check the address gdbmux hands
    // out (gdbmux itself never looks the name up).
    let hook = load_base(u64::from(sample.pid()), "libsimgpu_rt.so")
        + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);
    let init = plugin_initialize(&mut cpu);
    assert!(init.connect_info.is_some(), "runtime up: offered at once");
    let by_name = init
        .breakpoints
        .iter()
        .find(|b| b.function_name.is_some())
        .expect("the by-name hook breakpoint");
    assert_eq!(by_name.function_name.as_deref(), Some(STRIPPED_HOOK));
    let by_address = init
        .breakpoints
        .iter()
        .find(|b| b.load_address == Some(hook))
        .unwrap_or_else(|| {
            panic!("a by-address breakpoint on the library's r_brk {hook:#x}: {init:?}")
        });
    assert!(by_address.function_name.is_none() && by_address.symbol_names.is_empty());

    // lldb cannot resolve the hook's name: only the by-address breakpoint
    // is planted. The runtime shuts down and starts again; when it calls
    // r_brk, lldb stops there and reports the hit with the breakpoint object
    // it was given. gdbmux recognises it and lets the CPU run on; it offers
    // only a runtime lifetime not offered yet.
    cpu.expect_ok(&format!("Z0,{hook:x},1"))
        .expect("Z0 by address");
    cpu.send_packet(b"vCont;c").expect("vCont;c");
    sample.release(1);
    sample.expect("checkpoint down");
    sample.release(1);
    stop_at(&mut cpu, hook, "the runtime calls r_brk");
    let reply = hit_by_address(&mut cpu, by_address.identifier, hook);
    assert_eq!(
        reply["auto_resume_native"],
        serde_json::Value::Bool(true),
        "{reply}"
    );
    assert_eq!(
        reply["disable_bp"],
        serde_json::Value::Bool(false),
        "{reply}"
    );
    let text = monitor(&mut cpu, "gpu");
    let lifetimes: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("runtime lifetimes: "))
        .and_then(|l| l.split(';').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no lifetime count in:\n{text}"));
    if lifetimes > 1 {
        let actions = hit_actions(&reply);
        assert!(
            actions.connect_info.is_some(),
            "a new lifetime is offered: {reply}"
        );
        assert!(actions.identifier > init.identifier, "{reply}");
    } else {
        assert!(
            reply["actions"].is_null(),
            "one offer per runtime lifetime: {reply}\n{text}"
        );
    }
    // The log reaches the test through a reader thread: wait for the line
    // rather than read what has arrived so far.
    server.wait_log(
        &format!(
            "accelerator breakpoint hit breakpoint={}",
            by_address.identifier
        ),
        10,
    );
    // A breakpoint gdbmux never handed out is refused with a reason.
    let mut p = b"jAcceleratorPluginBreakpointHit:".to_vec();
    let bogus = serde_json::json!({
        "plugin_name": PLUGIN,
        "breakpoint": {"identifier": 99, "by_name": null,
                       "by_address": {"load_address": hook}, "symbol_names": []},
        "symbol_values": [],
    });
    p.extend(framing::escape(bogus.to_string().as_bytes()));
    let raw = cpu.request(&p).expect("bogus hit");
    assert!(
        String::from_utf8_lossy(&raw).starts_with('E'),
        "{}",
        framing::printable(&raw)
    );
    cpu.expect_ok(&format!("z0,{hook:x},1")).expect("z0");
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

#[test]
fn lldb_first_lifetime_offered_with_the_hook_name_unresolvable() {
    let env = GpuEnv::get();
    let (host, dir) = env.build_typed(
        "gpu-offer-by-address",
        "first-lifetime",
        "host.c",
        &["saxpy", "negate"],
        &["-O1"],
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux", "--gpu-hook", STRIPPED_HOOK])
        .args(["127.0.0.1:0", "--"])
        .arg(&host)
        .arg(&dir);
    let server = Server::start(cmd);
    let helper = env.root.join("tools/lldb/gdbmux_lldb.py");
    let mut lldb = Command::new("lldb");
    lldb.arg("-b")
        .args(["-o", &format!("command script import {}", helper.display())])
        .args(["-o", &format!("gdb-remote 127.0.0.1:{}", server.port)])
        .args(["-o", "breakpoint set -o true -n negate"])
        .args(["-o", "process continue"])
        .args(["-o", "target list"])
        .args(["-o", "process continue"])
        .arg(&host);
    let text = run_with_timeout(&mut lldb, 120);
    let log = server.log();
    let stop = text
        .find("stop reason = one-shot breakpoint")
        .unwrap_or_else(|| panic!("no wave stop:\n{text}\n--- gdbmux ---\n{log}"));
    assert!(
        text[stop..].contains("negate.hsaco`negate"),
        "a wave stops in negate:\n{text}\n--- gdbmux ---\n{log}"
    );
    assert!(
        text.contains("target #1: ") && !text.contains("target #2"),
        "exactly two targets:\n{text}"
    );
    assert!(
        text.contains("exited with status = 0"),
        "{text}\n--- gdbmux ---\n{log}"
    );
    // The offer came with the exported function's hit, in lifetime 1.
    let offered = server.wait_log("GPU connection offered", 10);
    assert!(
        offered.contains("lifetime=1"),
        "offered in the first lifetime:\n{offered}"
    );
    server.wait_log("accelerator breakpoint hit breakpoint=2 offer=true", 10);
    server.wait_log("[inferior] host: PASS", 10);
}
