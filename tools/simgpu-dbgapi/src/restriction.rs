//! `SIMGPU_RUNTIME_RESTRICTION=REASON` (read when the runtime comes up):
//! the library answers the runtime's start as AMD's library answers a
//! runtime it cannot debug (e.g. a ROCr whose `r_debug` version it does not
//! accept): it logs REASON as a warning and reports
//! `RUNTIME(LOADED_ERROR_RESTRICTION)` instead of `LOADED_SUCCESS`, and asks
//! for no breakpoint on the runtime's `r_brk`, so no code object is
//! reported. The program runs on; its kernels run undebugged.

/// The variable holding the reason.
pub const RESTRICTION_ENV: &str = "SIMGPU_RUNTIME_RESTRICTION";
/// Longest reason kept (bytes).
const MAX_REASON: usize = 512;

/// The warning to log, when the runtime is to be refused.
pub fn reason() -> Option<String> {
    let r = std::env::var(RESTRICTION_ENV).ok()?;
    let r = r.trim();
    if r.is_empty() {
        return None;
    }
    let mut end = r.len().min(MAX_REASON);
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    Some(r[..end].to_string())
}
