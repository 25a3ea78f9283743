//! A tiny deterministic in-memory CPU written as a gdbstub 0.7 target, for
//! the adapter's tests, the oracle comparison in `protocol-tests` and the
//! `gdbstub_embed` example.
//!
//! It uses gdbstub_arch's ARMv4T register file (r0–r12, sp, lr, pc, cpsr)
//! but a toy instruction set, one little-endian 32-bit word per
//! instruction: `op = w >> 24`, `a = (w >> 16) & 0xf`, `imm = w & 0xffff`.
//!
//! | op | meaning |
//! |---|---|
//! | `0x01` | `r[a] += imm` |
//! | `0x02` | store `r[a]` (4 bytes) at `imm` |
//! | `0x03` | branch to `imm` |
//! | `0x04` | if `r[a] != 0` { `r[a] -= 1`; branch to `imm` } |
//! | `0xef` | exit with status `r0 & 0xff` |
//! | other | stop with SIGILL |
//!
//! Memory is [`MEM_SIZE`] bytes at address 0; anything above is unmapped
//! (reads stop there: partial reads; a read starting there is an error).
//! [`PROGRAM`] counts r0 up eleven times, storing it at [`COUNTER`], and
//! exits with status 11.

use std::net::TcpStream;

use ::gdbstub::common::Signal;
use ::gdbstub::conn::ConnectionExt;
use ::gdbstub::stub::run_blocking;
use ::gdbstub::stub::DisconnectReason;
use ::gdbstub::stub::GdbStub;
use ::gdbstub::stub::SingleThreadStopReason;
use ::gdbstub::target::ext::base::singlethread::SingleThreadBase;
use ::gdbstub::target::ext::base::singlethread::SingleThreadResume;
use ::gdbstub::target::ext::base::singlethread::SingleThreadResumeOps;
use ::gdbstub::target::ext::base::singlethread::SingleThreadSingleStep;
use ::gdbstub::target::ext::base::singlethread::SingleThreadSingleStepOps;
use ::gdbstub::target::ext::base::BaseOps;
use ::gdbstub::target::ext::breakpoints::Breakpoints;
use ::gdbstub::target::ext::breakpoints::BreakpointsOps;
use ::gdbstub::target::ext::breakpoints::HwWatchpoint;
use ::gdbstub::target::ext::breakpoints::HwWatchpointOps;
use ::gdbstub::target::ext::breakpoints::SwBreakpoint;
use ::gdbstub::target::ext::breakpoints::SwBreakpointOps;
use ::gdbstub::target::ext::breakpoints::WatchKind;
use ::gdbstub::target::Target;
use ::gdbstub::target::TargetError;
use ::gdbstub::target::TargetResult;
use ::gdbstub_arch::arm::reg::ArmCoreRegs;
use ::gdbstub_arch::arm::ArmBreakpointKind;
use ::gdbstub_arch::arm::Armv4t;

use super::Execute;

/// Size of the mapped memory at address 0.
pub const MEM_SIZE: usize = 0x1_0000;
/// Where [`PROGRAM`] stores its counter.
pub const COUNTER: u32 = 0x1000;
/// Address of the loop body ("work") in [`PROGRAM`].
pub const WORK: u32 = 0x4;
/// Initial stack pointer.
pub const STACK_TOP: u32 = 0x8000;

/// The demo program, loaded at address 0.
pub const PROGRAM: [u32; 5] = [
    0x0101_000a, // 0x00: r1 += 10
    0x0100_0001, // 0x04: work: r0 += 1
    0x0200_1000, // 0x08: [0x1000] = r0
    0x0401_0004, // 0x0c: if r1 != 0 { r1 -= 1; goto work }
    0xef00_0000, // 0x10: exit(r0)
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Continue,
    Step,
}

/// The in-memory CPU.
#[derive(Debug, Clone)]
pub struct DemoCpu {
    /// Register file.
    pub regs: ArmCoreRegs,
    /// Memory, [`MEM_SIZE`] bytes from address 0.
    pub mem: Vec<u8>,
    /// Software breakpoints.
    pub breakpoints: Vec<u32>,
    /// Write watchpoints `(addr, len)`.
    pub watchpoints: Vec<(u32, u32)>,
    mode: Mode,
    /// Instructions executed so far.
    pub steps: u64,
}

impl Default for DemoCpu {
    fn default() -> Self {
        Self::new()
    }
}

impl DemoCpu {
    /// A CPU with [`PROGRAM`] loaded, pc 0, sp [`STACK_TOP`].
    pub fn new() -> Self {
        let mut mem = vec![0u8; MEM_SIZE];
        for (i, w) in PROGRAM.iter().enumerate() {
            mem[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        let regs = ArmCoreRegs {
            sp: STACK_TOP,
            cpsr: 0x10,
            ..ArmCoreRegs::default()
        };
        Self {
            regs,
            mem,
            breakpoints: Vec::new(),
            watchpoints: Vec::new(),
            mode: Mode::Continue,
            steps: 0,
        }
    }

    fn word(&self, addr: u32) -> Option<u32> {
        let a = addr as usize;
        let b = self.mem.get(a..a + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Execute one instruction. Returns a stop reason if the instruction
    /// itself stops the CPU (exit, illegal instruction, watchpoint).
    pub fn step_one(&mut self) -> Option<SingleThreadStopReason<u32>> {
        let pc = self.regs.pc;
        let Some(w) = self.word(pc) else {
            return Some(SingleThreadStopReason::Signal(Signal::SIGSEGV));
        };
        self.steps += 1;
        let (op, a, imm) = (w >> 24, ((w >> 16) & 0xf) as usize, w & 0xffff);
        let mut next = pc.wrapping_add(4);
        let mut stop = None;
        let get = |r: &ArmCoreRegs, i: usize| match i {
            0..=12 => r.r[i],
            13 => r.sp,
            14 => r.lr,
            _ => r.pc,
        };
        let set = |r: &mut ArmCoreRegs, i: usize, v: u32| match i {
            0..=12 => r.r[i] = v,
            13 => r.sp = v,
            14 => r.lr = v,
            _ => r.pc = v,
        };
        match op {
            0x01 => {
                let v = get(&self.regs, a).wrapping_add(imm);
                set(&mut self.regs, a, v);
            }
            0x02 => {
                let v = get(&self.regs, a);
                let i = imm as usize;
                match self.mem.get_mut(i..i + 4) {
                    Some(m) => m.copy_from_slice(&v.to_le_bytes()),
                    None => return Some(SingleThreadStopReason::Signal(Signal::SIGSEGV)),
                }
                if self
                    .watchpoints
                    .iter()
                    .any(|&(wa, wl)| imm < wa.wrapping_add(wl) && wa < imm + 4)
                {
                    stop = Some(SingleThreadStopReason::Watch {
                        tid: (),
                        kind: WatchKind::Write,
                        addr: imm,
                    });
                }
            }
            0x03 => next = imm,
            0x04 => {
                let v = get(&self.regs, a);
                if v != 0 {
                    set(&mut self.regs, a, v - 1);
                    next = imm;
                }
            }
            0xef => {
                return Some(SingleThreadStopReason::Exited(
                    (self.regs.r[0] & 0xff) as u8,
                ))
            }
            _ => return Some(SingleThreadStopReason::Signal(Signal::SIGILL)),
        }
        self.regs.pc = next;
        stop
    }
}

impl Execute for DemoCpu {
    fn execute(&mut self, budget: usize) -> Option<SingleThreadStopReason<u32>> {
        for _ in 0..budget {
            if let Some(stop) = self.step_one() {
                return Some(stop);
            }
            if self.mode == Mode::Step {
                return Some(SingleThreadStopReason::DoneStep);
            }
            if self.breakpoints.contains(&self.regs.pc) {
                return Some(SingleThreadStopReason::SwBreak(()));
            }
        }
        None
    }
}

impl Target for DemoCpu {
    type Arch = Armv4t;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::SingleThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadBase for DemoCpu {
    fn read_registers(&mut self, regs: &mut ArmCoreRegs) -> TargetResult<(), Self> {
        *regs = self.regs.clone();
        Ok(())
    }

    fn write_registers(&mut self, regs: &ArmCoreRegs) -> TargetResult<(), Self> {
        self.regs = regs.clone();
        Ok(())
    }

    fn read_addrs(&mut self, start: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        let s = start as usize;
        if s >= MEM_SIZE {
            return Err(TargetError::Errno(14));
        }
        let n = data.len().min(MEM_SIZE - s);
        data[..n].copy_from_slice(&self.mem[s..s + n]);
        Ok(n)
    }

    fn write_addrs(&mut self, start: u32, data: &[u8]) -> TargetResult<(), Self> {
        let s = start as usize;
        match self.mem.get_mut(s..s.saturating_add(data.len())) {
            Some(m) if s < MEM_SIZE => {
                m.copy_from_slice(data);
                Ok(())
            }
            _ => Err(TargetError::Errno(14)),
        }
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadResume for DemoCpu {
    fn resume(&mut self, _signal: Option<Signal>) -> Result<(), Self::Error> {
        self.mode = Mode::Continue;
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for DemoCpu {
    fn step(&mut self, _signal: Option<Signal>) -> Result<(), Self::Error> {
        self.mode = Mode::Step;
        Ok(())
    }
}

impl Breakpoints for DemoCpu {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for DemoCpu {
    fn add_sw_breakpoint(
        &mut self,
        addr: u32,
        _kind: ArmBreakpointKind,
    ) -> TargetResult<bool, Self> {
        if !self.breakpoints.contains(&addr) {
            self.breakpoints.push(addr);
        }
        Ok(true)
    }

    fn remove_sw_breakpoint(
        &mut self,
        addr: u32,
        _kind: ArmBreakpointKind,
    ) -> TargetResult<bool, Self> {
        let before = self.breakpoints.len();
        self.breakpoints.retain(|&b| b != addr);
        Ok(self.breakpoints.len() != before)
    }
}

impl HwWatchpoint for DemoCpu {
    fn add_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        if kind != WatchKind::Write {
            return Ok(false);
        }
        self.watchpoints.push((addr, len));
        Ok(true)
    }

    fn remove_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        _kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        let before = self.watchpoints.len();
        self.watchpoints.retain(|&w| w != (addr, len));
        Ok(self.watchpoints.len() != before)
    }
}

/// gdbstub's blocking event loop for [`DemoCpu`]: run slices of
/// [`Execute::execute`], checking the connection for incoming bytes
/// (`\x03`) between slices.
#[derive(Debug)]
pub enum DemoEventLoop {}

impl run_blocking::BlockingEventLoop for DemoEventLoop {
    type Target = DemoCpu;
    type Connection = TcpStream;
    type StopReason = SingleThreadStopReason<u32>;

    fn wait_for_stop_reason(
        target: &mut DemoCpu,
        conn: &mut TcpStream,
    ) -> Result<
        run_blocking::Event<Self::StopReason>,
        run_blocking::WaitForStopReasonError<&'static str, std::io::Error>,
    > {
        loop {
            if let Some(stop) = target.execute(1024) {
                return Ok(run_blocking::Event::TargetStopped(stop));
            }
            if conn
                .peek()
                .map_err(run_blocking::WaitForStopReasonError::Connection)?
                .is_some()
            {
                let b = conn
                    .read()
                    .map_err(run_blocking::WaitForStopReasonError::Connection)?;
                return Ok(run_blocking::Event::IncomingData(b));
            }
        }
    }

    fn on_interrupt(target: &mut DemoCpu) -> Result<Option<Self::StopReason>, &'static str> {
        Ok(Some(target.interrupt()))
    }
}

/// Serve `cpu` with gdbstub's own engine over `conn` until the client
/// disconnects or the target exits (the oracle side of the comparison).
pub fn serve_with_gdbstub(conn: TcpStream, cpu: &mut DemoCpu) -> Result<DisconnectReason, String> {
    let stub = GdbStub::<DemoCpu, TcpStream>::new(conn);
    stub.run_blocking::<DemoEventLoop>(cpu)
        .map_err(|e| e.to_string())
}

/// The ARMv4T `Arch` the demo uses (re-exported for embedders).
pub type DemoArch = Armv4t;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::gdbstub::GdbstubAdapter;
    use crate::stop::StopEvent;
    use crate::target::Target as _;

    #[test]
    fn demo_program_exits_with_11() {
        let mut cpu = DemoCpu::new();
        assert_eq!(cpu.execute(1000), Some(SingleThreadStopReason::Exited(11)));
        assert_eq!(cpu.word(COUNTER), Some(11));
    }

    #[test]
    fn adapter_registers_memory_breakpoints_and_run() {
        let mut a = GdbstubAdapter::new(DemoCpu::new()).expect("adapter");
        let g = a.read_g_registers(1).expect("g");
        assert_eq!(g.len(), 168);
        assert_eq!(a.read_register(1, 13).expect("sp"), STACK_TOP.to_le_bytes());
        assert_eq!(a.pc(1).expect("pc"), 0);
        a.write_register(1, 2, &7u32.to_le_bytes()).expect("P");
        assert_eq!(a.inner().regs.r[2], 7);
        // Partial read at the end of memory; error past it.
        assert_eq!(
            a.read_memory(MEM_SIZE as u64 - 2, 8)
                .expect("partial")
                .len(),
            2
        );
        assert!(a.read_memory(MEM_SIZE as u64, 4).is_err());
        use crate::target::BreakpointKind as K;
        a.insert_breakpoint(K::Software, u64::from(WORK), 4)
            .expect("Z0");
        a.insert_breakpoint(K::Software, u64::from(WORK), 4)
            .expect("Z0 again");
        let cont = crate::target::ResumePlan {
            threads: vec![],
            default: Some(crate::target::ResumeAction::Continue(None)),
        };
        a.resume(&cont).expect("c");
        let ev = a.run_until_stop(16).expect("run").expect("stop");
        assert!(
            matches!(
                ev,
                StopEvent::Stopped {
                    signal: 5,
                    kind: crate::stop::StopKind::SwBreak,
                    ..
                }
            ),
            "{ev:?}"
        );
        assert_eq!(a.pc(1).expect("pc"), u64::from(WORK));
        a.remove_breakpoint(K::Software, u64::from(WORK), 4)
            .expect("z0");
        a.remove_breakpoint(K::Software, u64::from(WORK), 4)
            .expect("z0 again");
        a.resume(&cont).expect("c");
        let ev = a.run_until_stop(16).expect("run").expect("exit");
        assert_eq!(ev, StopEvent::Exited { pid: 1, code: 11 });
    }
}
