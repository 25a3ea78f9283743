/* Host of the corpus kernel private_array (scratch memory), built by the
 * gdb_monitor_gpu_private test at test time. */
#include <stdint.h>

#include "common.h"

struct args {
  const uint32_t *a, *b;
  uint32_t *out;
  uint32_t n;
};

int main(int argc, char **argv) {
  sample_args(argc, argv);
  enum { N = 64 };
  uint32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  uint32_t *out = calloc(N, sizeof *out);
  for (uint32_t i = 0; i < N; i++) {
    a[i] = 0x1000 + i;
    b[i] = 0xc0de0000u + i;
  }
  CHECK(simgpu_init());
  simgpu_module *m = load_kernel_file("private_array.O0.hsaco");
  struct args args = {a, b, out, N};
  uint32_t grid[3] = {N, 1, 1};
  uint16_t block[3] = {N, 1, 1};
  CHECK(simgpu_launch(m, "private_array", grid, block, &args, sizeof args));
  CHECK(simgpu_module_unload(m));
  printf("private_array: DONE\n");
  return 0;
}
