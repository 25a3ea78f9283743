// Shared by the corpus kernels (OpenCL C, no ROCm device library).
//
// Work-item ids come from the hardware registers, the work-group size from
// the hidden kernel arguments (code object v5), so the runtime must fill
// those as ROCr does. Contraction is off so that every optimisation level
// computes the same function.
#ifndef CORPUS_H
#define CORPUS_H
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define LID() ((uint)__builtin_amdgcn_workitem_id_x())
#define GID()                                                                  \
  ((uint)__builtin_amdgcn_workgroup_id_x() *                                   \
       (uint)__builtin_amdgcn_workgroup_size_x() +                             \
   LID())

#define KERNEL(name)                                                           \
  __kernel void name(__global const uint *a, __global const uint *b,           \
                     __global uint *out, uint n)

static inline void corpus_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

static inline float as_f(uint x) { return __builtin_bit_cast(float, x); }
static inline uint as_u(float x) { return __builtin_bit_cast(uint, x); }
static inline double as_d(ulong x) { return __builtin_bit_cast(double, x); }
static inline ulong as_ul(double x) { return __builtin_bit_cast(ulong, x); }
static inline ulong ld64(__global const uint *p, uint i) {
  return (ulong)p[2 * i] | (ulong)p[2 * i + 1] << 32;
}
static inline void st64(__global uint *p, uint i, ulong v) {
  p[2 * i] = (uint)v;
  p[2 * i + 1] = (uint)(v >> 32);
}

// OpenCL C library functions the kernels use, defined from clang builtins
// (the ROCm device library is not linked).
#define OVL __attribute__((overloadable, always_inline))
OVL uint mul_hi(uint x, uint y) { return (uint)(((ulong)x * y) >> 32); }
OVL uint rotate(uint x, uint s) { return __builtin_rotateleft32(x, s); }
OVL uint popcount(uint x) { return __builtin_popcount(x); }
OVL ulong popcount(ulong x) { return __builtin_popcountll(x); }
OVL uint clz(uint x) { return x ? __builtin_clz(x) : 32u; }
OVL ulong clz(ulong x) { return x ? __builtin_clzll(x) : 64ul; }
OVL int min(int x, int y) { return __builtin_elementwise_min(x, y); }
OVL uint min(uint x, uint y) { return __builtin_elementwise_min(x, y); }
OVL int max(int x, int y) { return __builtin_elementwise_max(x, y); }
OVL uint max(uint x, uint y) { return __builtin_elementwise_max(x, y); }
OVL uint abs(int x) { return x < 0 ? 0u - (uint)x : (uint)x; }
OVL uint clamp(uint x, uint lo, uint hi) { return min(max(x, lo), hi); }
OVL int add_sat(int x, int y) { return __builtin_elementwise_add_sat(x, y); }
OVL uint add_sat(uint x, uint y) { return __builtin_elementwise_add_sat(x, y); }
OVL int sub_sat(int x, int y) { return __builtin_elementwise_sub_sat(x, y); }
OVL float fmax(float x, float y) { return __builtin_fmaxf(x, y); }
OVL float fmin(float x, float y) { return __builtin_fminf(x, y); }
OVL float fabs(float x) { return __builtin_fabsf(x); }
OVL double fmax(double x, double y) { return __builtin_fmax(x, y); }
OVL double fmin(double x, double y) { return __builtin_fmin(x, y); }
OVL double fabs(double x) { return __builtin_fabs(x); }
OVL int isnan(float x) { return __builtin_isnan(x); }
OVL float4 convert_float4(uint4 x) { return __builtin_convertvector(x, float4); }
#define ATOMIC_OPS(AS)                                                         \
  OVL uint atomic_add(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_sub(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_min(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_min(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_max(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_max(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_and(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_or(volatile AS uint *p, uint v) {                           \
    return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);                          \
  }                                                                            \
  OVL uint atomic_xor(volatile AS uint *p, uint v) {                          \
    return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  OVL uint atomic_xchg(volatile AS uint *p, uint v) {                         \
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);                        \
  }                                                                            \
  OVL uint atomic_inc(volatile AS uint *p) {                                  \
    return __builtin_amdgcn_atomic_inc32(p, 0xffffffffu, __ATOMIC_RELAXED,     \
                                         "agent");                             \
  }                                                                            \
  OVL uint atomic_cmpxchg(volatile AS uint *p, uint cmp, uint v) {            \
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED,           \
                                __ATOMIC_RELAXED);                             \
    return cmp;                                                                \
  }
ATOMIC_OPS(__global)
ATOMIC_OPS(__local)
#endif
