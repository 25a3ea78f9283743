#include "corpus.h"
// Tree reduction in static LDS over 256 work-items (4 waves) with barriers.
KERNEL(lds_reduce) {
  __local uint s[256];
  uint l = LID(), i = GID();
  s[l] = i < n ? a[i] : 0u;
  corpus_barrier();
  for (uint w = 128; w > 0; w >>= 1) {
    if (l < w) s[l] += s[l + w];
    corpus_barrier();
  }
  if (l == 0) out[__builtin_amdgcn_workgroup_id_x()] = s[0];
}
