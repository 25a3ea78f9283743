#include "corpus.h"
// gfx90a's float atomics from their clang builtins: global add of f32
// (returning and not), packed f16 and f64, f64 min/max, and flat add of
// f64. Values are multiples of 1/8 so that every order of the adds gives
// the same exact sum.
KERNEL(float_atomics) {
  uint i = GID();
  if (i >= n)
    return;
  __global float *f = (__global float *)out;
  float x = (float)((int)(a[i] % 1024u) - 512) / 8.0f;
  __builtin_amdgcn_global_atomic_fadd_f32(f + (i % 4), x);
  // Returning, one address per work-item: the old value is the initial one.
  float r = __builtin_amdgcn_global_atomic_fadd_f32(f + 16 + i, x);
  out[16 + n + i] = as_u(r);
  half2 h = (half2)((half)(float)(b[i] & 7u), (half)(float)((b[i] >> 8) & 7u));
  __builtin_amdgcn_global_atomic_fadd_v2f16((__global half2 *)(out + 4), h);
  __global double *dd = (__global double *)(out + 6);
  double y = (double)x;
  __builtin_amdgcn_global_atomic_fadd_f64(dd, y);
  __builtin_amdgcn_global_atomic_fmin_f64(dd + 1, y);
  __builtin_amdgcn_global_atomic_fmax_f64(dd + 2, y);
  // Flat f64 add, returning (generic pointer; -O1 and above may make it
  // global).
  __global double *per = (__global double *)(out + 16 + 2 * n) + i;
  double p = __builtin_amdgcn_flat_atomic_fadd_f64((double *)per, y);
  out[16 + 4 * n + i] = (uint)(int)p;
}
