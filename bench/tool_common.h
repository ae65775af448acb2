/* What the standalone C tools in bench/ share (each is built by its own `cc`
 * line, given in its header; none is part of the build). */
#pragma once

#include <stdlib.h>
#include <time.h>

static inline double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The sizes workload's step, `count` times: allocate `bytes`, write one byte
 * in each OS page, free. */
static inline void alloc_touch_free(size_t bytes, long count) {
  for (long i = 0; i < count; i++) {
    char* p = malloc(bytes);
    if (p == NULL) abort();
    for (size_t o = 0; o < bytes; o += 4096) ((volatile char*)p)[o] = 1;
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
}
