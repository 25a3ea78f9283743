//! Who is at the other end of a connection: the claim proof of the accept
//! policy ([`crate::mux`], "The claim proof"; docs/architecture.md,
//! "Claim").
//!
//! Stock lldb 23.1 opens the GPU connection from the same process that
//! holds the CPU connection, and carries nothing of the offered URL on the
//! wire (its handshake is fixed), so a token in the URL can never reach
//! this server. A claim is proven by peer identity instead:
//! - unix socket: `SO_PEERCRED` gives the peer's pid;
//! - TCP on this host: the client end of the connection is a socket in
//!   `/proc/net/tcp{,6}` (found by its address pair); its inode is owned
//!   by the process that has `socket:[INODE]` among its fds;
//! - TCP from another host: its processes are out of sight; the claim must
//!   come from the CPU client's address. That is the limit: nothing else
//!   of a remote client reaches this host.
//!
//! ## Forwarders
//! A process that *accepted* a TCP connection (its local address is a
//! listening address in its network namespace) and holds a connection to
//! this server relays that connection. Tracing goes from the process that
//! holds the connection to this server, hop by hop, to the process at the
//! origin:
//! - a process that accepted no TCP connection (from another process) is
//!   the client (lldb itself);
//! - a process that accepted exactly one is a per-connection forwarder
//!   (`socat …,fork` opens one process per connection): the trace goes on
//!   to the owner of that connection's other end, or ends at its remote
//!   address when the other end is not on this host;
//! - a process that accepted several is a relay that carries many clients
//!   in one process (a single-process proxy, `ssh -L`'s sshd,
//!   `kubectl port-forward`). A relay in user space leaves no pairing of
//!   its inbound and outbound connections in any kernel table, so which
//!   client a given connection of it relays cannot be proven. The policy
//!   (`Host::relay_origin`): every connection the relay accepted is traced;
//!   the claim is proven only when all of them end at one client (then
//!   whatever the relay paired, the claim comes from that client). While
//!   the relay carries a connection of any other client, the claim is
//!   refused with a reason that says what could not be proven and what to
//!   do instead.
//!
//! With `--advertise` (the offer names a forwarder), both connections are
//! traced and the claim is proven when both end at one client process (or
//! one remote address). Without it the offer names this server's own
//! address, and the claim must come from the very process that holds the
//! CPU connection; if that process is a relay, the relay rule above
//! applies too.
//!
//! Bounds: a trace follows at most [`MAX_HOPS`] forwarders, and one proof
//! follows at most [`MAX_TRACED`] connections in all (a relay's fan-out
//! included); past either the claim is refused, saying so. A cycle ends a
//! trace as unknown.
//!
//! Cost: one walk over `/proc/*/fd` and the socket tables, only for a
//! connection that arrives while an offer is pending (the loop does no
//! other work for it; all are in-memory kernel tables).

use std::collections::HashMap;
use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::rc::Rc;

use super::transport::Conn;
use crate::mux::ClaimProof;

/// At most this many forwarder processes are followed between a client
/// and this server (per connection). Real set-ups have one or two (a
/// container's port forward, an ssh tunnel); the bound keeps a proof's
/// cost small and fixed.
pub const MAX_HOPS: usize = 8;

/// At most this many relayed connections are followed in one proof (the
/// hops of both traces and every connection of a relay).
pub const MAX_TRACED: usize = 64;

/// The client end of a connection to this server, as far as this host can
/// see it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peer {
    /// A local process (pid).
    Process(u32),
    /// A remote address.
    Remote(IpAddr),
    /// Nothing known (why, for the refusal).
    Unknown(String),
}

/// Where a trace ends.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// The client: a process that relays no connection.
    Client(u32),
    /// A client on another host (or another network namespace).
    Remote(IpAddr),
    /// A process that relays several accepted connections (their sockets).
    Relay(u32, Vec<TcpSocket>),
    /// Not traceable (why, for the refusal).
    Unknown(String),
}

/// One connection traced back: the forwarders it passed (nearest this
/// server first) and where it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Trace {
    hops: Vec<u32>,
    end: End,
}

/// Prove that `claim` comes from the client of `cpu` (see the module docs).
/// `forwarded`: `--advertise` was given; the client may be behind
/// forwarders, which are traced back to the client.
pub fn claim_proof(cpu: &Conn, claim: &Conn, forwarded: bool) -> ClaimProof {
    let mut host = Host::capture();
    let (a, b) = match (cpu, claim) {
        (Conn::Tcp(c), Conn::Tcp(n)) => {
            let pair = |s: &mio::net::TcpStream| Some((s.peer_addr().ok()?, s.local_addr().ok()?));
            let (Some(cpu_pair), Some(claim_pair)) = (pair(c), pair(n)) else {
                return ClaimProof::Mismatch("the connection's addresses are unknown".into());
            };
            (host.tcp_peer(cpu_pair), host.tcp_peer(claim_pair))
        }
        (Conn::Unix(c), Conn::Unix(n)) => (unix_peer(c), unix_peer(n)),
        _ => return ClaimProof::Mismatch("it does not use the CPU session's transport".into()),
    };
    host.decide(a, b, forwarded)
}

/// `ThroughForwarder` around `client` for each hop (`hops`: nearest this
/// server first, so it is the outermost).
fn through(hops: &[u32], client: ClaimProof) -> ClaimProof {
    hops.iter()
        .rev()
        .fold(client, |client, &forwarder| ClaimProof::ThroughForwarder {
            forwarder,
            client: Box::new(client),
        })
}

/// Read as "the claim comes from …" (the log of an accepted claim).
impl fmt::Display for ClaimProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimProof::SameProcess(pid) => write!(f, "process {pid}"),
            ClaimProof::SameRemoteHost(ip) => write!(f, "host {ip}"),
            ClaimProof::ThroughForwarder { forwarder, client } => {
                write!(f, "{client} through forwarder process {forwarder}")
            }
            ClaimProof::Mismatch(why) => write!(f, "no proof: {why}"),
        }
    }
}

/// One row of `/proc/net/tcp{,6}`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TcpSocket {
    local: SocketAddr,
    remote: SocketAddr,
    state: TcpState,
    inode: u64,
}

/// The states the proof tells apart (proc_net_tcp.rst, `st`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TcpState {
    /// `01`: `TCP_ESTABLISHED`.
    Established,
    /// `0A`: `TCP_LISTEN`.
    Listen,
    Other,
}

/// What this host shows of its processes and sockets, read once per proof.
struct Host {
    /// Socket inode → the first process found holding it.
    owner: HashMap<u64, u32>,
    /// Process → the socket inodes it holds.
    held: HashMap<u32, Vec<u64>>,
    /// Process → its network namespace (`net:[N]`); absent: this server's.
    netns: HashMap<u32, String>,
    /// Network namespace → its TCP table (this server's under "").
    tables: HashMap<String, Rc<[TcpSocket]>>,
    /// Process → its name (`/proc/PID/comm`), for refusals.
    names: HashMap<u32, String>,
    /// Whether tables of other namespaces may be read from `/proc` (false
    /// for a host built by a test).
    live: bool,
    /// The addresses this server process listens on (TCP): a socket
    /// accepted there is a connection to this server, never one a client
    /// relays (only a test, whose process is client and server at once,
    /// holds such sockets in its client process).
    servers: Vec<SocketAddr>,
}

impl Host {
    /// Nothing seen yet; `live`: tables may be read from `/proc`.
    fn empty(live: bool) -> Host {
        Host {
            owner: HashMap::new(),
            held: HashMap::new(),
            netns: HashMap::new(),
            tables: HashMap::new(),
            names: HashMap::new(),
            live,
            servers: Vec::new(),
        }
    }

    /// One walk over `/proc`: every process's socket fds, namespace and
    /// name, and this server's TCP table.
    fn capture() -> Host {
        let mut host = Host::empty(true);
        let ours = std::fs::read_link("/proc/self/ns/net")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        host.tables
            .insert(String::new(), socket_table("/proc/net").into());
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return host;
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let sockets = held_sockets(pid);
            if sockets.is_empty() {
                continue;
            }
            for &inode in &sockets {
                host.owner.entry(inode).or_insert(pid);
            }
            host.held.insert(pid, sockets);
            if let Ok(ns) = std::fs::read_link(p.path().join("ns/net")) {
                let ns = ns.to_string_lossy().into_owned();
                if ns != ours {
                    host.netns.insert(pid, ns);
                }
            }
            if let Ok(name) = std::fs::read_to_string(p.path().join("comm")) {
                host.names.insert(pid, name.trim().to_string());
            }
        }
        let me = std::process::id();
        let mine = host.held.get(&me).cloned().unwrap_or_default();
        let table = host
            .tables
            .get("")
            .cloned()
            .unwrap_or_else(|| Rc::from(Vec::new()));
        host.servers = table
            .iter()
            .filter(|s| s.state == TcpState::Listen && mine.contains(&s.inode))
            .map(|s| s.local)
            .collect();
        host
    }

    /// The TCP table of `pid`'s network namespace.
    fn table(&mut self, pid: u32) -> Rc<[TcpSocket]> {
        let ns = self.netns.get(&pid).cloned().unwrap_or_default();
        if let Some(t) = self.tables.get(&ns) {
            return t.clone();
        }
        let t: Rc<[TcpSocket]> = if self.live {
            socket_table(&format!("/proc/{pid}/net")).into()
        } else {
            Rc::from(Vec::new())
        };
        self.tables.insert(ns, t.clone());
        t
    }

    /// "process PID (NAME)".
    fn name(&self, pid: u32) -> String {
        match self.names.get(&pid) {
            Some(n) => format!("process {pid} ({n})"),
            None => format!("process {pid}"),
        }
    }

    /// The client end of a TCP connection to this server (its (peer,
    /// local) addresses as this server sees them).
    fn tcp_peer(&mut self, (peer, ours): (SocketAddr, SocketAddr)) -> Peer {
        if !(peer.ip().is_loopback() || peer.ip() == ours.ip()) {
            return Peer::Remote(peer.ip());
        }
        let table = self
            .tables
            .get("")
            .cloned()
            .unwrap_or_else(|| Rc::from(Vec::new()));
        // The client end: its local address is our peer, its remote is ours.
        let Some(end) = table.iter().find(|s| s.local == peer && s.remote == ours) else {
            return Peer::Unknown(format!("a local socket ({peer}) not in /proc/net/tcp"));
        };
        match self.owner.get(&end.inode) {
            Some(pid) => Peer::Process(*pid),
            None => Peer::Unknown(format!(
                "a local process this server may not inspect (its address is {peer})"
            )),
        }
    }

    /// The TCP connections `pid` accepted (their local address is a
    /// listening address in its namespace), other than those whose other
    /// end it holds itself (a process talking to itself relays nothing)
    /// and those accepted by this server's own listeners.
    fn accepted(&mut self, pid: u32) -> Vec<TcpSocket> {
        let table = self.table(pid);
        let held = self.held.get(&pid).cloned().unwrap_or_default();
        let listens = |a: SocketAddr| {
            table
                .iter()
                .any(|l| l.state == TcpState::Listen && accepts(l.local, a))
        };
        let ours = |a: SocketAddr| self.servers.iter().any(|l| accepts(*l, a));
        let own_peer = |s: &TcpSocket| {
            table
                .iter()
                .find(|o| o.local == s.remote && o.remote == s.local)
                .is_some_and(|o| held.contains(&o.inode))
        };
        table
            .iter()
            .filter(|s| {
                s.state == TcpState::Established
                    && held.contains(&s.inode)
                    && listens(s.local)
                    && !ours(s.local)
                    && !own_peer(s)
            })
            .cloned()
            .collect()
    }

    /// The other end of connection `s` that `pid` accepted: its owner on
    /// this host, or where the trace ends.
    fn follow(&mut self, pid: u32, s: &TcpSocket) -> Result<u32, End> {
        let table = self.table(pid);
        match table
            .iter()
            .find(|o| o.local == s.remote && o.remote == s.local)
        {
            Some(end) => self.owner.get(&end.inode).copied().ok_or_else(|| {
                End::Unknown(format!(
                    "the client of {} is a local process this server may not inspect",
                    self.name(pid)
                ))
            }),
            None if s.remote.ip().is_loopback() => Err(End::Unknown(format!(
                "the client of {} ({}) is not in its socket table",
                self.name(pid),
                s.remote
            ))),
            None => Err(End::Remote(s.remote.ip())),
        }
    }

    /// Trace the connection held by `pid` back to its origin (see the
    /// module docs). `budget`: connections still allowed to be followed
    /// in this proof ([`MAX_TRACED`]).
    fn trace(&mut self, mut pid: u32, budget: &mut usize) -> Trace {
        let mut hops: Vec<u32> = Vec::new();
        loop {
            let mut inbound = self.accepted(pid);
            if inbound.len() != 1 {
                let end = if inbound.is_empty() {
                    End::Client(pid)
                } else {
                    End::Relay(pid, inbound)
                };
                return Trace { hops, end };
            }
            let relayed = inbound.remove(0);
            if hops.len() == MAX_HOPS || *budget == 0 {
                let why = format!(
                    "it passes more forwarders than this server traces (at most {MAX_HOPS} per connection, {MAX_TRACED} connections per claim)"
                );
                return Trace {
                    hops,
                    end: End::Unknown(why),
                };
            }
            *budget -= 1;
            hops.push(pid);
            match self.follow(pid, &relayed) {
                Ok(next) if hops.contains(&next) => {
                    let why = format!("its forwarders relay in a circle ({})", self.name(next));
                    return Trace {
                        hops,
                        end: End::Unknown(why),
                    };
                }
                Ok(next) => pid = next,
                Err(end) => return Trace { hops, end },
            }
        }
    }

    /// The one client behind relay `pid` (which accepted `inbound`): every
    /// accepted connection traced back (a relay behind it in turn, up to
    /// [`MAX_HOPS`] relays deep). `Ok` (the client, and the relays and
    /// forwarders passed that every connection shares) only when all of
    /// them end at one client; otherwise why not, for the refusal.
    fn relay_origin(
        &mut self,
        pid: u32,
        inbound: &[TcpSocket],
        budget: &mut usize,
    ) -> Result<(Vec<u32>, ClaimProof), String> {
        let mut relays = vec![pid];
        let mut inbound = inbound.to_vec();
        loop {
            let relay = relays.last().copied().unwrap_or(pid);
            let mut ends: Vec<End> = Vec::new();
            for s in &inbound {
                if *budget == 0 {
                    return Err(format!(
                        "{} relays more connections than this server traces (at most {MAX_TRACED} per claim)",
                        self.name(relay)
                    ));
                }
                *budget -= 1;
                let end = match self.follow(relay, s) {
                    Ok(next) if relays.contains(&next) => {
                        End::Unknown(format!("a circle through {}", self.name(next)))
                    }
                    Ok(next) => self.trace(next, budget).end,
                    Err(end) => end,
                };
                if !ends.contains(&end) {
                    ends.push(end);
                }
            }
            match ends.as_slice() {
                [End::Client(p)] => return Ok((relays, ClaimProof::SameProcess(*p))),
                [End::Remote(ip)] => return Ok((relays, ClaimProof::SameRemoteHost(*ip))),
                [End::Relay(next, more)] if relays.len() < MAX_HOPS && !relays.contains(next) => {
                    relays.push(*next);
                    inbound = more.clone();
                }
                _ => {
                    let clients: Vec<String> = ends.iter().map(|e| self.describe(e)).collect();
                    return Err(format!(
                        "it is relayed by {}, which carries the connections of {} in one process ({}); \
                         which of them this connection relays cannot be proven (a relay in user space \
                         pairs its connections where no kernel table shows it). Run the debugger on \
                         this host and connect directly, or use a forwarder that opens one process \
                         per connection (socat TCP-LISTEN:PORT,fork …) with --advertise",
                        self.name(relay),
                        if ends.len() > 1 { "several clients" } else { "a client this server cannot trace" },
                        clients.join(", ")
                    ));
                }
            }
        }
    }

    fn describe(&self, end: &End) -> String {
        match end {
            End::Client(pid) => self.name(*pid),
            End::Remote(ip) => format!("host {ip}"),
            End::Relay(pid, inbound) => {
                format!(
                    "{}, relaying {} connections",
                    self.name(*pid),
                    inbound.len()
                )
            }
            End::Unknown(why) => why.clone(),
        }
    }

    /// A trace in words: its end, then the forwarders toward this server.
    fn describe_trace(&self, t: &Trace) -> String {
        let mut s = self.describe(&t.end);
        if !t.hops.is_empty() {
            let hops: Vec<String> = t.hops.iter().rev().map(|p| self.name(*p)).collect();
            s.push_str(&format!(" (relayed by {})", hops.join(" → ")));
        }
        s
    }

    /// The decision on two peers (the CPU connection's `a`, the claim's
    /// `b`).
    fn decide(&mut self, a: Peer, b: Peer, forwarded: bool) -> ClaimProof {
        let mut budget = MAX_TRACED;
        if let (Peer::Remote(x), Peer::Remote(y)) = (&a, &b) {
            return if x == y {
                ClaimProof::SameRemoteHost(*x)
            } else {
                ClaimProof::Mismatch(format!(
                    "it comes from host {y}, the debugger that received the offer is on host {x} \
                     (a client on another host is recognised by its address only: stock lldb sends \
                     nothing of the offered URL)"
                ))
            };
        }
        if !forwarded {
            return match (a, b) {
                (Peer::Process(x), Peer::Process(y)) if x == y => {
                    let inbound = self.accepted(x);
                    if inbound.is_empty() {
                        return ClaimProof::SameProcess(x);
                    }
                    match self.relay_origin(x, &inbound, &mut budget) {
                        Ok((relays, client)) => through(&relays, client),
                        Err(why) => ClaimProof::Mismatch(why),
                    }
                }
                (Peer::Process(x), Peer::Process(y)) => ClaimProof::Mismatch(format!(
                    "it comes from {}, the debugger that received the offer is {} (behind a \
                     forwarder, start gdbmux with --advertise naming it)",
                    self.name(y),
                    self.name(x)
                )),
                (a, b) => ClaimProof::Mismatch(format!(
                    "it comes from {}, the debugger that received the offer is {}",
                    self.describe_peer(&b),
                    self.describe_peer(&a)
                )),
            };
        }
        let ta = self.trace_peer(a, &mut budget);
        let tb = self.trace_peer(b, &mut budget);
        let client = match (&ta.end, &tb.end) {
            (End::Client(p), End::Client(q)) if p == q => ClaimProof::SameProcess(*p),
            (End::Remote(p), End::Remote(q)) if p == q => ClaimProof::SameRemoteHost(*p),
            (End::Relay(m, _), End::Relay(n, inbound)) if m == n => {
                let inbound = inbound.clone();
                match self.relay_origin(*n, &inbound, &mut budget) {
                    Ok((relays, client)) => {
                        let hops: Vec<u32> = tb.hops.iter().chain(&relays).copied().collect();
                        return through(&hops, client);
                    }
                    Err(why) => return ClaimProof::Mismatch(why),
                }
            }
            _ => {
                let remote = matches!(ta.end, End::Remote(_)) || matches!(tb.end, End::Remote(_));
                return ClaimProof::Mismatch(format!(
                    "it comes from {}, the debugger that received the offer is {}{}",
                    self.describe_trace(&tb),
                    self.describe_trace(&ta),
                    if remote {
                        " (a client on another host is recognised by its address only: stock lldb \
                         sends nothing of the offered URL)"
                    } else {
                        ""
                    }
                ));
            }
        };
        through(&tb.hops, client)
    }

    fn trace_peer(&mut self, p: Peer, budget: &mut usize) -> Trace {
        let end = match p {
            Peer::Process(pid) => return self.trace(pid, budget),
            Peer::Remote(ip) => End::Remote(ip),
            Peer::Unknown(why) => End::Unknown(why),
        };
        Trace {
            hops: Vec::new(),
            end,
        }
    }

    fn describe_peer(&self, p: &Peer) -> String {
        match p {
            Peer::Process(pid) => self.name(*pid),
            Peer::Remote(ip) => format!("host {ip}"),
            Peer::Unknown(why) => why.clone(),
        }
    }
}

/// Whether a socket listening on `listener` accepts connections to `a`.
fn accepts(listener: SocketAddr, a: SocketAddr) -> bool {
    listener.port() == a.port() && (listener.ip() == a.ip() || listener.ip().is_unspecified())
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

/// Every TCP socket in the network namespace whose `net` directory is
/// `net` (`/proc/net`: this server's; `/proc/PID/net`: that process's).
fn socket_table(net: &str) -> Vec<TcpSocket> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (file, v6) in [("tcp", false), ("tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(format!("{net}/{file}")) else {
            continue;
        };
        parse_socket_table(&text, v6, &mut out, &mut seen);
    }
    out
}

/// Appends the sockets of one `/proc/net/tcp{,6}` text to `out`, each
/// once (`seen`: the inodes in `out`). The kernel writes that file a page per `read(2)` and resumes the
/// next page by position in its socket hash, so while connections come and
/// go one text can list a socket twice (or skip one): seen with eight
/// tests opening connections at once, a forwarder's one relayed connection
/// listed three times made it a relay of three connections, and its claim
/// was refused. A socket is its inode; rows without one (inode 0:
/// `TIME_WAIT` and other ownerless states) are kept as they are.
fn parse_socket_table(text: &str, v6: bool, out: &mut Vec<TcpSocket>, seen: &mut HashSet<u64>) {
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(l), Some(r), Some(st), Some(ino)) = (f.get(1), f.get(2), f.get(3), f.get(9))
        else {
            continue;
        };
        if let (Some(local), Some(remote), Ok(inode)) =
            (parse_addr(l, v6), parse_addr(r, v6), ino.parse::<u64>())
        {
            if inode != 0 && !seen.insert(inode) {
                continue;
            }
            let state = match *st {
                "01" => TcpState::Established,
                "0A" => TcpState::Listen,
                _ => TcpState::Other,
            };
            out.push(TcpSocket {
                local,
                remote,
                state,
                inode,
            });
        }
    }
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

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
