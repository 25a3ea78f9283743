#include "corpus.h"
// readlane, writelane and readfirstlane.
KERNEL(readlane) {
  uint i = GID();
  uint x = i < n ? a[i] : 0u;
  uint l = __builtin_amdgcn_readlane(x, 5);
  uint f = __builtin_amdgcn_readfirstlane(x + 1u);
  // clang-19 has no writelane builtin: v_writelane_b32 by inline asm.
  uint w = x, w2 = x + 2u;
  // (An "s" operand is given a VGPR at -O0, so the asm moves it itself.)
  __asm__ volatile("v_readfirstlane_b32 s4, %1\n\tv_writelane_b32 %0, s4, 7"
                   : "+v"(w) : "v"(f) : "s4");
  __asm__ volatile("v_readfirstlane_b32 s4, %1\n\tv_writelane_b32 %0, s4, 3"
                   : "+v"(w2) : "v"(l) : "s4");
  if (i < n) out[i] = l ^ (f << 1) ^ (w << 2) ^ (w2 << 3);
}
