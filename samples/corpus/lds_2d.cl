#include "corpus.h"
// 16x16 tile transpose through LDS (2-D work-groups).
__kernel void lds_2d(__global const uint *a, __global uint *out, uint w) {
  __local uint tile[16][17];
  uint x = __builtin_amdgcn_workitem_id_x(), y = __builtin_amdgcn_workitem_id_y();
  uint gx = __builtin_amdgcn_workgroup_id_x() * 16u + x;
  uint gy = __builtin_amdgcn_workgroup_id_y() * 16u + y;
  tile[y][x] = a[gy * w + gx];
  corpus_barrier();
  uint ox = __builtin_amdgcn_workgroup_id_y() * 16u + x;
  uint oy = __builtin_amdgcn_workgroup_id_x() * 16u + y;
  out[oy * w + ox] = tile[x][y];
}
