/* churn's pattern on one thread, counting the 4 KiB pages its blocks span:
 * 10,000 live blocks of log-uniform sizes from 8 bytes to 64 KiB; each step
 * frees a random one and allocates a new one, writing a byte per 4 KiB from
 * its start and its last byte (tools/workloads/common.hpp's touch_pages).
 * Prints the pages a block spans on average, the share of blocks above
 * 4 KiB that start on a page boundary, and the share whose last byte lies
 * in a page the per-4 KiB writes did not reach (a page touched only for
 * it). Page colouring and the extra line between medium blocks (page.cpp)
 * start most of mallard's medium blocks off a page boundary (DESIGN.md
 * "Medium blocks page-aligned"). Not part of the build:
 *   cc -O2 bench/block_pages.c -o /tmp/block_pages -lm
 *   LD_PRELOAD=<allocator> /tmp/block_pages */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_common.h"

static uint64_t state = 88172645463325252ull;

int main(void) {
  enum { kSlots = 10000, kSteps = 1000000 };
  static void* slots[kSlots];
  long pages = 0, above_4k = 0, aligned = 0, extra_page = 0;
  double log2_span = log2(65536.0 / 8);
  for (long step = 0; step < kSteps; step++) {
    size_t k = next_random(&state) % kSlots;
    free(slots[k]);
    size_t bytes = log_uniform_size(&state, log2_span);
    void* block = malloc(bytes);
    if (block == NULL) abort();
    uintptr_t start = (uintptr_t)block;
    uintptr_t last_written_page = (start + 4096 * ((bytes - 1) / 4096)) >> 12;
    uintptr_t last_page = (start + bytes - 1) >> 12;
    pages += (long)(last_page - (start >> 12) + 1);
    if (bytes > 4096) {
      above_4k++;
      if (start % 4096 == 0) aligned++;
      if (last_page != last_written_page) extra_page++;
    }
    touch_pages(block, bytes);
    slots[k] = block;
  }
  printf("pages a block spans %.3f; blocks above 4 KiB: page-aligned %.1f%%, last byte in a page of its own %.1f%%\n",
         (double)pages / kSteps, 100.0 * aligned / above_4k, 100.0 * extra_page / above_4k);
  return 0;
}
