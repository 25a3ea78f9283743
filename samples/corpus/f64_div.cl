#include "corpus.h"
// Correctly rounded f64 division.
KERNEL(f64_div) {
  uint i = GID();
  if (i >= n) return;
  st64(out, i, as_ul(as_d(ld64(a, i)) / as_d(ld64(b, i))));
}
