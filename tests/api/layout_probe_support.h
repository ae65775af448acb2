/* What the layout probes (rodata_probe.c, rare_text_probe.c) share: how
 * much of one of the process's mappings is resident, blocks of every size
 * up to a bound, and threads that hand blocks to each other and exit with
 * blocks live. Static functions, for C
 * programs built from one file each. */
#pragma once

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kB resident of the mapping that starts at `start`; -1 if none does. */
static long mapping_resident_kib(uintptr_t start) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[512];
  int in_mapping = 0;
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long from, to;
    if (sscanf(line, "%lx-%lx ", &from, &to) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in_mapping = from == start;
    } else if (in_mapping && sscanf(line, "Rss: %ld kB", &kib) == 1) {
      break;
    }
  }
  fclose(f);
  return kib;
}

/* Blocks of the sizes given to hand_over_blocks, allocated by one thread,
 * which exits with one more block live (its heap becomes an orphan that a
 * later thread adopts), and freed by another. */
enum { kHandedBlocks = 512 };
static void* handed[kHandedBlocks];
static const size_t* handed_sizes;
static size_t handed_size_count;

static void* allocate_and_exit(void* unused) {
  for (int i = 0; i < kHandedBlocks; ++i) {
    handed[i] = malloc(handed_sizes[(size_t)i % handed_size_count]);
    if (handed[i] == NULL) abort();
    memset(handed[i], i, 8);
  }
  void* kept = malloc(48); /* live when the thread exits */
  (void)kept;
  return unused;
}

static void* free_handed(void* unused) {
  for (int i = 0; i < kHandedBlocks; ++i) free(handed[i]);
  return unused;
}

static int run_thread(void* (*body)(void*)) {
  pthread_t thread;
  return pthread_create(&thread, NULL, body, NULL) == 0 && pthread_join(thread, NULL) == 0;
}

static void hand_over_blocks(const size_t* sizes, size_t count, int rounds) {
  handed_sizes = sizes, handed_size_count = count;
  for (int round = 0; round < rounds; ++round) {
    if (!run_thread(allocate_and_exit) || !run_thread(free_handed)) abort();
  }
}

/* malloc and calloc of sizes from 1 byte up to `max`, each written at both
 * ends, its usable size checked, and freed. */
static void malloc_and_calloc_sizes_up_to(size_t max) {
  for (size_t size = 1; size <= max; size = size * 3 / 2 + 1) {
    char* p = malloc(size);
    char* z = calloc(1, size);
    if (p == NULL || z == NULL || z[size - 1] != 0) abort();
    p[0] = p[size - 1] = 1;
    if (malloc_usable_size(p) < size) abort();
    free(p);
    free(z);
  }
}
