#include "corpus.h"
// Three-operand min/max/median patterns and bit-field extracts.
KERNEL(ternary_minmax3) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i], z = a[(i + 1u) % n];
  uint med = max(min(x, y), min(max(x, y), z));
  int sx = (int)x, sy = (int)y, sz = (int)z;
  int smin3 = min(min(sx, sy), sz);
  uint field = (x >> (y & 15u)) & ((1u << (z & 15u)) - 1u);
  float fm = fmin(fmin(as_f(x & 0x3fffffffu), as_f(y & 0x3fffffffu)), as_f(z & 0x3fffffffu));
  out[i] = med ^ (uint)smin3 ^ field ^ as_u(fm);
}
