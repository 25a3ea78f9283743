#include "corpus.h"
// min, max, abs, clamp and saturating adds.
KERNEL(minmax_sat) {
  uint i = GID();
  if (i >= n) return;
  int x = (int)a[i], y = (int)b[i];
  uint r = (uint)min(x, y) + (uint)max(x, y) * 3u + abs(x);
  r ^= min(a[i], b[i]) + clamp(a[i], 1000u, 0x80000000u);
  r += (uint)add_sat(x, y) ^ add_sat(a[i], b[i]) ^ (uint)sub_sat(x, y);
  out[i] = r;
}
