#include "corpus.h"
// Global 64-bit atomics, returning and not.
KERNEL(atomics64) {
  uint i = GID();
  if (i >= n) return;
  __global ulong *o = (__global ulong *)out;
  ulong v = ld64(a, i);
  __atomic_fetch_add(&o[0], v & 0xffffffffful, __ATOMIC_RELAXED);
  __atomic_fetch_max(&o[1], v, __ATOMIC_RELAXED);
  __atomic_fetch_min(&o[2], v, __ATOMIC_RELAXED);
  __atomic_fetch_or(&o[3], v & 0x0101010101010101ul, __ATOMIC_RELAXED);
  ulong old = __atomic_fetch_add(&o[4], 1ul, __ATOMIC_RELAXED);
  o[5 + i] = old < (ulong)n ? 1ul : 0ul;
}
