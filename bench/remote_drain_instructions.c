/* Instructions an owner spends taking back blocks other threads freed: the
 * main thread allocates 10^6 blocks of 64 bytes; either it frees them itself
 * ("local") or a second thread frees them all ("remote"); then the main
 * thread allocates 10^6 blocks of 64 bytes again. Count only that last loop,
 * in both modes: the difference over 10^6 is what taking back one remotely
 * freed block costs the owner. Not part of the build:
 *   cc -O2 -pthread bench/remote_drain_instructions.c -o /tmp/remote_drain_instructions
 *   for mode in local remote; do LD_PRELOAD=<allocator> valgrind --tool=callgrind \
 *     --toggle-collect=alloc_loop --callgrind-out-file=/dev/null \
 *     /tmp/remote_drain_instructions $mode; done
 * (DESIGN.md, "Measured changes", "The owner's drain takes its pages' blocks
 * inline".) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 1000000
static void* blocks[BLOCKS];

__attribute__((noinline)) void alloc_loop(void) {
  for (int i = 0; i < BLOCKS; i++) blocks[i] = malloc(64);
}

static void free_all(void) {
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
}

static void* consumer(void* arg) {
  free_all();
  return arg;
}

int main(int argc, char** argv) {
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = malloc(64);
    if (blocks[i] == NULL) return 1;
  }
  if (argc > 1 && strcmp(argv[1], "remote") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, consumer, NULL) != 0) return 1;
    pthread_join(thread, NULL);
  } else {
    free_all();
  }
  alloc_loop();
  return blocks[BLOCKS - 1] == NULL;
}
