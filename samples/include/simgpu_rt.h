/* simgpu-rt: the runtime for the simulated gfx90a GPU (the analog of ROCr).
 * Memory is unified: pass ordinary host pointers as kernel arguments. */
#ifndef SIMGPU_RT_H
#define SIMGPU_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simgpu_module simgpu_module;

enum {
  SIMGPU_SUCCESS = 0,
  SIMGPU_ERROR_INVALID_ARGUMENT = 1,
  SIMGPU_ERROR_FILE = 2,
  SIMGPU_ERROR_INVALID_CODE_OBJECT = 3,
  SIMGPU_ERROR_KERNEL_NOT_FOUND = 4,
  SIMGPU_ERROR_MEMORY_VIOLATION = 5,
  SIMGPU_ERROR_ABORTED = 6,
  SIMGPU_ERROR_DEBUGGER_LOST = 7,
  /* The watchdog abandoned a kernel that did not finish in time. */
  SIMGPU_ERROR_TIMEOUT = 8,
};

int simgpu_init(void);
/* Shuts the runtime down (a debugger sees the GPU runtime unload); a later
 * simgpu_init() brings it up again as a new runtime. */
int simgpu_shutdown(void);
const char *simgpu_status_string(int status);
int simgpu_module_load(const char *path, simgpu_module **module);
int simgpu_module_unload(simgpu_module *module);
/* Launches `kernel` over grid[3] work-items in blocks of block[3] and waits.
 * `args` is the kernarg segment (pointers 8-aligned, as in OpenCL C). */
int simgpu_launch(const simgpu_module *module, const char *kernel,
                  const uint32_t grid[3], const uint16_t block[3],
                  const void *args, size_t args_size);
/* simgpu_launch with dynamic_lds_bytes of dynamic LDS (group segment = the
 * kernel's static LDS + this). A dynamic __local pointer argument's slot in
 * `args` holds a byte offset into the dynamic part (normally 0); the kernel
 * receives the group-segment address, as OpenCL runtimes pass it. */
int simgpu_launch_ex(const simgpu_module *module, const char *kernel,
                     const uint32_t grid[3], const uint16_t block[3],
                     const void *args, size_t args_size,
                     uint32_t dynamic_lds_bytes);
/* The calling thread's last launch error ("" after a success): for an
 * aborted dispatch the reason, the pc and the instruction bytes there. */
const char *simgpu_last_error(void);
/* The launch watchdog (no debugger attached): a kernel still running after
 * `ms` milliseconds (default 10000, environment SIMGPU_WATCHDOG_MS) is
 * abandoned and its launch returns SIMGPU_ERROR_TIMEOUT, simgpu_last_error()
 * naming the kernel, a wave's pc and the reason. 0 turns it off. With a
 * debugger attached it is off: the debugger stops and inspects the wave. */
int simgpu_set_watchdog_ms(uint64_t ms);

#ifdef __cplusplus
}
#endif
#endif
