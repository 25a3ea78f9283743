//! The runtime proper (safe Rust); `ffi` exposes it to C.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicI32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::OnceLock;

use gpu_target::model::DispatchId;
use gpu_target::model::StopReasons;
use gpu_target::sim::device::encode_dispatch_packet;
use gpu_target::sim::device::Device;
use gpu_target::sim::device::DeviceConfig;
use gpu_target::sim::device::DispatchOutcome;
use gpu_target::sim::elf::Elf;
use gpu_target::sim::launch::build_kernarg;
use gpu_target::sim::launch::kernel_metadata;
use gpu_target::sim::launch::KernelMeta;
use gpu_target::sim::launch::LaunchDims;
use gpu_target::sim::memory::ProcessMemory;
use gpu_target::sim::rendezvous::socket_name;
use gpu_target::sim::rendezvous::Message;
use gpu_target::sim::rendezvous::MessageKind;
use gpu_target::sim::rendezvous::RT_ADD;
use gpu_target::sim::rendezvous::RT_CONSISTENT;
use gpu_target::sim::rendezvous::RT_DELETE;

/// `struct r_debug` (glibc layout), the debugger rendezvous.
#[repr(C)]
#[derive(Debug)]
pub struct RDebug {
    /// Protocol version (1).
    pub r_version: AtomicI32,
    /// Address of the first `struct link_map`.
    pub r_map: AtomicU64,
    /// Address of the hook function.
    pub r_brk: AtomicU64,
    /// `RT_CONSISTENT`, `RT_ADD` or `RT_DELETE`.
    pub r_state: AtomicI32,
    /// Unused (0).
    pub r_ldbase: AtomicU64,
}

/// `struct link_map` (glibc layout): one loaded code object.
#[repr(C)]
#[derive(Debug, Default)]
struct LinkMap {
    l_addr: AtomicU64,
    l_name: AtomicU64,
    l_ld: AtomicU64,
    l_next: AtomicU64,
    l_prev: AtomicU64,
}

impl LinkMap {
    fn addr(self: &Arc<Self>) -> u64 {
        Arc::as_ptr(self) as u64
    }
}

/// Status codes of the C API.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// Success.
    Success = 0,
    /// A NULL or malformed argument.
    InvalidArgument = 1,
    /// The code object file could not be read.
    File = 2,
    /// Not a gfx90a code object.
    InvalidCodeObject = 3,
    /// No kernel of that name.
    KernelNotFound = 4,
    /// A wave accessed a bad address.
    MemoryViolation = 5,
    /// A wave trapped or hit an illegal instruction.
    Aborted = 6,
    /// The debugger's GPU library went away mid-dispatch.
    DebuggerLost = 7,
    /// The watchdog abandoned a dispatch that did not finish in time
    /// ([`crate::watchdog`]).
    Timeout = 8,
}

impl Status {
    /// Text for a status.
    pub fn text(code: i32) -> &'static str {
        match code {
            0 => "success",
            1 => "invalid argument",
            2 => "cannot read the code object file",
            3 => "not a code object of this machine's GPUs (gfx90a; gfx908 when SIMGPU_AGENTS lists it)",
            4 => "kernel not found",
            5 => "memory violation in a kernel",
            6 => "kernel aborted (trap or illegal instruction)",
            7 => "lost the debugger's GPU library",
            8 => "kernel timed out (watchdog)",
            _ => "unknown status",
        }
    }
}

/// A block of heap memory aligned to 4 KiB that never moves.
struct Aligned {
    buf: Vec<u8>,
    off: usize,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8], align: usize) -> Self {
        let mut buf = vec![0u8; bytes.len() + align];
        let off = (align - buf.as_ptr() as usize % align) % align;
        buf[off..off + bytes.len()].copy_from_slice(bytes);
        Self {
            buf,
            off,
            len: bytes.len(),
        }
    }
    fn addr(&self) -> u64 {
        self.buf.as_ptr() as u64 + self.off as u64
    }
}

/// A loaded code object.
pub struct Module {
    image: Aligned,
    kernels: Vec<(String, u64, u32)>,
    meta: Vec<KernelMeta>,
    _uri: CString,
    node: Arc<LinkMap>,
    /// `EF_AMDGPU_MACH_*` of the code object.
    mach: u32,
}

impl Module {
    /// Address of the kernel descriptor of `name` and its kernarg size.
    fn kernel(&self, name: &str) -> Option<(u64, u32)> {
        self.kernels
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, kd, size)| (*kd, *size))
    }
}

#[derive(Default)]
struct Runtime {
    device: Option<Device>,
    debugger: Option<UnixStream>,
    /// The link-map nodes, in load order.
    nodes: Vec<Arc<LinkMap>>,
}

/// Sends a message without raising SIGPIPE if the library went away (a C
/// program has the default SIGPIPE action, which would kill it).
fn send(s: &UnixStream, m: Message) -> std::io::Result<()> {
    use std::os::fd::AsFd;
    let b = m.encode();
    let mut off = 0;
    while off < b.len() {
        let n = nix::sys::socket::send(
            s.as_fd().as_raw_fd(),
            &b[off..],
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
        )
        .map_err(std::io::Error::from)?;
        off += n;
    }
    Ok(())
}

fn runtime() -> &'static Mutex<Runtime> {
    static RT: OnceLock<Mutex<Runtime>> = OnceLock::new();
    RT.get_or_init(|| Mutex::new(Runtime::default()))
}

fn lock_rt() -> std::sync::MutexGuard<'static, Runtime> {
    runtime().lock().unwrap_or_else(|p| p.into_inner())
}

use crate::ffi::_simgpu_loader_debug_state as loader_debug_state;
use crate::ffi::_simgpu_r_debug as R_DEBUG;

fn hook_addr() -> u64 {
    loader_debug_state as *const () as u64
}

fn uri_encode(path: &str) -> String {
    let mut s = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/_.~-".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

impl Runtime {
    /// Connects to an attached debugger's GPU library, if any.
    fn try_connect(&mut self) {
        if self.debugger.is_some() {
            return;
        }
        let name = socket_name(std::process::id());
        let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
            return;
        };
        let Ok(mut s) = UnixStream::connect_addr(&addr) else {
            return;
        };
        R_DEBUG.r_brk.store(hook_addr(), Ordering::SeqCst);
        let hello = Message {
            kind: MessageKind::Hello,
            value: &R_DEBUG as *const RDebug as u64,
        };
        if send(&s, hello).is_err() {
            return;
        }
        // The library acknowledges once the debugger processed the runtime
        // event (ROCr waits for the debugger in the same way).
        match Message::read_from(&mut s) {
            Ok(Message {
                kind: MessageKind::Ack,
                ..
            }) => {
                tracing::debug!(target: "simgpu_rt", "debugger attached");
                self.debugger = Some(s);
            }
            _ => tracing::warn!(target: "simgpu_rt", "GPU library handshake failed"),
        }
    }

    /// Rewrites the list links and `r_map` from `nodes`.
    fn relink(&mut self) {
        for (i, n) in self.nodes.iter().enumerate() {
            let next = self.nodes.get(i + 1).map(|x| x.addr()).unwrap_or(0);
            let prev = if i == 0 { 0 } else { self.nodes[i - 1].addr() };
            n.l_next.store(next, Ordering::SeqCst);
            n.l_prev.store(prev, Ordering::SeqCst);
        }
        let first = self.nodes.first().map(|x| x.addr()).unwrap_or(0);
        R_DEBUG.r_map.store(first, Ordering::SeqCst);
    }
}

/// Initialises the runtime (idempotent).
pub fn init() -> Status {
    R_DEBUG.r_brk.store(hook_addr(), Ordering::SeqCst);
    lock_rt().try_connect();
    Status::Success
}

/// Shuts the runtime down: the debugger's GPU library loses its
/// connection (it reports RUNTIME UNLOADED), the rendezvous no longer names
/// a hook (a debugger attaching later sees no runtime), the local device is
/// dropped. Modules still loaded stay listed but must not be launched
/// before the next [`init`]. A later `init` starts a new runtime lifetime.
pub fn shutdown() -> Status {
    let mut rt = lock_rt();
    if let Some(s) = rt.debugger.take() {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    rt.device = None;
    R_DEBUG.r_brk.store(0, Ordering::SeqCst);
    tracing::debug!(target: "simgpu_rt", "shut down");
    Status::Success
}

/// Whether the machine has a GPU for code objects of `EF_AMDGPU_MACH_*`
/// `mach`: the simulated gfx90a always; gfx908 when `SIMGPU_AGENTS` (the
/// agents the debugger's simulated library presents, inherited from it)
/// lists one.
fn machine_has(mach: u32) -> bool {
    use gpu_target::sim::elf::EF_AMDGPU_MACH_GFX908;
    use gpu_target::sim::elf::EF_AMDGPU_MACH_GFX90A;
    mach == EF_AMDGPU_MACH_GFX90A
        || mach == EF_AMDGPU_MACH_GFX908
            && std::env::var("SIMGPU_AGENTS")
                .is_ok_and(|v| v.split(',').any(|a| a.trim() == "gfx908"))
}

/// Loads a code object file.
pub fn load(path: &str) -> Result<Box<Module>, Status> {
    let bytes = std::fs::read(path).map_err(|_| Status::File)?;
    let elf = Elf::parse_code_object(&bytes).map_err(|_| Status::InvalidCodeObject)?;
    if !machine_has(elf.amdgpu_mach()) {
        return Err(Status::InvalidCodeObject);
    }
    let image = Aligned::new(
        &elf.load_image().map_err(|_| Status::InvalidCodeObject)?,
        4096,
    );
    let base = image.addr();
    let mut kernels = Vec::new();
    for k in elf.kernels() {
        let Ok(sym) = elf.symbol(&format!("{k}.kd")) else {
            continue;
        };
        let kd = base + sym.value;
        let kdb = elf.read_vaddr(sym.value, 64);
        let kernarg = kdb
            .and_then(|b| gpu_target::sim::elf::KernelDescriptor::parse(b).ok())
            .map(|d| d.kernarg_size)
            .unwrap_or(0);
        kernels.push((k.to_owned(), kd, kernarg));
    }
    let abs = std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_owned());
    let uri = CString::new(format!(
        "{}#offset=0&size={}",
        uri_encode(&abs),
        bytes.len()
    ))
    .map_err(|_| Status::InvalidArgument)?;
    let node = Arc::new(LinkMap {
        l_addr: AtomicU64::new(base),
        l_name: AtomicU64::new(uri.as_ptr() as u64),
        ..LinkMap::default()
    });
    let module = Box::new(Module {
        image,
        kernels,
        meta: kernel_metadata(&elf),
        _uri: uri,
        node,
        mach: elf.amdgpu_mach(),
    });
    let mut rt = lock_rt();
    rt.try_connect();
    R_DEBUG.r_state.store(RT_ADD, Ordering::SeqCst);
    loader_debug_state();
    rt.nodes.push(module.node.clone());
    rt.relink();
    R_DEBUG.r_state.store(RT_CONSISTENT, Ordering::SeqCst);
    loader_debug_state();
    tracing::debug!(target: "simgpu_rt", path, base, len = module.image.len, "loaded");
    Ok(module)
}

/// Unloads a code object.
pub fn unload(module: Box<Module>) {
    let mut rt = lock_rt();
    R_DEBUG.r_state.store(RT_DELETE, Ordering::SeqCst);
    loader_debug_state();
    rt.nodes.retain(|n| !Arc::ptr_eq(n, &module.node));
    rt.relink();
    R_DEBUG.r_state.store(RT_CONSISTENT, Ordering::SeqCst);
    loader_debug_state();
    drop(module);
}

/// The text of the last launch error of this thread (empty after a
/// successful launch): what failed, and for an aborted dispatch the reason,
/// the pc and the bytes of the instruction there.
pub fn last_error() -> String {
    LAST_ERROR.with(|e| e.borrow().to_str().unwrap_or_default().to_owned())
}

thread_local! {
    static LAST_ERROR: std::cell::RefCell<CString> = std::cell::RefCell::new(CString::default());
}

/// Calls `f` with the NUL-terminated last error (valid during the call).
pub fn with_last_error<R>(f: impl FnOnce(&std::ffi::CStr) -> R) -> R {
    LAST_ERROR.with(|e| f(e.borrow().as_c_str()))
}

fn set_error(msg: String) {
    if !msg.is_empty() {
        tracing::warn!(target: "simgpu_rt", "{msg}");
    }
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Launches `kernel` with `dynamic_lds` bytes of dynamic LDS and waits for
/// it (`simgpu_launch_ex`).
pub fn launch(
    module: &Module,
    kernel: &str,
    grid: [u32; 3],
    block: [u16; 3],
    args: &[u8],
    dynamic_lds: u32,
) -> Status {
    let (status, msg) = launch_inner(module, kernel, grid, block, args, dynamic_lds);
    set_error(msg);
    status
}

fn launch_inner(
    module: &Module,
    kernel: &str,
    grid: [u32; 3],
    block: [u16; 3],
    args: &[u8],
    dynamic_lds: u32,
) -> (Status, String) {
    let Some((kd, kernarg_size)) = module.kernel(kernel) else {
        return (Status::KernelNotFound, format!("no kernel named {kernel}"));
    };
    if module.mach == gpu_target::sim::elf::EF_AMDGPU_MACH_GFX908 && (block[1] > 1 || block[2] > 1)
    {
        // gfx908 passes work-item ids in v0, v1, v2; the device lays them
        // out as gfx90a does (packed into v0).
        return (
            Status::InvalidArgument,
            format!("{kernel}: multi-dimensional workgroups of gfx908 code are not supported by the simulated device"),
        );
    }
    if grid.contains(&0) || block.contains(&0) {
        return (
            Status::InvalidArgument,
            "a grid or block dimension is 0".into(),
        );
    }
    let dims = LaunchDims {
        grid,
        block,
        dynamic_lds,
    };
    let (kernarg_bytes, group_segment) = match module.meta.iter().find(|m| m.name == kernel) {
        Some(meta) => match build_kernarg(meta, args, dims) {
            Ok(k) => k,
            Err(e) => return (Status::InvalidArgument, format!("{kernel}: {e}")),
        },
        None => {
            let mut k = args.to_vec();
            k.resize((kernarg_size as usize).max(args.len()).max(8), 0);
            (k, dynamic_lds)
        }
    };
    if group_segment > MAX_GROUP_SEGMENT {
        return (
            Status::InvalidArgument,
            format!("{group_segment} bytes of LDS exceed the {MAX_GROUP_SEGMENT} of gfx90a"),
        );
    }
    let kernarg = Aligned::new(&kernarg_bytes, 64);
    let packet_bytes = encode_dispatch_packet(kd, kernarg.addr(), grid, block, group_segment);
    let packet = Aligned::new(&packet_bytes, 64);
    let mut rt = lock_rt();
    rt.try_connect();
    if let Some(s) = rt.debugger.as_mut() {
        let msg = Message {
            kind: MessageKind::Dispatch,
            value: packet.addr(),
        };
        let reply = send(s, msg).and_then(|_| crate::wait::wait_for_dispatch(s));
        return match reply {
            Ok(Message {
                kind: MessageKind::Done,
                value,
            }) => match value {
                0 => (Status::Success, String::new()),
                5 => (
                    Status::MemoryViolation,
                    format!("{kernel}: memory violation"),
                ),
                _ => (Status::Aborted, format!("{kernel}: aborted")),
            },
            _ => {
                rt.debugger = None;
                (
                    Status::DebuggerLost,
                    "lost the debugger's GPU library".into(),
                )
            }
        };
    }
    let dev = rt.device.get_or_insert_with(|| {
        Device::new(
            Arc::new(ProcessMemory::this_process()),
            DeviceConfig::default(),
        )
    });
    let id = match dev.submit(packet.addr()) {
        Ok(id) => id,
        Err(e) => return (Status::InvalidArgument, format!("{kernel}: {e}")),
    };
    // `wait` returns once every work-group of the dispatch has retired, also
    // after an abort, so the kernarg, the packet and the caller's buffers
    // are no longer in use.
    let (out, timed_out) = wait_watched(dev, id, kernel);
    if let Some(msg) = timed_out {
        drop(kernarg);
        drop(packet);
        return (Status::Timeout, msg);
    }
    let msg = match out {
        Some(DispatchOutcome::Aborted {
            reason,
            pc,
            fault_addr,
        }) => {
            let mut code = [0u8; 8];
            let n = dev.memory().read_partial(pc, &mut code);
            let bytes: Vec<String> = code[..n].iter().map(|b| format!("{b:02x}")).collect();
            let text = gpu_target::sim::decode::decode(&code[..n])
                .map(|i| i.to_string())
                .unwrap_or_else(|| "<unknown instruction>".into());
            let fault = fault_addr
                .map(|a| format!(", address {a:#x}"))
                .unwrap_or_default();
            format!(
                "{kernel}: dispatch aborted: {} at pc {pc:#x}{fault}: {text} (bytes {})",
                reason.description(),
                bytes.join(" ")
            )
        }
        Some(DispatchOutcome::Completed) => String::new(),
        None => format!("{kernel}: dispatch lost"),
    };
    drop(kernarg);
    drop(packet);
    (outcome_status(out), msg)
}

/// Waits for dispatch `id` under the watchdog; on a timeout the dispatch is
/// abandoned (every wave ends before this returns) and the error text comes
/// back as well.
fn wait_watched(
    dev: &Device,
    id: DispatchId,
    kernel: &str,
) -> (Option<DispatchOutcome>, Option<String>) {
    let Some(limit) = crate::watchdog::timeout() else {
        return (dev.wait(id, None), None);
    };
    if let Some(out) = dev.wait(id, Some(limit)) {
        return (Some(out), None);
    }
    let msg = crate::watchdog::fire(dev, id, kernel, limit);
    (dev.wait(id, None), Some(msg))
}

/// LDS per work-group on gfx90a.
pub const MAX_GROUP_SEGMENT: u32 = 64 * 1024;

/// The C status of a dispatch outcome.
pub fn outcome_status(o: Option<DispatchOutcome>) -> Status {
    match o {
        Some(DispatchOutcome::Completed) => Status::Success,
        Some(DispatchOutcome::Aborted { reason, .. })
            if reason.contains(StopReasons::MEMORY_VIOLATION) =>
        {
            Status::MemoryViolation
        }
        _ => Status::Aborted,
    }
}
