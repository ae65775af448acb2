/* mallard: a general-purpose memory allocator.
 *
 * The standard names (malloc, free, ...) are exported by libmallard.so and
 * libmallard.a; this header declares the mallard_-prefixed twins, which work
 * whether or not mallard is the process's malloc, plus the statistics and
 * configuration API.
 */
#ifndef MALLARD_MALLARD_H
#define MALLARD_MALLARD_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MALLARD_VERSION_MAJOR 0
#define MALLARD_VERSION_MINOR 1
#define MALLARD_VERSION_PATCH 0

/* "0.1.0" */
const char* mallard_version(void);

/* The C, POSIX and GNU allocation API, under mallard's own names. */
void* mallard_malloc(size_t size);
void mallard_free(void* ptr);
void* mallard_calloc(size_t count, size_t size);
void* mallard_realloc(void* ptr, size_t size);
void* mallard_reallocarray(void* ptr, size_t count, size_t size);
int mallard_posix_memalign(void** out, size_t alignment, size_t size);
void* mallard_aligned_alloc(size_t alignment, size_t size);
void* mallard_memalign(size_t alignment, size_t size);
void* mallard_valloc(size_t size);
void* mallard_pvalloc(size_t size);
size_t mallard_malloc_usable_size(const void* ptr);
void mallard_free_sized(void* ptr, size_t size);
void mallard_free_aligned_sized(void* ptr, size_t alignment, size_t size);

/* Returns every free page and cached span to the OS now; returns 1 if any
 * memory was released (glibc's malloc_trim contract). */
int mallard_trim(size_t pad);

/* Statistics, with jemalloc's meanings:
 *  allocated: bytes in live blocks, counted at their usable size;
 *  active:    bytes in pages that hold at least one live block;
 *  resident:  bytes of mallard's mappings that are backed by physical memory:
 *             the OS pages its blocks, free pages not yet purged, segment
 *             headers and thread heaps have touched;
 *  mapped:    bytes of address space mallard holds in active segments;
 *  metadata:  bytes used by mallard's own bookkeeping;
 *  retained:  bytes of address space kept mapped but purged (not resident). */
typedef struct mallard_stats {
  size_t allocated;
  size_t active;
  size_t resident;
  size_t mapped;
  size_t metadata;
  size_t retained;
  size_t purged_total;   /* bytes returned to the OS so far */
  size_t segments;       /* segments currently mapped */
  size_t threads;        /* thread heaps in use */
  size_t abandoned;      /* heaps of exited threads waiting for reuse */
} mallard_stats;

/* Fills *out; returns 0 (or EINVAL when out is NULL). */
int mallard_stats_get(mallard_stats* out);

/* Prints the statistics to `out` (stderr when NULL). opts: NULL or "" for
 * text, a string containing 'J' for JSON. Besides the fields above: for each
 * size class that has pages, the pages holding it, those with no free block,
 * and its blocks in use and carved (made so far; their memory has been
 * touched); the free pages still resident ("dirty"); the large blocks
 * ("large": live ones, their bytes, and the bytes past their ends that may
 * still be resident from a larger block's earlier use; freed ones cached for
 * reuse and their bytes that may be resident); and the blocks that realloc
 * grows, with a large heap's blocks of 8-128 KiB ("extents": bytes in live
 * blocks, and what their segments may hold resident, free space between
 * blocks included). */
void mallard_stats_print(FILE* out, const char* opts);

/* Current value of an option by name, as text ("250", "true"); NULL if the
 * name is unknown. Names are those of MALLARD_CONF. */
const char* mallard_option_get(const char* name);

/* Sets an option at run time ("purge_delay_ms", "250"); returns 0 on success,
 * EINVAL for an unknown name or a bad value (a warning is printed too). */
int mallard_option_set(const char* name, const char* value);

#ifdef __cplusplus
}
#endif

#endif /* MALLARD_MALLARD_H */
