#include "corpus.h"
// 64-bit integer <-> float/double conversions.
KERNEL(conv64) {
  uint i = GID();
  if (i >= n) return;
  ulong x = ld64(a, i) >> (b[i] & 31u);
  long s = (long)ld64(b, i) >> 12;
  double d = (double)x + (double)s;
  float f = (float)x - (float)s;
  st64(out, 2 * i, as_ul(d));
  st64(out, 2 * i + 1, (ulong)(long)(f * 0.125f) ^ as_u(f));
}
