#include "corpus.h"
// Moves through the accumulation registers (v_accvgpr_write/read).
KERNEL(accvgpr) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y;
  __asm__ volatile("v_accvgpr_write_b32 a3, %1\n\t"
                   "v_accvgpr_read_b32 %0, a3" : "=v"(y) : "v"(x) : "a3");
  out[i] = y + b[i];
}
