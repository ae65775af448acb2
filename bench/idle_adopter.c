/* Whether memory comes back when the thread left holding it goes idle.
 * Thread A allocates 100,000 blocks of 64-232 bytes, frees every other one
 * and exits. Thread B starts after it (mallard's B adopts A's heap), takes
 * one block and waits on a condition variable, idle. Thread C then frees
 * A's other blocks and exits: under mallard those are remote frees into
 * B's heap, which only B drains. Prints the process's RSS (exact, from
 * smaps_rollup) at each step and 1.5 s and 3.5 s after the last free, in
 * KiB, for the allocator preloaded. Not part of the build:
 *   cc -O2 -pthread bench/idle_adopter.c -o /tmp/idle_adopter
 *   LD_PRELOAD=build/src/libmallard.so /tmp/idle_adopter
 * (docs/target-gaps.md, "Peak RSS geometric mean": every allocator here
 * keeps the memory while B sleeps). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 100000

static long rss_kib(void) {
  char text[4096];
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL) return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  const char* field = strstr(text, "\nRss:");
  return field == NULL ? -1 : strtol(field + 5, NULL, 10);
}

static void* all[BLOCKS];
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int finished;

static void* allocate_and_exit(void* unused) {
  (void)unused;
  for (int i = 0; i < BLOCKS; ++i) {
    all[i] = malloc(64 + (i % 8) * 24);
    if (all[i] == NULL) abort();
    memset(all[i], 1, 64);
  }
  for (int i = 1; i < BLOCKS; i += 2) free(all[i]);
  return NULL;
}

static void* allocate_once_then_idle(void* unused) {
  (void)unused;
  void* volatile block = malloc(40);
  pthread_mutex_lock(&mutex);
  while (!finished) pthread_cond_wait(&wake, &mutex);
  pthread_mutex_unlock(&mutex);
  free(block);
  return NULL;
}

static void* free_the_rest(void* unused) {
  (void)unused;
  for (int i = 0; i < BLOCKS; i += 2) free(all[i]);
  return NULL;
}

int main(void) {
  long start = rss_kib();
  pthread_t a, b, c;
  pthread_create(&a, NULL, allocate_and_exit, NULL);
  pthread_join(a, NULL);
  long after_a = rss_kib();
  pthread_create(&b, NULL, allocate_once_then_idle, NULL);
  usleep(10000);
  pthread_create(&c, NULL, free_the_rest, NULL);
  pthread_join(c, NULL);
  long after_c = rss_kib();
  usleep(1500000);
  long later = rss_kib();
  sleep(2);
  long latest = rss_kib();
  printf("RSS: start %ld, after A %ld, after C freed the rest %ld, 1.5 s later %ld, 3.5 s later %ld KiB\n", start,
         after_a, after_c, later, latest);
  pthread_mutex_lock(&mutex);
  finished = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&mutex);
  pthread_join(b, NULL);
  return 0;
}
