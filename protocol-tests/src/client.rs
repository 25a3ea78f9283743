//! A blocking RSP client over TCP or a unix socket, written for tests.
//!
//! Every wait has a deadline ([`RspClient::timeout`], default 10 s) and a
//! missed deadline is an error that names what was awaited, so a silent stub
//! fails a test loudly instead of hanging it.
//!
//! ```no_run
//! use protocol_tests::client::RspClient;
//! let mut c = RspClient::connect("127.0.0.1:1234")?;
//! c.send_ack()?;
//! let features = c.request_str("qSupported:swbreak+")?;
//! c.start_no_ack()?;
//! let stop = c.stop_reply("?")?;
//! # let _ = (features, stop);
//! # Ok::<(), protocol_tests::client::ClientError>(())
//! ```

use std::collections::VecDeque;
use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::net::ToSocketAddrs;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use crate::framing;
use crate::framing::Frame;
use crate::framing::FrameDecoder;
use crate::reply::StopReply;

/// Default deadline for any single wait.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a packet is retransmitted after a `-` before giving up.
pub const MAX_RETRANSMITS: usize = 3;

/// Errors of the client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Socket error.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// Nothing arrived before the deadline.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The server closed the connection.
    #[error("connection closed by the server while waiting for {what}")]
    Closed {
        /// What was awaited.
        what: String,
    },
    /// The server NAKed a packet too often.
    #[error("packet {packet} was NAKed {count} times")]
    TooManyNaks {
        /// The packet, printable.
        packet: String,
        /// Number of NAKs received.
        count: usize,
    },
    /// A reply did not have the expected form.
    #[error("unexpected reply to {request}: {reply}")]
    Unexpected {
        /// The request, printable.
        request: String,
        /// The reply, printable.
        reply: String,
    },
    /// A reply could not be parsed.
    #[error("cannot parse reply to {request}: {source}")]
    Parse {
        /// The request, printable.
        request: String,
        /// Parser error.
        #[source]
        source: crate::reply::ParseError,
    },
}

/// Result alias for the client.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// Direction of a transcript entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    Sent,
    /// Server to client.
    Received,
}

/// One transcript line: a frame or raw bytes in one direction.
#[derive(Debug, Clone)]
pub struct TranscriptEntry {
    /// Direction.
    pub dir: Dir,
    /// Wire bytes (whole frame, including `$`/`#cs`).
    pub bytes: Vec<u8>,
}

/// A blocking RSP client.
#[derive(Debug)]
pub struct RspClient {
    stream: Stream,
    decoder: FrameDecoder,
    ack_mode: bool,
    timeout: Duration,
    notifications: VecDeque<Vec<u8>>,
    pending_acks: VecDeque<Frame>,
    transcript: Vec<TranscriptEntry>,
    last_reply_raw: Vec<u8>,
    echo: LldbEcho,
    /// What the client wrote, as frames ([`LldbEcho`] follows them).
    sent_frames: FrameDecoder,
}

/// How the client reads a second stop reply after its interrupts, as
/// stock lldb does (`GDBRemoteClientBase::ShouldStop`: after a `T`/`S`
/// stop reply read while an interrupt it sent during the run was pending,
/// lldb reads one more packet, up to 100 ms). gdbmux sends that second
/// reply to an all-stop client that speaks lldb's dialect (its
/// `qSupported`) unless `--no-lldb-interrupt-echo`: when the interrupt came
/// while the process ran (the stop reply twice), and when it came after
/// the stop reply to a resume, before any other packet (the stop reply
/// again, as debugserver answers an interrupt that finds the process
/// stopped). The client mirrors that rule and reads the second reply
/// where it comes, so it stays in step without waiting.
#[derive(Debug, Default)]
struct LldbEcho {
    /// Off: the client never expects a second reply
    /// ([`RspClient::set_lldb_echo`]: a gdbmux run with
    /// `--no-lldb-interrupt-echo`, or another server).
    off: bool,
    /// The last `qSupported` sent was lldb's (gdbmux's rule:
    /// `session/handlers/query.rs`, `handle_qsupported`).
    lldb: bool,
    /// `QNonStop:1` was sent last (no echo in non-stop).
    nonstop: bool,
    /// A resume was sent and no reply to it has been read yet.
    running: bool,
    /// An interrupt was sent while `running`.
    interrupted: bool,
    /// The last packet read was a `T`/`S` reply to a resume and no packet
    /// was sent since: an interrupt now is answered with it again.
    stop_unanswered: bool,
    /// Second replies read so far.
    read: u64,
}

impl LldbEcho {
    fn on(&self) -> bool {
        !self.off && self.lldb && !self.nonstop
    }

    /// A packet goes out.
    fn sent(&mut self, payload: &[u8]) {
        self.stop_unanswered = false;
        self.interrupted = false;
        if let Some(list) = payload.strip_prefix(b"qSupported") {
            let list = String::from_utf8_lossy(list);
            let features: Vec<&str> = list.trim_start_matches(':').split(';').collect();
            self.lldb = !features.contains(&"vContSupported+")
                && features.iter().any(|f| {
                    *f == "qXfer:libraries:read+"
                        || (f.starts_with("xmlRegisters=") && f.contains(','))
                });
        } else if payload == b"QNonStop:1" {
            self.nonstop = true;
        } else if payload == b"QNonStop:0" {
            self.nonstop = false;
        }
        self.running = is_resume(payload);
    }
}

/// The all-stop packets whose reply is a stop reply that comes when the
/// program stops.
fn is_resume(p: &[u8]) -> bool {
    match p.first() {
        Some(b'c' | b'C' | b's' | b'S') => true,
        Some(b'v') => p.starts_with(b"vCont;"),
        _ => false,
    }
}

impl RspClient {
    /// Connect over TCP (with the default timeout as connect deadline).
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Self> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, DEFAULT_TIMEOUT) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Ok(Self::from_stream(Stream::Tcp(s)));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last
            .unwrap_or_else(|| std::io::Error::other("address resolved to nothing"))
            .into())
    }

    /// Connect over a unix-domain stream socket.
    pub fn connect_unix(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::from_stream(Stream::Unix(UnixStream::connect(path)?)))
    }

    /// Wrap an already connected TCP stream.
    pub fn from_tcp(s: TcpStream) -> Result<Self> {
        s.set_nodelay(true)?;
        Ok(Self::from_stream(Stream::Tcp(s)))
    }

    fn from_stream(stream: Stream) -> Self {
        Self {
            stream,
            decoder: FrameDecoder::new(),
            ack_mode: true,
            timeout: DEFAULT_TIMEOUT,
            notifications: VecDeque::new(),
            pending_acks: VecDeque::new(),
            transcript: Vec::new(),
            last_reply_raw: Vec::new(),
            echo: LldbEcho::default(),
            sent_frames: FrameDecoder::new(),
        }
    }

    /// Whether this client reads the second stop reply gdbmux sends after
    /// an interrupt in lldb's dialect ([`LldbEcho`]); on by default. Turn
    /// it off against a server that does not send it (gdbmux with
    /// `--no-lldb-interrupt-echo`, lldb-server).
    pub fn set_lldb_echo(&mut self, on: bool) {
        self.echo.off = !on;
    }

    /// How many second stop replies (lldb's interrupt echo) were read.
    pub fn lldb_echoes_read(&self) -> u64 {
        self.echo.read
    }

    /// Current deadline for a single wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Change the deadline for a single wait.
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    /// Whether the client sends and expects `+` acks.
    pub fn ack_mode(&self) -> bool {
        self.ack_mode
    }

    /// Switch ack handling locally (no packet sent).
    pub fn set_ack_mode(&mut self, on: bool) {
        self.ack_mode = on;
    }

    /// Everything sent and received so far.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// Raw (undecoded) payload of the last received packet.
    pub fn last_reply_raw(&self) -> &[u8] {
        &self.last_reply_raw
    }

    /// Write bytes verbatim (framing tests, `+`, interrupts). The packets
    /// and interrupts in them are followed for lldb's interrupt echo
    /// ([`LldbEcho`]): in lldb's dialect an interrupt sent after the stop
    /// reply to a resume, before any other packet, is answered with that
    /// stop reply again, which is read here.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.transcript.push(TranscriptEntry {
            dir: Dir::Sent,
            bytes: bytes.to_vec(),
        });
        self.stream.write_all(bytes)?;
        self.sent_frames.push(bytes);
        let mut echo_due = false;
        while let Some(f) = self.sent_frames.next_frame() {
            match f {
                Frame::Packet {
                    raw,
                    checksum_ok: true,
                } => self.echo.sent(&raw),
                Frame::Interrupt if self.echo.on() => {
                    if self.echo.running {
                        self.echo.interrupted = true;
                    } else if std::mem::take(&mut self.echo.stop_unanswered) {
                        echo_due = true;
                    }
                }
                _ => {}
            }
        }
        if echo_due {
            self.read_echo()?;
        }
        Ok(())
    }

    /// Send a bare `+` (both clients start with one).
    pub fn send_ack(&mut self) -> Result<()> {
        self.send_raw(b"+")
    }

    /// Send the `0x03` interrupt byte ([`send_raw`](Self::send_raw)).
    pub fn interrupt(&mut self) -> Result<()> {
        self.send_raw(&[framing::INTERRUPT])
    }

    /// Read the second stop reply of an lldb interrupt ([`LldbEcho`]).
    fn read_echo(&mut self) -> Result<()> {
        let raw = self.recv_packet_raw(self.timeout)?;
        if !matches!(raw.first(), Some(b'T' | b'S')) {
            return Err(ClientError::Unexpected {
                request: "the second stop reply to an lldb interrupt".into(),
                reply: framing::printable(&raw),
            });
        }
        self.echo.read += 1;
        Ok(())
    }

    /// Read the next frame of any kind, waiting at most `timeout`.
    pub fn next_frame(&mut self, what: &str, timeout: Duration) -> Result<Frame> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(f) = self.decoder.next_frame() {
                let bytes = match &f {
                    Frame::Ack => b"+".to_vec(),
                    Frame::Nak => b"-".to_vec(),
                    Frame::Interrupt => vec![framing::INTERRUPT],
                    Frame::Stray(b) => vec![*b],
                    Frame::Packet { raw, .. } => framing::encode_packet(raw),
                    Frame::Notification { raw, .. } => framing::encode_notification(raw),
                };
                self.transcript.push(TranscriptEntry {
                    dir: Dir::Received,
                    bytes,
                });
                return Ok(f);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ClientError::Timeout {
                    what: what.to_string(),
                    after: timeout,
                });
            }
            self.stream.set_read_timeout(Some(deadline - now))?;
            let mut buf = [0u8; 65536];
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    return Err(ClientError::Closed {
                        what: what.to_string(),
                    })
                }
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Send a packet; in ack mode wait for `+`, retransmitting on `-`.
    pub fn send_packet(&mut self, payload: &[u8]) -> Result<()> {
        let frame = framing::encode_packet(payload);
        self.send_raw(&frame)?;
        if !self.ack_mode {
            return Ok(());
        }
        let mut naks = 0;
        loop {
            let what = format!("ack for {}", framing::printable(payload));
            match self.next_frame(&what, self.timeout)? {
                Frame::Ack => return Ok(()),
                Frame::Nak => {
                    naks += 1;
                    if naks > MAX_RETRANSMITS {
                        return Err(ClientError::TooManyNaks {
                            packet: framing::printable(payload),
                            count: naks,
                        });
                    }
                    self.send_raw(&frame)?;
                }
                // A reply arriving before its ack (some servers ack lazily): keep it.
                other => self.pending_acks.push_back(other),
            }
        }
    }

    /// Receive the next `$` packet (RLE expanded, escapes kept), acking it in
    /// ack mode and NAKing bad checksums. `%` notifications are queued.
    pub fn recv_packet(&mut self) -> Result<Vec<u8>> {
        self.recv_packet_within(self.timeout)
    }

    /// [`recv_packet`](Self::recv_packet) with an explicit deadline. The
    /// second stop reply of an lldb interrupt is read with its first
    /// ([`LldbEcho`]).
    pub fn recv_packet_within(&mut self, timeout: Duration) -> Result<Vec<u8>> {
        let p = self.recv_packet_raw(timeout)?;
        if !self.echo.on() || !self.echo.running {
            return Ok(p);
        }
        // `O` output comes before the stop reply; any other packet ends the
        // resume.
        if p.first() == Some(&b'O') && p != b"OK" {
            return Ok(p);
        }
        self.echo.running = false;
        if matches!(p.first(), Some(b'T' | b'S')) {
            if std::mem::take(&mut self.echo.interrupted) {
                let first = std::mem::take(&mut self.last_reply_raw);
                self.read_echo()?;
                self.last_reply_raw = first;
            } else {
                self.echo.stop_unanswered = true;
            }
        }
        Ok(p)
    }

    fn recv_packet_raw(&mut self, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            let f = match self.pending_acks.pop_front() {
                Some(f) => f,
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    self.next_frame("reply packet", left)?
                }
            };
            match f {
                Frame::Packet { raw, checksum_ok } => {
                    if !checksum_ok {
                        if self.ack_mode {
                            self.send_raw(b"-")?;
                        }
                        continue;
                    }
                    if self.ack_mode {
                        self.send_raw(b"+")?;
                    }
                    self.last_reply_raw = raw.clone();
                    return framing::rle_decode(&raw).map_err(|e| ClientError::Unexpected {
                        request: "(reply framing)".into(),
                        reply: format!("{e}: {}", framing::printable(&raw)),
                    });
                }
                Frame::Notification { raw, .. } => self.notifications.push_back(raw),
                // Stray acks (e.g. duplicates after no-ack switch) are ignored.
                Frame::Ack | Frame::Nak | Frame::Interrupt | Frame::Stray(_) => {}
            }
        }
    }

    /// Pop a queued `%` notification, waiting up to the timeout for one.
    pub fn recv_notification(&mut self) -> Result<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(n) = self.notifications.pop_front() {
                return Ok(n);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_frame("notification", left)? {
                Frame::Notification { raw, .. } => return Ok(raw),
                other => self.pending_acks.push_back(other),
            }
        }
    }

    /// Send a packet and return its reply payload.
    pub fn request(&mut self, payload: &[u8]) -> Result<Vec<u8>> {
        self.send_packet(payload)?;
        self.recv_packet()
    }

    /// [`request`](Self::request) with string in/out (lossy UTF-8).
    pub fn request_str(&mut self, payload: &str) -> Result<String> {
        let r = self.request(payload.as_bytes())?;
        Ok(String::from_utf8_lossy(&r).into_owned())
    }

    /// Send a request whose reply must be exactly `OK`.
    pub fn expect_ok(&mut self, payload: &str) -> Result<()> {
        let r = self.request_str(payload)?;
        if r == "OK" {
            Ok(())
        } else {
            Err(ClientError::Unexpected {
                request: payload.to_string(),
                reply: r,
            })
        }
    }

    /// `QStartNoAckMode`; on `OK` stop sending and expecting acks.
    pub fn start_no_ack(&mut self) -> Result<()> {
        self.expect_ok("QStartNoAckMode")?;
        self.ack_mode = false;
        Ok(())
    }

    /// Send `payload` (e.g. `?`, `vCont;c`) and collect `O` output packets
    /// until a stop reply arrives.
    pub fn stop_reply(&mut self, payload: &str) -> Result<(StopReply, Vec<u8>)> {
        self.send_packet(payload.as_bytes())?;
        self.wait_stop(payload)
    }

    /// Wait for a stop reply (after a resume or an interrupt), skipping
    /// `O` console output (which is returned alongside).
    pub fn wait_stop(&mut self, request: &str) -> Result<(StopReply, Vec<u8>)> {
        let mut output = Vec::new();
        loop {
            let raw = self.recv_packet()?;
            let parsed = StopReply::parse(&raw).map_err(|source| ClientError::Parse {
                request: request.to_string(),
                source,
            })?;
            match parsed {
                StopReply::Output(bytes) => output.extend(bytes),
                stop => return Ok((stop, output)),
            }
        }
    }

    /// The gdb 13 handshake: `+`, `qSupported`, `vMustReplyEmpty`,
    /// `QStartNoAckMode` (if offered). Returns the qSupported reply.
    pub fn handshake_gdb(&mut self) -> Result<crate::reply::Features> {
        self.send_ack()?;
        let q = self.request_str(crate::GDB_QSUPPORTED)?;
        let features =
            crate::reply::Features::parse(q.as_bytes()).map_err(|source| ClientError::Parse {
                request: "qSupported".into(),
                source,
            })?;
        let empty = self.request_str("vMustReplyEmpty")?;
        if !empty.is_empty() {
            return Err(ClientError::Unexpected {
                request: "vMustReplyEmpty".into(),
                reply: empty,
            });
        }
        if features.supports("QStartNoAckMode") {
            self.start_no_ack()?;
        }
        Ok(features)
    }

    /// The lldb 23 handshake: `+`, `QStartNoAckMode` first, then `qSupported`.
    pub fn handshake_lldb(&mut self) -> Result<crate::reply::Features> {
        self.send_ack()?;
        self.start_no_ack()?;
        let q = self.request_str(crate::LLDB_QSUPPORTED)?;
        crate::reply::Features::parse(q.as_bytes()).map_err(|source| ClientError::Parse {
            request: "qSupported".into(),
            source,
        })
    }
}
