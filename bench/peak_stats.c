/* mallard's statistics at a process's RSS peak. Preloaded after libmallard,
 * it starts a thread that reads the RSS from /proc/self/statm every 2 ms and,
 * whenever it reaches a new maximum, takes mallard_stats_get; at exit it
 * prints that snapshot on stderr: how much of the peak was live blocks
 * (allocated), pages in use (active), and heaps (threads, abandoned).
 * Not part of the build:
 *   cc -O2 -shared -fPIC bench/peak_stats.c -o /tmp/peak_stats.so -lpthread
 *   LD_PRELOAD="build/src/libmallard.so /tmp/peak_stats.so" PROGRAM...
 * For a benchmark child, which sets LD_PRELOAD itself, run
 * `mallard __child ... --preload build/src/libmallard.so` with the same
 * LD_PRELOAD (see DESIGN.md, "Where larson's memory goes").
 * With PEAK_STATS_SMAPS=1 it also keeps /proc/self/smaps as of the peak and
 * prints every anonymous mapping holding 16 KiB or more then (mallard's
 * segments, its heaps, thread stacks; see DESIGN.md, "Known gaps").
 * With PEAK_STATS_TRACE_MS=N it also samples every N ms and prints, at exit,
 * one line per sample: ms since start, RSS, allocated, active, resident (KiB),
 * segments, heaps of live threads and of exited ones, KiB purged so far
 * (docs/target-gaps.md, larson). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../include/mallard/mallard.h"

#include "tool_common.h"

static mallard_stats peak_stats;
static long peak_rss_kb;
static int keep_smaps;
static char peak_smaps[1 << 20];
static long trace_ms;
static char trace[1 << 20];
static size_t trace_used;

static long now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void trace_sample(int (*stats_get)(mallard_stats*), long elapsed_ms, long rss) {
  mallard_stats s;
  memset(&s, 0, sizeof s);
  if (stats_get != NULL) stats_get(&s);
  if (trace_used + 160 > sizeof trace) return;
  trace_used += (size_t)snprintf(trace + trace_used, 160,
                                 "%6ld ms: RSS %6ld, allocated %6zu, active %6zu, resident %6zu KiB; segments %3zu, "
                                 "threads %2zu, abandoned %2zu; purged %7zu KiB\n",
                                 elapsed_ms, rss, s.allocated >> 10, s.active >> 10, s.resident >> 10, s.segments,
                                 s.threads, s.abandoned, s.purged_total >> 10);
}

static void* watch(void* unused) {
  int (*stats_get)(mallard_stats*) = (int (*)(mallard_stats*))dlsym(RTLD_DEFAULT, "mallard_stats_get");
  long start = now_ms(), next_trace = start;
  for (;;) {
    long rss = resident_kib();
    long now = now_ms();
    if (trace_ms > 0 && now >= next_trace) {
      trace_sample(stats_get, now - start, rss);
      next_trace = now + trace_ms;
    }
    if (rss > peak_rss_kb) {
      peak_rss_kb = rss;
      if (stats_get != NULL) stats_get(&peak_stats);
      if (keep_smaps) {
        read_whole_file("/proc/self/smaps", peak_smaps, sizeof peak_smaps);
      }
    }
    usleep(2000);
  }
  return unused;
}

__attribute__((constructor)) static void start(void) {
  const char* smaps = getenv("PEAK_STATS_SMAPS");
  keep_smaps = smaps != NULL && strcmp(smaps, "1") == 0;
  const char* trace_every = getenv("PEAK_STATS_TRACE_MS");
  trace_ms = trace_every != NULL ? atol(trace_every) : 0;
  pthread_t thread;
  pthread_create(&thread, NULL, watch, NULL);
}

__attribute__((destructor)) static void report(void) {
  fwrite(trace, 1, trace_used, stderr);
  fprintf(stderr,
          "peak RSS %ld KiB: allocated %zu KiB, active %zu KiB, resident %zu KiB, segments %zu, "
          "threads %zu, abandoned %zu\n",
          peak_rss_kb, peak_stats.allocated >> 10, peak_stats.active >> 10, peak_stats.resident >> 10,
          peak_stats.segments, peak_stats.threads, peak_stats.abandoned);
  // A mapping line is "start-end perms offset dev inode [path]"; anonymous
  // ones have inode 0 and no path. Its Rss line follows.
  unsigned long start = 0, end = 0, inode = 1;
  char path[256];
  for (char* line = strtok(peak_smaps, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    path[0] = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %255s", &start, &end, &inode, path) >= 3) continue;
    long kib = 0;
    if (sscanf(line, "Rss: %ld kB", &kib) == 1 && inode == 0 && path[0] == 0 && kib >= 16) {
      fprintf(stderr, "  anonymous %lx-%lx: %ld KiB resident of %lu KiB\n", start, end, kib, (end - start) >> 10);
    }
  }
}
