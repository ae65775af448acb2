/* The process's first heap borrows while it is young, and absorbs an exited
 * thread's pages only once it is not (DESIGN.md "The first heap borrows
 * while young"). Only a process's first heap borrows, so this runs as a
 * program of its own, whose main thread makes that heap with its first
 * mallard_malloc. Exits 0 when every check holds, else prints the first that
 * failed and exits 1. mallard_* names only: it runs under the sanitizers
 * too. */
#include <mallard/mallard.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { kKiB = 1024, kYoungPages = 64 };

/* Small pages are 64 KiB: two blocks on one are blocks of one class. Each
 * heap has segments (4 MiB) of its own. */
static int same_page(const void* a, const void* b) { return ((uintptr_t)a >> 16) == ((uintptr_t)b >> 16); }
static uintptr_t segment_of(const void* p) { return (uintptr_t)p >> 22; }

static int fail(const char* what, void* p) {
  fprintf(stderr, "%s: %p, usable size %zu\n", what, p, p != NULL ? mallard_malloc_usable_size(p) : 0);
  return 1;
}

static int run_and_join(void* (*body)(void*), void* arg) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, body, arg) != 0) return 0;
  return pthread_join(thread, NULL) == 0;
}

/* A later thread's heap does not borrow: 56 B takes a page of its own though
 * 64 B's page has free blocks. */
static void* second_heap_check(void* result) {
  void* lender = mallard_malloc(64);
  void* b56 = mallard_malloc(56);
  *(int*)result = !same_page(b56, lender) && mallard_malloc_usable_size(b56) == 56;
  mallard_free(b56);
  mallard_free(lender);
  return NULL;
}

/* A thread that allocates a 4 KiB block, frees it and exits: its heap
 * becomes an orphan holding that block's page. */
static void* freed_4k;
static void* allocate_free_and_exit(void* unused) {
  freed_4k = mallard_malloc(4 * kKiB);
  mallard_free(freed_4k);
  return unused;
}

int main(void) {
  void* lender = mallard_malloc(48);
  /* A thread started now, with no exited thread's heap to adopt, makes a
   * heap of its own, the process's second. */
  int second_heap_ok = 0;
  if (!run_and_join(second_heap_check, &second_heap_ok)) return fail("pthread_create failed", NULL);
  if (!second_heap_ok) return fail("a second thread's heap borrowed", NULL);

  /* A small class without a page takes a carved free block of a larger
   * class, up to twice its size and aligned as its own blocks must be. */
  void* b32 = mallard_malloc(32);
  void* b24 = mallard_malloc(24);
  void* b16 = mallard_malloc(16); /* 32 has no page; 24 and 40 are not 16-aligned */
  void* aligned = NULL;
  if (mallard_posix_memalign(&aligned, 32, 32) != 0) return fail("posix_memalign(32, 32) failed", NULL);
  if (!same_page(b32, lender) || mallard_malloc_usable_size(b32) != 48) return fail("32 B did not borrow a 48 B block", b32);
  if (!same_page(b24, lender) || mallard_malloc_usable_size(b24) != 48) return fail("24 B did not borrow a 48 B block", b24);
  if (same_page(b16, lender) || mallard_malloc_usable_size(b16) != 16 || (uintptr_t)b16 % 16 != 0) {
    return fail("16 B borrowed a block not 16-aligned or more than twice its size", b16);
  }
  if (same_page(aligned, lender) || mallard_malloc_usable_size(aligned) != 32 || (uintptr_t)aligned % 32 != 0) {
    return fail("an aligned 32 B request borrowed", aligned);
  }
  memset(b32, 0x5A, 48); /* a borrowed block's whole usable size is the caller's */
  memset(b24, 0x5A, 48);

  /* A class borrows 32 times at most, then takes a page of its own. */
  void* b40[33];
  for (int i = 0; i < 33; ++i) b40[i] = mallard_malloc(40);
  for (int i = 0; i < 32; ++i) {
    if (!same_page(b40[i], lender) || mallard_malloc_usable_size(b40[i]) != 48) return fail("40 B did not borrow a 48 B block", b40[i]);
  }
  if (same_page(b40[32], lender) || mallard_malloc_usable_size(b40[32]) != 40) return fail("40 B borrowed a 33rd time", b40[32]);
  for (int i = 0; i < 33; ++i) mallard_free(b40[i]);

  /* A young first heap does not absorb an exited thread's pages: its next
   * page of 4 KiB blocks is its own, not the exited thread's. */
  if (!run_and_join(allocate_free_and_exit, NULL)) return fail("pthread_create failed", NULL);
  void* b4k = mallard_malloc(4 * kKiB);
  if (segment_of(b4k) == segment_of(freed_4k)) return fail("a young first heap absorbed an exited thread's pages", b4k);

  /* Past its youth (64 small pages taken: 8 KiB blocks, 8 a page), a page
   * the heap needs comes with the exited thread's pages, which it absorbs;
   * and 112 B finds the 128 B page's free blocks and takes a page of its
   * own anyway. */
  void* b128 = mallard_malloc(128);
  static void* pages[(kYoungPages + 8) * 8];
  int absorbed = 0;
  for (int i = 0; i < (kYoungPages + 8) * 8; ++i) {
    pages[i] = mallard_malloc(8 * kKiB);
    absorbed |= segment_of(pages[i]) == segment_of(freed_4k);
  }
  if (!absorbed) return fail("a heap past its youth did not absorb an exited thread's pages", pages[(kYoungPages + 8) * 8 - 1]);
  void* b112 = mallard_malloc(112);
  if (same_page(b112, b128) || mallard_malloc_usable_size(b112) != 112) return fail("112 B borrowed past the heap's youth", b112);

  for (int i = 0; i < (kYoungPages + 8) * 8; ++i) mallard_free(pages[i]);
  void* rest[] = {lender, b32, b24, b16, aligned, b4k, b128, b112};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; ++i) mallard_free(rest[i]);
  return 0;
}
