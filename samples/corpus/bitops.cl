#include "corpus.h"
// Bit-counting builtins.
KERNEL(bitops) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i] >> (b[i] & 31u);
  uint r = popcount(x) | clz(x) << 6 | (x ? __builtin_ctz(x) : 32u) << 12;
  r ^= __builtin_bitreverse32(a[i]);
  ulong w = ld64(b, i);
  r += (uint)popcount(w) + (uint)clz(w) * 3u;
  out[i] = r;
}
