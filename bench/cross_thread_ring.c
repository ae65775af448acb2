/* micro_bench's BM_cross_thread_free as a C program that also counts who
 * freed each block. The producer (the main thread) mallocs 64 bytes and
 * swaps the block into a ring of 4096 slots; if the slot still held a block
 * the consumer had not taken yet, the producer frees that block itself
 * (locally). The consumer sweeps the ring and frees what it finds (remote
 * frees). Prints the producer's ns per operation (all micro_bench times)
 * and the share of blocks each side freed. Not part of the build:
 *   cc -O2 bench/cross_thread_ring.c -o /tmp/cross_thread_ring -lpthread
 *   LD_PRELOAD=<allocator> /tmp/cross_thread_ring 20000000
 * (DESIGN.md, "Frees from other threads"). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { kRing = 4096 };
static _Atomic(void*) ring[kRing];
static atomic_bool done;
static long consumer_frees;
static void* consumer(void* arg) {
  (void)arg; size_t i = 0; long n = 0;
  while (!atomic_load_explicit(&done, memory_order_acquire)) {
    void* p = atomic_exchange(&ring[i], NULL);
    if (p) { free(p); n++; }
    i = (i + 1) % kRing;
  }
  for (int k = 0; k < kRing; k++) free(atomic_exchange(&ring[k], NULL));
  consumer_frees = n; return NULL;
}
int main(int argc, char** argv) {
  long iters = atol(argv[1]);
  pthread_t t; pthread_create(&t, NULL, consumer, NULL);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  size_t i = 0; long local = 0;
  for (long k = 0; k < iters; k++) {
    void* p = malloc(64);
    void* old = atomic_exchange(&ring[i], p);
    if (old) { free(old); local++; }
    i = (i + 1) % kRing;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  atomic_store(&done, 1); pthread_join(t, NULL);
  printf("%.1f ns/op producer-frees %.0f%% consumer %.0f%%\n", ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/iters, 100.0*local/iters, 100.0*consumer_frees/iters);
}
