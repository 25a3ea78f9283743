#include "mfma_corpus.h"
// Every f32-result MFMA shape of gfx90a with f32, f16 and bf16 (_1k)
// inputs: D = A * B + C over one wave per shape, all 64 lanes active.
// Inputs are small integers so that every sum is exact.
typedef float f4 __attribute__((ext_vector_type(4)));
typedef float f16v __attribute__((ext_vector_type(16)));
typedef float f32v __attribute__((ext_vector_type(32)));
typedef half h4 __attribute__((ext_vector_type(4)));
typedef short s4 __attribute__((ext_vector_type(4)));

static inline float small(uint x, uint k) { return (float)((x >> (4 * k)) & 7u) - 3.0f; }
static inline h4 hvec(uint x) {
  return (h4)((half)small(x, 0), (half)small(x, 1), (half)small(x, 2), (half)small(x, 3));
}
// bf16 of a small integer: the high half of its f32 bits.
static inline s4 bvec(uint x) {
  return (s4)((short)(as_u(small(x, 0)) >> 16), (short)(as_u(small(x, 1)) >> 16),
              (short)(as_u(small(x, 2)) >> 16), (short)(as_u(small(x, 3)) >> 16));
}

// C's register r holds bits r % 8.. of c.
#define E(c, r) ((float)((c >> r) & 15u) - 7.0f)
#define INIT(acc, R, c) INIT##R(acc, c)
#define INIT4(acc, c) acc = (f4)(C4(c))
#define INIT16(acc, c) acc = (f16v)(C8(c), C8(c))
#define INIT32(acc, c) acc = (f32v)(C8(c), C8(c), C8(c), C8(c))
// The five shapes with 4 f16 or bf16 (T: f16, bf16_1k) inputs per lane,
// their results from out block `base` on.
#define SHAPES4(T, X, Y, base)                                                 \
  INIT(d32, 32, c);                                                            \
  d32 = __builtin_amdgcn_mfma_f32_32x32x4##T(X, Y, d32, 0, 0, 0);              \
  STORE(d32, 32, base);                                                        \
  INIT(d16, 16, c);                                                            \
  d16 = __builtin_amdgcn_mfma_f32_16x16x4##T(X, Y, d16, 0, 0, 0);              \
  STORE(d16, 16, base + 8);                                                    \
  INIT(d4, 4, c);                                                              \
  d4 = __builtin_amdgcn_mfma_f32_4x4x4##T(X, Y, d4, 0, 0, 0);                  \
  STORE(d4, 4, base + 12);                                                     \
  INIT(d16, 16, c);                                                            \
  d16 = __builtin_amdgcn_mfma_f32_32x32x8##T(X, Y, d16, 0, 0, 0);              \
  STORE(d16, 16, base + 13);                                                   \
  INIT(d4, 4, c);                                                              \
  d4 = __builtin_amdgcn_mfma_f32_16x16x16##T(X, Y, d4, 0, 0, 0);               \
  STORE(d4, 4, base + 17);

KERNEL(mfma_shapes) {
  MFMA_WAVE(i, x, y, c)
  float fx = small(x, 0), fy = small(y, 0);
  f32v d32;
  f16v d16;
  f4 d4;
  INIT(d32, 32, c);
  d32 = __builtin_amdgcn_mfma_f32_32x32x1f32(fx, fy, d32, 0, 0, 0);
  STORE(d32, 32, 0);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_16x16x1f32(fx, fy, d16, 0, 0, 0);
  STORE(d16, 16, 8);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_4x4x1f32(fx, fy, d4, 0, 0, 0);
  STORE(d4, 4, 12);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_32x32x2f32(fx, fy, d16, 0, 0, 0);
  STORE(d16, 16, 13);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_16x16x4f32(fx, fy, d4, 0, 0, 0);
  STORE(d4, 4, 17);
  // f16 inputs (4 per lane).
  h4 hx = hvec(x), hy = hvec(y);
  SHAPES4(f16, hx, hy, 18)
  // bf16 inputs (_1k forms, 4 per lane).
  s4 bx = bvec(x), by = bvec(y);
  SHAPES4(bf16_1k, bx, by, 36)
}
