//! Inferior memory access: `process_vm_readv` first (one syscall, no page
//! faults in the tracee), `/proc/PID/mem` as the fallback for pages it
//! cannot reach (text when writing, `PROT_NONE` pages). The `/proc/PID/mem`
//! fd stays open (reopened after exec, when it would point at the old mm).

use std::fs::File;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;

use nix::errno::Errno;

/// Memory of one process.
pub struct Memory {
    pid: i32,
    mem: Option<File>,
}

fn io_errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map(Errno::from_raw).unwrap_or(Errno::EIO)
}

impl Memory {
    /// Memory of `pid` (opens `/proc/PID/mem` lazily).
    pub fn new(pid: i32) -> Self {
        Memory { pid, mem: None }
    }

    /// Drop the cached `/proc/PID/mem` fd (after exec).
    pub fn reopen(&mut self) {
        self.mem = None;
    }

    fn mem(&mut self) -> Result<&File, Errno> {
        if self.mem.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(format!("/proc/{}/mem", self.pid))
                .map_err(|e| io_errno(&e))?;
            self.mem = Some(f);
        }
        self.mem.as_ref().ok_or(Errno::EIO)
    }

    fn vm_readv(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: `local` describes `buf`, which is valid for writes of its
        // length; the remote iovec is only interpreted by the kernel.
        let r = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if r < 0 {
            Err(Errno::last())
        } else {
            Ok(r as usize)
        }
    }

    fn pread_all(&mut self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if addr > i64::MAX as u64 {
            return Err(Errno::EIO);
        }
        let f = self.mem()?;
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if done == 0 => return Err(io_errno(&e)),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    /// Read up to `len` bytes at `addr`. Returns the readable prefix; an
    /// error only when not even one byte is readable.
    pub fn read(&mut self, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return Ok(out);
        }
        let n = self.read_into(addr, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// [`Memory::read`] into `buf`: fills its readable prefix and returns
    /// the length (at least 1 for a non-empty `buf`).
    pub fn read_into(&mut self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let len = buf.len();
        if len == 0 {
            return Ok(0);
        }
        let first = self.vm_readv(addr, buf);
        let n = match first {
            Ok(n) if n == len => n,
            Ok(n) => {
                // Partial: the rest may still be reachable through
                // /proc/PID/mem (e.g. a PROT_NONE page).
                n + self.pread_all(addr + n as u64, &mut buf[n..]).unwrap_or(0)
            }
            Err(e) => match self.pread_all(addr, buf) {
                Ok(n) => n,
                Err(e2) => {
                    tracing::debug!(target: "native", "read {addr:#x}+{len}: vm_readv {e}, /proc/mem {e2}");
                    return Err(e2);
                }
            },
        };
        if n == 0 {
            return Err(Errno::EIO);
        }
        Ok(n)
    }

    /// Write `data` at `addr` (text pages too, via `/proc/PID/mem`).
    /// Returns bytes written.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        if addr > i64::MAX as u64 {
            return Err(Errno::EIO);
        }
        let f = self.mem()?;
        let mut done = 0;
        while done < data.len() {
            match f.write_at(&data[done..], addr + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if done == 0 => return Err(io_errno(&e)),
                Err(_) => break,
            }
        }
        if done == 0 {
            return Err(Errno::EIO);
        }
        Ok(done)
    }
}
