#include "corpus.h"
// int/uint/float/double conversions (round towards zero for float->int).
KERNEL(conversions) {
  uint i = GID();
  if (i >= n) return;
  int x = (int)a[i] >> 4;
  float f = (float)x + (float)(b[i] >> 8);
  double d = (double)f * 1.5 + (double)x;
  uint r = (uint)(int)(f * 0.25f) ^ (uint)(int)d ^ (uint)(float)d;
  out[2 * i] = r;
  out[2 * i + 1] = as_u((float)d);
}
