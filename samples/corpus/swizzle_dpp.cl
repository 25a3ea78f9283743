#include "corpus.h"
// ds_swizzle and DPP moves (row shifts, broadcasts, quad permutes).
KERNEL(swizzle_dpp) {
  uint i = GID();
  int x = (int)(i < n ? a[i] : 0u);
  int s1 = __builtin_amdgcn_ds_swizzle(x, 0x041f); // xor 1 in groups of 32
  int s2 = __builtin_amdgcn_ds_swizzle(x, 0x8055); // quad perm 1,1,1,1
  int d1 = __builtin_amdgcn_update_dpp(0, x, 0x111, 0xf, 0xf, false); // row_shr:1
  int d2 = __builtin_amdgcn_update_dpp(7, x, 0x1b, 0xf, 0xf, false);  // quad_perm [3,2,1,0]
  int d3 = __builtin_amdgcn_update_dpp(0, x, 0x142, 0xa, 0xf, false); // row_bcast:15
  int d4 = __builtin_amdgcn_mov_dpp(x, 0x138, 0xf, 0xf, true); // wave_shr:1
  if (i < n) out[i] = (uint)(s1 ^ (s2 << 1) ^ (d1 << 2) ^ (d2 << 3) ^ (d3 << 4) ^ (d4 << 5));
}
