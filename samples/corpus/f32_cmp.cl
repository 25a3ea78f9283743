#include "corpus.h"
// f32 compares and selects.
KERNEL(f32_cmp) {
  uint i = GID();
  if (i >= n) return;
  float x = as_f(a[i]), y = as_f(b[i]);
  uint r = (x < y) | (x <= y) << 1 | (x == y) << 2 | (x > y) << 3 |
           (x != y) << 4 | (x >= 1.0f) << 5 | (isnan(x * y)) << 6;
  out[i] = r | as_u(x < y ? y : x) << 8;
}
