#include "corpus.h"
// A loop whose trip count differs per lane.
KERNEL(divergent_loop) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i] | 1u, steps = 0;
  for (uint k = 0; k < (b[i] & 63u); k++) {
    x = (x & 1u) ? 3u * x + 1u : x >> 1;
    steps += x & 7u;
  }
  out[i] = x ^ steps << 20;
}
