#include "corpus.h"
// Many values live at once: VGPR pressure (spills at -O0).
KERNEL(spill_pressure) {
  uint i = GID();
  if (i >= n) return;
  uint v[24];
  for (uint k = 0; k < 24u; k++) v[k] = a[(i + k) % n] ^ (b[i] >> k);
  uint acc = 0;
  for (uint r = 0; r < 4u; r++)
    for (uint k = 0; k < 24u; k++) {
      v[k] = v[k] * 0x9e3779b1u + v[(k + 5u) % 24u];
      acc ^= v[k] >> (k & 7u);
    }
  out[i] = acc;
}
