//! `vFile:` packets: gdb's [Host I/O], which lets the debugger read the
//! executable, the shared libraries and `/proc` files of the target host.
//!
//! gdb opens the executable and every library over `vFile:setfs`, `open`,
//! `pread`, `fstat` and `close` (60–80 packets per session in our traces);
//! lldb uses the same packets plus its `size`, `exists` and `MD5`
//! extensions. [`HostIo`] keeps the per-connection state (the open file
//! table and the `setfs` namespace) and turns the arguments after `vFile:`
//! into a reply payload.
//!
//! Replies follow the [F reply] form: `F<result>` on success, with
//! `;<attachment>` for calls that return data, and `F-1,<errno>` on failure.
//! All numbers, errno included, are hex; errno values are the
//! [protocol-specific] ones ([`FileioErrno`]), not the host's.
//!
//! Attachments (file data, link targets, `struct stat`) are put into the
//! payload **unescaped**: the `wire` encoder escapes the whole payload (see
//! the [escaping contract](crate::wire#escaping-contract)). Likewise the data
//! of `pwrite` arrives already unescaped by the framer.
//!
//! ```
//! use stub::hostio::HostIo;
//! use stub::wire::hex;
//!
//! let mut io = HostIo::new();
//! let mut open = b"open:".to_vec();
//! hex::encode(b"/nonexistent/file", &mut open);
//! open.extend_from_slice(b",0,0");
//! assert_eq!(io.handle(&open), b"F-1,2"); // ENOENT
//! assert_eq!(io.handle(b"close:5"), b"F-1,9"); // EBADF
//! assert_eq!(io.handle(b"frobnicate:1"), b""); // unknown: empty reply
//! ```
//!
//! [Host I/O]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Host-I_002fO-Packets.html
//! [F reply]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/The-F-Reply-Packet.html
//! [protocol-specific]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Errno-Values.html
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::File;
use std::fs::OpenOptions;
use std::io;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use tracing::debug;

use crate::wire::hex;
use crate::wire::needs_escape;
use crate::wire::DEFAULT_MAX_PACKET;

/// The tracing target of this module.
const LOG_TARGET: &str = "gdb_remote::hostio";

/// Files one connection may hold open at once; more give `EMFILE`.
pub const MAX_OPEN_FILES: usize = 64;

/// The most bytes one `pread` reads, whatever the client asks for.
///
/// gdb asks for as much as a packet holds (about 1 MiB here) and keeps
/// what comes back as a one-block read-ahead cache, while its reads of
/// shared libraries and their separate debug info are small and scattered:
/// each miss then moved up to 128 KiB, and stock gdb's set-up to the first
/// breakpoint took 1.4× gdbserver's time and 3000 `stepi` 2.2× (gdb reads
/// debug info lazily while stepping). gdbserver's replies hold what fits in
/// its 18 KiB packet buffer once escaped (gdb asks it for `0x47ff` bytes
/// against its `PacketSize=4800`; replies of `0x46ce`–`0x47ff` bytes in
/// gdb's log); so do ours ([`PREAD_WIRE_BUDGET`]): with 16 KiB replies gdb
/// needed 46 `pread`s to gdbserver's 41 for the same set-up.
pub const MAX_PREAD: u64 = 0x47ff;

/// The most bytes a `pread` reply's data may take on the wire once
/// escaped: gdbserver's packet buffer (`PBUFSIZ`, 0x4800) less room for
/// `F<count>;` and the frame.
const PREAD_WIRE_BUDGET: usize = 0x4800 - REPLY_HEADER_ROOM;

/// Room kept in a `pread` reply for `F<count>;` and the frame.
const REPLY_HEADER_ROOM: usize = 32;

/// Size of gdb's protocol `struct stat`.
const FILEIO_STAT_SIZE: usize = 64;

/// Error numbers as the File-I/O protocol defines them ([Errno Values]).
///
/// [Errno Values]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Errno-Values.html
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // The names are the C errno names.
pub enum FileioErrno {
    Eperm = 1,
    Enoent = 2,
    Eintr = 4,
    Ebadf = 9,
    Eacces = 13,
    Efault = 14,
    Ebusy = 16,
    Eexist = 17,
    Enodev = 19,
    Enotdir = 20,
    Eisdir = 21,
    Einval = 22,
    Enfile = 23,
    Emfile = 24,
    Efbig = 27,
    Enospc = 28,
    Espipe = 29,
    Erofs = 30,
    Enametoolong = 91,
    Eunknown = 9999,
}

impl FileioErrno {
    /// The protocol value (written in hex on the wire).
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Translates a host error. Host errnos without a protocol value, and
    /// errors that carry no errno, become [`FileioErrno::Eunknown`] (or the
    /// closest [`io::ErrorKind`] match).
    pub fn from_io(e: &io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EPERM) => Self::Eperm,
            Some(libc::ENOENT) => Self::Enoent,
            Some(libc::EINTR) => Self::Eintr,
            Some(libc::EBADF) => Self::Ebadf,
            Some(libc::EACCES) => Self::Eacces,
            Some(libc::EFAULT) => Self::Efault,
            Some(libc::EBUSY) => Self::Ebusy,
            Some(libc::EEXIST) => Self::Eexist,
            Some(libc::ENODEV) => Self::Enodev,
            Some(libc::ENOTDIR) => Self::Enotdir,
            Some(libc::EISDIR) => Self::Eisdir,
            Some(libc::EINVAL) => Self::Einval,
            Some(libc::ENFILE) => Self::Enfile,
            Some(libc::EMFILE) => Self::Emfile,
            Some(libc::EFBIG) => Self::Efbig,
            Some(libc::ENOSPC) => Self::Enospc,
            Some(libc::ESPIPE) => Self::Espipe,
            Some(libc::EROFS) => Self::Erofs,
            Some(libc::ENAMETOOLONG) => Self::Enametoolong,
            Some(_) => Self::Eunknown,
            None => match e.kind() {
                io::ErrorKind::NotFound => Self::Enoent,
                io::ErrorKind::PermissionDenied => Self::Eacces,
                io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => Self::Einval,
                io::ErrorKind::UnexpectedEof => Self::Einval,
                _ => Self::Eunknown,
            },
        }
    }
}

/// `open` flags as the protocol defines them ([Open Flags]), plus the
/// extension bits lldb sends ([lldb `File::OpenOptions`]).
///
/// [Open Flags]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/Open-Flags.html
/// [lldb `File::OpenOptions`]: https://github.com/llvm/llvm-project/blob/main/lldb/include/lldb/Host/File.h
mod open_flags {
    pub const ACCMODE: u32 = 0x3;
    pub const RDONLY: u32 = 0x0;
    pub const WRONLY: u32 = 0x1;
    pub const RDWR: u32 = 0x2;
    pub const APPEND: u32 = 0x8;
    pub const CREAT: u32 = 0x200;
    pub const TRUNC: u32 = 0x400;
    pub const EXCL: u32 = 0x800;
    /// lldb `eOpenOptionNonBlocking`.
    pub const LLDB_NONBLOCK: u32 = 1 << 28;
    /// lldb `eOpenOptionDontFollowSymlinks`.
    pub const LLDB_NOFOLLOW: u32 = 1 << 29;
    /// lldb `eOpenOptionCloseOnExec` (we always open close-on-exec).
    pub const LLDB_CLOEXEC: u32 = 1 << 30;
    pub const KNOWN: u32 =
        ACCMODE | APPEND | CREAT | TRUNC | EXCL | LLDB_NONBLOCK | LLDB_NOFOLLOW | LLDB_CLOEXEC;
}

/// One parsed `vFile:` request.
///
/// ```text
/// open:<path hex>,<flags>,<mode>   close:<fd>    pread:<fd>,<count>,<offset>
/// pwrite:<fd>,<offset>,<binary>    fstat:<fd>    unlink:<path hex>
/// readlink:<path hex>              setfs:<pid>
/// size:<path hex>   exists:<path hex>   MD5:<path hex>     (lldb)
/// ```
/// Numbers are hex. `fd` and `pid` must fit in an `i32`/`u32`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// `open:path,flags,mode`
    Open {
        /// The path, hex-decoded.
        path: Vec<u8>,
        /// Protocol open flags.
        flags: u32,
        /// Permission bits for a created file.
        mode: u32,
    },
    /// `close:fd`
    Close {
        /// The descriptor.
        fd: i32,
    },
    /// `pread:fd,count,offset`
    Pread {
        /// The descriptor.
        fd: i32,
        /// Bytes wanted.
        count: u64,
        /// File offset.
        offset: u64,
    },
    /// `pwrite:fd,offset,data`
    Pwrite {
        /// The descriptor.
        fd: i32,
        /// File offset.
        offset: u64,
        /// The bytes to write (already unescaped).
        data: &'a [u8],
    },
    /// `fstat:fd`
    Fstat {
        /// The descriptor.
        fd: i32,
    },
    /// `unlink:path`
    Unlink {
        /// The path, hex-decoded.
        path: Vec<u8>,
    },
    /// `readlink:path`
    Readlink {
        /// The path, hex-decoded.
        path: Vec<u8>,
    },
    /// `setfs:pid` (0: the stub's own filesystem)
    Setfs {
        /// The process whose mount namespace later paths resolve in.
        pid: u32,
    },
    /// lldb `size:path`
    Size {
        /// The path, hex-decoded.
        path: Vec<u8>,
    },
    /// lldb `exists:path`
    Exists {
        /// The path, hex-decoded.
        path: Vec<u8>,
    },
    /// lldb `MD5:path`
    Md5 {
        /// The path, hex-decoded.
        path: Vec<u8>,
    },
}

/// Why a `vFile:` request could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not an operation we implement: the reply is empty.
    #[error("unsupported vFile operation {0:?}")]
    Unsupported(String),
    /// A known operation with malformed arguments: the reply is `EINVAL`.
    #[error("malformed vFile:{op} arguments")]
    Malformed {
        /// The operation name.
        op: &'static str,
    },
}

impl<'a> Request<'a> {
    /// Parses the bytes after `vFile:`.
    pub fn parse(args: &'a [u8]) -> Result<Self, ParseError> {
        let (name, rest) = match args.iter().position(|&b| b == b':') {
            Some(i) => (args.get(..i).unwrap_or_default(), args.get(i + 1..)),
            None => (args, None),
        };
        let op: &'static str = match name {
            b"open" => "open",
            b"close" => "close",
            b"pread" => "pread",
            b"pwrite" => "pwrite",
            b"fstat" => "fstat",
            b"unlink" => "unlink",
            b"readlink" => "readlink",
            b"setfs" => "setfs",
            b"size" => "size",
            b"exists" => "exists",
            b"MD5" => "MD5",
            other => {
                return Err(ParseError::Unsupported(
                    String::from_utf8_lossy(other).into_owned(),
                ))
            }
        };
        let malformed = || ParseError::Malformed { op };
        let rest = rest.ok_or_else(malformed)?;
        let fd = |s: &[u8]| {
            hex::parse_u64(s)
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(malformed)
        };
        let num = |s: &[u8]| hex::parse_u64(s).ok_or_else(malformed);
        let path = |s: &[u8]| hex::decode(s).ok_or_else(malformed);
        let fields = |n: usize| {
            let v: Vec<&[u8]> = rest.splitn(n, |&b| b == b',').collect();
            if v.len() == n {
                Ok(v)
            } else {
                Err(malformed())
            }
        };
        Ok(match op {
            "open" => match fields(3)?.as_slice() {
                [p, f, m] => Request::Open {
                    path: path(p)?,
                    flags: u32::try_from(num(f)?).map_err(|_| malformed())?,
                    mode: u32::try_from(num(m)?).map_err(|_| malformed())?,
                },
                _ => return Err(malformed()),
            },
            "close" => Request::Close { fd: fd(rest)? },
            "pread" => match fields(3)?.as_slice() {
                [f, c, o] => Request::Pread {
                    fd: fd(f)?,
                    count: num(c)?,
                    offset: num(o)?,
                },
                _ => return Err(malformed()),
            },
            // The data is binary and may contain commas: split twice only.
            "pwrite" => match fields(3)?.as_slice() {
                [f, o, data] => Request::Pwrite {
                    fd: fd(f)?,
                    offset: num(o)?,
                    data,
                },
                _ => return Err(malformed()),
            },
            "fstat" => Request::Fstat { fd: fd(rest)? },
            "unlink" => Request::Unlink { path: path(rest)? },
            "readlink" => Request::Readlink { path: path(rest)? },
            "setfs" => Request::Setfs {
                pid: u32::try_from(num(rest)?).map_err(|_| malformed())?,
            },
            "size" => Request::Size { path: path(rest)? },
            "exists" => Request::Exists { path: path(rest)? },
            _ => Request::Md5 { path: path(rest)? },
        })
    }
}

/// Host I/O state of one connection: open files and the `setfs` namespace.
#[derive(Debug, Default)]
pub struct HostIo {
    /// Open files by the descriptor number the client sees (the host fd).
    files: BTreeMap<i32, File>,
    /// `setfs` process; `None` is the stub's own filesystem.
    fs_pid: Option<u32>,
    /// Open files on a local disk or memory file system
    /// ([`is_local_fs`]), whose `fstat`, `close` and cached `pread` never
    /// wait for a device or a server: [`HostIo::handle_inline`] serves them.
    local: BTreeSet<i32>,
}

/// What a handler produces before it becomes a payload.
type HostResult = Result<Vec<u8>, FileioErrno>;

impl HostIo {
    /// No open files, the stub's own filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many files the client holds open.
    pub fn open_files(&self) -> usize {
        self.files.len()
    }

    /// Whether `fd` is one of the client's open files.
    pub fn is_open(&self, fd: i32) -> bool {
        self.files.contains_key(&fd)
    }

    /// Handles the bytes after `vFile:` and returns the reply payload:
    /// `F<result>[;<attachment>]`, `F-1,<errno>`, or empty for an operation
    /// we do not implement. Malformed arguments give `F-1,16` (`EINVAL`).
    pub fn handle(&mut self, args: &[u8]) -> Vec<u8> {
        let request = match Request::parse(args) {
            Ok(r) => r,
            Err(e @ ParseError::Unsupported(_)) => {
                debug!(target: LOG_TARGET, "{e}");
                return Vec::new();
            }
            Err(e @ ParseError::Malformed { .. }) => {
                debug!(target: LOG_TARGET, "{e}");
                return error_reply(FileioErrno::Einval);
            }
        };
        let result = self.execute(&request);
        match (&request, &result) {
            // Do not dump the written data into the log.
            (Request::Pwrite { fd, offset, data }, _) => {
                debug!(target: LOG_TARGET, fd, offset, len = data.len(), ok = result.is_ok(), "vFile:pwrite");
            }
            (_, Err(errno)) => debug!(target: LOG_TARGET, ?request, ?errno, "vFile failed"),
            (_, Ok(_)) => debug!(target: LOG_TARGET, ?request, "vFile"),
        }
        result.unwrap_or_else(error_reply)
    }

    /// The reply to the bytes after `vFile:` when it can be given without
    /// waiting on a file system (on the server's loop, no worker
    /// hand-off); `None` when the request must go to a worker
    /// ([`offload`]). Served here: `setfs` (a `stat` of `/proc/PID/root`),
    /// and on files of a local file system ([`is_local_fs`]) `fstat`,
    /// `close` and a `pread` whose data is all in the page cache (read
    /// with `RWF_NOWAIT`, which fails with `EAGAIN` rather than start I/O).
    /// Each worker hand-off costs two thread wake-ups: on an idle 16-core
    /// host 20–40 µs warm and 200–450 µs when the worker slept (a `setfs`
    /// took 416–472 µs to gdbserver's 20 µs in gdb's timestamped log).
    pub fn handle_inline(&mut self, args: &[u8]) -> Option<Vec<u8>> {
        let request = Request::parse(args).ok()?;
        match &request {
            Request::Setfs { .. } => {}
            Request::Fstat { fd } | Request::Close { fd } if self.local.contains(fd) => {}
            Request::Pread { fd, count, offset } if self.local.contains(fd) => {
                return self.pread_cached(*fd, *count, *offset);
            }
            _ => return None,
        }
        Some(self.handle(args))
    }

    /// A `pread` served from the page cache alone, or `None` (the data, or
    /// part of it, is not cached: a worker reads it).
    fn pread_cached(&self, fd: i32, count: u64, offset: u64) -> Option<Vec<u8>> {
        use rustix::io::ReadWriteFlags;
        let file = self.files.get(&fd)?;
        let count = usize::try_from(count.min(MAX_PREAD)).ok()?;
        let mut buf = vec![0u8; count];
        let mut filled = 0;
        while let Some(dest) = buf.get_mut(filled..).filter(|d| !d.is_empty()) {
            let at = offset.checked_add(filled as u64)?;
            match rustix::io::preadv2(
                file,
                &mut [io::IoSliceMut::new(dest)],
                at,
                ReadWriteFlags::NOWAIT,
            ) {
                // End of file (a cached page past the end reads 0 too).
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                // EAGAIN (not cached), EOPNOTSUPP (no RWF_NOWAIT here), or a
                // real error: the worker's plain read decides.
                Err(_) => return None,
            }
        }
        buf.truncate(filled);
        debug!(target: LOG_TARGET, fd, offset, len = filled, "vFile:pread from the page cache");
        Some(pread_reply(buf))
    }

    fn execute(&mut self, request: &Request<'_>) -> HostResult {
        match request {
            Request::Open { path, flags, mode } => self.open(path, *flags, *mode),
            Request::Close { fd } => {
                self.files.remove(fd).ok_or(FileioErrno::Ebadf)?;
                self.local.remove(fd);
                Ok(result_reply(0))
            }
            Request::Pread { fd, count, offset } => self.pread(*fd, *count, *offset),
            Request::Pwrite { fd, offset, data } => {
                let file = self.file(*fd)?;
                file.write_all_at(data, *offset).map_err(io_errno)?;
                Ok(result_reply(data.len() as u64))
            }
            Request::Fstat { fd } => {
                let meta = self.file(*fd)?.metadata().map_err(io_errno)?;
                let stat = fileio_stat(&meta);
                let mut reply = result_reply(stat.len() as u64);
                reply.push(b';');
                reply.extend_from_slice(&stat);
                Ok(reply)
            }
            Request::Unlink { path } => {
                std::fs::remove_file(self.resolve(path)).map_err(io_errno)?;
                Ok(result_reply(0))
            }
            Request::Readlink { path } => {
                let target = std::fs::read_link(self.resolve(path)).map_err(io_errno)?;
                let bytes = target.as_os_str().as_bytes();
                let mut reply = result_reply(bytes.len() as u64);
                reply.push(b';');
                reply.extend_from_slice(bytes);
                Ok(reply)
            }
            Request::Setfs { pid } => self.setfs(*pid),
            Request::Size { path } => {
                let meta = std::fs::metadata(self.resolve(path)).map_err(io_errno)?;
                Ok(result_reply(meta.len()))
            }
            // lldb's format: `F,1` or `F,0`; an error reads as "no".
            Request::Exists { path } => Ok(match self.resolve(path).try_exists() {
                Ok(true) => b"F,1".to_vec(),
                _ => b"F,0".to_vec(),
            }),
            // lldb's format: `F,<32 hex digits>`, or `F,x` on failure.
            Request::Md5 { path } => Ok(match md5_file(&self.resolve(path)) {
                Ok(digest) => {
                    let mut reply = b"F,".to_vec();
                    hex::encode(&digest, &mut reply);
                    reply
                }
                Err(e) => {
                    debug!(target: LOG_TARGET, "MD5: {e}");
                    b"F,x".to_vec()
                }
            }),
        }
    }

    fn file(&self, fd: i32) -> Result<&File, FileioErrno> {
        self.files.get(&fd).ok_or(FileioErrno::Ebadf)
    }

    /// Maps a client path into the `setfs` namespace. With a process
    /// selected, absolute paths go through `/proc/PID/root` and relative ones
    /// through `/proc/PID/cwd`.
    ///
    /// Limitation: unlike gdbserver, which enters the mount namespace with
    /// `setns`, absolute symlinks *inside* the path are resolved against our
    /// own root. That matters only for containers; the common case (same
    /// namespace) is exact.
    fn resolve(&self, path: &[u8]) -> PathBuf {
        let os = OsStr::from_bytes(path);
        match self.fs_pid {
            None => PathBuf::from(os),
            Some(pid) => {
                let mut full = match path.strip_prefix(b"/") {
                    Some(rel) => {
                        let mut p = PathBuf::from(format!("/proc/{pid}/root"));
                        p.push(OsStr::from_bytes(rel));
                        return p;
                    }
                    None => PathBuf::from(format!("/proc/{pid}/cwd")),
                };
                full.push(os);
                full
            }
        }
    }

    fn setfs(&mut self, pid: u32) -> HostResult {
        if pid == 0 || pid == std::process::id() {
            self.fs_pid = None;
            return Ok(result_reply(0));
        }
        // Fail now rather than on every later open.
        std::fs::metadata(format!("/proc/{pid}/root")).map_err(io_errno)?;
        self.fs_pid = Some(pid);
        Ok(result_reply(0))
    }

    fn open(&mut self, path: &[u8], flags: u32, mode: u32) -> HostResult {
        use open_flags::*;
        if flags & !KNOWN != 0 {
            debug!(target: LOG_TARGET, flags, "unknown open flags");
            return Err(FileioErrno::Einval);
        }
        if self.files.len() >= MAX_OPEN_FILES {
            return Err(FileioErrno::Emfile);
        }
        let (read, write) = match flags & ACCMODE {
            RDONLY => (true, false),
            WRONLY => (false, true),
            RDWR => (true, true),
            _ => return Err(FileioErrno::Einval),
        };
        // Creation flags go in as custom flags so that the kernel, not std's
        // stricter checks, decides (O_RDONLY|O_CREAT is legal in POSIX).
        // Every open is non-blocking, so that no open stalls the loop: a
        // FIFO opens at once (for writing without a reader it fails with
        // ENXIO) instead of waiting for its other end. Reads go through
        // pread, which regular files serve whatever the flag and which
        // FIFOs and terminals refuse (ESPIPE) rather than wait on. O_NOCTTY:
        // opening a terminal never makes it ours.
        let mut custom = libc::O_NONBLOCK | libc::O_NOCTTY;
        for (ours, host) in [
            (APPEND, libc::O_APPEND),
            (CREAT, libc::O_CREAT),
            (TRUNC, libc::O_TRUNC),
            (EXCL, libc::O_EXCL),
            (LLDB_NONBLOCK, libc::O_NONBLOCK),
            (LLDB_NOFOLLOW, libc::O_NOFOLLOW),
        ] {
            if flags & ours != 0 {
                custom |= host;
            }
        }
        let file = OpenOptions::new()
            .read(read)
            .write(write)
            .custom_flags(custom)
            .mode(mode & 0o7777)
            .open(self.resolve(path))
            .map_err(io_errno)?;
        let fd = file.as_raw_fd();
        // `f_type` is a C `long`: i64 here, i32 on 32-bit targets.
        #[allow(clippy::unnecessary_cast)]
        if rustix::fs::fstatfs(&file).is_ok_and(|st| is_local_fs(st.f_type as i64)) {
            self.local.insert(fd);
        }
        self.files.insert(fd, file);
        Ok(result_reply(u64::try_from(fd).unwrap_or_default()))
    }

    fn pread(&mut self, fd: i32, count: u64, offset: u64) -> HostResult {
        let file = self.file(fd)?;
        let count = usize::try_from(count.min(MAX_PREAD)).unwrap_or_default();
        let mut buf = vec![0u8; count];
        let mut filled = 0;
        while let Some(dest) = buf.get_mut(filled..).filter(|d| !d.is_empty()) {
            match file.read_at(dest, offset.saturating_add(filled as u64)) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Short data is still data; report the error only if none.
                Err(_) if filled > 0 => break,
                Err(e) => return Err(io_errno(e)),
            }
        }
        buf.truncate(filled);
        Ok(pread_reply(buf))
    }
}

/// The reply to a `pread` that read `buf`: only what fits in gdbserver's
/// packet buffer once the encoder escapes it ([`PREAD_WIRE_BUDGET`]), as
/// gdbserver does; the client asks again for the rest.
fn pread_reply(mut buf: Vec<u8>) -> Vec<u8> {
    let budget = PREAD_WIRE_BUDGET.min(DEFAULT_MAX_PACKET - REPLY_HEADER_ROOM);
    let mut cost = 0;
    let fits = buf
        .iter()
        .take_while(|&&b| {
            cost += if needs_escape(b) { 2 } else { 1 };
            cost <= budget
        })
        .count();
    buf.truncate(fits);
    let mut reply = result_reply(buf.len() as u64);
    reply.push(b';');
    reply.extend_from_slice(&buf);
    reply
}

/// Whether a file system (`statfs`'s `f_type`) is a local disk or memory
/// one, where `fstat` and `close` of a file opened for reading never wait
/// on a server and `RWF_NOWAIT` reads are supported or refused at once.
/// Network and user-space (FUSE) file systems are not: their files stay on
/// the workers.
fn is_local_fs(magic: i64) -> bool {
    const LOCAL: [i64; 12] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0xF2F5_2010, // f2fs
        0x0102_1994, // tmpfs
        0x8584_58F6, // ramfs
        0x794C_7630, // overlayfs
        0x7371_7368, // squashfs
        0x9FA0,      // proc
        0x6265_6572, // sysfs
        0x1373,      // devtmpfs
        0x2FC1_2FC1, // zfs
    ];
    LOCAL.contains(&magic)
}

/// `F<value in hex>`.
fn result_reply(value: u64) -> Vec<u8> {
    format!("F{value:x}").into_bytes()
}

/// `F-1,<errno in hex>`.
fn error_reply(errno: FileioErrno) -> Vec<u8> {
    format!("F-1,{:x}", errno.code()).into_bytes()
}

fn io_errno(e: io::Error) -> FileioErrno {
    FileioErrno::from_io(&e)
}

/// gdb's protocol [`struct stat`], big-endian: seven 32-bit fields (dev, ino,
/// mode, nlink, uid, gid, rdev), three 64-bit (size, blksize, blocks), three
/// 32-bit times. Wider host values are truncated, as gdbserver does.
///
/// [`struct stat`]: https://sourceware.org/gdb/current/onlinedocs/gdb.html/struct-stat.html
fn fileio_stat(meta: &std::fs::Metadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILEIO_STAT_SIZE);
    for v in [
        meta.dev(),
        meta.ino(),
        u64::from(meta.mode()),
        meta.nlink(),
        u64::from(meta.uid()),
        u64::from(meta.gid()),
        meta.rdev(),
    ] {
        out.extend_from_slice(&(v as u32).to_be_bytes());
    }
    for v in [meta.size(), meta.blksize(), meta.blocks()] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    for t in [meta.atime(), meta.mtime(), meta.ctime()] {
        out.extend_from_slice(&(t as u32).to_be_bytes());
    }
    out
}

/// The MD5 digest of a file's contents, streamed.
fn md5_file(path: &std::path::Path) -> io::Result<[u8; 16]> {
    let mut file = File::open(path)?;
    let mut md5 = md5::Context::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(md5.finalize().0),
            Ok(n) => md5.consume(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

pub mod offload;

#[cfg(test)]
mod tests;
