#include "core/heap.hpp"

#include <errno.h>
#include <pthread.h>

#include <bit>
#include <cstring>

#include "core/alloc.hpp"
#include "core/extent.hpp"
#include "core/init.hpp"
#include "core/large.hpp"
#include "core/options.hpp"
#include "core/orphan.hpp"
#include "core/page.hpp"
#include "core/purge.hpp"
#include "core/remote.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

namespace {
template <size_t N>
constexpr std::array<Page*, N> all_empty_pages() {
  std::array<Page*, N> slots{};
  for (auto& slot : slots) slot = &g_empty_page;
  return slots;
}
}  // namespace

constinit Heap g_empty_heap{.direct = all_empty_pages<kDirectSlots>(), .current = all_empty_pages<kQueueClassCount>()};
constinit thread_local Heap* tls_heap = &g_empty_heap;
constinit thread_local bool tls_thread_exiting = false;

uint8_t g_direct_class[kDirectSlots];
Lock g_heaps_lock;
Heap* g_all_heaps = nullptr;

namespace {

pthread_key_t g_heap_key;

// A heap lives in the header of a segment mapped for it, which becomes its
// first fresh segment of `host_kind`: small, or medium for a thread whose
// first request is medium, which would otherwise map a small segment it may
// never use (sizes:64K: 31 threads held 62 segments at the peak). Heaps are
// never freed: a heap whose thread exits is kept as an orphan and adopted by
// the next new thread, so a pointer to a heap (in a page) stays valid
// forever, and its segment is never given back (purge.cpp).
Heap* heap_create(SegmentKind host_kind) {
  Segment* host = segment_acquire_hosting_heap(host_kind);
  if (host == nullptr) return nullptr;
  Heap* heap = segment_hosted_heap(host, host_kind);
  heap->direct = all_empty_pages<kDirectSlots>();
  heap->current = all_empty_pages<kQueueClassCount>();
  host->fresh_next = nullptr;
  heap->fresh[static_cast<unsigned>(host_kind)] = host;
  {
    LockGuard guard(g_heaps_lock);
    static unsigned heaps_made = 0;
    heap->remote_slot = static_cast<uint8_t>(heaps_made++ % kOutgoingSlots);
    heap->next_all = g_all_heaps;
    g_all_heaps = heap;
  }
  stats_add(g_stats.heaps, 1);
  return heap;
}

// Makes the thread whose thread pointer is `owner` (0: none) the one whose
// free() takes the fast path into the heap's pages. Called by that thread
// as it takes the heap, or as it exits: its thread pointer may then go to a
// new thread, which must not find it in any page. (Pages with flags == 0,
// the only ones whose local_owner is set, are those in the class queues.)
void heap_set_owner(Heap* heap, uintptr_t owner) {
  heap->owner_thread = owner;
  for (unsigned c = 1; c < kClassCount; ++c) {
    for (Page* page = heap->queues[c].first; page != nullptr; page = page->next) page_set_flags(page, page->flags);
  }
}

MALLARD_NOINLINE Heap* heap_thread_init(const Heap* preferred, SegmentKind host_kind = SegmentKind::kSmall) {
  process_init();
  Heap* heap = orphan_pop_after_hand_over(preferred);
  if (heap == nullptr) heap = heap_create(host_kind);
  if (heap == nullptr) return nullptr;
  heap_set_owner(heap, this_thread_pointer());
  // Set the TLS pointer first: pthread_setspecific may itself allocate.
  tls_heap = heap;
  pthread_setspecific(g_heap_key, heap);
  return heap;
}

SegmentKind kind_of_class(unsigned size_class) {
  return class_size(size_class) <= kSmallSizeMax ? SegmentKind::kSmall : SegmentKind::kMedium;
}

// The dirty page to reuse for `size_class`: the most recently freed one that
// last held the same class, among the newest kScan, else the newest. A page is
// resident as far as any class ever carved it, so a page that cycles through
// classes ends up resident in full; one that keeps its class stays at that
// class's extent. (larson, where pages cycle between 39 classes: peak RSS
// median 41.5 -> 35.7 MiB over 15 runs; DESIGN.md.)
Page* dirty_page_for_class(const PageList* dirty, unsigned size_class) {
  constexpr int kScan = 32;
  int n = 0;
  for (Page* p = dirty->last; p != nullptr && n < kScan; p = p->prev, ++n) {
    if (p->size_class == size_class) return p;
  }
  return dirty->last;
}

// A free page of the right kind: a dirty one (its memory is warm and
// resident; see dirty_page_for_class), else the oldest clean one, else the
// next page of the heap's fresh segment, else a new segment. Pages of a new
// segment are handed out in order and their descriptors set up one at a time:
// pushing all 64 on the clean list at once wrote the second header page of
// every segment, 4 KiB more per thread (sizes:32B, 32 threads; DESIGN.md).
Page* heap_take_free_page(Heap* heap, SegmentKind kind, unsigned size_class) {
  unsigned k = static_cast<unsigned>(kind);
  PageList* dirty = &heap->free_dirty[k];
  PageList* clean = &heap->free_clean[k];
  Page* page = nullptr;
  bool taken_dirty = dirty->last != nullptr;
  if (taken_dirty) {
    page = dirty_page_for_class(dirty, size_class);
    page_list_remove(dirty, page);
    Segment* segment = page_segment(page);
    heap->dirty_bytes -= page_area_size(segment, page_index(page));
    segment->pages_dirty_free--;
  } else if (clean->first != nullptr) {
    page = clean->first;
    page_list_remove(clean, page);
  } else {
    Segment* segment = heap->fresh[k];
    if (segment == nullptr) {
      segment = segment_acquire(heap, kind);
      if (segment == nullptr) return nullptr;
      segment->fresh_next = nullptr;
      heap->fresh[k] = segment;
    }
    page = segment_take_fresh_page(segment);
    if (segment->pages_initialized == segment->page_count) heap->fresh[k] = segment->fresh_next;
  }
  Segment* segment = page_segment(page);
  segment->pages_in_use++;
  if (!taken_dirty) heap_note_cold_page_taken(heap);
  return page;
}

// A page for `size_class` at the front of its queue, with blocks to hand
// out: a page reused for its class keeps the blocks it listed (page_init),
// and only a page without any is carved (DESIGN.md "A reused page carves
// nothing while it has free blocks").
Page* heap_new_page(Heap* heap, unsigned size_class, bool aligned_start = false) {
  SegmentKind kind = kind_of_class(size_class);
  Page* page = heap_take_free_page(heap, kind, size_class);
  if (page == nullptr) return nullptr;
  if (kind == SegmentKind::kSmall && heap->small_pages_taken < UINT16_MAX) heap->small_pages_taken++;
  page_init(page, heap, size_class, aligned_start);
  queue_push_front(heap, size_class, page);
  if (page->free == nullptr) page_extend(page);
  return page;
}

}  // namespace

namespace {

// The first page, among the classes above `size_class` up to `limit` bytes
// whose size is a multiple of `alignment`, that has a free block: where a
// class without one of its own takes a block already carved and resident
// (larger_class_free_page, young_heap_lender).
Page* larger_class_page_with_free(Heap* heap, unsigned size_class, size_t limit, size_t alignment) {
  for (unsigned c = size_class + 1; c < kClassCount && class_size(c) <= limit; ++c) {
    if ((class_size(c) & (alignment - 1)) != 0) continue;
    Page* page = heap->queues[c].first;
    if (page != nullptr && page->free != nullptr) return page;
  }
  return nullptr;
}

// A medium class out of free blocks takes one of a larger class's (up to
// twice its size, medium too) before it carves memory of its own: a block of
// a class above is resident already, and a class's own carving is resident
// until its page empties. Where blocks move between classes (a buffer growing by
// realloc), each class otherwise kept its own high-water mark of blocks
// (regrow: DESIGN.md "Medium classes reuse freed blocks"); where sizes are
// random (churn), each class's count of live blocks wanders, and up to a
// quarter larger, the classes above were often out too (DESIGN.md "Medium
// classes borrow from classes up to twice their size").
Page* larger_class_free_page(Heap* heap, unsigned size_class) {
  size_t size = class_size(size_class);
  return larger_class_page_with_free(heap, size_class, 2 * size, 1);
}

// Walks the class's queue for a page with a free block; full pages leave the
// queue (flag kPageInFull) until one of their blocks is freed, so the walk
// never revisits them. A class of blocks up to 1 KiB carves more of the
// first page that can: a carving of 4 KiB holds four or more of its blocks,
// and with reuse first in every class larson ran 3% slower. A larger class
// carves only when no page of its queue has a freed block (and a medium
// class, when no class up to twice as large has one either): its carving
// makes a new OS page resident for every three blocks or fewer, and a page the
// class filled before gets its freed blocks back at the end of the queue,
// behind the page being carved (regrow, iopath: DESIGN.md "Medium classes
// reuse freed blocks", "Classes above 1 KiB reuse freed blocks before
// carving"). With a start_alignment, only pages whose blocks all are
// aligned to it (their first block and their spacing, see block_stride)
// qualify.
Page* queue_find_page(Heap* heap, unsigned size_class, size_t start_alignment) {
  bool medium = kind_of_class(size_class) == SegmentKind::kMedium;
  bool reuse_first = size_class >= kFirstQueueClass;
  Page* page = heap->queues[size_class].first;
  Page* expandable = nullptr;
  while (page != nullptr) {
    Page* next = page->next;
    if (start_alignment != 0 && (reinterpret_cast<uintptr_t>(page->start) | page->block_size) % start_alignment != 0) {
      page = next;
      continue;
    }
    if (page->free != nullptr) break;
    if (page->capacity < page->reserved) {
      if (!reuse_first) break;
      if (expandable == nullptr) expandable = page;
    } else {
      queue_remove(heap, size_class, page);
      page_set_flags(page, page->flags | kPageInFull);
    }
    page = next;
  }
  if (page == nullptr && medium && start_alignment == 0) {
    if (Page* larger = larger_class_free_page(heap, size_class)) return larger;
  }
  if (page == nullptr) page = expandable;
  if (page == nullptr) return nullptr;
  if (page->free == nullptr) page_extend(page);
  if (page != heap->queues[size_class].first) {
    queue_remove(heap, size_class, page);
    queue_push_front(heap, size_class, page);
  }
  return page;
}

// The process's first heap is young until it has taken a segment's worth of
// small pages, unless another thread's heap became its (adopted or
// absorbed). A program's main thread, as it starts, allocates a few blocks
// each of many sizes: the harness's child process touched 32 small classes,
// with about 20 KiB of small blocks live while its workload ran, and each
// class's page keeps at least one 4 KiB page resident. Only the first heap:
// with other threads' young heaps borrowing too, threadchurn's peak was a
// tenth higher (DESIGN.md "The first heap borrows while young"). Heaps are
// pushed on the front of the all-heaps list and never leave it, so the
// process's first heap is the one with no successor there.
bool heap_is_young(const Heap* heap) {
  bool first = heap->next_all == nullptr;
  return first && heap->small_pages_taken < kMaxPagesPerSegment && !heap->adopted && !heap->inherited;
}

// Whether to look for an orphan to absorb before taking a page that is not
// resident yet: this heap has no dirty free page of the class's kind, some
// thread has exited, and the heap is not young. A young first heap would
// take every page of the orphan for the one it needs and sit on them: the
// harness's main thread in threadchurn, which starts threads and takes a
// page now and then, absorbed orphans of 5-15 segments and neither drained
// the frees into them nor purged (DESIGN.md "The first heap borrows while
// young").
bool heap_should_absorb(const Heap* heap, unsigned size_class) {
  return !heap->inherited && !heap_is_young(heap) &&
         heap->free_dirty[static_cast<unsigned>(kind_of_class(size_class))].last == nullptr &&
         g_stats.orphaned_heaps.load(std::memory_order_relaxed) != 0;
}

// A class borrows until what its borrowed blocks have over its own size
// adds up to about one OS page (255 units of 16 bytes), the least a page of
// its own keeps resident; then it takes a page. The bound counts blocks
// since freed too, so that one that allocates and frees a block at a time
// does not borrow through the slow path for as long as its heap is young
// (at most 255 times).
constexpr size_t kBorrowWasteUnit = 16;
constexpr unsigned kBorrowWasteUnits = UINT8_MAX;

// Whether `size_class` may borrow a block of `block_size` bytes; if so,
// counts what it loses.
bool young_heap_may_borrow(Heap* heap, unsigned size_class, size_t block_size) {
  size_t units = (block_size - class_size(size_class) + kBorrowWasteUnit - 1) / kBorrowWasteUnit;
  size_t total = heap->borrow_waste[size_class] + units;
  if (total > kBorrowWasteUnits) return false;
  heap->borrow_waste[size_class] = static_cast<uint8_t>(total);
  return true;
}

// In a young heap, a small class without a page to allocate from takes a
// free block of a larger class (up to twice its size, at most
// kYoungHeapLenderMax, and aligned as a block of its own class must be, to
// 16 bytes; an aligned request never borrows) before it takes a page. Only
// blocks the lender has carved are taken, so borrowing touches no memory.
// free, malloc_usable_size and realloc see an ordinary block of the larger
// class.
Page* young_heap_lender(Heap* heap, unsigned size_class) {
  if (size_class >= kYoungHeapBorrowerClasses || !heap_is_young(heap)) return nullptr;
  size_t size = class_size(size_class);
  size_t own_alignment = size & (~size + 1);
  size_t alignment = own_alignment < kMinBlockSize ? own_alignment : kMinBlockSize;
  size_t limit = 2 * size < kYoungHeapLenderMax ? 2 * size : kYoungHeapLenderMax;
  Page* lender = larger_class_page_with_free(heap, size_class, limit, alignment);
  if (lender == nullptr || !young_heap_may_borrow(heap, size_class, lender->block_size)) return nullptr;
  return lender;
}

// In a young heap, a small class with no page and no lender takes its block
// from a page of the power-of-two class at or above it (up to
// kYoungHeapLenderMax), made if need be, rather than from a page of its own:
// the classes between two powers of two then share one page, which later
// requests of them borrow from (young_heap_lender). Bounded like borrowing.
Page* young_heap_coarse_page(Heap* heap, unsigned size_class) {
  if (size_class >= kYoungHeapBorrowerClasses || !heap_is_young(heap)) return nullptr;
  unsigned coarse = size_class_of(std::bit_ceil(class_size(size_class)));
  if (coarse == size_class || !young_heap_may_borrow(heap, size_class, class_size(coarse))) return nullptr;
  Page* page = queue_find_page(heap, coarse, 0);
  return page != nullptr ? page : heap_new_page(heap, coarse);
}

}  // namespace

// The slow part of finding a block: a page of the class's queue, else one of
// an absorbed orphan's, else, for a request that may borrow, a larger class's
// page in a young heap (young_heap_lender), else a free page (a new page
// starts at colour 0 when a start_alignment is asked for).
Page* heap_find_page(Heap* heap, unsigned size_class, size_t start_alignment, bool may_borrow) {
  // Time-driven upkeep (purging, kept pages) every 64 slow paths: cheap
  // enough to read the clock, frequent enough for the purge delay.
  if ((++heap->slow_calls & 63) == 0) heap_purge_tick(heap, os::now_ms());
  Page* page = queue_find_page(heap, size_class, start_alignment);
  if (page == nullptr && heap_should_absorb(heap, size_class) && orphan_absorb(heap)) {
    page = queue_find_page(heap, size_class, start_alignment);
  }
  if (page != nullptr) return page;
  if (may_borrow) {
    if (Page* lender = young_heap_lender(heap, size_class)) return lender;
    if (Page* coarse = young_heap_coarse_page(heap, size_class)) return coarse;
  }
  return heap_new_page(heap, size_class, start_alignment != 0);
}

// A page whose last block was freed: keep it if it is one of the first two
// pages of its class's queue (the ones allocation is working from), so that
// a working set that hovers around a page boundary does not give back and
// re-carve a page each time; heap_release_kept_pages returns kept pages that
// stay unused for a purge delay. Any other empty page goes back at once, and
// so does every empty page of an orphan heap (no thread allocates from it).
namespace {
void page_now_empty(Heap* heap, Page* page) {
  PageQueue* q = &heap->queues[page->size_class];
  bool at_head = q->first == page || q->first->next == page;
  if (at_head && !heap->orphaned.load(std::memory_order_relaxed)) return;
  queue_remove(heap, page->size_class, page);
  heap_page_free(heap, page);
}
}  // namespace

// A free by the owning thread into a page that needs attention: the page was
// full (rejoin the queue) or is now empty.
void free_local_slow(Heap* heap, Page* page, Block* block) {
  block->next = page->free;
  block->key = free_key_of(page);
  page->free = block;
  uint32_t used = --page->used;
  if (page->flags & kPageInFull) {
    page_set_flags(page, page->flags & ~kPageInFull);
    queue_push_back(heap, page->size_class, page);
  }
  if (used == 0) page_now_empty(heap, page);
}

void heap_release_kept_pages(Heap* heap) {
  for (unsigned c = 1; c < kClassCount; ++c) {
    Page* first = heap->queues[c].first;
    if (first == nullptr) continue;
    Page* second = first->next;
    if (second != nullptr && second->used == 0) {
      queue_remove(heap, c, second);
      heap_page_free(heap, second);
    }
    if (first->used == 0) {
      queue_remove(heap, c, first);
      heap_page_free(heap, first);
    }
  }
}
void heap_process_init() {
  for (size_t slot = 0; slot < kDirectSlots; ++slot) {
    g_direct_class[slot] = static_cast<uint8_t>(request_class(slot == 0 ? 1 : slot * 8));
  }
  pthread_key_create(&g_heap_key, heap_thread_exit);
}

unsigned request_class(size_t size) {
  if (option(kOptAlign16) != 0 && size > 16) size = (size + 15) & ~size_t{15};
  return size_class_of(size);
}

Heap* heap_get(const Heap* preferred_orphan) {
  Heap* heap = tls_heap;
  if (MALLARD_UNLIKELY(heap == &g_empty_heap)) heap = heap_thread_init(preferred_orphan);
  return heap;
}

namespace {
// What every allocation slow path does first: take back the blocks other
// threads freed into this heap, and hand over the batches of this thread's
// remote frees that have been open for kBatchMaxAge slow paths (remote.cpp),
// so that a block waits a bounded time for its owner.
void heap_slow_path_upkeep(Heap* heap) {
  if (heap->remote_free.load(std::memory_order_relaxed) != nullptr) heap_drain_remote(heap);
  remote_batch_flush_aged(heap);
}

}  // namespace

void* heap_malloc_class(Heap* heap, unsigned size_class, size_t alignment, size_t zeroed_bytes) {
  heap_slow_path_upkeep(heap);
  // Small pages are coloured by multiples of their class's power-of-two
  // alignment, so any of their blocks is aligned for a class chosen as a
  // multiple of the alignment; medium pages by cache lines only (page_colour).
  size_t start_alignment = alignment > kCacheLine && kind_of_class(size_class) == SegmentKind::kMedium ? alignment : 0;
  Page* page = heap->queues[size_class].first;
  if (page == nullptr || page->free == nullptr || start_alignment != 0) {
    page = heap_find_page(heap, size_class, start_alignment, /*may_borrow=*/alignment == 0);
  }
  if (MALLARD_UNLIKELY(page == nullptr)) {
    errno = ENOMEM;
    return nullptr;
  }
  return zeroed_bytes != 0 ? page_take<true>(page, zeroed_bytes) : page_take(page);
}

MALLARD_NOINLINE void* malloc_generic(size_t size, Heap* heap, size_t zeroed_bytes) {
  if (MALLARD_UNLIKELY(size > kMaxRequest)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (MALLARD_UNLIKELY(heap == &g_empty_heap)) {
    bool medium = size > kSmallSizeMax && size <= kMediumSizeMax;
    heap = heap_thread_init(nullptr, medium ? SegmentKind::kMedium : SegmentKind::kSmall);
    if (heap == nullptr) {
      errno = ENOMEM;
      return nullptr;
    }
  }
  if (size > kMediumSizeMax) return large_malloc(size, 0, zeroed_bytes != 0);
  // A large heap's medium blocks come from the coalescing extents once its
  // class's current page has none free: each class keeps as many blocks as
  // it ever held at once, and a large heap's classes between them held
  // 57 MiB of free blocks out of 338 in churn:64K (DESIGN.md "Medium blocks
  // of large heaps in extents"). calloc keeps the classes, whose pages know
  // which blocks read as zero. A slow path like any other, it drains the
  // blocks other threads freed into the heap's pages and hands over its
  // aged batches: a thread whose mallocs all came here would otherwise
  // leave both waiting.
  if (size > kSmallSizeMax && zeroed_bytes == 0 && heap_holds_mb(heap, kOptExtentHeapMb)) {
    heap_slow_path_upkeep(heap);
    return extent_malloc(size, heap_holds_mb(heap, kOptPrefaultHeapMb) ? size : 0);
  }
  return heap_malloc_class(heap, request_class(size), 0, zeroed_bytes);
}

void* malloc_aligned(size_t size, size_t alignment) {
  if (alignment <= kMinBlockSize && (size <= kMinBlockSize || size % kMinBlockSize == 0 ||
                                     alignment <= kWordSize)) {
    return malloc_fast(size);
  }
  unsigned size_class = aligned_size_class_of(size, alignment);
  if (size_class == 0) return large_malloc(size, alignment, false);
  Heap* heap = heap_get();
  if (heap == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  return heap_malloc_class(heap, size_class, alignment);
}

namespace {

// A free once `block` is known to be a carved block of `page` (whose key is
// `key`): the double-free test, then the owner's push, or a remote free,
// most often an append to this thread's batch for the block's heap. A
// thread freeing another's blocks comes here from free_fast with the page
// it found (free_other_slow): 52 instructions a free, against 107 through
// free_slow and remote_free before, and mimalloc's 73
// (bench/remote_free_instructions.c; DESIGN.md "Measured changes").
// A block appended to a batch is not read here: its batch checks it when
// it is handed over (remote_batch_flush).
MALLARD_INLINE void free_block(Page* page, Block* block, uintptr_t key, const char* what) {
  Heap* heap = tls_heap;
  Heap* owner = page->heap;
  if (owner == heap) {
    if (block->key == key) report_double_free(what, block);
    return free_local_slow(heap, page, block);
  }
  if (remote_batch_append(heap, owner, page, block)) return;
  remote_free(page, block, key, what);
}

}  // namespace

MALLARD_NOINLINE void free_slow(void* p, const char* what) {
  if (p == nullptr) return;
  Segment* segment = segment_of(p);
  if (segment == nullptr) report_invalid_pointer(what, p);
  Page* page = page_of(segment, p);
  if (page->flags & kPageLarge) return large_free(segment, p, what);
  if (page->flags & kPageExtent) return extent_free(segment, p, what);
  if (page->flags & kPageUnused) {
    // The page was given back after its last block was freed: freeing a block
    // of it again is a double free (or the pointer was never a block).
    if (page->block_size != 0 && page_is_block_start(page, p)) report_double_free(what, p);
    report_invalid_pointer(what, p);
  }
  if (!page_is_block_start(page, p)) {
    uintptr_t offset = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(page->start);
    if (reinterpret_cast<uintptr_t>(p) >= reinterpret_cast<uintptr_t>(page->start) &&
        offset < size_t{page->capacity} * page->block_size) {
      report_interior_pointer(what, p, page->start + offset / page->block_size * page->block_size);
    }
    report_invalid_pointer(what, p);
  }
  free_block(page, static_cast<Block*>(p), free_key_of(page), what);
}

MALLARD_NOINLINE void free_other_slow(Page* page, Block* block, uintptr_t key, const char* what) {
  // An extent block (free_fast found its segment's descriptor): to its
  // shard, which checks it, without free_slow's segment lookup.
  if (page->flags & kPageExtent) return extent_free(extent_segment_at(block), block, what);
  // Not a carved block of a page in use (the small-page table's zeroed
  // descriptor for a chunk it does not map, a freed page, a pointer inside
  // a block): free_slow finds out which, and reports it.
  if (MALLARD_UNLIKELY((page->flags & kPageUnused) != 0 || !page_is_block_start(page, block))) {
    return free_slow(block, what);
  }
  free_block(page, block, key, what);
}

MALLARD_NOINLINE void page_now_empty_slow(void* freed_block) {
  Page* page = page_of_block(freed_block);
  page_now_empty(page->heap, page);
}

MALLARD_RARE size_t usable_size_slow(const void* p, const char* what) {
  if (p == nullptr) return 0;
  Segment* segment = segment_of(p);
  if (segment == nullptr) report_invalid_pointer(what, p);
  // Extents first: buffers that realloc grew, the most common blocks here.
  if (segment->kind == SegmentKind::kExtent) return extent_usable_size(segment, p, what);
  Page* page = page_of(segment, p);
  if (page->flags & kPageLarge) return large_usable_size(segment, p, what);
  report_invalid_pointer(what, p);
}

namespace {

// Purges what the heap's fresh segments populated ahead of the pages it
// handed out (segment_take_fresh_page).
void heap_purge_prefaulted(Heap* heap) {
  for (Segment* fresh : heap->fresh) {
    for (Segment* s = fresh; s != nullptr; s = s->fresh_next) segment_purge_prefaulted(s);
  }
}

}  // namespace

size_t heap_collect(Heap* heap, bool purge_all) {
  // Drain first: the drain sends other heaps' batch blocks home in this
  // heap's batches (remote.cpp, free_batch_block), which the flush hands over.
  heap_drain_remote(heap);
  remote_batch_flush(heap);
  heap_large_cache_flush(heap);
  for (unsigned c = 1; c < kClassCount; ++c) {
    for (Page* page = heap->queues[c].first; page != nullptr;) {
      Page* next = page->next;
      if (page->used == 0) {
        queue_remove(heap, c, page);
        heap_page_free(heap, page);
      }
      page = next;
    }
  }
  uint64_t now = purge_all ? ~uint64_t{0} : os::now_ms();
  if (purge_all) heap_purge_prefaulted(heap);
  return heap_purge(heap, now, purge_all ? 0 : heap_dirty_cap(heap));
}

void heap_thread_exit(void* arg) {
  auto* heap = static_cast<Heap*>(arg);
  if (tls_heap == heap) tls_heap = &g_empty_heap;
  tls_thread_exiting = true;
  heap_set_owner(heap, 0);
  heap_collect(heap, false);
  // Empty medium pages go back now rather than wait, dirty, for a thread to
  // adopt this heap: each counts 1 MiB against the dirty cap whatever its
  // blocks touched, and they held the memory of threads that had finished
  // in sizes:32K/64K and mixed:*-64k (peak RSS 5.42 -> 4.88 and 6.30 ->
  // 5.43 MiB; DESIGN.md). Unless they hold 60 KiB or less: that purge
  // cost more than the pages (heap_purge_medium_at_exit). Small pages stay:
  // an adopter reuses those warm (threadchurn). A heap that was adopted
  // before keeps its medium pages too: its threads come and go, and the
  // madvise plus the successor's refaults made a thread with one 32 KiB
  // block cost 142 us instead of 52 (DESIGN.md, "An adopted heap's exit
  // keeps its medium pages").
  if (!heap->adopted) heap_purge_medium_at_exit(heap);
  // What a large heap populated ahead goes back, adopted before or not:
  // the orphan may wait long for a thread, and an adopter populates the
  // next MiB it starts anyway (up to a MiB a segment kind; DESIGN.md
  // "Fresh pages of large heaps populated").
  heap_purge_prefaulted(heap);
  orphan_push(heap);
}

}  // namespace mallard
