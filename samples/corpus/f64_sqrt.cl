#include "corpus.h"
// Correctly rounded f64 square root.
KERNEL(f64_sqrt) {
  uint i = GID();
  if (i >= n) return;
  st64(out, i, as_ul(__builtin_sqrt(fabs(as_d(ld64(a, i))))));
}
