#include "corpus.h"
// ds_bpermute and ds_permute across the wave.
KERNEL(bpermute) {
  uint i = GID();
  uint x = i < n ? a[i] : 0u;
  uint l = LID() & 63u;
  int src = (int)((l * 5u + b[i % n]) & 63u) * 4;
  uint p = (uint)__builtin_amdgcn_ds_bpermute(src, (int)x);
  uint q = (uint)__builtin_amdgcn_ds_permute((int)(((l + 7u) & 63u) * 4u), (int)x);
  if (i < n) out[i] = p ^ (q * 3u);
}
