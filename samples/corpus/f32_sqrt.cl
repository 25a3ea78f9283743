#include "corpus.h"
// Correctly rounded f32 square root.
KERNEL(f32_sqrt) {
  uint i = GID();
  if (i >= n) return;
  out[i] = as_u(__builtin_sqrtf(fabs(as_f(a[i]))));
}
