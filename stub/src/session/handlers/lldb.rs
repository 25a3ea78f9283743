//! lldb-dialect queries: qHostInfo, qProcessInfo, jThreadsInfo,
//! qMemoryRegionInfo, qGetWorkingDir, qRegisterInfo.
//! Reference: <https://lldb.llvm.org/resources/lldbgdbremote.html>.

use std::fmt::Write as _;

use std::rc::Rc;

use crate::packet::reply;
use crate::packet::thread_id::ThreadId;
use crate::session::lldb_regs::LldbRegView;
use crate::session::Session;
use crate::session::SessionRole;
use crate::stop::StopEvent;
use crate::target::Pid;
use crate::wire::hex;

fn hexs(s: &str) -> String {
    hex::encode_to_string(s.as_bytes())
}

impl<R: SessionRole> Session<R> {
    /// Whether this is the session of an lldb client that holds the
    /// launched programs' output terminal (a CPU session's role state;
    /// lldb-server's output forwarding applies, `server::output`).
    pub fn speaks_lldb(&self) -> bool {
        self.features.dialect == crate::session::Dialect::Lldb
            && self.role.program_output().is_some()
    }

    /// The program's output as lldb-server forwards it: `O` packets of
    /// the bytes a default terminal would carry (`\n` as `\r\n`), each
    /// at most half the packet size.
    pub fn send_program_output(&mut self, bytes: &[u8]) {
        let data = crate::native::onlcr(bytes);
        for chunk in data.chunks(crate::session::MAX_PACKET / 4) {
            let mut p = Vec::with_capacity(1 + chunk.len() * 2);
            p.push(b'O');
            hex::encode(chunk, &mut p);
            self.send(&p);
        }
    }

    /// lldb's register view of `pid` (an lldb client and an x86-64
    /// target), built once per process.
    pub(super) fn lldb_view(&mut self, pid: Pid) -> Option<Rc<LldbRegView>> {
        if self.features.dialect != crate::session::Dialect::Lldb {
            return None;
        }
        if let Some((p, v)) = &self.lldb_regs {
            if *p == pid {
                return Some(v.clone());
            }
        }
        let v = Rc::new(LldbRegView::for_x86_64(self.procs.get(&pid)?.registers())?);
        self.lldb_regs = Some((pid, v.clone()));
        Some(v)
    }

    /// The view of the process a register packet for `thread` addresses.
    pub(super) fn lldb_view_for(&mut self, thread: Option<ThreadId>) -> Option<Rc<LldbRegView>> {
        if self.features.dialect != crate::session::Dialect::Lldb {
            return None;
        }
        let (pid, _) = self.reg_thread(thread).ok()?;
        self.lldb_view(pid)
    }

    /// `p` through lldb's view.
    pub(super) fn lldb_read_register(&mut self, v: &LldbRegView, n: u32, thread: Option<ThreadId>) {
        let r = self.reg_thread(thread).and_then(|(pid, tid)| {
            let t = self.target_mut(pid)?;
            v.read(n, &mut |r| t.read_register(tid, r))
        });
        match r {
            Ok(b) => self.send(&reply::hex_bytes(&b)),
            Err(e) => self.send_target_error(&e),
        }
    }

    /// `P` through lldb's view.
    pub(super) fn lldb_write_register(
        &mut self,
        v: &LldbRegView,
        n: u32,
        value: &[u8],
        thread: Option<ThreadId>,
    ) {
        let r = self.lldb_write(v, n, value, thread);
        self.send_unit(r);
    }

    fn send_unit(&mut self, r: crate::target::TargetResult<()>) {
        match r {
            Ok(()) => self.send(&reply::ok()),
            Err(e) => self.send_target_error(&e),
        }
    }

    fn lldb_write(
        &mut self,
        v: &LldbRegView,
        n: u32,
        value: &[u8],
        thread: Option<ThreadId>,
    ) -> crate::target::TargetResult<()> {
        let (pid, tid) = self.reg_thread(thread)?;
        let t = self.target_mut(pid)?;
        let sizes: Vec<(u32, usize)> = t
            .registers()
            .iter()
            .map(|r| (r.regnum, (r.bitsize / 8) as usize))
            .collect();
        let size = |r: u32| sizes.iter().find(|(n, _)| *n == r).map_or(0, |(_, s)| *s);
        let t = std::cell::RefCell::new(t);
        v.write(
            n,
            value,
            &size,
            &mut |r| t.borrow_mut().read_register(tid, r),
            &mut |r, b| t.borrow_mut().write_register(tid, r, b),
        )
    }

    /// `g` through lldb's view.
    pub(super) fn lldb_read_all(&mut self, v: &LldbRegView, thread: Option<ThreadId>) {
        let r = self.reg_thread(thread).and_then(|(pid, tid)| {
            let t = self.target_mut(pid)?;
            v.read_all(&mut |r| t.read_register(tid, r))
        });
        match r {
            Ok(b) => self.send(&reply::hex_bytes(&b)),
            Err(e) => self.send_target_error(&e),
        }
    }

    /// `G` through lldb's view: the block's size is checked first, then
    /// the registers are written one by one.
    pub(super) fn lldb_write_all(
        &mut self,
        v: &LldbRegView,
        data: &[u8],
        thread: Option<ThreadId>,
    ) {
        let r = v.split_all(data).and_then(|parts| {
            parts
                .into_iter()
                .try_for_each(|(n, bytes)| self.lldb_write(v, n, bytes, thread))
        });
        self.send_unit(r);
    }

    /// Before a stop reply to an lldb client whose process ran: what the
    /// program wrote goes out first (lldb-server's order).
    pub(super) fn forward_program_output(&mut self) {
        if !(self.speaks_lldb() && self.is_running()) {
            return;
        }
        let Some(po) = self.role.program_output().cloned() else {
            return;
        };
        let data = po
            .borrow_mut()
            .take_all(crate::native::output::HELD_OUTPUT_LIMIT);
        if !data.is_empty() {
            self.send_program_output(&data);
        }
    }

    fn triple(&self) -> String {
        self.procs
            .values()
            .next()
            .map(|t| t.arch().triple.clone())
            .unwrap_or_else(|| "x86_64-pc-linux-gnu".to_string())
    }

    pub(super) fn handle_host_info(&mut self) {
        let uts = nix::sys::utsname::uname().ok();
        let mut r = format!(
            "triple:{};ptrsize:8;endian:little;ostype:linux;vendor:pc;watchpoint_exceptions_received:after;",
            hexs(&self.triple())
        );
        if let Some(u) = uts {
            let host = u.nodename().to_string_lossy().into_owned();
            let rel = u.release().to_string_lossy().into_owned();
            let _ = write!(r, "hostname:{};os_kernel:{};", hexs(&host), hexs(&rel));
            let ver: String = rel
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let _ = write!(r, "os_version:{};", ver.trim_end_matches('.'));
        }
        self.send(r.as_bytes());
    }

    pub(super) fn handle_process_info(&mut self) {
        let info = self.current_target().ok().and_then(|t| t.process_info());
        let Some(i) = info else {
            self.send_error(crate::error::ErrorCode::LldbNoProcessInfo, "no process");
            return;
        };
        let r = format!(
            "pid:{:x};parent-pid:{:x};real-uid:{:x};real-gid:{:x};effective-uid:{:x};effective-gid:{:x};\
             triple:{};ostype:linux;endian:little;ptrsize:8;",
            i.pid,
            i.ppid,
            i.uid,
            i.gid,
            i.euid,
            i.egid,
            hexs(&self.triple())
        );
        self.send(r.as_bytes());
    }

    pub(super) fn handle_get_working_dir(&mut self) {
        let dir = self
            .current_target()
            .ok()
            .and_then(|t| t.working_dir())
            .or_else(|| std::env::current_dir().ok());
        match dir {
            Some(d) => self.send(&reply::hex_bytes(d.as_os_str().as_encoded_bytes())),
            None => self.send_error(crate::error::ErrorCode::NoSuchFile, "no working directory"),
        }
    }

    pub(super) fn handle_memory_region(&mut self, addr: u64) {
        let r = self.current_target().and_then(|t| {
            t.support_memory_regions()
                .ok_or(crate::target::TargetError::Unsupported("memory regions"))?
                .memory_region(addr)
        });
        match r {
            Ok(m) => {
                let mut r = format!("start:{:x};size:{:x};", m.start, m.size);
                if m.read || m.write || m.exec {
                    r.push_str("permissions:");
                    if m.read {
                        r.push('r');
                    }
                    if m.write {
                        r.push('w');
                    }
                    if m.exec {
                        r.push('x');
                    }
                    r.push(';');
                }
                if let Some(n) = &m.name {
                    let _ = write!(r, "name:{};", hexs(n));
                }
                self.send(r.as_bytes());
            }
            Err(e) => self.send_target_error(&e),
        }
    }

    pub(super) fn handle_register_info(&mut self, n: u32) {
        if let Some(v) = self.current.and_then(|pid| self.lldb_view(pid)) {
            match v.register_info(n) {
                Some(r) => self.send(r.as_bytes()),
                None => self.send_error(
                    crate::error::ErrorCode::LldbNoRegisterInfo,
                    "no such register",
                ),
            }
            return;
        }
        let info = self
            .current_target()
            .ok()
            .and_then(|t| t.registers().iter().find(|r| r.regnum == n).cloned());
        let Some(r) = info else {
            // lldb stops iterating at the first error.
            self.send_error(
                crate::error::ErrorCode::LldbNoRegisterInfo,
                "no such register",
            );
            return;
        };
        let set = match r.feature.as_str() {
            f if f.ends_with(".core") || f.ends_with(".linux") || f.ends_with(".segments") => {
                "General Purpose Registers"
            }
            f if f.ends_with(".sse") => "SSE Registers",
            f if f.ends_with(".avx") => "AVX Registers",
            _ => "Other Registers",
        };
        let mut s = format!(
            "name:{};bitsize:{};encoding:{};format:{};set:{};",
            r.name, r.bitsize, r.encoding, r.format, set
        );
        if let Some(d) = r.dwarf {
            let _ = write!(s, "ehframe:{d};dwarf:{d};");
        }
        if let Some(g) = r.generic {
            let _ = write!(s, "generic:{g};");
        }
        self.send(s.as_bytes());
    }

    pub(super) fn handle_jthreads_info(&mut self) {
        let Some(pid) = self.current else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        };
        let stop = self.journal.event().cloned();
        let others = self.journal.other_reasons();
        let expedite_stack = self.role.expedites_stack();
        let mut buf = std::mem::take(&mut self.reply_scratch);
        buf.clear();
        // Names captured by this stop's record (jstopinfo) are reused: in
        // all-stop mode no thread ran since, so none renamed itself, and a
        // 1000-thread reply reads no `/proc` file per thread again. In
        // non-stop mode other threads run: their names are read.
        let journal = (!self.nonstop.on && stop.as_ref().map(StopEvent::pid) == Some(pid))
            .then_some(&self.journal);
        let Some(t) = self.procs.get_mut(&pid) else {
            self.reply_scratch = buf;
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        };
        let regs = ExpeditedKeys::new(crate::session::expedited_registers(t.registers()));
        let threads = match t.try_threads() {
            Ok(v) => v,
            Err(e) => {
                self.reply_scratch = buf;
                self.send_target_error(&e);
                return;
            }
        };
        // CPU threads carry their stack's top and frame-pointer chain
        // (`expedited_stack`); the GPU session's waves do not.
        let stack_regs = if expedite_stack {
            stack_registers(t.registers())
        } else {
            None
        };
        let mut rec = ThreadRecord::default();
        buf.push(b'[');
        for (i, tid) in threads.into_iter().enumerate() {
            rec.clear(tid);
            rec.name = match journal.and_then(|j| j.thread_name(tid)) {
                Some(name) => Some(name.to_owned()),
                None => t.thread_name(tid),
            };
            let this = match (&stop, others.get(&tid)) {
                (Some(StopEvent::Stopped { .. }), Some(o)) => Some(o),
                _ => stop.as_ref(),
            };
            if let Some(StopEvent::Stopped {
                tid: st,
                signal,
                kind,
                ..
            }) = this
            {
                if *st == tid {
                    let f = crate::session::journal::lldb_stop_fields(*signal, kind);
                    rec.description = f.description;
                    rec.reason = Some(f.reason);
                    rec.signal = Some(f.signal);
                } else {
                    rec.signal = Some(0);
                }
            }
            let (mut sp, mut fp) = (None, None);
            for r in &regs.nums {
                let v = t.read_register(tid, *r).ok();
                if let (Some((s, f)), Some(v)) = (stack_regs, &v) {
                    let word = v
                        .get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_le_bytes);
                    if *r == s {
                        sp = word;
                    }
                    if *r == f {
                        fp = word;
                    }
                }
                rec.push_register(v.as_deref());
            }
            if let (Some(sp), Some(fp)) = (sp, fp) {
                expedited_stack(&mut **t, sp, fp, &mut rec.memory);
            }
            if i > 0 {
                buf.push(b',');
            }
            rec.write_json(&regs, &mut buf);
        }
        buf.push(b']');
        self.send(&buf);
        self.reply_scratch = buf;
    }
}

/// The expedited register numbers of a `jThreadsInfo` reply and the order
/// their keys are written in: serde_json's map sorts its keys as strings
/// ("10" before "2"), and the reply keeps that order.
struct ExpeditedKeys {
    /// Register numbers in the order they are read.
    nums: Vec<u32>,
    /// `(key, position in nums)`, sorted by key, one per register number.
    sorted: Vec<(String, usize)>,
}

impl ExpeditedKeys {
    fn new(nums: Vec<u32>) -> Self {
        let mut sorted: Vec<(String, usize)> = nums
            .iter()
            .enumerate()
            .map(|(i, r)| (r.to_string(), i))
            .collect();
        // A register named twice keeps its last position (a map insert
        // replaces the earlier value; both reads are of the same register).
        sorted.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        sorted.dedup_by(|b, a| a.0 == b.0);
        ExpeditedKeys { nums, sorted }
    }
}

/// One thread of a `jThreadsInfo` reply, reused from thread to thread (its
/// buffers keep their capacity).
#[derive(Default)]
struct ThreadRecord {
    tid: u64,
    name: Option<String>,
    description: Option<String>,
    reason: Option<&'static str>,
    signal: Option<i32>,
    /// The registers' hex digits, back to back.
    hex: Vec<u8>,
    /// Per expedited register (in read order): its digits in `hex`, or
    /// `None` when it could not be read (then it is left out).
    values: Vec<Option<std::ops::Range<usize>>>,
    /// The stack pieces (CPU threads): `(address, bytes)`.
    memory: Vec<(u64, Vec<u8>)>,
}

impl ThreadRecord {
    fn clear(&mut self, tid: u64) {
        self.tid = tid;
        self.name = None;
        self.description = None;
        self.reason = None;
        self.signal = None;
        self.hex.clear();
        self.values.clear();
        self.memory.clear();
    }

    fn push_register(&mut self, v: Option<&[u8]>) {
        let range = v.map(|v| {
            let start = self.hex.len();
            hex::encode(v, &mut self.hex);
            start..self.hex.len()
        });
        self.values.push(range);
    }

    /// Appends the thread's JSON object to `out`: the bytes serde_json's
    /// `Value` (a sorted map) printed, written without building one.
    fn write_json(&self, keys: &ExpeditedKeys, out: &mut Vec<u8>) {
        let regs = RegistersJson { rec: self, keys };
        let memory = MemoryJson(&self.memory);
        let th = ThreadJson {
            description: self.description.as_deref(),
            memory: (!self.memory.is_empty()).then_some(memory),
            name: self.name.as_deref(),
            reason: self.reason,
            registers: regs,
            signal: self.signal,
            tid: self.tid,
        };
        // Writing into a Vec cannot fail, and these types always serialize.
        let _ = serde_json::to_writer(out, &th);
    }
}

/// A `jThreadsInfo` thread object, its fields in key order.
#[derive(serde::Serialize)]
struct ThreadJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    registers: RegistersJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    tid: u64,
}

/// `"registers": {"N": "hex", ...}` in key order.
struct RegistersJson<'a> {
    rec: &'a ThreadRecord,
    keys: &'a ExpeditedKeys,
}

impl serde::Serialize for RegistersJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (key, i) in &self.keys.sorted {
            let Some(Some(range)) = self.rec.values.get(*i) else {
                continue;
            };
            if let Some(v) = self
                .rec
                .hex
                .get(range.clone())
                .and_then(|v| std::str::from_utf8(v).ok())
            {
                m.serialize_entry(key.as_str(), v)?;
            }
        }
        m.end()
    }
}

/// `"memory": [{"address": N, "bytes": "hex"}, ...]`.
struct MemoryJson<'a>(&'a [(u64, Vec<u8>)]);

/// Bytes written as a JSON string of hex digits.
struct HexJson<'a>(&'a [u8]);

impl serde::Serialize for HexJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode_to_string(self.0))
    }
}

impl serde::Serialize for MemoryJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Piece<'a> {
            address: u64,
            bytes: HexJson<'a>,
        }
        s.collect_seq(self.0.iter().map(|(a, b)| Piece {
            address: *a,
            bytes: HexJson(b),
        }))
    }
}

/// lldb's settings and fixed-answer queries.
impl<R: SessionRole> Session<R> {
    pub(in crate::session) fn handle_thread_suffix_supported(&mut self) {
        self.features.thread_suffix = true;
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_list_threads_in_stop_reply(&mut self) {
        self.features.list_threads = true;
        self.features.stop_infos = self.role.lists_stop_infos();
        self.features.omit_thread_pcs = R::ROLE == crate::session::Role::Gpu;
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_thread_stop_info(&mut self, tid: u64) {
        let opts = self.features.stop_options();
        if let Some((pid, tid)) = self.journal.wants_quiet(tid) {
            if let Some(snap) = self.quiet_snapshot(pid, tid) {
                self.journal.add_quiet(snap);
            }
        }
        match self.journal.thread_reply(tid, &opts) {
            Some(r) => self.send(&r),
            None => self.send_error(
                crate::error::ErrorCode::NoSuchProcess,
                "no stop recorded for this thread",
            ),
        }
    }

    pub(in crate::session) fn handle_enable_error_strings(&mut self) {
        self.features.error_strings = true;
        self.send(&reply::ok());
    }

    /// lldb's qEcho: reply with the packet itself.
    pub(in crate::session) fn handle_echo(&mut self, e: &[u8]) {
        let mut p = b"qEcho:".to_vec();
        p.extend_from_slice(e);
        self.send(&p);
    }

    pub(in crate::session) fn handle_structured_data_plugins(&mut self) {
        self.send(b"[]");
    }

    pub(in crate::session) fn handle_trace_supported(&mut self) {
        self.send(b"E.tracing is not supported by gdbmux");
    }

    pub(in crate::session) fn handle_shlib_info_addr(&mut self) {
        self.send(&reply::empty());
    }

    pub(in crate::session) fn handle_watchpoint_support_info(&mut self) {
        let n = self
            .current_target()
            .map(|t| t.hw_watchpoint_slots())
            .unwrap_or(4);
        self.send(format!("num:{n};").as_bytes());
    }

    pub(in crate::session) fn handle_vattach_or_wait_supported(&mut self) {
        self.send(&reply::empty());
    }

    pub(in crate::session) fn handle_thread_extended_info(&mut self) {
        self.send(&reply::empty());
    }

    pub(in crate::session) fn handle_set_detach_on_error(&mut self) {
        self.send(&reply::ok());
    }

    pub(in crate::session) fn handle_server_version(&mut self) {
        self.send(format!("name:gdbmux;version:{};", env!("CARGO_PKG_VERSION")).as_bytes());
    }
}

/// Bytes from the stack pointer up that `jThreadsInfo` sends with each CPU
/// thread: the top of the stack, where lldb finds frame 0's spilled
/// arguments and return address, and (in the usual short frame of a
/// blocking call) the caller's frame link and locals. lldb's `thread list`
/// reads no more than this of a thread blocked in `read` (a pointer
/// argument into the caller's frame included; `rsp-bench --lldb-threads`
/// with lldb's packet log: 96 bytes left one `x` read, 64 left one per
/// thread). Every byte is two hex digits in a reply of 1000 threads that
/// lldb parses at every stop: 256 bytes made that reply 690 KB and lldb's
/// parse of it a quarter of a stop of all threads.
const STACK_TOP_BYTES: u64 = 128;
/// Frame-pointer links followed from `fp` (16 bytes each: saved `fp` and
/// return address); those outside the stack top are sent as their own
/// pieces, for a backtrace's first frames.
const FP_FRAMES: usize = 4;
/// A saved frame pointer further than this above the current one ends the
/// walk (not a frame of this stack).
const MAX_FRAME: u64 = 1 << 20;

/// Bytes below the stack pointer a stop reply sends with the stack top:
/// the x86-64 SysV red zone, where a leaf function keeps its locals and
/// spilled arguments without moving `rsp` (what lldb reads to show frame
/// 0's arguments after a step inside one).
const RED_ZONE: u64 = 128;

/// The stack memory of a stop reply's reporting thread
/// (`StopSnapshot::memory`): what `jThreadsInfo` sends
/// ([`expedited_stack`]), with the red zone below the stack pointer in
/// the same piece as the stack top. lldb serves a read from its cache only
/// when one piece holds all of it.
pub(in crate::session) fn stop_stack(
    t: &mut dyn crate::target::Target,
    sp: u64,
    fp: u64,
    out: &mut Vec<(u64, Vec<u8>)>,
) {
    let first = out.len();
    expedited_stack(t, sp, fp, out);
    let Some(low) = sp.checked_sub(RED_ZONE) else {
        return;
    };
    let mut red = vec![0u8; RED_ZONE as usize];
    if !matches!(t.read_memory_into(low, &mut red), Ok(n) if n == red.len()) {
        return;
    }
    match out[first..].iter_mut().find(|(a, _)| *a == sp) {
        Some((a, top)) => {
            red.append(top);
            *a = low;
            *top = red;
        }
        None => out.push((low, red)),
    }
    out[first..].sort_unstable_by_key(|(a, _)| *a);
}

/// The stack and frame pointers among a thread's expedited registers
/// `(regnum, bytes)`, when the target has both as 8-byte registers.
pub(in crate::session) fn stack_pointers(
    t: &dyn crate::target::Target,
    expedited: &[(u32, Vec<u8>)],
) -> Option<(u64, u64)> {
    let (s, f) = stack_registers(t.registers())?;
    let word = |r: u32| {
        expedited
            .iter()
            .find(|(n, _)| *n == r)
            .and_then(|(_, v)| v.get(..8)?.try_into().ok())
            .map(u64::from_le_bytes)
    };
    Some((word(s)?, word(f)?))
}

/// The register numbers of the stack and frame pointers, when the target
/// has both as 8-byte registers (x86-64).
fn stack_registers(regs: &[crate::target::RegisterInfo]) -> Option<(u32, u32)> {
    let find = |g: &str| {
        regs.iter()
            .find(|r| r.generic == Some(g) && r.bitsize == 64)
            .map(|r| r.regnum)
    };
    Some((find("sp")?, find("fp")?))
}

/// The `"memory"` array of a `jThreadsInfo` thread: the top of its stack
/// and the 16 bytes at each frame-pointer link, overlapping pieces merged,
/// each `{"address": N, "bytes": "hex"}`. lldb puts every piece in its
/// process memory cache (`ProcessGDBRemote::SetThreadStopInfo`, key
/// `memory`, as debugserver sends it), so listing the threads after a stop
/// no longer reads each thread's stack with its own `x` round trip
/// (lldb-server does not send it: the client then asks per thread).
/// Unreadable pieces are left out; lldb reads what it misses as before.
pub(in crate::session) fn expedited_stack(
    t: &mut dyn crate::target::Target,
    sp: u64,
    fp: u64,
    out: &mut Vec<(u64, Vec<u8>)>,
) {
    // The stack top first, in one read: the links that lie inside it (most
    // of a thread's first frames) are taken from it, not read again.
    let mut top = vec![0u8; STACK_TOP_BYTES as usize];
    let got = t.read_memory_into(sp, &mut top).unwrap_or_default();
    top.truncate(got);
    let in_top = |a: u64| -> Option<[u8; 16]> {
        let off = usize::try_from(a.checked_sub(sp)?).ok()?;
        top.get(off..off.checked_add(16)?)?.try_into().ok()
    };
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let mut f = fp;
    for _ in 0..FP_FRAMES {
        if f < sp || !f.is_multiple_of(8) || f.saturating_sub(sp) > MAX_FRAME * FP_FRAMES as u64 {
            break;
        }
        let link = match in_top(f) {
            Some(l) => l,
            None => {
                let mut l = [0u8; 16];
                if !matches!(t.read_memory_into(f, &mut l), Ok(16)) {
                    break;
                }
                ranges.push((f, f + 16));
                l
            }
        };
        let next = u64::from_le_bytes(link[..8].try_into().unwrap_or_default());
        if next <= f || next - f > MAX_FRAME {
            break;
        }
        f = next;
    }
    if !top.is_empty() {
        ranges.push((sp, sp + top.len() as u64));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    for (a, b) in merged {
        // The stack top alone is already read.
        if a == sp && b == sp + top.len() as u64 {
            out.push((a, std::mem::take(&mut top)));
            continue;
        }
        let mut buf = vec![0u8; (b - a) as usize];
        let n = match t.read_memory_into(a, &mut buf) {
            Ok(n) if n > 0 => n,
            _ => continue,
        };
        buf.truncate(n);
        out.push((a, buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reply as it was built before: a `serde_json::Value` tree per
    /// thread, printed once.
    fn value_built(keys: &ExpeditedKeys, recs: &[ThreadRecord]) -> String {
        let mut out = Vec::new();
        for rec in recs {
            let mut th = serde_json::Map::new();
            th.insert("tid".into(), rec.tid.into());
            if let Some(name) = &rec.name {
                th.insert("name".into(), name.clone().into());
            }
            if let Some(d) = &rec.description {
                th.insert("description".into(), d.clone().into());
            }
            if let Some(r) = rec.reason {
                th.insert("reason".into(), r.into());
            }
            if let Some(s) = rec.signal {
                th.insert("signal".into(), s.into());
            }
            let mut values = serde_json::Map::new();
            for (r, v) in keys.nums.iter().zip(&rec.values) {
                if let Some(range) = v {
                    let h = String::from_utf8(rec.hex[range.clone()].to_vec()).unwrap();
                    values.insert(r.to_string(), h.into());
                }
            }
            let memory: Vec<serde_json::Value> = rec
                .memory
                .iter()
                .map(|(a, b)| {
                    let mut m = serde_json::Map::new();
                    m.insert("address".into(), (*a).into());
                    m.insert("bytes".into(), hex::encode_to_string(b).into());
                    serde_json::Value::Object(m)
                })
                .collect();
            if !memory.is_empty() {
                th.insert("memory".into(), memory.into());
            }
            th.insert("registers".into(), values.into());
            out.push(serde_json::Value::Object(th));
        }
        serde_json::Value::Array(out).to_string()
    }

    fn written(keys: &ExpeditedKeys, recs: &[ThreadRecord]) -> String {
        let mut buf = vec![b'['];
        for (i, rec) in recs.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            rec.write_json(keys, &mut buf);
        }
        buf.push(b']');
        String::from_utf8(buf).unwrap()
    }

    fn record(tid: u64, regs: &[Option<&[u8]>]) -> ThreadRecord {
        let mut rec = ThreadRecord::default();
        rec.clear(tid);
        for r in regs {
            rec.push_register(*r);
        }
        rec
    }

    #[test]
    fn cpu_threads_match_the_value_built_reply() {
        // x86-64: fp 6, sp 7, pc 16 (keys sorted as strings: "16" < "6").
        let keys = ExpeditedKeys::new(vec![6, 7, 16]);
        let fp = 0x7ffd_1000u64.to_le_bytes();
        let sp = 0x7ffd_0f00u64.to_le_bytes();
        let pc = 0x40_1136u64.to_le_bytes();
        let mut first = record(4242, &[Some(&fp[..]), Some(&sp[..]), Some(&pc[..])]);
        first.name = Some("main \"q\"\\\u{1}é".into());
        first.reason = Some("signal");
        first.signal = Some(11);
        first.description = Some("fault at 0x0\n".into());
        first.memory = vec![(0x7ffd_0f00, vec![1, 2, 0xff]), (0x7ffd_1000, vec![0; 16])];
        let mut second = record(4243, &[None, Some(&sp[..]), Some(&pc[..])]);
        second.signal = Some(0);
        let third = record(4244, &[None, None, None]);
        let recs = [first, second, third];
        assert_eq!(written(&keys, &recs), value_built(&keys, &recs));
        assert_eq!(written(&keys, &[]), "[]");
    }

    #[test]
    fn gpu_waves_match_the_value_built_reply() {
        // A wave: pc and exec, no stack; a register named twice (fp = sp).
        let keys = ExpeditedKeys::new(vec![110, 110, 17, 2]);
        let pc = 0x7f00_1000u64.to_le_bytes();
        let exec = u64::MAX.to_le_bytes();
        let recs: Vec<ThreadRecord> = (0..40u64)
            .map(|i| {
                let mut r = record(
                    0x4000_0000 + i,
                    &[
                        Some(&pc[..]),
                        Some(&pc[..]),
                        Some(&exec[..]),
                        (i % 3 == 0).then_some(&exec[..4]),
                    ],
                );
                r.name = Some(format!("AMDGPU Wave 1:1:1:{} ({i},0,0)/0", i + 1));
                if i == 7 {
                    r.reason = Some("breakpoint");
                    r.signal = Some(5);
                } else {
                    r.signal = Some(0);
                }
                r
            })
            .collect();
        assert_eq!(written(&keys, &recs), value_built(&keys, &recs));
    }
}
