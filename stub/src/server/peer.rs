//! Who is at the other end of a connection: the claim proof of the accept
//! policy ([`crate::mux`], "The claim proof").
//!
//! Stock lldb 23.1 opens the GPU connection from the same process that
//! holds the CPU connection, and carries nothing of the offered URL on the
//! wire. So a claim is proven by peer identity:
//! - unix socket: `SO_PEERCRED` gives the peer's pid;
//! - TCP on this host: the client end of the connection is a socket in
//!   `/proc/net/tcp{,6}` (found by its address pair); its inode is owned
//!   by the process that has `socket:[INODE]` among its fds;
//! - TCP from another host: its processes are out of sight; the claim must
//!   come from the CPU client's address;
//! - `--advertise` (a port forwarder on this host, which may open each
//!   connection from a process of its own, as `socat …,fork` does): the
//!   peer identity is traced one hop further, to the one connection each
//!   forwarder process relays, and the owner of its client end (or its
//!   remote address). The claim is proven only if both forwarder
//!   processes relay the same client; an address match alone never is.
//!
//! Cost: a read of the socket tables and walks over `/proc/*/fd`, only
//! for a connection that arrives while an offer is pending (the loop does
//! no other work for it; all are in-memory kernel tables).

use std::net::IpAddr;
use std::net::SocketAddr;

use super::transport::Conn;
use crate::mux::ClaimProof;

/// The client end of a connection, as far as this host can see it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peer {
    /// A local process (pid).
    Process(u32),
    /// A remote address.
    Remote(IpAddr),
    /// Nothing known (stdio, or a local socket whose owner is not visible).
    Unknown(String),
}

/// Prove that `claim` comes from the client of `cpu` (see the module docs).
/// `forwarded`: `--advertise` was given, the client may be behind a port
/// forwarder that opens each connection from a process of its own: a
/// claim whose peer is another process than the CPU connection's is then
/// traced one hop back, to the client each forwarder process relays
/// ([`behind`]), and proven only if that is one client.
pub fn claim_proof(cpu: &Conn, claim: &Conn, forwarded: bool) -> ClaimProof {
    // Each connection's (peer, local) addresses, for TCP.
    let mut links = (None, None);
    let (a, b) = match (cpu, claim) {
        (Conn::Tcp(c), Conn::Tcp(n)) => {
            let pair = |s: &mio::net::TcpStream| Some((s.peer_addr().ok()?, s.local_addr().ok()?));
            let (Some(cpu_pair), Some(claim_pair)) = (pair(c), pair(n)) else {
                return ClaimProof::Mismatch("the connection's addresses are unknown".into());
            };
            links = (Some(cpu_pair), Some(claim_pair));
            tcp_peers(cpu_pair, claim_pair)
        }
        (Conn::Unix(c), Conn::Unix(n)) => (unix_peer(c), unix_peer(n)),
        _ => return ClaimProof::Mismatch("it does not use the CPU session's transport".into()),
    };
    match (a, b) {
        (Peer::Process(x), Peer::Process(y)) if x == y => ClaimProof::SameProcess(x),
        (Peer::Remote(x), Peer::Remote(y)) if x == y => ClaimProof::SameRemoteHost(x),
        (Peer::Process(x), Peer::Process(y)) if forwarded => {
            through_forwarder((x, links.0), (y, links.1))
        }
        (Peer::Process(x), Peer::Process(y)) => ClaimProof::Mismatch(format!(
            "it comes from process {y}, the debugger that received the offer is process {x}"
        )),
        (a, b) => ClaimProof::Mismatch(format!(
            "it comes from {}, the debugger that received the offer is {}",
            describe(&b),
            describe(&a)
        )),
    }
}

/// A forwarder process and, for TCP, its connection's (peer, local)
/// addresses as this server sees them.
type Link = (u32, Option<(SocketAddr, SocketAddr)>);

/// `--advertise`: the CPU connection comes from forwarder process `cpu`,
/// the claim from process `claim` (each with the connection's (peer,
/// local) addresses when it is TCP). Proven when each relays exactly one
/// client connection and both relay the same client: one process on this
/// host, or (a forwarder whose client is elsewhere) one remote address,
/// as without `--advertise`.
fn through_forwarder((cpu, cpu_link): Link, (claim, claim_link): Link) -> ClaimProof {
    let (Some(x), Some(y)) = (behind(cpu, cpu_link), behind(claim, claim_link)) else {
        return ClaimProof::Mismatch(format!(
            "it comes from process {claim}, which does not relay the client of the debugger's forwarder, process {cpu}"
        ));
    };
    let client = match (&x, &y) {
        (Peer::Process(p), Peer::Process(q)) if p == q => ClaimProof::SameProcess(*p),
        (Peer::Remote(p), Peer::Remote(q)) if p == q => ClaimProof::SameRemoteHost(*p),
        _ => {
            return ClaimProof::Mismatch(format!(
                "it is relayed by process {claim} from {}, the debugger that received the offer is {} (relayed by process {cpu})",
                describe(&y),
                describe(&x)
            ))
        }
    };
    ClaimProof::ThroughForwarder {
        forwarder: claim,
        client: Box::new(client),
    }
}

/// The one client a forwarder process relays: its only established TCP
/// connection other than the one to this server (`to_us`: that
/// connection's (peer, local) addresses as this server sees them; a unix
/// connection is not in the TCP tables). `None` when it holds none or
/// several (a forwarder that multiplexes many clients in one process is
/// proven by [`ClaimProof::SameProcess`] instead). The tables are read in
/// the forwarder's own network namespace (`/proc/PID/net/tcp`).
fn behind(pid: u32, to_us: Option<(SocketAddr, SocketAddr)>) -> Option<Peer> {
    let table = socket_table(&format!("/proc/{pid}/net"));
    let held = held_sockets(pid);
    let mut relayed = table.iter().filter(|s| {
        s.established
            && held.contains(&s.inode)
            && to_us.is_none_or(|(peer, ours)| !(s.local == peer && s.remote == ours))
    });
    let (one, None) = (relayed.next()?, relayed.next()) else {
        return None;
    };
    // The client's end of that connection, if it is in the same table.
    match table
        .iter()
        .find(|o| o.local == one.remote && o.remote == one.local)
    {
        Some(end) => owners_of(&[end.inode])
            .first()
            .map(|(_, p)| Peer::Process(*p)),
        None => Some(Peer::Remote(one.remote.ip())),
    }
}

/// The socket inodes process `pid` holds (`socket:[INODE]` among its fds).
fn held_sockets(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| {
            let link = std::fs::read_link(fd.path()).ok()?;
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

fn describe(p: &Peer) -> String {
    match p {
        Peer::Process(pid) => format!("process {pid}"),
        Peer::Remote(ip) => format!("host {ip}"),
        Peer::Unknown(why) => why.clone(),
    }
}

fn unix_peer(s: &mio::net::UnixStream) -> Peer {
    use nix::sys::socket::getsockopt;
    use nix::sys::socket::sockopt::PeerCredentials;
    match getsockopt(s, PeerCredentials) {
        Ok(c) if c.pid() > 0 => Peer::Process(c.pid() as u32),
        Ok(_) => Peer::Unknown("a unix peer without a pid".into()),
        Err(e) => Peer::Unknown(format!(
            "a unix peer whose credentials are unreadable ({e})"
        )),
    }
}

/// The owners of the client ends of two local TCP connections (one walk
/// over `/proc`), or their remote addresses.
fn tcp_peers(cpu: (SocketAddr, SocketAddr), claim: (SocketAddr, SocketAddr)) -> (Peer, Peer) {
    let local =
        |(peer, ours): (SocketAddr, SocketAddr)| peer.ip().is_loopback() || peer.ip() == ours.ip();
    if !local(cpu) || !local(claim) {
        let remote = |(peer, ours): (SocketAddr, SocketAddr)| {
            if local((peer, ours)) {
                Peer::Unknown(format!("local address {peer}"))
            } else {
                Peer::Remote(peer.ip())
            }
        };
        return (remote(cpu), remote(claim));
    }
    let table = socket_table("/proc/net");
    // The client end: its local address is our peer, its remote is ours.
    let inode = |(peer, ours): (SocketAddr, SocketAddr)| {
        table
            .iter()
            .find(|s| s.local == peer && s.remote == ours)
            .map(|s| s.inode)
    };
    let (Some(ci), Some(ni)) = (inode(cpu), inode(claim)) else {
        let unknown = || Peer::Unknown("a local socket not in /proc/net/tcp".into());
        return (unknown(), unknown());
    };
    let owners = owners_of(&[ci, ni]);
    let who = |ino: u64| {
        owners
            .iter()
            .find(|(i, _)| *i == ino)
            .map(|(_, pid)| Peer::Process(*pid))
            .unwrap_or_else(|| Peer::Unknown("a local process this server may not inspect".into()))
    };
    (who(ci), who(ni))
}

/// One row of `/proc/net/tcp{,6}`.
struct TcpSocket {
    local: SocketAddr,
    remote: SocketAddr,
    /// State `01` (proc_net_tcp.rst: `TCP_ESTABLISHED`).
    established: bool,
    inode: u64,
}

/// Every TCP socket in the network namespace whose `net` directory is
/// `net` (`/proc/net`: this server's; `/proc/PID/net`: that process's).
fn socket_table(net: &str) -> Vec<TcpSocket> {
    let mut out = Vec::new();
    for (file, v6) in [("tcp", false), ("tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(format!("{net}/{file}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(l), Some(r), Some(st), Some(ino)) = (f.get(1), f.get(2), f.get(3), f.get(9))
            else {
                continue;
            };
            if let (Some(local), Some(remote), Ok(inode)) =
                (parse_addr(l, v6), parse_addr(r, v6), ino.parse::<u64>())
            {
                out.push(TcpSocket {
                    local,
                    remote,
                    established: *st == "01",
                    inode,
                });
            }
        }
    }
    out
}

/// `0100007F:1F90` (IPv4) or 32 hex digits `:PORT` (IPv6): the address
/// words are in host byte order (proc_net_tcp.rst).
fn parse_addr(s: &str, v6: bool) -> Option<SocketAddr> {
    let (a, p) = s.split_once(':')?;
    let port = u16::from_str_radix(p, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(a.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip: IpAddr = if v6 {
        let mut b = [0u8; 16];
        for i in 0..4 {
            b.get_mut(i * 4..i * 4 + 4)?.copy_from_slice(&word(i)?);
        }
        let v6 = std::net::Ipv6Addr::from(b);
        match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        }
    } else {
        if a.len() != 8 {
            return None;
        }
        IpAddr::from(word(0)?)
    };
    Some(SocketAddr::new(ip, port))
}

/// Which process holds each socket inode (first holder found).
fn owners_of(inodes: &[u64]) -> Vec<(u64, u32)> {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut found: Vec<(u64, u32)> = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy();
            for (k, w) in wanted.iter().enumerate() {
                let ino = inodes.get(k).copied().unwrap_or_default();
                if *w == link && !found.iter().any(|(i, _)| *i == ino) {
                    found.push((ino, pid));
                }
            }
        }
        if found.len()
            == inodes
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

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
    /// owner.
    #[test]
    fn same_process_over_loopback() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (sa, _) = l.accept().unwrap();
        let _b = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (sb, _) = l.accept().unwrap();
        let ca = Conn::Tcp(mio::net::TcpStream::from_std(sa));
        let cb = Conn::Tcp(mio::net::TcpStream::from_std(sb));
        assert_eq!(
            claim_proof(&ca, &cb, false),
            ClaimProof::SameProcess(std::process::id())
        );
        drop(a);
    }

    /// `--advertise` over TCP behind `socat …,fork` (each connection
    /// relayed by a process of its own): two connections of this process
    /// through the forwarder are traced back to this process; a
    /// connection of another process through the same forwarder is not.
    #[test]
    fn through_a_forking_tcp_forwarder() {
        use std::io::BufRead;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut fwd = std::process::Command::new("socat")
            .args(["-d", "-d", "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork"])
            .arg(format!("TCP:{}", l.local_addr().unwrap()))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("socat");
        // "listening on AF=2 127.0.0.1:PORT"
        let mut err = std::io::BufReader::new(fwd.stderr.take().unwrap());
        let port = loop {
            let mut line = String::new();
            assert!(err.read_line(&mut line).unwrap() > 0, "socat ended");
            if let Some(a) = line.split("listening on AF=2 ").nth(1) {
                break a.trim().rsplit(':').next().unwrap().to_string();
            }
        };
        let fwd_addr = format!("127.0.0.1:{port}");
        let conn = |l: &std::net::TcpListener| {
            let (s, _) = l.accept().unwrap();
            Conn::Tcp(mio::net::TcpStream::from_std(s))
        };
        let _a = std::net::TcpStream::connect(&fwd_addr).unwrap();
        let cpu = conn(&l);
        let _b = std::net::TcpStream::connect(&fwd_addr).unwrap();
        let claim = conn(&l);
        let me = std::process::id();
        match claim_proof(&cpu, &claim, true) {
            ClaimProof::ThroughForwarder { client, .. } => {
                assert_eq!(*client, ClaimProof::SameProcess(me))
            }
            other => panic!("not proven through the forwarder: {other:?}"),
        }
        assert!(
            matches!(claim_proof(&cpu, &claim, false), ClaimProof::Mismatch(_)),
            "without --advertise two forwarder processes are no proof"
        );
        // Another process through the same forwarder (its connection held
        // open: its stdin stays open until it is killed).
        let mut other = std::process::Command::new("socat")
            .args(["-u", "STDIN"])
            .arg(format!("TCP:{fwd_addr}"))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("socat client");
        let stray = conn(&l);
        let proof = claim_proof(&cpu, &stray, true);
        assert!(matches!(proof, ClaimProof::Mismatch(_)), "{proof:?}");
        let _ = other.kill();
        let _ = other.wait();
        // The forwarder's children (one per connection) end with their
        // connections; its stderr is not read to the end (they hold it).
        let _ = fwd.kill();
        let _ = fwd.wait();
    }
}
