#include "simgpu.h"

// Writes through the pointer it is given plus the work-item index. Launched
// with a bad address (e.g. 0x10) it faults on the first store.
__kernel void fault(__global uint *bad, uint value) {
  size_t i = get_global_id(0);
  bad[i] = value + (uint)i;
}
