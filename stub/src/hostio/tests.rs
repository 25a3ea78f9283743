use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use super::*;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "gdbmux-hostio-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn hexpath(p: &Path) -> String {
    hex::encode_to_string(p.as_os_str().as_bytes())
}

fn req(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Opens `p` read-only and returns the fd.
fn open_ro(io: &mut HostIo, p: &Path) -> i32 {
    let r = io.handle(&req(&format!("open:{},0,0", hexpath(p))));
    assert_eq!(r[0], b'F', "{}", String::from_utf8_lossy(&r));
    let fd = hex::parse_u64(&r[1..]).unwrap_or_else(|| panic!("{r:?}"));
    i32::try_from(fd).unwrap()
}

/// Splits `F<n>;<data>`.
fn data_reply(r: &[u8]) -> (u64, &[u8]) {
    let semi = r.iter().position(|&b| b == b';').unwrap();
    assert_eq!(r[0], b'F');
    (hex::parse_u64(&r[1..semi]).unwrap(), &r[semi + 1..])
}

#[test]
fn open_pread_close() {
    let s = Scratch::new();
    let p = s.file("a", b"hello, world");
    let mut io = HostIo::new();
    let fd = open_ro(&mut io, &p);
    assert_eq!(io.open_files(), 1);
    let r = io.handle(&req(&format!("pread:{fd:x},5,7")));
    assert_eq!(r, b"F5;world");
    // Past the end: zero bytes, still with the ';'.
    assert_eq!(io.handle(&req(&format!("pread:{fd:x},10,100"))), b"F0;");
    // Count larger than what is left.
    assert_eq!(io.handle(&req(&format!("pread:{fd:x},47ff,a"))), b"F2;ld");
    assert_eq!(io.handle(&req(&format!("close:{fd:x}"))), b"F0");
    assert_eq!(io.open_files(), 0);
    assert_eq!(io.handle(&req(&format!("close:{fd:x}"))), b"F-1,9");
    assert_eq!(io.handle(&req(&format!("pread:{fd:x},5,0"))), b"F-1,9");
}

#[test]
fn pread_data_is_raw_and_binary() {
    let s = Scratch::new();
    let contents: Vec<u8> = (0..=255u8).collect();
    let p = s.file("bin", &contents);
    let mut io = HostIo::new();
    let fd = open_ro(&mut io, &p);
    let r = io.handle(&req(&format!("pread:{fd:x},100,0")));
    let (n, data) = data_reply(&r);
    assert_eq!(n, 256);
    assert_eq!(data, &contents[..], "unescaped: the encoder escapes");
}

#[test]
fn pread_is_capped_and_fits_one_packet_after_escaping() {
    let s = Scratch::new();
    let p = s.file("big", &vec![b'}'; 0x30000]);
    let mut io = HostIo::new();
    let fd = open_ro(&mut io, &p);
    let r = io.handle(&req(&format!("pread:{fd:x},fffffff,0")));
    let (n, data) = data_reply(&r);
    assert_eq!(n as usize, data.len());
    let mut framed = Vec::new();
    crate::wire::Encoder::new().packet(&r, &mut framed);
    // gdbserver's packet buffer (0x4800) holds the escaped reply.
    assert!(framed.len() - 4 <= 0x4800, "{}", framed.len());
    assert_eq!(n as usize, (MAX_PREAD as usize).min(PREAD_WIRE_BUDGET / 2));

    let p = s.file("plain", &vec![b'a'; 0x30000]);
    let fd = open_ro(&mut io, &p);
    let r = io.handle(&req(&format!("pread:{fd:x},fffffff,0")));
    assert_eq!(data_reply(&r).0, MAX_PREAD.min(PREAD_WIRE_BUDGET as u64));
    let r = io.handle(&req(&format!("pread:{fd:x},1000,0")));
    assert_eq!(data_reply(&r).0, 0x1000);
}

/// What cannot wait on a file system is answered inline: `setfs`, and
/// `fstat`, `close` and cached `pread`s of a local file (the scratch
/// directory is on a local file system: skipped where it is not); `open`
/// and unsupported or malformed requests go to a worker.
#[test]
fn inline_requests() {
    let s = Scratch::new();
    // No bytes that need escaping: the reply holds the budget's worth.
    let data: Vec<u8> = (0..0x6000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let p = s.file("cached", &data);
    let mut io = HostIo::new();
    assert_eq!(
        io.handle_inline(&req(&format!("open:{},0,0", hexpath(&p)))),
        None
    );
    assert_eq!(io.handle_inline(b"setfs:0"), Some(b"F0".to_vec()));
    assert_eq!(io.handle_inline(b"frobnicate:1"), None);
    assert_eq!(io.handle_inline(b"pread:zz"), None);
    let fd = open_ro(&mut io, &p);
    if !io.local.contains(&fd) {
        eprintln!("scratch directory not on a local file system: skipped");
        return;
    }
    // Just written: in the page cache. Whole, split and past the end.
    for (off, len) in [
        (0usize, 0x6000usize),
        (0x10, 0x100),
        (0x5ff0, 0x10),
        (0x6000, 0),
    ] {
        let r = io
            .handle_inline(&req(&format!("pread:{fd:x},{len:x},{off:x}")))
            .expect("cached pread inline");
        let most = (MAX_PREAD as usize).min(PREAD_WIRE_BUDGET);
        let want = &data[off..(off + len).min(data.len()).min(off + most)];
        assert_eq!(data_reply(&r), (want.len() as u64, want));
    }
    let r = io
        .handle_inline(&req(&format!("fstat:{fd:x}")))
        .expect("fstat");
    assert_eq!(data_reply(&r).0, FILEIO_STAT_SIZE as u64);
    assert_eq!(
        io.handle_inline(&req(&format!("close:{fd:x}"))),
        Some(b"F0".to_vec())
    );
    assert!(!io.local.contains(&fd));
    // A closed (or never opened) fd is the worker's to refuse.
    assert_eq!(io.handle_inline(&req(&format!("fstat:{fd:x}"))), None);
}

#[test]
fn create_pwrite_fstat_unlink() {
    let s = Scratch::new();
    let p = s.0.join("new");
    let mut io = HostIo::new();
    // O_WRONLY|O_CREAT|O_TRUNC, mode 0644.
    let r = io.handle(&req(&format!("open:{},601,1a4", hexpath(&p))));
    let fd = hex::parse_u64(&r[1..]).unwrap();
    // Binary data with commas and specials, as the framer delivers it.
    let mut w = format!("pwrite:{fd:x},0,").into_bytes();
    w.extend_from_slice(b"a,b#$}*\x00\xff");
    assert_eq!(io.handle(&w), b"F9");
    let mut w = format!("pwrite:{fd:x},2,").into_bytes();
    w.extend_from_slice(b"Z");
    assert_eq!(io.handle(&w), b"F1");
    assert_eq!(std::fs::read(&p).unwrap(), b"a,Z#$}*\x00\xff");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o644 & !umask_bits()
    );

    let r = io.handle(&req(&format!("fstat:{fd:x}")));
    let (n, st) = data_reply(&r);
    assert_eq!(n, 64);
    assert_eq!(st.len(), 64);
    let be32 = |o: usize| u32::from_be_bytes(st[o..o + 4].try_into().unwrap());
    let be64 = |o: usize| u64::from_be_bytes(st[o..o + 8].try_into().unwrap());
    let meta = std::fs::metadata(&p).unwrap();
    assert_eq!(be32(4), meta.ino() as u32);
    assert_eq!(be32(8), meta.mode(), "st_mode");
    assert_eq!(be32(8) & libc::S_IFMT, libc::S_IFREG);
    assert_eq!(be32(12), 1, "st_nlink");
    assert_eq!(be32(16), meta.uid());
    assert_eq!(be64(28), 9, "st_size");
    assert_eq!(be64(36), meta.blksize());
    assert_eq!(be32(60), meta.ctime() as u32);

    assert_eq!(io.handle(&req(&format!("close:{fd:x}"))), b"F0");
    assert_eq!(io.handle(&req(&format!("unlink:{}", hexpath(&p)))), b"F0");
    assert!(!p.exists());
    assert_eq!(
        io.handle(&req(&format!("unlink:{}", hexpath(&p)))),
        b"F-1,2"
    );
}

fn umask_bits() -> u32 {
    // Read the umask without changing it: create a file with 0777 and look.
    let s = Scratch::new();
    let p = s.0.join("umask");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o777)
        .open(&p)
        .unwrap();
    !std::fs::metadata(&p).unwrap().permissions().mode() & 0o777
}

#[test]
fn open_flag_mapping_and_errors() {
    let s = Scratch::new();
    let p = s.file("exists", b"x");
    let mut io = HostIo::new();
    let hp = hexpath(&p);
    // O_CREAT|O_EXCL on an existing file: EEXIST (17 = 0x11).
    assert_eq!(io.handle(&req(&format!("open:{hp},a01,1a4"))), b"F-1,11");
    // Access mode 3 and unknown flag bits: EINVAL (22 = 0x16).
    assert_eq!(io.handle(&req(&format!("open:{hp},3,0"))), b"F-1,16");
    assert_eq!(io.handle(&req(&format!("open:{hp},1000,0"))), b"F-1,16");
    // Missing file: ENOENT.
    let missing = hexpath(&s.0.join("missing"));
    assert_eq!(io.handle(&req(&format!("open:{missing},0,0"))), b"F-1,2");
    // Opening a directory for writing: EISDIR (21 = 0x15).
    assert_eq!(
        io.handle(&req(&format!("open:{},2,0", hexpath(&s.0)))),
        b"F-1,15"
    );
    // lldb's extension bits are accepted (close-on-exec, no-follow).
    let r = io.handle(&req(&format!("open:{hp},{:x},0", (1u32 << 30) | (1 << 29))));
    assert_eq!(r[0], b'F');
    assert_ne!(r[1], b'-');
    // No-follow on a symlink: ELOOP has no protocol value.
    let link = s.0.join("link");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert_eq!(
        io.handle(&req(&format!("open:{},{:x},0", hexpath(&link), 1u32 << 29))),
        b"F-1,270f"
    );
    // O_APPEND writes at the end.
    let r = io.handle(&req(&format!("open:{hp},9,0")));
    let fd = hex::parse_u64(&r[1..]).unwrap();
    let mut w = format!("pwrite:{fd:x},0,").into_bytes();
    w.push(b'y');
    assert_eq!(io.handle(&w), b"F1");
    assert_eq!(std::fs::read(&p).unwrap(), b"xy");
    // A NUL inside the path: EINVAL.
    assert_eq!(io.handle(b"open:2f00,0,0"), b"F-1,16");
}

#[test]
fn fd_table_is_bounded() {
    let s = Scratch::new();
    let p = s.file("f", b"x");
    let mut io = HostIo::new();
    let fds: Vec<i32> = (0..MAX_OPEN_FILES).map(|_| open_ro(&mut io, &p)).collect();
    let r = io.handle(&req(&format!("open:{},0,0", hexpath(&p))));
    assert_eq!(r, b"F-1,18", "EMFILE = 24 = 0x18");
    assert_eq!(io.handle(&req(&format!("close:{:x}", fds[0]))), b"F0");
    open_ro(&mut io, &p);
    assert_eq!(io.open_files(), MAX_OPEN_FILES);
}

#[test]
fn foreign_fds_are_not_ours() {
    let mut io = HostIo::new();
    // Our stdin/stdout/stderr exist, but the client did not open them.
    assert_eq!(io.handle(b"close:0"), b"F-1,9");
    assert_eq!(io.handle(b"pread:2,10,0"), b"F-1,9");
    assert_eq!(io.handle(b"fstat:1"), b"F-1,9");
    assert_eq!(io.handle(b"pwrite:1,0,x"), b"F-1,9");
}

#[test]
fn readlink() {
    let s = Scratch::new();
    let link = s.0.join("l");
    std::os::unix::fs::symlink("target,with#specials", &link).unwrap();
    let mut io = HostIo::new();
    assert_eq!(
        io.handle(&req(&format!("readlink:{}", hexpath(&link)))),
        b"F14;target,with#specials"
    );
    let plain = s.file("plain", b"");
    assert_eq!(
        io.handle(&req(&format!("readlink:{}", hexpath(&plain)))),
        b"F-1,16"
    );
}

#[test]
fn setfs_resolves_through_proc_root() {
    let s = Scratch::new();
    let p = s.file("via-proc", b"namespaced");
    let mut child = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut io = HostIo::new();
    assert_eq!(io.handle(&req(&format!("setfs:{:x}", child.id()))), b"F0");
    assert_eq!(io.fs_pid, Some(child.id()));
    assert_eq!(
        io.resolve(b"/etc/passwd"),
        PathBuf::from(format!("/proc/{}/root/etc/passwd", child.id()))
    );
    assert_eq!(
        io.resolve(b"rel"),
        PathBuf::from(format!("/proc/{}/cwd/rel", child.id()))
    );
    let fd = open_ro(&mut io, &p);
    assert_eq!(
        io.handle(&req(&format!("pread:{fd:x},100,0"))),
        b"Fa;namespaced"
    );
    assert_eq!(io.handle(b"setfs:0"), b"F0");
    assert_eq!(io.fs_pid, None);
    assert_eq!(io.resolve(b"/x"), PathBuf::from("/x"));
    // Our own pid is the same as 0.
    assert_eq!(
        io.handle(&req(&format!("setfs:{:x}", std::process::id()))),
        b"F0"
    );
    assert_eq!(io.fs_pid, None);
    child.kill().unwrap();
    child.wait().unwrap();
    // A process that is gone: the error is reported and the fs unchanged.
    assert_eq!(
        io.handle(&req(&format!("setfs:{:x}", child.id()))),
        b"F-1,2"
    );
    assert_eq!(io.fs_pid, None);
}

#[test]
fn lldb_size_exists_md5() {
    let s = Scratch::new();
    let p = s.file("f", b"abc");
    let missing = s.0.join("missing");
    let mut io = HostIo::new();
    assert_eq!(io.handle(&req(&format!("size:{}", hexpath(&p)))), b"F3");
    assert_eq!(
        io.handle(&req(&format!("size:{}", hexpath(&missing)))),
        b"F-1,2"
    );
    assert_eq!(io.handle(&req(&format!("exists:{}", hexpath(&p)))), b"F,1");
    assert_eq!(
        io.handle(&req(&format!("exists:{}", hexpath(&missing)))),
        b"F,0"
    );
    assert_eq!(
        io.handle(&req(&format!("MD5:{}", hexpath(&p)))),
        b"F,900150983cd24fb0d6963f7d28e17f72"
    );
    assert_eq!(
        io.handle(&req(&format!("MD5:{}", hexpath(&missing)))),
        b"F,x"
    );
    // A file larger than one read buffer.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let bp = s.file("big", &big);
    let mut want = b"F,".to_vec();
    hex::encode(&md5::compute(&big).0, &mut want);
    assert_eq!(io.handle(&req(&format!("MD5:{}", hexpath(&bp)))), want);
}

#[test]
fn malformed_arguments_are_einval() {
    let mut io = HostIo::new();
    for bad in [
        &b"open"[..],
        b"open:",
        b"open:zz,0,0",
        b"open:2f,0",
        b"open:2f,,0",
        b"open:2f,0,0,0",
        b"open:2f,100000000,0",
        b"open:2f6,0,0",
        b"close:",
        b"close:-1",
        b"close:zz",
        b"close:80000000",
        b"pread:1",
        b"pread:1,2",
        b"pread:1,,2",
        b"pread:1,2,-3",
        b"pwrite:1,2",
        b"pwrite:,2,x",
        b"fstat:",
        b"unlink:2",
        b"readlink:xyz",
        b"setfs:",
        b"setfs:100000000",
        b"size:1",
        b"exists:g0",
        b"MD5:0",
    ] {
        assert_eq!(
            io.handle(bad),
            b"F-1,16",
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn unknown_operations_get_an_empty_reply() {
    let mut io = HostIo::new();
    for unknown in [
        &b""[..],
        b"stat:2f",
        b"mode:2f",
        b"symlink:2f,2f",
        b"OPEN:2f,0,0",
        b":",
    ] {
        assert_eq!(
            io.handle(unknown),
            b"",
            "{}",
            String::from_utf8_lossy(unknown)
        );
    }
}

#[test]
fn parse_is_typed() {
    assert_eq!(
        Request::parse(b"open:2f62696e2f6c73,0,1c0"),
        Ok(Request::Open {
            path: b"/bin/ls".to_vec(),
            flags: 0,
            mode: 0o700
        })
    );
    assert_eq!(
        Request::parse(b"pread:6,47ff,1ccd41"),
        Ok(Request::Pread {
            fd: 6,
            count: 0x47ff,
            offset: 0x1ccd41
        })
    );
    assert_eq!(
        Request::parse(b"pwrite:6,10,a,b"),
        Ok(Request::Pwrite {
            fd: 6,
            offset: 0x10,
            data: b"a,b"
        })
    );
    assert_eq!(
        Request::parse(b"pwrite:6,10,"),
        Ok(Request::Pwrite {
            fd: 6,
            offset: 0x10,
            data: b""
        })
    );
    assert_eq!(
        Request::parse(b"setfs:4bdc"),
        Ok(Request::Setfs { pid: 0x4bdc })
    );
    assert!(matches!(
        Request::parse(b"stat:2f"),
        Err(ParseError::Unsupported(_))
    ));
    assert_eq!(
        Request::parse(b"close:x"),
        Err(ParseError::Malformed { op: "close" })
    );
}

#[test]
fn errno_mapping() {
    let e = |n| FileioErrno::from_io(&io::Error::from_raw_os_error(n));
    assert_eq!(e(libc::ENOENT), FileioErrno::Enoent);
    assert_eq!(e(libc::ENAMETOOLONG), FileioErrno::Enametoolong);
    assert_eq!(e(libc::ELOOP), FileioErrno::Eunknown);
    assert_eq!(FileioErrno::Enametoolong.code(), 91);
    assert_eq!(error_reply(FileioErrno::Enametoolong), b"F-1,5b");
    assert_eq!(
        FileioErrno::from_io(&io::Error::new(io::ErrorKind::InvalidInput, "nul")),
        FileioErrno::Einval
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(
        op in proptest::sample::select(vec![
            "open", "close", "pread", "pwrite", "fstat", "unlink", "readlink",
            "setfs", "size", "exists", "MD5", "bogus",
        ]),
        args in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::num::u8::ANY,
                proptest::sample::select(b"0123456789abcdef,:-".to_vec()),
            ],
            0..40,
        ),
    ) {
        let mut io = HostIo::new();
        let mut packet = format!("{op}:").into_bytes();
        // Keep anything that could create or delete files inside a scratch
        // directory.
        let scratch = Scratch::new();
        if op == "open" || op == "unlink" {
            hex::encode(scratch.0.join("x").as_os_str().as_bytes(), &mut packet);
        }
        packet.extend(args);
        let r = io.handle(&packet);
        proptest::prop_assert!(r.is_empty() || r.starts_with(b"F"));
    }
}
