#include "corpus.h"
// Global 32-bit atomics without return.
KERNEL(global_atomics) {
  uint i = GID();
  if (i >= n) return;
  volatile __global uint *o = (volatile __global uint *)out;
  atomic_add(&o[0], a[i] & 0xffffu);
  atomic_min(&o[1], a[i]);
  atomic_max(&o[2], a[i]);
  atomic_and(&o[3], a[i] | 0x11110000u);
  atomic_or(&o[4], a[i] & 0x0f0f0f0fu);
  atomic_xor(&o[5], a[i]);
  atomic_sub(&o[6], b[i] & 0xffu);
  atomic_inc(&o[7]);
}
