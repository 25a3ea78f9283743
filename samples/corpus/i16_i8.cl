#include "corpus.h"
// Sub-dword integers: byte and short loads, stores and sign extension.
__kernel void i16_i8(__global const uint *a, __global const uint *b,
                     __global uint *out, uint n) {
  uint i = GID();
  if (i >= n) return;
  __global const char *ac = (__global const char *)a;
  __global const ushort *bs = (__global const ushort *)b;
  char c = ac[i * 4 + 1];
  ushort s = bs[i * 2 + 1];
  short t = (short)(s * (ushort)c);
  __global uchar *ob = (__global uchar *)out;
  __global short *os = (__global short *)out;
  ob[i * 4] = (uchar)(c + 3);
  ob[i * 4 + 1] = (uchar)(s >> 8);
  os[i * 2 + 1] = (short)(t >> 2);
}
