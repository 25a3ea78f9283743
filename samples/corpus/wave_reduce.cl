#include "corpus.h"
// A wave reduction with DPP row shifts and readlane.
KERNEL(wave_reduce) {
  uint i = GID();
  uint x = i < n ? a[i] & 0xffffu : 0u;
  uint s = x;
  s += (uint)__builtin_amdgcn_update_dpp(0, (int)s, 0x111, 0xf, 0xf, false);
  s += (uint)__builtin_amdgcn_update_dpp(0, (int)s, 0x112, 0xf, 0xf, false);
  s += (uint)__builtin_amdgcn_update_dpp(0, (int)s, 0x114, 0xf, 0xf, false);
  s += (uint)__builtin_amdgcn_update_dpp(0, (int)s, 0x118, 0xf, 0xf, false);
  uint total = __builtin_amdgcn_readlane(s, 15) + __builtin_amdgcn_readlane(s, 31) +
               __builtin_amdgcn_readlane(s, 47) + __builtin_amdgcn_readlane(s, 63);
  if (i < n) out[i] = s ^ total << 12;
}
