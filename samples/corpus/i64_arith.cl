#include "corpus.h"
// 64-bit integer arithmetic, shifts and compares.
KERNEL(i64_arith) {
  uint i = GID();
  if (i >= n) return;
  ulong x = ld64(a, i), y = ld64(b, i);
  ulong r = x * y + (x >> (y & 63)) - (y << 3);
  long s = (long)x >> 17;
  r ^= (ulong)s;
  r += x > y ? x - y : y - x;
  r += (long)x < (long)y ? 1ul : 2ul;
  st64(out, i, r);
}
