//! The host side of the GPU library's callbacks: the library asks for
//! breakpoints in the CPU process. We own ptrace, so requests are queued
//! here (declarative actions) and carried out by the loop right after the
//! library call returns, on our own internal breakpoints.

use std::sync::Arc;
use std::sync::Mutex;

use gpu_target::model::BreakpointId;
use gpu_target::model::GpuError;
use gpu_target::model::HostProcess;

/// A breakpoint request from the GPU library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostRequest {
    /// Plant a breakpoint at `addr`, known to the library as `id`.
    Insert {
        /// Address in the CPU process.
        addr: u64,
        /// Library's id.
        id: BreakpointId,
    },
    /// Remove breakpoint `id`.
    Remove {
        /// Library's id.
        id: BreakpointId,
    },
}

/// Queue shared between the library callbacks and the loop (same thread;
/// the mutex only satisfies the `Send` bound of the callback contract).
pub type RequestQueue = Arc<Mutex<Vec<HostRequest>>>;

/// `HostProcess` implementation handed to the GPU library.
pub struct HostBridge {
    pid: i32,
    queue: RequestQueue,
}

impl HostBridge {
    /// Bridge for process `pid`.
    pub fn new(pid: u32, queue: RequestQueue) -> Self {
        HostBridge {
            pid: pid as i32,
            queue,
        }
    }
}

fn push(q: &RequestQueue, r: HostRequest) {
    match q.lock() {
        Ok(mut v) => v.push(r),
        Err(p) => p.into_inner().push(r),
    }
}

/// Take every queued request.
pub fn drain(q: &RequestQueue) -> Vec<HostRequest> {
    match q.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    }
}

impl HostProcess for HostBridge {
    fn os_pid(&self) -> i32 {
        self.pid
    }

    fn insert_breakpoint(&mut self, addr: u64, id: BreakpointId) -> Result<(), GpuError> {
        tracing::debug!(target: "dbgapi", addr = format_args!("{addr:#x}"), id = id.0, "library asks for a host breakpoint");
        push(&self.queue, HostRequest::Insert { addr, id });
        Ok(())
    }

    fn remove_breakpoint(&mut self, id: BreakpointId) -> Result<(), GpuError> {
        push(&self.queue, HostRequest::Remove { id });
        Ok(())
    }
}
