//! The agents the library presents: by default one, the simulated gfx90a
//! (an MI210) that runs the program's kernels.
//!
//! `SIMGPU_AGENTS=ARCH,ARCH,…` (read at attach) presents one agent per
//! entry, in that order, as a machine with several GPUs would:
//! - the first `gfx90a` entry is the simulated device: every queue,
//!   dispatch and wave of a gfx90a code object belongs to it;
//! - the first `gfx908` entry (an MI100) runs the dispatches of gfx908 code
//!   objects (on the same simulated device: `crate::archs`), with its own
//!   queue, architecture and register handles;
//! - a further `gfx90a` or `gfx908` entry is another supported agent of
//!   that architecture, on which nothing runs;
//! - any other architecture (e.g. `gfx1036`, an integrated GPU) is an agent
//!   this library cannot debug, answered as AMD's library answers one: its
//!   `AGENT_INFO_STATE` is `AMD_DBGAPI_AGENT_STATE_NOT_SUPPORTED` and its
//!   `AGENT_INFO_ARCHITECTURE` fails with `ERROR_NOT_AVAILABLE`.
//!
//! A list without `gfx90a` still has the simulated device, after the
//! listed agents (kernels must run somewhere). At most [`MAX_AGENTS`]
//! entries are read.

use gpu_target::dbgapi::abi::agent_state;
use gpu_target::dbgapi::abi::info;
use gpu_target::dbgapi::abi::status as st;
use gpu_target::dbgapi::abi::Status;

use crate::library::Info;

/// The variable listing the agents' architectures.
pub const AGENTS_ENV: &str = "SIMGPU_AGENTS";
/// Most agents presented.
pub const MAX_AGENTS: usize = 16;
/// The one architecture the simulated device has.
const SIMULATED: &str = "gfx90a";
/// Marks an extra agent's handle: `TAG | process << 8 | index` (the
/// library's own handles, a counter, never reach it).
const TAG: u64 = 1 << 32;
/// Marks the queue of an extra agent that runs dispatches: its agent's
/// handle with this bit.
const QUEUE_TAG: u64 = 1 << 31;

/// One agent besides the simulated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraAgent {
    /// Its architecture name.
    pub arch: String,
    /// Whether this library can debug it (gfx90a, gfx908).
    pub supported: bool,
    /// Whether it runs the dispatches of its architecture's code objects
    /// (the first gfx908 entry).
    pub runs: bool,
}

/// The agents of one process, in list order: `None` is the simulated
/// device, `Some` an extra agent.
#[derive(Clone, Debug, Default)]
pub struct Agents {
    order: Vec<Option<ExtraAgent>>,
}

impl Agents {
    /// The agents `SIMGPU_AGENTS` asks for (the simulated device alone
    /// when it is unset or empty).
    pub fn from_env() -> Agents {
        Agents::parse(&std::env::var(AGENTS_ENV).unwrap_or_default())
    }

    /// The agents of a `SIMGPU_AGENTS` value.
    pub fn parse(spec: &str) -> Agents {
        let mut order = Vec::new();
        let mut device_listed = false;
        let mut runner_listed = false;
        for arch in spec
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .take(MAX_AGENTS)
        {
            if arch == SIMULATED && !device_listed {
                device_listed = true;
                order.push(None);
            } else {
                let supported = crate::archs::by_name(arch).is_some();
                let runs = supported && arch != SIMULATED && !runner_listed;
                runner_listed |= runs;
                order.push(Some(ExtraAgent {
                    arch: arch.to_string(),
                    supported,
                    runs,
                }));
            }
        }
        if !device_listed {
            order.push(None);
        }
        Agents { order }
    }

    /// The agent handles of process `process` whose simulated device has
    /// the handle `device`.
    pub fn list(&self, process: u64, device: u64) -> Vec<u64> {
        self.order
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                None => device,
                Some(_) => extra_handle(process, i),
            })
            .collect()
    }

    /// The agent of process `process` (simulated device `device`) that
    /// runs the dispatches of `arch`, if one does.
    pub fn runner(&self, process: u64, device: u64, arch: &crate::archs::SimArch) -> Option<u64> {
        if arch.name == SIMULATED {
            return Some(device);
        }
        self.order.iter().enumerate().find_map(|(i, a)| match a {
            Some(a) if a.runs && a.arch == arch.name => Some(extra_handle(process, i)),
            _ => None,
        })
    }

    /// The queues of process `process`: the simulated device's `queue`,
    /// then one per extra agent that runs dispatches.
    pub fn queues(&self, process: u64, queue: u64) -> Vec<u64> {
        let mut v = vec![queue];
        v.extend(self.order.iter().enumerate().filter_map(|(i, a)| {
            a.as_ref()
                .filter(|a| a.runs)
                .map(|_| extra_handle(process, i) | QUEUE_TAG)
        }));
        v
    }

    /// The extra agent `handle` names, if it names one of process
    /// `process`.
    pub fn extra(&self, process: u64, handle: u64) -> Option<&ExtraAgent> {
        let (p, i) = split_handle(handle)?;
        if p != process {
            return None;
        }
        self.order.get(i)?.as_ref()
    }
}

fn extra_handle(process: u64, index: usize) -> u64 {
    TAG | (process << 8) | index as u64
}

/// The queue of the extra agent `agent`.
pub fn queue_of(agent: u64) -> u64 {
    agent | QUEUE_TAG
}

/// The agent of an extra agent's queue handle.
pub fn split_queue(handle: u64) -> Option<u64> {
    (handle & TAG != 0 && handle & QUEUE_TAG != 0).then_some(handle & !QUEUE_TAG)
}

/// (process, index) of an extra agent's handle.
pub fn split_handle(handle: u64) -> Option<(u64, usize)> {
    if handle & TAG == 0 || handle & QUEUE_TAG != 0 {
        return None;
    }
    let rest = handle & !TAG;
    Some((rest >> 8, (rest & 0xff) as usize))
}

/// `amd_dbgapi_agent_get_info` of an extra agent of process `process`;
/// `device` answers what it shares with the simulated device (vendor,
/// sizes).
pub fn info(
    agent: &ExtraAgent,
    index: usize,
    process: u64,
    q: i32,
    device: impl Fn(i32) -> Result<Info, Status>,
) -> Result<Info, Status> {
    use info::agent as q_;
    Ok(match q {
        q_::PROCESS => Info::Handle(process),
        q_::NAME if agent.supported => Info::Str(format!(
            "{} (simgpu, agent {index})",
            arch_of(agent).map_or("AMD Instinct", |a| a.product)
        )),
        q_::NAME => Info::Str(format!("AMD Radeon Graphics ({}, simgpu)", agent.arch)),
        q_::STATE if agent.supported => Info::U32(agent_state::SUPPORTED as u32),
        q_::STATE => Info::U32(agent_state::NOT_SUPPORTED as u32),
        // AMD's library has no architecture for an agent it cannot debug.
        q_::ARCHITECTURE => match arch_of(agent) {
            Some(a) => Info::Handle(a.handle),
            None => return Err(st::ERROR_NOT_AVAILABLE),
        },
        q_::PCI_SLOT => Info::U16(index as u16),
        q_::PCI_DEVICE_ID => Info::U32(arch_of(agent).map_or(0x164e, |a| a.pci_device)),
        q_::OS_ID => Info::U64(index as u64 + 1),
        _ => return device(q),
    })
}

/// The architecture of a supported extra agent.
fn arch_of(agent: &ExtraAgent) -> Option<&'static crate::archs::SimArch> {
    crate::archs::by_name(&agent.arch).filter(|_| agent.supported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_is_the_simulated_device_alone() {
        let a = Agents::parse("");
        assert_eq!(a.list(3, 7), vec![7]);
    }

    #[test]
    fn agents_are_listed_in_the_order_given() {
        let a = Agents::parse("gfx1036, gfx90a,gfx90a");
        let l = a.list(3, 7);
        assert_eq!(l.len(), 3);
        assert_eq!(l[1], 7, "the first gfx90a is the simulated device");
        let first = a.extra(3, l[0]).expect("extra");
        assert_eq!(first.arch, "gfx1036");
        assert!(!first.supported);
        assert!(a.extra(3, l[2]).expect("extra").supported);
        assert!(a.extra(4, l[0]).is_none(), "another process's handle");
        assert!(a.extra(3, 7).is_none());
    }

    #[test]
    fn a_list_without_gfx90a_still_has_the_device() {
        let a = Agents::parse("gfx1036");
        let l = a.list(1, 2);
        assert_eq!(l.len(), 2);
        assert_eq!(l[1], 2);
    }

    #[test]
    fn the_first_gfx908_runs_its_dispatches() {
        let a = Agents::parse("gfx908,gfx90a,gfx908");
        let l = a.list(3, 7);
        assert_eq!(l[1], 7);
        assert!(a.extra(3, l[0]).unwrap().runs);
        assert!(!a.extra(3, l[2]).unwrap().runs);
        assert!(a.extra(3, l[2]).unwrap().supported);
        assert_eq!(a.runner(3, 7, &crate::archs::GFX908), Some(l[0]));
        assert_eq!(a.runner(3, 7, &crate::archs::GFX90A), Some(7));
        let q = a.queues(3, 9);
        assert_eq!(q.len(), 2);
        assert_eq!(split_queue(q[1]), Some(l[0]));
        assert_eq!(split_handle(q[1]), None, "a queue is not an agent");
        assert_eq!(
            Agents::parse("gfx90a").runner(3, 7, &crate::archs::GFX908),
            None
        );
    }
}
