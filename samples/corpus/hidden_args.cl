#include "corpus.h"
// Values the runtime passes as hidden arguments (code object v5) and the
// dispatch packet.
KERNEL(hidden_args) {
  uint i = GID();
  if (i >= n) return;
  __constant uint *ip = (__constant uint *)__builtin_amdgcn_implicitarg_ptr();
  __constant ushort *ips = (__constant ushort *)ip;
  out[8 * i] = ip[0];       // hidden_block_count_x
  out[8 * i + 1] = ips[6];  // hidden_group_size_x
  out[8 * i + 2] = ips[9];  // hidden_remainder_x
  out[8 * i + 3] = ips[32]; // hidden_grid_dims
  out[8 * i + 4] = __builtin_amdgcn_workgroup_size_x();
  out[8 * i + 5] = __builtin_amdgcn_grid_size_x();
  out[8 * i + 6] = (uint)(ulong)((__constant ulong *)ip)[5]; // global_offset_x
  out[8 * i + 7] = ip[1];   // hidden_block_count_y
}
