#include "corpus.h"
// Correctly rounded f32 division (-cl-fp32-correctly-rounded-divide-sqrt).
KERNEL(f32_div) {
  uint i = GID();
  if (i >= n) return;
  out[i] = as_u(as_f(a[i]) / as_f(b[i]));
}
