/* Host program of the typed-session tests: saxpy from saxpy.hsaco, then a
 * second code object (negate.hsaco, loaded next to it) launched; checks both. The
 * code objects are found in the directory given as argv[1]. */
#include "typed.h"

int main(int argc, char **argv) {
  enum { N = 200 };
  char path[4096];
  int *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (int i = 0; i < N; i++) {
    x[i] = i;
    y[i] = 1000;
  }
  CHECK(simgpu_init());
  simgpu_module *m1 = NULL, *m2 = NULL;
  snprintf(path, sizeof path, "%s/saxpy.hsaco", argv[1]);
  CHECK(simgpu_module_load(path, &m1));
  snprintf(path, sizeof path, "%s/negate.hsaco", argv[1]);
  CHECK(simgpu_module_load(path, &m2));
  uint32_t grid[3] = {256, 1, 1};
  uint16_t block[3] = {64, 1, 1};
  struct saxpy_args sa = {3, x, y, N};
  CHECK(simgpu_launch(m1, "saxpy", grid, block, &sa, sizeof sa));
  struct negate_args na = {y, N};
  CHECK(simgpu_launch(m2, "negate", grid, block, &na, sizeof na));
  for (int i = 0; i < N; i++)
    if (y[i] != -(3 * i + 1000)) {
      printf("FAIL at %d: %d\n", i, y[i]);
      return 1;
    }
  printf("host: PASS\n");
  return 0;
}
