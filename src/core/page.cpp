#include "core/page.hpp"

#include "core/segment.hpp"
#include "core/size_class.hpp"
#include "core/heap.hpp"
#include "os/os.hpp"

namespace mallard {

Page g_empty_page = {};

namespace {

// Page colouring. Every page area starts on an 8 KiB boundary, so without an
// offset the first (and hottest: a thread's first allocations) block of every
// page falls in the same L1 set and the same few L2 sets as every 4 KiB-aligned
// buffer the program touches. A program streaming through page-aligned I/O
// buffers then evicts its own small objects on every pass (the mixed:*-64k
// benchmark lost 36% of its time to one 16-byte block; see DESIGN.md). The
// offset varies with the page index and class and stays below
// kMaxColourSmall or kMaxColourMedium (config.hpp), which bounds the cost to
// a fraction of one block per page. In a small page it is a multiple of the
// block's own power-of-two alignment, so aligned requests can use any page.
// In a medium page (blocks above 8 KiB) it is a multiple of a cache line
// only: I/O buffers of 16-128 KiB aligned to 4 KiB put every page touch and
// their first line in one L1 set, which cost mixed:read-64k a third of its
// time (bench/io_ring.c: 101-115 ns per I/O, coloured 63-71, mimalloc
// 64-78). Aligned requests for medium classes take pages started at colour
// 0 instead (heap_find_page with a start alignment).
//
// A medium segment's page 0 starts inside the header's first OS page
// (first_page_offset): its colour, from 0, keeps its first block in that
// page, which the header has made resident already.
size_t page_colour(const Segment* segment, size_t index, unsigned size_class, size_t block_size) {
  size_t unit = block_size & (~block_size + 1);  // lowest set bit: the block alignment
  if (unit < kCacheLine || segment->kind == SegmentKind::kMedium) unit = kCacheLine;
  if (segment->kind == SegmentKind::kMedium && index == 0) {
    return unit * (size_class % ((kHeaderOsPage - first_page_offset(segment)) / unit));
  }
  size_t limit = segment->kind == SegmentKind::kMedium ? kMaxColourMedium : kMaxColourSmall;
  size_t choices = limit / unit;  // colours unit, 2*unit, ... choices*unit
  if (choices == 0) return 0;
  return unit * (1 + (index * 5 + size_class) % choices);
}

// The distance between blocks of a page. A medium class that is a multiple of
// 4 KiB gets one cache line more: its blocks would otherwise all start in the
// same L1 set, and those a multiple of 64 KiB apart in the same L2 sets too,
// so a thread cycling through a few such buffers and touching each of their
// pages evicts its own lines (mixed:*-64k, 8 jobs; DESIGN.md). The line is
// usable: malloc_usable_size reports it. Pages for aligned requests keep
// the class size, so that every block stays aligned.
size_t block_stride(const Segment* segment, size_t block_size, bool aligned_start) {
  bool aliasing = segment->kind == SegmentKind::kMedium && block_size % 4096 == 0;
  return aliasing && !aligned_start ? block_size + kCacheLine : block_size;
}

// The OS pages of a medium block carved from memory not resident yet (from
// `resident_end`, where the page's carving had reached) that are known to
// be written soon are faulted in with one system call rather than one fault
// per 4 KiB page as the writes reach them:
// - a block carved for realloc to move a block into (the heap's
//   realloc_copy_bytes) is written that far by the copy right away. A fault
//   costs 6-7 us on this machine's kernel; regrow, whose buffers move into
//   fresh blocks as they grow, took 13.5k faults a run and ran 4-9% faster
//   without most of them (DESIGN.md "realloc populates the fresh block it
//   copies into"). Only the copied bytes: what the program writes later may
//   never be written.
// - in a medium segment of a large heap (Segment::prefault), the whole
//   block, as the small pages of such a heap come a MiB at a time: a heap
//   of hundreds of MiB writes the blocks it carves. churn:64K's system time
//   went down by half (DESIGN.md "Fresh medium blocks of large heaps
//   populated").
void populate_fresh_block(const Page* page, uint8_t* block, uint8_t* resident_end) {
  constexpr uintptr_t kOsPage = 4096;
  size_t bytes = page_segment(page)->prefault ? page->block_size : static_cast<Heap*>(page->heap)->realloc_copy_bytes;
  if (bytes == 0) return;
  uintptr_t from = reinterpret_cast<uintptr_t>(block > resident_end ? block : resident_end);
  uintptr_t to = (reinterpret_cast<uintptr_t>(block) + bytes + kOsPage - 1) & ~(kOsPage - 1);
  from &= ~(kOsPage - 1);
  if (to > from) os::populate(reinterpret_cast<void*>(from), to - from);
}

}  // namespace

void page_init(Page* page, Heap* heap, unsigned size_class, bool aligned_start) {
  Segment* segment = page_segment(page);
  size_t index = page_index(page);
  size_t block_size = block_stride(segment, class_size(size_class), aligned_start);
  size_t area_size = page_area_size(segment, index);
  uint8_t* area = page_area_start(segment, index);
  // A page for aligned requests starts at colour 0, or, where the area is
  // not aligned (a medium segment's page 0), at its first multiple of the
  // largest alignment a class serves.
  size_t colour = aligned_start ? (kMaxClassAlignment - reinterpret_cast<uintptr_t>(area) % kMaxClassAlignment) % kMaxClassAlignment
                                : page_colour(segment, index, size_class, block_size);
  uint8_t* start = area + colour;
  page->heap = heap;
  page->remote_slot = heap->remote_slot;
  page->next = nullptr;
  page->prev = nullptr;
  // A dirty page that held this class with this layout before keeps the
  // blocks it carved, all free (a page is freed only when its last block
  // is), on its free lists: carving them again 4 KiB at a time cost a slow
  // path per block of a large class (BM_batch/4096, DESIGN.md "A page
  // reused for its class keeps its blocks").
  bool same_layout = page->is_dirty && page->size_class == size_class && page->block_size == block_size &&
                     page->start == start;
  page->is_dirty = 0;
  if (same_layout) {
    page_set_flags(page, 0);
    return;
  }
  page->free = nullptr;
  page->free_is_zero = 0;
  page->used = 0;
  page->size_class = static_cast<uint8_t>(size_class);
  page->block_size = static_cast<uint32_t>(block_size);
  page->block_magic = block_size == class_size(size_class) ? kSizeClasses.magic[size_class] : block_magic_of(block_size);
  page->carved_limit = 0;
  page->capacity = 0;
  page->start = start;
  page->reserved = static_cast<uint16_t>((area_size - colour) / block_size);
  page_set_flags(page, 0);
}

// Carves the next blocks of a page: those that end by the 4 KiB boundary at
// or below first + 4 KiB, at least one. Stopping at a boundary, rather than
// 4 KiB past a coloured start, keeps a page that serves a single block at one
// resident OS page instead of two (32 threads each holding a few blocks:
// 27.2 -> 23.2 KiB per thread; DESIGN.md). Only for a page with no free
// block: a page reused for its class serves the blocks it listed first
// (page_init), or each reuse would touch 4 KiB more (DESIGN.md "A reused
// page carves nothing while it has free blocks").
void page_extend(Page* page) {
  constexpr uintptr_t kExtendBytes = 4 * 1024;
  size_t size = page->block_size;
  size_t left = page->reserved - page->capacity;
  if (left == 0) return;
  uint8_t* first = page->start + size_t{page->capacity} * size;
  uintptr_t end = (reinterpret_cast<uintptr_t>(first) + kExtendBytes) & ~(kExtendBytes - 1);
  size_t count = (end - reinterpret_cast<uintptr_t>(first)) / size;
  if (count == 0) count = 1;
  if (count > left) count = left;
  // Thread the new blocks in address order, ahead of whatever is free.
  auto* block = reinterpret_cast<Block*>(first);
  for (size_t i = 0; i + 1 < count; ++i) {
    auto* next = reinterpret_cast<Block*>(first + (i + 1) * size);
    block->next = next;
    block->key = 0;
    block = next;
  }
  // The new blocks read as zero past their link word if no block was
  // carved over them since the memory was mapped or purged (and if purges
  // do zero it: page_take asks the OS layer). They go ahead of the list,
  // which callers leave empty (a list kept by page_init would hold blocks
  // freed before, whose keys tell them apart, and blocks carved before,
  // which the flag already describes).
  auto* segment_start = reinterpret_cast<uint8_t*>(page_segment(page));
  // Before the link word below is written: that write would fault its page in alone.
  if (size > kSmallSizeMax) populate_fresh_block(page, first, segment_start + page->touched_end);
  page->free_is_zero = (page->free == nullptr || page->free_is_zero) &&
                       static_cast<size_t>(first - segment_start) >= page->touched_end;
  block->next = page->free;
  block->key = 0;
  page->free = reinterpret_cast<Block*>(first);
  page->capacity = static_cast<uint16_t>(page->capacity + count);
  page->carved_limit = page->capacity * (size * page->block_magic);
  auto carved_end = static_cast<uint32_t>(first + count * size - segment_start);
  if (carved_end > page->touched_end) page->touched_end = carved_end;
}

namespace {

// What malloc's fast path reads for a class whose queue's first page
// changed: its entry in `current`, or the direct slots covering it (the
// sizes, slot*8, that map to it).
void fast_lookup_update(Heap* heap, unsigned size_class) {
  Page* page = heap->queues[size_class].first;
  if (page == nullptr) page = &g_empty_page;
  if (size_class >= kFirstQueueClass) {
    heap->current[size_class - kFirstQueueClass] = page;
    return;
  }
  size_t hi = class_size(size_class) / 8;
  for (size_t slot = hi; slot > 0 && g_direct_class[slot] == size_class; --slot) {
    heap->direct[slot] = page;
  }
  if (size_class == 1) heap->direct[0] = page;
}

}  // namespace

void queue_push_front(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  page->prev = nullptr;
  page->next = q->first;
  if (q->first != nullptr) q->first->prev = page; else q->last = page;
  q->first = page;
  fast_lookup_update(heap, size_class);
}

void queue_push_back(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  page->next = nullptr;
  page->prev = q->last;
  if (q->last != nullptr) q->last->next = page; else q->first = page;
  q->last = page;
  if (q->first == page) fast_lookup_update(heap, size_class);
}

void queue_remove(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  bool was_first = q->first == page;
  if (page->prev != nullptr) page->prev->next = page->next; else q->first = page->next;
  if (page->next != nullptr) page->next->prev = page->prev; else q->last = page->prev;
  page->next = page->prev = nullptr;
  if (was_first) fast_lookup_update(heap, size_class);
}

void page_list_push_back(PageList* list, Page* page) {
  page->next = nullptr;
  page->prev = list->last;
  if (list->last != nullptr) list->last->next = page; else list->first = page;
  list->last = page;
  ++list->count;
}

void page_list_remove(PageList* list, Page* page) {
  if (page->prev != nullptr) page->prev->next = page->next; else list->first = page->next;
  if (page->next != nullptr) page->next->prev = page->prev; else list->last = page->prev;
  page->next = page->prev = nullptr;
  --list->count;
}

}  // namespace mallard
