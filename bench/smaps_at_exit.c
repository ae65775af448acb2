/* Resident memory by mapping at a process's exit. Preloaded (after the
 * allocator, if any), its destructor reads /proc/self/smaps and prints on
 * stderr the RSS of every mapping that has some, then the total, in KiB.
 * Not part of the build:
 *   cc -O2 -shared -fPIC bench/smaps_at_exit.c -o /tmp/smaps_at_exit.so
 *   LD_PRELOAD=/tmp/smaps_at_exit.so cat /dev/null                 # glibc
 *   LD_PRELOAD="build/src/libmallard.so /tmp/smaps_at_exit.so" cat /dev/null
 * (see DESIGN.md: the C++ runtime a C program no longer loads, and where a
 * small process's extra RSS goes). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool_common.h"

static char smaps[1 << 20];
static FILE* out;

/* A copy of stderr taken at start: programs like cat close theirs at exit,
 * before this library's destructor runs. */
__attribute__((constructor)) static void keep_stderr(void) {
  int fd = dup(2);
  out = fd < 0 ? NULL : fdopen(fd, "w");
}

__attribute__((destructor)) static void report(void) {
  if (out == NULL || read_whole_file("/proc/self/smaps", smaps, sizeof smaps) == 0) return;
  char name[256] = "";
  long total = 0;
  for (char* line = strtok(smaps, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    unsigned long start, end;
    char perms[8];
    int path_at = 0;
    long kib;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) == 3) {
      snprintf(name, sizeof name, "%s %s", perms, path_at > 0 && line[path_at] ? line + path_at : "[anon]");
    } else if (sscanf(line, "Rss: %ld kB", &kib) == 1 && kib > 0) {
      fprintf(out, "%6ld KiB  %s\n", kib, name);
      total += kib;
    }
  }
  fprintf(out, "%6ld KiB  total\n", total);
  fflush(out);
}
