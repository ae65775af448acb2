/* A small or medium segment is never placed below 4 GiB (segment.hpp,
 * SmallPageTable; DESIGN.md "free(NULL) reads no page of its own"). The
 * small-page table's entries for the chunks below 4 GiB double as the
 * descriptors that free() reads for a pointer of no small page, NULL's
 * included, and must stay zero: a segment registered there would make
 * them nonzero, and free(NULL) or a foreign pointer would then read a
 * descriptor that looks owned. The kernel places a mapping there only once
 * the address space above is used up, and mallard then treats the mapping
 * as out of memory.
 *
 * This program uses the address space above 4 GiB up (PROT_NONE,
 * MAP_NORESERVE reservations, which cost no memory), then asks for a
 * medium block (this process's first, so it needs a new medium segment)
 * and for a new thread's first small block (a new heap in a segment of its
 * own). Each must fail with ENOMEM. A large block, which no table entry
 * describes, may be placed low and must work, and so must a grown block
 * (an extent segment's, whose entry is left out there). free(NULL) must
 * stay a no-op. After the reservations go, the same requests must succeed.
 * Exits 0 when all hold, else prints what did not and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FOUR_GIB ((uintptr_t)1 << 32)
#define MAX_RESERVATIONS 4096

static struct {
  void* addr;
  size_t size;
} reservations[MAX_RESERVATIONS];
static int reservation_count;

/* Reserves every gap above 4 GiB, largest first: the kernel's top-down
 * placement puts each request in the highest gap that fits, and a request
 * that lands below 4 GiB means no gap above fits it. Down to single pages:
 * the kernel aligns anonymous mappings of 2 MiB and more to 2 MiB, so a
 * request of 4 MiB needs a gap of 6 MiB, and the gaps it leaves are filled
 * by smaller requests. */
static int reserve_above_4gib(void) {
  for (size_t size = (size_t)1 << 46; size >= 4096;) {
    void* p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || (uintptr_t)p < FOUR_GIB) {
      if (p != MAP_FAILED) munmap(p, size);
      size >>= 1;
      continue;
    }
    if (reservation_count == MAX_RESERVATIONS) return -1;
    reservations[reservation_count].addr = p;
    reservations[reservation_count].size = size;
    reservation_count++;
  }
  return 0;
}

static void release_reservations(void) {
  for (int i = 0; i < reservation_count; i++) munmap(reservations[i].addr, reservations[i].size);
  reservation_count = 0;
}

struct small_result {
  void* block;
  int error;
};

static void* first_small_block(void* arg) {
  struct small_result* result = arg;
  errno = 0;
  result->block = malloc(16);
  result->error = errno;
  if (result->block != NULL) memset(result->block, 0x5a, 16);
  return NULL;
}

static int failures;

static void expect(int condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "low_segment_refusal: %s\n", what);
    failures++;
  }
}

int main(void) {
  /* A small block first, so that this thread has its heap before the
   * address space is used up. */
  char* volatile early = malloc(24);
  expect(early != NULL, "the first small block failed");

  if (reserve_above_4gib() != 0) {
    fprintf(stderr, "low_segment_refusal: more than %d reservations needed\n", MAX_RESERVATIONS);
    return 1;
  }
  /* An 8 MiB probe must now land below 4 GiB: nothing above fits it. */
  void* probe = mmap(NULL, (size_t)8 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe == MAP_FAILED || (uintptr_t)probe >= FOUR_GIB) {
    fprintf(stderr, "low_segment_refusal: could not use up the address space above 4 GiB (probe at %p)\n", probe);
    return 1;
  }
  munmap(probe, (size_t)8 << 20);

  errno = 0;
  void* medium = malloc(100000);
  expect(medium == NULL, "a medium block was placed in a segment below 4 GiB");
  expect(medium != NULL || errno == ENOMEM, "a refused medium block did not set ENOMEM");

  struct small_result small = {NULL, 0};
  pthread_t thread;
  if (pthread_create(&thread, NULL, first_small_block, &small) == 0) {
    pthread_join(thread, NULL);
    expect(small.block == NULL, "a new thread's heap was placed in a segment below 4 GiB");
    expect(small.block != NULL || small.error == ENOMEM, "a refused small block did not set ENOMEM");
  } else {
    expect(0, "pthread_create failed with the address space above 4 GiB used up");
  }

  /* Large blocks have no table entry: one below 4 GiB is fine. */
  char* large = malloc((size_t)6 << 20);
  expect(large != NULL, "a large block failed below 4 GiB");
  if (large != NULL) {
    memset(large, 1, (size_t)6 << 20);
    free(large);
  }
  /* Nor does a grown block's extent segment there (its entry would be one
   * of the descriptors above): its realloc and free find it through the
   * segment map instead of the table (segment.cpp, extent_in_small_pages). */
  char* volatile no_block = NULL;
  char* grown = realloc(no_block, 20000);
  expect(grown != NULL, "a grown block failed below 4 GiB");
  if (grown != NULL) {
    expect((uintptr_t)grown < FOUR_GIB, "the grown block was not placed below 4 GiB");
    memset(grown, 3, 20000);
    char* regrown = realloc(grown, 30000);
    expect(regrown != NULL, "a grown block below 4 GiB did not grow");
    if (regrown != NULL) {
      expect(regrown[0] == 3 && regrown[19999] == 3, "a grown block below 4 GiB lost its bytes");
      expect(malloc_usable_size(regrown) >= 30000, "a grown block below 4 GiB has too small a usable size");
      free(regrown);
    } else {
      free(grown);
    }
  }
  free(NULL);
  free(medium);
  free(small.block);

  release_reservations();
  medium = malloc(100000);
  expect(medium != NULL, "a medium block failed after the address space was given back");
  if (medium != NULL) memset(medium, 2, 100000);
  free(medium);
  small.block = NULL;
  if (pthread_create(&thread, NULL, first_small_block, &small) == 0) {
    pthread_join(thread, NULL);
    expect(small.block != NULL, "a new thread's first small block failed after the address space was given back");
    free(small.block);
  }
  free(early);
  return failures == 0 ? 0 : 1;
}
