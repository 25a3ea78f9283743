#include "corpus.h"
// uint4 / float4 vector loads, stores and arithmetic.
__kernel void vector_types(__global const uint4 *a, __global const uint4 *b,
                           __global uint4 *out, uint n) {
  uint i = GID();
  if (i >= n) return;
  uint4 x = a[i], y = b[i];
  float4 f = convert_float4(x >> 8) * 0.5f;
  out[i] = (x * y + (uint4)(1, 2, 3, 4)).wzyx ^ __builtin_bit_cast(uint4, f);
}
