/* Times 10^8 malloc(n)+free pairs (one block of the same size kept live, as
 * in fastpath_pair.c) and prints nanoseconds per pair: the latency that goes
 * with the instruction count of scripts/fastpath-instructions.sh. Run it
 * interleaved for the builds compared: LD_PRELOAD=<lib> ./pair_time 16 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) void pair_loop(size_t n, long pairs) {
  void* volatile sink;
  for (long i = 0; i < pairs; i++) {
    void* p = malloc(n);
    sink = p;
    free(p);
  }
  (void)sink;
}

int main(int argc, char** argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  const long pairs = 100000000L;
  void* volatile keep = malloc(n);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pair_loop(n, pairs);
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("%.3f\n", ((double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec)) / (double)pairs);
  free(keep);
  return 0;
}
