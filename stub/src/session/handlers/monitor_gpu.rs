//! `monitor gpu …`: the GPU for stock gdb, which cannot hold an AMD GPU
//! inferior itself (docs/architecture.md, "gdb's path to the GPU"). Waves are named by the same thread ids
//! the GPU session uses.

use std::fmt::Write as _;

use gpu_target::model::AddressSpace;
use gpu_target::model::WaveId;

use crate::gpu::GpuShared;
use crate::session::Session;
use crate::session::SessionRole;

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn hexdump(addr: u64, data: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in data.chunks(16).enumerate() {
        let _ = write!(s, "{:#018x}:", addr + (i * 16) as u64);
        for b in chunk {
            let _ = write!(s, " {b:02x}");
        }
        s.push('\n');
    }
    s
}

/// With agents of several architectures: the wave's agent and its
/// architecture, at the end of its `monitor gpu waves` line.
fn wave_agent(
    g: &mut crate::gpu::controller::GpuController,
    s: &mut String,
    agent: gpu_target::model::AgentId,
) {
    let arch = g
        .agents()
        .ok()
        .and_then(|l| l.into_iter().find(|a| a.id == agent))
        .and_then(|a| a.architecture.ok())
        .map(|a| a.name)
        .unwrap_or_else(|| "?".into());
    s.pop();
    let _ = writeln!(s, " agent {} ({arch})", agent.0);
}

impl<R: SessionRole> Session<R> {
    fn gpu_handle(&self) -> Option<GpuShared> {
        self.mux.as_ref().and_then(|m| m.borrow().gpu())
    }

    fn wave_arg(gpu: &GpuShared, arg: Option<&String>) -> Result<(WaveId, u64), String> {
        let tid = arg
            .and_then(|a| num(a))
            .ok_or("give a wave (its thread id from `monitor gpu waves`)")?;
        let mut g = gpu.borrow_mut();
        g.waves();
        g.wave_of(tid)
            .map(|w| (w, tid))
            .ok_or_else(|| format!("no wave {tid}"))
    }

    pub(super) fn monitor_gpu(&mut self, args: &[String]) -> String {
        let Some(gpu) = self.gpu_handle() else {
            return "GPU: no GPU library loaded (gdbmux --dbgapi PATH, or GDBMUX_DBGAPI)\n".into();
        };
        // Answer from the GPU's current state: take in events the loop has
        // not seen yet (a monitor command is not a replay packet).
        let news = self.pump_gpu();
        R::gpu_news(self, &news);
        let sub = args.first().map(String::as_str).unwrap_or("info");
        let r: Result<String, String> = match sub {
            "info" | "state" => {
                let mut text = self
                    .mux
                    .as_ref()
                    .map(|m| m.borrow().describe())
                    .unwrap_or_default();
                // The kernels of the loaded code objects, with their
                // addresses (what `monitor gpu break KERNEL` accepts).
                let cos = gpu.borrow().code_objects().to_vec();
                for (name, addr) in self.symbolizer.all(&cos) {
                    text.push_str(&format!("kernel {name} at {addr:#x}\n"));
                }
                Ok(text)
            }
            "waves" => {
                let mut g = gpu.borrow_mut();
                let mut s = String::new();
                let waves = match g.try_waves() {
                    Ok(w) => w,
                    Err(e) => return format!("error: cannot list the waves: {e}\n"),
                };
                if waves.is_empty() {
                    s.push_str("no waves\n");
                }
                let mixed = g.table_architectures().len() > 1;
                for (w, tid) in waves {
                    match g.wave_info(w) {
                        Ok(i) => {
                            let c = i.workgroup_coord.unwrap_or_default();
                            let _ = writeln!(
                                s,
                                "wave {tid} (dbgapi {}): {:?} pc={} exec={} stop=({}) workgroup=({},{},{}) wave#{} dispatch {}",
                                w.0,
                                i.state,
                                i.pc.map(|p| format!("{p:#x}")).unwrap_or_else(|| "-".into()),
                                i.exec.map(|p| format!("{p:#018x}")).unwrap_or_else(|| "-".into()),
                                i.stop_reason.map(|r| r.description()).unwrap_or_else(|| "-".into()),
                                c[0],
                                c[1],
                                c[2],
                                i.wave_number_in_workgroup.unwrap_or(0),
                                i.dispatch.0
                            );
                            if mixed {
                                wave_agent(&mut g, &mut s, i.agent);
                            }
                        }
                        Err(e) => {
                            let _ = writeln!(s, "wave {tid}: {e}");
                        }
                    }
                }
                Ok(s)
            }
            // The lldb helper's request (see `GpuController::arm_exit_hold`).
            "hold-exit" => {
                gpu.borrow_mut().set_helper_holds_exits();
                Ok("gdbmux: after a wave stop, the GPU process's end waits for the client's interrupt (lldb helper)\n".into())
            }
            // The lldb helper's announcement (`crate::gpu::allstop`).
            "all-stop" => {
                gpu.borrow_mut().all_stop_mut().enable();
                Ok("gdbmux: all-stop across the CPU and GPU targets: a wave stop stops the CPU, a continue of the GPU target runs the CPU on (lldb helper)\n".into())
            }
            // The helper's update while a command holds the GPU target
            // (`crate::gpu::allstop`, `AllStop::request_gpu_stop`).
            "all-stop-gpu" => {
                let mut g = gpu.borrow_mut();
                let a = g.all_stop_mut();
                let ok = if args.get(1).is_some_and(|a| a == "join") {
                    a.request_gpu_stop_with_cpu()
                } else {
                    a.request_gpu_stop()
                };
                Ok(if ok {
                    "gdbmux: all-stop: stops the GPU target, and the CPU at its next continue\n".into()
                } else {
                    "gdbmux: all-stop is off\n".into()
                })
            }
            "all-stop-release" => {
                let mut g = gpu.borrow_mut();
                let released = g.all_stop_mut().release_held();
                Ok(format!(
                    "gdbmux: held wave stop released: {released}; {}\n",
                    g.all_stop().describe()
                ))
            }
            "regs" | "registers" => Self::wave_arg(&gpu, args.get(1)).map(|(w, tid)| {
                let mut g = gpu.borrow_mut();
                let regs = g.registers().to_vec();
                let want: Vec<&String> = args.iter().skip(2).collect();
                let mut s = format!("wave {tid}:\n");
                // Named registers in the order asked (an unknown name is
                // said so); without names, every register the wave has
                // (those it does not allocate are counted, not listed).
                let picked: Vec<Result<crate::target::RegisterInfo, &String>> = if want.is_empty() {
                    regs.iter().cloned().map(Ok).collect()
                } else {
                    want.iter()
                        .map(|n| regs.iter().find(|r| r.name == **n).cloned().ok_or(*n))
                        .collect()
                };
                let mut unallocated = 0usize;
                for r in &picked {
                    let r = match r {
                        Ok(r) => r,
                        Err(n) => {
                            let _ = writeln!(s, "  {n:<8} <no such register>");
                            continue;
                        }
                    };
                    match g.read_register(w, r.regnum as usize) {
                        Ok(v) if v.len() <= 8 => {
                            let mut b = [0u8; 8];
                            b[..v.len()].copy_from_slice(&v);
                            let _ = writeln!(s, "  {:<8} {:#x}", r.name, u64::from_le_bytes(b));
                        }
                        Ok(v) => {
                            let lanes: Vec<String> = v
                                .chunks(4)
                                .map(|c| {
                                    format!("{:#x}", u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                                })
                                .collect();
                            let _ = writeln!(s, "  {:<8} [{}]", r.name, lanes.join(" "));
                        }
                        Err(_) if want.is_empty() => unallocated += 1,
                        Err(e) => {
                            let _ = writeln!(s, "  {:<8} <{e}>", r.name);
                        }
                    }
                    if want.is_empty() && s.len() > 60_000 {
                        s.push_str("  … (name registers to see more)\n");
                        break;
                    }
                }
                if unallocated > 0 {
                    let _ = writeln!(
                        s,
                        "  ({unallocated} registers of the architecture are not allocated to this wave)"
                    );
                }
                s
            }),
            "mem" | "memory" => {
                let (space, rest) = match args.get(1).map(String::as_str) {
                    Some("global") => (AddressSpace::Global, &args[2..]),
                    Some("local") => (AddressSpace::Local, &args[2..]),
                    Some("private") => (AddressSpace::PrivateLane, &args[2..]),
                    Some("private-wave") => (AddressSpace::PrivateWave, &args[2..]),
                    _ => (AddressSpace::Global, &args[1..]),
                };
                const USAGE: &str = "usage: monitor gpu mem [global|local] ADDR LEN [WAVE], \
                     monitor gpu mem private ADDR LEN WAVE [LANE], monitor gpu mem private-wave ADDR LEN WAVE";
                match (
                    rest.first().and_then(|a| num(a)),
                    rest.get(1).and_then(|a| num(a)),
                ) {
                    (Some(addr), Some(len)) => {
                        let len = (len as usize).min(4096);
                        let wave = match rest.get(2) {
                            Some(_) => Self::wave_arg(&gpu, rest.get(2)).map(|(w, _)| Some(w)),
                            None => Ok(None),
                        };
                        wave.and_then(|w| match (space, w) {
                            (AddressSpace::PrivateLane, Some(w)) => {
                                let lane = match rest.get(3) {
                                    Some(l) => num(l)
                                        .and_then(|l| u32::try_from(l).ok())
                                        .ok_or_else(|| format!("bad lane {l}"))?,
                                    None => 0,
                                };
                                gpu.borrow_mut()
                                    .read_private_lane(w, lane, addr, len)
                                    .map(|d| format!("lane {lane}:\n{}", hexdump(addr, &d)))
                                    .map_err(|e| e.to_string())
                            }
                            (AddressSpace::PrivateLane | AddressSpace::PrivateWave, None) => {
                                Err(format!("private memory belongs to a wave: {USAGE}"))
                            }
                            _ => gpu
                                .borrow_mut()
                                .read_memory(space, w, addr, len)
                                .map(|d| hexdump(addr, &d))
                                .map_err(|e| e.to_string()),
                        })
                    }
                    _ => Err(USAGE.into()),
                }
            }
            "break" | "b" => match args.get(1) {
                Some(a) => match num(a) {
                    Some(addr) => gpu
                        .borrow_mut()
                        .insert_gpu_breakpoint(addr)
                        .map(|()| format!("GPU breakpoint at {addr:#x}\n"))
                        .map_err(|e| e.to_string()),
                    None => gpu
                        .borrow_mut()
                        .break_kernel(a)
                        .map(|r| match r {
                            Some(addr) => format!("GPU breakpoint at {addr:#x} ({a})\n"),
                            None => format!(
                                "GPU breakpoint {a} pending until a code object defines it\n"
                            ),
                        })
                        .map_err(|e| e.to_string()),
                },
                None => Err(
                    "usage: monitor gpu break ADDR|KERNEL|FILE:LINE (kernels are listed by `monitor gpu`)"
                        .into(),
                ),
            },
            "breaks" | "breakpoints" => {
                let g = gpu.borrow();
                let list = g.gpu_breakpoints();
                let pending = g.pending_breakpoints().to_vec();
                let cos = g.code_objects().to_vec();
                drop(g);
                let mut s = String::new();
                for a in list {
                    let _ = match self.symbolizer.describe(&cos, a) {
                        Some(k) => writeln!(s, "GPU breakpoint at {a:#x} ({k})"),
                        None => writeln!(s, "GPU breakpoint at {a:#x}"),
                    };
                }
                for p in pending {
                    let _ = writeln!(s, "GPU breakpoint {p} (pending until a code object defines it)");
                }
                if s.is_empty() {
                    s.push_str("no GPU breakpoints\n");
                }
                Ok(s)
            }
            "delete" | "d" => match args.get(1).and_then(|a| num(a)) {
                None if args.get(1).is_some_and(|a| gpu.borrow_mut().remove_pending(a)) => {
                    Ok(format!("deleted GPU breakpoint {}\n", args[1]))
                }
                Some(addr) => gpu
                    .borrow_mut()
                    .remove_gpu_breakpoint(addr)
                    .map(|()| format!("deleted GPU breakpoint at {addr:#x}\n"))
                    .map_err(|e| e.to_string()),
                None => Err("usage: monitor gpu delete ADDR|KERNEL|FILE:LINE".into()),
            },
            "step" | "s" => Self::wave_arg(&gpu, args.get(1)).and_then(|(w, tid)| {
                gpu.borrow_mut()
                    .resume_wave_over(w, true)
                    .map(|()| format!("wave {tid} stepping\n"))
                    .map_err(|e| e.to_string())
            }),
            "continue" | "c" => {
                if args.get(1).is_some() {
                    Self::wave_arg(&gpu, args.get(1)).and_then(|(w, tid)| {
                        gpu.borrow_mut()
                            .resume_wave_over(w, false)
                            .map(|()| format!("wave {tid} resumed\n"))
                            .map_err(|e| e.to_string())
                    })
                } else {
                    gpu.borrow_mut().resume_all();
                    Ok("all stopped waves resumed\n".into())
                }
            }
            "stop" => {
                let n = gpu.borrow_mut().stop_all_waves();
                // Asynchronous, as amd-dbgapi's wave stop: each wave
                // stops at its next instruction and shows `Stopped` in
                // `monitor gpu waves` once the library reports it.
                Ok(format!(
                    "stop requested for {n} running waves (each shows Stopped in `monitor gpu waves` once the library reports its stop)\n"
                ))
            }
            "stops" => match args.get(1).map(String::as_str) {
                Some("report") | Some("log") => {
                    let on = args.get(1).map(String::as_str) == Some("report");
                    self.mux_event(crate::mux::MuxEvent::ReportGpuStops(on));
                    Ok(format!(
                        "GPU stops are {}\n",
                        if on { "reported" } else { "logged only" }
                    ))
                }
                _ => Err("usage: monitor gpu stops report|log".into()),
            },
            other => Err(format!("unknown `monitor gpu {other}`; try `monitor help`")),
        };
        match r {
            Ok(s) => s,
            Err(e) => format!("error: {e}\n"),
        }
    }
}
