#include "corpus.h"
// The VOP3-only 16-bit operations of gfx9: v_fma_f16, v_max3/min3/med3 of
// f16, i16 and u16, v_mad_u16/i16, v_mad_u32_u16. Halves are small
// integers, so every result is exact.
static inline half sh(uint x, uint k) { return (half)(float)((int)((x >> (5 * k)) & 31u) - 16); }

KERNEL(f16_vop3) {
  uint i = GID();
  if (i >= n)
    return;
  uint x = a[i], y = b[i];
  half p = sh(x, 0), q = sh(x, 1), r = sh(y, 0);
  half f = __builtin_fmaf16(p, q, r);
  half mx = __builtin_fmaxf16(__builtin_fmaxf16(p, q), r);
  half mn = __builtin_fminf16(__builtin_fminf16(p, r), q);
  half md = __builtin_amdgcn_fmed3h(p, q, r);
  short s = (short)x, t = (short)(x >> 16), u = (short)y;
  short smax = __builtin_elementwise_max(__builtin_elementwise_max(s, t), u);
  short smin = __builtin_elementwise_min(__builtin_elementwise_min(s, t), u);
  ushort us = (ushort)y, ut = (ushort)(y >> 16), uu = (ushort)(x >> 7);
  ushort umax = __builtin_elementwise_max(__builtin_elementwise_max(us, ut), uu);
  ushort umad = (ushort)((uint)us * ut + uu);
  short imad = (short)(s * t + u);
  uint mu = (uint)us * (uint)ut + y;
  out[6 * i] = (uint)as_ushort(f) | (uint)as_ushort(mx) << 16;
  out[6 * i + 1] = (uint)as_ushort(mn) | (uint)as_ushort(md) << 16;
  out[6 * i + 2] = (uint)(ushort)smax | (uint)(ushort)smin << 16;
  out[6 * i + 3] = (uint)umax | (uint)umad << 16;
  out[6 * i + 4] = (uint)(ushort)imad;
  out[6 * i + 5] = mu;
}
