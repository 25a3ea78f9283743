#include "hip_corpus.h"
// HIP: __shared__ memory, __syncthreads and a 64-bit atomic.
extern "C" __global__ void hip_lds(const uint *a, const uint *b, uint *out, uint n) {
  __shared__ uint s[128];
  uint l = __builtin_amdgcn_workitem_id_x(), i = gid();
  s[l] = i < n ? a[i] : 0u;
  __syncthreads();
  if (i < n) out[i] = s[127u - l] + s[(l + 1u) & 127u];
  __atomic_fetch_add((u64 *)(out + n), (u64)(i < n ? b[i] : 0u), __ATOMIC_RELAXED);
}
