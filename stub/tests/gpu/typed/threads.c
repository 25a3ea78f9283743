/* Host program of the launching-thread test: two idle threads wait on a
 * condition variable, a third launches negate.hsaco and prints its thread
 * id first; the main thread joins it. The code object is found in the
 * directory given as argv[1]. */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "typed.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;
static const char *dir;
static int status = 1;

static void *idle_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!done)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void *launch_thread(void *arg) {
  (void)arg;
  enum { N = 64 };
  char path[4096];
  int y[N];
  for (int i = 0; i < N; i++)
    y[i] = i;
  printf("launcher tid %d\n", (int)gettid());
  fflush(stdout);
  simgpu_module *m = NULL;
  snprintf(path, sizeof path, "%s/negate.hsaco", dir);
  if (simgpu_module_load(path, &m) != SIMGPU_SUCCESS)
    return NULL;
  uint32_t grid[3] = {N, 1, 1};
  uint16_t block[3] = {N, 1, 1};
  struct negate_args na = {y, N};
  if (simgpu_launch(m, "negate", grid, block, &na, sizeof na) == SIMGPU_SUCCESS &&
      y[5] == -5)
    status = 0;
  return NULL;
}

int main(int argc, char **argv) {
  (void)argc;
  dir = argv[1];
  if (simgpu_init() != SIMGPU_SUCCESS)
    return 1;
  pthread_t idle[2], launcher;
  for (int i = 0; i < 2; i++)
    pthread_create(&idle[i], NULL, idle_thread, NULL);
  pthread_create(&launcher, NULL, launch_thread, NULL);
  pthread_join(launcher, NULL);
  pthread_mutex_lock(&mu);
  done = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 2; i++)
    pthread_join(idle[i], NULL);
  printf("threads: %s\n", status == 0 ? "PASS" : "FAIL");
  return status;
}
