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
 * segments, its heaps, thread stacks; see DESIGN.md, "Known gaps"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../include/mallard/mallard.h"

static mallard_stats peak_stats;
static long peak_rss_kb;
static int keep_smaps;
static char peak_smaps[1 << 20];

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
      if (keep_smaps) {
        int fd = open("/proc/self/smaps", O_RDONLY);
        ssize_t n = 0, got = 0;
        while (fd >= 0 && (got = read(fd, peak_smaps + n, sizeof peak_smaps - 1 - (size_t)n)) > 0) n += got;
        if (fd >= 0) close(fd);
        peak_smaps[n] = 0;
      }
    }
    usleep(2000);
  }
  return unused;
}

__attribute__((constructor)) static void start(void) {
  const char* smaps = getenv("PEAK_STATS_SMAPS");
  keep_smaps = smaps != NULL && strcmp(smaps, "1") == 0;
  pthread_t thread;
  pthread_create(&thread, NULL, watch, NULL);
}

__attribute__((destructor)) static void report(void) {
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
