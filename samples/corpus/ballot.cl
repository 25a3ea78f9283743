#include "corpus.h"
// Wave-wide votes: ballot, mbcnt (lane prefix counts).
KERNEL(ballot) {
  uint i = GID();
  uint x = i < n ? a[i] : 0u;
  ulong m = __builtin_amdgcn_ballot_w64((x & 3u) == 1u);
  uint below = __builtin_amdgcn_mbcnt_hi((uint)(m >> 32), __builtin_amdgcn_mbcnt_lo((uint)m, 0u));
  if (i < n) out[i] = (uint)popcount(m) | below << 8 | (uint)(m >> (LID() & 31u)) << 16;
}
