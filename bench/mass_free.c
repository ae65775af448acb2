/* Freeing a big structure at once (a Redis FLUSHALL, a teardown): one
 * thread allocates N blocks of 8-120 bytes (writing each), shuffles them and
 * frees them all; only the frees are timed. The frees empty every page near
 * the end, so what the allocator does with many empty pages at once (purge
 * each, purge in batches, wait) decides the time. Not part of the build:
 *   cc -O2 bench/mass_free.c -o /tmp/mass_free
 *   LD_PRELOAD=<allocator> /tmp/mass_free 4000000
 * (DESIGN.md, "Purges go out in batches"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_common.h"

static uint64_t next_random(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

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
  double start = now_seconds();
  for (size_t i = 0; i < n; i++) free(blocks[i]);
  double seconds = now_seconds() - start;
  printf("free %zu blocks: %.1f ms (%.1f ns a free)\n", n, seconds * 1e3, seconds * 1e9 / (double)n);
  free(blocks);
  return 0;
}
