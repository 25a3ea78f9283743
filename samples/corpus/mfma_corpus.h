// Shared by the MFMA corpus kernels (mfma_shapes, mfma_i8, mfma_f64): one
// wave of 64 work-items, all active, each with inputs x, y and an
// accumulator seed c drawn from the argument buffers; each kernel defines
// E(c, r), the value of accumulator register r.
#ifndef MFMA_CORPUS_H
#define MFMA_CORPUS_H
#include "corpus.h"

// Work-item i of the one wave, with its inputs (j = i % n wraps the
// buffers for n < 64). Larger launches (simbench's) have nothing more to
// do past the first wave.
#define MFMA_WAVE(i, x, y, c)                                                  \
  uint i = GID();                                                              \
  if (i >= 64)                                                                 \
    return;                                                                    \
  uint x = a[i % n], y = b[i % n];                                             \
  uint c = a[(i % n + 1) % n] ^ b[(i % n + 2) % n];

// Accumulator registers 0..3 and 0..7 (vector literals: a loop would index
// registers by a variable, which vgpr_index covers).
#define C4(c) E(c, 0), E(c, 1), E(c, 2), E(c, 3)
#define C8(c) C4(c), E(c, 4), E(c, 5), E(c, 6), E(c, 7)

// The R registers of lane i's accumulator at out[base * 256 + i * R + r],
// base in units of 256 words.
#define STORE(acc, R, base)                                                    \
  __builtin_memcpy(out + (base) * 256 + i * R, &acc, sizeof(acc));
#endif
