//! One listener, two sessions: the multiplexer's guarantees end to end,
//! seen by a raw RSP client speaking lldb's dialect (and by stock lldb and
//! gdb where the guarantee is about what a debugger shows).
//!
//! The raw flow is the one lldb 23.1 runs: handshake, `?`,
//! `jAcceleratorPluginInitialize` (a by-name breakpoint on the runtime's
//! hook, no offer while the runtime is down), a `Z0` on the hook, continue,
//! `jAcceleratorPluginBreakpointHit` at the hook stop (the reply carries
//! `connect_info`), a second connection that claims the offer and becomes
//! the GPU session.
//!
//! Accept policy under test (`stub::mux`, "Accept policy"): **an offer is
//! consumed by its claim, only the debugger that received it can claim it,
//! and there is one offer per GPU runtime lifetime.** A second
//! connection while the offer is claimed is refused with a readable reason
//! (an `E` reply to its first packet, then close); after the GPU session
//! closes, a new connection is refused too unless a new offer was made (which
//! only a new runtime lifetime does). Live sessions are never touched by a
//! refusal.
//!
//! GPU state and ledger are observed through `monitor gpu` (qRcmd) on the
//! CPU session: the `GPU state:` line and the `offer N: … [State]` lines.

mod gpu_support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gpu_support::*;
use protocol_tests::client::ClientError;
use protocol_tests::client::RspClient;
use protocol_tests::framing;
use protocol_tests::reply::AcceleratorActions;
use protocol_tests::reply::ConnectInfo;
use protocol_tests::reply::IdPart;
use protocol_tests::reply::StopReply;
use protocol_tests::reply::StopSignal;
use protocol_tests::LLDB_QSUPPORTED;

/// Burst sizes of the replay property (several N, the issue's 50 among them).
const BURSTS: [usize; 3] = [1, 7, 50];

// ---------------------------------------------------------------- helpers

/// `?` once: the parsed stop and its exact wire payload.
fn query_stop(c: &mut RspClient) -> (StopSignal, Vec<u8>) {
    let (stop, _) = c.stop_reply("?").expect("? reply");
    let raw = c.last_reply_raw().to_vec();
    (signal_stop(stop, "?"), raw)
}

/// The GPU as `monitor gpu` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GpuView {
    /// The whole text (compared verbatim across a replay burst).
    text: String,
}

impl GpuView {
    fn read(cpu: &mut RspClient) -> GpuView {
        GpuView {
            text: monitor(cpu, "gpu"),
        }
    }

    fn state(&self) -> &str {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix("GPU state: "))
            .unwrap_or_else(|| panic!("no 'GPU state:' line in:\n{}", self.text))
            .trim()
    }

    /// Ledger lines: `offer ID: URL TRIPLE [STATE]`.
    fn offers(&self) -> Vec<&str> {
        self.text
            .lines()
            .filter(|l| l.starts_with("offer "))
            .collect()
    }

    /// State `Offered` with exactly one ledger line: offer `id` of `offer`,
    /// unclaimed (`what` prefixes the ledger's failure message).
    fn assert_sole_offer(&self, id: i64, offer: &ConnectInfo, what: &str) {
        assert_eq!(self.state(), "Offered", "{}", self.text);
        assert_eq!(
            self.offers(),
            vec![format!(
                "offer {id}: {} {} [Offered]",
                offer.connect_url, offer.triple
            )],
            "{what}{}",
            self.text
        );
    }
}

/// The property: `?` sent `n` times answers the identical bytes every time
/// (and the same bytes as before the burst), and leaves the ledger and the
/// GPU state machine exactly as they were.
fn assert_replay_pure(session: &mut RspClient, cpu: Option<&mut RspClient>, label: &str) {
    let mut cpu = cpu;
    let view = |c: &mut Option<&mut RspClient>, s: &mut RspClient| match c {
        Some(c) => GpuView::read(c),
        None => GpuView::read(s),
    };
    let (_, reference) = query_stop(session);
    let before = view(&mut cpu, session);
    for n in BURSTS {
        for i in 0..n {
            let (_, raw) = query_stop(session);
            assert_eq!(
                raw,
                reference,
                "{label}: `?` #{i} of a burst of {n} answered different bytes:\n{}\nvs\n{}",
                framing::printable(&raw),
                framing::printable(&reference)
            );
        }
        let after = view(&mut cpu, session);
        assert_eq!(
            after, before,
            "{label}: a burst of {n} `?` changed the GPU state or the ledger"
        );
    }
}

/// The one action of an Initialize reply.
fn initialize(cpu: &mut RspClient) -> AcceleratorActions {
    let a = plugin_initialize(cpu);
    assert_eq!(a.plugin_name, PLUGIN);
    assert_eq!(
        a.breakpoints
            .iter()
            .filter_map(|b| b.function_name.as_deref())
            .collect::<Vec<_>>(),
        vec![HOOK],
        "Initialize asks for the by-name breakpoint on the runtime hook"
    );
    a
}

/// Continue the CPU session and wait for its next stop (console output is
/// collected and returned alongside).
fn cont(cpu: &mut RspClient) -> (StopReply, String) {
    let (stop, out) = cpu.stop_reply("vCont;c").expect("vCont;c");
    (stop, String::from_utf8_lossy(&out).into_owned())
}

/// A `swbreak` stop at `pc`.
fn assert_break_at(stop: StopReply, pc: u64, what: &str) {
    let s = signal_stop(stop, what);
    assert!(s.is_swbreak(), "{what}: not a breakpoint stop: {s:?}");
    assert_eq!(
        s.thread_pcs.first().copied(),
        Some(pc),
        "{what}: stopped at the wrong pc"
    );
}

/// A CPU session driven to the runtime hook, with the GPU offer in hand.
struct Flow {
    server: Server,
    cpu: RspClient,
    pid: u64,
    hook: u64,
    offer: ConnectInfo,
    offer_id: i64,
}

/// Drive a CPU session of `vector_add` from its first stop to the offer.
/// `check(cpu, label)` runs at every intermediate state.
fn drive_to_offer(env: &GpuEnv, check: &mut dyn FnMut(&mut RspClient, &str)) -> Flow {
    drive_to_offer_on(env, env.serve(&["vector_add"]), check)
}

/// [`drive_to_offer`] on a server the caller started.
fn drive_to_offer_on(
    env: &GpuEnv,
    server: Server,
    check: &mut dyn FnMut(&mut RspClient, &str),
) -> Flow {
    let (mut cpu, accel) = lldb_client(server.port);
    assert!(accel, "the CPU session advertises accelerator-plugins+");

    // 1. First stop (exec): the library is attached, the runtime is down.
    let (stop, _) = query_stop(&mut cpu);
    let thread = stop.thread.expect("thread in the first stop");
    let pid = thread
        .pid
        .and_then(IdPart::id)
        .expect("multiprocess thread id");
    let v = GpuView::read(&mut cpu);
    assert_eq!(v.state(), "ProcessAttached", "{}", v.text);
    assert!(v.offers().is_empty(), "{}", v.text);
    let init = initialize(&mut cpu);
    assert!(
        init.connect_info.is_none(),
        "no offer while the runtime is down: {init:?}"
    );
    check(&mut cpu, "first stop");

    // 2. At main: the runtime library is mapped, still down.
    let exe = env.sample("vector_add");
    let main = load_base(pid, "vector_add") + nm(&exe, "main", false);
    cpu.expect_ok(&format!("Z0,{main:x},1")).expect("Z0 main");
    let (stop, _) = cont(&mut cpu);
    assert_break_at(stop, main, "stop at main");
    cpu.expect_ok(&format!("z0,{main:x},1")).expect("z0 main");
    check(&mut cpu, "at main");

    // 3. The runtime hook, as lldb's by-name breakpoint: the runtime is up.
    let hook =
        load_base(pid, "libsimgpu_rt.so") + nm(&env.bin_dir.join("libsimgpu_rt.so"), HOOK, true);
    cpu.expect_ok(&format!("Z0,{hook:x},1")).expect("Z0 hook");
    let (stop, _) = cont(&mut cpu);
    assert_break_at(stop, hook, "stop at the runtime hook");
    let v = GpuView::read(&mut cpu);
    assert_eq!(v.state(), "RuntimeLoaded", "{}", v.text);
    assert!(v.offers().is_empty(), "no offer before the hit: {}", v.text);
    check(&mut cpu, "runtime loaded (hook stop)");

    // 4. The hit's reply carries the offer.
    let reply = breakpoint_hit(&mut cpu, hook);
    assert_eq!(reply["auto_resume_native"], serde_json::Value::Bool(true));
    let actions = hit_actions(&reply);
    let offer = actions
        .connect_info
        .expect("the hit reply carries connect_info");
    assert_eq!(
        offer.connect_url,
        format!("connect://127.0.0.1:{}", server.port)
    );
    assert!(
        offer.triple.starts_with("amdgpu-amd-amdhsa--gfx"),
        "{offer:?}"
    );
    assert!(offer.synchronous);
    let v = GpuView::read(&mut cpu);
    v.assert_sole_offer(actions.identifier, &offer, "");
    check(&mut cpu, "offered");
    Flow {
        server,
        cpu,
        pid,
        hook,
        offer,
        offer_id: actions.identifier,
    }
}

/// Claim the offer with a new connection (lldb's handshake); its `?` names
/// the shadow thread.
fn connect_gpu(port: u16) -> RspClient {
    let (mut gpu, accel) = lldb_client(port);
    assert!(
        !accel,
        "the GPU session does not advertise accelerator-plugins+"
    );
    let (stop, _) = query_stop(&mut gpu);
    let t = stop.thread.expect("the GPU session's ? names a thread");
    assert_eq!(t.tid, IdPart::Id(1), "the shadow thread (tid 1): {stop:?}");
    gpu
}

/// Let the program run to its end: resume the GPU session (as lldb does),
/// drop the hook breakpoint, continue the CPU; `W00` on the CPU session and
/// the program's own check in the log.
fn finish(flow: &mut Flow, gpu: Option<&mut RspClient>) {
    let mut gpu = gpu;
    if let Some(g) = gpu.as_deref_mut() {
        g.send_packet(b"vCont;c").expect("GPU vCont;c");
    }
    flow.cpu
        .expect_ok(&format!("z0,{:x},1", flow.hook))
        .expect("z0 hook");
    let (stop, _) = cont(&mut flow.cpu);
    assert_eq!(
        stop,
        StopReply::Exited {
            code: 0,
            pid: Some(flow.pid)
        },
        "the CPU process exits 0"
    );
    if let Some(g) = gpu {
        let (stop, _) = g.wait_stop("GPU vCont;c").expect("GPU session end");
        assert!(
            matches!(stop, StopReply::Exited { code: 0, .. }),
            "the GPU session learns the exit: {stop:?}"
        );
    }
    flow.server.wait_log("vector_add: PASS", 20);
}

// ------------------------------------------------------------------ tests

/// Replay purity (the issue's property): at every state of a scripted GPU
/// session — first stop, at main, runtime loaded, offered, GPU session
/// connected (on both sessions) — `?` sent N times answers identical bytes
/// and leaves the ledger and the state machine unchanged; `?` never makes a
/// second offer (a later Initialize has no connect_info and the offers list
/// is unchanged) and never creates a second GPU target (the one offer stays
/// claimed by the one GPU session).
#[test]
fn replay_is_pure_at_every_state() {
    let env = GpuEnv::get();
    let mut flow = drive_to_offer(env, &mut |cpu, label| {
        assert_replay_pure(cpu, None, label);
        // No offer out of thin air: Initialize after the burst offers only
        // when the runtime is up and no offer was made in this lifetime.
        let before = GpuView::read(cpu);
        if before.state() != "RuntimeLoaded" {
            let a = initialize(cpu);
            assert!(a.connect_info.is_none(), "{label}: a second offer: {a:?}");
            assert_eq!(
                GpuView::read(cpu),
                before,
                "{label}: Initialize changed the ledger"
            );
        }
    });
    let port = flow.server.port;
    let mut gpu = connect_gpu(port);
    let v = GpuView::read(&mut flow.cpu);
    assert_eq!(v.state(), "Connected", "{}", v.text);
    assert_eq!(v.offers().len(), 1, "{}", v.text);
    assert!(
        v.offers()[0].ends_with("[Claimed by session 2]"),
        "{}",
        v.text
    );

    assert_replay_pure(
        &mut gpu,
        Some(&mut flow.cpu),
        "GPU session connected (GPU side)",
    );
    assert_replay_pure(&mut flow.cpu, None, "GPU session connected (CPU side)");
    let a = initialize(&mut flow.cpu);
    assert!(
        a.connect_info.is_none(),
        "a second offer after connect: {a:?}"
    );
    let after = GpuView::read(&mut flow.cpu);
    assert_eq!(after, v, "ledger or state changed while connected");
    // One GPU target: the claimed offer cannot be claimed again.
    let why = refused(port, LLDB_QSUPPORTED);
    assert!(why.contains("already claimed"), "{why}");

    finish(&mut flow, Some(&mut gpu));
}

/// Duplicates: with CPU and GPU sessions live, extra connections (a second
/// claim of the same offer, whatever their first packet) are refused with a
/// readable reason and closed; both sessions carry on and the program still
/// finishes correctly. After the GPU session closes, the consumed offer is
/// not offered again: a new connection is refused (no offer pending) and
/// Initialize offers nothing (one offer per runtime lifetime).
#[test]
fn duplicates_are_refused_and_sessions_continue() {
    let env = GpuEnv::get();
    let mut flow = drive_to_offer(env, &mut |_, _| {});
    let port = flow.server.port;
    let mut gpu = connect_gpu(port);
    let (_, cpu_stop) = query_stop(&mut flow.cpu);
    let (_, gpu_stop) = query_stop(&mut gpu);

    // Capabilities are the target's: the GPU session advertises no range
    // stepping, auxv, svr4 or siginfo; the CPU session does.
    let caps = |c: &mut RspClient| {
        let q = c.request(LLDB_QSUPPORTED.as_bytes()).expect("qSupported");
        let v = c.request(b"vCont?").expect("vCont?");
        (
            String::from_utf8_lossy(&q).into_owned(),
            String::from_utf8_lossy(&v).into_owned(),
        )
    };
    let (q, v) = caps(&mut gpu);
    assert_eq!(v, "vCont;c;C;s;S;t", "GPU vCont?");
    for absent in [
        "qXfer:auxv",
        "qXfer:libraries-svr4",
        "qXfer:siginfo",
        "QCatchSyscalls",
        "qXfer:osdata",
        "accelerator-plugins",
    ] {
        assert!(!q.contains(absent), "GPU qSupported offers {absent}: {q}");
    }
    // The CPU role's packets are not served by the GPU session (session/
    // role.rs): unsupported (empty reply), never carried out; the session
    // goes on with the same stop.
    for p in [
        "vRun;2f62696e2f74727565",
        "vAttach;1",
        "R00",
        "QCatchSyscalls:1",
        "qXfer:osdata:read::0,fff",
        "jAcceleratorPluginInitialize",
    ] {
        let r = gpu.request(p.as_bytes()).expect(p);
        assert!(
            r.is_empty(),
            "GPU session answered {p}: {:?}",
            String::from_utf8_lossy(&r)
        );
    }
    assert_eq!(
        query_stop(&mut gpu).1,
        gpu_stop,
        "GPU session after CPU-only packets"
    );
    let (q, v) = caps(&mut flow.cpu);
    assert_eq!(v, "vCont;c;C;s;S;t;r", "CPU vCont?");
    for present in [
        "qXfer:auxv",
        "qXfer:libraries-svr4",
        "qXfer:siginfo",
        "QCatchSyscalls+",
        "qXfer:osdata:read+",
        "accelerator-plugins+",
    ] {
        assert!(q.contains(present), "CPU qSupported lacks {present}: {q}");
    }

    // A second claim of the same offer, lldb-style and gdb-style.
    // `?` is answered with a placeholder stop whose description is the
    // reason (what lldb prints while it connects: refusal::lldb_answer).
    {
        let mut c = RspClient::connect(("127.0.0.1", port)).expect("connect extra");
        c.send_ack().expect("ack");
        let raw = c.request(b"?").expect("refusal reply to ?");
        let text = String::from_utf8_lossy(&raw).into_owned();
        let desc = text
            .strip_prefix("T13thread:1;reason:exception;description:")
            .and_then(|d| d.strip_suffix(';'))
            .and_then(|d| protocol_tests::reply::decode_hex(d.as_bytes()))
            .map(|d| String::from_utf8_lossy(&d).into_owned())
            .unwrap_or_else(|| panic!("refusal reply to ?: {text}"));
        assert!(
            desc.contains(&format!("offer {} was already claimed", flow.offer_id)),
            "{desc}"
        );
    }
    for first in [LLDB_QSUPPORTED, "QStartNoAckMode", "qHostInfo"] {
        let why = refused(port, first);
        assert!(
            why.contains("connection refused")
                && why.contains(&format!("offer {} was already claimed", flow.offer_id))
                && why.contains("live sessions are untouched"),
            "refusal reason (first packet {first}): {why}"
        );
    }
    // Both sessions are untouched.
    assert_eq!(
        query_stop(&mut flow.cpu).1,
        cpu_stop,
        "CPU session after refusals"
    );
    assert_eq!(
        query_stop(&mut gpu).1,
        gpu_stop,
        "GPU session after refusals"
    );
    let v = GpuView::read(&mut flow.cpu);
    assert_eq!(v.state(), "Connected", "{}", v.text);
    assert_eq!(v.offers().len(), 1, "{}", v.text);

    // The GPU session detaches; its socket closes.
    gpu.expect_ok("D").expect("GPU detach");
    match gpu.recv_packet_within(Duration::from_secs(10)) {
        Err(ClientError::Closed { .. }) => {}
        other => panic!("GPU session not closed after D: {other:?}"),
    }
    let v = GpuView::read(&mut flow.cpu);
    assert_eq!(v.state(), "RuntimeLoaded", "{}", v.text);
    assert_eq!(
        v.offers(),
        vec![format!(
            "offer {}: {} {} [Closed]",
            flow.offer_id, flow.offer.connect_url, flow.offer.triple
        )],
        "{}",
        v.text
    );
    // The offer was consumed by its claim: no new one in this lifetime.
    let why = refused(port, LLDB_QSUPPORTED);
    assert!(why.contains("no GPU connection offer is pending"), "{why}");
    let a = initialize(&mut flow.cpu);
    assert!(a.connect_info.is_none(), "re-offered after close: {a:?}");
    let hit = breakpoint_hit(&mut flow.cpu, flow.hook);
    assert!(
        hit.get("actions").is_none(),
        "re-offered by a hook hit: {hit}"
    );
    assert_eq!(GpuView::read(&mut flow.cpu).offers().len(), 1);

    // The CPU session carries on to the end.
    finish(&mut flow, None);
}

/// A stray connection from another process while the offer is pending —
/// a port scanner that connects and closes, a client that speaks lldb's
/// handshake — does not take the GPU: it is refused (the claim proof: the
/// GPU connection must come from the debugger process that received the
/// offer) and the offer stays pending; then the real client claims it.
#[test]
fn stray_connection_cannot_claim_the_offer() {
    let env = GpuEnv::get();
    let mut flow = drive_to_offer(env, &mut |_, _| {});
    let port = flow.server.port;
    // Another process: connect and close (a port scanner), then connect
    // and send lldb's first packet, printing the reply.
    let script = format!(
        r##"
import socket
s = socket.create_connection(("127.0.0.1", {port})); s.close()
s = socket.create_connection(("127.0.0.1", {port}))
body = b"{LLDB_QSUPPORTED}"
s.sendall(b"+$" + body + b"#%02x" % (sum(body) % 256))
s.settimeout(20)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode("latin-1"))
"##
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stray client: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let payload = text
        .split_once('$')
        .and_then(|(_, p)| p.rsplit_once('#'))
        .map(|(p, _)| p)
        .unwrap_or_else(|| panic!("no reply packet: {text}"));
    let why = protocol_tests::reply::ErrorReply::parse(payload.as_bytes())
        .and_then(|e| e.message)
        .unwrap_or_else(|| panic!("not a refusal with a reason: {text}"));
    assert!(
        why.contains("does not answer the pending GPU connection offer")
            && why.contains(&format!("offer {}", flow.offer_id)),
        "the stray connection is refused with the reason: {why}"
    );
    // The offer is still pending, untouched.
    let v = GpuView::read(&mut flow.cpu);
    v.assert_sole_offer(flow.offer_id, &flow.offer, "after the stray connections: ");
    // The debugger that received it claims it.
    let mut gpu = connect_gpu(port);
    let v = GpuView::read(&mut flow.cpu);
    assert_eq!(v.state(), "Connected", "{}", v.text);
    finish(&mut flow, Some(&mut gpu));
}

/// GPU news one session takes in by itself reaches the others
/// (`MuxAction::ShareGpuNews`): the CPU session is held at the runtime's
/// breakpoint (the library said HALT at the code-object load) and waits
/// for the library's BREAKPOINT_RESUME. The simulated library sends it late
/// and quietly (`SIMGPU_QUIET_RESUME=1`: the first one, with no notifier write), so the GPU
/// session's `monitor gpu` is the one poll that takes it in. The held CPU
/// session must still be released: the program runs to its end. Without
/// the sharing, the CPU session stays held and its `vCont;c` never answers.
#[test]
fn gpu_session_monitor_releases_the_held_cpu_session() {
    let env = GpuEnv::get();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"])
        .arg(env.sample("vector_add"))
        .env("SIMGPU_QUIET_RESUME", "1");
    let mut flow = drive_to_offer_on(env, Server::start(cmd), &mut |_, _| {});
    let mut gpu = connect_gpu(flow.server.port);
    // The CPU runs on without the client's hook breakpoint: the runtime
    // loads the kernel's code object and hits its own breakpoint, which
    // gdbmux handles out of the client's sight and holds.
    flow.cpu
        .expect_ok(&format!("z0,{:x},1", flow.hook))
        .expect("z0 hook");
    flow.cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    flow.server
        .wait_log("held until the library's BREAKPOINT_RESUME", 20);
    // The GPU session asks for the GPU's state: its poll takes in the
    // resume the CPU session waits for.
    let out = monitor(&mut gpu, "gpu");
    assert!(out.contains("GPU state: Connected"), "{out}");
    // The GPU runs as lldb lets it; the released CPU runs to its end.
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    let (stop, _) = flow
        .cpu
        .wait_stop("CPU vCont;c after the GPU session's monitor gpu")
        .unwrap_or_else(|e| {
            panic!(
                "the held CPU session was not released: {e}\n--- gdbmux log ---\n{}",
                flow.server.log()
            )
        });
    assert_eq!(
        stop,
        StopReply::Exited {
            code: 0,
            pid: Some(flow.pid)
        },
        "the CPU process exits 0"
    );
    let (stop, _) = gpu.wait_stop("GPU vCont;c").expect("GPU session end");
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "the GPU session learns the exit: {stop:?}"
    );
    flow.server.wait_log("vector_add: PASS", 20);
}

/// The whole `target.xml` of a session (`qXfer:features:read`, in chunks).
fn target_xml(c: &mut RspClient) -> String {
    let mut doc = Vec::new();
    loop {
        let r = c
            .request(format!("qXfer:features:read:target.xml:{:x},800", doc.len()).as_bytes())
            .expect("qXfer target.xml");
        let (kind, data) = r.split_first().expect("a reply");
        doc.extend_from_slice(data);
        match kind {
            b'l' => return String::from_utf8(doc).expect("UTF-8 target.xml"),
            b'm' => {}
            _ => panic!("target.xml: {}", framing::printable(&r)),
        }
    }
}

/// Every `qRegisterInfoN` reply, one a line, up to the first error (lldb's
/// end of the list).
fn register_infos(c: &mut RspClient) -> String {
    let mut out = String::new();
    for n in 0u32.. {
        let r = c
            .request(format!("qRegisterInfo{n:x}").as_bytes())
            .expect("qRegisterInfo");
        if r.first() == Some(&b'E') {
            out.push_str(&format!("end: {}\n", String::from_utf8_lossy(&r)));
            return out;
        }
        out.push_str(&String::from_utf8_lossy(&r));
        out.push('\n');
        assert!(n < 4096, "qRegisterInfo never ends");
    }
    out
}

/// Compare with `tests/snapshots/NAME` (or write it with
/// `UPDATE_SNAPSHOTS=1`).
fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("snapshot dir");
        std::fs::write(&path, got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    assert!(
        want == got,
        "{name} differs from its snapshot {} (UPDATE_SNAPSHOTS=1 rewrites it after a review):\n--- got\n{got}",
        path.display()
    );
}

/// Snapshot tests of the register descriptions both targets give their
/// clients: target.xml (gdb) and the qRegisterInfo list (lldb), for the CPU
/// session (x86-64) and the GPU session (the simulated gfx90a library's
/// table).
#[test]
fn register_descriptions_match_snapshots() {
    let env = GpuEnv::get();
    let mut flow = drive_to_offer(env, &mut |_, _| {});
    let mut gpu = connect_gpu(flow.server.port);
    snapshot("cpu-target.xml", &target_xml(&mut flow.cpu));
    snapshot("cpu-qRegisterInfo.txt", &register_infos(&mut flow.cpu));
    snapshot("gpu-target.xml", &target_xml(&mut gpu));
    snapshot("gpu-qRegisterInfo.txt", &register_infos(&mut gpu));
    finish(&mut flow, Some(&mut gpu));
}

/// The seed's race: the GPU runtime is already up when the CPU client
/// handles its very first stop (gdbmux attaches to a program that called
/// `simgpu_init`). The Initialize reply must carry the offer; `?` replays
/// and a second Initialize do not make another (same single offer, no new
/// connect_info); one connection claims it, the next is refused.
#[test]
fn runtime_up_at_first_stop_offers_once() {
    let env = GpuEnv::get();
    let mut sample = Sample::runtime_up(env);
    let server = env.serve_attach(sample.child.id());
    let (mut cpu, accel) = lldb_client(server.port);
    assert!(accel);
    let (stop, first) = query_stop(&mut cpu);
    let pid = stop.thread.and_then(|t| t.pid).and_then(IdPart::id);
    assert_eq!(
        pid,
        Some(u64::from(sample.child.id())),
        "attached to the sample"
    );
    for _ in 0..5 {
        assert_eq!(
            query_stop(&mut cpu).1,
            first,
            "`?` replay before Initialize"
        );
    }

    let a = initialize(&mut cpu);
    let offer = a
        .connect_info
        .clone()
        .unwrap_or_else(|| panic!("the runtime is up: Initialize must offer: {a:?}"));
    assert_eq!(
        offer.connect_url,
        format!("connect://127.0.0.1:{}", server.port)
    );
    for _ in 0..5 {
        assert_eq!(query_stop(&mut cpu).1, first, "`?` replay after the offer");
    }
    let again = initialize(&mut cpu);
    assert!(
        again.connect_info.is_none(),
        "second Initialize re-offered: {again:?}"
    );
    assert!(
        again.identifier > a.identifier,
        "identifiers strictly increase"
    );
    let v = GpuView::read(&mut cpu);
    v.assert_sole_offer(a.identifier, &offer, "exactly one offer: ");

    let mut gpu = connect_gpu(server.port);
    let why = refused(server.port, LLDB_QSUPPORTED);
    assert!(why.contains("already claimed"), "{why}");
    let v = GpuView::read(&mut cpu);
    assert_eq!(v.state(), "Connected", "{}", v.text);
    assert_eq!(v.offers().len(), 1, "one GPU target: {}", v.text);

    // Run to the end: the sample passes its remaining checkpoints.
    gpu.send_packet(b"vCont;c").expect("GPU vCont;c");
    cpu.send_packet(b"vCont;c").expect("CPU vCont;c");
    sample.release(2);
    let (stop, _) = cpu.wait_stop("vCont;c").expect("CPU end");
    assert_eq!(stop, StopReply::Exited { code: 0, pid });
    let (stop, _) = gpu.wait_stop("GPU vCont;c").expect("GPU end");
    assert!(
        matches!(stop, StopReply::Exited { code: 0, .. }),
        "{stop:?}"
    );
    sample.expect("vector_add: PASS");
    assert_eq!(sample.wait(), 0);
    drop(server);
}

/// The same race with stock lldb 23.1 (Python API): the GPU target appears
/// at the first stop, exactly once (2 targets, not 3), and the program
/// finishes with both targets in place.
#[test]
fn lldb_attach_with_runtime_up_gets_one_gpu_target() {
    let env = GpuEnv::get();
    let mut sample = Sample::runtime_up(env);
    let server = env.serve_attach(sample.child.id());
    // gdbmux stopped the sample when it attached: queue the two lines it
    // needs to finish once lldb lets it run.
    sample.release(2);
    let out = run_python(
        &env.root.join("stub/tests/gpu/lldb_attach.py"),
        &[
            &server.port.to_string(),
            env.sample("vector_add").to_str().unwrap_or_default(),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED") && !out.contains("CHECK FAILED"),
        "lldb attach session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    // Stock lldb's own GPU connection proved its claim: it comes from the
    // lldb process that holds the CPU connection (the claim proof that a
    // stray connection fails: stray_connection_cannot_claim_the_offer).
    assert!(
        server
            .log()
            .lines()
            .any(|l| l.contains("accepted GPU session (claim from process ")
                && !l.contains("through forwarder")),
        "lldb's claim was not proved by peer identity:\n{}",
        server.log()
    );
    // The script's second stock lldb was refused by the accept policy.
    assert!(
        server
            .log()
            .contains("was already claimed by another connection"),
        "no refusal of the second lldb in the gdbmux log:\n{}",
        server.log()
    );
    // The Initialize reply lldb accepted also held a by-address breakpoint
    // on the r_brk the library asked for (the hook by name, plus that one).
    assert!(
        server
            .log()
            .lines()
            .any(|l| l.contains("jAcceleratorPluginInitialize answered")
                && l.contains("offer=true breakpoints=2")),
        "{}",
        server.log()
    );
    sample.expect("vector_add: PASS");
    assert_eq!(sample.wait(), 0);
}

/// Stock gdb 13 reaches the GPU through `monitor gpu` on the CPU session:
/// state, code objects with load addresses, a GPU breakpoint at the kernel
/// entry; the wave's stop surfaces while gdb waits on the CPU as a stop with
/// a console line naming the wave, kernel and address; waves, registers and
/// global memory are readable; after deleting the breakpoint and resuming
/// the waves the program exits normally.
#[test]
fn gdb_monitor_gpu_breakpoint() {
    let env = GpuEnv::get();
    let server = env.serve(&["vector_add"]);
    let off = kernel_symbol(
        &env.root.join("samples/kernels/vector_add.hsaco"),
        "vector_add",
    );
    let out = run_gdb(
        &env.root.join("stub/tests/gpu/gdb_monitor.py"),
        &env.sample("vector_add"),
        &[
            ("PORT", server.port.to_string()),
            ("SYM_OFF", format!("{off:#x}")),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED") && !out.contains("CHECK FAILED"),
        "gdb monitor session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    let re_line = out
        .lines()
        .any(|l| l.contains("GPU wave ") && l.contains("stopped") && l.contains("breakpoint"));
    assert!(re_line, "no GPU stop console line:\n{out}");
    server.wait_log("vector_add: PASS", 20);
}

/// Stock gdb 13 as a new user: `monitor gpu break KERNEL` before the code
/// object loads is pending; one `continue` stops a wave there; `monitor
/// gpu mem private` takes a wave and lane; `monitor gpu continue` steps the
/// waves off the (still inserted) breakpoint until the program exits.
#[test]
fn gdb_monitor_gpu_pending_break() {
    let env = GpuEnv::get();
    let server = env.serve(&["vector_add"]);
    let out = run_gdb(
        &env.root.join("stub/tests/gpu/gdb_pending.py"),
        &env.sample("vector_add"),
        &[("PORT", server.port.to_string())],
    );
    assert!(
        out.contains("ALL CHECKS PASSED") && !out.contains("CHECK FAILED"),
        "gdb pending-breakpoint session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    server.wait_log("vector_add: PASS", 20);
}

/// `monitor gpu mem private ADDR LEN WAVE LANE` from stock gdb 13 on the
/// corpus kernel private_array (O0 keeps its array in scratch): after the
/// kernel's first scratch store, each lane's private bytes are that lane's
/// stored register. The host program is compiled here, at test time.
#[test]
fn gdb_monitor_gpu_private() {
    let env = GpuEnv::get();
    let exe = env.samples.join("private_array_host");
    env.build_host(
        &env.root.join("stub/tests/gpu/private_array_host.c"),
        &exe,
        &[
            "-O1",
            &format!("-I{}", env.root.join("samples").display()),
            &format!(
                "-DKERNEL_DIR=\"{}\"",
                env.root.join("samples/corpus/bin").display()
            ),
        ],
    );
    let hsaco = env.root.join("samples/corpus/bin/private_array.O0.hsaco");
    let dis = Command::new("llvm-objdump-19")
        .arg("-d")
        .arg(&hsaco)
        .output()
        .expect("llvm-objdump-19");
    let text = String::from_utf8_lossy(&dis.stdout);
    // `// 0000000000003954: …` → 0x3954
    let addr_of = |l: &str| {
        l.rsplit("// ")
            .next()
            .and_then(|t| t.split(':').next())
            .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
    };
    let kernel = kernel_symbol(&hsaco, "private_array");
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.ends_with("<private_array>:"))
        .collect();
    let store = body
        .iter()
        .position(|l| l.contains("buffer_store_dword v1, off, s[0:3], s33 offset:4 "))
        .unwrap_or_else(|| panic!("no first scratch store in:\n{text}"));
    let after = addr_of(body[store + 1]).expect("address after the store");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdbmux"));
    cmd.args(["--log-channels", "mux,dbgapi", "127.0.0.1:0", "--"]);
    cmd.arg(&exe);
    let server = Server::start(cmd);
    let out = run_gdb(
        &env.root.join("stub/tests/gpu/gdb_private.py"),
        &exe,
        &[
            ("PORT", server.port.to_string()),
            ("DELTA", format!("{:#x}", after - kernel)),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED") && !out.contains("CHECK FAILED"),
        "gdb private-memory session failed:\n{out}\n--- gdbmux log ---\n{}",
        server.log()
    );
    server.wait_log("private_array: DONE", 20);
}

/// Length of the first instruction at `off` in `lib` (from `objdump -d`).
fn first_insn_len(lib: &Path, off: u64) -> u64 {
    let out = Command::new("objdump")
        .arg("-d")
        .arg(format!("--start-address={off:#x}"))
        .arg(format!("--stop-address={:#x}", off + 16))
        .arg(lib)
        .output()
        .expect("run objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{off:x}:")))
        .unwrap_or_else(|| panic!("no instruction at {off:#x} in objdump output:\n{text}"));
    line.split('\t')
        .nth(1)
        .map(|bytes| bytes.split_whitespace().count() as u64)
        .unwrap_or_else(|| panic!("cannot parse objdump line {line:?}"))
}

/// A client single-steps off its own breakpoint at the runtime hook, where
/// gdbmux also holds its internal (GPU library) breakpoint: the step must
/// execute exactly one instruction, as everywhere else. Today the client's
/// `z0` leaves the internal `int3` in place, the step traps on it, gdbmux
/// reports a second hit to the library, steps over its own breakpoint and
/// then re-runs the client's step: two instructions (stock lldb 23.1 then
/// stops for good about one run in ten; see lldb_attach.py).
#[test]
fn client_step_off_shared_hook_breakpoint_is_one_instruction() {
    let env = GpuEnv::get();
    let mut flow = drive_to_offer(env, &mut |_, _| {});
    let lib = env.bin_dir.join("libsimgpu_rt.so");
    let len = first_insn_len(&lib, nm(&lib, HOOK, true));
    flow.cpu
        .expect_ok(&format!("z0,{:x},1", flow.hook))
        .expect("z0 hook");
    let (stop, _) = flow
        .cpu
        .stop_reply(&format!("vCont;s:p{:x}.{:x}", flow.pid, flow.pid))
        .expect("vCont;s");
    let s = signal_stop(stop, "step off the hook");
    assert_eq!(
        s.thread_pcs.first().copied(),
        Some(flow.hook + len),
        "one step from the hook {:#x} must end after its first instruction ({len} bytes)",
        flow.hook
    );
}
