// The allocator's data structures. Read this file first: it is the map.
//
//   Segment (4 MiB, 4 MiB-aligned)  -- owned by one Heap
//     header: segment fields + Page descriptors (kSegmentHeaderSize)
//     pages:  64 small pages of 64 KiB, or 4 medium pages of 1 MiB;
//             a large segment holds one block of any size instead, and an
//             extent segment blocks of any number of 1 KiB granules
//             (extent.hpp: the blocks realloc makes and grows).
//   Page    -- blocks of one size class, on one free list per page (the
//              sharding idea of mimalloc):
//     free        blocks ready to allocate: the owning thread's frees push
//                 here and malloc pops from here (LIFO: the block freed last
//                 is reused first), ahead of the blocks carved and not yet
//                 handed out;
//     remote frees are collected per destination heap by the freeing
//                 thread (RemoteBatch) and pushed, a batch at a time, on the
//                 owning heap's `remote_free` stack (no lock), drained by
//                 the owner in its slow path (remote.hpp).
//   Heap    -- one per thread; pages per size class; a direct table from
//              small sizes to their current page.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/config.hpp"
#include "core/lock.hpp"
#include "core/size_class.hpp"

namespace mallard {

struct Heap;
struct Segment;

// A field the owner writes while other threads may read it (a free from
// another thread checks a page's flags and carved size; stale values are
// harmless there). Relaxed atomic accesses compile to plain moves and tell
// ThreadSanitizer that the race is intended.
template <typename T>
class Relaxed {
 public:
  constexpr Relaxed() = default;
  constexpr Relaxed(T value) : value_(value) {}  // NOLINT: implicit, like T
  operator T() const { return __atomic_load_n(&value_, __ATOMIC_RELAXED); }
  Relaxed& operator=(T value) {
    __atomic_store_n(&value_, value, __ATOMIC_RELAXED);
    return *this;
  }
  // Copying from another Relaxed field reads and writes atomically too (the
  // implicit copy would be a plain store).
  Relaxed(const Relaxed& other) : value_(T(other)) {}
  Relaxed& operator=(const Relaxed& other) { return *this = T(other); }
  // A plain read, for the field's only writer: it cannot race with itself,
  // and the compiler may fold the load into the instruction that uses it.
  T owner_load() const { return value_; }
  Relaxed& operator|=(T bits) { return *this = static_cast<T>(T(*this) | bits); }
  Relaxed& operator&=(T bits) { return *this = static_cast<T>(T(*this) & bits); }

 private:
  T value_{};
};

// A free block: word 0 links the free list, word 1 holds the free key (see
// free_key_of) so that a second free of the same block is caught cheaply.
struct Block {
  Block* next;
  uintptr_t key;
};

enum PageFlags : uint8_t {
  kPageInFull = 1,    // no free blocks; unlinked from its queue until a free
  kPageUnused = 2,    // the page holds no size class (free, or a large block)
  kPageLarge = 4,     // the single block of a large segment
  kPageExtent = 8,    // the page of an extent segment (extent.hpp): blocks of any granule count
};

enum class SegmentKind : uint8_t { kSmall, kMedium, kLarge, kExtent };

// A page descriptor: two cache lines, so that frees from other threads, which
// read the second, do not take the line the owner writes on every malloc and
// free. Packed in 96 bytes, each remote free made the owner's next malloc
// miss (DESIGN.md: BM_cross_thread_free, xmalloc, iopath).
struct alignas(64) Page {
  // Line 1: what the owner writes on every malloc and free.
  Block* free;
  uint32_t used;                  // live blocks (written by the owner only)
  // Where the memory this page may hold resident ends: the offset from its
  // segment's start of the end of the furthest block any class carved here
  // since the page was last purged (0: none). Written when a page is carved
  // further or purged; past it, the page's memory reads as zero (a fresh
  // mapping, or purged), which calloc relies on (free_is_zero).
  uint32_t touched_end;
  Page* next;                     // in a heap page queue or free-page list
  Page* prev;
  // Every block on `free` whose free key is 0, i.e. carved and never handed
  // out (a freed block carries its key), was carved from memory that reads
  // as zero (if purges zero memory: os::purged_memory_reads_zero), and
  // nothing has written it since but the carve's link word: calloc takes
  // such a block without clearing it (page_take<true>). Set by page_extend.
  uint8_t free_is_zero;
  // Line 2: what every free reads (this thread's or another's), written only
  // when the page is set up, carved further or changes state, so that frees
  // from other threads do not take the line the owner keeps writing.
  // The owning thread's thread pointer (heap->owner_thread) while flags ==
  // 0, else 0 (written only by page_set_flags): free() tests ownership and
  // flags in one compare against its own thread pointer, one fs-relative
  // load (see this_thread_pointer).
  alignas(64) Relaxed<uintptr_t> local_owner;
  uint8_t* start;                 // first block
  // The boundary check (page_is_block_start): a pointer at `offset` bytes
  // from start is a carved block iff offset * block_magic < carved_limit.
  uint64_t block_magic;           // floor(2^64 / block_size) + 1 (size_class.hpp)
  Relaxed<uint64_t> carved_limit; // capacity * (block_size * block_magic mod 2^64)
  uint32_t block_size;
  Relaxed<uint8_t> flags;         // PageFlags; any bit sends free() to the slow path
  uint8_t size_class;
  uint8_t is_dirty;               // free page whose memory is still resident
  // Its heap's remote_slot: where a thread freeing a block of this page
  // keeps its batch for the page's heap (Heap::outgoing), read from the
  // line such a free reads anyway. Follows `heap`.
  Relaxed<uint8_t> remote_slot;
  // Owner; nullptr for large blocks. Changes only when a live heap absorbs
  // the orphan that owned the page (orphan_absorb, under the orphan's work
  // lock), so a remote free may read the old owner: that heap forwards it.
  Relaxed<Heap*> heap;
  Relaxed<uint16_t> capacity;     // blocks carved so far (handed to free lists)
  uint16_t reserved;              // blocks that fit in the page
  uint64_t freed_at_ms;           // when the page became free (for delayed purging)
};
// Block counts fit 16 bits: the smallest blocks fill a small page with 4096.
static_assert((size_t{1} << kSmallPageShift) / kMinBlockSize <= UINT16_MAX);
static_assert((size_t{1} << kMediumPageShift) / kSmallSizeMax <= UINT16_MAX);
inline constexpr unsigned kPageShiftInArray = 7;  // log2(sizeof(Page))
static_assert(sizeof(Page) == size_t{1} << kPageShiftInArray);
static_assert(offsetof(Page, local_owner) == kCacheLine, "what other threads read has its own line");

struct PageQueue {
  Page* first;
  Page* last;
};

struct PageList {  // a doubly linked list of pages (FIFO for purging)
  Page* first;
  Page* last;
  size_t count;
};

// Blocks one thread freed into another heap's pages, handed over together:
// one atomic push per batch instead of one per block, and the owner's drain
// reads the addresses from this array instead of chasing a `next` pointer
// through every block, each in a line the freeing thread's core holds
// (xmalloc: that chase was 28% of the run; see remote.cpp). A batch lives in
// one of the freed blocks it hands over when one is large enough (hosted:
// the owner frees it last, and it never comes back), else in a 256-byte
// block of the freeing thread's heap.
struct RemoteBatch {
  RemoteBatch* next;              // word 0, like Block::next: the remote stack's link
  // Word 1, like Block::key: a hosted batch's free key (written by free(),
  // so that a second free of the block is caught while it travels); 0 in
  // a batch of the freeing heap, a live block of that heap.
  uintptr_t key;
  Heap* owner;                    // the heap the blocks belong to
  uint32_t count;
  uint32_t opened_at;             // the freeing heap's slow_calls when the batch opened
  Block* blocks[28];
};
static_assert(sizeof(RemoteBatch) == 256, "a batch fills one 256-byte block");
static_assert(offsetof(RemoteBatch, key) == offsetof(Block, key), "a hosted batch keeps its free key");

// The process's first heap, while young, serves a small class it has no page
// for with free blocks of classes up to this size (heap.cpp,
// young_heap_lender): a 4 KiB buffer class that took 8 KiB blocks would
// waste 4 KiB a block. The borrowers are the classes below it: up to 1 KiB
// at first, but the harness's child still kept a page each for its few
// blocks of 1,152 and 1,280 bytes, which now come from a 2 KiB page
// (DESIGN.md "Young classes up to 4 KiB share pages"). One byte a borrower
// in Heap::borrow_waste: this bound fills the heap's 26 descriptor slots.
inline constexpr size_t kYoungHeapLenderMax = 4096;
inline constexpr unsigned kYoungHeapBorrowerClasses = size_class_of(kYoungHeapLenderMax);

// The batches a heap keeps open at once, one per destination heap
// (remote.hpp): with one, a thread freeing blocks of several threads
// handed over a batch at nearly every free (churn:64K: 1.3 blocks a batch).
inline constexpr unsigned kOutgoingSlots = 4;

struct Heap {
  // The direct table: the current page for each small size (slot (size+7)/8).
  // Entries are never null: an empty queue points at g_empty_page.
  std::array<Page*, kDirectSlots> direct;
  // The same for the classes above the direct table: each one's first page,
  // or g_empty_page when its queue is empty, so that malloc reads the page
  // without a test for an empty queue (entry c - kFirstQueueClass).
  std::array<Page*, kQueueClassCount> current;
  PageQueue queues[kClassCount];
  // Blocks freed by other threads into this heap's pages (Treiber stack):
  // single blocks, and batches tagged with the low bit (remote.hpp).
  std::atomic<Block*> remote_free;
  // Blocks this heap's thread freed into other heaps, not yet handed over:
  // a batch per destination, in the destination's remote_slot.
  RemoteBatch* outgoing[kOutgoingSlots];
  // Free pages owned by this heap, oldest first: dirty ones are purged after
  // the delay; clean ones are reused last.
  PageList free_dirty[2];         // [small, medium]
  PageList free_clean[2];
  // The segments whose pages beyond pages_initialized this heap hands out
  // next, before mapping a new one ([small, medium]), linked by fresh_next:
  // its own, then those of an orphan it absorbed.
  Segment* fresh[2];
  size_t dirty_bytes;
  uint64_t cap_purged_at_ms;      // when the cap last forced a purge; 0 once answered
  size_t cap_purged_bytes;        // what the cap purged since it was last answered
  uint64_t next_purge_ms;
  uint64_t next_kept_release_ms;  // when to give back idle kept pages
  // The large block this thread freed last, reused without the global
  // cache's lock; atomic because a thread about to map a new large block
  // takes it over when it sits idle (see large.cpp).
  std::atomic<Segment*> large_cached;
  // Bookkeeping.
  Heap* next_all;                 // global list of every heap ever made (newest first; never left)
  Heap* next_orphan;              // in the orphan list while no thread owns it
  // The thread pointer of the thread that owns this heap, 0 while none does
  // (orphans, g_empty_heap): what its pages' local_owner holds. Cleared, and
  // every page's local_owner with it, before its thread exits, since a new
  // thread may get the same thread pointer (heap_set_owner).
  Relaxed<uintptr_t> owner_thread;
  uint64_t orphaned_at_ms;        // when its thread exited (see orphan_free)
  // Small and medium segments this heap owns (an orphan with none has nothing
  // to give to orphan_absorb).
  Relaxed<uint32_t> segments_owned;
  // Held by whoever works on an orphaned heap: a thread freeing into it, the
  // sweeper, or the thread adopting it (see orphan.cpp).
  Lock orphan_work_lock;
  uint32_t slow_calls;
  // The one-byte fields sit together: the heap fills its 26 descriptor
  // slots to the byte (kHeapSlots; a 27th would not fit a medium segment's
  // first OS page).
  std::atomic<bool> orphaned;
  // This thread's heap already took an exited thread's pages (it adopted a
  // heap holding segments, or absorbed one): it absorbs no more, or one
  // thread would collect every orphan's memory only to purge it.
  bool inherited;
  // A thread took this heap over from an exited one at least once: its
  // threads come and go, so the next exit leaves its medium pages for a
  // successor (heap_thread_exit).
  bool adopted;
  // Its host segment (heap_host) went to the heap that absorbed its pages
  // (orphan_absorb): that segment is another heap's now, and never this
  // one's again, so its fields are not this heap's to read.
  bool host_absorbed;
  // While realloc moves a medium block: the bytes it is about to copy into
  // the new one, else 0 (malloc_to_copy_into, page_extend).
  uint32_t realloc_copy_bytes;
  // Slow-path fields, kept at the end: placed before realloc_copy_bytes,
  // they slowed regrow:exact (0.984x against 0.996x the speed; DESIGN.md
  // "The first heap borrows while young").
  // Small pages this heap has taken (saturating; heap.cpp, heap_is_young).
  uint16_t small_pages_taken;
  // The dirty cap is dirty_max_kb << dirty_cap_shift: raised, enough to have
  // kept what the cap purged, when the heap, out of dirty pages, takes one
  // that is not resident within a purge delay of a purge its cap forced;
  // lowered by one step when half a cap of dirty pages went unused for a
  // whole delay, and to 0 when the cap forces a purge of as much again
  // (purge.cpp, heap_dirty_cap).
  uint8_t dirty_cap_shift;
  // Remote frees sent one by one before this heap made its first batch
  // (remote.cpp, batch_worth_making; saturates at kUnbatchedRemoteFrees).
  uint8_t remote_frees_unbatched;
  // The slot of other heaps' `outgoing` that holds their batches for this
  // one: heaps take the slots in turn as they are made, so that any
  // kOutgoingSlots heaps made one after another never share one (a hash of
  // the heap's address made three of churn:64K's four threads share a
  // slot in some runs, and their batches were handed over at nearly every
  // remote free). Copied into its pages (Page::remote_slot).
  uint8_t remote_slot;
  // What each class below kYoungHeapBorrowerClasses has lost so far to the
  // larger blocks it borrowed, in 16-byte units rounded up (heap.cpp,
  // young_heap_may_borrow): one byte a class keeps the heap in its slots.
  uint8_t borrow_waste[kYoungHeapBorrowerClasses];
};

// The descriptor slots a heap takes in the header of the small segment it
// hosts (segment_hosted_heap).
inline constexpr uint8_t kHeapSlots = (sizeof(Heap) + sizeof(Page) - 1) / sizeof(Page);

struct Segment {
  // Cold fields fill the first cache line. It sits on a 4 MiB boundary, in the
  // same L1 set as every page-aligned buffer a program touches; free() reads
  // the page descriptors, which therefore start one line later (sizes:32K, 8
  // page touches per block, lost an L1 miss per free; DESIGN.md). free() no
  // longer reads page_shift: the segment map's byte carries it.
  Segment* next;                  // global list of all segments (stats, trim)
  Segment* prev;
  Segment* cache_next;            // in a cache of free segments (large or empty)
  Segment* cache_prev;
  size_t mapped_size;             // bytes mapped, header included
  uint64_t freed_at_ms;           // large segments in the cache, and released segments
  size_t large_size;              // large: the block's usable size (page multiple)
  size_t large_dirty;             // large: bytes from the block start that may be resident
  // Hot fields.
  Heap* heap;                     // owner (small/medium); nullptr for large
  SegmentKind kind;
  uint8_t page_shift;
  uint16_t page_count;
  // Descriptors [0, pages_initialized) are valid. A fresh segment's others
  // are still zero and their header page untouched: a thread that uses few
  // pages never faults in the second 4 KiB of the header (see heap.cpp).
  uint16_t pages_initialized;
  // Advised for transparent huge pages (segment_acquire): set when a heap
  // that holds thp_heap_mb of segments takes it, cleared when a purge leaves
  // it less than half in use or it goes to the cache.
  bool huge_pages;
  // Its fresh memory is populated before its first write, in one system
  // call for many OS pages: a small segment's pages 1 MiB at a time as the
  // heap takes them (segment_take_fresh_page), a medium segment's blocks
  // one by one as they are carved (page_extend). Set when a heap that
  // holds prefault_heap_mb of segments takes it.
  bool prefault;
  // Page i's descriptor is slots[first_slot + i]: first_slot is 0, or
  // kHeapSlots in a small segment that hosts a heap (segment_hosted_heap).
  uint8_t first_slot;
  // A heap lives in this segment's header (heap_create); never given back.
  bool hosts_heap;
  uint32_t pages_in_use;
  uint32_t pages_dirty_free;
  Segment* fresh_next;            // in its heap's list of fresh segments
  // A cached large segment's neighbours in its list of the cache's index by
  // capacity (large.cpp).
  Segment* large_bin_next;
  Segment* large_bin_prev;
  // At offset 128 (Page is line-aligned): in a segment that hosts no heap,
  // page i's descriptor is at (segment | i << 7) + 128, an OR and a
  // displacement in free() of a medium block. Read through segment_page.
  Page slots[kHeapSlots + kMaxPagesPerSegment];
};
static_assert(sizeof(Segment) <= kSegmentHeaderSize);
static_assert(offsetof(Segment, slots) == sizeof(Page));
static_assert(offsetof(Segment, heap) == kCacheLine, "hot segment fields start on the second line");
static_assert(kMaxPagesPerSegment <= UINT16_MAX);

// The heap of a thread that has not allocated yet: every lookup finds an
// empty page, which sends the first malloc to the slow path that sets up a
// real heap. Its pages never belong to anyone, so free() never matches it.
extern Heap g_empty_heap;
extern Page g_empty_page;

// Page descriptors live in their segment's header.
inline Segment* page_segment(const Page* page) {
  return reinterpret_cast<Segment*>(reinterpret_cast<uintptr_t>(page) & ~kSegmentMask);
}

// Page `index`'s descriptor, and a descriptor's index, in a small or medium
// segment (a large or extent segment has one page, slots[0]).
inline Page* segment_page(Segment* segment, size_t index) { return &segment->slots[segment->first_slot + index]; }
inline size_t page_index(const Page* page) {
  const Segment* segment = page_segment(page);
  return static_cast<size_t>(page - &segment->slots[segment->first_slot]);
}

// A thread's heap lives in the header of the first segment it takes: a
// small one, in the descriptor slots before its pages', or a medium one when
// the thread's first request is medium (sizes:64K's threads), after its 4
// pages' descriptors, so that medium descriptors stay where free() computes
// them (heap_create). The header's first OS page, which every segment
// touches, holds the segment's fields, the heap and pages 0-4's (small) or
// 0-3's (medium) descriptors: no memory of its own for a heap, where one
// from a metadata chunk cost 3.3 KiB a thread (DESIGN.md "A heap lives in
// its first segment's header"). A hosting segment is never given back, since
// a heap is never freed.
inline constexpr size_t kMediumPagesPerSegment = kSegmentSize >> kMediumPageShift;
inline constexpr size_t hosted_heap_slot(SegmentKind kind) { return kind == SegmentKind::kSmall ? 0 : kMediumPagesPerSegment; }
// The header's first OS page (4 KiB on every page size the layout assumes).
inline constexpr size_t kHeaderOsPage = 4096;
static_assert(offsetof(Segment, slots) + sizeof(Page) * (kMediumPagesPerSegment + kHeapSlots) < kHeaderOsPage,
              "a medium segment's header keeps its heap in its first OS page, with room for a block's start");
inline bool segment_hosts_heap(const Segment* segment) { return segment->hosts_heap; }
inline Heap* segment_hosted_heap(Segment* segment, SegmentKind kind) {
  return reinterpret_cast<Heap*>(&segment->slots[hosted_heap_slot(kind)]);
}
inline Segment* heap_host(const Heap* heap) {
  return reinterpret_cast<Segment*>(reinterpret_cast<uintptr_t>(heap) & ~kSegmentMask);
}
static_assert(alignof(Heap) <= alignof(Page));

// The segments `heap` owns, not counting its host while that holds no page
// in use or dirty: what its thread has used, as a heap from a metadata chunk
// counted them (a thread of medium blocks would otherwise count one more).
// Called by the heap's owner, or under its orphan work lock. (A heap that
// owns no segment is one whose host is being set up, or was absorbed.)
inline uint32_t heap_segments_used(const Heap* heap) {
  if (heap->host_absorbed || heap->segments_owned == 0) return heap->segments_owned;
  const Segment* host = heap_host(heap);
  bool idle_host = host->pages_in_use == 0 && host->pages_dirty_free == 0;
  return heap->segments_owned - (idle_host ? 1u : 0u);
}

inline void page_set_flags(Page* page, uint8_t flags) {
  page->flags = flags;
  uintptr_t owner = 0;
  if (flags == 0) owner = static_cast<Heap*>(page->heap)->owner_thread;
  page->local_owner = owner;
}

// This thread's thread pointer (glibc: its TCB, which a later thread may
// reuse once this one has exited): unique among live threads, and on x86-64
// one load from %fs:0, without the GOT load a TLS variable of a shared
// library takes.
MALLARD_INLINE uintptr_t this_thread_pointer() { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }

}  // namespace mallard
