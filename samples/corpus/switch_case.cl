#include "corpus.h"
// A switch with many cases.
KERNEL(switch_case) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i], r;
  switch (x % 9u) {
  case 0: r = y; break;
  case 1: r = y + 1u; break;
  case 2: r = y * 7u; break;
  case 3: r = y ^ x; break;
  case 4: r = y >> 3; // fall through
  case 5: r = x + 5u; break;
  case 6: r = ~y; break;
  case 7: r = y & x; break;
  default: r = 99u; break;
  }
  out[i] = r;
}
