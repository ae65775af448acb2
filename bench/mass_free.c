/* Freeing a big structure at once (a Redis FLUSHALL, a teardown): one
 * thread allocates N blocks of 8-120 bytes (writing each), shuffles them and
 * frees them all; only the frees are timed, in all and by tenths. The frees
 * empty every page near the end, so what the allocator does with many empty
 * pages at once (purge each, purge in batches, wait) decides the last tenth.
 * Not part of the build:
 *   cc -O2 bench/mass_free.c -o /tmp/mass_free
 *   LD_PRELOAD=<allocator> /tmp/mass_free 4000000
 * (DESIGN.md, "Purges go out in batches"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_common.h"

int main(int argc, char** argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
  void** blocks = malloc(n * sizeof(void*));
  if (blocks == NULL) return 1;
  uint64_t x = 7;
  for (size_t i = 0; i < n; i++) {
    size_t size = 8 + next_random(&x) % 113;
    char* p = malloc(size);
    if (p == NULL) return 1;
    p[0] = 1;
    blocks[i] = p;
  }
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = next_random(&x) % (i + 1);
    void* t = blocks[i];
    blocks[i] = blocks[j];
    blocks[j] = t;
  }
  /* Timed by tenths too: the pages empty in the last tenth, so it holds
   * what the allocator does with them; the others are the frees alone. */
  double tenth_ms[10];
  double start = now_seconds(), mark = start;
  for (size_t t = 0; t < 10; t++) {
    for (size_t i = t * n / 10; i < (t + 1) * n / 10; i++) free(blocks[i]);
    double now = now_seconds();
    tenth_ms[t] = (now - mark) * 1e3;
    mark = now;
  }
  double seconds = mark - start;
  printf("free %zu blocks: %.1f ms (%.1f ns a free); by tenths:", n, seconds * 1e3, seconds * 1e9 / (double)n);
  for (size_t t = 0; t < 10; t++) printf(" %.0f", tenth_ms[t]);
  printf(" ms\n");
  free(blocks);
  return 0;
}
