// Work-item functions for kernels built without the ROCm device libraries.
//
// The values come from the same places the ROCm device libraries read them
// from: the workitem/workgroup ids that the hardware places in registers and
// the HSA kernel dispatch packet (hsa_kernel_dispatch_packet_t) that
// `__builtin_amdgcn_dispatch_ptr()` points at.
#ifndef SIMGPU_H
#define SIMGPU_H

#define SIMGPU_FN static inline __attribute__((overloadable, always_inline))

SIMGPU_FN size_t get_local_id(uint dim) {
  switch (dim) {
  case 0: return __builtin_amdgcn_workitem_id_x();
  case 1: return __builtin_amdgcn_workitem_id_y();
  default: return __builtin_amdgcn_workitem_id_z();
  }
}

SIMGPU_FN size_t get_group_id(uint dim) {
  switch (dim) {
  case 0: return __builtin_amdgcn_workgroup_id_x();
  case 1: return __builtin_amdgcn_workgroup_id_y();
  default: return __builtin_amdgcn_workgroup_id_z();
  }
}

// Offsets into hsa_kernel_dispatch_packet_t: workgroup_size_x at 4 (u16),
// grid_size_x at 12 (u32).
SIMGPU_FN size_t get_local_size(uint dim) {
  __constant ushort *p = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
  return p[2 + (dim < 3 ? dim : 0)];
}

SIMGPU_FN size_t get_global_size(uint dim) {
  __constant uint *p = (__constant uint *)__builtin_amdgcn_dispatch_ptr();
  return p[3 + (dim < 3 ? dim : 0)];
}

SIMGPU_FN size_t get_global_id(uint dim) {
  return get_group_id(dim) * get_local_size(dim) + get_local_id(dim);
}

SIMGPU_FN void barrier(int flags) {
  (void)flags;
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

#endif
