/* What the typed-session host programs share: the runtime's header, a
 * CHECK that ends main with 1 and the runtime's reason on a failed call,
 * and the kernels' argument blocks (saxpy.cl, negate.cl). */
#ifndef GDBMUX_TYPED_H
#define GDBMUX_TYPED_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simgpu_rt.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    int st_ = (call);                                                          \
    if (st_ != SIMGPU_SUCCESS) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, simgpu_status_string(st_));    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

struct saxpy_args {
  int a;
  const int *x;
  int *y;
  uint32_t n;
};

struct negate_args {
  int *y;
  uint32_t n;
};

#endif
