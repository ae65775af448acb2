/* Random churn across threads, after mimalloc-bench's mstress: each of T
 * threads keeps S slots of live blocks; each step frees a random slot's
 * block and puts a new one of a random size there (log-uniform from 8 bytes
 * to 2^LOG2_MAX), writing its first and last bytes and its first 64; every
 * 16th step swaps that block with one of 4096 shared places, so about one
 * free in sixteen is another thread's block. Prints the seconds from the
 * threads' start to their end, and the peak RSS. Not part of the build:
 *   cc -O2 -pthread bench/random_churn.c -o /tmp/random_churn -lm
 *   LD_PRELOAD=<allocator> /tmp/random_churn THREADS STEPS LOG2_MAX SLOTS
 * e.g. `4 2000000 18 2000`: a few hundred live blocks of 128-256 KiB, each
 * a large block in mallard (DESIGN.md, "The large cache's index by
 * capacity"). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tool_common.h"

enum { kShared = 4096, kSwapEvery = 16 };
static _Atomic(void*) shared_places[kShared];
static long steps = 2000000, slots = 20000;
static double log2_max = 16;

static void* churn(void* arg) {
  uint64_t x = 88172645463325252ull + (uintptr_t)arg * 7919;
  void** slot = calloc((size_t)slots, sizeof(void*));
  if (slot == NULL) abort();
  for (long i = 0; i < steps; i++) {
    long k = (long)(next_random(&x) % (uint64_t)slots);
    free(slot[k]);
    size_t n = log_uniform_size(&x, log2_max - 3);
    unsigned char* p = malloc(n);
    if (p == NULL) abort();
    memset(p, 1, n < 64 ? n : 64);
    p[n - 1] = 2;
    slot[k] = p;
    if (i % kSwapEvery == 0) slot[k] = atomic_exchange(&shared_places[next_random(&x) % kShared], slot[k]);
  }
  for (long k = 0; k < slots; k++) free(slot[k]);
  free(slot);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) steps = atol(argv[2]);
  if (argc > 3) log2_max = atof(argv[3]);
  if (argc > 4) slots = atol(argv[4]);
  if (threads < 1 || threads > 256 || steps < 1 || slots < 1 || log2_max < 3 || log2_max > 40) {
    fprintf(stderr, "usage: random_churn [THREADS 1-256] [STEPS] [LOG2_MAX 3-40] [SLOTS]\n");
    return 2;
  }
  pthread_t workers[256];
  double start = now_seconds();
  for (long t = 0; t < threads; t++) pthread_create(&workers[t], NULL, churn, (void*)t);
  for (int t = 0; t < threads; t++) pthread_join(workers[t], NULL);
  double seconds = now_seconds() - start;
  for (int j = 0; j < kShared; j++) free(shared_places[j]);
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("%.3f s, peak RSS %ld KiB\n", seconds, usage.ru_maxrss);
  return 0;
}
