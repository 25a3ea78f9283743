#include "simgpu.h"

// y[i] = a * x[i] + y[i]; the test sets a breakpoint on the store below.
__kernel void saxpy(int a, __global const int *x, __global int *y,
                    unsigned int n) {
  size_t i = get_global_id(0);
  if (i < n) {
    int ax = a * x[i];
    y[i] = ax + y[i]; // LINE_STORE
  }
}
