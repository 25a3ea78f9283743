#include "corpus.h"
// A vector register indexed by a variable: VGPR indexing mode
// (s_set_gpr_idx_on/off) around the moves, a waterfall loop over the
// distinct indices when they differ between lanes.
typedef uint u16v __attribute__((ext_vector_type(16)));
KERNEL(vgpr_index) {
  uint i = GID();
  if (i >= n)
    return;
  u16v v;
  for (uint r = 0; r < 16; r++)
    v[r] = a[i] * (r + 1) + (r << 8);
  uint k = b[i] % 16;
  v[k] ^= 0x55aa;
  out[2 * i] = v[k] + v[(k + 5) % 16];
  uint s = 0;
  for (uint r = 0; r < 16; r++)
    s = s * 3 + v[r];
  out[2 * i + 1] = s;
}
