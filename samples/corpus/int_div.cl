#include "corpus.h"
// Unsigned division and remainder (clang inlines the reciprocal sequence).
KERNEL(int_div) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i] >> (b[i] & 15u);
  uint q = y ? x / y : 0u;
  uint m = x % (y | 1u);
  out[i] = q * 31u + m;
}
