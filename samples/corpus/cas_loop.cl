#include "corpus.h"
// Atomic float add (32-bit) and max of doubles (64-bit) by CAS loops.
KERNEL(cas_loop) {
  uint i = GID();
  if (i >= n) return;
  volatile __global uint *o = (volatile __global uint *)out;
  uint old = o[0], assumed;
  do {
    assumed = old;
    old = atomic_cmpxchg(&o[0], assumed, as_u(as_f(assumed) + 1.0f));
  } while (old != assumed);
  __global ulong *o64 = (__global ulong *)(out + 2);
  double v = (double)(a[i] >> 8);
  ulong cur = *o64;
  while (as_d(cur) < v) {
    ulong prev = cur;
    if (__atomic_compare_exchange_n(o64, &prev, as_ul(v), false,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      break;
    cur = prev;
  }
}
