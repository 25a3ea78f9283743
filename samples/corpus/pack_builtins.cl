#include "corpus.h"
// Byte alignment, sums of absolute differences and the round-towards-zero
// half pack (AMD builtins that map to one instruction each).
KERNEL(pack_builtins) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i];
  uint al = __builtin_amdgcn_alignbyte(x, y, i);
  uint sad = __builtin_amdgcn_sad_u16(x, y, i);
  uint sadh = __builtin_amdgcn_sad_hi_u8(x, y, i);
  uint lerp = __builtin_amdgcn_lerp(x, y, i);
  half2 pk = __builtin_amdgcn_cvt_pkrtz(as_f(x) * 0.001f, as_f(y));
  out[4 * i] = al ^ sad;
  out[4 * i + 1] = sadh;
  out[4 * i + 2] = lerp;
  out[4 * i + 3] = __builtin_bit_cast(uint, pk);
}
