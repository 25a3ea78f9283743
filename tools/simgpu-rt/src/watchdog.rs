//! The launch watchdog: a dispatch the runtime runs itself (no debugger
//! attached) that has not finished after the watchdog timeout is abandoned,
//! as a GPU driver's hang detection resets a queue. `launch` then returns
//! [`Status::Timeout`](crate::Status::Timeout) and `last_error` names the
//! kernel, the oldest live wave's pc and instruction, and the reason.
//!
//! - Default: [`DEFAULT_MS`] (10 s) per launch, measured from the
//!   submission (wall-clock, so a long legitimate kernel needs a larger
//!   value).
//! - `SIMGPU_WATCHDOG_MS=N` sets it (read at each launch), `0` turns it off;
//!   `simgpu_set_watchdog_ms(N)` overrides the environment for the process.
//! - With a debugger attached the dispatch runs on the debugger's device and
//!   the watchdog is off: a debugger may hold waves stopped for as long as
//!   it likes, and a hung wave is the debugger's to stop and inspect
//!   (gdb: `monitor gpu stop`, `monitor gpu waves`; lldb: interrupt the GPU
//!   target).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use gpu_target::model::DispatchId;
use gpu_target::model::StopReasons;
use gpu_target::sim::device::Device;

/// The default timeout in milliseconds.
pub const DEFAULT_MS: u64 = 10_000;

/// The environment variable that sets the timeout (milliseconds, 0 = off).
pub const ENV: &str = "SIMGPU_WATCHDOG_MS";

/// `u64::MAX`: not overridden; else the override in milliseconds.
static OVERRIDE_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Overrides the environment for this process (`0` turns the watchdog off).
pub fn set_timeout_ms(ms: u64) {
    OVERRIDE_MS.store(ms, Ordering::SeqCst);
}

/// The timeout for the next launch; `None` when the watchdog is off.
pub fn timeout() -> Option<Duration> {
    let ms = match OVERRIDE_MS.load(Ordering::SeqCst) {
        u64::MAX => std::env::var(ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_MS),
        ms => ms,
    };
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// Abandons dispatch `id` of `kernel` after `after` without completion and
/// returns the error text. The caller still waits for the dispatch (its
/// last work-group retires at once) before it frees what the kernel used.
pub fn fire(dev: &Device, id: DispatchId, kernel: &str, after: Duration) -> String {
    let at = dev.abort_dispatch(id, StopReasons::NONE);
    let place = match at {
        Some((wave, pc)) => {
            let mut code = [0u8; 8];
            let n = dev.memory().read_partial(pc, &mut code);
            let text = gpu_target::sim::decode::decode(&code[..n])
                .map(|i| i.to_string())
                .unwrap_or_else(|| "<unknown instruction>".into());
            format!("wave {} at pc {pc:#x}: {text}", wave.0)
        }
        None => "no wave resident".into(),
    };
    format!(
        "{kernel}: watchdog: the dispatch did not finish within {} ms ({ENV}); {place}; dispatch aborted",
        after.as_millis()
    )
}
