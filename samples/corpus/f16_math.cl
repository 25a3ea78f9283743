#include "corpus.h"
// Half conversions from and to 16-bit integers, and half rounding and sqrt.
KERNEL(f16_math) {
  uint i = GID();
  if (i >= n) return;
  half x = __builtin_bit_cast(half, (ushort)a[i]);
  ushort u = (ushort)b[i];
  short s = (short)(b[i] >> 16);
  half hu = (half)u;
  half hs = (half)s;
  half fl = __builtin_floorf16(x);
  half ce = __builtin_ceilf16(x);
  half tr = __builtin_truncf16(x);
  half rn = __builtin_rintf16(x);
  half sq = __builtin_sqrtf16(__builtin_fabsf16(x));
  ushort xu = (ushort)__builtin_fabsf16(tr);
  short xs = (short)tr;
  uint r0 = (uint)__builtin_bit_cast(ushort, hu) | (uint)__builtin_bit_cast(ushort, hs) << 16;
  uint r1 = (uint)__builtin_bit_cast(ushort, fl) | (uint)__builtin_bit_cast(ushort, ce) << 16;
  uint r2 = (uint)__builtin_bit_cast(ushort, rn) | (uint)__builtin_bit_cast(ushort, sq) << 16;
  uint r3 = (uint)xu | (uint)(ushort)xs << 16;
  out[4 * i] = r0;
  out[4 * i + 1] = r1;
  out[4 * i + 2] = r2;
  out[4 * i + 3] = r3;
}
