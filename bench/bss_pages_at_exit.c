/* Which pages of libmallard's writable data and .bss are resident at a
 * process's exit, by page index from the library's first mapping (compare
 * with `nm -S --numeric-sort build/src/libmallard.so` to see what lies on
 * each). Preloaded after the allocator, its destructor reads
 * /proc/self/pagemap (root: it compares page frame numbers) for the
 * library's writable mappings and the anonymous one after them (the .bss
 * beyond the file), and prints one line per present page, marked "zero"
 * where the kernel mapped its shared zero page, which RSS does not count.
 * Not part of the build:
 *   cc -O2 -shared -fPIC bench/bss_pages_at_exit.c -o /tmp/bss_pages_at_exit.so
 *   LD_PRELOAD="build/src/libmallard.so /tmp/bss_pages_at_exit.so" PROGRAM...
 * (DESIGN.md, "Small globals on one page"). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t pagemap_entry(int fd, uintptr_t address) {
  uint64_t entry = 0;
  if (pread(fd, &entry, sizeof entry, (off_t)(address / 4096 * sizeof entry)) != sizeof entry) return 0;
  return entry;
}

static const uint64_t kPresent = 1ull << 63, kFrameMask = (1ull << 55) - 1;

__attribute__((destructor)) static void report(void) {
  int fd = open("/proc/self/pagemap", O_RDONLY);
  FILE* maps = fopen("/proc/self/maps", "r");
  if (fd < 0 || maps == NULL) return;
  /* The zero page's frame: that of a page only ever read. */
  volatile char* probe = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return;
  (void)probe[0];
  uint64_t zero_frame = pagemap_entry(fd, (uintptr_t)probe) & kFrameMask;
  char line[512];
  uintptr_t base = 0;
  int in_library = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long low, high;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &low, &high, perms) != 3) continue;
    int library = strstr(line, "libmallard") != NULL;
    if (library && base == 0) base = low;
    int writable = perms[1] == 'w';
    int bss = in_library && !library && strchr(line, '/') == NULL;
    if ((library && writable) || bss) {
      for (uintptr_t page = low; page < high; page += 4096) {
        uint64_t entry = pagemap_entry(fd, page);
        if (!(entry & kPresent)) continue;
        fprintf(stderr, "page +0x%lx%s\n", (unsigned long)((page - base) / 4096),
                (entry & kFrameMask) == zero_frame ? " zero" : "");
      }
    }
    if (bss) break;
    in_library = library;
  }
  fclose(maps);
  close(fd);
}
