/* The GPU runtime's lifetime: init, launch, shut down, init again.
 *
 *   lifecycle [--wait]
 *
 * Runs vector_add twice, each time in its own runtime lifetime
 * (simgpu_init … simgpu_shutdown). With --wait it stops at the
 * checkpoints "start", "up" (first lifetime's kernel done), "down" (runtime
 * shut down) and "again" (second lifetime's kernel done), each waiting for
 * a line on stdin, so a test decides when the runtime goes and comes back. */
#include <stdint.h>

#include "common.h"

struct args {
  const int *a, *b;
  int *c;
  uint32_t n;
};

enum { N = 256 };

static int run_once(int *a, int *b, int *c) {
  simgpu_module *m = load_kernel_file("vector_add.hsaco");
  struct args args = {a, b, c, N};
  uint32_t grid[3] = {N, 1, 1};
  uint16_t block[3] = {64, 1, 1};
  memset(c, 0, N * sizeof *c);
  CHECK(simgpu_launch(m, "vector_add", grid, block, &args, sizeof args));
  CHECK(simgpu_module_unload(m));
  for (int i = 0; i < N; i++)
    if (c[i] != a[i] + b[i]) {
      printf("FAIL at %d: %d != %d\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  sample_args(argc, argv);
  int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  int *c = calloc(N, sizeof *c);
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 7 * i;
  }
  checkpoint("start");
  CHECK(simgpu_init());
  if (run_once(a, b, c))
    return 1;
  checkpoint("up");
  CHECK(simgpu_shutdown());
  checkpoint("down");
  CHECK(simgpu_init());
  if (run_once(a, b, c))
    return 1;
  checkpoint("again");
  CHECK(simgpu_shutdown());
  printf("lifecycle: PASS (2 runtime lifetimes)\n");
  return 0;
}
