#include "corpus.h"
// 32-bit integer arithmetic and logic.
KERNEL(int_arith) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i];
  uint r = x * y + (x >> 3) - (y << 5);
  r ^= (x | y) & ~(x ^ 0x5a5a5a5au);
  r += (uint)((int)x >> 7) + mul_hi(x, y) + rotate(x, y & 31u);
  out[i] = r;
}
