#include "corpus.h"
// Private arrays through flat scratch (scratch_load/scratch_store): built
// with the enable-flat-scratch target feature (see build.sh).
KERNEL(flat_scratch) {
  uint i = GID();
  if (i >= n) return;
  uint buf[40];
  ushort half_words[8];
  for (uint k = 0; k < 40u; k++) buf[k] = a[i] * (k + 1u) ^ b[(i + k) % n];
  for (uint k = 0; k < 8u; k++) half_words[k] = (ushort)(buf[k * 5u] >> k);
  uint acc = 0, idx = b[i] % 40u;
  for (uint k = 0; k < 12u; k++) {
    acc += buf[idx] + half_words[(idx + k) % 8u];
    buf[(idx * 3u + 1u) % 40u] += acc;
    idx = (idx + buf[idx]) % 40u;
  }
  out[i] = acc;
}
