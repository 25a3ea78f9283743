#include "simgpu.h"

// Lanes take different paths depending on their data: a data-dependent loop
// (Collatz steps, capped), a branch on the value's parity and a branch on
// the index, so EXEC masks diverge and re-converge.
__kernel void divergent(__global const uint *in, __global uint *out, uint n) {
  size_t i = get_global_id(0);
  if (i >= n) {
    return;
  }
  uint x = in[i];
  uint steps = 0;
  while (x > 1 && steps < 64) {
    if (x & 1) {
      x = 3 * x + 1;
    } else {
      x >>= 1;
    }
    steps++;
  }
  uint r;
  if (i % 3 == 0) {
    r = steps * 7 + (uint)i;
  } else if (i % 3 == 1) {
    r = steps ^ 0x5a5a;
  } else {
    r = (steps << 4) | (in[i] & 0xf);
  }
  out[i] = r;
}
