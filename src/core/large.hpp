// Large blocks (above kMediumSizeMax, or aligned beyond what a size class
// gives): each in its own page-granular mapping, a "large segment". Freed ones
// are kept in a cache (up to large_cache_mb) for reuse, purged after the
// purge delay, and unmapped when the cache is full.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.hpp"

namespace mallard {

class Lock;
extern Lock g_large_lock;

// nullptr with errno = ENOMEM when the request cannot be met. With `zero`, the
// block reads as zeros (fresh or purged mappings need no memset).
void* large_malloc(size_t size, size_t alignment, bool zero);
void large_free(Segment* segment, void* p, const char* what);
size_t large_usable_size(Segment* segment, const void* p, const char* what);

// A block of `size` bytes (a large size) in a cached mapping whose pages may
// all be resident up to `size`, for a block that realloc grows: its resident
// pages past `size` are kept for it to grow into. nullptr if no cached
// mapping fits.
void* large_malloc_warm(size_t size);

// Resizes the large block at p in place when its mapping can hold `size`;
// false otherwise (p is not a large block, or it is too small).
bool large_resize_in_place(void* p, size_t size);

// Grows the large block at p past its mapping to `size` bytes by growing the
// mapping in place or, with `may_move`, moving it (mremap): its bytes are
// not copied. Returns the block, at a new address if it moved; nullptr if p
// is not a large block of an ordinary (at most page-aligned) mapping, or its
// mapping could not grow (in place, unless it may move).
void* large_grow(void* p, size_t size, bool may_move);

// Moves the heap's own cached large blocks to the global cache (purge tick,
// thread exit, trim). Caller owns the heap.
void heap_large_cache_flush(Heap* heap);

// Purges cached blocks older than the delay (all of them, and unmaps them,
// with `release_all`). Returns bytes purged or unmapped.
size_t large_cache_purge(uint64_t now_ms, bool release_all);

}  // namespace mallard
