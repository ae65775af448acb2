#include "core/purge.hpp"

#include <cstring>

#include "core/heap.hpp"
#include "core/extent.hpp"
#include "core/large.hpp"
#include "core/options.hpp"
#include "core/orphan.hpp"
#include "core/page.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

namespace {

std::atomic<uint64_t> g_next_global_purge_ms{0};


unsigned kind_index(const Segment* segment) { return segment->kind == SegmentKind::kSmall ? 0 : 1; }


// All pages of `segment` are free, and all purged but [dirty, dirty +
// dirty_bytes): unlink them and give the segment back (to the segment cache
// or the OS).
void heap_segment_release(Heap* heap, Segment* segment, void* dirty, size_t dirty_bytes) {
  unsigned k = kind_index(segment);
  for (uint32_t i = 0; i < segment->pages_initialized; ++i) page_list_remove(&heap->free_clean[k], segment_page(segment, i));
  for (Segment** link = &heap->fresh[k]; *link != nullptr; link = &(*link)->fresh_next) {
    if (*link == segment) {
      *link = segment->fresh_next;
      break;
    }
  }
  segment_release(segment, dirty, dirty_bytes);
}

// What the heap's dirty medium pages may hold resident.
size_t dirty_medium_touched(Heap* heap) {
  size_t bytes = 0;
  for (Page* page = heap->free_dirty[1].first; page != nullptr; page = page->next) {
    bytes += page_touched_bytes(page_segment(page), page_index(page));
  }
  return bytes;
}

bool is_dirty_free(const Page* page) { return (page->flags & kPageUnused) != 0 && page->is_dirty; }

// Purges `page` together with the dirty free pages next to it in the same
// segment, in one range: neighbours freed slightly later go early, which
// costs nothing but saves a range each. The batch is flushed before a
// segment goes back: a released segment may be taken from the cache by
// another thread at once, and must not be purged under it.
size_t page_purge(Heap* heap, Page* page, os::PurgeBatch& pending) {
  Segment* segment = page_segment(page);
  unsigned k = kind_index(segment);
  size_t first = page_index(page);
  size_t last = first;
  while (first > 0 && is_dirty_free(segment_page(segment, first - 1))) --first;
  while (last + 1 < segment->pages_initialized && is_dirty_free(segment_page(segment, last + 1))) ++last;
  size_t bytes = 0;
  for (size_t i = first; i <= last; ++i) {
    Page* p = segment_page(segment, i);
    size_t size = page_area_size(segment, i);
    page_list_remove(&heap->free_dirty[k], p);
    heap->dirty_bytes -= size;
    p->is_dirty = 0;
    p->touched_end = 0;
    segment->pages_dirty_free--;
    page_list_push_back(&heap->free_clean[k], p);
    bytes += size;
  }
  stats_add(g_stats.purged_total, bytes);
  void* start = page_area_start(segment, first);
  size_t range = bytes;
  // A medium segment's page 0 starts inside the header's OS page, which
  // stays: the part of it that the page's blocks used is zeroed instead, so
  // that the page reads as zero from its start like any purged memory
  // (touched_end 0: calloc relies on it), and so do the header slots of the
  // small segment that this one may become once cached.
  uintptr_t head = reinterpret_cast<uintptr_t>(start);
  uintptr_t head_end = os::round_to_page(head);
  if (head_end != head) {
    std::memset(start, 0, head_end - head);
    start = reinterpret_cast<void*>(head_end);
    range -= head_end - head;
  }
  // Were these the segment's last dirty pages and none is in use, the
  // segment goes back whole, and unmapping it returns them without a madvise
  // of their own: one system call and TLB shootdown instead of two, at the
  // exit of each thread whose heap had only medium pages (DESIGN.md, "A
  // segment given back whole is not purged first"). A segment hosting a heap
  // stays.
  if (segment->pages_in_use == 0 && segment->pages_dirty_free == 0 && !segment_hosts_heap(segment)) {
    pending.flush();
    heap_segment_release(heap, segment, start, range);
  } else {
    segment_before_purge(segment);
    pending.add(start, range);
  }
  return bytes;
}

Page* oldest_dirty(Heap* heap) {
  Page* a = heap->free_dirty[0].first;
  Page* b = heap->free_dirty[1].first;
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  return a->freed_at_ms <= b->freed_at_ms ? a : b;
}

uint64_t purge_delay() { return static_cast<uint64_t>(option_purge_delay_ms()); }

// The delay, but at least 1 ms: with a delay of 0 the global sweep still runs
// at most once a millisecond.
uint64_t sweep_interval() {
  uint64_t delay = purge_delay();
  return delay > 0 ? delay : 1;
}

// Whether work scheduled for `at` (~0: nothing scheduled) is due at `now`.
// A time further ahead than one interval was set under a longer
// purge_delay_ms that has been lowered since (mallard_option_set): it is due
// now, not when the old delay would have ended.
bool purge_due(uint64_t at, uint64_t now) {
  return now >= at || (at != ~uint64_t{0} && at - now > sweep_interval());
}

void schedule_next(Heap* heap) {
  Page* oldest = oldest_dirty(heap);
  heap->next_purge_ms = oldest == nullptr ? ~uint64_t{0} : oldest->freed_at_ms + purge_delay();
}

// Work not tied to one heap: the large-block cache and exited threads' heaps.
void global_purge_tick(uint64_t now) {
  uint64_t next = g_next_global_purge_ms.load(std::memory_order_relaxed);
  if (!purge_due(next, now)) return;
  if (!g_next_global_purge_ms.compare_exchange_strong(next, now + sweep_interval())) return;
  large_cache_purge(now, false);
  extents_purge(false);
  orphans_collect(false, false);
}

}  // namespace

size_t dirty_cap_bytes() { return static_cast<size_t>(option(kOptDirtyMaxKb)) * 1024; }

// A heap that cycles through more memory than its cap within a purge delay
// (a thread that frees 40 MiB and allocates it again) would otherwise purge
// and fault in all but the cap on every cycle: with 8 threads doing so,
// page faults made threadchurn 25 times slower than with a cap it fits in
// (DESIGN.md "The dirty cap follows what a heap takes back"). At most 32
// times dirty_max_kb, 64 MiB at the default as when the default was 8 MiB
// and the limit 8 times (DESIGN.md "A 2 MiB dirty cap"): a heap with its cap
// raised that frees a 1 GiB peak and goes idle still keeps less than 10% of
// it.
constexpr unsigned kMaxDirtyCapShift = 5;

size_t heap_dirty_cap(const Heap* heap) { return dirty_cap_bytes() << heap->dirty_cap_shift; }

void heap_note_cold_page_taken(Heap* heap) {
  if (heap->cap_purged_at_ms == 0) return;
  if (os::now_ms() < heap->cap_purged_at_ms + purge_delay()) {
    // Enough to have kept what was purged: raising it one doubling per
    // cycle made a thread cycling through 40 MiB fault it in three times.
    size_t wanted = heap_dirty_cap(heap) + heap->cap_purged_bytes;
    while (heap->dirty_cap_shift < kMaxDirtyCapShift && heap_dirty_cap(heap) < wanted) heap->dirty_cap_shift++;
  }
  heap->cap_purged_at_ms = 0;
  heap->cap_purged_bytes = 0;
}

void heap_inherit_dirty_cap(Heap* heap, const Heap* orphan) {
  if (orphan->dirty_cap_shift > heap->dirty_cap_shift) heap->dirty_cap_shift = orphan->dirty_cap_shift;
  if (orphan->cap_purged_at_ms > heap->cap_purged_at_ms) {
    heap->cap_purged_at_ms = orphan->cap_purged_at_ms;
    heap->cap_purged_bytes = orphan->cap_purged_bytes;
  }
}

void heap_page_free(Heap* heap, Page* page) {
  Segment* segment = page_segment(page);
  // Its free lists stay: they hold every carved block, which a reuse for the
  // same class takes as they are (page_init).
  page_set_flags(page, kPageUnused);
  page->is_dirty = 1;
  uint64_t now = os::now_ms();
  page->freed_at_ms = now;
  page_list_push_back(&heap->free_dirty[kind_index(segment)], page);
  heap->dirty_bytes += page_area_size(segment, page_index(page));
  segment->pages_dirty_free++;
  segment->pages_in_use--;
  size_t cap = heap_dirty_cap(heap);
  if (heap->dirty_bytes > cap) {
    if (heap->cap_purged_at_ms == 0) heap->cap_purged_bytes = 0;
    heap->cap_purged_at_ms = now;
    heap->cap_purged_bytes += heap_purge(heap, now, cap);
    // Purging as much again as a raised cap keeps: the heap is shedding a
    // peak, not cycling through one, and keeps no more than at first (a
    // program that frees 512 MiB and goes idle would otherwise hold 64 MiB).
    if (heap->dirty_cap_shift > 0 && heap->cap_purged_bytes >= cap) {
      heap->dirty_cap_shift = 0;
      heap_purge(heap, now, heap_dirty_cap(heap));
    }
  } else if (purge_due(heap->next_purge_ms, now) || purge_delay() == 0) {
    heap_purge(heap, now, cap);
  } else if (heap->next_purge_ms == ~uint64_t{0} || heap->next_purge_ms == 0) {
    schedule_next(heap);
  }
  global_purge_tick(now);
}

size_t heap_purge(Heap* heap, uint64_t now, size_t dirty_cap) {
  uint64_t delay = purge_delay();
  // Past the cap, down to three quarters of it: a program freeing a large
  // structure then purges a quarter of the cap per pass, in one system call,
  // instead of one page per free that crosses the cap (3,750 madvise calls
  // to free 4 million blocks of 8-120 bytes).
  size_t low_water = heap->dirty_bytes > dirty_cap ? dirty_cap - dirty_cap / 4 : dirty_cap;
  size_t purged = 0;
  size_t purged_expired = 0;
  os::PurgeBatch pending;
  for (Page* page = oldest_dirty(heap); page != nullptr; page = oldest_dirty(heap)) {
    bool expired = now == ~uint64_t{0} || page->freed_at_ms + delay <= now;
    if (!expired && heap->dirty_bytes <= low_water) break;
    size_t bytes = page_purge(heap, page, pending);
    purged += bytes;
    if (expired) purged_expired += bytes;
  }
  pending.flush();
  // Half of what the heap may keep went unused for a whole delay: it keeps
  // less. (Any expired page at all undid the raise within a few rounds of a
  // churn whose rarer classes' pages expire while the rest are reused.)
  if (heap->dirty_cap_shift > 0 && purged_expired >= heap_dirty_cap(heap) / 2) heap->dirty_cap_shift--;
  schedule_next(heap);
  return purged;
}

size_t heap_purge_medium_at_exit(Heap* heap) {
  // A purge costs a system call and a TLB shootdown of every CPU running
  // the process, page by page up to 33 pages (30-93 us for 8 pages on the
  // virtual machine of the benchmarks): for a thread that touched a block or
  // two, more than the rest of its life. Kept, those pages cost at most 15
  // resident pages per orphan, as its small pages already do (DESIGN.md "A
  // thread's exit keeps a small medium remainder").
  if (dirty_medium_touched(heap) <= kExitKeepsMediumBytes) return 0;
  size_t purged = 0;
  os::PurgeBatch pending;
  while (Page* page = heap->free_dirty[1].first) purged += page_purge(heap, page, pending);
  pending.flush();
  schedule_next(heap);
  return purged;
}

void heap_purge_tick(Heap* heap, uint64_t now) {
  if (purge_due(heap->next_kept_release_ms, now)) {
    // Pages kept as their class's only page and empty for a whole delay.
    if (heap->next_kept_release_ms != 0) {
      heap_release_kept_pages(heap);
      heap_large_cache_flush(heap);
    }
    heap->next_kept_release_ms = now + purge_delay();
  }
  size_t cap = heap_dirty_cap(heap);
  if (purge_due(heap->next_purge_ms, now) || heap->dirty_bytes > cap) heap_purge(heap, now, cap);
  global_purge_tick(now);
}

}  // namespace mallard
