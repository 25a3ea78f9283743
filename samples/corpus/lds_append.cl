#include "corpus.h"
// ds_append / ds_consume: wave-wide counters in LDS (M0 holds the address).
// One wave per work-group, so every returned value is deterministic: each
// active lane gets the counter's old value, which then grows (shrinks) by
// the number of active lanes.
KERNEL(lds_append) {
  __local int cnt[4];
  uint l = LID(), i = GID();
  if (l < 4u)
    cnt[l] = 100 * (int)l;
  corpus_barrier();
  int first = 0, third = 0;
  if (a[i] & 1u)
    first = __builtin_amdgcn_ds_append(&cnt[1]);
  int second = __builtin_amdgcn_ds_append(&cnt[1]);
  if (a[i] & 2u)
    third = __builtin_amdgcn_ds_consume(&cnt[2]);
  corpus_barrier();
  out[i] = (uint)first;
  out[n + i] = (uint)second;
  out[2u * n + i] = (uint)third;
  if (l == 0u) {
    uint g = __builtin_amdgcn_workgroup_id_x();
    out[3u * n + 2u * g] = (uint)cnt[1];
    out[3u * n + 2u * g + 1u] = (uint)cnt[2];
  }
}
