/* c[i] = a[i] + b[i] on the (simulated) GPU; checks the result. */
#include <stdint.h>

#include "common.h"

struct args {
  const int *a, *b;
  int *c;
  uint32_t n;
};

int main(int argc, char **argv) {
  sample_args(argc, argv);
  enum { N = 1000 };
  int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  int *c = calloc(N, sizeof *c);
  for (int i = 0; i < N; i++) {
    a[i] = i * 3;
    b[i] = 100000 - i;
  }
  checkpoint("start");
  CHECK(simgpu_init());
  checkpoint("init");
  simgpu_module *m = load_kernel_file("vector_add.hsaco");
  checkpoint("loaded");
  struct args args = {a, b, c, N};
  uint32_t grid[3] = {1024, 1, 1};
  uint16_t block[3] = {256, 1, 1};
  CHECK(simgpu_launch(m, "vector_add", grid, block, &args, sizeof args));
  for (int i = 0; i < N; i++) {
    if (c[i] != a[i] + b[i]) {
      printf("FAIL at %d: %d != %d\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  }
  CHECK(simgpu_module_unload(m));
  printf("vector_add: PASS (%d elements)\n", N);
  return 0;
}
