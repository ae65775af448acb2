/* Where the sizes workload's threads spend their CPU: T threads, released
 * together, each allocates, touches (one byte per page and the last byte, as
 * tools/workloads/common.hpp's touch_pages) and frees one block of SIZE bytes,
 * then does so OPS more times. Prints the page faults and thread CPU time of
 * every thread's first cycle (summed), the CPU time of the other cycles, the
 * process's user and system time from the release to the last join, and the
 * main thread's page faults before the threads start (an allocator that
 * touches memory as it loads has them there). Not part of the build:
 * cc -O2 bench/thread_first_op.c -o /tmp/thread_first_op -lpthread &&
 * LD_PRELOAD=build/src/libmallard.so /tmp/thread_first_op 32 32768 60000 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double clock_us(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static long thread_faults(void) {
  struct rusage r;
  getrusage(RUSAGE_THREAD, &r);
  return r.ru_minflt;
}
static double rusage_us(struct timeval t) { return t.tv_sec * 1e6 + t.tv_usec; }

static size_t block_size;
static long cycles;
static pthread_barrier_t start_line;
static double first_cpu[1024], rest_cpu[1024];
static long first_faults[1024];

static void cycle(void) {
  volatile char* p = malloc(block_size);
  if (p == NULL) abort();
  for (size_t offset = 0; offset < block_size; offset += 4096) p[offset] = 1;
  p[block_size - 1] = 1;
  free((void*)p);
}

static void* worker(void* arg) {
  long i = (long)arg;
  pthread_barrier_wait(&start_line);
  long faults = thread_faults();
  double t0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
  cycle();
  double t1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
  first_faults[i] = thread_faults() - faults;
  for (long k = 0; k < cycles; k++) cycle();
  first_cpu[i] = t1 - t0;
  rest_cpu[i] = clock_us(CLOCK_THREAD_CPUTIME_ID) - t1;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s THREADS SIZE OPS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  block_size = (size_t)atol(argv[2]);
  cycles = atol(argv[3]);
  if (threads < 1 || threads > 1024 || block_size == 0) return 2;
  long main_faults = thread_faults();
  pthread_t handles[1024];
  pthread_barrier_init(&start_line, NULL, threads + 1);
  for (long i = 0; i < threads; i++) pthread_create(&handles[i], NULL, worker, (void*)i);
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  double wall0 = clock_us(CLOCK_MONOTONIC);
  pthread_barrier_wait(&start_line);
  for (int i = 0; i < threads; i++) pthread_join(handles[i], NULL);
  double wall = clock_us(CLOCK_MONOTONIC) - wall0;
  getrusage(RUSAGE_SELF, &after);
  double first = 0, rest = 0;
  long faults = 0;
  for (int i = 0; i < threads; i++) {
    first += first_cpu[i];
    rest += rest_cpu[i];
    faults += first_faults[i];
  }
  printf("wall %.0f us; user %.0f sys %.0f us; first cycles: %ld faults, %.0f us CPU; "
         "other cycles %.0f us CPU (%.2f ns each); main thread's faults before the threads %ld\n",
         wall, rusage_us(after.ru_utime) - rusage_us(before.ru_utime),
         rusage_us(after.ru_stime) - rusage_us(before.ru_stime), faults, first, rest,
         rest * 1000 / ((double)threads * (double)cycles), main_faults);
  return 0;
}
