#include "core/large.hpp"

#include <errno.h>

#include <cstring>

#include "core/alloc.hpp"
#include "core/heap.hpp"
#include "core/init.hpp"
#include "core/lock.hpp"
#include "core/options.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

Lock g_large_lock;

namespace {

// Freed large segments, most recently freed first: eviction and purging
// take the oldest, from the tail. Reuse takes the best fit through the index
// below.
Segment* g_cache_first = nullptr;
Segment* g_cache_last = nullptr;
size_t g_cache_bytes = 0;

// The cache's index by capacity: one list for each capacity in pages below
// kBinnedPages, most recently freed first, one for all larger ones, and a bit
// for each list that is not empty. A request finds the best fit in the first
// non-empty list at or above its size, reading one header, where a walk of
// the whole cache read every cached header: with a few hundred blocks of
// 128-256 KiB cached (threads freeing random sizes up to 256 KiB in random
// order), that walk took half of a program's time (DESIGN.md "The large
// cache's index by capacity"). Only the list of the largest is walked: it
// holds at most large_cache_mb / 4 MiB mappings (16 by default).
constexpr size_t kBinnedPages = 1023;
constexpr size_t kBinCount = kBinnedPages + 1;
constexpr size_t kBinWords = kBinCount / 64;
static_assert(kBinCount % 64 == 0);
Segment* g_bins[kBinCount];
uint64_t g_nonempty_bins[kBinWords];

size_t block_offset(const Segment* s) {
  return static_cast<size_t>(s->slots[0].start - reinterpret_cast<const uint8_t*>(s));
}

// The most a block in this mapping can grow to: a whole number of pages,
// like every large block's size (the block's start, and so its end, need
// not be on a page boundary).
size_t capacity_of(const Segment* s) { return (s->mapped_size - block_offset(s)) & ~(os::page_size() - 1); }

// Resident bytes beyond the block's end that are worth an madvise to drop.
constexpr size_t kTailSlack = 1 << 20;

// Purges the whole OS pages of a large mapping from `from` (a page boundary)
// up to the one holding the block's byte large_dirty - 1. A coloured block
// starts a few lines into the header's page (see large_segment_map), so its
// ends are not page boundaries; the partial page after it holds no other
// data.
size_t purge_large_range(const Segment* s, uintptr_t from) {
  uintptr_t to = os::round_to_page(reinterpret_cast<uintptr_t>(s->slots[0].start) + s->large_dirty);
  if (to <= from) return 0;
  os::purge(reinterpret_cast<void*>(from), to - from);
  stats_add(g_stats.purged_total, to - from);
  return to - from;
}

// How set_block_size treats resident pages past the block's new end.
enum class Tail : bool {
  kPurge,  // more than kTailSlack of them go back to the OS
  kKeep,   // they stay: a growing block (realloc) is about to use them
};

// Sets the block's size; when that leaves much more than the slack of
// possibly-resident memory past its end (a big cached block reused for a
// smaller request, or a shrinking realloc), purges the tail: the pages past
// the one holding the block's last byte.
MALLARD_RARE void set_block_size(Segment* s, size_t size, Tail tail) {
  s->large_size = os::round_to_page(size);
  if (tail == Tail::kPurge && s->large_dirty > s->large_size + kTailSlack) {
    uintptr_t start = reinterpret_cast<uintptr_t>(s->slots[0].start);
    uintptr_t kept_end = os::round_to_page(start + s->large_size);
    purge_large_range(s, kept_end);
    s->large_dirty = kept_end - start;
  } else if (s->large_dirty < s->large_size) {
    s->large_dirty = s->large_size;
  }
}

size_t cache_cap_bytes() { return static_cast<size_t>(option(kOptLargeCacheMb)) << 20; }

size_t bin_of_pages(size_t pages) { return pages < kBinnedPages ? pages : kBinnedPages; }
size_t bin_of(const Segment* s) { return bin_of_pages(capacity_of(s) / os::page_size()); }

// The first non-empty list at or after bin `from`; kBinCount if none.
size_t next_nonempty_bin(size_t from) {
  for (size_t word = from / 64; word < kBinWords; ++word) {
    uint64_t bits = g_nonempty_bins[word];
    if (word == from / 64) bits &= ~uint64_t{0} << (from % 64);
    if (bits != 0) return word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
  }
  return kBinCount;
}

void cache_unlink(Segment* s) {
  if (s->cache_prev != nullptr) s->cache_prev->cache_next = s->cache_next; else g_cache_first = s->cache_next;
  if (s->cache_next != nullptr) s->cache_next->cache_prev = s->cache_prev; else g_cache_last = s->cache_prev;
  size_t bin = bin_of(s);
  if (s->large_bin_prev != nullptr) s->large_bin_prev->large_bin_next = s->large_bin_next; else g_bins[bin] = s->large_bin_next;
  if (s->large_bin_next != nullptr) s->large_bin_next->large_bin_prev = s->large_bin_prev;
  if (g_bins[bin] == nullptr) g_nonempty_bins[bin / 64] &= ~(uint64_t{1} << (bin % 64));
  g_cache_bytes -= s->mapped_size;
  stats_sub(g_stats.large_cached, s->mapped_size);
}

void cache_push_front(Segment* s) {
  s->cache_prev = nullptr;
  s->cache_next = g_cache_first;
  if (g_cache_first != nullptr) g_cache_first->cache_prev = s; else g_cache_last = s;
  g_cache_first = s;
  size_t bin = bin_of(s);
  s->large_bin_prev = nullptr;
  s->large_bin_next = g_bins[bin];
  if (g_bins[bin] != nullptr) g_bins[bin]->large_bin_prev = s;
  g_bins[bin] = s;
  g_nonempty_bins[bin / 64] |= uint64_t{1} << (bin % 64);
  g_cache_bytes += s->mapped_size;
  stats_add(g_stats.large_cached, s->mapped_size);
}

// A mapping made for a request of at most page alignment (its block starts
// in the header's page, or on the next page boundary; see
// large_segment_map), the only kind the caches keep.
bool plain_mapping(const Segment* s) { return block_offset(s) <= os::page_size(); }

// A cached mapping whose block has the alignment asked for.
bool reusable_for(const Segment* s, size_t alignment) {
  uintptr_t start = reinterpret_cast<uintptr_t>(s->slots[0].start);
  return plain_mapping(s) && (alignment == 0 || start % alignment == 0);
}

// The most capacity a cached mapping may have to serve `size`: four times as
// much, and the slack (address space is cheap and the unused tail is purged,
// but a huge cached block should stay available for a huge request).
// A block that realloc grows (`warm`) may take one of up to 64 times its
// size: it is about to grow into the mapping's resident pages, and the
// sooner it moves there, the less it copies. A buffer regrown by eighths
// to 8 MiB went on from 128 KiB by mremap and, at 1.5 MiB, was copied into
// the 8 MiB mapping of the round before: 1.5 MiB copied a round, against
// glibc's none (DESIGN.md "A growing block takes a warm mapping early").
size_t max_capacity_for(size_t size, bool warm) { return (warm ? 64 : 4) * size + kTailSlack; }

// A cached mapping that holds `size`, and not more than max_capacity_for it.
// With `warm`, only one whose pages may all be resident up to `size` (not
// purged since).
MALLARD_RARE bool fits(const Segment* s, size_t size, size_t alignment, bool warm) {
  size_t capacity = capacity_of(s);
  return reusable_for(s, alignment) && capacity >= size && capacity <= max_capacity_for(size, warm) &&
         (!warm || s->large_dirty >= size);
}

// The smallest cached mapping that fits; of those, the most recently freed.
MALLARD_RARE Segment* cache_take(size_t size, size_t alignment, bool warm) {
  if (g_stats.large_cached.load(std::memory_order_relaxed) == 0) return nullptr;
  size_t page = os::page_size();
  // The lists whose capacities can fit (fits() still checks each block).
  size_t first = bin_of_pages((size + page - 1) / page);
  size_t last = bin_of_pages(max_capacity_for(size, warm) / page);
  LockGuard guard(g_large_lock);
  Segment* best = nullptr;
  for (size_t bin = next_nonempty_bin(first); bin <= last && best == nullptr; bin = next_nonempty_bin(bin + 1)) {
    for (Segment* s = g_bins[bin]; s != nullptr; s = s->large_bin_next) {
      if (!fits(s, size, alignment, warm)) continue;
      if (best == nullptr || capacity_of(s) < capacity_of(best)) best = s;
      if (bin < kBinnedPages) break;  // one capacity: the first that fits is the best
    }
  }
  if (best != nullptr) cache_unlink(best);
  return best;
}

// The per-heap cache: the last large block this thread freed, up to
// kHeapCacheMax, reused without the global lock (a thread that allocates and
// frees 1 MiB buffers in a loop otherwise takes the global lock twice per
// block: ~1.3 us per pair under 32 threads in the STL benchmark). One block,
// not two, and one that another thread takes over before it maps a new
// block (take_idle_heap_blocks): each thread's cached block is otherwise
// memory no other thread can reuse, and mixed:real's eight jobs, whose large
// buffers are 2% of their I/Os, kept one each, idle, on top of those in use
// (DESIGN.md, "One cached large block a thread", "Idle cached large blocks
// are shared").
//
// The owner takes its block by exchange, never by a load it then acts on:
// another thread may take the block at any moment, move it to the global
// cache, and that cache may unmap it.
constexpr size_t kHeapCacheMax = 4u << 20;

// Empties the heap's slot; its block, if it held one. Any thread may call it.
Segment* heap_cache_remove(Heap* heap) {
  if (heap->large_cached.load(std::memory_order_relaxed) == nullptr) return nullptr;  // no write when empty
  return heap->large_cached.exchange(nullptr, std::memory_order_acquire);
}

Segment* heap_cache_take(Heap* heap, size_t size, size_t alignment, bool warm) {
  Segment* s = heap_cache_remove(heap);
  if (s == nullptr || fits(s, size, alignment, warm)) return s;
  heap->large_cached.store(s, std::memory_order_release);  // only the owner stores a block
  return nullptr;
}

void global_cache_put(Segment* s);

// Keeps s in the heap's cache; the block it held goes to the global cache.
bool heap_cache_put(Heap* heap, Segment* s) {
  if (heap == &g_empty_heap || s->mapped_size > kHeapCacheMax) return false;
  // Only the owner fills the slot, so an empty one stays empty until this
  // store: no exchange needed then (a malloc/free loop always finds it so).
  if (heap->large_cached.load(std::memory_order_relaxed) == nullptr) {
    heap->large_cached.store(s, std::memory_order_release);
    return true;
  }
  Segment* evicted = heap->large_cached.exchange(s, std::memory_order_acq_rel);
  if (evicted != nullptr) global_cache_put(evicted);
  return true;
}

// Moves every heap's cached block to the global cache (this thread's own
// holds none that fits, or it would have been taken); true if there was
// one. Called only before mapping a new large block, which costs an mmap
// and a fault per page: the walk over the heaps is small beside it.
bool take_idle_heap_blocks() {
  Segment* taken = nullptr;
  {
    LockGuard guard(g_heaps_lock);  // the heap list grows under it
    for (Heap* heap = g_all_heaps; heap != nullptr; heap = heap->next_all) {
      if (Segment* s = heap_cache_remove(heap)) {
        s->cache_next = taken;
        taken = s;
      }
    }
  }
  bool any = taken != nullptr;
  while (taken != nullptr) {
    Segment* next = taken->cache_next;
    global_cache_put(taken);
    taken = next;
  }
  return any;
}

// The block of mapping s (fresh, or taken from a cache), now `size` bytes
// in use.
void* hand_out(Segment* s, size_t size, bool zero, Tail tail) {
  Page* page = &s->slots[0];
  size_t dirty_before = s->large_dirty;
  set_block_size(s, size, tail);
  page_set_flags(page, kPageLarge);
  page->used = 1;
  page->is_dirty = 1;
  // Fresh and purged memory reads as zero; only the previously dirty part
  // of a reused mapping needs clearing.
  if (zero && dirty_before > 0) memset(page->start, 0, dirty_before < size ? dirty_before : size);
  return page->start;
}

}  // namespace

void heap_large_cache_flush(Heap* heap) {
  if (Segment* s = heap_cache_remove(heap)) global_cache_put(s);
}

MALLARD_RARE void* large_malloc(size_t size, size_t alignment, bool zero) {
  if (size > kMaxRequest || alignment > kMaxAlignment) {
    errno = ENOMEM;
    return nullptr;
  }
  process_init();
  if (size == 0) size = 1;
  bool fresh = false;
  Segment* s = nullptr;
  if (alignment <= os::page_size()) {
    s = heap_cache_take(tls_heap, size, alignment, false);
    if (s == nullptr) s = cache_take(size, alignment, false);
    if (s == nullptr && take_idle_heap_blocks()) s = cache_take(size, alignment, false);
  }
  if (s == nullptr) {
    s = large_segment_map(size, alignment);
    if (s == nullptr) {
      errno = ENOMEM;
      return nullptr;
    }
    fresh = true;
  }
  if (fresh) s->large_dirty = 0;
  return hand_out(s, size, zero, Tail::kPurge);
}

MALLARD_RARE void* large_malloc_warm(size_t size) {
  Segment* warm = heap_cache_take(tls_heap, size, 0, true);
  if (warm == nullptr) warm = cache_take(size, 0, true);
  // Its resident pages past `size` stay, for the block to grow into.
  return warm != nullptr ? hand_out(warm, size, false, Tail::kKeep) : nullptr;
}

MALLARD_RARE void large_free(Segment* s, void* p, const char* what) {
  Page* page = &s->slots[0];
  if (p != page->start) {
    if (p > page->start && static_cast<uint8_t*>(p) < page->start + s->large_size) {
      report_interior_pointer(what, p, page->start);
    }
    report_invalid_pointer(what, p);
  }
  if (page->flags & kPageUnused) report_double_free(what, p);
  page_set_flags(page, kPageLarge | kPageUnused);
  page->used = 0;
  s->freed_at_ms = 0;
  if (plain_mapping(s) && heap_cache_put(tls_heap, s)) return;
  global_cache_put(s);
}

namespace {

// Into the global cache (or back to the OS if it does not belong there).
MALLARD_RARE void global_cache_put(Segment* s) {
  size_t cap = cache_cap_bytes();
  if (!plain_mapping(s) || s->mapped_size > cap / 2) {
    large_segment_unmap(s);
    return;
  }
  Segment* evicted = nullptr;
  {
    LockGuard guard(g_large_lock);
    s->freed_at_ms = os::now_ms();
    cache_push_front(s);
    // Evict the oldest until under the cap; chain them through cache_next.
    while (g_cache_bytes > cap) {
      Segment* old = g_cache_last;
      cache_unlink(old);
      old->cache_next = evicted;
      evicted = old;
    }
  }
  while (evicted != nullptr) {
    Segment* next = evicted->cache_next;
    large_segment_unmap(evicted);
    evicted = next;
  }
}

}  // namespace

MALLARD_RARE size_t large_usable_size(Segment* s, const void* p, const char* what) {
  Page* page = &s->slots[0];
  if (p != page->start || (page->flags & kPageUnused)) report_invalid_pointer(what, p);
  return s->large_size;
}

MALLARD_RARE bool large_resize_in_place(void* p, size_t size) {
  Segment* s = segment_of(p);
  if (s == nullptr || s->kind != SegmentKind::kLarge || p != s->slots[0].start) return false;
  if (size > capacity_of(s) || size <= kMediumSizeMax) return false;
  // Growing, the block is about to use what is resident past its end.
  set_block_size(s, size, size > s->large_size ? Tail::kKeep : Tail::kPurge);
  return true;
}

MALLARD_RARE void* large_grow(void* p, size_t size, bool may_move) {
  Segment* s = segment_of(p);
  if (s == nullptr || s->kind != SegmentKind::kLarge || p != s->slots[0].start || !plain_mapping(s)) return nullptr;
  if (size > kMaxRequest || size <= capacity_of(s)) return nullptr;
  size_t total = os::round_to_page(block_offset(s) + os::round_to_page(size));
  Segment* grown = large_segment_grow(s, total, may_move);
  if (grown == nullptr) return nullptr;
  set_block_size(grown, size, Tail::kKeep);  // growing, as in large_resize_in_place
  return grown->slots[0].start;
}

size_t large_cache_purge(uint64_t now, bool release_all) {
  if (g_stats.large_cached.load(std::memory_order_relaxed) == 0) return 0;
  uint64_t delay = static_cast<uint64_t>(option_purge_delay_ms());
  size_t bytes = 0;
  Segment* released = nullptr;
  {
    LockGuard guard(g_large_lock);
    for (Segment* s = g_cache_last; s != nullptr;) {
      Segment* prev = s->cache_prev;
      if (release_all) {
        cache_unlink(s);
        s->cache_next = released;
        released = s;
        bytes += s->mapped_size;
      } else if (s->slots[0].is_dirty && s->freed_at_ms + delay <= now) {
        // The block's first bytes share their page with the header, which
        // stays: they stay dirty (calloc clears them on reuse).
        uintptr_t start = reinterpret_cast<uintptr_t>(s->slots[0].start);
        uintptr_t first_whole_page = os::round_to_page(start);
        bytes += purge_large_range(s, first_whole_page);
        s->slots[0].is_dirty = 0;
        s->large_dirty = first_whole_page - start;
      }
      s = prev;
    }
  }
  while (released != nullptr) {
    Segment* next = released->cache_next;
    large_segment_unmap(released);
    released = next;
  }
  return bytes;
}

}  // namespace mallard
