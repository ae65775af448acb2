#include "core/segment.hpp"

#include <algorithm>
#include <cstring>

#include "core/options.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

Lock g_segments_lock;
Segment* g_segments = nullptr;

// Empty small/medium segments kept mapped (purged) for reuse by any heap, so
// that a program that frees and reallocates in waves does not pay mmap each
// time. Bounded by the segment_cache option.
Lock g_segment_cache_lock;

namespace {

// Segments are mapped apart from each other, each a VMA of its own, while
// fewer than this many are live. Packed into one VMA, a thread faulting in
// its new segment waited for every other thread's mmap and munmap: 32
// threads of sizes:32K, each mapping a medium segment and unmapping it at its
// exit, slept in the kernel 38-55 times a run, 1-27 times apart (DESIGN.md
// "Segments apart"). Past it they are packed again, so that a heap of many
// GiB stays far below the kernel's limit of VMAs a process may hold
// (vm.max_map_count, 65,530 by default).
constexpr size_t kApartSegments = 4096;  // live segments of any kind: 16 GiB of small and medium ones

os::Placement segment_placement() {
  return g_stats.segments.load(std::memory_order_relaxed) < kApartSegments ? os::Placement::kApart
                                                                          : os::Placement::kPacked;
}

Segment* g_cache = nullptr;
size_t g_cache_count = 0;
size_t g_cache_reserved = 0;  // places taken by segments being purged

// Takes one of the cache's places for a segment about to be purged outside
// the lock: every thread could otherwise find room, purge, and then find the
// cache full (32 threads exiting at once each paid a madvise before their
// munmap).
bool segment_cache_reserve() {
  LockGuard guard(g_segment_cache_lock);
  if (g_cache_count + g_cache_reserved >= static_cast<size_t>(option_segment_cache())) return false;
  ++g_cache_reserved;
  return true;
}

size_t chunk_index(const void* p) { return reinterpret_cast<uintptr_t>(p) >> kSegmentShift; }

void map_mark(const void* chunk_start, uint8_t mark) {
  g_segment_map[chunk_index(chunk_start)].store(mark, std::memory_order_release);
}

// A segment's entry in the small-page table: a small segment's descriptors'
// offset from the table, kMediumEntry for a medium or extent one, 0 once
// released.
void small_pages_mark(Segment* s, bool in_use) {
  uintptr_t entry = 0;
  if (in_use) entry = s->kind == SegmentKind::kSmall ? free_key_of(segment_page(s, 0)) : kMediumEntry;
  __atomic_store_n(&g_small_pages.entries[chunk_index(s)], entry, __ATOMIC_RELEASE);
}

void segments_link(Segment* s) {
  LockGuard guard(g_segments_lock);
  s->prev = nullptr;
  s->next = g_segments;
  if (g_segments != nullptr) g_segments->prev = s;
  g_segments = s;
}

void segments_unlink(Segment* s) {
  LockGuard guard(g_segments_lock);
  if (s->prev != nullptr) s->prev->next = s->next; else g_segments = s->next;
  if (s->next != nullptr) s->next->prev = s->prev;
}

// Descriptors are set up by the heap as it hands pages out (heap.cpp). One
// not set up yet is all zeros: no owner, nothing carved, so free() reports a
// pointer into its page as invalid. A fresh mapping is zero already; a cached
// segment's descriptors are zero beyond those it used before.
void pages_init(Segment* s, SegmentKind kind, bool fresh_mapping, bool hosts_heap) {
  if (!fresh_mapping) std::memset(static_cast<void*>(s->slots), 0, sizeof(Page) * (s->first_slot + s->pages_initialized));
  s->first_slot = hosts_heap && kind == SegmentKind::kSmall ? kHeapSlots : 0;
  s->hosts_heap = hosts_heap;
  s->kind = kind;
  s->page_shift = kind == SegmentKind::kSmall ? kSmallPageShift : kMediumPageShift;
  s->page_count = static_cast<uint16_t>(kSegmentSize >> s->page_shift);
  s->pages_initialized = 0;
  s->pages_in_use = 0;
  s->pages_dirty_free = 0;
}

}  // namespace

size_t first_page_offset(const Segment* segment) {
  if (segment->kind != SegmentKind::kMedium) return kSegmentHeaderSize;
  size_t slots = segment->hosts_heap ? hosted_heap_slot(SegmentKind::kMedium) + kHeapSlots : kMediumPagesPerSegment;
  return offsetof(Segment, slots) + slots * sizeof(Page);
}

uint8_t* page_area_start(Segment* segment, size_t index) {
  auto* base = reinterpret_cast<uint8_t*>(segment) + (index << segment->page_shift);
  return index == 0 ? base + first_page_offset(segment) : base;
}

size_t page_area_size(Segment* segment, size_t index) {
  size_t size = size_t{1} << segment->page_shift;
  return index == 0 ? size - first_page_offset(segment) : size;
}

MALLARD_RARE size_t page_touched_bytes(Segment* segment, size_t index) {
  size_t area_start = static_cast<size_t>(page_area_start(segment, index) - reinterpret_cast<uint8_t*>(segment));
  size_t first_own_page = os::round_to_page(area_start);
  uint32_t end = segment_page(segment, index)->touched_end;
  return end > first_own_page ? os::round_to_page(end) - first_own_page : 0;
}

// A large heap fills its segments; a small one would pay for memory it never
// uses (huge or populated pages), or for the extents' locks (extent_heap_mb).
bool heap_holds_mb(const Heap* heap, OptionId threshold) {
  auto threshold_mb = static_cast<uint64_t>(option(threshold));
  return threshold_mb != 0 && (uint64_t{heap_segments_used(heap)} << kSegmentShift) >= (threshold_mb << 20);
}

namespace {

// Huge pages for the segments of a heap that already holds thp_heap_mb of
// them: backing them with 2 MiB pages takes 511 of every 512 page faults and
// most TLB misses off it (kv, 2M keys: 2.83-3.07 s -> 1.67-2.08 s, 86,825 ->
// 15,718 faults; DESIGN.md "Huge pages for large heaps"), but a huge page is
// resident whole as soon as one byte of it is touched. Off by default
// (thp_heap_mb 0): on a VM whose balloon reports free 2 MiB blocks to the
// host, each huge page is a frame the host faults in again, and populating
// 4 KiB pages keeps most of the gain (segment_take_fresh_page).
void segment_advise_huge_pages(Segment* s, bool huge) {
  os::advise_huge_pages(s, kSegmentSize, huge);
  s->huge_pages = huge;
}

void segment_drop_huge_pages(Segment* s) {
  if (s->huge_pages) segment_advise_huge_pages(s, false);
}

// Pages of small-block segments are populated by the MiB: 16 small pages.
// (A MiB of a medium segment is one page of one class, which may only ever
// hold a few blocks: regrow, DESIGN.md "Medium classes reuse freed blocks".)
constexpr size_t kPrefaultBytes = size_t{1} << 20;

// Page `index` to the last page of its MiB, as a range of memory.
MALLARD_RARE os::PurgeRange rest_of_prefault_chunk(Segment* s, size_t index) {
  size_t chunk_pages = kPrefaultBytes >> s->page_shift;
  size_t last = std::min(index - index % chunk_pages + chunk_pages, size_t{s->page_count}) - 1;
  uint8_t* start = page_area_start(s, index);
  return {start, static_cast<size_t>(page_area_start(s, last) + page_area_size(s, last) - start)};
}

bool starts_prefault_chunk(const Segment* s, size_t index) { return index % (kPrefaultBytes >> s->page_shift) == 0; }

}  // namespace

// A large heap fills its segments page after page, and each 4 KiB page's first
// write is a page fault: 16 per small page, 95,000 for kv's 2M keys, where
// this VM's faults cost 1.4-7 us each. Populated a MiB at a time, the pages
// come in with one system call per 256 of them, on the same 4 KiB frames a
// fault would take (huge pages, by contrast, come from 2 MiB frames that
// this VM's balloon has handed back to the host; DESIGN.md "Fresh pages of
// large heaps populated"). A MiB ahead is all a heap holds beyond what it
// carves, and only a heap of prefault_heap_mb.
Page* segment_take_fresh_page(Segment* s) {
  size_t index = s->pages_initialized++;
  if (s->prefault && s->kind == SegmentKind::kSmall && starts_prefault_chunk(s, index)) {
    os::PurgeRange chunk = rest_of_prefault_chunk(s, index);
    os::populate(chunk.addr, chunk.size);
  }
  return segment_page(s, index);
}

void segment_purge_prefaulted(Segment* s) {
  // Past a MiB's last page (or before any page) nothing is populated ahead;
  // a medium segment populates only blocks it carves.
  if (!s->prefault || s->kind != SegmentKind::kSmall || starts_prefault_chunk(s, s->pages_initialized)) return;
  os::PurgeRange rest = rest_of_prefault_chunk(s, s->pages_initialized);
  os::purge(rest.addr, rest.size);
}

void segment_before_purge(Segment* s) {
  if (s->pages_in_use * 2 < s->page_count) segment_drop_huge_pages(s);
}

namespace {

// An empty segment: one from the cache, else a new mapping (`fresh_mapping`).
// nullptr when out of memory.
Segment* segment_take_empty(bool* fresh_mapping) {
  Segment* s = nullptr;
  {
    LockGuard guard(g_segment_cache_lock);
    if (g_cache != nullptr) {
      s = g_cache;
      g_cache = s->cache_next;
      --g_cache_count;
    }
  }
  *fresh_mapping = s == nullptr;
  if (s != nullptr) {
    stats_sub(g_stats.retained, kSegmentSize - kSegmentHeaderSize);
    return s;
  }
  s = static_cast<Segment*>(os::map_aligned(kSegmentSize, kSegmentSize, segment_placement()));
  if (s == nullptr) return nullptr;
  // The small-page table's entries below kFirstTableChunk are its unowned
  // descriptors and must stay zero (segment.hpp). The kernel places a
  // mapping there only once the address space above is used up (mallard
  // hints its segments at 32 TiB), and then this is out of memory.
  if (chunk_index(s) < kFirstTableChunk) {
    os::unmap(s, kSegmentSize);
    return nullptr;
  }
  stats_add(g_stats.mapped, kSegmentSize);
  stats_add(g_stats.metadata, kSegmentHeaderSize);
  return s;
}

// Makes empty segment `s` one of `heap`'s, of `kind`; `hosts_heap`: the heap
// lives in its header.
Segment* segment_give_to(Segment* s, Heap* heap, SegmentKind kind, bool fresh_mapping, bool hosts_heap) {
  // Advised before the header is first touched: a read would map the zero
  // page through a page table, and the first 2 MiB could no longer fault in
  // as one huge page. A cached segment holds no advice (segment_release).
  if (heap_holds_mb(heap, kOptThpHeapMb)) segment_advise_huge_pages(s, true);
  s->prefault = heap_holds_mb(heap, kOptPrefaultHeapMb);
  s->heap = heap;
  heap->segments_owned = heap->segments_owned + 1;
  s->mapped_size = kSegmentSize;
  s->freed_at_ms = 0;
  pages_init(s, kind, fresh_mapping, hosts_heap);
  segments_link(s);
  map_mark(s, static_cast<uint8_t>(kPagedMark | s->page_shift));
  small_pages_mark(s, true);
  stats_add(g_stats.segments, 1);
  return s;
}

}  // namespace

Segment* segment_acquire(Heap* heap, SegmentKind kind) {
  bool fresh_mapping;
  Segment* s = segment_take_empty(&fresh_mapping);
  if (s == nullptr) return nullptr;
  return segment_give_to(s, heap, kind, fresh_mapping, false);
}

Segment* segment_acquire_hosting_heap(SegmentKind kind) {
  bool fresh_mapping;
  Segment* s = segment_take_empty(&fresh_mapping);
  if (s == nullptr) return nullptr;
  // A cached segment's slots held descriptors: zeroed before the heap is
  // read. A zero heap holds no segments, so none of this one's memory is
  // advised for huge pages or populated ahead.
  size_t heap_end = hosted_heap_slot(kind) + kHeapSlots;
  if (!fresh_mapping) {
    std::memset(static_cast<void*>(s->slots), 0, sizeof(Page) * std::max<size_t>(s->first_slot + s->pages_initialized, heap_end));
    s->pages_initialized = 0;
  }
  return segment_give_to(s, segment_hosted_heap(s, kind), kind, fresh_mapping, true);
}

void segment_release(Segment* s, void* dirty, size_t dirty_bytes) {
  map_mark(s, 0);
  small_pages_mark(s, false);
  segments_unlink(s);
  stats_sub(g_stats.segments, 1);
  s->heap->segments_owned = s->heap->segments_owned - 1;
  s->heap = nullptr;
  // A cached segment holds only its header in memory.
  if (segment_cache_reserve()) {
    segment_drop_huge_pages(s);
    segment_purge_prefaulted(s);
    if (dirty_bytes != 0) os::purge(dirty, dirty_bytes);
    LockGuard guard(g_segment_cache_lock);
    --g_cache_reserved;
    s->cache_next = g_cache;
    g_cache = s;
    ++g_cache_count;
    stats_add(g_stats.retained, kSegmentSize - kSegmentHeaderSize);
    return;
  }
  os::unmap(s, kSegmentSize);
  stats_sub(g_stats.mapped, kSegmentSize);
  stats_sub(g_stats.metadata, kSegmentHeaderSize);
}

MALLARD_RARE size_t segment_cache_flush() {
  Segment* list;
  {
    LockGuard guard(g_segment_cache_lock);
    list = g_cache;
    g_cache = nullptr;
    g_cache_count = 0;
  }
  size_t bytes = 0;
  while (list != nullptr) {
    Segment* next = list->cache_next;
    os::unmap(list, kSegmentSize);
    stats_sub(g_stats.mapped, kSegmentSize);
    stats_sub(g_stats.metadata, kSegmentHeaderSize);
    stats_sub(g_stats.retained, kSegmentSize - kSegmentHeaderSize);
    bytes += kSegmentSize;
    list = next;
  }
  return bytes;
}

MALLARD_RARE void segment_cache_after_fork_in_child() { g_cache_reserved = 0; }

MALLARD_RARE size_t segment_cache_bytes() {
  LockGuard guard(g_segment_cache_lock);
  return g_cache_count * kSegmentSize;
}

MALLARD_RARE size_t segment_header_touched_bytes(const Segment* segment) {
  uint32_t descriptors = segment->pages_initialized > 0 ? segment->pages_initialized : 1;
  return os::round_to_page(offsetof(Segment, slots) + sizeof(Page) * (segment->first_slot + descriptors));
}

MALLARD_RARE size_t segment_cache_resident() {
  LockGuard guard(g_segment_cache_lock);
  size_t bytes = 0;
  for (Segment* s = g_cache; s != nullptr; s = s->cache_next) bytes += segment_header_touched_bytes(s);
  return bytes;
}

namespace {
// The segment map's entry for a large block: on the chunk holding its start
// (the only address free() and realloc() take), how many chunks back the
// segment begins, plus one; 0 once the block is gone.
void large_map_mark(const Segment* s, bool in_use) {
  const uint8_t* start = s->slots[0].start;
  size_t offset = static_cast<size_t>(start - reinterpret_cast<const uint8_t*>(s));
  map_mark(start, in_use ? static_cast<uint8_t>(1 + (offset >> kSegmentShift)) : 0);
}

// Large blocks that need no more than cache-line alignment start a few lines
// past the header, a different number each time: otherwise every large block
// starts at the same offset from a 4 MiB boundary, and a program touching
// several of them page by page puts all its lines in one L1 set and a few L2
// sets (as medium blocks did; DESIGN.md). The colour keeps the block's start
// inside the header's OS page.
size_t large_colour(size_t alignment) {
  static std::atomic<uint32_t> next{0};
  if (alignment > kCacheLine) return 0;
  constexpr uint32_t kColours = (kMaxColourMedium + kCacheLine - kLargeHeaderBytes) / kCacheLine;
  uint32_t n = next.fetch_add(1, std::memory_order_relaxed);
  return kCacheLine * (n % kColours);
}

// A segment with one page descriptor (a large block's, or an extent
// segment's): every offset inside maps to page 0. Fills the fields both
// kinds share, then makes the segment known (segment list, map, stats).
MALLARD_RARE void one_page_segment_register(Segment* s, size_t mapped, SegmentKind kind, uint8_t flags, size_t start_offset,
                               size_t metadata) {
  s->heap = nullptr;
  s->mapped_size = mapped;
  s->kind = kind;
  s->page_shift = 63;
  s->page_count = 1;
  s->pages_initialized = 1;
  s->pages_in_use = 1;
  Page* page = &s->slots[0];
  page_set_flags(page, flags);
  page->start = reinterpret_cast<uint8_t*>(s) + start_offset;
  segments_link(s);
  large_map_mark(s, true);
  stats_add(g_stats.mapped, mapped);
  stats_add(g_stats.metadata, metadata);
  stats_add(g_stats.segments, 1);
}

void one_page_segment_unmap(Segment* s, size_t metadata) {
  large_map_mark(s, false);
  segments_unlink(s);
  stats_sub(g_stats.mapped, s->mapped_size);
  stats_sub(g_stats.metadata, metadata);
  stats_sub(g_stats.segments, 1);
  os::unmap(s, s->mapped_size);
}
}  // namespace

MALLARD_RARE Segment* large_segment_map(size_t size, size_t alignment) {
  // The block starts past the header at the first multiple of the alignment
  // (or of a cache line), plus the colour: in the header's own OS page
  // unless the alignment is a page or more.
  size_t align_to = alignment > kCacheLine ? alignment : kCacheLine;
  size_t offset = ((kLargeHeaderBytes + align_to - 1) & ~(align_to - 1)) + large_colour(alignment);
  size_t body = os::round_to_page(size);
  if (body < size || offset + body < body) return nullptr;
  size_t total = os::round_to_page(offset + body);
  size_t map_alignment = alignment > kSegmentSize ? alignment : kSegmentSize;
  auto* s = static_cast<Segment*>(os::map_aligned(total, map_alignment, segment_placement()));
  if (s == nullptr) return nullptr;
  s->freed_at_ms = 0;
  Page* page = &s->slots[0];
  std::memset(static_cast<void*>(page), 0, sizeof(Page));
  page->reserved = 1;
  page->capacity = 1;
  one_page_segment_register(s, total, SegmentKind::kLarge, kPageLarge, offset, kLargeHeaderBytes);
  return s;
}

// Whether an extent segment's chunk has an entry in the small-page table
// (small_pages_mark: kMediumEntry, and its four medium-page descriptors say
// kPageExtent): not below 4 GiB, where the entries are the unowned
// descriptors; there the slow paths find the segment through the map.
bool extent_in_small_pages(const Segment* s) { return chunk_index(s) >= kFirstTableChunk; }

MALLARD_RARE Segment* extent_segment_map(size_t data_offset) {
  auto* s = static_cast<Segment*>(os::map_aligned(kSegmentSize, kSegmentSize, segment_placement()));
  if (s == nullptr) return nullptr;
  one_page_segment_register(s, kSegmentSize, SegmentKind::kExtent, kPageExtent, data_offset, data_offset);
  for (size_t i = 1; i < kMediumPagesPerSegment; ++i) page_set_flags(&s->slots[i], kPageExtent);
  if (extent_in_small_pages(s)) small_pages_mark(s, true);
  return s;
}

MALLARD_RARE void extent_segment_unmap(Segment* s) {
  if (extent_in_small_pages(s)) small_pages_mark(s, false);
  one_page_segment_unmap(s, static_cast<size_t>(s->slots[0].start - reinterpret_cast<uint8_t*>(s)));
}

MALLARD_RARE Segment* large_segment_grow(Segment* s, size_t total, bool may_move) {
  size_t old_total = s->mapped_size;
  if (!os::grow_in_place(s, old_total, total)) {
    if (!may_move) return nullptr;
    void* dest = os::map_aligned(total, kSegmentSize, segment_placement());
    if (dest == nullptr) return nullptr;
    size_t offset = static_cast<size_t>(s->slots[0].start - reinterpret_cast<uint8_t*>(s));
    // Out of the segment list while its address changes: a walker of the
    // list (statistics, trim) must not follow a link into the old range.
    large_map_mark(s, false);
    segments_unlink(s);
    if (!os::move_mapping(s, old_total, total, dest)) {
      os::unmap(dest, total);
      segments_link(s);
      large_map_mark(s, true);
      return nullptr;
    }
    s = static_cast<Segment*>(dest);
    s->slots[0].start = reinterpret_cast<uint8_t*>(s) + offset;
    segments_link(s);
    large_map_mark(s, true);
  }
  s->mapped_size = total;
  stats_add(g_stats.mapped, total - old_total);
  return s;
}

MALLARD_RARE void large_segment_unmap(Segment* s) { one_page_segment_unmap(s, kLargeHeaderBytes); }

}  // namespace mallard
