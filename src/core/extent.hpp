// Extents: the blocks that realloc grows to, or makes from nothing at, more
// than kExtentMinSize (up to kMediumSizeMax), and the medium blocks (over
// kSmallSizeMax) of a heap that holds extent_heap_mb of segments
// (malloc_generic), carved in 1 KiB granules from 4 MiB extent segments, best
// fit, with free neighbours coalescing.
//
// Why: a size class keeps each block freed in its pages for its own class.
// A buffer that realloc grows moves through the classes one after another,
// and every class it passes keeps as much memory resident as it ever held
// at once, whatever the other classes need then (regrow, four threads
// growing 256 buffers each: 41 MiB of medium blocks carved for 17.5 MiB in
// use; DESIGN.md "Grown buffers in coalescing extents"). Extents give a
// freed block's memory to whatever size asks next.
//
// Extent segments belong to no heap: they are grouped in a few shards, each
// behind a lock that every malloc and free of its blocks takes (from any
// thread); a thread takes the next shard, round robin, for its first
// extent. Blocks of other sizes and of other paths never come here, so the
// fast paths do not change (a large heap's medium malloc comes here from the
// slow path, when its class's current page has no free block); a free of an
// extent block finds it through free_slow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.hpp"

namespace mallard {

// A block of at least `size` bytes (kExtentMinSize < size <= kMediumSizeMax)
// whose first `copy` bytes the caller writes at once: memory the segment
// never handed out is populated for them in one system call. nullptr (errno
// ENOMEM) when no segment can be mapped.
void* extent_malloc(size_t size, size_t copy);

// Frees p, which free_slow found in an extent segment: reports a pointer that
// is not an extent block's start (never allocated, inside a block, or freed
// already) with its address, and aborts.
void extent_free(Segment* segment, void* p, const char* what);

size_t extent_usable_size(Segment* segment, const void* p, const char* what);

// realloc of p to `size` bytes, larger than p's block and than
// kExtentMinSize, for which it would rather have `target` (size <= target
// <= kMediumSizeMax): p itself when p is an extent block and the free extent
// after it holds target (or else size); otherwise a new extent block as
// extent_malloc(target, copy) makes it, which the caller copies p into
// before freeing p.
void* extent_realloc(void* p, size_t size, size_t target, size_t copy);

// One sweep, from the global purge tick (at most once a purge delay): purges
// the pages of the free extents freed before the previous sweep, so that
// memory freed a purge delay or more ago goes back even while blocks live
// around it; or (all_free_extents: malloc_trim) those of every free extent.
// Returns the bytes purged.
size_t extents_purge(bool all_free_extents);

// Statistics of one extent segment: bytes in live blocks, and bytes that may
// be resident (up to the furthest granule ever handed out, less the purged
// pages of its clean free extents).
void extent_segment_stats(Segment* segment, size_t* allocated, size_t* resident);

// Fork: the shards' locks are taken before fork and released on both sides.
void extents_fork_prepare();
void extents_fork_parent();
void extents_fork_child();

}  // namespace mallard
