#include "corpus.h"
// A 4x4x1 f32 MFMA (16 independent 4x4 outer products) with accvgprs.
typedef float float4_t __attribute__((ext_vector_type(4)));
KERNEL(mfma) {
  uint i = GID();
  float x = (float)(a[i % n] & 0xffu), y = (float)(b[i % n] & 0xffu);
  float4_t acc = {1.0f, 2.0f, 3.0f, 4.0f};
  acc = __builtin_amdgcn_mfma_f32_4x4x1f32(x, y, acc, 0, 0, 0);
  if (i < n) {
    out[4 * i] = as_u(acc.x);
    out[4 * i + 1] = as_u(acc.y);
    out[4 * i + 2] = as_u(acc.z);
    out[4 * i + 3] = as_u(acc.w);
  }
}
