//! [`Lifetime::Relaunch`]: every CPU client gets the program freshly
//! launched (`gdbmux demo`). One client after another (gdb, then lldb, …)
//! each starts at the program's first instruction, as a person pasting the
//! banner's line expects; the process a client leaves behind is released
//! as usual when its session closes (a launched one is killed, a detached
//! one runs on by itself).

use super::Lifetime;
use super::Server;
use crate::native::LinuxProcess;
use crate::stop::StopEvent;
use crate::target::Target;

impl Server {
    /// The process for a new CPU session that found no initial one: a
    /// fresh launch of the program under [`Lifetime::Relaunch`], else none.
    /// A launch that fails is logged and the client is served without a
    /// process (as `--multi` serves one), so the server lives on.
    pub(super) fn relaunch_for_new_client(&mut self) -> Option<(Box<dyn Target>, StopEvent)> {
        if self.cfg.lifetime != Lifetime::Relaunch {
            return None;
        }
        let program = self.cfg.launch.program.clone()?;
        let opts = self
            .cfg
            .launch
            .options(program.clone(), self.cfg.launch.args.clone());
        let (p, stop) = match LinuxProcess::launch(&opts) {
            Ok(launched) => launched,
            Err(e) => {
                tracing::error!(target: "mux", "relaunching {} for the new client: {e}", program.display());
                return None;
            }
        };
        let pid = p.pid();
        tracing::info!(target: "mux", pid, "relaunched the program for the new client");
        if self.cfg.announce {
            eprintln!("Process {} created; pid = {pid}", program.display());
        }
        self.initial_pid = Some(pid);
        Some((Box::new(p), stop))
    }
}
