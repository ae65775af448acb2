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

#include "tool_common.h"

static size_t block_bytes;

static void* one_thread(void* arg) {
  (void)arg;
  alloc_touch_free(block_bytes, 100);
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
