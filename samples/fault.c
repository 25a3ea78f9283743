/* Launches a kernel that stores through a bad pointer. Standalone, the
 * runtime reports a memory violation and the program exits 3. */
#include <stdint.h>

#include "common.h"

struct args {
  uint32_t *bad;
  uint32_t value;
};

int main(int argc, char **argv) {
  sample_args(argc, argv);
  simgpu_module *m = load_kernel_file("fault.hsaco");
  checkpoint("loaded");
  struct args args = {(uint32_t *)0x10, 42};
  uint32_t grid[3] = {64, 1, 1};
  uint16_t block[3] = {64, 1, 1};
  int st = simgpu_launch(m, "fault", grid, block, &args, sizeof args);
  printf("fault: launch returned %d (%s)\n", st, simgpu_status_string(st));
  return st == SIMGPU_ERROR_MEMORY_VIOLATION ? 3 : 1;
}
