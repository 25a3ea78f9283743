/* Loads a code object, launches a kernel, checks it and unloads the code
 * object, forever (or N times): a debugger sees the GPU code object load and
 * unload again and again. Used by `soak --gpu`.
 *
 *   reload_loop [N]       N rounds (default: forever), one wave each */
#include <stdint.h>
#include <time.h>

#include "common.h"

struct args {
  const int *a, *b;
  int *c;
  uint32_t n;
};

enum { N = 64 };

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : -1;
  int a[N], b[N], c[N];
  sample_args(argc, argv);
  (void)checkpoint; /* no --wait checkpoints here */
  CHECK(simgpu_init());
  for (long r = 0; rounds < 0 || r < rounds; r++) {
    for (int i = 0; i < N; i++) {
      a[i] = i + (int)r;
      b[i] = 3 * i;
      c[i] = 0;
    }
    simgpu_module *m = load_kernel_file("vector_add.hsaco");
    struct args args = {a, b, c, N};
    uint32_t grid[3] = {N, 1, 1};
    uint16_t block[3] = {64, 1, 1};
    CHECK(simgpu_launch(m, "vector_add", grid, block, &args, sizeof args));
    CHECK(simgpu_module_unload(m));
    for (int i = 0; i < N; i++)
      if (c[i] != a[i] + b[i]) {
        printf("reload_loop: FAIL in round %ld at %d\n", r, i);
        return 1;
      }
    /* 2 ms between rounds: a loop, not a CPU burner. */
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  printf("reload_loop: PASS\n");
  return 0;
}
