#include "simgpu.h"

// Per-workgroup sum of in[] (work-group size must be a power of two <= 256):
// each work-item loads one element (0 past n), then a tree reduction in LDS
// with a barrier per step; work-item 0 writes the group's sum to out[group].
__kernel void reduce_sum(__global const uint *in, __global uint *out,
                         uint n) {
  __local uint scratch[256];
  size_t lid = get_local_id(0);
  size_t gid = get_global_id(0);
  scratch[lid] = gid < n ? in[gid] : 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) {
      scratch[lid] += scratch[lid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    out[get_group_id(0)] = scratch[0];
  }
}
