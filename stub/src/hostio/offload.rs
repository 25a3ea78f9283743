//! `vFile` operations off the loop.
//!
//! A `pread` of a regular file on a slow file system (NFS, a FUSE mount, a
//! disk that stalls) blocks in the kernel, `O_NONBLOCK` or not. So the
//! server runs every `vFile` operation that might wait on a file system on
//! a small pool of worker threads (the session answers the others itself:
//! `setfs`, and `fstat`, `close` and page-cached `pread`s of files on a
//! local file system, `HostIo::handle_inline`):
//! the session hands its [`HostIo`] (behind a mutex only the workers lock)
//! and the packet's arguments to [`Handle::submit`], holds the client's
//! further input (the protocol waits for the reply anyway), and the worker
//! queues the reply and wakes the loop through a [`mio::Waker`] registered
//! in the one poll. The loop then delivers it ([`Offload::take_done`],
//! `Session::on_vfile_done`), and the session goes on with its held input.
//!
//! Bounds: [`WORKERS`] threads; at most [`MAX_OUTSTANDING`] requests queued
//! or running in all (each session has at most one: it waits for its
//! reply); one more is answered `F-1,10` (`EBUSY`) at once. A worker stuck
//! on a file that never answers keeps its session waiting, nothing else;
//! every other session's packets, `vFile` included while fewer than
//! [`WORKERS`] are stuck, are served.
//!
//! Test hook: with `GDBMUX_TEST_HOSTIO_GATE=FIFO` in gdbmux's environment, a
//! `pread` of a file whose path contains `gdbmux-slow` first reads one byte
//! from FIFO on its worker, so a test decides when the "slow file" answers
//! (`stub/tests/hostile.rs`). Nothing else reads that variable.

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::sync::Mutex;

use super::HostIo;

/// Worker threads.
pub const WORKERS: usize = 4;

/// Most `vFile` requests queued or running at once (all sessions).
pub const MAX_OUTSTANDING: usize = 64;

/// The test hook's environment variable.
pub const GATE_ENV: &str = "GDBMUX_TEST_HOSTIO_GATE";

/// A session's host I/O state, shared with the worker running its request.
pub type SharedHostIo = Arc<Mutex<HostIo>>;

struct Job {
    session: u64,
    seq: u64,
    io: SharedHostIo,
    args: Vec<u8>,
}

/// A finished request: the reply payload for `session`'s request `seq`.
#[derive(Debug)]
pub struct Done {
    /// The session's id.
    pub session: u64,
    /// The request's number within the session.
    pub seq: u64,
    /// The `vFile` reply payload.
    pub reply: Vec<u8>,
}

struct Shared {
    done: Mutex<VecDeque<Done>>,
    outstanding: AtomicUsize,
    waker: mio::Waker,
    gate: Option<std::path::PathBuf>,
}

/// The pool, owned by the server.
pub struct Offload {
    handle: Handle,
}

/// What a session keeps to submit requests.
#[derive(Clone)]
pub struct Handle {
    tx: mpsc::SyncSender<Job>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field(
                "outstanding",
                &self.shared.outstanding.load(Ordering::Relaxed),
            )
            .finish()
    }
}

/// The pool is full: the request was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

impl Offload {
    /// Starts the workers; `waker` wakes the loop when a reply is ready.
    pub fn start(waker: mio::Waker) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<Job>(MAX_OUTSTANDING);
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            done: Mutex::new(VecDeque::new()),
            outstanding: AtomicUsize::new(0),
            waker,
            gate: std::env::var_os(GATE_ENV).map(Into::into),
        });
        for i in 0..WORKERS {
            let rx = rx.clone();
            let shared = shared.clone();
            // Detached: a worker stuck on a file must not hold up exit.
            std::thread::Builder::new()
                .name(format!("gdbmux-vfile-{i}"))
                .spawn(move || worker(&rx, &shared))?;
        }
        Ok(Self {
            handle: Handle { tx, shared },
        })
    }

    /// A handle for a session.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// The replies ready now (the waker's event).
    pub fn take_done(&self) -> Vec<Done> {
        lock(&self.handle.shared.done).drain(..).collect()
    }
}

impl Handle {
    /// Whether a session may answer a request on the loop when it cannot
    /// block (`HostIo::handle_inline`): always, except with the test hook
    /// set, whose gated `pread`s must reach a worker.
    pub fn inline_allowed(&self) -> bool {
        self.shared.gate.is_none()
    }

    /// Queues `args` (the bytes after `vFile:`) for `io`; the reply comes
    /// back as a [`Done`] with `session` and `seq`.
    pub fn submit(
        &self,
        session: u64,
        seq: u64,
        io: SharedHostIo,
        args: Vec<u8>,
    ) -> Result<(), Busy> {
        let n = self.shared.outstanding.fetch_add(1, Ordering::SeqCst);
        if n >= MAX_OUTSTANDING {
            self.shared.outstanding.fetch_sub(1, Ordering::SeqCst);
            return Err(Busy);
        }
        let job = Job {
            session,
            seq,
            io,
            args,
        };
        self.tx.try_send(job).map_err(|_| {
            self.shared.outstanding.fetch_sub(1, Ordering::SeqCst);
            Busy
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn worker(rx: &Mutex<mpsc::Receiver<Job>>, shared: &Shared) {
    loop {
        // One worker waits on the channel at a time; the others wait for
        // the lock. The server dropping its sender ends them all.
        let job = match lock(rx).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let reply = {
            let mut io = lock(&job.io);
            if let Some(gate) = &shared.gate {
                test_gate(&io, &job.args, gate);
            }
            io.handle(&job.args)
        };
        lock(&shared.done).push_back(Done {
            session: job.session,
            seq: job.seq,
            reply,
        });
        shared.outstanding.fetch_sub(1, Ordering::SeqCst);
        if let Err(e) = shared.waker.wake() {
            tracing::error!(target: "session", "waking the loop for a vFile reply: {e}");
        }
    }
}

/// The test hook (see the module comment).
fn test_gate(io: &HostIo, args: &[u8], gate: &std::path::Path) {
    use std::io::Read;
    let Some(fd) = args
        .strip_prefix(b"pread:")
        .and_then(|r| r.split(|&b| b == b',').next())
        .and_then(crate::wire::hex::parse_u64)
        .and_then(|v| i32::try_from(v).ok())
    else {
        return;
    };
    if !io.is_open(fd) {
        return;
    }
    let slow = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|p| p.to_string_lossy().contains("gdbmux-slow"))
        .unwrap_or(false);
    if slow {
        tracing::info!(target: "session", fd, "test hook: pread waits for the gate");
        let mut b = [0u8; 1];
        let _ = std::fs::File::open(gate).and_then(|mut f| f.read(&mut b));
    }
}
