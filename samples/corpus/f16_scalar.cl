#include "corpus.h"
// Scalar half arithmetic and half<->float conversions.
KERNEL(f16_scalar) {
  uint i = GID();
  if (i >= n) return;
  half x = __builtin_bit_cast(half, (ushort)a[i]);
  half y = __builtin_bit_cast(half, (ushort)b[i]);
  half r = x * y + (x - y);
  float f = (float)r * 3.0f;
  out[i] = (uint)__builtin_bit_cast(ushort, r) | (uint)__builtin_bit_cast(ushort, (half)f) << 16;
}
