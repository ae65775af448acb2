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
 * LD_PRELOAD (see DESIGN.md, "Where larson's memory goes"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "../include/mallard/mallard.h"

static mallard_stats peak_stats;
static long peak_rss_kb;

static long rss_kb(void) {
  char text[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) return 0;
  text[n] = 0;
  long size = 0, resident = 0;
  sscanf(text, "%ld %ld", &size, &resident);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void* watch(void* unused) {
  int (*stats_get)(mallard_stats*) = (int (*)(mallard_stats*))dlsym(RTLD_DEFAULT, "mallard_stats_get");
  for (;;) {
    long rss = rss_kb();
    if (rss > peak_rss_kb) {
      peak_rss_kb = rss;
      if (stats_get != NULL) stats_get(&peak_stats);
    }
    usleep(2000);
  }
  return unused;
}

__attribute__((constructor)) static void start(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, watch, NULL);
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr,
          "peak RSS %ld KiB: allocated %zu KiB, active %zu KiB, resident %zu KiB, segments %zu, "
          "threads %zu, abandoned %zu\n",
          peak_rss_kb, peak_stats.allocated >> 10, peak_stats.active >> 10, peak_stats.resident >> 10,
          peak_stats.segments, peak_stats.threads, peak_stats.abandoned);
}
