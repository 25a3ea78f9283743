#include "corpus.h"
// LDS atomics (32- and 64-bit, returning and not) with several waves.
KERNEL(lds_atomics) {
  __local uint hist[16];
  __local ulong sum64;
  __local uint order;
  uint l = LID(), i = GID();
  if (l < 16u) hist[l] = 0u;
  if (l == 0u) { sum64 = 0ul; order = 0u; }
  corpus_barrier();
  if (i < n) {
    atomic_inc(&hist[a[i] & 15u]);
    atomic_max(&hist[(a[i] >> 4) & 15u], b[i] & 0xffu);
    __atomic_fetch_add(&sum64, (ulong)a[i], __ATOMIC_RELAXED);
  }
  uint t = atomic_add(&order, 1u);
  corpus_barrier();
  if (l < 16u) out[__builtin_amdgcn_workgroup_id_x() * 20u + l] = hist[l];
  if (l == 0u) {
    uint g = __builtin_amdgcn_workgroup_id_x() * 20u;
    out[g + 16u] = (uint)sum64;
    out[g + 17u] = (uint)(sum64 >> 32);
    out[g + 18u] = order;
  }
  (void)t;
}
