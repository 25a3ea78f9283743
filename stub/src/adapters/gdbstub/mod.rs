//! Serve any [gdbstub](https://docs.rs/gdbstub/0.7) target through gdbmux's
//! session engine.
//!
//! [`GdbstubAdapter`] wraps a `gdbstub::target::Target` whose `Arch`
//! implements [`AdapterArch`] and implements [`crate::target::Target`] for
//! it, so a [`crate::session::Session`] (and, once the server can take a
//! custom target, a gdbmux listener) debugs it like a native process.
//!
//! # Execution model: run-until-stop without blocking
//!
//! gdbstub targets do not run by themselves: `resume`/`step` only record
//! what the next run should do, and the *event loop* (user code, gdbstub's
//! `BlockingEventLoop::wait_for_stop_reason`) executes the target until it
//! stops. The adapter needs the same hook, as the [`Execute`] trait:
//! [`Execute::execute`] runs at most `budget` instructions and returns a
//! stop reason if the target stopped.
//!
//! gdbmux targets must never block, so the adapter runs the target in
//! slices, from [`crate::target::Target::process_events`]:
//!
//! 1. `resume` translates the plan into gdbstub's `resume`/`step`/
//!    `resume_range_step` calls, marks the target running, and makes the
//!    adapter's [`event_fd`](crate::target::Target::event_fd) (one end of a
//!    socket pair) readable by writing one byte to the other end.
//! 2. The server loop (or a test) sees the fd readable and calls
//!    `process_events`, which consumes the byte and executes one slice of
//!    [`GdbstubAdapter::SLICE`] instructions.
//! 3. If the target stopped, the stop is returned (converted to a
//!    [`StopEvent`]); otherwise one new byte re-arms the fd, so the loop
//!    comes back for the next slice (this also works with an
//!    edge-triggered loop, every slice is a new write). Client packets,
//!    including `\x03`, are served between slices.
//!
//! [`GdbstubAdapter::run_until_stop`] drives the same slices in a plain
//! loop, for in-process use without any event loop.
//!
//! # Scope
//!
//! Single-threaded gdbstub targets (`BaseOps::SingleThread`), reported as
//! process 1, thread 1 (gdbstub's own fake ids). Registers go through the
//! whole-file `read_registers`/`write_registers`; `p`/`P` slice or patch
//! that block using the [`AdapterArch`] table. Bytes that gdbstub
//! serializes as "unavailable" (`xx`) read as zero. Software and hardware
//! breakpoints and watchpoints go to the target's `Breakpoints` extension
//! when it offers them. `kill` only marks the target dead (the session
//! reports the termination); `detach` removes every breakpoint and resumes
//! the target, which then never runs again unless the embedder keeps
//! calling [`Execute::execute`].

mod arch;
pub mod demo;

use std::io::Read;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;

use ::gdbstub::arch::Arch;
use ::gdbstub::arch::BreakpointKind as _;
use ::gdbstub::arch::Registers as _;
use ::gdbstub::common::Signal;
use ::gdbstub::stub::SingleThreadStopReason;
use ::gdbstub::target::ext::base::BaseOps;
use ::gdbstub::target::ext::breakpoints::WatchKind;
use num_traits::FromPrimitive;
use num_traits::ToPrimitive;

pub use arch::AdapterArch;

use crate::packet::signals::gdb_to_linux;
use crate::packet::signals::linux_to_gdb;
use crate::stop::StopEvent;
use crate::stop::StopKind;
use crate::target::ArchInfo;
use crate::target::BreakpointKind;
use crate::target::Pid;
use crate::target::RegisterInfo;
use crate::target::ResumeAction;
use crate::target::ResumePlan;
use crate::target::TargetError;
use crate::target::TargetResult;
use crate::target::Tid;

/// Process id the adapter reports (gdbstub's single-thread fake pid).
pub const PID: Pid = 1;
/// Thread id the adapter reports (gdbstub's single-thread fake tid).
pub const TID: Tid = 1;

/// The execution hook of a gdbstub target: what a gdbstub
/// `BlockingEventLoop::wait_for_stop_reason` would do, in bounded slices.
pub trait Execute: ::gdbstub::target::Target {
    /// Execute at most `budget` instructions of the target as last resumed
    /// (`resume`, `step`, range step). Returns the stop reason once it
    /// stopped, `None` if it is still running after `budget` instructions.
    fn execute(
        &mut self,
        budget: usize,
    ) -> Option<SingleThreadStopReason<<Self::Arch as Arch>::Usize>>;

    /// Stop a running target on request (`\x03`); the reason to report.
    fn interrupt(&mut self) -> SingleThreadStopReason<<Self::Arch as Arch>::Usize> {
        SingleThreadStopReason::Signal(Signal::SIGINT)
    }
}

/// Errors building an adapter.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// The target is multi-threaded (`BaseOps::MultiThread`).
    #[error("multi-threaded gdbstub targets are not supported by the adapter")]
    MultiThread,
    /// The register table does not match the serialized register file.
    #[error("register table covers {table} bytes but the target serializes {serialized}")]
    Layout {
        /// Bytes covered by [`AdapterArch::register_infos`].
        table: usize,
        /// Bytes written by `gdb_serialize`.
        serialized: usize,
    },
    /// The wake-up socket pair could not be created.
    #[error("event socket: {0}")]
    Io(#[from] std::io::Error),
}

/// A gdbstub target served as a gdbmux [`crate::target::Target`].
pub struct GdbstubAdapter<T: Execute>
where
    T::Arch: AdapterArch,
{
    target: T,
    arch: ArchInfo,
    regs: Vec<RegisterInfo>,
    /// Byte offset of each register of `regs` in the `g` block.
    offsets: Vec<usize>,
    g_len: usize,
    running: bool,
    interrupt: bool,
    dead: bool,
    attached: bool,
    breakpoints: Vec<(BreakpointKind, u64, u64)>,
    wake_rx: UnixStream,
    wake_tx: UnixStream,
    armed: bool,
}

impl<T: Execute> std::fmt::Debug for GdbstubAdapter<T>
where
    T::Arch: AdapterArch,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GdbstubAdapter")
            .field("arch", &self.arch.gdb_arch)
            .field("running", &self.running)
            .field("breakpoints", &self.breakpoints)
            .finish_non_exhaustive()
    }
}

fn target_err<E>(what: &'static str, e: ::gdbstub::target::TargetError<E>) -> TargetError {
    use ::gdbstub::target::TargetError as G;
    match e {
        G::Errno(n) => TargetError::Errno {
            what: what.to_string(),
            errno: nix::errno::Errno::from_raw(i32::from(n)),
        },
        G::NonFatal => TargetError::Errno {
            what: what.to_string(),
            errno: nix::errno::Errno::EIO,
        },
        _ => TargetError::Invalid(format!("{what}: fatal gdbstub target error")),
    }
}

fn fatal(what: &'static str) -> TargetError {
    TargetError::Invalid(format!("{what}: fatal gdbstub target error"))
}

impl<T: Execute> GdbstubAdapter<T>
where
    T::Arch: AdapterArch,
{
    /// Instructions executed per `process_events` slice.
    pub const SLICE: usize = 4096;

    /// Wrap `target` (stopped). Checks that the register table matches what
    /// the target serializes.
    pub fn new(mut target: T) -> Result<Self, AdapterError> {
        if matches!(target.base_ops(), BaseOps::MultiThread(_)) {
            return Err(AdapterError::MultiThread);
        }
        let regs = T::Arch::register_infos();
        let mut offsets = Vec::with_capacity(regs.len());
        let mut g_len = 0usize;
        for r in &regs {
            offsets.push(g_len);
            g_len += (r.bitsize as usize).div_ceil(8);
        }
        let mut serialized = 0usize;
        <T::Arch as Arch>::Registers::default().gdb_serialize(|_| serialized += 1);
        if serialized != g_len {
            return Err(AdapterError::Layout {
                table: g_len,
                serialized,
            });
        }
        let (wake_rx, wake_tx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        Ok(Self {
            target,
            arch: T::Arch::arch_info(),
            regs,
            offsets,
            g_len,
            running: false,
            interrupt: false,
            dead: false,
            attached: false,
            breakpoints: Vec::new(),
            wake_rx,
            wake_tx,
            armed: false,
        })
    }

    /// Report the target as attached (the session then detaches instead of
    /// killing it when the client disconnects).
    pub fn with_attached(mut self, attached: bool) -> Self {
        self.attached = attached;
        self
    }

    /// The wrapped target.
    pub fn inner(&self) -> &T {
        &self.target
    }

    /// The wrapped target, mutably.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.target
    }

    /// The stop to adopt the target with: a quiet initial stop of thread 1.
    pub fn initial_stop() -> StopEvent {
        StopEvent::Stopped {
            pid: PID,
            tid: TID,
            signal: 5,
            kind: StopKind::Initial,
        }
    }

    /// Run slices until the target stops (or `max_slices` pass); for use
    /// without an event loop.
    pub fn run_until_stop(&mut self, max_slices: usize) -> TargetResult<Option<StopEvent>> {
        for _ in 0..max_slices {
            if let Some(ev) = crate::target::Target::process_events(self)? {
                return Ok(Some(ev));
            }
            if !self.running {
                return Ok(None);
            }
        }
        Ok(None)
    }

    fn arm(&mut self) {
        if !self.armed {
            // A full socket buffer only means a wake-up is already pending.
            let _ = self.wake_tx.write(&[1]);
            self.armed = true;
        }
    }

    fn disarm(&mut self) {
        let mut buf = [0u8; 64];
        while matches!(self.wake_rx.read(&mut buf), Ok(n) if n > 0) {}
        self.armed = false;
    }

    fn usize_of(v: u64) -> TargetResult<<T::Arch as Arch>::Usize> {
        <T::Arch as Arch>::Usize::from_u64(v)
            .ok_or_else(|| TargetError::Invalid(format!("{v:#x} does not fit the address size")))
    }

    fn check_stopped(&self) -> TargetResult<()> {
        if self.dead {
            Err(TargetError::Gone(TID))
        } else if self.running {
            Err(TargetError::Running)
        } else {
            Ok(())
        }
    }

    fn check_tid(tid: Tid) -> TargetResult<()> {
        if tid == TID {
            Ok(())
        } else {
            Err(TargetError::NoSuchThread(tid))
        }
    }

    fn read_regs(&mut self) -> TargetResult<<T::Arch as Arch>::Registers> {
        let mut regs = <T::Arch as Arch>::Registers::default();
        match self.target.base_ops() {
            BaseOps::SingleThread(ops) => ops
                .read_registers(&mut regs)
                .map_err(|e| target_err("read registers", e))?,
            BaseOps::MultiThread(_) => return Err(TargetError::Unsupported("multi-thread")),
        }
        Ok(regs)
    }

    fn serialize(regs: &<T::Arch as Arch>::Registers) -> Vec<u8> {
        let mut out = Vec::new();
        regs.gdb_serialize(|b| out.push(b.unwrap_or(0)));
        out
    }

    fn write_block(&mut self, data: &[u8]) -> TargetResult<()> {
        let mut regs = <T::Arch as Arch>::Registers::default();
        regs.gdb_deserialize(data).map_err(|()| {
            TargetError::Invalid(format!("register block of {} bytes rejected", data.len()))
        })?;
        match self.target.base_ops() {
            BaseOps::SingleThread(ops) => ops
                .write_registers(&regs)
                .map_err(|e| target_err("write registers", e)),
            BaseOps::MultiThread(_) => Err(TargetError::Unsupported("multi-thread")),
        }
    }

    fn reg_index(&self, regnum: u32) -> TargetResult<usize> {
        self.regs
            .iter()
            .position(|r| r.regnum == regnum)
            .ok_or(TargetError::NoSuchRegister(regnum))
    }

    fn convert(&self, r: SingleThreadStopReason<<T::Arch as Arch>::Usize>) -> StopEvent {
        let stopped = |signal: i32, kind| StopEvent::Stopped {
            pid: PID,
            tid: TID,
            signal,
            kind,
        };
        let linux = |s: Signal| gdb_to_linux(s.0).unwrap_or(i32::from(s.0));
        let addr = |a: <T::Arch as Arch>::Usize| a.to_u64().unwrap_or(0);
        match r {
            SingleThreadStopReason::DoneStep => stopped(5, StopKind::Step),
            SingleThreadStopReason::Exited(code) => StopEvent::Exited {
                pid: PID,
                code: i32::from(code),
            },
            SingleThreadStopReason::Terminated(s) => StopEvent::Terminated {
                pid: PID,
                signal: linux(s),
            },
            SingleThreadStopReason::Signal(s)
            | SingleThreadStopReason::SignalWithThread { signal: s, .. } => {
                let kind = if s == Signal::SIGINT && self.interrupt {
                    StopKind::Interrupt
                } else {
                    StopKind::Signal
                };
                stopped(linux(s), kind)
            }
            SingleThreadStopReason::SwBreak(()) => stopped(5, StopKind::SwBreak),
            SingleThreadStopReason::HwBreak(()) => stopped(5, StopKind::HwBreak),
            SingleThreadStopReason::Watch { kind, addr: a, .. } => {
                let a = addr(a);
                let kind = match kind {
                    WatchKind::Write => StopKind::Watch { addr: a },
                    WatchKind::Read => StopKind::ReadWatch { addr: a },
                    WatchKind::ReadWrite => StopKind::AccessWatch { addr: a },
                };
                stopped(5, kind)
            }
            // Reverse execution, fork/exec catchpoints and future reasons.
            _ => stopped(5, StopKind::Signal),
        }
    }

    fn set_breakpoint(
        &mut self,
        kind: BreakpointKind,
        addr: u64,
        len: u64,
        on: bool,
    ) -> TargetResult<bool> {
        let a = Self::usize_of(addr)?;
        let Some(bp) = self.target.support_breakpoints() else {
            return Err(TargetError::Unsupported("breakpoints"));
        };
        let r = match kind {
            BreakpointKind::Software | BreakpointKind::Hardware => {
                let k = <T::Arch as Arch>::BreakpointKind::from_usize(len as usize)
                    .ok_or_else(|| TargetError::Invalid(format!("breakpoint kind {len}")))?;
                if kind == BreakpointKind::Software {
                    let ops = bp
                        .support_sw_breakpoint()
                        .ok_or(TargetError::Unsupported("software breakpoints"))?;
                    if on {
                        ops.add_sw_breakpoint(a, k)
                    } else {
                        ops.remove_sw_breakpoint(a, k)
                    }
                } else {
                    let ops = bp
                        .support_hw_breakpoint()
                        .ok_or(TargetError::Unsupported("hardware breakpoints"))?;
                    if on {
                        ops.add_hw_breakpoint(a, k)
                    } else {
                        ops.remove_hw_breakpoint(a, k)
                    }
                }
            }
            BreakpointKind::WatchWrite
            | BreakpointKind::WatchRead
            | BreakpointKind::WatchAccess => {
                let wk = match kind {
                    BreakpointKind::WatchWrite => WatchKind::Write,
                    BreakpointKind::WatchRead => WatchKind::Read,
                    _ => WatchKind::ReadWrite,
                };
                let l = Self::usize_of(len)?;
                let ops = bp
                    .support_hw_watchpoint()
                    .ok_or(TargetError::Unsupported("watchpoints"))?;
                if on {
                    ops.add_hw_watchpoint(a, l, wk)
                } else {
                    ops.remove_hw_watchpoint(a, l, wk)
                }
            }
        };
        r.map_err(|e| target_err("breakpoint", e))
    }
}

impl<T: Execute> crate::target::Target for GdbstubAdapter<T>
where
    T::Arch: AdapterArch,
{
    fn arch(&self) -> &ArchInfo {
        &self.arch
    }

    fn registers(&self) -> &[RegisterInfo] {
        &self.regs
    }

    fn pid(&self) -> Pid {
        PID
    }

    fn threads(&self) -> Vec<Tid> {
        if self.dead {
            Vec::new()
        } else {
            vec![TID]
        }
    }

    fn thread_name(&self, _tid: Tid) -> Option<String> {
        None
    }

    fn is_stopped(&self) -> bool {
        !self.running
    }

    fn read_register(&mut self, tid: Tid, regnum: u32) -> TargetResult<Vec<u8>> {
        Self::check_tid(tid)?;
        self.check_stopped()?;
        let i = self.reg_index(regnum)?;
        let block = self.read_g_registers(tid)?;
        let (off, len) = (self.offsets[i], (self.regs[i].bitsize as usize).div_ceil(8));
        block
            .get(off..off + len)
            .map(<[u8]>::to_vec)
            .ok_or(TargetError::NoSuchRegister(regnum))
    }

    fn write_register(&mut self, tid: Tid, regnum: u32, value: &[u8]) -> TargetResult<()> {
        Self::check_tid(tid)?;
        self.check_stopped()?;
        let i = self.reg_index(regnum)?;
        let len = (self.regs[i].bitsize as usize).div_ceil(8);
        if value.len() != len {
            return Err(TargetError::Invalid(format!(
                "register {regnum} is {len} bytes, got {}",
                value.len()
            )));
        }
        let mut block = self.read_g_registers(tid)?;
        let off = self.offsets[i];
        block[off..off + len].copy_from_slice(value);
        self.write_block(&block)
    }

    fn read_g_registers(&mut self, tid: Tid) -> TargetResult<Vec<u8>> {
        Self::check_tid(tid)?;
        self.check_stopped()?;
        let regs = self.read_regs()?;
        let out = Self::serialize(&regs);
        debug_assert_eq!(out.len(), self.g_len);
        Ok(out)
    }

    fn write_g_registers(&mut self, tid: Tid, data: &[u8]) -> TargetResult<()> {
        Self::check_tid(tid)?;
        self.check_stopped()?;
        if data.len() != self.g_len {
            return Err(TargetError::Invalid(format!(
                "g block is {} bytes, expected {}",
                data.len(),
                self.g_len
            )));
        }
        self.write_block(data)
    }

    fn pc(&mut self, tid: Tid) -> TargetResult<u64> {
        Self::check_tid(tid)?;
        self.check_stopped()?;
        let regs = self.read_regs()?;
        regs.pc().to_u64().ok_or(fatal("pc"))
    }

    fn read_memory(&mut self, addr: u64, len: usize) -> TargetResult<Vec<u8>> {
        self.check_stopped()?;
        let a = Self::usize_of(addr)?;
        let mut buf = vec![0u8; len];
        let n = match self.target.base_ops() {
            BaseOps::SingleThread(ops) => ops
                .read_addrs(a, &mut buf)
                .map_err(|e| target_err("read memory", e))?,
            BaseOps::MultiThread(_) => return Err(TargetError::Unsupported("multi-thread")),
        };
        if n == 0 && len > 0 {
            return Err(TargetError::Errno {
                what: format!("read {len} bytes at {addr:#x}"),
                errno: nix::errno::Errno::EIO,
            });
        }
        buf.truncate(n.min(len));
        Ok(buf)
    }

    fn write_memory(&mut self, addr: u64, data: &[u8]) -> TargetResult<usize> {
        self.check_stopped()?;
        let a = Self::usize_of(addr)?;
        match self.target.base_ops() {
            BaseOps::SingleThread(ops) => ops
                .write_addrs(a, data)
                .map_err(|e| target_err("write memory", e))?,
            BaseOps::MultiThread(_) => return Err(TargetError::Unsupported("multi-thread")),
        }
        Ok(data.len())
    }

    fn insert_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        self.check_stopped()?;
        if self.breakpoints.contains(&(kind, addr, len)) {
            return Ok(());
        }
        if !self.set_breakpoint(kind, addr, len, true)? {
            return Err(TargetError::Invalid(format!(
                "target refused breakpoint {kind:?} at {addr:#x}"
            )));
        }
        self.breakpoints.push((kind, addr, len));
        Ok(())
    }

    fn remove_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        self.check_stopped()?;
        let Some(i) = self
            .breakpoints
            .iter()
            .position(|b| *b == (kind, addr, len))
        else {
            return Ok(());
        };
        self.breakpoints.swap_remove(i);
        self.set_breakpoint(kind, addr, len, false)?;
        Ok(())
    }

    fn support_range_step(&mut self) -> Option<crate::target::RangeStepping> {
        let BaseOps::SingleThread(ops) = self.target.base_ops() else {
            return None;
        };
        ops.support_resume()?
            .support_range_step()
            .map(|_| crate::target::RangeStepping)
    }

    fn resume(&mut self, plan: &ResumePlan) -> TargetResult<()> {
        self.check_stopped()?;
        let action = plan
            .threads
            .iter()
            .find(|(t, _)| *t == TID)
            .map(|(_, a)| *a)
            .or(plan.default)
            .unwrap_or(ResumeAction::Stop);
        let sig = |s: Option<i32>| s.filter(|s| *s != 0).map(|s| Signal(linux_to_gdb(s)));
        let BaseOps::SingleThread(ops) = self.target.base_ops() else {
            return Err(TargetError::Unsupported("multi-thread"));
        };
        let ops = ops
            .support_resume()
            .ok_or(TargetError::Unsupported("resume"))?;
        match action {
            ResumeAction::Stop => return Ok(()),
            ResumeAction::Continue(s) => ops.resume(sig(s)).map_err(|_| fatal("resume"))?,
            ResumeAction::Step(s) => ops
                .support_single_step()
                .ok_or(TargetError::Unsupported("single step"))?
                .step(sig(s))
                .map_err(|_| fatal("step"))?,
            ResumeAction::RangeStep { start, end } => {
                let (s, e) = (Self::usize_of(start)?, Self::usize_of(end)?);
                ops.support_range_step()
                    .ok_or(TargetError::Unsupported("range step"))?
                    .resume_range_step(s, e)
                    .map_err(|_| fatal("range step"))?
            }
        }
        self.running = true;
        self.interrupt = false;
        self.arm();
        Ok(())
    }

    fn interrupt(&mut self) -> TargetResult<()> {
        if self.running {
            self.interrupt = true;
            self.arm();
        }
        Ok(())
    }

    fn event_fd(&self) -> Option<RawFd> {
        Some(self.wake_rx.as_raw_fd())
    }

    fn process_events(&mut self) -> TargetResult<Option<StopEvent>> {
        self.disarm();
        if !self.running || self.dead {
            return Ok(None);
        }
        let stop = if self.interrupt {
            Some(self.target.interrupt())
        } else {
            self.target.execute(Self::SLICE)
        };
        match stop {
            Some(r) => {
                let ev = self.convert(r);
                self.running = false;
                self.interrupt = false;
                if !matches!(ev, StopEvent::Stopped { .. }) {
                    self.dead = true;
                }
                Ok(Some(ev))
            }
            None => {
                self.arm();
                Ok(None)
            }
        }
    }

    fn kill(&mut self) -> TargetResult<()> {
        self.dead = true;
        self.running = false;
        self.disarm();
        Ok(())
    }

    fn detach(&mut self) -> TargetResult<()> {
        for (kind, addr, len) in std::mem::take(&mut self.breakpoints) {
            self.set_breakpoint(kind, addr, len, false)?;
        }
        if !self.running && !self.dead {
            self.resume(&ResumePlan {
                threads: Vec::new(),
                default: Some(ResumeAction::Continue(None)),
            })?;
        }
        Ok(())
    }

    fn attached(&self) -> bool {
        self.attached
    }
}
