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

// dirty_max_kb in bytes: the dirty free pages a heap keeps.
size_t dirty_cap_bytes();

// Moves an empty page to the heap's dirty free pages and runs a purge tick.
void heap_page_free(Heap* heap, Page* page);

// Purges dirty pages freed at or before now - purge_delay_ms, and the oldest
// others while dirty bytes exceed `dirty_cap`. Returns bytes purged.
size_t heap_purge(Heap* heap, uint64_t now_ms, size_t dirty_cap);

// Purges every dirty medium page (see heap_thread_exit). Returns bytes purged.
size_t heap_purge_medium(Heap* heap);

}  // namespace mallard
