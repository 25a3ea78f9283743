#include "corpus.h"
// A search loop with break and continue.
KERNEL(loop_break) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], found = 0xffffffffu, sum = 0;
  for (uint k = 0; k < 200u; k++) {
    uint v = x * (k + 1u) + b[(i + k) % n];
    if ((v & 3u) == 1u) continue;
    sum += v >> 4;
    if ((v & 0xffu) == 0x42u || sum > 0x40000000u) {
      found = k;
      break;
    }
  }
  out[i] = found ^ sum;
}
