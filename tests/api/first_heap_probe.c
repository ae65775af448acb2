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

/* Blocks borrowed by a class: what they have over its size stays within
 * about one OS page (255 units of 16 bytes, each block's excess rounded up),
 * the least a page of the class's own would keep resident. */
enum { kBorrowWasteBound = 255 * 16 };

int main(void) {
  void* lender = mallard_malloc(64);
  /* A thread started now, with no exited thread's heap to adopt, makes a
   * heap of its own, the process's second. */
  int second_heap_ok = 0;
  if (!run_and_join(second_heap_check, &second_heap_ok)) return fail("pthread_create failed", NULL);
  if (!second_heap_ok) return fail("a second thread's heap borrowed", NULL);

  /* A small class without a page takes a carved free block of a larger
   * class, up to twice its size and aligned as its own blocks must be. */
  void* b48 = mallard_malloc(48);
  if (!same_page(b48, lender) || mallard_malloc_usable_size(b48) != 64) return fail("48 B did not borrow a 64 B block", b48);
  /* With no larger class's block within twice its size, it takes one from
   * a page of the power of two above it, 32 B, which it makes. */
  void* b24 = mallard_malloc(24);
  if (same_page(b24, lender) || mallard_malloc_usable_size(b24) != 32) return fail("24 B did not take a 32 B block", b24);
  /* 16 B finds the 32 B page's free blocks, 16-aligned. */
  void* b16 = mallard_malloc(16);
  if (!same_page(b16, b24) || mallard_malloc_usable_size(b16) != 32 || (uintptr_t)b16 % 16 != 0) {
    return fail("16 B did not borrow a 32 B block", b16);
  }
  /* 40 B, whose blocks need 8-byte alignment only, borrows 64 B (48 B has
   * no page: it borrowed too). */
  void* b40 = mallard_malloc(40);
  if (!same_page(b40, lender) || mallard_malloc_usable_size(b40) != 64) return fail("40 B did not borrow a 64 B block", b40);
  /* Classes up to 4 KiB share pages too: 1,152 B takes a block of a 2 KiB
   * page, and 1,280 B borrows the next one, where each kept a page of its
   * own when only classes up to 1 KiB shared. */
  void* b1152 = mallard_malloc(1152);
  if (mallard_malloc_usable_size(b1152) != 2 * kKiB) return fail("1152 B did not take a 2 KiB block", b1152);
  void* b1280 = mallard_malloc(1280);
  if (!same_page(b1280, b1152) || mallard_malloc_usable_size(b1280) != 2 * kKiB) {
    return fail("1280 B did not borrow a 2 KiB block", b1280);
  }
  /* An aligned request never borrows: 96 B at 32 takes a 96 B block, where
   * malloc(96) took a block of 128 B's page. */
  void* b96 = mallard_malloc(96);
  if (mallard_malloc_usable_size(b96) != 128) return fail("96 B did not take a 128 B block", b96);
  void* aligned = NULL;
  if (mallard_posix_memalign(&aligned, 32, 96) != 0) return fail("posix_memalign(32, 96) failed", NULL);
  if (same_page(aligned, b96) || mallard_malloc_usable_size(aligned) != 96 || (uintptr_t)aligned % 32 != 0) {
    return fail("an aligned 96 B request borrowed", aligned);
  }
  memset(b48, 0x5A, 64); /* a borrowed block's whole usable size is the caller's */
  memset(b24, 0x5A, 32);

  /* A class keeps borrowing until its excess reaches the bound, then takes
   * a page of its own: 56 B borrows 64 B blocks (8 B over, one unit each),
   * 64 B's page carving more as it needs, and its own page comes within 255
   * borrows. */
  static void* b56[300];
  size_t excess = 0;
  int own = -1;
  for (int i = 0; i < 300 && own < 0; ++i) {
    b56[i] = mallard_malloc(56);
    size_t usable = mallard_malloc_usable_size(b56[i]);
    if (usable < 56 || usable > 112) return fail("56 B took a block under its size or over twice it", b56[i]);
    if (usable == 56) own = i;
    excess += usable - 56;
  }
  if (own < 0 || own > 255) return fail("56 B borrowed more than 255 times", b56[own < 0 ? 299 : own]);
  if (own == 0) return fail("56 B took a page of its own at once", b56[0]);
  if (excess > kBorrowWasteBound) return fail("56 B borrowed past its bound", b56[own]);
  void* b56_next = mallard_malloc(56);
  if (mallard_malloc_usable_size(b56_next) != 56) return fail("56 B borrowed again after its own page", b56_next);
  for (int i = 0; i <= own; ++i) mallard_free(b56[i]);
  mallard_free(b56_next);

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
  void* rest[] = {lender, b48, b24, b16, b40, b1152, b1280, b96, aligned, b4k, b128, b112};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; ++i) mallard_free(rest[i]);
  return 0;
}
