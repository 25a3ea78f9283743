//! The two session roles over the one protocol engine, and what only one
//! of them has.
//!
//! Both roles share the engine (`handlers/`: codec state, negotiation,
//! thread selection, the stop journal, the packet families). What differs
//! lives here, in the role's own variant, so a fact of one role cannot be
//! read or written by the other:
//!
//! - **CPU session** ([`CpuRole`]): processes come from the command line,
//!   `vRun`, `vAttach` and fork/exec; it carries out the GPU library's
//!   internal host breakpoints (`Internal`), answers lldb's accelerator
//!   plugin (the GPU offer), reports GPU stops to gdb (`gpu_report`), and
//!   tells the multiplexer when its process ends or is released.
//! - **GPU session** ([`RoleState::Gpu`]): its one process is a
//!   `gpu::GpuTarget` (waves are its threads, built by the server when a
//!   claim is accepted); the CPU process's end reaches it as `W`/`X`
//!   (`Session::on_peer_exit`). Its waves and GPU breakpoints are the
//!   controller's facts (`gpu/controller.rs`), not the session's.
//!
//! A packet only the CPU role serves ([`RoleState::serves`]) is answered
//! on a GPU session as an unsupported one (empty reply), never carried
//! out there.

use super::gpu::Internal;
use super::Role;
use crate::packet::Command;
use crate::target::Capabilities;

/// A session's role and the state only that role has.
#[derive(Debug)]
pub(super) enum RoleState {
    /// The CPU process's session.
    Cpu(CpuRole),
    /// The GPU's session (a connection that claimed an offer).
    Gpu,
}

/// What only the CPU session has.
#[derive(Debug, Default)]
pub(super) struct CpuRole {
    /// An internal (GPU library) breakpoint hit being handled out of the
    /// client's sight.
    pub(super) internal: Option<Internal>,
    /// gdb's path to the GPU: the console line of a GPU stop being
    /// reported as the CPU process's stop.
    pub(super) gpu_report: Option<(String, Option<crate::target::Pid>)>,
}

impl RoleState {
    /// The role in a new session.
    pub(super) fn new(role: Role) -> Self {
        match role {
            Role::Cpu => RoleState::Cpu(CpuRole::default()),
            Role::Gpu => RoleState::Gpu,
        }
    }

    /// Which role.
    pub(super) fn tag(&self) -> Role {
        match self {
            RoleState::Cpu(_) => Role::Cpu,
            RoleState::Gpu => Role::Gpu,
        }
    }

    /// The CPU role's state, on a CPU session.
    pub(super) fn cpu(&self) -> Option<&CpuRole> {
        match self {
            RoleState::Cpu(c) => Some(c),
            RoleState::Gpu => None,
        }
    }

    /// The CPU role's state, on a CPU session.
    pub(super) fn cpu_mut(&mut self) -> Option<&mut CpuRole> {
        match self {
            RoleState::Cpu(c) => Some(c),
            RoleState::Gpu => None,
        }
    }

    /// Whether the session's processes are the CPU side (their end and
    /// release are facts for the multiplexer, and a stopped one can be
    /// killed from outside).
    pub(super) fn is_cpu(&self) -> bool {
        matches!(self, RoleState::Cpu(_))
    }

    /// What a session with no process advertises: a CPU session's
    /// `vRun`/`vAttach` will create a native Linux process, a GPU session
    /// has nothing.
    pub(super) fn idle_capabilities(&self) -> Capabilities {
        match self {
            RoleState::Cpu(_) => crate::native::CAPABILITIES,
            RoleState::Gpu => Capabilities::NONE,
        }
    }

    /// Role features `qSupported` advertises beyond the target's
    /// capabilities: ptrace's syscall stops and the host's `/proc`
    /// tables belong to the CPU session's native processes.
    pub(super) fn qsupported_features(&self) -> &'static [&'static str] {
        match self {
            RoleState::Cpu(_) => &[
                "QCatchSyscalls+",
                "qXfer:osdata:read+",
                "QNonStop+",
                "ConditionalBreakpoints+",
            ],
            RoleState::Gpu => &[],
        }
    }

    /// Whether this role serves `cmd`. Process creation, syscall
    /// catching, the host's osdata tables and lldb's accelerator plugin
    /// are the CPU session's only.
    pub(super) fn serves(&self, cmd: &Command) -> bool {
        match self {
            RoleState::Cpu(_) => true,
            RoleState::Gpu => match cmd {
                Command::VRun(_)
                | Command::VAttach(_)
                | Command::Restart
                | Command::CatchSyscalls(_)
                | Command::AcceleratorInitialize
                | Command::AcceleratorBreakpointHit(_) => false,
                Command::XferRead(x) => x.object != "osdata",
                _ => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::XferRead;

    #[test]
    fn gpu_session_refuses_cpu_only_packets() {
        let gpu = RoleState::new(Role::Gpu);
        let cpu = RoleState::new(Role::Cpu);
        let osdata = Command::XferRead(XferRead {
            object: "osdata".into(),
            annex: String::new(),
            offset: 0,
            length: 100,
        });
        let features = Command::XferRead(XferRead {
            object: "features".into(),
            annex: "target.xml".into(),
            offset: 0,
            length: 100,
        });
        for c in [
            Command::VRun(vec![]),
            Command::VAttach(1),
            Command::Restart,
            Command::CatchSyscalls(None),
            Command::AcceleratorInitialize,
            Command::AcceleratorBreakpointHit(vec![]),
            osdata.clone(),
        ] {
            assert!(!gpu.serves(&c), "GPU session serves {c:?}");
            assert!(cpu.serves(&c), "CPU session refuses {c:?}");
        }
        for c in [features, Command::QuestionMark, Command::Kill] {
            assert!(gpu.serves(&c), "GPU session refuses {c:?}");
        }
        assert_eq!(gpu.tag(), Role::Gpu);
        assert_eq!(cpu.tag(), Role::Cpu);
        assert!(gpu.cpu().is_none() && cpu.cpu().is_some());
        assert!(gpu.qsupported_features().is_empty());
        assert_eq!(gpu.idle_capabilities(), Capabilities::NONE);
    }
}
