#include "mfma_corpus.h"
// The f64 MFMA shapes of gfx90a (v_mfma_f64_16x16x4f64, 4x4x4f64): one
// f64 per lane for A and B, f64 accumulators in register pairs; one wave,
// all 64 lanes active. Inputs are small integers so that every sum is
// exact.
typedef double d4 __attribute__((ext_vector_type(4)));

static inline double small(uint x, uint k) { return (double)((x >> (4 * k)) & 15u) - 7.0; }

KERNEL(mfma_f64) {
  MFMA_WAVE(i, x, y, c)
  double fx = small(x, 0), fy = small(y, 1);
  d4 acc = (d4)(small(c, 0), small(c, 1), small(c, 2), small(c, 3));
  acc = __builtin_amdgcn_mfma_f64_16x16x4f64(fx, fy, acc, 0, 0, 0);
  __builtin_memcpy(out + 8 * i, &acc, sizeof(acc));
  double acc1 = small(c, 4);
  acc1 = __builtin_amdgcn_mfma_f64_4x4x4f64(fx, fy, acc1, 0, 0, 0);
  __builtin_memcpy(out + 512 + 2 * i, &acc1, sizeof(acc1));
}
