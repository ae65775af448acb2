// Process-wide counters updated on page- and segment-level events (never on
// the per-block fast paths); per-block figures are summed over the pages when
// asked for (stats.cpp).
#pragma once

#include <atomic>
#include <cstddef>

#include "core/size_class.hpp"
#include "mallard/mallard.h"

namespace mallard {

struct GlobalStats {
  std::atomic<size_t> mapped;
  std::atomic<size_t> metadata;
  std::atomic<size_t> retained;
  std::atomic<size_t> purged_total;
  std::atomic<size_t> segments;
  std::atomic<size_t> heaps;
  std::atomic<size_t> orphaned_heaps;
  std::atomic<size_t> large_cached;   // bytes of freed large blocks held for reuse
};
extern GlobalStats g_stats;

inline void stats_add(std::atomic<size_t>& c, size_t n) { c.fetch_add(n, std::memory_order_relaxed); }
inline void stats_sub(std::atomic<size_t>& c, size_t n) { c.fetch_sub(n, std::memory_order_relaxed); }

// Where the small and medium pages stand, per size class (jemalloc's bin
// statistics): what mallard_stats_print adds to the totals, to see which
// classes hold memory that their live blocks do not use.
struct ClassStats {
  size_t pages;          // pages holding the class
  size_t full_pages;     // of which none has a free block
  size_t blocks_used;    // live blocks (one freed by another thread counts until its owner drains it)
  size_t blocks_carved;  // blocks made in those pages so far: their touched memory
};
// Large blocks and extents, where the per-class figures do not reach:
// memory a reused large block or a cached one keeps resident, and the free
// space between extent blocks (DESIGN.md "Statistics").
struct LargeStats {
  size_t blocks;          // live large blocks
  size_t bytes;           // their sizes (in whole pages)
  size_t past_end;        // bytes past their ends that may be resident
  size_t cached_blocks;   // freed ones held for reuse (global and thread caches)
  size_t cached_bytes;    // bytes of those that may be resident
};
struct ExtentStats {
  size_t bytes;           // in live extent blocks
  size_t resident;        // of extent segments that may be resident
};
struct PageStats {
  ClassStats classes[kClassCount];
  size_t dirty_pages;    // free pages whose memory is still resident
  size_t dirty_bytes;    // what of them is (as far as blocks were carved)
  LargeStats large;
  ExtentStats extents;
};

// The totals; with `pages`, also the per-class figures (one walk for both).
void stats_collect(mallard_stats* out, PageStats* pages = nullptr);
// Text or JSON (opts contains 'J') into fd, without malloc (used at exit too).
void stats_write_fd(int fd, const char* opts);

}  // namespace mallard
