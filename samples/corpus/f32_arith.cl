#include "corpus.h"
// f32 add, sub, mul, fma, min, max, abs and negation.
KERNEL(f32_arith) {
  uint i = GID();
  if (i >= n) return;
  float x = as_f(a[i]), y = as_f(b[i]);
  float r = x * y - (x + y);
  r = __builtin_fmaf(r, y, -x);
  r = fmax(r, fmin(x, y)) + fabs(x) * 0.5f;
  out[i] = as_u(-r);
}
