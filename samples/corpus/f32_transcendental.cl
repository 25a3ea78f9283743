#include "corpus.h"
// Hardware transcendentals (checked within 1 ulp of a correctly rounded
// reference; see the corpus README).
KERNEL(f32_transcendental) {
  uint i = GID();
  if (i >= n) return;
  float x = as_f(a[i]);
  out[4 * i] = as_u(__builtin_amdgcn_exp2f(x));
  out[4 * i + 1] = as_u(__builtin_amdgcn_logf(fabs(x) + 1.0f));
  out[4 * i + 2] = as_u(__builtin_amdgcn_rsqf(fabs(x) + 1.0f));
  out[4 * i + 3] = as_u(__builtin_amdgcn_rcpf(x));
}
