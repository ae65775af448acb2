/* What a remote free costs the freeing thread when the block's line is in
 * another core's cache, as a consumer's is: the producer, pinned to CPU 0,
 * allocates 256 blocks of 8-512 bytes and writes their first and last
 * bytes; the consumer, pinned to CPU 1, then frees all 256 while the
 * producer waits, and times that loop. 20,000 rounds; prints the median ns
 * per free and the 10th and 90th percentiles. With READ=1 in the
 * environment the consumer first reads each block (untimed), as a consumer
 * that uses the data does. Not part of the build:
 *   cc -O2 -pthread bench/remote_free_handoff.c -o /tmp/remote_free_handoff
 *   LD_PRELOAD=<allocator> /tmp/remote_free_handoff
 * (DESIGN.md "A remote free asks for its block's line"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBatch = 256, kRounds = 20000 };
static void* blocks[kBatch];
static atomic_int turn; /* 0: the producer's, 1: the consumer's, 2: stop */
static double ns_per_free[kRounds];

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void* consume(void* arg) {
  pin(1);
  int read_first = getenv("READ") != NULL;
  for (int round = 0;; round++) {
    int t;
    while ((t = atomic_load_explicit(&turn, memory_order_acquire)) == 0) {
    }
    if (t == 2) return arg;
    if (read_first) {
      volatile unsigned char sum = 0;
      for (int i = 0; i < kBatch; i++) sum += *(unsigned char*)blocks[i];
    }
    double start = now_ns();
    for (int i = 0; i < kBatch; i++) free(blocks[i]);
    ns_per_free[round] = (now_ns() - start) / kBatch;
    atomic_store_explicit(&turn, 0, memory_order_release);
  }
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(void) {
  pthread_t consumer;
  pthread_create(&consumer, NULL, consume, NULL);
  pin(0);
  uint64_t x = 3;
  for (int round = 0; round < kRounds; round++) {
    for (int i = 0; i < kBatch; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      size_t n = 8 + x % 505;
      unsigned char* block = malloc(n);
      if (block == NULL) abort();
      block[0] = block[n - 1] = 1;
      blocks[i] = block;
    }
    atomic_store_explicit(&turn, 1, memory_order_release);
    while (atomic_load_explicit(&turn, memory_order_acquire) != 0) {
    }
  }
  atomic_store_explicit(&turn, 2, memory_order_release);
  pthread_join(consumer, NULL);
  qsort(ns_per_free, kRounds, sizeof(double), by_value);
  printf("consumer ns per free: median %.1f, p10 %.1f, p90 %.1f\n", ns_per_free[kRounds / 2], ns_per_free[kRounds / 10],
         ns_per_free[kRounds * 9 / 10]);
  return 0;
}
