//! The fatal tier through the server (`stub::error`): when gdbmux itself
//! panics in its loop, the launched process is detached and left stopped
//! (a group stop, state `T`) for the next debugger, never killed, although
//! dropping a launched process, or the tracer's exit (`PTRACE_O_EXITKILL`),
//! would kill it.

mod native_support;

use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::RawFd;
use std::sync::mpsc;

use native_support::*;
use stub::native::LinuxProcess;
use stub::server::ServerBuilder;
use stub::stop::StopEvent;
use stub::target::ArchInfo;
use stub::target::BreakpointKind;
use stub::target::Pid;
use stub::target::RegisterInfo;
use stub::target::ResumePlan;
use stub::target::Target;
use stub::target::TargetResult;
use stub::target::Tid;

/// The address whose read makes the stub panic: a stand-in for a bug.
const BUG_ADDR: u64 = 0xdead_0000;

/// A launched process served as is, except that reading [`BUG_ADDR`]
/// panics inside the server's loop.
struct Buggy(LinuxProcess);

impl Target for Buggy {
    fn arch(&self) -> &ArchInfo {
        self.0.arch()
    }
    fn registers(&self) -> &[RegisterInfo] {
        self.0.registers()
    }
    fn pid(&self) -> Pid {
        self.0.pid()
    }
    fn threads(&self) -> Vec<Tid> {
        self.0.threads()
    }
    fn thread_name(&self, tid: Tid) -> Option<String> {
        self.0.thread_name(tid)
    }
    fn is_stopped(&self) -> bool {
        self.0.is_stopped()
    }
    fn read_register(&mut self, tid: Tid, regnum: u32) -> TargetResult<Vec<u8>> {
        self.0.read_register(tid, regnum)
    }
    fn write_register(&mut self, tid: Tid, regnum: u32, value: &[u8]) -> TargetResult<()> {
        self.0.write_register(tid, regnum, value)
    }
    fn read_g_registers(&mut self, tid: Tid) -> TargetResult<Vec<u8>> {
        self.0.read_g_registers(tid)
    }
    fn write_g_registers(&mut self, tid: Tid, data: &[u8]) -> TargetResult<()> {
        self.0.write_g_registers(tid, data)
    }
    fn pc(&mut self, tid: Tid) -> TargetResult<u64> {
        self.0.pc(tid)
    }
    fn read_memory(&mut self, addr: u64, len: usize) -> TargetResult<Vec<u8>> {
        assert_ne!(addr, BUG_ADDR, "a bug in the stub");
        self.0.read_memory(addr, len)
    }
    fn read_memory_into(&mut self, addr: u64, buf: &mut [u8]) -> TargetResult<usize> {
        assert_ne!(addr, BUG_ADDR, "a bug in the stub");
        self.0.read_memory_into(addr, buf)
    }
    fn write_memory(&mut self, addr: u64, data: &[u8]) -> TargetResult<usize> {
        self.0.write_memory(addr, data)
    }
    fn insert_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        self.0.insert_breakpoint(kind, addr, len)
    }
    fn remove_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: u64) -> TargetResult<()> {
        self.0.remove_breakpoint(kind, addr, len)
    }
    fn resume(&mut self, plan: &ResumePlan) -> TargetResult<()> {
        self.0.resume(plan)
    }
    fn interrupt(&mut self) -> TargetResult<()> {
        self.0.interrupt()
    }
    fn event_fd(&self) -> Option<RawFd> {
        self.0.event_fd()
    }
    fn process_events(&mut self) -> TargetResult<Option<StopEvent>> {
        self.0.process_events()
    }
    fn kill(&mut self) -> TargetResult<()> {
        self.0.kill()
    }
    fn detach(&mut self) -> TargetResult<()> {
        self.0.detach()
    }
    fn abandon(&mut self) -> TargetResult<()> {
        self.0.abandon()
    }
    fn attached(&self) -> bool {
        self.0.attached()
    }
}

fn packet(payload: &str) -> Vec<u8> {
    let sum = payload.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${payload}#{sum:02x}").into_bytes()
}

#[test]
fn a_panic_in_the_loop_leaves_the_launched_process_stopped() {
    let _g = serial();
    let (tx, rx) = mpsc::channel();
    // ptrace requests must come from the tracing thread: the process is
    // launched, served and abandoned on the server's thread.
    let server = std::thread::spawn(move || {
        let (p, _fd) = launch("single", &["3"]);
        let pid = p.pid();
        let stop = StopEvent::Stopped {
            pid,
            tid: u64::from(pid),
            signal: libc::SIGTRAP,
            kind: stub::stop::StopKind::Initial,
        };
        let server = ServerBuilder::new("127.0.0.1:0")
            .expect("address")
            .target(Box::new(Buggy(p)), stop)
            .build()
            .expect("server");
        tx.send((server.local_address(), pid)).expect("send");
        server.run()
    });
    let (addr, pid) = rx.recv().expect("the server starts");
    let mut c = TcpStream::connect(&addr).expect("connect");
    c.write_all(&packet(&format!("m{BUG_ADDR:x},4")))
        .expect("send");
    // The server panics: the connection closes without a reply.
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    assert!(
        !String::from_utf8_lossy(&rest).contains("$E"),
        "no reply: {rest:?}"
    );
    assert!(server.join().is_err(), "the server thread panicked");
    assert_left_stopped_then_kill(pid);
}
