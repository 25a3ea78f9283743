#include "corpus.h"
// Half division (clang-19: an f32 reciprocal, the quotient through
// v_fma_mixlo_f16 or a multiply, then v_div_fixup_f16) over every kind of
// finite half, zeros included, and the f16/f32 mixed FMAs
// (v_fma_mix_f32, v_fma_mixlo_f16) from fma of widened halves.
static inline half hb(uint x) {
  ushort h = (ushort)x;
  // Exponent 31 (inf/NaN) becomes 30: every operand is finite.
  if ((h & 0x7c00) == 0x7c00)
    h &= 0xfbff;
  return __builtin_bit_cast(half, h);
}

KERNEL(f16_div) {
  uint i = GID();
  if (i >= n)
    return;
  half x = hb(a[i]), y = hb(b[i]), z = hb(a[i] >> 16);
  // Some lanes divide by zero (and 0 / 0).
  if (i % 16u == 0u)
    y = (half)0.0f;
  if (i % 32u == 1u) {
    x = (half)0.0f;
    y = -(half)0.0f;
  }
  half q = x / y;
  float m = __builtin_fmaf((float)x, (float)y, (float)z);
  half ml = (half)__builtin_fmaf((float)x, (float)z, (float)y);
  out[2u * i] = (uint)__builtin_bit_cast(ushort, q) | (uint)__builtin_bit_cast(ushort, ml) << 16;
  out[2u * i + 1u] = as_u(m);
}
