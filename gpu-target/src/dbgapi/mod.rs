//! The amd-dbgapi side: the C ABI definitions ([`abi`], shared with the
//! simulated library), the client binding ([`sys`], the only code that calls
//! the ABI) and [`DbgApiBackend`], the [`GpuBackend`] over any amd-dbgapi
//! library — the real `librocm-dbgapi.so.0` or the simulated
//! `libsimgpu_dbgapi.so`.

pub mod abi;
pub mod registers;
pub mod sys;
pub mod testing;
pub mod versions;

use std::collections::HashMap;
use std::sync::Arc;

use self::abi::info;
use self::sys::DbgApi;
use self::sys::DbgApiError;
use self::sys::ListChange;
use self::sys::RegisterFacts;
use crate::idhash::IdMap;
use crate::model::AddressSpace;
use crate::model::AgentId;
use crate::model::AgentInfo;
use crate::model::Architecture;
use crate::model::BreakpointAction;
use crate::model::BreakpointId;
use crate::model::CodeObject;
use crate::model::CodeObjectId;
use crate::model::DispatchId;
use crate::model::DispatchInfo;
use crate::model::DisplacedStep;
use crate::model::EventId;
use crate::model::GpuBackend;
use crate::model::GpuError;
use crate::model::GpuEvent;
use crate::model::HostProcess;
use crate::model::QueueId;
use crate::model::RegisterClass;
use crate::model::RegisterDesc;
use crate::model::ResumeMode;
use crate::model::RuntimeState;
use crate::model::StopReasons;
use crate::model::WaveException;
use crate::model::WaveId;
use crate::model::WaveInfo;
use crate::model::WaveState;

impl From<DbgApiError> for GpuError {
    fn from(e: DbgApiError) -> Self {
        match e {
            DbgApiError::Call { call, status, text } => GpuError::Library {
                call,
                status,
                message: text,
            },
            other => GpuError::Library {
                call: "load",
                status: abi::status::ERROR,
                message: other.to_string(),
            },
        }
    }
}

fn wave_err(w: WaveId, e: DbgApiError) -> GpuError {
    match &e {
        DbgApiError::Call { status, .. } => match *status {
            abi::status::ERROR_INVALID_WAVE_ID => GpuError::InvalidWave(w),
            abi::status::ERROR_WAVE_NOT_STOPPED => GpuError::WaveNotStopped(w),
            abi::status::ERROR_WAVE_STOPPED => GpuError::WaveStopped(w),
            abi::status::ERROR_WAVE_NOT_RESUMABLE => GpuError::WaveNotResumable(w),
            _ => e.into(),
        },
        _ => e.into(),
    }
}

/// What the backend keeps per architecture (an agent's, a wave's).
struct ArchEntry {
    facts: sys::ArchitectureFacts,
    /// Register handle → the unique name clients see ([`registers`]).
    names: HashMap<u64, String>,
}

/// A wave's registers: the library's facts, the client-visible name and
/// the group.
struct WaveRegister {
    facts: RegisterFacts,
    name: String,
    class: RegisterClass,
}

/// A [`GpuBackend`] over an amd-dbgapi library.
///
/// Nothing about the device is assumed: every agent is asked for its own
/// architecture (an agent the library cannot debug is listed with the
/// library's reason and otherwise ignored), and every wave's registers and
/// address spaces come from the wave's own architecture.
pub struct DbgApiBackend {
    process: sys::Process,
    archs: HashMap<u64, ArchEntry>,
    /// Per live wave: its register list's key and the list (shared).
    registers: IdMap<WaveId, (u64, Arc<Vec<WaveRegister>>)>,
    /// Register lists by (architecture, the library's register handles):
    /// the waves of one kernel share theirs, so the library is asked about
    /// each register once per list, not once per wave (10,000 waves of
    /// one kernel: one list). Bounded by [`MAX_REGISTER_LISTS`].
    register_lists: HashMap<Vec<u64>, (u64, Arc<Vec<WaveRegister>>)>,
    waves: Vec<WaveId>,
    /// Per wave: its [`WaveFixed`] facts, bounded by [`MAX_WAVE_FACTS`].
    fixed: IdMap<WaveId, WaveFixed>,
    /// The first debuggable agent's architecture, for memory accesses that
    /// name no wave (found once: an agent's architecture never changes).
    default_arch: Option<u64>,
    /// The key the next new register list gets (never reused).
    next_list_id: u64,
}

/// Most register lists kept (distinct kernel register allocations); past it
/// all are dropped and asked for again.
const MAX_REGISTER_LISTS: usize = 256;

/// Most waves whose fixed facts ([`WaveFixed`]) are kept; past it all are
/// dropped and asked for again. Ended waves' go with the wave list and
/// their WAVE_COMMAND_TERMINATED.
const MAX_WAVE_FACTS: usize = 65_536;

/// What a wave's info holds that does not change over the wave's life
/// (a wave handle is never reused): asked of the library once per wave,
/// so a wave's info at each stop costs four queries (state, stop reason,
/// pc, exec) instead of ten.
#[derive(Clone, Copy)]
struct WaveFixed {
    agent: AgentId,
    queue: QueueId,
    dispatch: DispatchId,
    workgroup_coord: Option<[u32; 3]>,
    wave_number_in_workgroup: Option<u32>,
    lane_count: u32,
}

impl std::fmt::Debug for DbgApiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let archs: Vec<&str> = self.archs.values().map(|a| a.facts.name.as_str()).collect();
        f.debug_struct("DbgApiBackend")
            .field("architectures", &archs)
            .finish()
    }
}

/// The reason an agent cannot be debugged, from the library's answer to
/// `AGENT_INFO_STATE` / `AGENT_INFO_ARCHITECTURE`.
fn unsupported_reason(e: &DbgApiError) -> String {
    match e {
        DbgApiError::Call { status, text, .. } if *status == abi::status::ERROR_NOT_AVAILABLE => {
            format!("architecture not supported by this amd-dbgapi ({text})")
        }
        other => other.to_string(),
    }
}

impl DbgApiBackend {
    /// Attaches to the process `host` owns. Agents and architectures are
    /// queried when asked for (there may be none yet, or none at all).
    pub fn attach(api: &DbgApi, host: Box<dyn HostProcess>) -> Result<Self, DbgApiError> {
        let process = api.attach(host)?;
        Ok(Self {
            process,
            archs: HashMap::new(),
            registers: IdMap::default(),
            register_lists: HashMap::new(),
            waves: Vec::new(),
            fixed: IdMap::default(),
            default_arch: None,
            next_list_id: 0,
        })
    }

    /// The underlying process binding.
    pub fn process(&self) -> &sys::Process {
        &self.process
    }

    /// Facts and register names of architecture handle `arch` (cached).
    fn arch_entry(&mut self, arch: u64) -> Result<&ArchEntry, DbgApiError> {
        if !self.archs.contains_key(&arch) {
            let api = self.process.api();
            let facts = api.architecture_info(arch)?;
            let names = registers::architecture_registers(api, arch)?
                .into_iter()
                .map(|r| (r.handle, r.desc.name))
                .collect();
            self.archs.insert(arch, ArchEntry { facts, names });
        }
        Ok(&self.archs[&arch])
    }

    fn architecture_of(&mut self, arch: u64) -> Result<Architecture, DbgApiError> {
        let f = &self.arch_entry(arch)?.facts;
        Ok(Architecture {
            name: f.name.clone(),
            elf_machine: f.elf_machine,
            breakpoint_instruction: f.breakpoint_instruction.clone(),
            breakpoint_pc_adjust: f.breakpoint_pc_adjust,
            largest_instruction_size: f.largest_instruction_size,
        })
    }

    /// The architecture handle of an agent, or why it cannot be debugged.
    fn agent_architecture(&self, agent: u64) -> Result<u64, String> {
        if let Ok(state) = self.process.agent_info(agent, info::agent::STATE, 4) {
            if state as i32 == abi::agent_state::NOT_SUPPORTED {
                // The architecture query says why (NOT_AVAILABLE for an
                // architecture the library does not know).
                return Err(
                    match self.process.agent_info(agent, info::agent::ARCHITECTURE, 8) {
                        Err(e) => unsupported_reason(&e),
                        Ok(_) => "the library does not support debugging this agent".into(),
                    },
                );
            }
        }
        self.process
            .agent_info(agent, info::agent::ARCHITECTURE, 8)
            .map_err(|e| unsupported_reason(&e))
    }

    /// A wave's [`WaveFixed`] facts, asked for once.
    /// A wave's info once its state is known: the stop facts (reason, pc,
    /// exec) asked only of a stopped wave, the rest from [`WaveFixed`].
    fn wave_info_in(&mut self, w: WaveId, state: WaveState) -> Result<WaveInfo, GpuError> {
        use info::wave as q;
        let fixed = self.wave_fixed(w)?;
        let p = &self.process;
        let e = |e| wave_err(w, e);
        let stopped = state == WaveState::Stopped;
        let (stop_reason, pc, exec) = if stopped {
            (
                Some(StopReasons(
                    p.wave_info(w.0, q::STOP_REASON, 4).map_err(e)? as u32
                )),
                Some(p.wave_info(w.0, q::PC, 8).map_err(e)?),
                Some(p.wave_info(w.0, q::EXEC_MASK, 8).map_err(e)?),
            )
        } else {
            (None, None, None)
        };
        Ok(WaveInfo {
            id: w,
            state,
            stop_reason,
            pc,
            exec,
            agent: fixed.agent,
            queue: fixed.queue,
            dispatch: fixed.dispatch,
            workgroup_coord: fixed.workgroup_coord,
            wave_number_in_workgroup: fixed.wave_number_in_workgroup,
            lane_count: fixed.lane_count,
        })
    }

    fn wave_fixed(&mut self, w: WaveId) -> Result<WaveFixed, GpuError> {
        if let Some(f) = self.fixed.get(&w) {
            return Ok(*f);
        }
        use info::wave as q;
        let p = &self.process;
        let e = |e| wave_err(w, e);
        let mut coord = [0u8; 12];
        let workgroup_coord = p
            .wave_info_bytes(w.0, q::WORKGROUP_COORD, &mut coord)
            .ok()
            .map(|_| {
                [0, 1, 2].map(|i| {
                    u32::from_le_bytes([
                        coord[4 * i],
                        coord[4 * i + 1],
                        coord[4 * i + 2],
                        coord[4 * i + 3],
                    ])
                })
            });
        let f = WaveFixed {
            agent: AgentId(p.wave_info(w.0, q::AGENT, 8).map_err(e)?),
            queue: QueueId(p.wave_info(w.0, q::QUEUE, 8).map_err(e)?),
            dispatch: DispatchId(p.wave_info(w.0, q::DISPATCH, 8).map_err(e)?),
            workgroup_coord,
            wave_number_in_workgroup: p
                .wave_info(w.0, q::WAVE_NUMBER_IN_WORKGROUP, 4)
                .ok()
                .map(|v| v as u32),
            lane_count: p.wave_info(w.0, q::LANE_COUNT, 8).map_err(e)? as u32,
        };
        if self.fixed.len() >= MAX_WAVE_FACTS {
            self.fixed.clear();
        }
        self.fixed.insert(w, f);
        Ok(f)
    }

    /// The architecture handle of a wave.
    fn wave_architecture(&self, wave: WaveId) -> Result<u64, GpuError> {
        self.process
            .wave_info(wave.0, info::wave::ARCHITECTURE, 8)
            .map_err(|e| wave_err(wave, e))
    }

    fn reg_facts(&mut self, wave: WaveId) -> Result<&Arc<Vec<WaveRegister>>, GpuError> {
        if !self.registers.contains_key(&wave) {
            let arch = self.wave_architecture(wave)?;
            let ids = self
                .process
                .wave_registers(wave.0)
                .map_err(|e| wave_err(wave, e))?;
            let mut key = Vec::with_capacity(ids.len() + 1);
            key.push(arch);
            key.extend_from_slice(&ids);
            let shared = match self.register_lists.get(&key) {
                Some(l) => l.clone(),
                None => {
                    let mut facts = Vec::with_capacity(ids.len());
                    for r in ids {
                        facts.push(self.process.api().register_info(r)?);
                    }
                    let entry = self.arch_entry(arch)?;
                    let pc = entry.facts.pc_register;
                    let v: Vec<WaveRegister> = facts
                        .into_iter()
                        .map(|f| WaveRegister {
                            name: entry
                                .names
                                .get(&f.handle)
                                .cloned()
                                .unwrap_or_else(|| f.name.clone()),
                            class: registers::class_of(&f, pc),
                            facts: f,
                        })
                        .collect();
                    if self.register_lists.len() >= MAX_REGISTER_LISTS {
                        self.register_lists.clear();
                    }
                    let id = self.next_list_id;
                    self.next_list_id += 1;
                    let l = (id, Arc::new(v));
                    self.register_lists.insert(key, l.clone());
                    l
                }
            };
            self.registers.insert(wave, shared);
        }
        self.registers
            .get(&wave)
            .map(|(_, l)| l)
            .ok_or(GpuError::InvalidWave(wave))
    }

    /// The library handle of register `index` of `wave`.
    fn reg_handle(&mut self, wave: WaveId, index: usize) -> Result<u64, GpuError> {
        self.reg_facts(wave)?
            .get(index)
            .map(|r| r.facts.handle)
            .ok_or(GpuError::NotSupported("register index out of range"))
    }

    /// The first debuggable agent's architecture handle (found once: an
    /// agent's architecture never changes).
    fn default_architecture(&mut self) -> Result<u64, GpuError> {
        if let Some(a) = self.default_arch {
            return Ok(a);
        }
        let agents = self.process.agents()?;
        let a = agents
            .into_iter()
            .find_map(|a| self.agent_architecture(a).ok())
            .ok_or(GpuError::NotSupported(
                "no GPU agent that this amd-dbgapi library can debug",
            ))?;
        self.default_arch = Some(a);
        Ok(a)
    }

    /// The library's address space `space` in the architecture of `wave`,
    /// or of the first debuggable agent when no wave is named.
    fn space(&mut self, space: AddressSpace, wave: Option<WaveId>) -> Result<u64, GpuError> {
        let arch = match wave {
            Some(w) => self.wave_architecture(w)?,
            None => self.default_architecture()?,
        };
        Ok(self.process.address_space(arch, space.dwarf())?)
    }
}

impl GpuBackend for DbgApiBackend {
    fn notifier_fd(&self) -> Option<i32> {
        self.process.notifier().ok()
    }

    fn last_warning(&self) -> Option<String> {
        sys::last_warning()
    }

    fn next_event(&mut self) -> Result<Option<(EventId, GpuEvent)>, GpuError> {
        let Some((ev, kind)) = self.process.next_event()? else {
            return Ok(None);
        };
        use abi::event_kind as k;
        use info::event as q;
        let p = &self.process;
        let e = match kind {
            k::WAVE_STOP => GpuEvent::WaveStop {
                wave: WaveId(p.event_info(ev, q::WAVE, 8)?),
            },
            k::WAVE_COMMAND_TERMINATED => {
                let wave = WaveId(p.event_info(ev, q::WAVE, 8)?);
                self.registers.remove(&wave);
                self.fixed.remove(&wave);
                GpuEvent::WaveCommandTerminated { wave }
            }
            k::CODE_OBJECT_LIST_UPDATED => GpuEvent::CodeObjectListUpdated,
            k::BREAKPOINT_RESUME => GpuEvent::BreakpointResume {
                breakpoint: BreakpointId(p.event_info(ev, q::BREAKPOINT, 8)?),
            },
            k::RUNTIME => GpuEvent::Runtime(match p.event_info(ev, q::RUNTIME_STATE, 4)? as i32 {
                abi::runtime_state::LOADED_SUCCESS => RuntimeState::Loaded,
                abi::runtime_state::UNLOADED => RuntimeState::Unloaded,
                _ => RuntimeState::LoadedRestriction,
            }),
            k::QUEUE_ERROR => GpuEvent::QueueError {
                queue: QueueId(p.event_info(ev, q::QUEUE, 8).unwrap_or(0)),
            },
            other => {
                tracing::warn!(target: "dbgapi", kind = other, "unknown event kind; marked processed");
                p.event_processed(ev)?;
                return Ok(None);
            }
        };
        tracing::debug!(target: "dbgapi", event = ev, ?e, "event");
        Ok(Some((EventId(ev), e)))
    }

    fn event_processed(&mut self, event: EventId) -> Result<(), GpuError> {
        Ok(self.process.event_processed(event.0)?)
    }

    fn agents(&mut self) -> Result<Vec<AgentInfo>, GpuError> {
        let mut out = Vec::new();
        for a in self.process.agents()? {
            let name = self
                .process
                .agent_string(a, info::agent::NAME)
                .unwrap_or_else(|e| format!("agent {a} ({e})"));
            let architecture = match self.agent_architecture(a) {
                Ok(arch) => self.architecture_of(arch).map_err(|e| e.to_string()),
                Err(reason) => Err(reason),
            };
            if let Err(reason) = &architecture {
                tracing::info!(target: "dbgapi", agent = a, %name, %reason, "agent skipped");
            }
            out.push(AgentInfo {
                id: AgentId(a),
                name,
                architecture,
            });
        }
        Ok(out)
    }

    fn waves(&mut self) -> Result<Vec<WaveId>, GpuError> {
        self.waves_if_changed()?;
        Ok(self.waves.clone())
    }

    fn waves_if_changed(&mut self) -> Result<Option<Vec<WaveId>>, GpuError> {
        let ListChange::Changed(v) = self.process.waves(true)? else {
            return Ok(None);
        };
        self.waves = v.into_iter().map(WaveId).collect();
        let live: crate::idhash::IdSet<WaveId> = self.waves.iter().copied().collect();
        self.registers.retain(|w, _| live.contains(w));
        self.fixed.retain(|w, _| live.contains(w));
        Ok(Some(self.waves.clone()))
    }

    fn wave_info(&mut self, w: WaveId) -> Result<WaveInfo, GpuError> {
        use info::wave as q;
        let state = match self
            .process
            .wave_info(w.0, q::STATE, 4)
            .map_err(|e| wave_err(w, e))? as i32
        {
            abi::wave_state::STOP => WaveState::Stopped,
            abi::wave_state::SINGLE_STEP => WaveState::SingleStep,
            _ => WaveState::Running,
        };
        self.wave_info_in(w, state)
    }

    fn stopped_wave_info(&mut self, w: WaveId) -> Result<WaveInfo, GpuError> {
        self.wave_info_in(w, WaveState::Stopped)
    }

    fn stopped_wave_reason(&mut self, w: WaveId) -> Result<StopReasons, GpuError> {
        let r = self
            .process
            .wave_info(w.0, info::wave::STOP_REASON, 4)
            .map_err(|e| wave_err(w, e))?;
        Ok(StopReasons(r as u32))
    }

    fn stopped_wave_pc(&mut self, w: WaveId) -> Result<u64, GpuError> {
        self.process
            .wave_info(w.0, info::wave::PC, 8)
            .map_err(|e| wave_err(w, e))
    }

    fn dispatch_info(&mut self, d: DispatchId) -> Result<DispatchInfo, GpuError> {
        use info::dispatch as q;
        let p = &self.process;
        let u64_of = |qq| -> Result<u64, GpuError> {
            let mut b = [0u8; 8];
            p.dispatch_info_bytes(d.0, qq, &mut b)?;
            Ok(u64::from_le_bytes(b))
        };
        let mut g = [0u8; 12];
        p.dispatch_info_bytes(d.0, q::GRID_SIZES, &mut g)?;
        let mut wg = [0u8; 6];
        p.dispatch_info_bytes(d.0, q::WORKGROUP_SIZES, &mut wg)?;
        Ok(DispatchInfo {
            id: d,
            queue: QueueId(u64_of(q::QUEUE)?),
            agent: AgentId(u64_of(q::AGENT)?),
            kernel_descriptor: u64_of(q::KERNEL_DESCRIPTOR_ADDRESS)?,
            kernel_entry: u64_of(q::KERNEL_CODE_ENTRY_ADDRESS)?,
            grid: [0, 1, 2]
                .map(|i| u32::from_le_bytes([g[4 * i], g[4 * i + 1], g[4 * i + 2], g[4 * i + 3]])),
            workgroup: [0, 1, 2].map(|i| u16::from_le_bytes([wg[2 * i], wg[2 * i + 1]])),
        })
    }

    fn code_objects(&mut self) -> Result<Vec<CodeObject>, GpuError> {
        let mut out = Vec::new();
        for co in self.process.code_objects()? {
            let (uri, load_address) = self.process.code_object_info(co)?;
            out.push(CodeObject {
                id: CodeObjectId(co),
                uri,
                load_address,
            });
        }
        Ok(out)
    }

    fn architecture_registers(&mut self) -> Result<Vec<RegisterDesc>, GpuError> {
        let arch = self.default_architecture()?;
        Ok(registers::architecture_registers(self.process.api(), arch)?
            .into_iter()
            .map(|r| r.desc)
            .collect())
    }

    fn agent_architecture_registers(
        &mut self,
    ) -> Result<Vec<(Architecture, Vec<RegisterDesc>)>, GpuError> {
        let mut seen = Vec::new();
        for a in self.process.agents()? {
            if let Ok(arch) = self.agent_architecture(a) {
                if !seen.contains(&arch) {
                    seen.push(arch);
                }
            }
        }
        let mut out = Vec::with_capacity(seen.len());
        for arch in seen {
            let facts = self.architecture_of(arch)?;
            let regs = registers::architecture_registers(self.process.api(), arch)?
                .into_iter()
                .map(|r| r.desc)
                .collect();
            out.push((facts, regs));
        }
        Ok(out)
    }

    fn register_list_key(&mut self, wave: WaveId) -> Result<Option<u64>, GpuError> {
        self.reg_facts(wave)?;
        Ok(self.registers.get(&wave).map(|(k, _)| *k))
    }

    fn registers(&mut self, wave: WaveId) -> Result<Vec<RegisterDesc>, GpuError> {
        Ok(self
            .reg_facts(wave)?
            .iter()
            .map(|r| RegisterDesc {
                name: r.name.clone(),
                size: r.facts.size,
                type_name: r.facts.type_name.clone(),
                dwarf: r.facts.dwarf,
                class: r.class,
            })
            .collect())
    }

    fn read_register(
        &mut self,
        wave: WaveId,
        index: usize,
        buf: &mut [u8],
    ) -> Result<(), GpuError> {
        let r = self.reg_handle(wave, index)?;
        self.process
            .read_register(wave.0, r, 0, buf)
            .map_err(|e| wave_err(wave, e))
    }

    fn write_register(&mut self, wave: WaveId, index: usize, data: &[u8]) -> Result<(), GpuError> {
        let r = self.reg_handle(wave, index)?;
        self.process
            .write_register(wave.0, r, 0, data)
            .map_err(|e| wave_err(wave, e))
    }

    fn read_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<usize, GpuError> {
        let s = self.space(space, wave)?;
        self.process
            .read_memory(wave.map(|w| w.0).unwrap_or(0), s, addr, buf)
            .map_err(|_| GpuError::MemoryAccess { addr })
    }

    fn read_lane_memory(
        &mut self,
        space: AddressSpace,
        wave: WaveId,
        lane: u32,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<usize, GpuError> {
        let s = self.space(space, Some(wave))?;
        self.process
            .read_lane_memory(wave.0, lane, s, addr, buf)
            .map_err(|_| GpuError::MemoryAccess { addr })
    }

    fn write_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        data: &[u8],
    ) -> Result<usize, GpuError> {
        let s = self.space(space, wave)?;
        self.process
            .write_memory(wave.map(|w| w.0).unwrap_or(0), s, addr, data)
            .map_err(|_| GpuError::MemoryAccess { addr })
    }

    fn stop_wave(&mut self, wave: WaveId) -> Result<(), GpuError> {
        self.process
            .wave_stop(wave.0)
            .map_err(|e| wave_err(wave, e))
    }

    fn resume_wave(&mut self, wave: WaveId, mode: ResumeMode) -> Result<(), GpuError> {
        self.process
            .wave_resume(wave.0, mode == ResumeMode::SingleStep)
            .map_err(|e| wave_err(wave, e))
    }

    fn resume_wave_with_exception(
        &mut self,
        wave: WaveId,
        exception: WaveException,
    ) -> Result<(), GpuError> {
        use abi::exceptions as x;
        let bits = match exception {
            WaveException::Abort => x::WAVE_ABORT,
            WaveException::Trap => x::WAVE_TRAP,
            WaveException::MathError => x::WAVE_MATH_ERROR,
            WaveException::IllegalInstruction => x::WAVE_ILLEGAL_INSTRUCTION,
            WaveException::MemoryViolation => x::WAVE_MEMORY_VIOLATION,
            WaveException::AddressError => x::WAVE_ADDRESS_ERROR,
        };
        self.process
            .wave_resume_raw(wave.0, false, bits)
            .map_err(|e| wave_err(wave, e))
    }

    fn displaced_step_start(
        &mut self,
        wave: WaveId,
        saved: &[u8],
    ) -> Result<DisplacedStep, GpuError> {
        let arch = self.wave_architecture(wave)?;
        let size = self.arch_entry(arch)?.facts.breakpoint_instruction.len();
        if size == 0 || saved.len() != size {
            // The library reads exactly the breakpoint's size of bytes.
            return Err(GpuError::NotSupported(
                "displaced stepping: breakpoint size",
            ));
        }
        match self.process.displaced_stepping_start(wave.0, saved) {
            Ok(ds) => Ok(DisplacedStep(ds)),
            // No displaced stepping here: the caller steps over another
            // way.
            Err(DbgApiError::Call {
                status: abi::status::ERROR_NOT_IMPLEMENTED | abi::status::ERROR_NOT_SUPPORTED,
                ..
            }) => Err(GpuError::NotSupported("displaced stepping")),
            // The header: "If allocating a displaced stepping buffer
            // indicates no more are available, the client must complete
            // ongoing single steppings and release the associated buffers"
            // (then start again): the caller waits for one.
            Err(DbgApiError::Call {
                status: abi::status::ERROR_DISPLACED_STEPPING_BUFFER_NOT_AVAILABLE,
                ..
            }) => Err(GpuError::DisplacedBufferUnavailable(wave)),
            Err(e) => Err(wave_err(wave, e)),
        }
    }

    fn displaced_step_complete(
        &mut self,
        wave: WaveId,
        step: DisplacedStep,
    ) -> Result<(), GpuError> {
        self.process
            .displaced_stepping_complete(wave.0, step.0)
            .map_err(|e| wave_err(wave, e))
    }

    fn set_wave_creation(&mut self, stopped: bool) -> Result<(), GpuError> {
        Ok(self.process.set_wave_creation(stopped)?)
    }

    fn report_breakpoint_hit(
        &mut self,
        bp: BreakpointId,
        host_thread: u64,
    ) -> Result<BreakpointAction, GpuError> {
        Ok(if self.process.report_breakpoint_hit(bp.0, host_thread)? {
            BreakpointAction::Halt
        } else {
            BreakpointAction::Resume
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsupported_agent_is_listed_with_the_library_reason() {
        let na = DbgApiError::Call {
            call: "amd_dbgapi_agent_get_info",
            status: abi::status::ERROR_NOT_AVAILABLE,
            text: "The requested information is not available".into(),
        };
        let reason = unsupported_reason(&na);
        assert!(
            reason.starts_with("architecture not supported by this amd-dbgapi"),
            "{reason}"
        );
        assert!(reason.contains("not available"), "{reason}");
        let agent = AgentInfo {
            id: AgentId(2),
            name: "AMD Radeon Graphics".into(),
            architecture: Err(reason),
        };
        let line = agent.to_string();
        assert!(
            line.starts_with(
                "agent 2: AMD Radeon Graphics (not debuggable, skipped: architecture not supported"
            ),
            "{line}"
        );
        let other = DbgApiError::Call {
            call: "amd_dbgapi_agent_get_info",
            status: abi::status::ERROR,
            text: "boom".into(),
        };
        assert!(unsupported_reason(&other).contains("boom"));
    }

    #[test]
    fn a_supported_agent_shows_its_architecture() {
        let agent = AgentInfo {
            id: AgentId(1),
            name: "AMD Instinct MI210".into(),
            architecture: Ok(Architecture {
                name: "gfx90a".into(),
                elf_machine: 0x3f,
                breakpoint_instruction: vec![1, 0, 0x92, 0xbf],
                breakpoint_pc_adjust: 4,
                largest_instruction_size: 8,
            }),
        };
        assert_eq!(agent.to_string(), "agent 1: AMD Instinct MI210 (gfx90a)");
    }
}
