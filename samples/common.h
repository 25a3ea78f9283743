/* Shared helpers of the sample host programs. */
#ifndef SAMPLES_COMMON_H
#define SAMPLES_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu_rt.h"

#ifndef KERNEL_DIR
#define KERNEL_DIR "samples/kernels"
#endif

#define CHECK(call)                                                            \
  do {                                                                         \
    int st_ = (call);                                                          \
    if (st_ != SIMGPU_SUCCESS) {                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
              simgpu_status_string(st_));                                      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* With --wait, the program stops at named points and waits for a line on
 * stdin (lets a test attach a debugger at a known moment). */
static int g_wait;
static void sample_args(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--wait"))
      g_wait = 1;
  setvbuf(stdout, NULL, _IONBF, 0);
}
static void checkpoint(const char *name) {
  if (!g_wait)
    return;
  printf("checkpoint %s\n", name);
  char line[64];
  if (!fgets(line, sizeof line, stdin))
    exit(2);
}

static simgpu_module *load_kernel_file(const char *file) {
  const char *dir = getenv("SIMGPU_KERNEL_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : KERNEL_DIR, file);
  simgpu_module *m = NULL;
  CHECK(simgpu_module_load(path, &m));
  return m;
}
#endif
