// Hostile kernels for the runtime's and the debugger's robustness tests
// (tools/simgpu-rt/tests/hostile_kernels.rs, stub/tests/gpu_hostile.rs).
// Compiled at test time by clang-19 (not committed as .hsaco).
#include "../kernels/simgpu.h"

// A good kernel: out[i] = in[i] * 3 + k.
__kernel void scale(__global const uint *in, __global uint *out, uint k, uint n) {
  size_t i = get_global_id(0);
  if (i < n) {
    out[i] = in[i] * 3u + k;
  }
}

// Stores through a wild pointer (unmapped in the host): memory violation.
__kernel void wild_store(__global uint *out, ulong wild) {
  size_t i = get_global_id(0);
  out[i] = 1u;
  *(__global uint *)(wild + i * 4) = (uint)i;
}

// Work-group 1 executes an encoding that is no gfx90a instruction (all
// ones): illegal instruction; the other groups write their slots.
__kernel void illegal(__global uint *out) {
  size_t i = get_global_id(0);
  if (get_group_id(0) == 1) {
    __asm__ volatile(".long 0xffffffff");
  }
  out[i] = 7u;
}

// Spins until *flag becomes non-zero, which nobody does: a hang.
__kernel void hang(__global volatile uint *flag, __global uint *out) {
  size_t i = get_global_id(0);
  uint k = 0;
  while (*flag == 0u) {
    k++;
  }
  out[i] = k;
}

// The last work-group aborts (s_trap) half-way through the dispatch while
// the others write their slots.
__kernel void trap_mid(__global uint *out, uint n, uint last_group) {
  size_t i = get_global_id(0);
  if (i < n) {
    out[i] = 5u;
  }
  if (get_group_id(0) == last_group) {
    __builtin_trap();
  }
}
