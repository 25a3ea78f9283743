/* Hostile kernels against the runtime (samples/hostile/hostile.cl):
 *
 *   hostile            a memory violation, an illegal instruction, a hang
 *                      (the watchdog ends it: set SIMGPU_WATCHDOG_MS; the
 *                      good launches get 120 s of it) and
 *                      an s_trap mid-dispatch, each followed by 25 good
 *                      launches whose results are checked; guard words
 *                      around every buffer must be intact at the end.
 *   hostile --hang     prints "launching hang", then launches the hang
 *                      kernel (one wave) and prints how the launch ended.
 *
 * SIMGPU_KERNEL_DIR names the directory holding hostile.hsaco. Exit 0 and a
 * final "hostile: PASS" line when every check holds. */
#include <stdint.h>

#include "../common.h"

enum { N = 1000, GUARD = 64 };
static const uint32_t CANARY = 0xC0DEFACEu;

/* A buffer of n words with GUARD canary words on each side. */
static uint32_t *guarded(size_t n) {
  uint32_t *b = malloc((n + 2 * GUARD) * sizeof *b);
  for (size_t i = 0; i < n + 2 * GUARD; i++)
    b[i] = CANARY;
  return b + GUARD;
}
static int guards_ok(const uint32_t *p, size_t n) {
  for (size_t i = 1; i <= GUARD; i++)
    if (p[-(long)i] != CANARY || p[n + i - 1] != CANARY)
      return 0;
  return 1;
}

static const simgpu_module *g_mod;
static int g_fail;
/* The watchdog of the hostile launches: SIMGPU_WATCHDOG_MS, read once. The
 * good launches get GOOD_WATCHDOG_MS instead: the short value the test gives
 * the hang kernel is wall-clock time, and a good launch on a loaded machine
 * (or under valgrind) can take longer than that without being hung. */
static uint64_t g_hostile_ms = 10000;
enum { GOOD_WATCHDOG_MS = 120000 };

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL: " __VA_ARGS__);                                            \
      printf("\n");                                                            \
      g_fail = 1;                                                              \
    }                                                                          \
  } while (0)

static int launch(const char *k, uint32_t items, void *args, size_t size) {
  uint32_t grid[3] = {items, 1, 1};
  uint16_t block[3] = {64, 1, 1};
  return simgpu_launch(g_mod, k, grid, block, args, size);
}

static void good_rounds(uint32_t *in, uint32_t *out, int first, int count) {
  simgpu_set_watchdog_ms(GOOD_WATCHDOG_MS);
  for (int r = first; r < first + count; r++) {
    for (uint32_t i = 0; i < N; i++) {
      in[i] = i * 7u + (uint32_t)r;
      out[i] = 0;
    }
    struct {
      uint32_t *in, *out;
      uint32_t k, n;
    } a = {in, out, (uint32_t)r, N};
    int st = launch("scale", N, &a, sizeof a);
    EXPECT(st == SIMGPU_SUCCESS, "good round %d: %s (%s)", r,
           simgpu_status_string(st), simgpu_last_error());
    for (uint32_t i = 0; i < N; i++)
      if (out[i] != in[i] * 3u + (uint32_t)r) {
        printf("FAIL: good round %d: out[%u] = %u\n", r, i, out[i]);
        g_fail = 1;
        break;
      }
  }
  simgpu_set_watchdog_ms(g_hostile_ms);
}

static void expect_error(const char *what, int st, int want, const char *text) {
  const char *err = simgpu_last_error();
  printf("%s: %s: %s\n", what, simgpu_status_string(st), err);
  EXPECT(st == want, "%s: status %d, want %d", what, st, want);
  EXPECT(strstr(err, what) != NULL, "%s: the error names the kernel", what);
  EXPECT(strstr(err, "pc 0x") != NULL, "%s: the error names the pc", what);
  EXPECT(strstr(err, text) != NULL, "%s: the error says %s", what, text);
}

int main(int argc, char **argv) {
  sample_args(argc, argv);
  (void)checkpoint; /* no --wait checkpoints here */
  CHECK(simgpu_init());
  const char *wd = getenv("SIMGPU_WATCHDOG_MS");
  if (wd && *wd)
    g_hostile_ms = strtoull(wd, NULL, 10);
  simgpu_module *m = load_kernel_file("hostile.hsaco");
  g_mod = m;
  uint32_t *in = guarded(N), *out = guarded(N), *flag = guarded(1);
  flag[0] = 0;
  if (argc > 1 && !strcmp(argv[1], "--hang")) {
    struct {
      uint32_t *flag, *out;
    } a = {flag, out};
    printf("launching hang\n");
    int st = launch("hang", 64, &a, sizeof a);
    printf("hang launch: %s: %s\n", simgpu_status_string(st),
           simgpu_last_error());
    return 0;
  }
  good_rounds(in, out, 0, 1);
  {
    struct {
      uint32_t *out;
      uint64_t wild;
    } a = {out, 0xdead00000000ull};
    expect_error("wild_store", launch("wild_store", 256, &a, sizeof a),
                 SIMGPU_ERROR_MEMORY_VIOLATION, "address 0xdead0000");
  }
  good_rounds(in, out, 1, 25);
  {
    struct {
      uint32_t *out;
    } a = {out};
    expect_error("illegal", launch("illegal", 256, &a, sizeof a),
                 SIMGPU_ERROR_ABORTED, "illegal instruction");
  }
  good_rounds(in, out, 26, 25);
  {
    struct {
      uint32_t *flag, *out;
    } a = {flag, out};
    expect_error("hang", launch("hang", 128, &a, sizeof a),
                 SIMGPU_ERROR_TIMEOUT, "watchdog");
  }
  good_rounds(in, out, 51, 25);
  {
    for (uint32_t i = 0; i < N; i++)
      out[i] = 0;
    struct {
      uint32_t *out;
      uint32_t n, last;
    } a = {out, N, N / 64 - 1};
    expect_error("trap_mid", launch("trap_mid", N, &a, sizeof a),
                 SIMGPU_ERROR_ABORTED, "trap");
    for (uint32_t i = 0; i < N; i++)
      EXPECT(out[i] == 0 || out[i] == 5, "trap_mid: out[%u] = %u", i, out[i]);
  }
  good_rounds(in, out, 76, 25);
  EXPECT(guards_ok(in, N) && guards_ok(out, N) && guards_ok(flag, 1),
         "guard words around the buffers changed");
  CHECK(simgpu_module_unload(m));
  CHECK(simgpu_shutdown());
  free(in - GUARD);
  free(out - GUARD);
  free(flag - GUARD);
  if (g_fail)
    return 1;
  printf("hostile: PASS (4 hostile kernels, 100 good launches)\n");
  return 0;
}
