/* Host program of the reload test: negate.hsaco is loaded, launched and
 * unloaded; saxpy.hsaco is loaded (taking memory), negate.hsaco is loaded
 * again and launched once more. One wave per launch. The code objects are
 * found in the directory given as argv[1]. */
#include "typed.h"

int main(int argc, char **argv) {
  enum { N = 64 };
  char path[4096];
  int *y = malloc(N * sizeof *y);
  for (int i = 0; i < N; i++)
    y[i] = i;
  CHECK(simgpu_init());
  uint32_t grid[3] = {N, 1, 1};
  uint16_t block[3] = {N, 1, 1};
  struct negate_args na = {y, N};
  simgpu_module *m1 = NULL, *m2 = NULL, *m3 = NULL;
  snprintf(path, sizeof path, "%s/negate.hsaco", argv[1]);
  CHECK(simgpu_module_load(path, &m1));
  CHECK(simgpu_launch(m1, "negate", grid, block, &na, sizeof na));
  CHECK(simgpu_module_unload(m1));
  snprintf(path, sizeof path, "%s/saxpy.hsaco", argv[1]);
  CHECK(simgpu_module_load(path, &m2));
  snprintf(path, sizeof path, "%s/negate.hsaco", argv[1]);
  CHECK(simgpu_module_load(path, &m3));
  CHECK(simgpu_launch(m3, "negate", grid, block, &na, sizeof na));
  for (int i = 0; i < N; i++)
    if (y[i] != i) {
      printf("FAIL at %d: %d\n", i, y[i]);
      return 1;
    }
  printf("reload: PASS\n");
  return 0;
}
