#include "corpus.h"
// Returning atomics: every work-item gets a distinct ticket.
KERNEL(atomic_rtn) {
  uint i = GID();
  if (i >= n) return;
  volatile __global uint *o = (volatile __global uint *)out;
  uint t = atomic_add(&o[0], 1u);
  o[1 + t] = a[i];
  uint old = atomic_xchg(&o[1 + n + i], b[i]);
  o[1 + 2 * n + i] = old + 1u;
}
