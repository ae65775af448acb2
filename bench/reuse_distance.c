/* churn's pattern on one thread, measuring how warm the blocks are that
 * malloc hands out: SLOTS live blocks of log-uniform sizes from 8 bytes to
 * LARGEST; each step frees a random one and allocates a new one, writing a
 * byte per 4 KiB page and its last byte (tools/workloads/common.hpp's
 * touch_pages). Over the second half of 2,000,000 steps it prints how many
 * steps ago each block malloc returned was last freed: a block freed a few
 * steps ago is likely still in the caches and the TLB, one freed thousands
 * of steps ago is not, and the touches then wait for memory (DESIGN.md
 * "Where churn's time goes"). Not part of the build:
 *   cc -O2 bench/reuse_distance.c -o /tmp/reuse_distance -lm
 *   LD_PRELOAD=<allocator> /tmp/reuse_distance 65536 10000 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_common.h"

static uint64_t state = 88172645463325252ull;

/* When each address was last freed (0: never), in an open-addressing table. */
#define TABLE_SIZE (1u << 22)
static uintptr_t table_keys[TABLE_SIZE];
static long table_freed_at[TABLE_SIZE];
static long* freed_at(uintptr_t address) {
  size_t h = ((address >> 4) * 0x9E3779B97F4A7C15ull) >> 42;
  while (table_keys[h] != 0 && table_keys[h] != address) h = (h + 1) & (TABLE_SIZE - 1);
  table_keys[h] = address;
  return &table_freed_at[h];
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LARGEST SLOTS\n", argv[0]);
    return 2;
  }
  double largest = atof(argv[1]);
  long slot_count = atol(argv[2]), steps = 2000000;
  if (largest < 8 || slot_count <= 0 || slot_count > (long)TABLE_SIZE / 4) {
    fprintf(stderr, "LARGEST must be at least 8, SLOTS between 1 and %u\n", TABLE_SIZE / 4);
    return 2;
  }
  void** slots = calloc((size_t)slot_count, sizeof(void*));
  double log2_span = log2(largest / 8);
  static const long kBounds[] = {10, 100, 1000, 10000, 100000};
  long fresh = 0, older = 0, within[5] = {0}, counted = 0;
  for (long step = 1; step <= steps; step++) {
    size_t k = next_random(&state) % (size_t)slot_count;
    if (slots[k] != NULL) {
      *freed_at((uintptr_t)slots[k]) = step;
      free(slots[k]);
    }
    size_t bytes = log_uniform_size(&state, log2_span);
    void* block = malloc(bytes);
    if (block == NULL) abort();
    touch_pages(block, bytes);
    if (step > steps / 2) {
      counted++;
      long last_free = *freed_at((uintptr_t)block);
      long age = step - last_free;
      int bucket = 0;
      while (bucket < 5 && age >= kBounds[bucket]) bucket++;
      if (last_free == 0) fresh++;
      else if (bucket == 5) older++;
      else within[bucket]++;
    }
    slots[k] = block;
  }
  printf("never freed before %.1f%%; freed this many steps ago: 1-9 %.1f%%, 10-99 %.1f%%, 100-999 %.1f%%, "
         "1k-10k %.1f%%, 10k-100k %.1f%%, more %.1f%%\n",
         100.0 * fresh / counted, 100.0 * within[0] / counted, 100.0 * within[1] / counted, 100.0 * within[2] / counted,
         100.0 * within[3] / counted, 100.0 * within[4] / counted, 100.0 * older / counted);
  return 0;
}
