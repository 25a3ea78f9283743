#include "hip_corpus.h"
// HIP: y = alpha * x + y in f32 (contraction off: mul then add).
#pragma clang fp contract(off)
extern "C" __global__ void hip_saxpy(const uint *a, const uint *b, uint *out, uint n) {
  uint i = gid();
  if (i >= n) return;
  float x = __builtin_bit_cast(float, a[i]), y = __builtin_bit_cast(float, b[i]);
  out[i] = __builtin_bit_cast(uint, 2.5f * x + y);
}
