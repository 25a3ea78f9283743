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
        let Ok(t) = self.target_mut(pid) else {
            self.send_error(crate::error::ErrorCode::NoSuchProcess, "no process");
            return;
        };
        let regs: Vec<u32> = crate::session::expedited_registers(t.registers());
        let threads = match t.try_threads() {
            Ok(v) => v,
            Err(e) => {
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
        let mut out = Vec::with_capacity(threads.len());
        for tid in threads {
            let mut th = serde_json::Map::new();
            th.insert("tid".into(), tid.into());
            if let Some(name) = t.thread_name(tid) {
                th.insert("name".into(), name.into());
            }
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
                    if let Some(d) = f.description {
                        th.insert("description".into(), d.into());
                    }
                    th.insert("reason".into(), f.reason.into());
                    th.insert("signal".into(), f.signal.into());
                } else {
                    th.insert("signal".into(), 0.into());
                }
            }
            let mut values = serde_json::Map::new();
            for r in &regs {
                if let Ok(v) = t.read_register(tid, *r) {
                    values.insert(r.to_string(), hex::encode_to_string(&v).into());
                }
            }
            if let Some((sp, fp)) = stack_regs {
                let word = |r: u32| {
                    values
                        .get(&r.to_string())
                        .and_then(|v| v.as_str())
                        .and_then(|h| hex::decode(h.as_bytes()))
                        .and_then(|b| b.get(..8).and_then(|b| b.try_into().ok()))
                        .map(u64::from_le_bytes)
                };
                if let (Some(sp), Some(fp)) = (word(sp), word(fp)) {
                    let memory = expedited_stack(&mut **t, sp, fp);
                    if !memory.is_empty() {
                        th.insert("memory".into(), memory.into());
                    }
                }
            }
            th.insert("registers".into(), values.into());
            out.push(serde_json::Value::Object(th));
        }
        let out = serde_json::Value::Array(out).to_string();
        self.send(out.as_bytes());
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
/// thread: the top of the stack, where lldb finds frame 0's return address
/// and spilled arguments.
const STACK_TOP_BYTES: u64 = 256;
/// Frame-pointer links followed from `fp` (16 bytes each: saved `fp` and
/// return address).
const FP_FRAMES: usize = 16;
/// A saved frame pointer further than this above the current one ends the
/// walk (not a frame of this stack).
const MAX_FRAME: u64 = 1 << 20;

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
fn expedited_stack(t: &mut dyn crate::target::Target, sp: u64, fp: u64) -> Vec<serde_json::Value> {
    let mut ranges: Vec<(u64, u64)> = vec![(sp, sp.saturating_add(STACK_TOP_BYTES))];
    let mut f = fp;
    let mut link = [0u8; 16];
    for _ in 0..FP_FRAMES {
        if f < sp || !f.is_multiple_of(8) || f.saturating_sub(sp) > MAX_FRAME * FP_FRAMES as u64 {
            break;
        }
        if !matches!(t.read_memory_into(f, &mut link), Ok(16)) {
            break;
        }
        ranges.push((f, f + 16));
        let next = u64::from_le_bytes(link[..8].try_into().unwrap_or_default());
        if next <= f || next - f > MAX_FRAME {
            break;
        }
        f = next;
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut out = Vec::with_capacity(merged.len());
    for (a, b) in merged {
        let mut buf = vec![0u8; (b - a) as usize];
        let n = match t.read_memory_into(a, &mut buf) {
            Ok(n) if n > 0 => n,
            _ => continue,
        };
        let mut m = serde_json::Map::new();
        m.insert("address".into(), a.into());
        m.insert("bytes".into(), hex::encode_to_string(&buf[..n]).into());
        out.push(serde_json::Value::Object(m));
    }
    out
}
