// The sizes workload's loop as a plain C program: T threads, released by one
// barrier, each allocating a block of SIZE bytes, writing one byte per OS
// page and freeing it, TOTAL/T times. Prints blocks per second over the
// window from the barrier's release to the last join, the minor page faults
// and the CPU time inside that window, and the CPU time over twice the
// window (how busy both cores of this machine were).
//
//   cc -O2 -pthread bench/sizes_threads.c -o /tmp/sizes_threads
//   LD_PRELOAD=<allocator.so> /tmp/sizes_threads 32768 32 20000000
//   LD_PRELOAD=<allocator.so> taskset -c 0 /tmp/sizes_threads 32768 32 32000
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "tool_common.h"

static size_t block_bytes;
static long per_thread;
static pthread_barrier_t start_line;

static void usage_now(long* minor_faults, double* cpu_seconds) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *minor_faults = u.ru_minflt;
  *cpu_seconds = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void* worker(void* arg) {
  (void)arg;
  pthread_barrier_wait(&start_line);
  alloc_touch_free(block_bytes, per_thread);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SIZE THREADS TOTAL\n", argv[0]);
    return 2;
  }
  block_bytes = strtoul(argv[1], NULL, 0);
  int threads = atoi(argv[2]);
  long total = atol(argv[3]);
  if (threads < 1 || threads > 256) return 2;
  per_thread = total / threads;
  pthread_t workers[256];
  pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; t++) {
    if (pthread_create(&workers[t], NULL, worker, NULL) != 0) return 1;
  }
  long faults0, faults1;
  double cpu0, cpu1;
  usage_now(&faults0, &cpu0);
  double start = now_seconds();
  pthread_barrier_wait(&start_line);
  for (int t = 0; t < threads; t++) pthread_join(workers[t], NULL);
  double window = now_seconds() - start;
  usage_now(&faults1, &cpu1);
  printf("%.1fM/s window %.2f ms faults %ld cpu %.1f ms busy %.2f\n", (double)(per_thread * threads) / window / 1e6,
         window * 1e3, faults1 - faults0, (cpu1 - cpu0) * 1e3, (cpu1 - cpu0) / (2 * window));
  return 0;
}
