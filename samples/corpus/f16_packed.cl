#include "corpus.h"
// Packed half2 arithmetic.
KERNEL(f16_packed) {
  uint i = GID();
  if (i >= n) return;
  half2 x = __builtin_bit_cast(half2, a[i]), y = __builtin_bit_cast(half2, b[i]);
  half2 r = x * y + x;
  r = r - y * (half2)(0.5h, 2.0h);
  out[i] = __builtin_bit_cast(uint, r);
}
