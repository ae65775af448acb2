/* What a page fault costs on this machine: maps a fresh 4 MiB region (as a
 * new segment is), then makes PAGES of its 4 KiB pages resident, either by
 * touching each one (a page fault each; the first also allocates the page
 * table page) or by one madvise(MADV_POPULATE_WRITE) before touching them.
 * Prints the mean microseconds over ROUNDS regions for each way, alternating.
 * Not part of the build:
 *   cc -O2 bench/fault_cost.c -o /tmp/fault_cost && /tmp/fault_cost 9 200
 * (docs/target-gaps.md, sizes:32K: a thread's first 32 KiB block in a new
 * segment takes about 10 faults). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Microseconds to make `pages` pages of a fresh mapping resident. */
static double one_region(int pages, int populate) {
  const size_t region = 4u << 20;
  char* p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) exit(1);
  double start = now_us();
  if (populate && madvise(p, (size_t)pages * 4096, MADV_POPULATE_WRITE) != 0) {
    perror("madvise(MADV_POPULATE_WRITE)");
    exit(1);
  }
  for (int k = 0; k < pages; k++) ((volatile char*)p)[(size_t)k * 4096] = 1;
  double spent = now_us() - start;
  munmap(p, region);
  return spent;
}

int main(int argc, char** argv) {
  int pages = argc > 1 ? atoi(argv[1]) : 9;
  int rounds = argc > 2 ? atoi(argv[2]) : 200;
  double faulted = 0, populated = 0;
  for (int i = 0; i < rounds; i++) {
    faulted += one_region(pages, 0);
    populated += one_region(pages, 1);
  }
  printf("%d pages: %.1f us by faults (%.1f a page), %.1f us by MADV_POPULATE_WRITE\n", pages, faulted / rounds,
         faulted / rounds / pages, populated / rounds);
  return 0;
}
