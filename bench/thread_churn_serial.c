// Serial thread churn: N threads, one after another, each allocating,
// touching (one byte per OS page) and freeing one block of SIZE bytes 100
// times, then exiting. Prints the mean wall time per thread: what starting a
// thread, its first blocks and its exit cost, as in thread-per-request code.
//
//   cc -O2 -pthread bench/thread_churn_serial.c -o /tmp/thread_churn_serial
//   LD_PRELOAD=<allocator.so> /tmp/thread_churn_serial 32768 3000
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t block_bytes;

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void* one_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    char* p = malloc(block_bytes);
    if (p == NULL) abort();
    for (size_t o = 0; o < block_bytes; o += 4096) ((volatile char*)p)[o] = 1;
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s BLOCK_BYTES THREADS\n", argv[0]);
    return 2;
  }
  block_bytes = strtoul(argv[1], NULL, 0);
  int threads = atoi(argv[2]);
  double start = now_seconds();
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, one_thread, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  }
  printf("%.1f us per thread\n", (now_seconds() - start) / threads * 1e6);
  return 0;
}
