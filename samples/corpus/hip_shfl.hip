#include "hip_corpus.h"
// HIP: a butterfly wave reduction with shuffles (ds_bpermute), like __shfl_xor.
static __device__ int shfl_xor(int v, int mask) {
  int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, v);
}
extern "C" __global__ void hip_shfl(const uint *a, const uint *b, uint *out, uint n) {
  uint i = gid();
  int v = i < n ? (int)(a[i] & 0xffffu) : 0;
  for (int m = 32; m > 0; m >>= 1) v += shfl_xor(v, m);
  if (i < n) out[i] = (uint)v ^ b[i];
}
