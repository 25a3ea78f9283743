#include "corpus.h"
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

// C's register r holds bits r % 8.. of c, set by vector literals (a loop
// would index registers by a variable: vgpr_index covers that).
#define E(c, r) ((float)((c >> r) & 15u) - 7.0f)
#define C4(c) E(c, 0), E(c, 1), E(c, 2), E(c, 3)
#define C8(c) C4(c), E(c, 4), E(c, 5), E(c, 6), E(c, 7)
#define INIT(acc, R, c) INIT##R(acc, c)
#define INIT4(acc, c) acc = (f4)(C4(c))
#define INIT16(acc, c) acc = (f16v)(C8(c), C8(c))
#define INIT32(acc, c) acc = (f32v)(C8(c), C8(c), C8(c), C8(c))
#define STORE(acc, R, base)                                                    \
  __builtin_memcpy(out + (base) * 256 + i * R, &acc, sizeof(acc));

KERNEL(mfma_shapes) {
  uint i = GID();
  // One wave: larger launches (simbench's) have nothing more to do.
  if (i >= 64)
    return;
  uint j = i % n;
  uint x = a[j], y = b[j], c = a[(j + 1) % n] ^ b[(j + 2) % n];
  // One wave (64 work-items); shape s writes its R registers of lane i at
  // out[base * 256 + i * R + r], base in units of 256 words.
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
  INIT(d32, 32, c);
  d32 = __builtin_amdgcn_mfma_f32_32x32x4f16(hx, hy, d32, 0, 0, 0);
  STORE(d32, 32, 18);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_16x16x4f16(hx, hy, d16, 0, 0, 0);
  STORE(d16, 16, 26);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_4x4x4f16(hx, hy, d4, 0, 0, 0);
  STORE(d4, 4, 30);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_32x32x8f16(hx, hy, d16, 0, 0, 0);
  STORE(d16, 16, 31);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_16x16x16f16(hx, hy, d4, 0, 0, 0);
  STORE(d4, 4, 35);
  // bf16 inputs (_1k forms, 4 per lane).
  s4 bx = bvec(x), by = bvec(y);
  INIT(d32, 32, c);
  d32 = __builtin_amdgcn_mfma_f32_32x32x4bf16_1k(bx, by, d32, 0, 0, 0);
  STORE(d32, 32, 36);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_16x16x4bf16_1k(bx, by, d16, 0, 0, 0);
  STORE(d16, 16, 44);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_4x4x4bf16_1k(bx, by, d4, 0, 0, 0);
  STORE(d4, 4, 48);
  INIT(d16, 16, c);
  d16 = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(bx, by, d16, 0, 0, 0);
  STORE(d16, 16, 49);
  INIT(d4, 4, c);
  d4 = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(bx, by, d4, 0, 0, 0);
  STORE(d4, 4, 53);
}
