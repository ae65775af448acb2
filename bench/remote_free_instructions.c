/* Instructions per remote free: the main thread allocates 10^6 blocks of 64
 * bytes, a second thread frees them all (every free is another thread's
 * block). Count only the freeing loop. Not part of the build:
 *   cc -O2 -pthread bench/remote_free_instructions.c -o /tmp/remote_free_instructions
 *   LD_PRELOAD=<allocator> valgrind --tool=callgrind --toggle-collect=free_loop \
 *     --callgrind-out-file=/dev/null /tmp/remote_free_instructions
 * The loop itself adds 6 instructions a free (DESIGN.md, "Measured changes",
 * "A remote free goes straight to its batch"). */
#include <pthread.h>
#include <stdlib.h>

#define BLOCKS 1000000
static void* blocks[BLOCKS];

__attribute__((noinline)) void free_loop(void) {
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
}

static void* consumer(void* arg) {
  free_loop();
  return arg;
}

int main(void) {
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = malloc(64);
    if (blocks[i] == NULL) return 1;
  }
  pthread_t thread;
  if (pthread_create(&thread, NULL, consumer, NULL) != 0) return 1;
  pthread_join(thread, NULL);
  return 0;
}
