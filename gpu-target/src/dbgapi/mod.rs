//! The amd-dbgapi side: the C ABI definitions ([`abi`], shared with the
//! simulated library), the client binding ([`sys`], the only code that calls
//! the ABI) and [`DbgApiBackend`], the [`GpuBackend`] over any amd-dbgapi
//! library — the real `librocm-dbgapi.so.0` or the simulated
//! `libsimgpu_dbgapi.so`.

pub mod abi;
pub mod sys;
pub mod versions;

use std::collections::HashMap;

use self::abi::info;
use self::sys::DbgApi;
use self::sys::DbgApiError;
use self::sys::ListChange;
use self::sys::RegisterFacts;
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

/// A [`GpuBackend`] over an amd-dbgapi library.
pub struct DbgApiBackend {
    process: sys::Process,
    arch: u64,
    facts: sys::ArchitectureFacts,
    registers: HashMap<WaveId, Vec<RegisterFacts>>,
    waves: Vec<WaveId>,
}

impl std::fmt::Debug for DbgApiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbgApiBackend")
            .field("arch", &self.facts.name)
            .finish()
    }
}

impl DbgApiBackend {
    /// Attaches to the process `host` owns. The agents' architecture is
    /// queried from the library (no hard-coded device).
    pub fn attach(api: &DbgApi, host: Box<dyn HostProcess>) -> Result<Self, DbgApiError> {
        let process = api.attach(host)?;
        let agents = process.agents()?;
        let arch = match agents.first() {
            Some(&a) => process.agent_info(a, info::agent::ARCHITECTURE, 8)?,
            None => api.architecture(crate::sim::elf::EF_AMDGPU_MACH_GFX90A)?,
        };
        let facts = api.architecture_info(arch)?;
        Ok(Self {
            process,
            arch,
            facts,
            registers: HashMap::new(),
            waves: Vec::new(),
        })
    }

    /// The underlying process binding.
    pub fn process(&self) -> &sys::Process {
        &self.process
    }

    fn architecture(&self) -> Architecture {
        Architecture {
            name: self.facts.name.clone(),
            elf_machine: self.facts.elf_machine,
            breakpoint_instruction: self.facts.breakpoint_instruction.clone(),
            breakpoint_pc_adjust: self.facts.breakpoint_pc_adjust,
            largest_instruction_size: self.facts.largest_instruction_size,
        }
    }

    fn reg_facts(&mut self, wave: WaveId) -> Result<&Vec<RegisterFacts>, GpuError> {
        if !self.registers.contains_key(&wave) {
            let ids = self
                .process
                .wave_registers(wave.0)
                .map_err(|e| wave_err(wave, e))?;
            let mut v = Vec::with_capacity(ids.len());
            for r in ids {
                v.push(self.process.api().register_info(r)?);
            }
            self.registers.insert(wave, v);
        }
        self.registers.get(&wave).ok_or(GpuError::InvalidWave(wave))
    }

    /// The library handle of register `index` of `wave`.
    fn reg_handle(&mut self, wave: WaveId, index: usize) -> Result<u64, GpuError> {
        self.reg_facts(wave)?
            .get(index)
            .map(|r| r.handle)
            .ok_or(GpuError::NotSupported("register index out of range"))
    }

    fn space(&self, space: AddressSpace) -> Result<u64, GpuError> {
        Ok(self.process.address_space(self.arch, space.dwarf())?)
    }
}

impl GpuBackend for DbgApiBackend {
    fn notifier_fd(&self) -> Option<i32> {
        self.process.notifier().ok()
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
        let arch = self.architecture();
        let mut out = Vec::new();
        for a in self.process.agents()? {
            out.push(AgentInfo {
                id: AgentId(a),
                name: self.process.agent_string(a, info::agent::NAME)?,
                architecture: arch.clone(),
            });
        }
        Ok(out)
    }

    fn waves(&mut self) -> Result<Vec<WaveId>, GpuError> {
        if let ListChange::Changed(v) = self.process.waves(true)? {
            self.waves = v.into_iter().map(WaveId).collect();
            let live: std::collections::HashSet<WaveId> = self.waves.iter().copied().collect();
            self.registers.retain(|w, _| live.contains(w));
        }
        Ok(self.waves.clone())
    }

    fn wave_info(&mut self, w: WaveId) -> Result<WaveInfo, GpuError> {
        use info::wave as q;
        let p = &self.process;
        let e = |e| wave_err(w, e);
        let state = match p.wave_info(w.0, q::STATE, 4).map_err(e)? as i32 {
            abi::wave_state::STOP => WaveState::Stopped,
            abi::wave_state::SINGLE_STEP => WaveState::SingleStep,
            _ => WaveState::Running,
        };
        let stopped = state == WaveState::Stopped;
        let mut coord = [0u8; 12];
        let coord = p
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
        Ok(WaveInfo {
            id: w,
            state,
            stop_reason: if stopped {
                Some(StopReasons(
                    p.wave_info(w.0, q::STOP_REASON, 4).map_err(e)? as u32
                ))
            } else {
                None
            },
            pc: if stopped {
                Some(p.wave_info(w.0, q::PC, 8).map_err(e)?)
            } else {
                None
            },
            exec: if stopped {
                Some(p.wave_info(w.0, q::EXEC_MASK, 8).map_err(e)?)
            } else {
                None
            },
            agent: AgentId(p.wave_info(w.0, q::AGENT, 8).map_err(e)?),
            queue: QueueId(p.wave_info(w.0, q::QUEUE, 8).map_err(e)?),
            dispatch: DispatchId(p.wave_info(w.0, q::DISPATCH, 8).map_err(e)?),
            workgroup_coord: coord,
            wave_number_in_workgroup: p
                .wave_info(w.0, q::WAVE_NUMBER_IN_WORKGROUP, 4)
                .ok()
                .map(|v| v as u32),
            lane_count: p.wave_info(w.0, q::LANE_COUNT, 8).map_err(e)? as u32,
        })
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

    fn registers(&mut self, wave: WaveId) -> Result<Vec<RegisterDesc>, GpuError> {
        let pc = self.facts.pc_register;
        Ok(self
            .reg_facts(wave)?
            .iter()
            .map(|r| RegisterDesc {
                name: r.name.clone(),
                size: r.size,
                type_name: r.type_name.clone(),
                dwarf: r.dwarf,
                class: if r.handle == pc
                    || r.name == "status"
                    || r.name == "mode"
                    || r.name == "trapsts"
                {
                    RegisterClass::System
                } else if r.name.starts_with('v') || r.name.starts_with('a') {
                    RegisterClass::Vector
                } else {
                    RegisterClass::Scalar
                },
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
        let s = self.space(space)?;
        self.process
            .read_memory(wave.map(|w| w.0).unwrap_or(0), s, addr, buf)
            .map_err(|_| GpuError::MemoryAccess { addr })
    }

    fn write_memory(
        &mut self,
        space: AddressSpace,
        wave: Option<WaveId>,
        addr: u64,
        data: &[u8],
    ) -> Result<usize, GpuError> {
        let s = self.space(space)?;
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
