#include "mfma_corpus.h"
// The integer MFMA shapes of gfx90a (v_mfma_i32_*i8): four signed bytes
// per lane in one VGPR, i32 accumulators whose sums wrap; one wave, all 64
// lanes active.
typedef int i4v __attribute__((ext_vector_type(4)));
typedef int i16v __attribute__((ext_vector_type(16)));
typedef int i32v __attribute__((ext_vector_type(32)));

// C's register r holds c << (r % 8): large values, so that sums wrap.
#define E(c, r) ((int)((c) << (r)))

KERNEL(mfma_i8) {
  MFMA_WAVE(i, ux, uy, c)
  int x = (int)ux, y = (int)uy;
  i32v d32 = (i32v)(C8(c), C8(c), C8(c), C8(c));
  d32 = __builtin_amdgcn_mfma_i32_32x32x4i8(x, y, d32, 0, 0, 0);
  STORE(d32, 32, 0);
  i16v d16 = (i16v)(C8(c), C8(c));
  d16 = __builtin_amdgcn_mfma_i32_16x16x4i8(x, y, d16, 0, 0, 0);
  STORE(d16, 16, 8);
  i4v d4 = (i4v)(C4(c));
  d4 = __builtin_amdgcn_mfma_i32_4x4x4i8(x, y, d4, 0, 0, 0);
  STORE(d4, 4, 12);
  d16 = (i16v)(C8(c), C8(c));
  d16 = __builtin_amdgcn_mfma_i32_32x32x8i8(x, y, d16, 0, 0, 0);
  STORE(d16, 16, 13);
  d4 = (i4v)(C4(c));
  d4 = __builtin_amdgcn_mfma_i32_16x16x16i8(x, y, d4, 0, 0, 0);
  STORE(d4, 4, 17);
}
