#include "corpus.h"
// Rounding builtins, copysign and ldexp/frexp.
KERNEL(f32_round) {
  uint i = GID();
  if (i >= n) return;
  float x = as_f(a[i]);
  int e;
  float m = __builtin_frexpf(x, &e);
  float r = __builtin_floorf(x) + __builtin_ceilf(x) * 2.0f +
            __builtin_truncf(x) * 4.0f + __builtin_rintf(x) * 8.0f;
  r = __builtin_copysignf(r, as_f(b[i])) + __builtin_ldexpf(m, e & 7);
  out[i] = as_u(r);
}
