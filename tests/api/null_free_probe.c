/* free(NULL) makes no page of libmallard's data resident (DESIGN.md
 * "free(NULL) reads no page of its own"). free() finds a pointer's page
 * through the small-page table: NULL's chunk has entry 0, which leads to
 * the table's unowned descriptors. Entry 0 and the descriptor it leads to
 * now sit in the table's first page, next to the library's small globals,
 * which every process has resident; entry 0 sat two pages further on, and
 * every process that freed NULL, as C++ programs do all the time, paid a
 * page for it.
 *
 * This program counts the resident KiB of libmallard's writable data (its
 * read-write file mapping and the .bss mapping after it), frees NULL many
 * times, and counts again. Exits 0 when nothing was added, else prints the
 * KiB added and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The resident KiB of libmallard's read-write mapping and of the anonymous
 * mapping right after it (the .bss past the file's end). */
static long library_data_kib(void) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  static char line[4096];
  long kib = 0;
  int mappings = 0;  /* 1: in libmallard's rw mapping; 2: in the one after */
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long start, end;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3) {
      int library_rw = strstr(line, "libmallard") != NULL && strcmp(perms, "rw-p") == 0;
      mappings = library_rw ? 1 : mappings == 1 ? 2 : 0;
      continue;
    }
    long rss;
    if (mappings != 0 && sscanf(line, "Rss: %ld kB", &rss) == 1) kib += rss;
  }
  fclose(f);
  return kib;
}

int main(void) {
  /* The allocator set up (through a volatile: the compiler may drop a
   * malloc whose block is only freed), and what reading smaps allocates
   * allocated once. */
  void* volatile block = malloc(100);
  free(block);
  if (library_data_kib() <= 0) {
    fprintf(stderr, "libmallard's data mappings not found in /proc/self/smaps\n");
    return 1;
  }
  long before = library_data_kib();
  /* Through a volatile: the compiler drops a free of a constant NULL. */
  void* volatile null_pointer = NULL;
  for (int i = 0; i < 1000; ++i) free(null_pointer);
  long after = library_data_kib();
  if (after != before) {
    fprintf(stderr, "free(NULL) made %ld KiB of libmallard's data resident (%ld -> %ld)\n", after - before, before, after);
    return 1;
  }
  return 0;
}
