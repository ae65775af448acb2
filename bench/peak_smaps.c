/* Resident memory by mapping at a process's RSS peak, for any allocator.
 * Preloaded (after the allocator, if any), it starts a thread that reads the
 * RSS from /proc/self/statm every millisecond and, whenever it reaches a new
 * maximum, copies /proc/self/smaps; at exit it prints on stderr every
 * mapping that held RSS at that peak (address range, size, permissions,
 * name), then the total. Its own buffers are mapped apart and left out of
 * the listing and the total, so that two allocators' listings differ only
 * by what the program and its allocator held (its sampling thread's stack,
 * 8 KiB or so, is in both). Where bench/smaps_at_exit.c shows the exit,
 * this shows the peak, with threads still alive; bench/peak_stats.c adds
 * mallard's own statistics. Not part of the build:
 *   cc -O2 -shared -fPIC bench/peak_smaps.c -o /tmp/peak_smaps.so -lpthread
 *   LD_PRELOAD=/tmp/peak_smaps.so mallard __child --workload W --allocator glibc ...
 *   LD_PRELOAD="build/src/libmallard.so /tmp/peak_smaps.so" mallard __child \
 *     --workload W --allocator mallard --preload build/src/libmallard.so ...
 * (docs/target-gaps.md, "Where a small process's peak goes"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tool_common.h"

enum { kSmapsBytes = 1 << 20 };

// smaps is read into `scratch` and then copied to `peak`, so that a report
// made while the sampler reads never finds a half-read file.
static char* scratch;
static char* peak;  // the smaps text at the highest RSS so far
static long peak_rss_kib;
static FILE* out;

static void* sample(void* arg) {
  (void)arg;
  struct timespec interval = {0, 1000000};
  for (;;) {
    long rss = resident_kib();
    if (rss > peak_rss_kib) {
      peak_rss_kib = rss;
      size_t bytes = read_whole_file("/proc/self/smaps", scratch, kSmapsBytes);
      memcpy(peak, scratch, bytes + 1);
    }
    nanosleep(&interval, NULL);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  // One mapping for both buffers, so that the listing can leave it out.
  char* buffers = mmap(NULL, 2 * kSmapsBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int fd = dup(2);  // programs like cat close stderr before the destructors run
  if (buffers == MAP_FAILED || fd < 0 || (out = fdopen(fd, "w")) == NULL) return;
  scratch = buffers;
  peak = buffers + kSmapsBytes;
  pthread_t thread;
  pthread_create(&thread, NULL, sample, NULL);
}

__attribute__((destructor)) static void report(void) {
  if (out == NULL || peak == NULL) return;
  unsigned long own = (unsigned long)scratch;
  char name[320] = "";
  int skip = 0;
  long total = 0;
  for (char* line = strtok(peak, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    unsigned long start, end;
    char perms[8];
    int path_at = 0;
    long kib;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) == 3) {
      skip = start == own;
      snprintf(name, sizeof name, "%lx-%lx (%lu KiB) %s %s", start, end, (end - start) >> 10, perms,
               path_at > 0 && line[path_at] ? line + path_at : "[anon]");
    } else if (!skip && sscanf(line, "Rss: %ld kB", &kib) == 1 && kib > 0) {
      fprintf(out, "%6ld KiB  %s\n", kib, name);
      total += kib;
    }
  }
  fprintf(out, "%6ld KiB  total at the peak (statm read %ld KiB, this tool's buffers included)\n", total, peak_rss_kib);
  fflush(out);
}
