/* mallard's statistics over a process's life, per size class. Preloaded after
 * libmallard, it starts a thread that every STATS_TRACE_MS milliseconds
 * (default 5) appends `mallard_stats_print(f, "J")` to STATS_TRACE_FILE
 * (default /tmp/stats_trace.out), one JSON object a line, up to
 * STATS_TRACE_SAMPLES samples (default 1000). The line with the most
 * `allocated` shows where the pages stood at the peak of live blocks: each
 * class's pages and its blocks in use against carved (DESIGN.md,
 * "Statistics"; docs/target-gaps.md, xmalloc). Not part of the build:
 *   cc -O2 -shared -fPIC bench/stats_trace.c -o /tmp/stats_trace.so -lpthread
 *   LD_PRELOAD="build/src/libmallard.so /tmp/stats_trace.so" PROGRAM...
 * For a benchmark child, which sets LD_PRELOAD itself, run
 * `mallard __child ... --preload build/src/libmallard.so` with the same
 * LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../include/mallard/mallard.h"

static long env_number(const char* name, long fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? strtol(text, NULL, 10) : fallback;
}

static void* sample(void* arg) {
  (void)arg;
  const char* path = getenv("STATS_TRACE_FILE");
  FILE* out = fopen(path != NULL ? path : "/tmp/stats_trace.out", "w");
  if (out == NULL) return NULL;
  long ms = env_number("STATS_TRACE_MS", 5), samples = env_number("STATS_TRACE_SAMPLES", 1000);
  struct timespec interval = {ms / 1000, (ms % 1000) * 1000000};
  for (long i = 0; i < samples; i++) {
    nanosleep(&interval, NULL);
    mallard_stats_print(out, "J");
    fflush(out);
  }
  fclose(out);
  return NULL;
}

__attribute__((constructor)) static void start_sampling(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, sample, NULL) == 0) pthread_detach(thread);
}
