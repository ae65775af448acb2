/* cache-scratch's inner loop (tools/workloads/false_sharing.hpp,
 * write_objects) without an allocator: 4 threads each write an 8-byte object
 * at OFFSET bytes into its own 4 MiB-aligned region, SPACING bytes apart, the
 * way per-thread heaps place each thread's first block. It tells whether the
 * workload's speed depends on where within a page an allocator puts the
 * object (mallard 128, jemalloc 0, mimalloc 384, glibc 672, tbbmalloc 4,088
 * in one probe; DESIGN.md "Known gaps", the forty-third session's run).
 * Not part of the build:
 *   cc -O2 -pthread bench/cache_scratch_offsets.c -o /tmp/cache_scratch_offsets
 *   /tmp/cache_scratch_offsets OFFSET [SPACING [OBJECTS_PER_THREAD]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

enum { kThreads = 4, kRepetitions = 5000, kObjectSize = 8 };
static const unsigned long kAlign = 4UL << 20;
static long objects = 80000, offset = 128, spacing = 4L << 20;
static char* base;

static void* run(void* arg) {
  long t = (long)arg;
  volatile unsigned char* object = (volatile unsigned char*)(base + t * spacing + offset);
  for (long i = 0; i < objects; i++)
    for (long r = 0; r < kRepetitions; r++)
      for (int b = 0; b < kObjectSize; b++) object[b] = (unsigned char)(object[b] + 1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) offset = atol(argv[1]);
  if (argc > 2) spacing = atol(argv[2]);
  if (argc > 3) objects = atol(argv[3]);
  size_t span = (size_t)(kThreads * spacing) + kAlign + (size_t)offset + kObjectSize;
  char* raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return 1;
  base = (char*)(((unsigned long)raw + kAlign - 1) & ~(kAlign - 1));
  pthread_t threads[kThreads];
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long t = 0; t < kThreads; t++) pthread_create(&threads[t], NULL, run, (void*)t);
  for (int t = 0; t < kThreads; t++) pthread_join(threads[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
  printf("offset %ld spacing %ld: %.0f objects/s\n", offset, spacing, kThreads * objects / seconds);
  return 0;
}
