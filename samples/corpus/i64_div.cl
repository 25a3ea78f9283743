#include "corpus.h"
// 64-bit unsigned and signed division (a call-free expansion in clang-19).
KERNEL(i64_div) {
  uint i = GID();
  if (i >= n) return;
  ulong x = ld64(a, i), y = ld64(b, i) >> (b[2 * i] & 63u);
  ulong q = y ? x / y : 0ul;
  long sx = (long)x, sy = (long)(y | 1ul);
  long sq = sx / sy;
  st64(out, i, q ^ (ulong)sq ^ (x % (y | 1ul)));
}
