#include "corpus.h"
// Sub-dword loads into one half of a register (load_*_d16 and _d16_hi)
// and packed 16-bit integer math (v_pk_*_u16/i16).
// Built for gfx90a:sramecc-: with SRAM ECC off clang-19 may keep the other
// half of a register, so it emits the d16 loads (build.sh).
KERNEL(d16_loads) {
  uint i = GID();
  if (i >= n) return;
  __global const half *hh = (__global const half *)a;
  __global const uchar *bs = (__global const uchar *)b;
  __global const char *cs = (__global const char *)b;
  __global const short *ss = (__global const short *)a;
  half2 h = (half2)(hh[2 * i], hh[(7 * i) % (2 * n)]);
  h = h * (half2)(hh[(5 * i + 1) % (2 * n)], hh[i + 3]);
  h = h + (half2)(hh[i + 9], h.y);
  short2 s = (short2)(ss[i + 1], ss[(3 * i) % n]);
  s = s + (short2)((short)bs[i], (short)cs[i + 2]);
  s = s * (short2)((short)bs[(i * 9) % n], (short)cs[(i * 11) % n]);
  short2 t = s - (short2)((short)cs[i + 5], s.y);
  ushort2 u = as_ushort2(s) + (ushort2)((ushort)bs[i + 4], as_ushort2(s).y);
  out[4 * i] = __builtin_bit_cast(uint, h);
  out[4 * i + 1] = __builtin_bit_cast(uint, s);
  out[4 * i + 2] = __builtin_bit_cast(uint, t);
  out[4 * i + 3] = __builtin_bit_cast(uint, u);
}
