/* stub/tests/gpu_wave_list.rs: launches the `spin` kernel of
 * tools/bench/fixtures/gpu_spin.cl with WAVES waves of 64 work-items that
 * stay resident while `wave_list_hold` is non-zero (the test clears it
 * through the CPU session to let them end).
 *
 *   wave_list_host WAVES HSACO
 *
 * wave_list_ready() is called once the runtime is up and the code object
 * loaded, before the launch, and wave_list_done() once the launch has
 * returned. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simgpu_rt.h"

volatile uint32_t wave_list_hold = 1;
static volatile uint32_t count;

__attribute__((noinline)) void wave_list_ready(void) { __asm__ volatile(""); }
__attribute__((noinline)) void wave_list_done(void) { __asm__ volatile(""); }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: wave_list_host WAVES HSACO\n");
    return 2;
  }
  uint32_t waves = (uint32_t)strtoul(argv[1], NULL, 0);
  setvbuf(stdout, NULL, _IONBF, 0);
  if (simgpu_init() != SIMGPU_SUCCESS)
    return 1;
  simgpu_module *m = NULL;
  if (simgpu_module_load(argv[2], &m) != SIMGPU_SUCCESS) {
    fprintf(stderr, "wave_list_host: cannot load %s\n", argv[2]);
    return 1;
  }
  wave_list_ready();
  uint32_t n = waves * 64;
  uint32_t *out = calloc(n, sizeof *out);
  struct {
    volatile uint32_t *count, *hold;
    uint32_t *out;
    uint32_t n;
  } a = {&count, &wave_list_hold, out, n};
  uint32_t grid[3] = {n, 1, 1};
  uint16_t block[3] = {64, 1, 1};
  int st = simgpu_launch(m, "spin", grid, block, &a, sizeof a);
  wave_list_done();
  printf("wave_list_host: launch ended: %s\n", simgpu_status_string(st));
  return st == SIMGPU_SUCCESS ? 0 : 1;
}
