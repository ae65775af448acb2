/* One thread cycles through about 40 MiB: it allocates 20,000 blocks of 16 B
 * to 4 KiB (writing the first byte of each), frees them all, and does it
 * again, CYCLES times (default 20); prints the seconds taken. A dirty cap
 * smaller than a cycle purges and faults in the difference every cycle
 * (DESIGN.md, "The dirty cap follows what a heap takes back"). Not part of
 * the build:
 *   cc -O2 bench/dirty_cycles.c -o /tmp/dirty_cycles
 *   LD_PRELOAD=<allocator> /tmp/dirty_cycles [CYCLES]
 * Run the allocators compared interleaved. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCKS 20000
static void* blocks[BLOCKS];

int main(int argc, char** argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 20;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  unsigned random = 1;
  for (int c = 0; c < cycles; c++) {
    for (int i = 0; i < BLOCKS; i++) {
      random = random * 1103515245u + 12345u;
      size_t bytes = 16 + (random >> 8) % 4080;
      blocks[i] = malloc(bytes);
      if (blocks[i] == NULL) return 1;
      ((char*)blocks[i])[0] = 1;
    }
    for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("%.3f s\n", (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9);
  return 0;
}
