#include "corpus.h"
// Buffer (MUBUF) accesses to global memory through a buffer resource:
// loads and stores from clang's raw buffer builtins, atomics (returning and
// not, 32- and 64-bit, compare-and-swap) by inline assembly (clang-19 has
// no builtin for them); an access past the resource's size loads 0 and
// stores nothing.
#define RSRC(p, bytes) __builtin_amdgcn_make_buffer_rsrc((void *)(p), 0, (bytes), 0x00027000)
// The atomics' resource in s[20:23], built from VGPR values (at -O0 clang
// puts an "s" operand in VGPRs).
#define RS_SETUP                                                               \
  "v_readfirstlane_b32 s20, %[lo]\n v_readfirstlane_b32 s21, %[hi]\n"         \
  " v_readfirstlane_b32 s22, %[nr]\n s_mov_b32 s23, 0x27000\n "
#define RS_IN [lo] "v"(rlo), [hi] "v"(rhi), [nr] "v"(rnr)
#define RS_CLOBBER "s20", "s21", "s22", "s23", "memory"
KERNEL(buffer_atomics) {
  uint i = GID();
  if (i >= n) return;
  __amdgpu_buffer_rsrc_t ra = RSRC(a, n * 4);
  __amdgpu_buffer_rsrc_t ro = RSRC(out, (n + 8) * 4);
  uint x = __builtin_amdgcn_raw_buffer_load_b32(ra, i * 4, 0, 0);
  uint past = __builtin_amdgcn_raw_buffer_load_b32(ra, (n + i) * 4, 0, 0);
  __builtin_amdgcn_raw_buffer_store_b32(x ^ past, ro, (i + 8) * 4, 0, 0);
  __builtin_amdgcn_raw_buffer_store_b32(12345u, ro, (n + 8 + i) * 4, 0, 0);
  // out[0]: sum of all a (no return); out[1]: count, each work-item gets
  // a ticket (out[2n+16+i]); out[2]: max of b; out[4..6]: 64-bit sum;
  // out[6]: xor of all b by a CAS loop; out[8+i]: a[i]; out[n+8+i]: 0.
  ulong p = (ulong)out;
  uint rlo = (uint)p, rhi = (uint)(p >> 32) & 0xffffu, rnr = (n + 8) * 4;
  uint off0 = 0, off1 = 4, off2 = 8, off4 = 16, off6 = 24, bi = b[i];
  __asm__ volatile(RS_SETUP "buffer_atomic_add %[d], %[o], s[20:23], 0 offen"
                   ::[d] "v"(x), [o] "v"(off0), RS_IN : RS_CLOBBER);
  uint ticket = 1;
  __asm__ volatile(RS_SETUP "buffer_atomic_add %[d], %[o], s[20:23], 0 offen glc\n s_waitcnt vmcnt(0)"
                   : [d] "+v"(ticket) : [o] "v"(off1), RS_IN : RS_CLOBBER);
  __asm__ volatile(RS_SETUP "buffer_atomic_umax %[d], %[o], s[20:23], 0 offen"
                   ::[d] "v"(bi), [o] "v"(off2), RS_IN : RS_CLOBBER);
  ulong wide = (ulong)x << 20 | bi;
  __asm__ volatile(RS_SETUP "buffer_atomic_add_x2 %[d], %[o], s[20:23], 0 offen"
                   ::[d] "v"(wide), [o] "v"(off4), RS_IN : RS_CLOBBER);
  uint seen = __builtin_amdgcn_raw_buffer_load_b32(ro, off6, 0, 0);
  for (;;) {
    // Low dword: the new value; high dword: the expected one.
    ulong pair = (ulong)seen << 32 | (seen ^ bi);
    __asm__ volatile(RS_SETUP "buffer_atomic_cmpswap %[d], %[o], s[20:23], 0 offen glc\n s_waitcnt vmcnt(0)"
                     : [d] "+v"(pair) : [o] "v"(off6), RS_IN : RS_CLOBBER);
    if ((uint)pair == seen) break;
    seen = (uint)pair;
  }
  out[2 * n + 16 + i] = ticket;
}
