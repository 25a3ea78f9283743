#include "corpus.h"
// Dynamic __local argument: the runtime sizes and places it.
__kernel void lds_dynamic(__global const uint *a, __global uint *out, uint n,
                          __local uint *tmp) {
  __local uint fixed[4];
  uint l = LID(), i = GID(), sz = __builtin_amdgcn_workgroup_size_x();
  if (l < 4u) fixed[l] = 0x1000u * l;
  tmp[l] = i < n ? a[i] : 0u;
  corpus_barrier();
  if (i < n) out[i] = tmp[sz - 1u - l] + fixed[l & 3u];
}
