#include "simgpu.h"

// Work-group 0 traps at once (the dispatch aborts) while the other groups
// keep writing to `out` for a while: after the launch returns, none of them
// may still be running.
__kernel void abort_late(__global uint *out, uint n) {
  size_t i = get_global_id(0);
  if (get_group_id(0) == 0) {
    __builtin_trap();
  }
  for (uint k = 0; k < 100000; k++) {
    if (i < n) {
      out[i] += k;
    }
  }
}
