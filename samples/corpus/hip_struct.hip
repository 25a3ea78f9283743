#include "hip_corpus.h"
// HIP: a struct passed by value, templates and doubles.
struct Params { double scale; uint shift; int bias; };
template <typename T> static __device__ T apply(T x, const Params &p) {
  return x * (T)p.scale + (T)p.bias;
}
extern "C" __global__ void hip_struct(const uint *a, const uint *b, uint *out, uint n, Params p) {
  uint i = gid();
  if (i >= n) return;
  double d = apply<double>((double)(a[i] >> p.shift), p);
  int k = apply<int>((int)(b[i] >> p.shift), p);
  out[2 * i] = (uint)(long long)d;
  out[2 * i + 1] = (uint)k;
}
