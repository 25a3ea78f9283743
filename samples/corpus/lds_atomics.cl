#include "corpus.h"
// LDS atomics (32- and 64-bit, returning and not) with several waves.
KERNEL(lds_atomics) {
  __local uint hist[16];
  __local uint hmax[16];
  __local ulong sum64;
  __local uint order;
  uint l = LID(), i = GID();
  if (l < 16u) { hist[l] = 0u; hmax[l] = 0u; }
  if (l == 0u) { sum64 = 0ul; order = 0u; }
  corpus_barrier();
  if (i < n) {
    atomic_inc(&hist[a[i] & 15u]);
    atomic_max(&hmax[(a[i] >> 4) & 15u], b[i] & 0xffu);
    __atomic_fetch_add(&sum64, (ulong)a[i], __ATOMIC_RELAXED);
  }
  uint t = atomic_add(&order, 1u);
  corpus_barrier();
  uint g = __builtin_amdgcn_workgroup_id_x() * 40u;
  if (l < 16u) {
    out[g + l] = hist[l];
    out[g + 16u + l] = hmax[l];
  }
  if (l == 0u) {
    out[g + 32u] = (uint)sum64;
    out[g + 33u] = (uint)(sum64 >> 32);
    out[g + 34u] = order;
  }
  (void)t;
}
