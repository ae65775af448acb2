/* libmallard's rare code (MALLARD_RARE, MALLARD_COLD: error reports,
 * statistics, option text, fork, realloc and its extents, large blocks,
 * posix_memalign and the legacy entry points) is a mapping of its own
 * (src/rare_text.ld; DESIGN.md "Rare code in a mapping of its own"): the
 * kernel maps up to 16 pages of a file around each fault, but only within
 * the faulting mapping, so a process that runs none of it keeps none of its
 * pages resident.
 *
 * This program finds the library's two executable mappings, checks that
 * malloc is in the first and mallard_stats_print in the second, runs the
 * paths every program runs (small and medium blocks, calloc, the usable
 * size, frees from another thread, threads that exit with blocks live, a
 * page's worth of purges, aligned_alloc, which C++ programs' aligned new
 * reaches from their start-up on), and checks that the rare mapping has
 * nothing resident; then it runs rare code (statistics, realloc growth) and
 * checks that the rare mapping is what became resident. Exits 1 with the
 * reason on any failure. */
#define _GNU_SOURCE
#include <link.h>
#include <mallard/mallard.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout_probe_support.h"

static uintptr_t hot_start, hot_end, rare_start, rare_end;

static int find_text_segments(struct dl_phdr_info* info, size_t size, void* unused) {
  (void)size, (void)unused;
  if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libmallard") == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
    uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
    if (hot_start == 0) {
      hot_start = start, hot_end = end;
    } else if (rare_start == 0) {
      rare_start = start, rare_end = end;
    }
  }
  return 1;
}

static int inside(uintptr_t address, uintptr_t start, uintptr_t end) { return address >= start && address < end; }

/* Small and medium blocks (large ones are rare code). */
static const size_t kHandedSizes[] = {8, 24, 100, 640, 1500, 4096, 9000, 40000};

static void common_paths(void) {
  malloc_and_calloc_sizes_up_to(128 * 1024);
  hand_over_blocks(kHandedSizes, sizeof kHandedSizes / sizeof kHandedSizes[0], 3);
  for (size_t alignment = 16; alignment <= 4096; alignment *= 4) {
    void* aligned = aligned_alloc(alignment, 3 * alignment);
    if (aligned == NULL) abort();
    free(aligned);
  }
  /* Past the purge delay, so that freed pages are purged on the way. */
  for (int round = 0; round < 3; ++round) {
    usleep(300 * 1000);
    void* blocks[64];
    for (int i = 0; i < 64; ++i) blocks[i] = malloc(2000 + (size_t)i * 500);
    for (int i = 0; i < 64; ++i) free(blocks[i]);
  }
}

int main(void) {
  dl_iterate_phdr(find_text_segments, NULL);
  if (hot_start == 0 || rare_start == 0) {
    fprintf(stderr, "libmallard has no second executable segment (rare code not apart)\n");
    return 1;
  }
  uintptr_t malloc_at = (uintptr_t)&malloc, stats_print_at = (uintptr_t)&mallard_stats_print;
  if (!inside(malloc_at, hot_start, hot_end) || !inside(stats_print_at, rare_start, rare_end)) {
    fprintf(stderr, "malloc at %#lx is not in [%#lx, %#lx) or mallard_stats_print at %#lx not in [%#lx, %#lx)\n",
            (unsigned long)malloc_at, (unsigned long)hot_start, (unsigned long)hot_end, (unsigned long)stats_print_at,
            (unsigned long)rare_start, (unsigned long)rare_end);
    return 1;
  }
  common_paths();
  long kib = mapping_resident_kib(rare_start);
  if (kib != 0) {
    fprintf(stderr, "the rare code's mapping has %ld KiB resident after the common paths (-1: not found)\n", kib);
    return 1;
  }
  FILE* sink = fopen("/dev/null", "w");
  if (sink == NULL) return 1;
  mallard_stats_print(sink, "");
  fclose(sink);
  char* buffer = NULL;
  for (size_t length = 16; length < 100000; length += length / 4 + 7) {
    buffer = realloc(buffer, length);
    if (buffer == NULL) abort();
    buffer[length - 1] = 1;
  }
  free(buffer);
  kib = mapping_resident_kib(rare_start);
  if (kib <= 0) {
    fprintf(stderr, "the rare code's mapping has %ld KiB resident after running rare code: not the mapping it runs in\n", kib);
    return 1;
  }
  return 0;
}
