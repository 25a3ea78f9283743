/* Per-workgroup sums with LDS and barriers; checks against the CPU. */
#include <stdint.h>

#include "common.h"

struct args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t n;
};

int main(int argc, char **argv) {
  sample_args(argc, argv);
  enum { N = 5000, WG = 256 };
  uint32_t groups = (N + WG - 1) / WG;
  uint32_t *in = malloc(N * sizeof *in), *out = calloc(groups, sizeof *out);
  for (uint32_t i = 0; i < N; i++)
    in[i] = (i * 2654435761u) >> 20;
  simgpu_module *m = load_kernel_file("reduce.hsaco");
  checkpoint("loaded");
  struct args args = {in, out, N};
  uint32_t grid[3] = {groups * WG, 1, 1};
  uint16_t block[3] = {WG, 1, 1};
  CHECK(simgpu_launch(m, "reduce_sum", grid, block, &args, sizeof args));
  uint64_t total = 0;
  for (uint32_t g = 0; g < groups; g++) {
    uint32_t want = 0;
    for (uint32_t i = g * WG; i < (g + 1) * WG && i < N; i++)
      want += in[i];
    if (out[g] != want) {
      printf("FAIL group %u: %u != %u\n", g, out[g], want);
      return 1;
    }
    total += out[g];
  }
  printf("reduce: PASS (sum %llu)\n", (unsigned long long)total);
  return 0;
}
