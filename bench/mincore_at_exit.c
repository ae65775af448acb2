/* Which 4 KiB pages of mallard's segments are resident at a process's exit.
 * Preloaded after the allocator, its destructor walks /proc/self/maps, and for
 * every anonymous read-write mapping of 4 MiB or more prints one line per
 * 4 MiB segment that has resident pages: its resident KiB, then one group of
 * 16 marks per 64 KiB page ('#' resident, '.' not). Not part of the build:
 *   cc -O2 -shared -fPIC bench/mincore_at_exit.c -o /tmp/mincore_at_exit.so
 *   LD_PRELOAD="build/src/libmallard.so /tmp/mincore_at_exit.so" PROGRAM...
 * (DESIGN.md, "Dirty pages go back to the class they last held"). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int out = -1;
static char maps[1 << 20];

__attribute__((constructor)) static void keep_stderr(void) { out = dup(2); }

static void report_segment(unsigned long start, const unsigned char* resident, size_t pages) {
  char line[1200];
  size_t used = 0, total = 0;
  for (size_t i = 0; i < pages; i++) {
    if (i % 16 == 0) line[used++] = ' ';
    line[used++] = (resident[i] & 1) ? '#' : '.';
    total += resident[i] & 1;
  }
  line[used] = 0;
  if (total) dprintf(out, "seg@%lx %zu KiB:%s\n", start, total * 4, line);
}

__attribute__((destructor)) static void report(void) {
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0 || out < 0) return;
  size_t used = 0;
  ssize_t n;
  while (used + 1 < sizeof maps && (n = read(fd, maps + used, sizeof maps - 1 - used)) > 0) used += (size_t)n;
  close(fd);
  maps[used] = 0;
  char* save;
  for (char* l = strtok_r(maps, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    unsigned long a, b;
    char perm[8];
    if (sscanf(l, "%lx-%lx %7s", &a, &b, perm) != 3) continue;
    if (strcmp(perm, "rw-p") || strchr(l, '/') || strchr(l, '[') || b - a < (4ul << 20)) continue;
    size_t pages = (b - a) / 4096;
    unsigned char* resident = malloc(pages);
    if (resident == NULL) continue;
    if (mincore((void*)a, b - a, resident) == 0) {
      for (size_t seg = 0; seg * 1024 < pages; seg++) {
        size_t count = pages - seg * 1024 < 1024 ? pages - seg * 1024 : 1024;
        report_segment(a + (seg << 22), resident + seg * 1024, count);
      }
    }
    free(resident);
  }
}
