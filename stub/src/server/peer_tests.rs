//! The claim proof with real sockets and real processes: this test process
//! is the client (or a stray is another process), `socat …,fork` the
//! per-connection forwarders, `tests/fixtures/mux_proxy.py` a relay that
//! carries many clients in one process. The bounds are checked on a host
//! built by the test.

use std::io::BufRead;
use std::io::Read;
use std::net::TcpListener;
use std::net::TcpStream;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;

use super::*;

/// A child process, killed and reaped when the test ends (or fails).
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Kid {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// `socat TCP-LISTEN:0,fork UPSTREAM` (one process per connection); its
/// address, read from its "listening on" line.
fn socat_fork(upstream: &str) -> (Kid, String) {
    let mut cmd = Command::new("socat");
    cmd.args(["-d", "-d", "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork"])
        .arg(upstream)
        .stderr(Stdio::piped());
    let mut kid = Kid(cmd.spawn().expect("socat"));
    let mut err = std::io::BufReader::new(kid.0.stderr.take().expect("stderr"));
    let port = loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).expect("socat stderr") > 0,
            "socat ended"
        );
        if let Some(a) = line.split("listening on AF=2 ").nth(1) {
            break a.trim().rsplit(':').next().unwrap_or_default().to_string();
        }
    };
    // The rest of its log is not read; its children hold the pipe.
    std::mem::forget(err);
    (kid, format!("127.0.0.1:{port}"))
}

/// The single-process relay of `tests/fixtures/mux_proxy.py`; its address,
/// read from its "listening on" line.
fn mux_proxy(upstream: &str) -> (Kid, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mux_proxy.py");
    let mut kid = Kid(Command::new("python3")
        .arg(script)
        .arg(upstream)
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3"));
    let mut err = std::io::BufReader::new(kid.0.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("proxy stderr");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("proxy said {line:?}"))
        .to_string();
    (kid, addr)
}

/// Another process that holds a connection to `addr` open (until killed).
fn stray(addr: &str) -> Kid {
    Kid(Command::new("socat")
        .args(["-u", "STDIN"])
        .arg(format!("TCP:{addr}"))
        .stdin(Stdio::piped())
        .spawn()
        .expect("socat client"))
}

/// The next connection to `l` (blocks until a forwarder has relayed one).
fn next(l: &TcpListener) -> (Conn, TcpStream) {
    let (s, _) = l.accept().expect("accept");
    let keep = s.try_clone().expect("clone");
    (Conn::Tcp(mio::net::TcpStream::from_std(s)), keep)
}

/// Two connections of this process to `l` through `front` (a forwarder's
/// address, or `l`'s own): the CPU connection and the claim, as the server
/// accepted them; the client ends stay open while the pair lives.
struct Pair {
    cpu: Conn,
    claim: Conn,
    _clients: [TcpStream; 2],
}

fn pair_through(l: &TcpListener, front: &str) -> Pair {
    let a = TcpStream::connect(front).unwrap();
    let (cpu, _) = next(l);
    let b = TcpStream::connect(front).unwrap();
    let (claim, _) = next(l);
    Pair {
        cpu,
        claim,
        _clients: [a, b],
    }
}

/// Another process connected through `front`: the stray, the server's end
/// of its connection, and why its claim (forwarded) is refused.
fn stray_claim(l: &TcpListener, front: &str, cpu: &Conn) -> (Kid, Conn, TcpStream, String) {
    let other = stray(front);
    let (conn, upstream) = next(l);
    let why = mismatch(&claim_proof(cpu, &conn, true)).to_string();
    (other, conn, upstream, why)
}

/// The forwarders of a proof (nearest this server first) and its client.
fn unwrap(p: &ClaimProof) -> (Vec<u32>, &ClaimProof) {
    match p {
        ClaimProof::ThroughForwarder { forwarder, client } => {
            let (mut hops, end) = unwrap(client);
            hops.insert(0, *forwarder);
            (hops, end)
        }
        other => (Vec::new(), other),
    }
}

fn mismatch(p: &ClaimProof) -> &str {
    match p {
        ClaimProof::Mismatch(why) => why,
        other => panic!("proven although it should not be: {other}"),
    }
}

#[test]
fn proc_net_addresses() {
    assert_eq!(
        parse_addr("0100007F:1F90", false),
        Some("127.0.0.1:8080".parse().unwrap())
    );
    assert_eq!(
        parse_addr("00000000000000000000000001000000:0050", true),
        Some("[::1]:80".parse().unwrap())
    );
    assert_eq!(
        parse_addr("0000000000000000FFFF00000100007F:0050", true),
        Some("127.0.0.1:80".parse().unwrap()),
        "v4-mapped"
    );
    assert_eq!(parse_addr("zz", false), None);
}

/// Two connections of this process are proven; the proof names the
/// owner. (This process also accepted both: a process talking to itself
/// relays nothing.)
#[test]
fn same_process_over_loopback() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = pair_through(&l, &l.local_addr().unwrap().to_string());
    assert_eq!(
        claim_proof(&p.cpu, &p.claim, false),
        ClaimProof::SameProcess(std::process::id())
    );
}

/// `--advertise` over TCP behind `socat …,fork` (each connection relayed
/// by a process of its own): two connections of this process through the
/// forwarder are traced back to this process; a connection of another
/// process through the same forwarder is not.
#[test]
fn through_a_forking_tcp_forwarder() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let (_fwd, front) = socat_fork(&format!("TCP:{}", l.local_addr().unwrap()));
    let Pair { cpu, claim, .. } = &pair_through(&l, &front);
    let proof = claim_proof(cpu, claim, true);
    let (hops, client) = unwrap(&proof);
    assert_eq!(hops.len(), 1, "{proof}");
    assert_eq!(*client, ClaimProof::SameProcess(std::process::id()));
    let why = mismatch(&claim_proof(cpu, claim, false)).to_string();
    assert!(
        why.contains("--advertise"),
        "without --advertise two forwarder processes are no proof: {why}"
    );
    let (other, _, _, why) = stray_claim(&l, &front, cpu);
    assert!(
        why.contains(&format!("process {}", other.pid())) && why.contains("relayed by"),
        "the refusal names the stray and its forwarder: {why}"
    );
}

/// A chain of two forking forwarders (client → socat fork → socat fork →
/// server): traced hop by hop to this process; another process through the
/// same chain is refused, naming it and both of its forwarders (and the
/// CPU connection's two).
#[test]
fn through_a_chain_of_forking_forwarders() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let (_mid, mid) = socat_fork(&format!("TCP:{}", l.local_addr().unwrap()));
    let (_front, front) = socat_fork(&format!("TCP:{mid}"));
    let Pair { cpu, claim, .. } = &pair_through(&l, &front);
    let proof = claim_proof(cpu, claim, true);
    let (hops, client) = unwrap(&proof);
    assert_eq!(hops.len(), 2, "{proof}");
    assert_ne!(hops[0], hops[1]);
    assert_eq!(*client, ClaimProof::SameProcess(std::process::id()));
    assert_eq!(
        proof.to_string(),
        format!(
            "process {} through forwarder process {} through forwarder process {}",
            std::process::id(),
            hops[1],
            hops[0]
        )
    );
    let (other, _, _, why) = stray_claim(&l, &front, cpu);
    assert!(
        why.contains(&format!("process {}", other.pid())) && why.matches(" → ").count() == 2,
        "the refusal names the stray and its two forwarders: {why}"
    );
}

/// A relay that carries many clients in one process: proven while every
/// connection it carries comes from this process (with and without
/// `--advertise`); while it also carries another process's connection the
/// pairing cannot be proven, and every claim through it is refused with
/// the reason; when that connection is gone the claim is proven again.
#[test]
fn through_a_single_process_relay() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let (proxy, front) = mux_proxy(&l.local_addr().unwrap().to_string());
    let Pair { cpu, claim, .. } = &pair_through(&l, &front);
    let me = ClaimProof::SameProcess(std::process::id());
    let relayed = ClaimProof::ThroughForwarder {
        forwarder: proxy.pid(),
        client: Box::new(me.clone()),
    };
    assert_eq!(claim_proof(cpu, claim, true), relayed);
    assert_eq!(claim_proof(cpu, claim, false), relayed);

    let (other, conn, mut upstream, _) = stray_claim(&l, &front, cpu);
    for (c, what) in [(&conn, "the stray"), (claim, "the real claim")] {
        for forwarded in [true, false] {
            let why = mismatch(&claim_proof(cpu, c, forwarded)).to_string();
            assert!(
                why.contains("several clients")
                    && why.contains(&format!("process {}", proxy.pid()))
                    && why.contains(&format!("process {}", other.pid()))
                    && why.contains("fork"),
                "{what}: the refusal names the relay, the clients and a way out: {why}"
            );
        }
    }
    drop(other);
    // The relay closes the stray's inbound connection before its upstream
    // one: at the upstream's end of file, only this process's remain.
    let mut rest = Vec::new();
    upstream.read_to_end(&mut rest).expect("end of file");
    assert_eq!(claim_proof(cpu, claim, true), relayed);
}

/// A forwarder whose relayed connection comes from another forwarder:
/// per-connection forwarders (socat fork) in front of a single-process
/// relay. The relay's connections are traced through the forwarders to
/// this process.
#[test]
fn through_forwarders_in_front_of_a_relay() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let (proxy, relay) = mux_proxy(&l.local_addr().unwrap().to_string());
    let (_front, front) = socat_fork(&format!("TCP:{relay}"));
    let Pair { cpu, claim, .. } = &pair_through(&l, &front);
    assert_eq!(
        claim_proof(cpu, claim, true),
        ClaimProof::ThroughForwarder {
            forwarder: proxy.pid(),
            client: Box::new(ClaimProof::SameProcess(std::process::id())),
        }
    );
    let (_other, _, _, why) = stray_claim(&l, &front, cpu);
    assert!(why.contains("several clients"), "{why}");
}

fn ip(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Add a socket of process `pid` to a host built by the test (one
/// network namespace).
fn add(host: &mut Host, pid: u32, local: SocketAddr, remote: SocketAddr, state: TcpState) {
    let mut table = host.tables.get("").map(|t| t.to_vec()).unwrap_or_default();
    let inode = 100 + table.len() as u64;
    table.push(TcpSocket {
        local,
        remote,
        state,
        inode,
    });
    host.tables.insert(String::new(), table.into());
    host.owner.insert(inode, pid);
    host.held.entry(pid).or_default().push(inode);
}

/// Process `server` listens on `port` and accepted a connection from
/// process `client` (from port `from`).
fn connect(host: &mut Host, client: u32, from: u16, server: u32, port: u16) {
    add(host, server, ip(port), ip(0), TcpState::Listen);
    add(host, server, ip(port), ip(from), TcpState::Established);
    add(host, client, ip(from), ip(port), TcpState::Established);
}

/// A host built by the test: `n + 1` processes 1..=n+1 in a chain, where
/// process k accepted one connection from process k + 1 (on its listening
/// port 1000 + k), and process n + 1 is the client.
fn chain_host(n: u32) -> Host {
    let mut host = Host::empty(false);
    for k in 1..=n {
        connect(&mut host, k + 1, 30000 + k as u16, k, 1000 + k as u16);
    }
    host
}

/// One `/proc/net/tcp` row (IPv4 loopback addresses) of socket `inode`.
fn proc_row(local: u16, remote: u16, st: &str, inode: u64) -> String {
    let lo = u32::from_ne_bytes([127, 0, 0, 1]);
    format!(
        "   0: {lo:08X}:{local:04X} {lo:08X}:{remote:04X} {st} 00000000:00000000 00:00000000 00000000     0        0 {inode} 1 0000000000000000 20 4 30 10 -1"
    )
}

/// A `/proc/net/tcp` text that lists a socket more than once (the kernel
/// resumes each page of it by position while connections come and go; seen
/// with eight of these tests at once: a forwarder's one relayed connection
/// listed three times, and its claim refused as a relay of three): each
/// socket counts once, and the forwarder is traced as a forwarder.
#[test]
fn a_socket_listed_twice_is_one_connection() {
    let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
    let accepted = proc_row(1001, 30001, "01", 101);
    let text = [
        header.to_string(),
        proc_row(1001, 0, "0A", 100),
        accepted.clone(),
        accepted.clone(),
        proc_row(30001, 1001, "01", 102),
        accepted,
        proc_row(40000, 50000, "06", 0),
        proc_row(40001, 50001, "06", 0),
    ]
    .join("\n");
    let mut table = Vec::new();
    parse_socket_table(&text, false, &mut table, &mut HashSet::new());
    let inodes: Vec<u64> = table.iter().map(|s| s.inode).collect();
    assert_eq!(inodes, [100, 101, 102, 0, 0], "{table:?}");
    // Process 1 (the forwarder) listens on 1001 and accepted process 2's
    // connection.
    let mut host = Host::empty(false);
    host.tables.insert(String::new(), table.into());
    for (pid, inodes) in [(1, vec![100, 101]), (2, vec![102])] {
        for &inode in &inodes {
            host.owner.insert(inode, pid);
        }
        host.held.insert(pid, inodes);
    }
    let mut budget = MAX_TRACED;
    let t = host.trace(1, &mut budget);
    assert_eq!(t.hops, [1]);
    assert_eq!(t.end, End::Client(2));
}

/// At most [`MAX_HOPS`] forwarders are followed; one more ends the trace
/// with the bound in its reason.
#[test]
fn the_hop_bound() {
    let hops = MAX_HOPS as u32;
    let mut budget = MAX_TRACED;
    let t = chain_host(hops).trace(1, &mut budget);
    assert_eq!(t.hops, (1..=hops).collect::<Vec<_>>());
    assert_eq!(t.end, End::Client(hops + 1));
    let mut budget = MAX_TRACED;
    let t = chain_host(hops + 1).trace(1, &mut budget);
    assert!(
        matches!(&t.end, End::Unknown(why) if why.contains(&format!("at most {MAX_HOPS}"))),
        "{t:?}"
    );
    let why = mismatch(&chain_host(hops + 1).decide(Peer::Process(1), Peer::Process(1), true))
        .to_string();
    assert!(
        why.contains("more forwarders than this server traces"),
        "{why}"
    );
}

/// Forwarders that relay in a circle end the trace.
#[test]
fn a_circle_of_forwarders() {
    let mut host = chain_host(2);
    // Process 3 (the client) becomes a forwarder of a connection of
    // process 1.
    connect(&mut host, 1, 30003, 3, 1003);
    let mut budget = MAX_TRACED;
    let t = host.trace(1, &mut budget);
    assert!(
        matches!(&t.end, End::Unknown(why) if why.contains("circle")),
        "{t:?}"
    );
}

/// A relay behind a forking forwarder (client → relay → socat fork →
/// server): each connection passes a forwarder process of its own, then
/// the same relay, whose connections all come from this process.
#[test]
fn through_a_relay_behind_a_forking_forwarder() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let (_fwd, fwd) = socat_fork(&format!("TCP:{}", l.local_addr().unwrap()));
    let (proxy, front) = mux_proxy(&fwd);
    let _a = TcpStream::connect(&front).unwrap();
    let (cpu, _) = next(&l);
    let _b = TcpStream::connect(&front).unwrap();
    let (claim, _) = next(&l);
    let proof = claim_proof(&cpu, &claim, true);
    let (hops, client) = unwrap(&proof);
    assert_eq!(hops.len(), 2, "{proof}");
    assert_eq!(hops[1], proxy.pid(), "{proof}");
    assert_eq!(*client, ClaimProof::SameProcess(std::process::id()));
}

/// Clients on another host are told apart by their address only (stock
/// lldb sends nothing of the offered URL): one address is proven, another
/// is refused with that reason, and so is a remote claim for a local
/// client.
#[test]
fn remote_clients_are_proven_by_address_only() {
    let a: IpAddr = "192.0.2.1".parse().unwrap();
    let b: IpAddr = "192.0.2.2".parse().unwrap();
    let mut host = Host::empty(false);
    assert_eq!(
        host.decide(Peer::Remote(a), Peer::Remote(a), true),
        ClaimProof::SameRemoteHost(a)
    );
    for (cpu, claim) in [
        (Peer::Remote(a), Peer::Remote(b)),
        (Peer::Process(7), Peer::Remote(b)),
    ] {
        for forwarded in [true, false] {
            let why = mismatch(&host.decide(cpu.clone(), claim.clone(), forwarded)).to_string();
            assert!(
                why.contains("host 192.0.2.2"),
                "the refusal names the claim's host: {why}"
            );
        }
    }
    let why = mismatch(&host.decide(Peer::Remote(a), Peer::Remote(b), true)).to_string();
    assert!(
        why.contains("recognised by its address only")
            && why.contains("sends nothing of the offered URL"),
        "{why}"
    );
}
