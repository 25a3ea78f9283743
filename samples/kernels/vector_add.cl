#include "simgpu.h"

// Element-wise c[i] = a[i] + b[i] for i < n.
__kernel void vector_add(__global const int *a, __global const int *b,
                         __global int *c, unsigned int n) {
  size_t i = get_global_id(0);
  if (i < n) {
    c[i] = a[i] + b[i];
  }
}
