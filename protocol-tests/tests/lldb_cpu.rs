//! Stock lldb 23.1 against the stub chosen by `RSP_STUB` (default gdbmux).
//!
//! All tests are **required** for gdbmux and pass against lldb-server 23.
//! Against gdbserver 13 the single-threaded ones pass through lldb's
//! fallbacks; multi-threaded ones are skipped (research §9: stale swbreak
//! events and native signal numbers break lldb → gdbserver).

mod common;

use std::time::Duration;

use protocol_tests::drivers::fixture;
use protocol_tests::drivers::fixtures::source_dir;
use protocol_tests::drivers::lldb::LldbSession;
use protocol_tests::drivers::process;
use protocol_tests::drivers::Dialect;
use protocol_tests::drivers::Fixture;

use common::Inferior;

fn any(_: Dialect) -> bool {
    true
}

macro_rules! spec {
    ($name:literal) => {
        match common::spec($name, any, "") {
            Some(s) => s,
            None => return,
        }
    };
    ($name:literal, threads) => {
        match common::spec(
            $name,
            Dialect::lldb_threads_compatible,
            "lldb 23 mis-handles gdbserver's queued multi-thread stops",
        ) {
            Some(s) => s,
            None => return,
        }
    };
}

/// The threads fixture runs this many seconds (default 30): enough for the
/// test, short enough that a program the debugger left running (detach,
/// disconnect) ends right after the test.
const THREADS_ARGS: &[&str] = &["3"];

fn remote(f: Fixture, port: u16) -> LldbSession {
    LldbSession::new(Some(&fixture(f))).o(format!("gdb-remote {port}"))
}

#[test]
fn lldb_break_registers_memory_threads() {
    let spec = spec!("lldb_break_registers_memory_threads");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("register read --all")
        .o("memory read $sp")
        .o("thread list")
        .run();
    out.assert_contains("stop reason = breakpoint 1.1");
    out.assert_contains("single`work(x=0)");
    out.assert_contains("rip = 0x");
    out.assert_contains("xmm0 = {");
    if common::has_avx() && spec.dialect != Dialect::Gdbserver {
        out.assert_contains("ymm0 = {");
    }
    out.assert_contains("0x7ff");
    out.assert_contains("* thread #1: tid = ");
    out.assert_not_contains("error:");
}

#[test]
fn lldb_watchpoint() {
    let spec = spec!("lldb_watchpoint");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("breakpoint delete --force")
        .o("watchpoint set variable g_counter")
        .o("process continue")
        .run();
    out.assert_contains("Watchpoint created: Watchpoint 1");
    out.assert_contains("stop reason = watchpoint 1");
    out.assert_contains("old value: 0");
    out.assert_contains("new value: 1");
}

#[test]
fn lldb_step_over() {
    let spec = spec!("lldb_step_over");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("thread step-over")
        .run();
    out.assert_contains("stop reason = step over");
    out.assert_contains("-> 14");
}

#[test]
fn lldb_threads() {
    let spec = spec!("lldb_threads", threads);
    let stub = common::launch(&spec, Fixture::Threads, THREADS_ARGS);
    let out = remote(Fixture::Threads, stub.addr().port())
        .o("breakpoint set -n thread_work")
        .o("process continue")
        .o("thread list")
        .run();
    out.assert_contains("stop reason = breakpoint 1.1");
    let n = out
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("thread #") || l.starts_with("* thread #"))
        .count();
    assert!(n >= 5, "thread list should show 5 threads:\n{}", out.dump());
}

#[test]
fn lldb_signal_while_running() {
    let spec = spec!("lldb_signal_while_running", threads);
    let stub = common::launch(&spec, Fixture::Threads, THREADS_ARGS);
    let out = remote(Fixture::Threads, stub.addr().port())
        .o(format!(
            "command script import {}",
            source_dir().join("lldb_signal.py").display()
        ))
        .o("breakpoint set -n thread_work")
        .o("process continue")
        .o("breakpoint delete --force")
        .o("breakpoint set -n on_sigusr1")
        .o("rsp_signal_running 10")
        .run();
    out.assert_contains("RSP-SIGNAL: sent, error=none");
    out.assert_contains("RSP-SIGNAL: state=stopped");
    // lldb stops on SIGUSR1 by default (research: `T0a` stop on some thread);
    // a stop in the handler's breakpoint is just as good.
    let text = out.combined();
    assert!(
        text.contains("reason=signal SIGUSR1") || text.contains("on_sigusr1(sig=10)"),
        "no SIGUSR1 stop:\n{}",
        out.dump()
    );
}

#[test]
fn lldb_detach_lets_program_finish() {
    let spec = spec!("lldb_detach_lets_program_finish");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("detach")
        .run();
    out.assert_contains("stop reason = breakpoint 1.1");
    out.assert_contains("detached");
    // lldb-server forwards the inferior's stdout as `O` packets, so "done"
    // cannot be observed; check that the (short) program ran to its end.
    let pid = common::lldb_pid(&out.stdout).unwrap_or_else(|| panic!("no pid:\n{}", out.dump()));
    assert!(
        process::wait_gone(pid, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("cannot watch {pid}: {e}")),
        "the detached program {pid} did not finish; stub output:\n{}",
        stub.output()
    );
}

#[test]
fn lldb_kill() {
    let spec = spec!("lldb_kill");
    let stub = common::launch(&spec, Fixture::Single, &[]);
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("process kill")
        .run();
    out.assert_contains("stop reason = breakpoint 1.1");
    out.assert_contains("exited with status = ");
    if spec.dialect != Dialect::Gdbserver {
        // gdbserver closes the connection on `k` ("failed to send k packet").
        out.assert_contains("exited with status = 9");
    }
}

#[test]
fn lldb_attach() {
    let spec = spec!("lldb_attach");
    let inferior = Inferior::start(Fixture::Single, &["100000000000"]);
    let stub = spec
        .launch_attach(inferior.pid())
        .unwrap_or_else(|e| panic!("{e}"));
    let out = remote(Fixture::Single, stub.addr().port())
        .o("breakpoint set -n work")
        .o("process continue")
        .o("detach")
        .run();
    out.assert_contains("stop reason = breakpoint 1.1");
    out.assert_contains("single`work(x=");
    out.assert_contains("detached");
}
