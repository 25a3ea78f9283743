//! Global memory as the simulated GPU sees it.
//!
//! A GPU with unified memory reads and writes the host process's own
//! address space. [`ProcessMemory`] does exactly that with
//! `process_vm_readv`/`process_vm_writev` (the calling process itself or a
//! debuggee); a bad address comes back as a [`MemFault`] instead of a crash.
//! [`BufferMemory`] is a set of local buffers for tests and benchmarks.

use std::collections::BTreeMap;
use std::io::IoSlice;
use std::io::IoSliceMut;
use std::sync::RwLock;

use nix::sys::uio::process_vm_readv;
use nix::sys::uio::process_vm_writev;
use nix::sys::uio::RemoteIoVec;
use nix::unistd::Pid;

use super::wave::LANES;

/// Base of the flat-address aperture of the LDS (gfx9, as the Linux kernel
/// driver sets it up: `1 << 48`); `src_shared_base` is its high half.
pub const SHARED_APERTURE: u64 = 1 << 48;
/// Base of the flat-address aperture of private memory (`2 << 48`);
/// `src_private_base` is its high half.
pub const PRIVATE_APERTURE: u64 = 2 << 48;
/// Size of each aperture (4 GiB).
pub const APERTURE_SIZE: u64 = 1 << 32;

/// A global memory access that could not be completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("memory fault at {addr:#x} ({len} bytes)")]
pub struct MemFault {
    /// First address of the failed access.
    pub addr: u64,
    /// Its length.
    pub len: usize,
}

/// Byte-addressed global memory shared by all waves.
pub trait GlobalMemory: Send + Sync {
    /// Reads `buf.len()` bytes at `addr`, all or nothing.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault>;
    /// Writes `data` at `addr`, all or nothing.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault>;
    /// Reads as much as possible from `addr`; returns the count read.
    fn read_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        match self.read(addr, buf) {
            Ok(()) => buf.len(),
            Err(_) => 0,
        }
    }

    /// The lanes of a gather: for each `(addr, at)` of `lanes`, in order,
    /// reads `size` bytes at `addr` into `buf[at..at + size]`; stops at the
    /// first that fails and returns its address. One [`read`](Self::read)
    /// each unless the memory does better (one lock for all of them).
    fn read_lanes(&self, lanes: &[(u64, usize)], size: usize, buf: &mut [u8]) -> Result<(), u64> {
        for &(addr, at) in lanes {
            let dst = buf.get_mut(at..at + size).ok_or(addr)?;
            self.read(addr, dst).map_err(|_| addr)?;
        }
        Ok(())
    }

    /// The dword loads of a wave (`global_load_dword` and its FLAT form):
    /// for each lane of `exec`, in lane order, the 4 bytes at `addrs[lane]`
    /// into `row[lane]` (the other lanes are left alone); stops at the first
    /// lane that fails and returns its address (`row` may then hold some
    /// lanes). Through [`read_lanes`](Self::read_lanes) and a staging buffer
    /// unless the memory does better ([`BufferMemory`]: straight into the
    /// row under one lock).
    fn read_dwords(
        &self,
        addrs: &[u64; LANES],
        exec: u64,
        row: &mut [u32; LANES],
    ) -> Result<(), u64> {
        let mut lanes = [(0u64, 0usize); LANES];
        let mut n = 0;
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            lanes[n] = (addrs[lane], 4 * lane);
            n += 1;
        }
        let mut buf = [0u8; 4 * LANES];
        self.read_lanes(&lanes[..n], 4, &mut buf)?;
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let w = &buf[4 * lane..4 * lane + 4];
            row[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        }
        Ok(())
    }

    /// The dword stores of a wave: for each lane of `exec`, in lane order,
    /// `row[lane]` to the 4 bytes at `addrs[lane]`; stops at the first lane
    /// that fails and returns its address (the lanes before it are
    /// written, as [`write_lanes`](Self::write_lanes) leaves them).
    fn write_dwords(&self, addrs: &[u64; LANES], exec: u64, row: &[u32; LANES]) -> Result<(), u64> {
        let mut lanes = [(0u64, 0usize); LANES];
        let mut buf = [0u8; 4 * LANES];
        let mut n = 0;
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            lanes[n] = (addrs[lane], 4 * lane);
            buf[4 * lane..4 * lane + 4].copy_from_slice(&row[lane].to_le_bytes());
            n += 1;
        }
        self.write_lanes(&lanes[..n], 4, &buf)
    }

    /// The lanes of an atomic: for each address of `addrs`, in order, reads
    /// the `size` bytes (4 or 8) there as `old`, writes `new(i, old)` back
    /// (`i`: the address's index) and keeps `old` in `olds[i]`; stops at the
    /// first address that fails and returns its index and address. A read
    /// and a write each unless the memory does better (one lock for all of
    /// them). The caller serialises atomics (the interpreter holds one lock
    /// around this call).
    fn update_lanes(
        &self,
        addrs: &[u64],
        size: usize,
        olds: &mut [u64],
        new: &mut dyn FnMut(usize, u64) -> u64,
    ) -> Result<(), (usize, u64)> {
        for (i, (&addr, old)) in addrs.iter().zip(olds.iter_mut()).enumerate() {
            let mut b = [0u8; 8];
            self.read(addr, &mut b[..size]).map_err(|_| (i, addr))?;
            *old = u64::from_le_bytes(b);
            let v = new(i, *old);
            self.write(addr, &v.to_le_bytes()[..size])
                .map_err(|_| (i, addr))?;
        }
        Ok(())
    }

    /// Whether [`update_lanes`](Self::update_lanes) is atomic by itself: it
    /// holds one lock over all its lanes that every other access of this
    /// memory waits for, so the interpreter need not serialise atomics
    /// around it ([`BufferMemory`]; not the default's read and write per
    /// lane).
    fn atomic_update_lanes(&self) -> bool {
        false
    }

    /// The lanes of a scatter: for each `(addr, at)` of `lanes`, in order,
    /// writes `data[at..at + size]` at `addr`; stops at the first that
    /// fails and returns its address.
    fn write_lanes(&self, lanes: &[(u64, usize)], size: usize, data: &[u8]) -> Result<(), u64> {
        for &(addr, at) in lanes {
            let src = data.get(at..at + size).ok_or(addr)?;
            self.write(addr, src).map_err(|_| addr)?;
        }
        Ok(())
    }
}

/// The memory of a Linux process, through `process_vm_readv`/`writev`.
#[derive(Debug, Clone, Copy)]
pub struct ProcessMemory {
    pid: Pid,
}

impl ProcessMemory {
    /// Memory of process `pid` (needs ptrace access rights to it).
    pub fn new(pid: i32) -> Self {
        Self {
            pid: Pid::from_raw(pid),
        }
    }

    /// Memory of the calling process.
    pub fn this_process() -> Self {
        Self {
            pid: nix::unistd::getpid(),
        }
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }
}

/// Lanes that [`ProcessMemory`] moves in one system call at most (a wave's
/// 64; the kernel's limit, `IOV_MAX`, is 1024).
const MAX_LANE_IOVECS: usize = 64;

/// The byte count of a one-call transfer of `lanes` (`(addr, at)` pairs of
/// `size` bytes, slots in a local buffer of `len` bytes), or `None` when it
/// cannot be one call: too many lanes, an empty access, slots not in
/// increasing, non-overlapping order (the local side is cut from one buffer
/// front to back) or past the buffer, or an address that does not fit the
/// address space.
fn lane_iovecs(lanes: &[(u64, usize)], size: usize, len: usize) -> Option<usize> {
    if lanes.is_empty() || lanes.len() > MAX_LANE_IOVECS || size == 0 {
        return None;
    }
    let mut pos = 0;
    for &(addr, at) in lanes {
        if at < pos || usize::try_from(addr).is_err() {
            return None;
        }
        pos = at.checked_add(size)?;
    }
    (pos <= len).then_some(lanes.len() * size)
}

/// Shared body of [`ProcessMemory`]'s read and write: `len` bytes at
/// `addr` through `call` (`process_vm_readv` or `_writev`), all or a fault.
fn vm_xfer(
    addr: u64,
    len: usize,
    call: impl FnOnce(&[RemoteIoVec]) -> nix::Result<usize>,
) -> Result<(), MemFault> {
    if len == 0 {
        return Ok(());
    }
    let fault = MemFault { addr, len };
    let remote = [RemoteIoVec {
        base: usize::try_from(addr).map_err(|_| fault)?,
        len,
    }];
    match call(&remote) {
        Ok(n) if n == len => Ok(()),
        _ => Err(fault),
    }
}

impl GlobalMemory for ProcessMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        vm_xfer(addr, buf.len(), |remote| {
            process_vm_readv(self.pid, &mut [IoSliceMut::new(buf)], remote)
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        vm_xfer(addr, data.len(), |remote| {
            process_vm_writev(self.pid, &[IoSlice::new(data)], remote)
        })
    }

    /// One `process_vm_readv` for all lanes; when it comes back short (a
    /// lane's address is unreadable), lane by lane to find the first
    /// failing one.
    fn read_lanes(&self, lanes: &[(u64, usize)], size: usize, buf: &mut [u8]) -> Result<(), u64> {
        if let Some(total) = lane_iovecs(lanes, size, buf.len()) {
            let mut remote = [RemoteIoVec { base: 0, len: 0 }; MAX_LANE_IOVECS];
            for (r, &(addr, _)) in remote.iter_mut().zip(lanes) {
                *r = RemoteIoVec {
                    base: addr as usize,
                    len: size,
                };
            }
            let mut local: [IoSliceMut<'_>; MAX_LANE_IOVECS] =
                std::array::from_fn(|_| IoSliceMut::new(&mut []));
            let mut rest = &mut *buf;
            let mut pos = 0;
            for (l, &(_, at)) in local.iter_mut().zip(lanes) {
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(at - pos);
                let (slot, tail) = tail.split_at_mut(size);
                *l = IoSliceMut::new(slot);
                rest = tail;
                pos = at + size;
            }
            let n = lanes.len();
            if process_vm_readv(self.pid, &mut local[..n], &remote[..n]) == Ok(total) {
                return Ok(());
            }
        }
        for &(addr, at) in lanes {
            let dst = buf.get_mut(at..at + size).ok_or(addr)?;
            self.read(addr, dst).map_err(|_| addr)?;
        }
        Ok(())
    }

    /// One `process_vm_writev` for all lanes; when it comes back short,
    /// lane by lane (rewriting the same bytes) to find the first failing
    /// one.
    fn write_lanes(&self, lanes: &[(u64, usize)], size: usize, data: &[u8]) -> Result<(), u64> {
        if let Some(total) = lane_iovecs(lanes, size, data.len()) {
            let mut remote = [RemoteIoVec { base: 0, len: 0 }; MAX_LANE_IOVECS];
            let mut local = [IoSlice::new(&[]); MAX_LANE_IOVECS];
            for ((r, l), &(addr, at)) in remote.iter_mut().zip(local.iter_mut()).zip(lanes) {
                *r = RemoteIoVec {
                    base: addr as usize,
                    len: size,
                };
                *l = IoSlice::new(&data[at..at + size]);
            }
            let n = lanes.len();
            if process_vm_writev(self.pid, &local[..n], &remote[..n]) == Ok(total) {
                return Ok(());
            }
        }
        for &(addr, at) in lanes {
            let src = data.get(at..at + size).ok_or(addr)?;
            self.write(addr, src).map_err(|_| addr)?;
        }
        Ok(())
    }

    fn read_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        // process_vm_readv stops at the first unreadable page; go page by
        // page so a partial read returns what precedes the hole.
        let mut done = 0;
        while done < buf.len() {
            let a = addr + done as u64;
            let page_end = (a | 0xfff) + 1;
            let n = ((page_end - a) as usize).min(buf.len() - done);
            if self.read(a, &mut buf[done..done + n]).is_err() {
                break;
            }
            done += n;
        }
        done
    }
}

/// Local buffers at chosen addresses (tests, benchmarks).
#[derive(Debug, Default)]
pub struct BufferMemory {
    regions: RwLock<BTreeMap<u64, Vec<u8>>>,
}

impl BufferMemory {
    /// No mapped memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `bytes` at `base` (regions must not overlap).
    pub fn map(&self, base: u64, bytes: Vec<u8>) {
        if let Ok(mut r) = self.regions.write() {
            r.insert(base, bytes);
        }
    }

    /// A copy of `len` bytes at `addr`.
    pub fn snapshot(&self, addr: u64, len: usize) -> Result<Vec<u8>, MemFault> {
        let mut v = vec![0; len];
        self.read(addr, &mut v)?;
        Ok(v)
    }

    fn with_region<R>(
        &self,
        addr: u64,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, MemFault> {
        let fault = MemFault { addr, len };
        let mut regions = self.regions.write().map_err(|_| fault)?;
        let (&base, bytes) = regions.range_mut(..=addr).next_back().ok_or(fault)?;
        let off = usize::try_from(addr - base).map_err(|_| fault)?;
        let s = bytes
            .get_mut(off..off.checked_add(len).ok_or(fault)?)
            .ok_or(fault)?;
        Ok(f(s))
    }
}

impl GlobalMemory for BufferMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        // Shared lock: device threads read concurrently.
        let fault = MemFault {
            addr,
            len: buf.len(),
        };
        let regions = self.regions.read().map_err(|_| fault)?;
        let (&base, bytes) = regions.range(..=addr).next_back().ok_or(fault)?;
        let off = usize::try_from(addr - base).map_err(|_| fault)?;
        let s = bytes
            .get(off..off.checked_add(buf.len()).ok_or(fault)?)
            .ok_or(fault)?;
        super::wave::copy_small(buf, s);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        self.with_region(addr, data.len(), |s| super::wave::copy_small(s, data))
    }

    fn read_lanes(&self, lanes: &[(u64, usize)], size: usize, buf: &mut [u8]) -> Result<(), u64> {
        let first = lanes.first().map_or(0, |l| l.0);
        let regions = self.regions.read().map_err(|_| first)?;
        // The region of the previous lane, tried first (regions do not
        // overlap, so one that holds the access is the one the map finds).
        let mut last: Option<(u64, &[u8])> = None;
        for &(addr, at) in lanes {
            let (base, bytes) = match last {
                Some((base, bytes)) if addr >= base && addr - base < bytes.len() as u64 => {
                    (base, bytes)
                }
                _ => {
                    let (&base, bytes) = regions.range(..=addr).next_back().ok_or(addr)?;
                    (base, bytes.as_slice())
                }
            };
            last = Some((base, bytes));
            let off = usize::try_from(addr - base).map_err(|_| addr)?;
            let src = bytes
                .get(off..off.checked_add(size).ok_or(addr)?)
                .ok_or(addr)?;
            let dst = buf.get_mut(at..at + size).ok_or(addr)?;
            super::wave::copy_small(dst, src);
        }
        Ok(())
    }

    /// `update_lanes` holds the regions' write lock for all its lanes.
    fn atomic_update_lanes(&self) -> bool {
        true
    }

    fn read_dwords(
        &self,
        addrs: &[u64; LANES],
        exec: u64,
        row: &mut [u32; LANES],
    ) -> Result<(), u64> {
        let first = addrs[(exec.trailing_zeros() as usize) & (LANES - 1)];
        let regions = self.regions.read().map_err(|_| first)?;
        // The region of the previous lane, tried first (as `read_lanes`);
        // the end of the region is kept less 4, so one compare checks a
        // whole dword.
        let mut last: Option<(u64, u64, &[u8])> = None;
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let addr = addrs[lane];
            let (base, bytes) = match last {
                Some((base, span, bytes)) if addr.wrapping_sub(base) <= span => (base, bytes),
                _ => {
                    let (&base, bytes) = regions.range(..=addr).next_back().ok_or(addr)?;
                    let span = (bytes.len() as u64).checked_sub(4).ok_or(addr)?;
                    last = Some((base, span, bytes.as_slice()));
                    (base, bytes.as_slice())
                }
            };
            let off = usize::try_from(addr - base).map_err(|_| addr)?;
            let w = bytes.get(off..off.wrapping_add(4)).ok_or(addr)?;
            row[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        }
        Ok(())
    }

    fn write_dwords(&self, addrs: &[u64; LANES], exec: u64, row: &[u32; LANES]) -> Result<(), u64> {
        let first = addrs[(exec.trailing_zeros() as usize) & (LANES - 1)];
        let mut regions = self.regions.write().map_err(|_| first)?;
        // The region of the previous lane, tried first (as `read_dwords`).
        let mut last: Option<(u64, u64, &mut Vec<u8>)> = None;
        let mut rest = exec;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let addr = addrs[lane];
            let (base, span, bytes) = match last.take() {
                Some((base, span, bytes)) if addr.wrapping_sub(base) <= span => (base, span, bytes),
                _ => {
                    let (&base, bytes) = regions.range_mut(..=addr).next_back().ok_or(addr)?;
                    let span = (bytes.len() as u64).checked_sub(4).ok_or(addr)?;
                    (base, span, bytes)
                }
            };
            let off = usize::try_from(addr - base).map_err(|_| addr)?;
            let w = bytes.get_mut(off..off.wrapping_add(4)).ok_or(addr)?;
            w.copy_from_slice(&row[lane].to_le_bytes());
            last = Some((base, span, bytes));
        }
        Ok(())
    }

    fn update_lanes(
        &self,
        addrs: &[u64],
        size: usize,
        olds: &mut [u64],
        new: &mut dyn FnMut(usize, u64) -> u64,
    ) -> Result<(), (usize, u64)> {
        let first = addrs.first().copied().unwrap_or(0);
        let mut regions = self.regions.write().map_err(|_| (0, first))?;
        // The region of the previous lane, tried first (as `read_lanes`).
        let mut last: Option<(u64, &mut Vec<u8>)> = None;
        for (i, (&addr, old)) in addrs.iter().zip(olds.iter_mut()).enumerate() {
            let (base, bytes) = match last.take() {
                Some((base, bytes)) if addr >= base && addr - base < bytes.len() as u64 => {
                    (base, bytes)
                }
                _ => {
                    let (&base, bytes) = regions.range_mut(..=addr).next_back().ok_or((i, addr))?;
                    (base, bytes)
                }
            };
            let off = usize::try_from(addr - base).map_err(|_| (i, addr))?;
            let m = bytes
                .get_mut(off..off.checked_add(size).ok_or((i, addr))?)
                .ok_or((i, addr))?;
            // Fixed-size moves for the two sizes atomics have (no `memcpy`
            // call of a run-time length).
            match *m {
                [a, b, c, d] => {
                    *old = u32::from_le_bytes([a, b, c, d]) as u64;
                    let v = (new(i, *old) as u32).to_le_bytes();
                    m.copy_from_slice(&v);
                }
                [a, b, c, d, e, f, g, h] => {
                    *old = u64::from_le_bytes([a, b, c, d, e, f, g, h]);
                    let v = new(i, *old).to_le_bytes();
                    m.copy_from_slice(&v);
                }
                _ => {
                    let mut b = [0u8; 8];
                    b[..size].copy_from_slice(m);
                    *old = u64::from_le_bytes(b);
                    m.copy_from_slice(&new(i, *old).to_le_bytes()[..size]);
                }
            }
            last = Some((base, bytes));
        }
        Ok(())
    }

    fn write_lanes(&self, lanes: &[(u64, usize)], size: usize, data: &[u8]) -> Result<(), u64> {
        let first = lanes.first().map_or(0, |l| l.0);
        let mut regions = self.regions.write().map_err(|_| first)?;
        // The region of the previous lane, tried first (as `read_lanes`).
        let mut last: Option<(u64, &mut Vec<u8>)> = None;
        for &(addr, at) in lanes {
            let (base, bytes) = match last.take() {
                Some((base, bytes)) if addr >= base && addr - base < bytes.len() as u64 => {
                    (base, bytes)
                }
                _ => {
                    let (&base, bytes) = regions.range_mut(..=addr).next_back().ok_or(addr)?;
                    (base, bytes)
                }
            };
            let off = usize::try_from(addr - base).map_err(|_| addr)?;
            let dst = bytes
                .get_mut(off..off.checked_add(size).ok_or(addr)?)
                .ok_or(addr)?;
            let src = data.get(at..at + size).ok_or(addr)?;
            super::wave::copy_small(dst, src);
            last = Some((base, bytes));
        }
        Ok(())
    }

    fn read_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Ok(regions) = self.regions.read() else {
            return 0;
        };
        let Some((&base, bytes)) = regions.range(..=addr).next_back() else {
            return 0;
        };
        let off = (addr - base) as usize;
        let avail = bytes.get(off..).unwrap_or(&[]);
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_memory_bounds() {
        let m = BufferMemory::new();
        m.map(0x1000, vec![1, 2, 3, 4]);
        let mut b = [0u8; 2];
        m.read(0x1002, &mut b).unwrap();
        assert_eq!(b, [3, 4]);
        assert!(m.read(0x1003, &mut b).is_err());
        assert!(m.read(0xfff, &mut b).is_err());
        m.write(0x1000, &[9]).unwrap();
        assert_eq!(m.snapshot(0x1000, 1).unwrap(), vec![9]);
    }

    #[test]
    fn process_memory_reads_self_and_faults_cleanly() {
        let m = ProcessMemory::this_process();
        let v: Vec<u32> = vec![7, 8, 9];
        let mut b = [0u8; 4];
        m.read(v.as_ptr() as u64 + 4, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), 8);
        assert_eq!(m.read(0x10, &mut b), Err(MemFault { addr: 0x10, len: 4 }));
    }

    /// The lane gathers and scatters of both memories: in order, into and
    /// from their slots, and the first unreadable lane's address on a fault
    /// (the lanes before it done).
    #[test]
    fn lane_gathers_and_scatters() {
        let mut words: Vec<u32> = (0..64).map(|i| 100 + i).collect();
        let pm = ProcessMemory::this_process();
        let bm = BufferMemory::new();
        let base = 0x4000u64;
        bm.map(base, words.iter().flat_map(|w| w.to_le_bytes()).collect());
        let mems: [(&dyn GlobalMemory, u64); 2] = [(&pm, words.as_mut_ptr() as u64), (&bm, base)];
        for (m, at) in mems {
            // Lanes 0, 2 and 3 of a 4-lane buffer read words 9, 1 and 40.
            let lanes = [(at + 36, 0), (at + 4, 8), (at + 160, 12)];
            let mut buf = [0u8; 16];
            m.read_lanes(&lanes, 4, &mut buf).unwrap();
            let got: Vec<u32> = buf
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(got, [109, 0, 101, 140]);
            let bad = [(at + 8, 0), (0x10, 4), (at + 12, 8)];
            let mut buf = [0u8; 12];
            assert_eq!(m.read_lanes(&bad, 4, &mut buf), Err(0x10));
            assert_eq!(buf[..4], 102u32.to_le_bytes());
            let out = [(at + 200, 0), (at + 204, 4)];
            m.write_lanes(&out, 4, &[1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
            let mut b = [0u8; 8];
            m.read(at + 200, &mut b).unwrap();
            assert_eq!(b, [1, 0, 0, 0, 2, 0, 0, 0]);
            assert_eq!(m.write_lanes(&[(0x10, 0)], 4, &[0; 4]), Err(0x10));
        }
    }

    /// `BufferMemory::write_lanes` reuses the previous lane's region: lanes
    /// alternating between two regions, and a lane just past the region of
    /// the lane before it (a fault there, the lanes before it written).
    #[test]
    fn buffer_write_lanes_across_regions() {
        let bm = BufferMemory::new();
        bm.map(0x1000, vec![0; 64]);
        bm.map(0x2000, vec![0; 64]);
        let data: Vec<u8> = (1..=16).collect();
        let lanes = [(0x1000, 0), (0x2004, 4), (0x1008, 8), (0x2000, 12)];
        bm.write_lanes(&lanes, 4, &data).unwrap();
        for &(addr, at) in &lanes {
            let mut b = [0u8; 4];
            bm.read(addr, &mut b).unwrap();
            assert_eq!(b[..], data[at..at + 4], "lane at {addr:#x}");
        }
        assert_eq!(
            bm.write_lanes(&[(0x103c, 0), (0x1040, 4)], 4, &[9; 8]),
            Err(0x1040)
        );
        let mut b = [0u8; 4];
        bm.read(0x103c, &mut b).unwrap();
        assert_eq!(b, [9; 4]);
    }

    /// The lanes of an atomic on `BufferMemory` and through the trait's own
    /// `update_lanes` (a read and a write per lane) agree: 4- and 8-byte
    /// words, lanes in two regions, the same address twice (the second
    /// lane sees the first's result), the old values returned in order,
    /// and a fault at the first lane out of range, the lanes before it
    /// done.
    #[test]
    fn atomic_lanes_in_order_across_regions() {
        let make = || {
            let bm = BufferMemory::new();
            bm.map(0x1000, (0..64u8).collect());
            bm.map(0x2000, (64..128u8).collect());
            bm
        };
        let (fast, plain) = (make(), Plain(make()));
        let mems: [&dyn GlobalMemory; 2] = [&fast, &plain];
        let mut results = Vec::new();
        for m in mems {
            for size in [4usize, 8] {
                let addrs = [0x1008u64, 0x2010, 0x1008, 0x2038];
                let mut olds = [0u64; 4];
                m.update_lanes(&addrs, size, &mut olds, &mut |i, old| {
                    old.wrapping_add(0x0101_0101_0101_0101 * (i as u64 + 1))
                })
                .unwrap();
                let mut after = [0u8; 8];
                m.read(0x1008, &mut after[..size]).unwrap();
                results.push((size, olds, after));
                let mut olds = [0u64; 2];
                assert_eq!(
                    m.update_lanes(&[0x1000, 0x103e], size, &mut olds, &mut |_, old| !old),
                    Err((1, 0x103e))
                );
                let mut b = [0u8; 8];
                m.read(0x1000, &mut b[..size]).unwrap();
                assert_eq!(
                    u64::from_le_bytes(b),
                    !olds[0] & (u64::MAX >> (64 - 8 * size))
                );
            }
        }
        // The second memory saw the same sequence.
        assert_eq!(results[..2], results[2..]);
        // Lane 2 read what lane 0 wrote.
        for (size, olds, _) in &results {
            let mask = u64::MAX >> (64 - 8 * size);
            assert_eq!(olds[2], olds[0].wrapping_add(0x0101_0101_0101_0101) & mask);
        }
    }

    /// A memory with only `read` and `write`: the trait's own
    /// `read_dwords`/`write_dwords` (through `read_lanes`/`write_lanes`).
    struct Plain(BufferMemory);

    impl GlobalMemory for Plain {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
            self.0.read(addr, buf)
        }
        fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
            self.0.write(addr, data)
        }
    }

    /// Dword gathers and scatters of a wave: `BufferMemory`'s (one lock,
    /// the previous lane's region) and the trait's agree, lanes outside
    /// EXEC untouched, lanes in two regions in any order; a lane whose
    /// dword leaves its region (or lies in no region) is the fault, the
    /// first in lane order, and a store writes the lanes before it.
    #[test]
    fn dword_gathers_and_scatters() {
        let make = || {
            let bm = BufferMemory::new();
            bm.map(0x1000, (0..64u8).collect());
            bm.map(0x2000, (64..128u8).collect());
            bm
        };
        let (fast, plain) = (make(), Plain(make()));
        let mems: [&dyn GlobalMemory; 2] = [&fast, &plain];
        let mut addrs = [0u64; LANES];
        for (lane, a) in addrs.iter_mut().enumerate() {
            // Alternating regions, descending offsets.
            *a = if lane % 2 == 0 { 0x1000 } else { 0x2000 } + (60 - 4 * (lane % 16)) as u64;
        }
        let exec = 0xf0f0_0000_ffff_0ff1u64;
        for m in mems {
            let mut row = [0xdead_beefu32; LANES];
            m.read_dwords(&addrs, exec, &mut row).unwrap();
            for lane in 0..LANES {
                let want = if exec >> lane & 1 != 0 {
                    let mut b = [0u8; 4];
                    m.read(addrs[lane], &mut b).unwrap();
                    u32::from_le_bytes(b)
                } else {
                    0xdead_beef
                };
                assert_eq!(row[lane], want, "lane {lane}");
            }
            // A dword straddling the end of the region at lane 5, no
            // region at lane 9: the first in lane order is the fault.
            let mut bad = addrs;
            bad[5] = 0x103e;
            bad[9] = 0x3000;
            assert_eq!(m.read_dwords(&bad, u64::MAX, &mut row), Err(0x103e));
            assert_eq!(m.read_dwords(&bad, !(1 << 5), &mut row), Err(0x3000));
            // Scatters: lanes 0..4 to distinct dwords, then a fault.
            let mut st = [0u64; LANES];
            let mut vals = [0u32; LANES];
            for lane in 0..LANES {
                st[lane] = 0x2000 + 4 * lane as u64;
                vals[lane] = 0x1111_0000 + lane as u32;
            }
            st[4] = 0x2040;
            assert_eq!(m.write_dwords(&st, 0b1_0111, &vals), Err(0x2040));
            for lane in 0..4 {
                let mut b = [0u8; 4];
                m.read(st[lane], &mut b).unwrap();
                let want = if lane == 3 {
                    [76, 77, 78, 79]
                } else {
                    vals[lane].to_le_bytes()
                };
                assert_eq!(b, want, "lane {lane}");
            }
        }
    }
}
