#include "core/large.hpp"

#include <errno.h>

#include <cstring>

#include "core/init.hpp"
#include "core/lock.hpp"
#include "core/options.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

SpinLock g_large_lock;

namespace {

// Freed large segments, most recently freed first: reuse takes the best fit,
// eviction and purging take the oldest, from the tail.
Segment* g_cache_first = nullptr;
Segment* g_cache_last = nullptr;
size_t g_cache_bytes = 0;

size_t block_offset(const Segment* s) {
  return static_cast<size_t>(s->pages[0].start - reinterpret_cast<const uint8_t*>(s));
}

size_t usable_of(const Segment* s) { return s->mapped_size - block_offset(s); }

size_t header_bytes() { return (sizeof(Segment) + os::page_size() - 1) & ~(os::page_size() - 1); }

size_t cache_cap_bytes() { return static_cast<size_t>(option(kOptLargeCacheMb)) << 20; }

void cache_unlink(Segment* s) {
  if (s->cache_prev != nullptr) s->cache_prev->cache_next = s->cache_next; else g_cache_first = s->cache_next;
  if (s->cache_next != nullptr) s->cache_next->cache_prev = s->cache_prev; else g_cache_last = s->cache_prev;
  g_cache_bytes -= s->mapped_size;
  stats_sub(g_stats.large_cached, s->mapped_size);
}

void cache_push_front(Segment* s) {
  s->cache_prev = nullptr;
  s->cache_next = g_cache_first;
  if (g_cache_first != nullptr) g_cache_first->cache_prev = s; else g_cache_last = s;
  g_cache_first = s;
  g_cache_bytes += s->mapped_size;
  stats_add(g_stats.large_cached, s->mapped_size);
}

// The smallest cached block that holds `size` without wasting more than a
// quarter of it (plus a page), so a cached 64 MiB block does not serve 1 MiB.
Segment* cache_take(size_t size) {
  if (g_cache_first == nullptr) return nullptr;
  LockGuard guard(g_large_lock);
  Segment* best = nullptr;
  size_t limit = size + size / 4 + os::page_size();
  for (Segment* s = g_cache_first; s != nullptr; s = s->cache_next) {
    size_t usable = usable_of(s);
    if (block_offset(s) != header_bytes() || usable < size || usable > limit) continue;
    if (best == nullptr || usable < usable_of(best)) best = s;
  }
  if (best != nullptr) cache_unlink(best);
  return best;
}

}  // namespace

void* large_malloc(size_t size, size_t alignment, bool zero) {
  if (size > kMaxRequest || alignment > kMaxAlignment) {
    errno = ENOMEM;
    return nullptr;
  }
  process_init();
  if (size == 0) size = 1;
  bool fresh = false;
  Segment* s = alignment <= os::page_size() ? cache_take(size) : nullptr;
  if (s == nullptr) {
    s = large_segment_map(size, alignment);
    if (s == nullptr) {
      errno = ENOMEM;
      return nullptr;
    }
    fresh = true;
  }
  Page* page = &s->pages[0];
  bool dirty = !fresh && page->is_dirty;
  page->flags = kPageLarge;
  page->used.store(1, std::memory_order_relaxed);
  page->is_dirty = 1;
  if (zero && dirty) memset(page->start, 0, size);
  return page->start;
}

void large_free(Segment* s, void* p, const char* what) {
  Page* page = &s->pages[0];
  if (p != page->start) {
    if (p > page->start && static_cast<uint8_t*>(p) < page->start + usable_of(s)) {
      report_interior_pointer(what, p, page->start);
    }
    report_invalid_pointer(what, p);
  }
  if (page->flags & kPageUnused) report_double_free(what, p);
  page->flags = kPageLarge | kPageUnused;
  page->used.store(0, std::memory_order_relaxed);
  size_t cap = cache_cap_bytes();
  if (block_offset(s) != header_bytes() || s->mapped_size > cap / 2) {
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

size_t large_usable_size(Segment* s, const void* p) {
  Page* page = &s->pages[0];
  if (p != page->start || (page->flags & kPageUnused)) report_invalid_pointer("malloc_usable_size", p);
  return usable_of(s);
}

size_t large_cache_purge(uint64_t now, bool release_all) {
  if (g_cache_first == nullptr) return 0;
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
      } else if (s->pages[0].is_dirty && s->freed_at_ms + delay <= now) {
        os::purge(s->pages[0].start, usable_of(s));
        s->pages[0].is_dirty = 0;
        stats_add(g_stats.purged_total, usable_of(s));
        bytes += usable_of(s);
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
