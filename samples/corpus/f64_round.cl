#include "corpus.h"
// f64 rounding builtins and compares.
KERNEL(f64_round) {
  uint i = GID();
  if (i >= n) return;
  double x = as_d(ld64(a, i)), y = as_d(ld64(b, i));
  double r = __builtin_floor(x) + __builtin_ceil(y) * 2.0 +
             __builtin_trunc(x) * 4.0 + __builtin_rint(y) * 8.0;
  if (x < y) r = -r;
  st64(out, i, as_ul(r));
}
