/* sizes:1M outside the harness, counting what the threads hold: 32 threads
 * each malloc(1 MiB), write a byte per 4 KiB page, free, N times. The main
 * thread samples every millisecond how many blocks are held (between
 * malloc's return and the free call) and the RSS, and prints the peak RSS,
 * the blocks held at that peak and the mean held. A faster allocator spends
 * less of each iteration in malloc and free, so its threads hold a block
 * more of the time. Not part of the build:
 *   cc -O2 bench/held_blocks.c -o /tmp/held_blocks -lpthread
 *   LD_PRELOAD=<allocator> /tmp/held_blocks 20000 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tool_common.h"

enum { kThreads = 32, kBlock = 1 << 20 };
static atomic_int held, finished;
static long iterations = 20000;

static void* worker(void* arg) {
  (void)arg;
  for (long i = 0; i < iterations; i++) {
    volatile char* p = malloc(kBlock);
    if (p == NULL) abort();
    atomic_fetch_add(&held, 1);
    for (int offset = 0; offset < kBlock; offset += 4096) p[offset] = (char)offset;
    p[kBlock - 1] = 1;
    atomic_fetch_sub(&held, 1);
    free((void*)p);
  }
  atomic_fetch_add(&finished, 1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) iterations = atol(argv[1]);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; i++) pthread_create(&threads[i], NULL, worker, NULL);
  long peak = 0, held_at_peak = 0, samples = 0, held_total = 0;
  const struct timespec millisecond = {0, 1000000};
  while (atomic_load(&finished) < kThreads) {
    long rss = resident_kib();
    int now_held = atomic_load(&held);
    samples++;
    held_total += now_held;
    if (rss > peak) {
      peak = rss;
      held_at_peak = now_held;
    }
    nanosleep(&millisecond, NULL);
  }
  for (int i = 0; i < kThreads; i++) pthread_join(threads[i], NULL);
  printf("peak RSS %ld KiB, blocks held at the peak %ld, mean held %.1f of %d\n", peak, held_at_peak,
         samples ? (double)held_total / (double)samples : 0.0, kThreads);
  return 0;
}
