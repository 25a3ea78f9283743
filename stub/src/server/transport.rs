//! Connection transports: TCP (IPv4/IPv6), unix socket, stdio.

use std::io;
use std::io::Read;
use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::fd::RawFd;
use std::path::PathBuf;

use mio::net::TcpListener;
use mio::net::TcpStream;
use mio::net::UnixListener;
use mio::net::UnixStream;

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// TCP `HOST:PORT`.
    Tcp(SocketAddr),
    /// Unix socket path.
    Unix(PathBuf),
    /// One session on stdin/stdout (`-`).
    Stdio,
}

impl ListenAddr {
    /// Parse gdbserver-style COMM: `HOST:PORT`, `:PORT` (binds 127.0.0.1),
    /// `[::1]:PORT`, `unix:PATH` or a path with `/`, or `-`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "-" || s == "stdio" {
            return Ok(ListenAddr::Stdio);
        }
        if let Some(p) = s.strip_prefix("unix:") {
            return Ok(ListenAddr::Unix(PathBuf::from(p)));
        }
        if s.starts_with('/') || s.starts_with("./") {
            return Ok(ListenAddr::Unix(PathBuf::from(s)));
        }
        let s2 = if let Some(port) = s.strip_prefix(':').filter(|p| !p.contains(':')) {
            format!("127.0.0.1:{port}")
        } else if let Some(port) = s.strip_prefix("localhost:") {
            format!("127.0.0.1:{port}")
        } else {
            s.to_string()
        };
        if let Ok(a) = s2.parse::<SocketAddr>() {
            return Ok(ListenAddr::Tcp(a));
        }
        // gdb's parse_connection_spec: more than one ':' without brackets
        // is an IPv6 host before the last ':' (`::1:2345`); any other host
        // name is resolved (gdbserver: getaddrinfo).
        let (host, port) = s2.rsplit_once(':').ok_or_else(|| {
            format!("bad listen address '{s}' (expected HOST:PORT, :PORT, unix:PATH or -)")
        })?;
        let port: u16 = port
            .parse()
            .map_err(|e| format!("bad port in listen address '{s}': {e}"))?;
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return Ok(ListenAddr::Tcp(SocketAddr::new(ip, port)));
        }
        use std::net::ToSocketAddrs;
        (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{s}: cannot resolve name: {e}"))?
            .next()
            .map(ListenAddr::Tcp)
            .ok_or_else(|| format!("{s}: cannot resolve name: no address"))
    }
}

/// A bound listener.
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix socket (path removed on drop).
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Bind.
    pub fn bind(addr: &ListenAddr) -> io::Result<Self> {
        match addr {
            ListenAddr::Tcp(a) => Ok(Listener::Tcp(TcpListener::bind(*a)?)),
            ListenAddr::Unix(p) => {
                if p.exists() {
                    // A stale socket from an earlier run.
                    let _ = std::fs::remove_file(p);
                }
                Ok(Listener::Unix(UnixListener::bind(p)?, p.clone()))
            }
            ListenAddr::Stdio => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "stdio has no listener",
            )),
        }
    }

    /// Human/URL form of the bound address (`127.0.0.1:4321`,
    /// `unix:/tmp/s`).
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
        }
    }

    /// Accept one connection (non-blocking).
    pub fn accept(&self) -> io::Result<(Conn, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                let _ = s.set_nodelay(true);
                Ok((Conn::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                Ok((Conn::Unix(s), "unix".to_string()))
            }
        }
    }

    /// mio source.
    pub fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Listener::Tcp(l) => l,
            Listener::Unix(l, _) => l,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// One client connection.
pub enum Conn {
    /// TCP stream.
    Tcp(TcpStream),
    /// Unix stream.
    Unix(UnixStream),
    /// stdin/stdout.
    Stdio,
}

impl Conn {
    /// Read side fd (for registration).
    pub fn read_fd(&self) -> RawFd {
        match self {
            Conn::Tcp(s) => s.as_raw_fd(),
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Stdio => 0,
        }
    }

    /// Non-blocking read.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
            Conn::Stdio => nix::unistd::read(0, buf).map_err(io::Error::from),
        }
    }

    /// Non-blocking write.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
            Conn::Stdio => {
                let out = std::io::stdout();
                let mut lock = out.lock();
                let n = lock.write(buf)?;
                lock.flush()?;
                Ok(n)
            }
        }
    }

    /// Local address the client connected to (TCP), for advertising URLs.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Conn::Tcp(s) => s.local_addr().ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Safe default: only an explicit host binds beyond the loopback.
    #[test]
    fn default_bind_is_loopback() {
        let lo = |port: u16| ListenAddr::Tcp(SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(ListenAddr::parse(":2345").unwrap(), lo(2345));
        assert_eq!(ListenAddr::parse("localhost:2345").unwrap(), lo(2345));
        assert_eq!(ListenAddr::parse(":0").unwrap(), lo(0));
        assert_eq!(
            ListenAddr::parse("0.0.0.0:2345").unwrap(),
            ListenAddr::Tcp(SocketAddr::from(([0, 0, 0, 0], 2345)))
        );
        assert!(
            ListenAddr::parse("2345").is_err(),
            "a bare port is ambiguous"
        );
        assert_eq!(
            ListenAddr::parse("unix:/tmp/s").unwrap(),
            ListenAddr::Unix(PathBuf::from("/tmp/s"))
        );
        assert_eq!(
            ListenAddr::parse("::1:2345").unwrap(),
            ListenAddr::Tcp("[::1]:2345".parse().unwrap())
        );
    }
}
