#include "corpus.h"
// LDS accesses of 8, 16, 64 and 128 bits.
KERNEL(lds_types) {
  __local uchar b8[128];
  __local ushort b16[128];
  __local ulong b64[128];
  __local uint4 b128[128];
  uint l = LID(), i = GID();
  uint x = i < n ? a[i] : 0u;
  b8[l] = (uchar)x;
  b16[l] = (ushort)(x >> 8);
  b64[l] = (ulong)x * 0x100000001ul;
  b128[l] = (uint4)(x, x + 1u, x + 2u, x + 3u);
  corpus_barrier();
  uint o = (l + 1u) % 128u;
  uint4 q = b128[o];
  if (i < n)
    out[i] = b8[o] + (uint)b16[127u - l] * 3u + (uint)(b64[o] >> 32) + q.y * q.w;
}
