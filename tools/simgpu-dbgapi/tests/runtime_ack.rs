//! Regression: the runtime's hook breakpoint must exist before the runtime
//! is released to load code objects.
//!
//! gdbmux (like any client that queues `insert_breakpoint` requests) plants
//! the hook breakpoint only after `next_pending_event` said NONE. The library
//! used to acknowledge the runtime's HELLO from `event_processed(RUNTIME)`,
//! before that: the runtime then loaded its code object and passed the hook
//! unseen, no CODE_OBJECT_LIST_UPDATED was ever produced, and the debugger
//! never learnt the code object (flaky: it depended on how fast the runtime
//! got to its first load).
//!
//! This test is the runtime itself (its `r_debug`, link map and socket live
//! in the test process, which the library attaches to), so every step is
//! ordered: the ACK must not arrive before the breakpoint is planted, and the
//! link-map name, which ends right before an unmapped page, must be read.

mod common;

use std::io::Write;
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::os::fd::BorrowedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicI32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use gpu_target::dbgapi::sys::DbgApi;
use gpu_target::dbgapi::DbgApiBackend;
use gpu_target::model::BreakpointAction;
use gpu_target::model::BreakpointId;
use gpu_target::model::GpuBackend;
use gpu_target::model::GpuError;
use gpu_target::model::GpuEvent;
use gpu_target::model::HostProcess;
use gpu_target::model::RuntimeState;
use gpu_target::sim::rendezvous::socket_name;
use gpu_target::sim::rendezvous::Message;
use gpu_target::sim::rendezvous::MessageKind;
use gpu_target::sim::rendezvous::RT_ADD;
use gpu_target::sim::rendezvous::RT_CONSISTENT;

const TIMEOUT: Duration = Duration::from_secs(20);
const PAGE: usize = 4096;

/// `struct r_debug` (glibc layout), as the runtime exports it.
#[repr(C)]
#[derive(Default)]
struct RDebug {
    r_version: AtomicI32,
    r_map: AtomicU64,
    r_brk: AtomicU64,
    r_state: AtomicI32,
    r_ldbase: AtomicU64,
}

/// `struct link_map` (glibc layout).
#[repr(C)]
#[derive(Default)]
struct LinkMap {
    l_addr: AtomicU64,
    l_name: AtomicU64,
    l_ld: AtomicU64,
    l_next: AtomicU64,
    l_prev: AtomicU64,
}

/// A client that queues breakpoint requests and plants them when told,
/// like gdbmux's host bridge.
#[derive(Clone, Default)]
struct DeferringHost {
    pid: i32,
    queued: Arc<Mutex<Vec<(u64, BreakpointId)>>>,
}

impl HostProcess for DeferringHost {
    fn os_pid(&self) -> i32 {
        self.pid
    }
    fn insert_breakpoint(&mut self, addr: u64, id: BreakpointId) -> Result<(), GpuError> {
        self.queued.lock().unwrap().push((addr, id));
        Ok(())
    }
    fn remove_breakpoint(&mut self, _: BreakpointId) -> Result<(), GpuError> {
        Ok(())
    }
}

/// Waits (deadline: fails loudly) until the notifier is readable.
fn wait_notifier(b: &DbgApiBackend) {
    let fd = b.notifier_fd().expect("notifier");
    // SAFETY: the notifier stays open while the backend lives.
    let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut fds = [nix::poll::PollFd::new(bfd, nix::poll::PollFlags::POLLIN)];
    let ms = TIMEOUT.as_millis() as u16;
    let n = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).expect("poll");
    assert_eq!(n, 1, "timed out waiting on the notifier");
}

/// The next event, waiting on the notifier with a deadline.
fn next_event(b: &mut DbgApiBackend) -> (gpu_target::model::EventId, GpuEvent) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(e) = b.next_event().expect("next_event") {
            return e;
        }
        assert!(Instant::now() < deadline, "timed out waiting for an event");
        wait_notifier(b);
    }
}

/// Whether the library has written anything to the runtime yet.
fn ack_pending(s: &UnixStream) -> bool {
    use nix::sys::socket::MsgFlags;
    let mut b = [0u8; 1];
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
    match nix::sys::socket::recv(s.as_raw_fd(), &mut b, flags) {
        Ok(n) => n > 0,
        Err(nix::errno::Errno::EAGAIN) => false,
        Err(e) => panic!("runtime socket: {e}"),
    }
}

/// Two anonymous pages, the second inaccessible; `name` is placed so that
/// its NUL is the last readable byte.
struct NameAtPageEnd {
    base: std::ptr::NonNull<std::ffi::c_void>,
    addr: u64,
}

impl NameAtPageEnd {
    fn new(name: &str) -> Self {
        use nix::sys::mman::*;
        let len = NonZeroUsize::new(2 * PAGE).unwrap();
        // SAFETY: a fresh private anonymous mapping; nothing else uses it.
        let base = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .expect("mmap");
        let bytes = name.as_bytes();
        assert!(bytes.len() < PAGE);
        let off = PAGE - bytes.len() - 1;
        // SAFETY: [off, PAGE) lies in the first (writable) page of the
        // mapping; the source does not overlap it.
        unsafe {
            let dst = (base.as_ptr() as *mut u8).add(off);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            dst.add(bytes.len()).write(0);
        }
        // SAFETY: the second page belongs to this mapping.
        let second =
            unsafe { std::ptr::NonNull::new_unchecked((base.as_ptr() as *mut u8).add(PAGE)) };
        // SAFETY: the second page is ours and holds no Rust object.
        unsafe { mprotect(second.cast(), PAGE, ProtFlags::PROT_NONE) }.expect("mprotect");
        Self {
            base,
            addr: base.as_ptr() as u64 + off as u64,
        }
    }
}

impl Drop for NameAtPageEnd {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referenced.
        let _ = unsafe { nix::sys::mman::munmap(self.base, 2 * PAGE) };
    }
}

#[test]
fn runtime_is_released_only_after_the_hook_breakpoint_is_planted() {
    let api = DbgApi::load(Some(&common::library())).expect("load libsimgpu_dbgapi.so");
    let host = DeferringHost {
        pid: std::process::id() as i32,
        ..DeferringHost::default()
    };
    let queued = host.queued.clone();
    let mut b = DbgApiBackend::attach(&api, Box::new(host)).expect("attach");

    // The runtime comes up: r_brk set, HELLO(&r_debug), then it waits.
    let hook = runtime_is_released_only_after_the_hook_breakpoint_is_planted as *const () as u64;
    let r_debug = Box::new(RDebug::default());
    r_debug.r_version.store(1, Ordering::SeqCst);
    r_debug.r_brk.store(hook, Ordering::SeqCst);
    r_debug.r_state.store(RT_CONSISTENT, Ordering::SeqCst);
    let name = socket_name(std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let mut rt = UnixStream::connect_addr(&addr).expect("connect to the library");
    let hello = Message {
        kind: MessageKind::Hello,
        value: &*r_debug as *const RDebug as u64,
    };
    rt.write_all(&hello.encode()).unwrap();

    // Pass 1: RUNTIME; the library asks for the hook breakpoint (queued).
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::Runtime(RuntimeState::Loaded));
    let (bp_addr, bp) = *queued.lock().unwrap().first().expect("insert_breakpoint");
    assert_eq!(bp_addr, hook);
    b.event_processed(ev).unwrap();
    assert!(
        !ack_pending(&rt),
        "runtime released by event_processed, before the client planted the hook breakpoint"
    );
    assert_eq!(b.next_event().unwrap(), None);
    assert!(
        !ack_pending(&rt),
        "runtime released before the end of the client's pass"
    );

    // The client plants what it was asked for, then waits on the notifier.
    let planted = std::mem::take(&mut *queued.lock().unwrap());
    assert_eq!(planted, [(hook, bp)]);
    wait_notifier(&b);
    assert_eq!(b.next_event().unwrap(), None);
    rt.set_read_timeout(Some(TIMEOUT)).unwrap();
    let ack = Message::read_from(&mut rt).expect("ACK after the breakpoint was planted");
    assert_eq!(ack.kind, MessageKind::Ack);

    // The runtime loads a code object: RT_ADD hit, list update, RT_CONSISTENT
    // hit. The URI ends right before an unmapped page.
    let uri = "file:///tmp/simfix-regression.hsaco#offset=0&size=4096";
    let name = NameAtPageEnd::new(uri);
    let node = Box::new(LinkMap::default());
    node.l_addr.store(0x7000_0000, Ordering::SeqCst);
    node.l_name.store(name.addr, Ordering::SeqCst);
    r_debug.r_state.store(RT_ADD, Ordering::SeqCst);
    assert_eq!(
        b.report_breakpoint_hit(bp, 1).unwrap(),
        BreakpointAction::Resume
    );
    r_debug
        .r_map
        .store(&*node as *const LinkMap as u64, Ordering::SeqCst);
    r_debug.r_state.store(RT_CONSISTENT, Ordering::SeqCst);
    assert_eq!(
        b.report_breakpoint_hit(bp, 1).unwrap(),
        BreakpointAction::Halt
    );
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::CodeObjectListUpdated);
    let cos = b.code_objects().unwrap();
    assert_eq!(cos.len(), 1);
    assert_eq!(cos[0].uri, uri);
    assert_eq!(cos[0].load_address, 0x7000_0000);
    b.event_processed(ev).unwrap();
    let (ev, e) = next_event(&mut b);
    assert_eq!(e, GpuEvent::BreakpointResume { breakpoint: bp });
    b.event_processed(ev).unwrap();

    drop(b);
    drop(api);
    drop(rt);
}
