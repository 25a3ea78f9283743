//! The one entry point a debugger uses to reach a GPU: load an amd-dbgapi
//! library and attach it to a host process, getting a [`GpuBackend`]. With
//! [`crate::model`], this is the whole contract; the binding
//! ([`crate::dbgapi::sys`]) stays behind it.

use std::path::Path;

use crate::dbgapi::sys::DbgApi;
use crate::dbgapi::DbgApiBackend;
use crate::model::GpuBackend;
use crate::model::GpuError;
use crate::model::HostProcess;

/// A loaded, initialized amd-dbgapi library.
pub struct GpuLibrary {
    api: DbgApi,
}

impl GpuLibrary {
    /// Load and initialize the library at `path` (or the default search:
    /// `$GDBMUX_DBGAPI`, then the default soname). The error is the
    /// library's reason, readable.
    pub fn load(path: Option<&Path>) -> Result<Self, String> {
        DbgApi::load(path)
            .map(|api| GpuLibrary { api })
            .map_err(|e| e.to_string())
    }

    /// `PATH (amd-dbgapi MAJOR.MINOR.PATCH)`.
    pub fn describe(&self) -> String {
        let (a, b, c) = self.api.version();
        format!("{} (amd-dbgapi {a}.{b}.{c})", self.api.path())
    }

    /// Attach to the process `host` owns.
    pub fn attach(&self, host: Box<dyn HostProcess>) -> Result<Box<dyn GpuBackend>, GpuError> {
        Ok(Box::new(DbgApiBackend::attach(&self.api, host)?))
    }
}
