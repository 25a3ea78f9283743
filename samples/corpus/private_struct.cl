#include "corpus.h"
// An array of structs in private memory.
typedef struct { uint key; float val; ushort tag; } item;
KERNEL(private_struct) {
  uint i = GID();
  if (i >= n) return;
  item it[12];
  for (uint k = 0; k < 12u; k++) {
    it[k].key = a[(i + k) % n];
    it[k].val = (float)(b[(i + k) % n] & 0xffffu);
    it[k].tag = (ushort)k;
  }
  uint best = 0;
  for (uint k = 1; k < 12u; k++)
    if (it[k].key > it[best].key) best = k;
  out[i] = it[best].tag | as_u(it[best].val + it[(best + 1u) % 12u].val) << 4;
}
