// Returning memory to the OS. A page whose last block is freed stays resident
// ("dirty") for purge_delay_ms, so that a burst of frees followed by a burst of
// mallocs does not pay madvise and page faults; after the delay, or at once
// when the heap's dirty bytes exceed dirty_max_kb, it is purged (MADV_DONTNEED)
// and RSS falls. A segment whose pages are all free and purged is released.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.hpp"

namespace mallard {

// dirty_max_kb in bytes: the dirty free pages a heap keeps at first.
size_t dirty_cap_bytes();

// The dirty free pages `heap` keeps now: dirty_cap_bytes() times a power of
// two, raised when the heap purged memory past its cap and needed it again
// within a purge delay, up to 32 times (halved for each delay in which half
// of it went unused).
size_t heap_dirty_cap(const Heap* heap);

// `heap`, out of dirty pages, takes one that is not resident (one it purged,
// or one never touched) for new blocks: if its cap forced a purge less than a
// purge delay ago, that purge only bought page faults, and the cap grows to
// what would have kept it.
void heap_note_cold_page_taken(Heap* heap);

// `heap` absorbs `orphan`'s pages: it takes the larger cap, and the orphan's
// record of purges its cap forced if that is the more recent.
void heap_inherit_dirty_cap(Heap* heap, const Heap* orphan);

// Moves an empty page to the heap's dirty free pages and runs a purge tick.
void heap_page_free(Heap* heap, Page* page);

// Purges dirty pages freed at or before now - purge_delay_ms, and the oldest
// others while dirty bytes exceed `dirty_cap`. Returns bytes purged.
size_t heap_purge(Heap* heap, uint64_t now_ms, size_t dirty_cap);

// What an exiting thread's heap made new does with its dirty medium pages
// (heap_thread_exit): purges them all, unless they may hold no more than
// kExitKeepsMediumBytes (page_touched_bytes), which then wait for the
// purge delay like any free page, for an adopter to take them warm or the
// orphan sweep to purge them. 15 OS pages past the header's: a 32 KiB
// block's 8 stay, a 64 KiB block's 16 go. Returns bytes purged.
constexpr size_t kExitKeepsMediumBytes = 60 * 1024;
size_t heap_purge_medium_at_exit(Heap* heap);

}  // namespace mallard
