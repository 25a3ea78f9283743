/* Data-dependent loops and branches; checks against the CPU. */
#include <stdint.h>

#include "common.h"

struct args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t n;
};

static uint32_t reference(const uint32_t *in, uint32_t i) {
  uint32_t x = in[i], steps = 0;
  while (x > 1 && steps < 64) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    steps++;
  }
  switch (i % 3) {
  case 0: return steps * 7 + i;
  case 1: return steps ^ 0x5a5a;
  default: return (steps << 4) | (in[i] & 0xf);
  }
}

int main(int argc, char **argv) {
  sample_args(argc, argv);
  enum { N = 3000 };
  uint32_t *in = malloc(N * sizeof *in), *out = calloc(N, sizeof *out);
  for (uint32_t i = 0; i < N; i++)
    in[i] = (i * 7919u) % 997;
  simgpu_module *m = load_kernel_file("divergent.hsaco");
  checkpoint("loaded");
  struct args args = {in, out, N};
  uint32_t grid[3] = {N, 1, 1};
  uint16_t block[3] = {128, 1, 1};
  CHECK(simgpu_launch(m, "divergent", grid, block, &args, sizeof args));
  for (uint32_t i = 0; i < N; i++) {
    if (out[i] != reference(in, i)) {
      printf("FAIL at %u: %u != %u\n", i, out[i], reference(in, i));
      return 1;
    }
  }
  printf("divergent: PASS\n");
  return 0;
}
