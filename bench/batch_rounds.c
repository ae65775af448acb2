/* micro_bench's BM_batch as a C program: rounds of 1,000 mallocs of one size,
 * then 1,000 frees in the same order; prints ns per block (one malloc and
 * one free). Run it under callgrind with --toggle-collect=rounds for
 * instructions. Not part of the build:
 *   cc -O2 bench/batch_rounds.c -o /tmp/batch_rounds
 *   LD_PRELOAD=<allocator> /tmp/batch_rounds 128 20000
 * (DESIGN.md, "Invalid frees": what the free key costs). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static void* blocks[1000];
__attribute__((noinline)) void rounds(size_t size, long n) {
  for (long r = 0; r < n; r++) {
    for (int i = 0; i < 1000; i++) blocks[i] = malloc(size);
    for (int i = 0; i < 1000; i++) free(blocks[i]);
  }
}
int main(int argc, char** argv) {
  size_t size = atol(argv[1]); long n = atol(argv[2]);
  rounds(size, 10);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  rounds(size, n);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.2f ns/op\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n * 1000.0));
}
