#include "corpus.h"
// A private array indexed by data: scratch memory.
KERNEL(private_array) {
  uint i = GID();
  if (i >= n) return;
  uint buf[48];
  for (uint k = 0; k < 48u; k++) buf[k] = a[i] * k + b[(i + k) % n];
  uint acc = 0, idx = b[i] % 48u;
  for (uint k = 0; k < 16u; k++) {
    acc += buf[idx];
    buf[(idx * 7u + 3u) % 48u] ^= acc;
    idx = (idx + buf[idx]) % 48u;
  }
  out[i] = acc;
}
