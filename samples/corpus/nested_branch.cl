#include "corpus.h"
// Nested divergent branches.
KERNEL(nested_branch) {
  uint i = GID();
  if (i >= n) return;
  uint x = a[i], y = b[i], r;
  if (x & 1u) {
    if (y & 2u) {
      r = x + y;
    } else if (y & 4u) {
      r = x - y;
    } else {
      r = x * 3u;
    }
  } else {
    if ((x ^ y) & 8u) r = x ^ y;
    else r = y >> 1;
    if (r & 16u) r += 1000u;
  }
  out[i] = r;
}
