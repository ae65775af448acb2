/* malloc(n)+free pairs in a loop, for the fast path's instruction count and
 * its time. A second block of the same size stays live, as in any real
 * program, so the page never empties. It is allocated after some pairs:
 * a process's first heap lends a class blocks of a larger one until the
 * class takes a page of its own (mallard: up to 255 times; DESIGN.md "Young
 * classes share power-of-two pages"), and a block allocated first would
 * then live on another page than the loop's.
 *   fastpath_pair N          10^6 pairs, for callgrind
 *                            (--toggle-collect=pair_loop; scripts/fastpath-instructions.sh)
 *   fastpath_pair N PAIRS    PAIRS pairs (in rounds of 10^6), timed: prints
 *                            nanoseconds per pair
 *                            (run it interleaved for the builds compared) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void pair_loop_for(size_t n, int pairs) {
  void* volatile sink;
  for (int i = 0; i < pairs; i++) {
    void* p = malloc(n);
    sink = p;
    free(p);
  }
  (void)sink;
}

// A fixed count: callgrind's per-pair figure includes this loop's overhead,
// the same for every allocator.
__attribute__((noinline)) void pair_loop(size_t n) { pair_loop_for(n, 1000000); }

int main(int argc, char** argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  long rounds = argc > 2 ? atol(argv[2]) / 1000000L : 1;  // of 10^6 pairs
  if (rounds < 1) rounds = 1;
  pair_loop_for(n, 1000);
  void* volatile keep = malloc(n);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long r = 0; r < rounds; r++) pair_loop(n);
  clock_gettime(CLOCK_MONOTONIC, &end);
  if (argc > 2) {
    printf("%.3f\n", ((double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec)) / (double)(rounds * 1000000L));
  }
  free(keep);
  return 0;
}
