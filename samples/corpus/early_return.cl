#include "corpus.h"
// Lanes leave the kernel at different points.
KERNEL(early_return) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i];
  out[i] = 1u;
  if ((x & 3u) == 0u) return;
  out[i] = 2u;
  if ((x & 12u) == 4u) return;
  uint acc = 0;
  for (uint k = 0; k < 32u; k++) {
    if ((x >> k) & (b[i] >> k) & 1u) return;
    acc += k;
  }
  out[i] = acc + x;
}
