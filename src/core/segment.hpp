// Segments: 4 MiB-aligned regions, the unit mallard maps from the OS, and the
// segment map that tells in one load whether an address belongs to mallard.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/config.hpp"
#include "core/lock.hpp"
#include "core/options.hpp"
#include "core/types.hpp"

namespace mallard {

// One byte per 4 MiB chunk of the 47-bit user address space (32 MiB of
// zero-initialized, untouched address space). Only chunks where a pointer
// handed out can start are marked:
//   0                       not mallard's;
//   kPagedMark | page_shift a small or medium segment starts here: free()
//                           finds the page from this byte alone, without
//                           reading the segment header (one line less);
//   1 + k (k <= 128)        a large block starts here, k chunks after the
//                           start of its segment (alignment up to 512 MiB).
inline constexpr size_t kSegmentMapEntries = size_t{1} << (47 - kSegmentShift);
inline constexpr uint8_t kPagedMark = 0xC0;
static_assert(1 + (kMaxAlignment >> kSegmentShift) < kPagedMark, "large marks stay below paged ones");
static_assert((kPagedMark & 63) == 0 && kMediumPageShift < 64, "mark & 63 is the page shift");
extern std::atomic<uint8_t> g_segment_map[kSegmentMapEntries];

// The mark of chunk `chunk` (an address >> kSegmentShift); 0 beyond the map.
MALLARD_INLINE unsigned chunk_mark(uintptr_t chunk) {
  if (MALLARD_UNLIKELY(chunk >= kSegmentMapEntries)) return 0;
  return g_segment_map[chunk].load(std::memory_order_relaxed);
}

// The small-page table, free()'s way from a pointer to its page descriptor
// (free_fast in alloc.hpp): for each 4 MiB chunk where a small segment starts,
// the address of that segment's descriptors as an offset from the table
// itself; kMediumEntry where a medium or an extent segment starts; 0 for
// every other chunk. A chunk holding no small segment thus lands in the
// table's first bytes, read as descriptors owned by no thread, and free()
// needs no test of what the chunk holds: its test that the page is this
// thread's turns medium, large and foreign pointers away anyway. One 8-byte
// load-and-add replaces the segment map's byte, its test, and the shifts and
// OR that turn it into an address (DESIGN.md "The small-page table"). Like
// the segment map, it is zero-initialized BSS (256 MiB of address space)
// that costs RSS only where segments are: a 4 KiB page of entries covers 2
// GiB of them. (Mapped at process init instead, free() loaded the table's
// address and its bound from two more cache lines, and mixed:write-4k, whose
// buffers likely evict them, was 5-10% slower.)
//
// Those unowned descriptors are the entries of the chunks below
// kFirstTableChunk (4 GiB), which hold no small or medium segment
// (segment_take_empty refuses a mapping there) and so stay zero. free(NULL)
// then reads entry 0 and the descriptor at offset 0, both in the table's
// first page, which follows the library's small globals in .bss; with 8 KiB
// of descriptors of their own before the entries, entry 0 sat two pages on,
// and every process that freed NULL made that page resident (DESIGN.md
// "free(NULL) reads no page of its own").
struct alignas(2 * kCacheLine) SmallPageTable {
  // Read plainly (the compiler then adds the entry straight from memory): a
  // pointer's entry was written before its block was handed out.
  uintptr_t entries[kSegmentMapEntries];
};
// The unowned descriptors: one a page of a segment, and one more for the
// medium entry's half-step.
inline constexpr size_t kUnownedDescriptorBytes = (kMaxPagesPerSegment + 1) * sizeof(Page);
inline constexpr size_t kFirstTableChunk = kUnownedDescriptorBytes / sizeof(uintptr_t);
static_assert(kUnownedDescriptorBytes % sizeof(uintptr_t) == 0);
extern SmallPageTable g_small_pages;

// The entry of a chunk where a medium segment starts. It too lands in the
// unowned descriptors, half a descriptor on: a small segment's entry, a
// multiple of sizeof(Page) like the page's index, leaves bit 6 of the key
// clear, so a free that failed tests that bit to know the chunk holds medium
// pages, without the segment map.
inline constexpr uintptr_t kMediumEntry = kCacheLine;
static_assert(alignof(SmallPageTable) % sizeof(Page) == 0 && kMediumEntry < sizeof(Page));

// An extent segment's chunk has kMediumEntry too (extent.hpp): free() then
// finds one of the segment's four medium-page descriptors, all of them
// owned by no thread and flagged kPageExtent, which tells the slow paths
// that the pointer is in an extent segment, starting at the chunk's start,
// without the segment map and the segment's kind (realloc of an extent
// block, inline, and free_other_slow; DESIGN.md "Extent chunks in the
// small-page table").
//
// The extent segment holding p, whose page descriptor says it is in one.
MALLARD_INLINE Segment* extent_segment_at(const void* p) {
  return reinterpret_cast<Segment*>(reinterpret_cast<uintptr_t>(p) & ~kSegmentMask);
}

// The key of a page: its descriptor's offset from the small-page table. Word
// 1 of every free block holds it and malloc clears it, so a second free of
// the block finds it there. It is unique to the page and never in a live block
// unless the program wrote a value it cannot have been given. free() computes
// it on the way to the descriptor (it is the table entry plus the page's
// offset in its segment's descriptors) and keeps it in a register for the
// double-free test and the store.
inline uintptr_t free_key_of(const Page* page) {
  return reinterpret_cast<uintptr_t>(page) - reinterpret_cast<uintptr_t>(&g_small_pages);
}

// The segment holding p, or nullptr if p was not handed out by mallard (never
// dereferences p).
MALLARD_INLINE Segment* segment_of(const void* p) {
  uintptr_t chunk = reinterpret_cast<uintptr_t>(p) >> kSegmentShift;
  unsigned mark = chunk_mark(chunk);
  if (MALLARD_UNLIKELY(mark == 0)) return nullptr;
  uintptr_t back = mark >= kPagedMark ? 0 : mark - 1;
  return reinterpret_cast<Segment*>((chunk - back) << kSegmentShift);
}

MALLARD_INLINE Page* page_of(Segment* segment, const void* p) {
  uintptr_t offset = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(segment);
  return segment_page(segment, offset >> segment->page_shift);
}

// The page of a block mallard handed out (slow paths; free() inlines it).
MALLARD_INLINE Page* page_of_block(const void* block) { return page_of(segment_of(block), block); }

// Whether the heap holds the option's number of MiB of segments (0: never):
// what makes a heap large enough for huge pages, populated pages, or medium
// blocks from the extents.
bool heap_holds_mb(const Heap* heap, OptionId threshold);

// Maps a fresh small or medium segment for `heap` (or takes one from the
// global cache) with every page free; nullptr when out of memory.
Segment* segment_acquire(Heap* heap, SegmentKind kind);

// Maps (or takes from the cache) a segment of `kind` (small or medium)
// hosting a new, zeroed heap (segment_hosted_heap), which owns it; a small
// one's pages take their descriptors from slot kHeapSlots on. nullptr when
// out of memory. It is never given back.
Segment* segment_acquire_hosting_heap(SegmentKind kind);

// Hands out the segment's next never-used page (pages_initialized++). In a
// small segment of a large heap (Segment::prefault), the first page of each
// 1 MiB comes with that whole MiB populated in one system call.
Page* segment_take_fresh_page(Segment* segment);

// Purges what a prefault populated beyond the pages handed out, to the end of
// its MiB: only pages handed out are ever purged as free pages, so these
// would stay resident in a cached segment, or past a trim.
void segment_purge_prefaulted(Segment* segment);

// Called before free pages of a segment still in use are purged. One less
// than half in use takes back its advice for huge pages: khugepaged would
// otherwise collapse each 2 MiB range of a few live blocks into a whole
// resident huge page again, and that would undo the purge. One at least
// half in use keeps it, so its purged pages can at most double back. (Taking
// it back at every segment's first purge lost kv most of the gain, 2.00-2.61
// s against 1.67-2.08: its DELs empty a page here and there in most
// segments, whose later faults were then 4 KiB ones; DESIGN.md "Huge pages
// for large heaps".)
void segment_before_purge(Segment* segment);

// Gives a segment whose pages are all free back: to the cache, or the OS.
// [dirty, dirty + dirty_bytes) is memory of its pages the caller has not
// purged: purged here only if the segment is cached, since unmapping returns
// it anyway.
void segment_release(Segment* segment, void* dirty, size_t dirty_bytes);

// The bytes in front of a large block: the segment fields and the one page
// descriptor a large segment uses. The block starts right after them, or a
// colour or an alignment further on, and overlays the other descriptors,
// which no code reads for a large segment (its page_shift maps every offset
// to page 0). The header thus shares its OS page with the block's first
// bytes instead of taking one of its own: 4 KiB less resident per live large
// block (DESIGN.md, "A large block's header shares its first page").
inline constexpr size_t kLargeHeaderBytes = offsetof(Segment, slots) + sizeof(Page);
static_assert(kLargeHeaderBytes <= kMaxColourMedium, "a coloured block starts in the header's page");

// Maps a large segment able to hold `size` bytes at `alignment`; the block
// starts at segment->slots[0].start. nullptr when out of memory.
Segment* large_segment_map(size_t size, size_t alignment);
void large_segment_unmap(Segment* segment);

// Maps a 4 MiB extent segment (extent.cpp): no heap owns it, its one page
// descriptor carries kPageExtent, and its memory from `data_offset` on holds
// the blocks. nullptr when out of memory.
Segment* extent_segment_map(size_t data_offset);
void extent_segment_unmap(Segment* segment);

// Grows a large segment's mapping to `total` bytes without copying its
// block: in place if the address space after it is free, else (`may_move`)
// its pages move to a new aligned mapping (mremap). Returns the segment, at
// its new address if it moved; nullptr, with the segment as it was, if it
// could not grow in place and may not move, or the kernel refuses.
Segment* large_segment_grow(Segment* segment, size_t total, bool may_move);

// Every segment, for statistics and trimming (taken under g_segments_lock).
extern Lock g_segments_lock;
extern Lock g_segment_cache_lock;
extern Segment* g_segments;

// Releases the cached empty segments to the OS; returns the bytes unmapped.
size_t segment_cache_flush();
size_t segment_cache_bytes();
// The header bytes of the cached segments that stay resident (statistics).
size_t segment_cache_resident();

// The OS pages of a small or medium segment's header that its fields and the
// descriptors handed out so far have touched (statistics).
size_t segment_header_touched_bytes(const Segment* segment);
// A place reserved by a thread that does not exist in a fork child would
// stay taken for good: the child starts with none.
void segment_cache_after_fork_in_child();

// Where page 0 starts: past the header. A small segment's is
// kSegmentHeaderSize (64 descriptors, and a heap in a hosting one: 8.1 or
// 11.4 KiB, touched a few descriptors at a time as pages are handed out). A
// medium segment's is its 4 descriptors (and heap): 640 or 3,968 bytes, in
// the first OS page, where page 0's first block starts too, so that the
// header page a medium segment touches anyway holds a block's first bytes
// (sizes:64K: one OS page less a thread; DESIGN.md "Medium page 0 starts
// in the header page"). That page is then not 4 KiB-aligned: page_purge
// zeroes its head instead of purging it.
size_t first_page_offset(const Segment* segment);
// The page start and size for page `index` of a small or medium segment.
uint8_t* page_area_start(Segment* segment, size_t index);
size_t page_area_size(Segment* segment, size_t index);
// The bytes of page `index` of a small or medium segment that may be
// resident: from its area's start to the end of the furthest block carved
// there since its last purge (Page::touched_end), in whole OS pages. A
// medium segment's page 0 starts in the header's OS page, which the header
// counts (segment_header_touched_bytes), not this.
size_t page_touched_bytes(Segment* segment, size_t index);

}  // namespace mallard
