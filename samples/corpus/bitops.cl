#include "corpus.h"
// Bit-counting builtins.
KERNEL(bitops) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i] >> (b[i] & 31u);
  uint r = popcount(x) | clz(x) << 6 | (x ? __builtin_ctz(x) : 32u) << 12;
  r ^= __builtin_bitreverse32(a[i]);
  ulong w = ld64(b, i);
  // (clz of a ulong is left out: clang-19 emits v_or_b32 64 on the
  // result of its 64-bit ctlz expansion, see samples/corpus/README.md.)
  r += (uint)popcount(w) + clz((uint)(w >> 32)) * 3u;
  out[i] = r;
}
