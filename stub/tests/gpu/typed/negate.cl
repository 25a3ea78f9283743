#include "simgpu.h"

// y[i] = -y[i]: a second code object, loaded after the first kernel ran.
__kernel void negate(__global int *y, unsigned int n) {
  size_t i = get_global_id(0);
  if (i < n)
    y[i] = -y[i]; // LINE_NEGATE
}
