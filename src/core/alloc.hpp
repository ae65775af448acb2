// The fast paths: malloc and free of small blocks in a few instructions, with
// everything else out of line in heap.cpp. This is the file to read to follow
// `malloc(24)`:
//   malloc(24) -> heap->direct[(24+7)/8] is the current page of class 24
//              -> pop page->free; if it is empty, malloc_generic()
//                 refills.
//   free(p)    -> the small-page table's entry for p's 4 MiB chunk, plus
//                 p's page index, is the page's key and the descriptor's
//                 offset from the table (segment.hpp)
//              -> the page's owner is this thread (its thread pointer, one
//                 load from %fs:0): check the block boundary and the free
//                 key, push on page->free, used--;
//              -> otherwise, a medium block of this thread (its chunk's
//                 entry says medium) takes the same steps with the page
//                 found from the pointer; anything else goes to
//                 free_slow(): another thread's block, a large block, or an
//                 invalid pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/config.hpp"
#include "core/segment.hpp"
#include "core/types.hpp"
#include "os/os.hpp"

namespace mallard {

// This thread's heap (initial-exec TLS: one fs-relative load). Points at
// g_empty_heap until the thread's first allocation.
extern constinit thread_local Heap* tls_heap;

// (size first: it arrives in the first argument register and stays there.)
// calloc's slow path passes the bytes to clear, malloc's 0.
void* malloc_generic(size_t size, Heap* heap, size_t zeroed_bytes = 0);  // heap.cpp
void* malloc_aligned(size_t size, size_t alignment);           // heap.cpp
void free_slow(void* p, const char* what);                    // heap.cpp
void free_other_slow(Page* page, Block* block, uintptr_t key, const char* what);  // heap.cpp
size_t usable_size_slow(const void* p, const char* what);      // heap.cpp

// Clears the first `bytes` of a class block for calloc: up to 128 bytes by
// two overlapping runs of fixed-size stores from either end of the bytes
// rounded up to 8 (class sizes are multiples of 8, and every block holds
// 16), past that memset. For calloc(1, 24) the call into libc's memset cost
// more than the clearing, and a loop of 8-byte stores compiles to `rep
// stos`, slower still at that size (DESIGN.md "calloc clears small blocks
// inline").
MALLARD_INLINE void zero_block(void* block, size_t bytes) {
  auto* p = static_cast<char*>(block);
  size_t n = (bytes + 7) & ~size_t{7};
  if (n <= 16) {
    __builtin_memset(p, 0, 16);
  } else if (n <= 32) {
    __builtin_memset(p, 0, 16);
    __builtin_memset(p + n - 16, 0, 16);
  } else if (n <= 64) {
    __builtin_memset(p, 0, 32);
    __builtin_memset(p + n - 32, 0, 32);
  } else if (n <= 128) {
    __builtin_memset(p, 0, 64);
    __builtin_memset(p + n - 64, 0, 64);
  } else {
    memset(p, 0, bytes);
  }
}

// Pops a block of `page`, or returns nullptr. One list: the owner's frees
// push on it, so the block freed last comes first (LIFO: its lines are
// likely still in cache, and a program that frees and allocates one block at
// a time keeps reusing the same one instead of walking the page), and a
// malloc that finds no block freed since the page was carved takes the next
// carved one with the same single test (kv: a second list for the owner's
// frees cost 6 instructions a malloc; DESIGN.md "One free list a page").
// For calloc (kZeroed), a block whose first `bytes` read as zero: a block
// carved from memory that reads as zero (free_is_zero: a fresh mapping, or
// purged) and not handed out since (its free key is still 0) is zero
// already but for its link word; any other is cleared. Freshly carved
// memory is where a program's growing tables come from, and clearing it
// also faulted in pages the program might never touch (git's object tables;
// DESIGN.md "calloc does not clear what reads as zero").
template <bool kZeroed = false>
MALLARD_INLINE void* page_take(Page* page, size_t bytes = 0) {
  Block* block = page->free;
  // Never write g_empty_page (shared by every thread without a page).
  if (MALLARD_UNLIKELY(block == nullptr)) return nullptr;
  page->free = block->next;
  page->used++;
  if constexpr (kZeroed) {
    if (block->key == 0 && page->free_is_zero && os::purged_memory_reads_zero()) {
      block->next = nullptr;
      return block;
    }
  }
  block->key = 0;  // a live block must not look freed (see free_key_of)
  if constexpr (kZeroed) zero_block(block, bytes);
  return block;
}

MALLARD_INLINE void* malloc_fast(size_t size) {
  Heap* heap = tls_heap;
  if (MALLARD_LIKELY(size <= kDirectSizeMax)) {
    // Fast allocation: one table load, pop the page's free list; a single test.
    Page* page = heap->direct[(size + 7) >> 3];
    void* block = page_take(page);
    if (MALLARD_LIKELY(block != nullptr)) return block;
  } else if (size <= kMediumSizeMax) {
    // Up to 128 KiB: the class from a table (all classes here are multiples
    // of 128, so align16 changes nothing), then its current page.
    Page* page = heap->current[size_t{medium_size_class_of(size)} - kFirstQueueClass];
    void* block = page_take(page);
    if (MALLARD_LIKELY(block != nullptr)) return block;
  }
  // Everything else, including impossible sizes and the first allocation of
  // a thread (whose heap is g_empty_heap), goes to the slow path.
  return malloc_generic(size, heap);
}

// The page `heap` takes a block of `size` bytes (at most kMediumSizeMax)
// from: the one malloc_fast finds, without its tests (for calloc and
// aligned requests, whose sizes are known to be class sizes).
MALLARD_INLINE Page* class_page_for(Heap* heap, size_t size) {
  return size <= kDirectSizeMax ? heap->direct[(size + 7) >> 3]
                                : heap->current[size_t{medium_size_class_of(size)} - kFirstQueueClass];
}

// An aligned request (alignment a power of two, size and alignment within
// the size classes): the block malloc would hand out for the size rounded
// up to a multiple of the alignment, when it is aligned, which it is for
// every small class whose size is such a multiple (small pages are coloured
// by their class's power-of-two alignment); nullptr otherwise, and the slow
// path (malloc_aligned) finds a class that is. posix_memalign(4096, 4096),
// a storage stack's page buffer, took the slow path every time: 17 ns
// against tcmalloc's 9 (DESIGN.md "Aligned requests take malloc's block").
MALLARD_INLINE void* aligned_take_fast(size_t size, size_t alignment) {
  size_t want = (size + alignment - 1) & ~(alignment - 1);  // 0 for size 0, or past SIZE_MAX
  if (MALLARD_UNLIKELY(want - 1 >= kMediumSizeMax)) return nullptr;
  Page* page = class_page_for(tls_heap, want);
  uintptr_t next = reinterpret_cast<uintptr_t>(page->free);
  // (g_empty_page's list is empty: nullptr fails the first test.)
  if (MALLARD_LIKELY(next != 0 && (next & (alignment - 1)) == 0)) return page_take(page);
  return nullptr;
}

// realloc's new block when it moves `copy_bytes` into it: a medium block
// carved from memory not resident yet comes with the pages those bytes will
// fill populated (page_extend). (g_empty_heap, shared by threads without a
// heap, is never written: their first block comes from the slow path.)
MALLARD_INLINE void* malloc_to_copy_into(size_t size, size_t copy_bytes) {
  Heap* heap = tls_heap;
  if (size <= kSmallSizeMax || size > kMediumSizeMax || heap == &g_empty_heap) return malloc_fast(size);
  heap->realloc_copy_bytes = static_cast<uint32_t>(copy_bytes);
  void* block = malloc_fast(size);
  heap->realloc_copy_bytes = 0;
  return block;
}

// calloc of a small or medium size (at most kMediumSizeMax): malloc_fast's
// page, and a block that reads as zero (page_take<true>).
MALLARD_INLINE void* calloc_fast(size_t size) {
  Heap* heap = tls_heap;
  Page* page = class_page_for(heap, size);
  if (void* block = page_take<true>(page, size)) return block;
  return malloc_generic(size, heap, size);
}

// Is p the start of a block carved in this page? One multiplication and one
// compare test both offset % block_size == 0 and offset / block_size <
// capacity (see SizeClassTable::magic). The offset is taken in 32 bits (pages
// are smaller than 4 GiB; a pointer below start wraps to an offset beyond
// every page and fails).
// `carved_limit` is the page's: any thread reads it atomically, the owner
// (its only writer) plainly.
MALLARD_INLINE bool page_is_block_start(const Page* page, const void* p, uint64_t carved_limit) {
  uint32_t offset = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)) -
                    static_cast<uint32_t>(reinterpret_cast<uintptr_t>(page->start));
  return uint64_t{offset} * page->block_magic < carved_limit;
}

MALLARD_INLINE bool page_is_block_start(const Page* page, const void* p) {
  return page_is_block_start(page, p, page->carved_limit);
}

// The page of a block just freed became empty. (It takes the block: the
// fast path then needs no register for the page's own address.)
void page_now_empty_slow(void* freed_block);  // heap.cpp

// Can the owner push `block` on `page` without a second look? The page
// belongs to this thread's heap and needs no attention (local_owner holds
// this thread's thread pointer: both in one test), the block is a block
// boundary, and it is not free already (its key is not there).
MALLARD_INLINE bool page_takes_owner_free(const Page* page, const Block* block, uintptr_t key) {
  return MALLARD_LIKELY(page->local_owner == this_thread_pointer()) &&
         MALLARD_LIKELY(page_is_block_start(page, block, page->carved_limit.owner_load())) && MALLARD_LIKELY(block->key != key);
}

MALLARD_INLINE void page_push_free(Page* page, Block* block, uintptr_t key) {
  block->next = page->free;
  block->key = key;
  page->free = block;
  // An empty page at the head of its queue stays (see page_now_empty); only
  // one further back needs the slow path to decide.
  if (MALLARD_UNLIKELY(--page->used == 0) && page->prev != nullptr) page_now_empty_slow(block);
}

// The descriptor of the medium page holding addr (a medium segment's):
// the segment, plus the descriptors' offset, plus the page's index (bits
// 20-21) times sizeof(Page).
MALLARD_INLINE Page* medium_page_at(uintptr_t addr) {
  constexpr uintptr_t kPageBits = ((kSegmentSize >> kMediumPageShift) - 1) << kPageShiftInArray;
  uintptr_t index_bits = (addr >> (kMediumPageShift - kPageShiftInArray)) & kPageBits;
  return reinterpret_cast<Page*>((addr & ~kSegmentMask) + offsetof(Segment, slots) + index_bits);
}

// The key of the small page holding addr, whose chunk is inside the map: its
// chunk's small-page table entry plus the page's index (bits 16-21) times
// sizeof(Page). For a medium segment's chunk, kMediumEntry is set in it.
MALLARD_INLINE uintptr_t small_page_key(uintptr_t addr) {
  constexpr uintptr_t kPageBits = (kMaxPagesPerSegment - 1) << kPageShiftInArray;
  return g_small_pages.entries[addr >> kSegmentShift] + ((addr >> (kSmallPageShift - kPageShiftInArray)) & kPageBits);
}

MALLARD_INLINE Page* page_at_key(uintptr_t key) {
  return reinterpret_cast<Page*>(reinterpret_cast<uintptr_t>(&g_small_pages) + key);
}

// The page of a block known to be in a small or medium page (every block a
// remote free passed on is): free()'s way to it, without free()'s tests.
MALLARD_INLINE Page* paged_block_page(const Block* block) {
  auto addr = reinterpret_cast<uintptr_t>(block);
  uintptr_t key = small_page_key(addr);
  return MALLARD_LIKELY(!(key & kMediumEntry)) ? page_at_key(key) : medium_page_at(addr);
}

// Fast local free. A small block: the small-page table gives the key of the
// page holding p, its segment's entry plus the page's index (bits 16-21 of
// p) times sizeof(Page), and the descriptor is at that offset from the
// table. A block of a medium segment's chunk (kMediumEntry) takes the same
// steps with the page found from the pointer, inline (out of line, a call
// cost a malloc+free pair of 32 KiB 8 more instructions and sizes:32K 3%;
// DESIGN.md "The small-page table"). Another thread's block, or one of a
// full or emptied page, goes to free_other_slow with the page and key found
// here; what is not a block of a live page (a large block, an invalid
// pointer, an address past 47 bits) ends in free_slow.
MALLARD_INLINE void free_fast(void* p, const char* what) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  uintptr_t chunk = addr >> kSegmentShift;
  if (MALLARD_UNLIKELY(chunk >= kSegmentMapEntries)) return free_slow(p, what);
  uintptr_t key = small_page_key(addr);
  auto* page = page_at_key(key);
  auto* block = static_cast<Block*>(p);
  if (page_takes_owner_free(page, block, key)) return page_push_free(page, block, key);
  if (!(key & kMediumEntry)) return free_other_slow(page, block, key, what);  // not a medium segment's chunk
  page = medium_page_at(addr);
  key = free_key_of(page);
  if (MALLARD_LIKELY(page_takes_owner_free(page, block, key))) return page_push_free(page, block, key);
  free_other_slow(page, block, key, what);
}

// The descriptor of p's page, found the way free() finds it (past the map,
// the unowned all-zero one at key 0), and the block size it gives (redis
// asks for it on every zmalloc and zfree: the segment map's way took 9
// instructions more a call; DESIGN.md "malloc_usable_size finds its page as
// free does"): 0 for whatever is not a small or medium block of a live
// page: nullptr, a large or extent block, a pointer mallard never handed out
// (a chunk without small pages has entry 0 and lands on an all-zero
// descriptor, and a page never handed out has block_size 0).
MALLARD_INLINE const Page* pointer_page(const void* p) {
  if (MALLARD_UNLIKELY((reinterpret_cast<uintptr_t>(p) >> kSegmentShift) >= kSegmentMapEntries)) return page_at_key(0);
  return paged_block_page(static_cast<const Block*>(p));
}
// Whether a descriptor from pointer_page is a class page's (live or never
// handed out: then its block_size is 0).
MALLARD_INLINE bool is_class_page(const Page* page) { return (page->flags & ~kPageInFull) == 0; }
MALLARD_INLINE size_t class_block_size(const void* p) {
  const Page* page = pointer_page(p);
  return MALLARD_LIKELY(is_class_page(page)) ? page->block_size : 0;
}

// malloc_usable_size: a class block's size inline, the rest in the slow path.
// `what` names the call in the report of a pointer that is not a live block.
MALLARD_INLINE size_t usable_size(const void* p, const char* what = "malloc_usable_size") {
  size_t size = class_block_size(p);
  return MALLARD_LIKELY(size != 0) ? size : usable_size_slow(p, what);
}

}  // namespace mallard
