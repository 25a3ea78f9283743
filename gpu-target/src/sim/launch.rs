//! What a runtime does between "launch this kernel" and the dispatch packet,
//! the way ROCr (with the HIP/OpenCL runtimes above it) does it: read the
//! kernel's argument list from the code object metadata (the `AMDGPU`
//! `NT_AMDGPU_METADATA` note, MessagePack), place dynamic `__local` buffers
//! after the static LDS, and fill the hidden arguments of code object v5.

use rmpv::Value;

use super::elf::Elf;
use super::memory::PRIVATE_APERTURE;
use super::memory::SHARED_APERTURE;

/// `NT_AMDGPU_METADATA`.
const NT_AMDGPU_METADATA: u32 = 32;

/// One kernel argument of the metadata (`.args` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    /// `.offset` in the kernarg segment.
    pub offset: u32,
    /// `.size` in bytes.
    pub size: u32,
    /// `.value_kind` (`global_buffer`, `by_value`, `dynamic_shared_pointer`,
    /// `hidden_block_count_x`, ...).
    pub value_kind: String,
    /// `.pointee_align` of a dynamic `__local` pointer (else 0).
    pub pointee_align: u32,
}

/// A kernel's entry of the metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`.
    pub name: String,
    /// `.args`, in order.
    pub args: Vec<KernelArg>,
    /// `.kernarg_segment_size`.
    pub kernarg_size: u32,
    /// `.group_segment_fixed_size` (static LDS).
    pub group_segment_fixed_size: u32,
}

fn get<'v>(map: &'v Value, key: &str) -> Option<&'v Value> {
    map.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn get_u32(map: &Value, key: &str) -> u32 {
    get(map, key).and_then(Value::as_u64).unwrap_or(0) as u32
}

/// The kernels listed in the code object metadata (empty when it has none).
pub fn kernel_metadata(elf: &Elf<'_>) -> Vec<KernelMeta> {
    let Some(mut note) = elf.note("AMDGPU", NT_AMDGPU_METADATA) else {
        return Vec::new();
    };
    let Ok(root) = rmpv::decode::read_value(&mut note) else {
        return Vec::new();
    };
    let Some(kernels) = get(&root, "amdhsa.kernels").and_then(Value::as_array) else {
        return Vec::new();
    };
    kernels
        .iter()
        .map(|k| KernelMeta {
            name: get(k, ".name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            args: get(k, ".args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|arg| KernelArg {
                            offset: get_u32(arg, ".offset"),
                            size: get_u32(arg, ".size"),
                            value_kind: get(arg, ".value_kind")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            pointee_align: get_u32(arg, ".pointee_align"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            kernarg_size: get_u32(k, ".kernarg_segment_size"),
            group_segment_fixed_size: get_u32(k, ".group_segment_fixed_size"),
        })
        .collect()
}

/// Why a kernarg segment could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The caller's blob is larger than the kernel's explicit arguments.
    #[error("{given} bytes of arguments for a kernel that takes {max}")]
    ArgsTooLarge {
        /// Bytes passed.
        given: usize,
        /// Bytes of explicit arguments.
        max: usize,
    },
    /// A dynamic `__local` offset lies outside the dynamic LDS.
    #[error("dynamic __local argument {index} at offset {offset} is outside the {dynamic} dynamic LDS bytes")]
    LocalOutOfRange {
        /// Argument index.
        index: usize,
        /// Offset the caller passed.
        offset: u32,
        /// Dynamic LDS bytes of the launch.
        dynamic: u32,
    },
}

/// The geometry and LDS of one launch.
#[derive(Clone, Copy, Debug)]
pub struct LaunchDims {
    /// Work-items per dimension.
    pub grid: [u32; 3],
    /// Work-group size per dimension.
    pub block: [u16; 3],
    /// Dynamic LDS bytes requested by the caller.
    pub dynamic_lds: u32,
}

impl LaunchDims {
    /// 1, 2 or 3, as ROCr's packet setup field.
    pub fn dims(&self) -> u16 {
        if self.grid[2] > 1 || self.block[2] > 1 {
            3
        } else if self.grid[1] > 1 || self.block[1] > 1 {
            2
        } else {
            1
        }
    }
}

/// Start of the dynamic LDS: the static size rounded up to 16 bytes (the
/// alignment OpenCL runtimes give `__local` kernel arguments).
pub fn dynamic_lds_base(static_lds: u32) -> u32 {
    static_lds.next_multiple_of(16)
}

/// Builds the kernarg segment: the caller's explicit arguments, each dynamic
/// `__local` pointer turned from an offset into the dynamic LDS (the value
/// the caller put in its slot, normally 0) into a group-segment address, and
/// the hidden arguments as ROCr fills them. Returns the segment and the total
/// group segment size (static + dynamic).
pub fn build_kernarg(
    meta: &KernelMeta,
    user: &[u8],
    dims: LaunchDims,
) -> Result<(Vec<u8>, u32), LaunchError> {
    // The caller's blob may pad the last explicit argument (a `uint` passed
    // as 8 bytes) but not reach into the hidden arguments.
    let explicit_end = meta
        .args
        .iter()
        .filter(|a| a.value_kind.starts_with("hidden_"))
        .map(|a| a.offset as usize)
        .min()
        .unwrap_or((meta.kernarg_size as usize).next_multiple_of(8));
    if user.len() > explicit_end {
        return Err(LaunchError::ArgsTooLarge {
            given: user.len(),
            max: explicit_end,
        });
    }
    let size = (meta.kernarg_size as usize).max(user.len()).max(8);
    let mut k = vec![0u8; size];
    k[..user.len()].copy_from_slice(user);
    let base = dynamic_lds_base(meta.group_segment_fixed_size);
    let group_total = base + dims.dynamic_lds;
    let put = |k: &mut Vec<u8>, off: u32, size: u32, v: u64| {
        let (off, size) = (off as usize, size as usize);
        if let Some(dst) = k.get_mut(off..off + size) {
            dst.copy_from_slice(&v.to_le_bytes()[..size.min(8)]);
        }
    };
    let g = dims.grid.map(|x| x as u64);
    let b = dims.block.map(|x| x as u64);
    for (index, a) in meta.args.iter().enumerate() {
        let axis = |s: &str| match s.as_bytes().last() {
            Some(b'y') => 1,
            Some(b'z') => 2,
            _ => 0,
        };
        let kind = a.value_kind.as_str();
        let v: u64 = match kind {
            "dynamic_shared_pointer" => {
                let mut raw = [0u8; 4];
                let off = a.offset as usize;
                if let Some(src) = k.get(off..off + 4) {
                    raw.copy_from_slice(src);
                }
                let offset = u32::from_le_bytes(raw);
                if dims.dynamic_lds == 0 || offset >= dims.dynamic_lds {
                    return Err(LaunchError::LocalOutOfRange {
                        index,
                        offset,
                        dynamic: dims.dynamic_lds,
                    });
                }
                (base + offset) as u64
            }
            k if k.starts_with("hidden_block_count_") => g[axis(k)] / b[axis(k)],
            k if k.starts_with("hidden_group_size_") => b[axis(k)],
            k if k.starts_with("hidden_remainder_") => g[axis(k)] % b[axis(k)],
            "hidden_grid_dims" => dims.dims() as u64,
            "hidden_dynamic_lds_size" => dims.dynamic_lds as u64,
            "hidden_private_base" => PRIVATE_APERTURE >> 32,
            "hidden_shared_base" => SHARED_APERTURE >> 32,
            // Global offsets are 0 (ROCr has none); the printf, hostcall,
            // heap, queue, completion-action and multigrid arguments are
            // null: the simulated runtime provides none of those services.
            k if k.starts_with("hidden_") => 0,
            _ => continue,
        };
        put(&mut k, a.offset, a.size, v);
    }
    Ok((k, group_total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(offset: u32, size: u32, kind: &str) -> KernelArg {
        KernelArg {
            offset,
            size,
            value_kind: kind.into(),
            pointee_align: 0,
        }
    }

    #[test]
    fn hidden_args_and_dynamic_local() {
        let meta = KernelMeta {
            name: "k".into(),
            args: vec![
                arg(0, 8, "global_buffer"),
                arg(8, 4, "dynamic_shared_pointer"),
                arg(16, 4, "hidden_block_count_x"),
                arg(20, 4, "hidden_block_count_y"),
                arg(28, 2, "hidden_group_size_x"),
                arg(34, 2, "hidden_remainder_x"),
                arg(80, 2, "hidden_grid_dims"),
                arg(88, 4, "hidden_dynamic_lds_size"),
            ],
            kernarg_size: 272,
            group_segment_fixed_size: 20,
        };
        let mut user = vec![0u8; 12];
        user[..8].copy_from_slice(&0x1234u64.to_le_bytes());
        user[8..12].copy_from_slice(&4u32.to_le_bytes());
        let dims = LaunchDims {
            grid: [200, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 256,
        };
        let (k, group) = build_kernarg(&meta, &user, dims).unwrap();
        let u32_at = |o: usize| u32::from_le_bytes(k[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_le_bytes(k[o..o + 2].try_into().unwrap());
        assert_eq!(k.len(), 272);
        assert_eq!(u32_at(8), 32 + 4);
        assert_eq!(group, 32 + 256);
        assert_eq!((u32_at(16), u32_at(20)), (3, 1));
        assert_eq!((u16_at(28), u16_at(34), u16_at(80)), (64, 8, 1));
        assert_eq!(u32_at(88), 256);
        user[8..12].copy_from_slice(&256u32.to_le_bytes());
        assert!(matches!(
            build_kernarg(&meta, &user, dims),
            Err(LaunchError::LocalOutOfRange { .. })
        ));
    }
}
