//! Container-side use: gdbmux inside its own PID and mount namespaces next
//! to the program, debugged from outside; attach refusals that name the
//! missing permission and the fix; GPU offers through a forwarded port.
//! Needs root (unshare, setpriv) and socat.

mod gpu_support;
mod harden_support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use harden_support::*;
use protocol_tests::framing::unescape;

/// A fresh scratch directory.
fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ctr-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Read a whole file through `vFile:open/pread/close`.
fn vfile_read(c: &mut RspClient, path: &str) -> Vec<u8> {
    let r = c
        .request_str(&format!("vFile:open:{},0,0", hex(path.as_bytes())))
        .unwrap();
    let fd = r
        .strip_prefix('F')
        .and_then(|s| s.split(';').next())
        .filter(|s| !s.starts_with('-'))
        .unwrap_or_else(|| panic!("vFile:open {path}: {r}"))
        .to_string();
    let mut data = Vec::new();
    loop {
        let r = c
            .request(format!("vFile:pread:{fd},4000,{:x}", data.len()).as_bytes())
            .unwrap();
        let split = r.iter().position(|b| *b == b';');
        let (head, body) = match split {
            Some(i) => (&r[..i], &r[i + 1..]),
            None => (&r[..], &[][..]),
        };
        let n = usize::from_str_radix(std::str::from_utf8(&head[1..]).unwrap(), 16)
            .unwrap_or_else(|_| panic!("pread reply {}", String::from_utf8_lossy(&r)));
        if n == 0 {
            break;
        }
        let chunk = unescape(body).expect("binary escapes");
        assert_eq!(chunk.len(), n);
        data.extend_from_slice(&chunk);
    }
    c.request_str(&format!("vFile:close:{fd}")).unwrap();
    data
}

/// gdbmux and the program in their own PID and mount namespaces; the
/// program lives on a tmpfs mounted only inside. From outside: attach (by
/// pid or by name), read its memory, fetch its executable and libc over
/// vFile, detach.
fn namespaced(by_name: bool) {
    let dir = scratch("ns");
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let fifo = dir.join("ready.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let waiter = helper("waiter");
    let prog = inner.join("ctr-waiter");
    let target = if by_name {
        "--attach-name ctr-waiter".to_string()
    } else {
        "--attach $!".to_string()
    };
    let script = format!(
        "set -e; mount -t tmpfs none {inner}; cp {waiter} {prog}; {prog} {fifo} & read line < {fifo}; \
         exec {gdbmux} --no-gpu {target} 127.0.0.1:0",
        inner = inner.display(),
        waiter = waiter.display(),
        prog = prog.display(),
        fifo = fifo.display(),
        gdbmux = gdbmux_bin().display(),
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--pid",
        "--mount",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "sh",
        "-c",
    ])
    .arg(&script);
    let g = Gdbmux::spawn(cmd);
    assert!(
        !prog.exists(),
        "the program is only visible inside the mount namespace"
    );

    let mut c = g.connect();
    c.handshake_gdb().unwrap();
    let stop = StopReply::parse(&c.request(b"?").unwrap()).unwrap();
    assert!(matches!(stop, StopReply::Signal(_)), "{stop:?}");
    let qc = c.request_str("qC").unwrap();
    let pid = qc
        .strip_prefix("QCp")
        .and_then(|s| s.split('.').next())
        .and_then(|p| u32::from_str_radix(p, 16).ok())
        .expect("QCp<pid>.<tid>");
    assert!(pid < 100, "a pid of the inner namespace, got {pid}");
    assert_eq!(c.request_str("qAttached").unwrap(), "1");
    // Memory of the program.
    let ticks = sym(&waiter, "g_ticks");
    assert_eq!(c.request_str(&format!("m{ticks:x},4")).unwrap(), "00000000");
    // The executable, as the client fetches it (exec-file, then vFile).
    let exe = c.request_str("qXfer:exec-file:read::0,fff").unwrap();
    assert_eq!(exe.strip_prefix('l'), Some(prog.to_str().unwrap()));
    assert_eq!(c.request_str("vFile:setfs:0").unwrap(), "F0");
    let fetched = vfile_read(&mut c, prog.to_str().unwrap());
    assert_eq!(fetched, std::fs::read(&waiter).unwrap(), "executable bytes");
    let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    let fetched = vfile_read(&mut c, libc.to_str().unwrap());
    assert_eq!(fetched, std::fs::read(&libc).unwrap(), "libc bytes");
    c.expect_ok("D").unwrap();
}

#[test]
fn attach_by_pid_inside_pid_and_mount_namespaces() {
    namespaced(false);
}

#[test]
fn attach_by_name_inside_pid_and_mount_namespaces() {
    namespaced(true);
}

/// Fails naming the first of `needles` that `text` does not contain.
fn assert_mentions(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "missing {n:?} in: {text}");
    }
}

/// `--attach` fails before gdbmux listens: the client can never see a
/// closed connection, and stderr names the cause and the fix.
fn assert_attach_refused(wrapper: &[&str], pid: u32, needles: &[&str]) {
    let mut cmd = Command::new(wrapper.first().copied().unwrap_or("env"));
    cmd.args(wrapper.get(1..).unwrap_or_default())
        .arg(gdbmux_bin())
        .args(["--no-gpu", "--attach", &pid.to_string(), "127.0.0.1:0"]);
    let (st, err) = run_to_end(cmd);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(!err.contains("Listening on"), "{err}");
    assert_mentions(&err, needles);
}

/// The same refusal over `vAttach` (extended mode): an `E` reply whose text
/// (lldb's error strings) names the cause; the connection stays open.
fn assert_vattach_refused(wrapper: &[&str], pid: u32, needles: &[&str]) {
    let mut cmd = Command::new(wrapper.first().copied().unwrap_or("env"));
    cmd.args(wrapper.get(1..).unwrap_or_default())
        .arg(gdbmux_bin())
        .args(["--no-gpu", "--multi", "127.0.0.1:0"]);
    let g = Gdbmux::spawn(cmd);
    let mut c = g.connect();
    c.handshake_lldb().unwrap();
    c.expect_ok("QEnableErrorStrings").unwrap();
    let r = c.request(format!("vAttach;{pid:x}").as_bytes()).unwrap();
    assert!(r.starts_with(b"E"), "{}", String::from_utf8_lossy(&r));
    assert_mentions(&error_text(&r), needles);
    assert_eq!(c.request_str("?").unwrap(), "W00", "still connected");
}

/// Another tracer holds the process (a small C helper with
/// PTRACE_TRACEME): the message names it and says to detach it.
#[test]
fn attach_refused_when_another_tracer_holds_the_process() {
    let mut cmd = Command::new(helper("tracer"));
    cmd.env_clear();
    let h = Helper::spawn(cmd);
    let line = h.line();
    let pid: u32 = line
        .strip_prefix("traced ")
        .and_then(|p| p.trim().parse().ok())
        .expect("traced PID");
    let tracer = h.child.id().to_string();
    let needles = [
        "already traced by process",
        tracer.as_str(),
        "(tracer)",
        "detach",
    ];
    assert_attach_refused(&[], pid, &needles);
    assert_vattach_refused(&[], pid, &needles);
}

/// No CAP_SYS_PTRACE (dropped from the bounding and inheritable sets with
/// setpriv) and a target of another uid: the message names the capability
/// and the container fix.
#[test]
fn attach_refused_without_cap_sys_ptrace() {
    let waiter = helper("waiter");
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(&waiter);
    let h = Helper::spawn(cmd);
    let line = h.line();
    let pid: u32 = line
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .expect("ready PID");
    let drop_cap = [
        "setpriv",
        "--inh-caps=-sys_ptrace",
        "--bounding-set=-sys_ptrace",
        "--",
    ];
    let needles = ["lacks CAP_SYS_PTRACE", "--cap-add=SYS_PTRACE"];
    assert_attach_refused(&drop_cap, pid, &needles);
    assert_vattach_refused(&drop_cap, pid, &needles);
}

/// A client reaches gdbmux through a forwarded port (socat standing in for
/// `docker -p` / `kubectl port-forward` / `ssh -L`) and gets the GPU offer
/// (`jAcceleratorPluginInitialize`, lldb dialect, raw client). Returns the
/// offered URL after checking that a second connection to it becomes the
/// GPU session (with `--advertise`: through the forwarder), or is refused
/// (without: a direct connection is not the forwarder that received the
/// offer).
fn offer_through_forward(advertise: bool) -> (String, String, String) {
    let env = gpu_support::GpuEnv::get();
    let sample = env.sample("vector_add");
    let dir = scratch("fwd");
    let sock = dir.join("gdbmux.sock");
    let socat = |upstream: String| {
        let mut cmd = Command::new("socat");
        cmd.args([
            "-d",
            "-d",
            "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork",
            &upstream,
        ]);
        Gdbmux::spawn_until(cmd, "listening on AF=2 ")
    };
    // With --advertise, gdbmux listens on a unix socket behind socat (so the
    // forwarded port is known before gdbmux starts); without it, on TCP.
    let (g, fwd) = if advertise {
        let fwd = socat(format!("UNIX-CONNECT:{}", sock.display()));
        let mut cmd = Command::new(gdbmux_bin());
        cmd.args(["--advertise", &fwd.addr])
            .arg(format!("unix:{}", sock.display()))
            .arg("--")
            .arg(&sample);
        (Gdbmux::spawn(cmd), fwd)
    } else {
        let g = Gdbmux::start(&["127.0.0.1:0", "--", sample.to_str().unwrap()]);
        let fwd = socat(format!("TCP:{}", g.addr));
        (g, fwd)
    };
    let mut cpu = RspClient::connect(fwd.addr.as_str()).unwrap();
    cpu.handshake_lldb().unwrap();
    let rt = env.bin_dir.join("libsimgpu_rt.so");
    let mut g = g;
    if advertise {
        // Before the real claim: another process connects through the same
        // forwarder. Its address is the forwarder's, like the CPU
        // connection's, but the socat process that relays it relays
        // another client: it is refused, and the offer stays pending.
        let pid = inferior_pid(&g);
        run_to_gpu_launch(&mut cpu, pid, &sample, &rt);
        let offered = offer_url(&mut cpu);
        let why = stray_through(&fwd.addr);
        assert!(
            why.contains("does not answer the pending GPU connection offer")
                && why.contains("relayed by process"),
            "{why}"
        );
        let (url, _gpu) = claim_offered(&offered);
        let line = g.wait_line("accepted GPU session");
        let me = format!(
            "claim from process {} through forwarder process ",
            std::process::id()
        );
        assert!(
            line.contains(&me),
            "the claim is proven through the forwarder: {line}"
        );
        return (url, fwd.addr.clone(), g.addr.clone());
    }
    // Without --advertise, the offered address is gdbmux's own listener; a
    // client that connects there directly (not through the forwarder that
    // holds the CPU connection) does not prove it answers the offer: it is
    // refused, and the offer waits.
    let pid = inferior_pid(&g);
    run_to_gpu_launch(&mut cpu, pid, &sample, &rt);
    let url = offer_url(&mut cpu);
    let port: u16 = url
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("port in the offered URL");
    let why = gpu_support::refused(port, protocol_tests::LLDB_QSUPPORTED);
    assert!(
        why.contains("does not answer the pending GPU connection offer"),
        "{why}"
    );
    (url, fwd.addr.clone(), g.addr.clone())
}

/// A client in another process (socat's STDIO, kept open until the
/// server closes the connection) sends `qSupported` to `addr`; returns
/// everything the server sent back.
fn stray_through(addr: &str) -> String {
    use std::io::Read;
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new("socat")
        .args(["STDIO", &format!("TCP:{addr}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn socat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&protocol_tests::framing::encode_packet(b"qSupported"))
        .expect("send qSupported");
    let mut out = Vec::new();
    // The refused connection is closed after its answer: end of file.
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("read the refusal");
    drop(stdin);
    let _ = child.wait();
    String::from_utf8_lossy(&out).into_owned()
}

/// `--advertise HOST:PORT`: the offer carries exactly that address (here
/// the forwarded port), and connecting to it reaches the GPU session.
#[test]
fn gpu_offer_through_forwarded_port_with_advertise() {
    let (url, forwarded, _) = offer_through_forward(true);
    assert_eq!(url, format!("connect://{forwarded}"));
}

/// Without `--advertise` the offer names the address the CPU client's
/// connection reached *as gdbmux sees it*. Behind a same-host forwarder
/// (socat connects to gdbmux's listener) that is gdbmux's own listening
/// address, not the forwarder's port the client used: clients behind a
/// real port forward need `--advertise`, and a direct connection there is
/// refused (it does not come from the process that holds the CPU
/// connection).
#[test]
fn gpu_offer_through_forwarded_port_without_advertise() {
    let (url, forwarded, listener) = offer_through_forward(false);
    assert_eq!(url, format!("connect://{listener}"));
    assert_ne!(url, format!("connect://{forwarded}"));
}

/// `socat TCP-LISTEN:0,fork UPSTREAM`: a forwarder that opens one process
/// per connection, on a port of the kernel's choosing (its `addr`).
fn socat_fork(upstream: &str) -> Gdbmux {
    let mut cmd = Command::new("socat");
    cmd.args([
        "-d",
        "-d",
        "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork",
        upstream,
    ]);
    Gdbmux::spawn_until(cmd, "listening on AF=2 ")
}

/// `stub/tests/fixtures/mux_proxy.py UPSTREAM`: a relay that carries every
/// client in one process (standing in for sshd, `kubectl port-forward`,
/// docker-proxy), on a port of the kernel's choosing (its `addr`).
fn relay(upstream: &str) -> Gdbmux {
    let mut cmd = Command::new("python3");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mux_proxy.py"
    ))
    .arg(upstream);
    Gdbmux::spawn_until(cmd, "listening on ")
}

/// gdbmux serving the `vector_add` sample on the unix socket `sock`, with
/// `--advertise front`.
fn serve_advertised(sock: &std::path::Path, front: &str) -> Gdbmux {
    let env = gpu_support::GpuEnv::get();
    let mut cmd = Command::new(gdbmux_bin());
    cmd.args(["--advertise", front])
        .arg(format!("unix:{}", sock.display()))
        .arg("--")
        .arg(env.sample("vector_add"));
    Gdbmux::spawn(cmd)
}

/// Stock lldb 23.1 (`tests/gpu/lldb_gpu.py`: the GPU target appears by
/// itself, a GPU breakpoint stops a wave, registers and memory read right)
/// connected to `front`; returns gdbmux's line that accepted the GPU
/// session (with its claim proof).
fn lldb_gpu_through(g: &Gdbmux, front: &str) -> String {
    let env = gpu_support::GpuEnv::get();
    let port = front.rsplit(':').next().expect("port");
    let hsaco = env.root.join("samples/kernels/vector_add.hsaco");
    let out = gpu_support::run_python(
        &env.root.join("stub/tests/gpu/lldb_gpu.py"),
        &[
            port,
            env.sample("vector_add").to_str().unwrap_or_default(),
            &format!("{:#x}", gpu_support::kernel_symbol(&hsaco, "vector_add")),
        ],
    );
    assert!(
        out.contains("ALL CHECKS PASSED"),
        "lldb GPU session through forwarders failed:\n{out}\n--- gdbmux log ---\n{}",
        g.log()
    );
    g.log()
        .lines()
        .find(|l| l.contains("accepted GPU session"))
        .unwrap_or_else(|| panic!("no GPU session accepted:\n{}", g.log()))
        .to_string()
}

/// The claim's forwarders, nearest gdbmux last, from the accepted line
/// ("claim from process C through forwarder process F1 through forwarder
/// process F2"): (C, [F1, F2]).
fn claim_chain(line: &str) -> (u32, Vec<u32>) {
    let proof = line
        .split("claim from process ")
        .nth(1)
        .and_then(|p| p.split(')').next())
        .unwrap_or_else(|| panic!("no claim proof in: {line}"));
    let mut parts = proof.split(" through forwarder process ");
    let num = |s: Option<&str>| -> u32 {
        s.and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("not a pid in: {line}"))
    };
    let client = num(parts.next());
    let hops = parts.map(|p| num(Some(p))).collect();
    (client, hops)
}

/// Stock lldb behind a chain of two forking forwarders (lldb → socat fork
/// → socat fork → gdbmux on a unix socket, `--advertise` naming the front):
/// the whole GPU session works, and the claim is proven hop by hop back to
/// the client process, through two forwarder processes.
#[test]
fn lldb_gpu_session_through_a_chain_of_forwarders() {
    let dir = scratch("chain");
    let sock = dir.join("gdbmux.sock");
    let mid = socat_fork(&format!("UNIX-CONNECT:{}", sock.display()));
    let front = socat_fork(&format!("TCP:{}", mid.addr));
    let g = serve_advertised(&sock, &front.addr);
    let line = lldb_gpu_through(&g, &front.addr);
    let (client, hops) = claim_chain(&line);
    assert_eq!(hops.len(), 2, "two forwarders: {line}");
    for pid in hops.iter().chain([&client]) {
        assert!(
            ![g.pid(), mid.pid(), front.pid()].contains(pid),
            "a forwarder's child or the client, not a listener or gdbmux: {line}"
        );
    }
}

/// Stock lldb behind a relay that carries every client in one process:
/// both of lldb's connections come through the relay, all the relay
/// carries is lldb's, so the claim is proven through it.
#[test]
fn lldb_gpu_session_through_a_single_process_relay() {
    let dir = scratch("relay");
    let sock = dir.join("gdbmux.sock");
    let proxy = relay(sock.to_str().expect("path"));
    let g = serve_advertised(&sock, &proxy.addr);
    let line = lldb_gpu_through(&g, &proxy.addr);
    let (client, hops) = claim_chain(&line);
    assert_eq!(hops, vec![proxy.pid()], "{line}");
    assert_ne!(client, proxy.pid());
}

/// The explicit policy for a relay that carries many clients in one
/// process: while it carries another client's connection, which of its
/// connections is which cannot be proven, and a claim through it is
/// refused with a reason naming the relay, the clients and the way out;
/// the offer stays pending, and once the other client is gone the real
/// claim is proven through the relay.
#[test]
fn a_relay_carrying_another_client_cannot_prove_a_claim() {
    let env = gpu_support::GpuEnv::get();
    let sample = env.sample("vector_add");
    let dir = scratch("relay-stray");
    let sock = dir.join("gdbmux.sock");
    let proxy = relay(sock.to_str().expect("path"));
    let mut g = serve_advertised(&sock, &proxy.addr);
    let mut cpu = RspClient::connect(proxy.addr.as_str()).unwrap();
    cpu.handshake_lldb().unwrap();
    let pid = inferior_pid(&g);
    run_to_gpu_launch(&mut cpu, pid, &sample, &env.bin_dir.join("libsimgpu_rt.so"));
    let offered = offer_url(&mut cpu);
    assert_eq!(offered, format!("connect://{}", proxy.addr));
    let why = stray_through(&proxy.addr);
    assert_mentions(
        &why,
        &[
            "does not answer the pending GPU connection offer",
            &format!("relayed by process {} (python", proxy.pid()),
            "several clients",
            "cannot be proven",
            "one process per connection",
        ],
    );
    let (_, _gpu) = claim_offered(&offered);
    let line = g.wait_line("accepted GPU session");
    assert!(
        line.contains(&format!(
            "claim from process {} through forwarder process {})",
            std::process::id(),
            proxy.pid()
        )),
        "{line}"
    );
}
