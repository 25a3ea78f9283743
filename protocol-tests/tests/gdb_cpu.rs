//! Stock gdb 13 against the stub chosen by `RSP_STUB` (default gdbmux).
//!
//! All tests here are **required** for gdbmux and pass against gdbserver 13.
//! gdb 13 cannot use lldb-server at all (unknown target.xml architecture,
//! research §9), so they are skipped for `RSP_STUB=lldb-server`.

mod common;

use protocol_tests::drivers::fixture;
use protocol_tests::drivers::gdb::GdbSession;
use protocol_tests::drivers::Dialect;
use protocol_tests::drivers::Fixture;
use std::time::Duration;

use common::Inferior;

const WHY: &str = "gdb 13 rejects lldb-server's target description";

macro_rules! spec {
    ($name:literal) => {
        match common::spec($name, Dialect::gdb_compatible, WHY) {
            Some(s) => s,
            None => return,
        }
    };
}

/// The threads fixture runs this many seconds (default 30): enough for the
/// test, short enough that a program the debugger left running (detach,
/// disconnect) ends right after the test.
const THREADS_ARGS: &[&str] = &["3"];

fn remote(f: Fixture, addr: std::net::SocketAddr) -> GdbSession {
    GdbSession::new(Some(&fixture(f))).ex(format!("target remote {addr}"))
}

#[test]
fn remote_break_bt_registers_memory() {
    let spec = spec!("remote_break_bt_registers_memory");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let mut s = remote(Fixture::Single, stub.addr())
        .ex("break work")
        .ex("continue")
        .mark("bt")
        .ex("bt")
        .mark("regs")
        .ex("info registers rip")
        .ex("p $xmm0");
    if common::has_avx() {
        s = s.ex("info registers ymm0");
    }
    let out = s.mark("mem").ex("x/32xb $sp").run();
    out.assert_contains("Breakpoint 1, work (");
    out.assert_contains("#0  work (");
    out.assert_contains(" in main (");
    out.assert_contains("rip            0x");
    out.assert_contains("v4_float = {");
    if common::has_avx() {
        out.assert_contains("ymm0           {");
    }
    let mem = protocol_tests::drivers::gdb::section(&out.stdout, "mem");
    assert_eq!(
        mem.lines().filter(|l| l.starts_with("0x7ff")).count(),
        4,
        "x/32xb $sp should print 4 lines of 8 bytes:\n{}",
        out.dump()
    );
    out.assert_not_contains("Remote connection closed");
}

#[test]
fn remote_step_next_stepi_finish() {
    let spec = spec!("remote_step_next_stepi_finish");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr())
        .ex("break work")
        .ex("continue")
        .mark("next")
        .ex("next")
        .mark("step")
        .ex("step")
        .mark("stepi")
        .ex("stepi")
        .mark("finish")
        .ex("finish")
        .run();
    let sec = |n| protocol_tests::drivers::gdb::section(&out.stdout, n).to_string();
    assert!(
        sec("next").contains("g_counter += 1;"),
        "next:\n{}",
        out.dump()
    );
    assert!(
        sec("step").contains("return y ^ (x >> 1);"),
        "step:\n{}",
        out.dump()
    );
    assert!(sec("stepi").contains("0x"), "stepi:\n{}", out.dump());
    out.assert_contains("in main (");
    out.assert_contains("Value returned is $1 = 1");
}

#[test]
fn remote_threads() {
    let spec = spec!("remote_threads");
    let stub = common::launch(&spec, Fixture::Threads, THREADS_ARGS);
    let out = remote(Fixture::Threads, stub.addr())
        .ex("break thread_work")
        .ex("continue")
        .mark("threads")
        .ex("info threads")
        .mark("thread3")
        .ex("thread 3")
        .ex("bt 1")
        .run();
    out.assert_contains("Breakpoint 1, thread_work (");
    let threads = protocol_tests::drivers::gdb::section(&out.stdout, "threads");
    assert!(
        threads.lines().filter(|l| l.contains("Thread ")).count() >= 5,
        "info threads should list 5 threads:\n{}",
        out.dump()
    );
    out.assert_contains("[Switching to thread 3 ");
}

#[test]
fn remote_hw_watchpoint() {
    let spec = spec!("remote_hw_watchpoint");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr())
        .ex("break work")
        .ex("continue")
        .ex("delete")
        .ex("watch g_counter")
        .ex("continue")
        .run();
    out.assert_contains("Hardware watchpoint 2: g_counter");
    out.assert_contains("Old value = 0");
    out.assert_contains("New value = 1");
}

#[test]
fn remote_signal_sigusr1() {
    let spec = spec!("remote_signal_sigusr1");
    let stub = common::launch(&spec, Fixture::Threads, THREADS_ARGS);
    let out = remote(Fixture::Threads, stub.addr())
        .ex("break thread_work")
        .ex("continue")
        .ex("delete")
        .ex("break on_sigusr1")
        .ex("signal SIGUSR1")
        .run();
    out.assert_contains("Breakpoint 2, on_sigusr1 (sig=10)");
}

#[test]
fn remote_detach_lets_program_finish() {
    let spec = spec!("remote_detach_lets_program_finish");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr())
        .ex("break work")
        .ex("continue")
        .ex("detach")
        .run();
    out.assert_contains("Breakpoint 1, work (");
    out.assert_contains("detached]");
    assert!(
        stub.wait_output("done acc=", Duration::from_secs(10)),
        "the detached program did not finish; stub output:\n{}",
        stub.output()
    );
}

#[test]
fn remote_kill() {
    let spec = spec!("remote_kill");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr())
        .ex("break work")
        .ex("continue")
        .ex("kill")
        .run();
    out.assert_contains("Breakpoint 1, work (");
    out.assert_contains("killed]");
}

#[test]
fn remote_follow_fork_child() {
    let spec = spec!("remote_follow_fork_child");
    let stub = common::launch(&spec, Fixture::Fork, &[]);
    let out = remote(Fixture::Fork, stub.addr())
        .ex("set follow-fork-mode child")
        .ex("set detach-on-fork on")
        .ex("break child_work")
        .ex("continue")
        .ex("bt 1")
        .run();
    out.assert_contains("[Attaching after ");
    out.assert_contains("Breakpoint 1, child_work (x=7)");
}

#[test]
fn extended_remote_run() {
    let spec = spec!("extended_remote_run");
    let stub = spec.launch_multi().unwrap_or_else(|e| panic!("{e}"));
    let prog = fixture(Fixture::Single);
    let out = GdbSession::new(Some(&prog))
        .ex(format!("target extended-remote {}", stub.addr()))
        .ex(format!("set remote exec-file {}", prog.display()))
        .ex("break work")
        .ex("run")
        .ex("bt 1")
        .ex("kill")
        .run();
    out.assert_contains("Breakpoint 1, work (x=0)");
}

#[test]
fn extended_remote_attach_detach() {
    let spec = spec!("extended_remote_attach_detach");
    let inferior = Inferior::start(Fixture::Single, &["100000000000"]);
    let stub = spec.launch_multi().unwrap_or_else(|e| panic!("{e}"));
    let out = GdbSession::new(Some(&fixture(Fixture::Single)))
        .ex(format!("target extended-remote {}", stub.addr()))
        .ex(format!("attach {}", inferior.pid()))
        .ex("break work")
        .ex("continue")
        .ex("detach")
        .run();
    out.assert_contains("Breakpoint 1, work (");
    out.assert_contains("detached]");
}
