/* Whether memory freed from grown buffers goes back to the OS while some
 * buffers stay: 1024 buffers grown by realloc in 1 KiB steps to 64 KiB (64
 * MiB), then three of every four freed, so that no 4 MiB region empties;
 * then one second of small-block churn (a program that goes on running:
 * 256 blocks of 1000 bytes allocated and freed a millisecond). Prints the process's RSS in MiB after the growth, right after
 * the frees, and after the second. Not part of the build:
 *   cc -O2 bench/extent_decay.c -o /tmp/extent_decay
 *   LD_PRELOAD=<allocator> /tmp/extent_decay
 * (DESIGN.md, "Free extents are purged after the delay"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kBuffers = 1024, kFinal = 64 * 1024, kStep = 1024 };

static double rss_mib(void) {
  long pages = 0, resident = 0;
  FILE* statm = fopen("/proc/self/statm", "r");
  if (statm == NULL || fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = -1;
  if (statm != NULL) fclose(statm);
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(void) {
  static char* buffers[kBuffers];
  for (size_t size = kStep; size <= kFinal; size += kStep) {
    for (int i = 0; i < kBuffers; i++) {
      char* grown = realloc(buffers[i], size);
      if (grown == NULL) return 1;
      memset(grown + size - kStep, i & 0xff, kStep);
      buffers[i] = grown;
    }
  }
  double grown_mib = rss_mib();
  for (int i = 0; i < kBuffers; i++) {
    if (i % 4 != 0) {
      free(buffers[i]);
      buffers[i] = NULL;
    }
  }
  double freed_mib = rss_mib();
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (seconds_since(&start) < 1.0) {
    void* blocks[256];
    for (int i = 0; i < 256; i++) blocks[i] = malloc(1000);
    for (int i = 0; i < 256; i++) free(blocks[i]);
    usleep(1000);
  }
  printf("grown %.1f MiB, freed %.1f MiB, after 1 s %.1f MiB\n", grown_mib, freed_mib, rss_mib());
  for (int i = 0; i < kBuffers; i++) free(buffers[i]);
  return 0;
}
