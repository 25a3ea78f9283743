#include "corpus.h"
// Signed division and remainder, truncating towards zero.
KERNEL(sdiv) {
  uint i = GID();
  if (i >= n) return;
  int x = (int)a[i], y = (int)b[i] >> (b[i] & 15u);
  if (y == 0 || (x == (int)0x80000000 && y == -1)) y = 7;
  out[i] = (uint)(x / y) ^ (uint)(x % y);
}
