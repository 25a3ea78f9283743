#include "corpus.h"
// f64 add, mul, fma, min, max.
KERNEL(f64_arith) {
  uint i = GID();
  if (i >= n) return;
  double x = as_d(ld64(a, i)), y = as_d(ld64(b, i));
  double r = x * y + (x - y);
  r = __builtin_fma(r, x, y);
  r = fmax(r, fmin(x, y)) - fabs(y);
  st64(out, i, as_ul(r));
}
