// Thread heaps: creation and adoption, the allocation slow path, local and
// remote frees, page retirement, and what a thread hands back when it exits.
#pragma once

#include <cstddef>

#include "core/lock.hpp"
#include "core/types.hpp"

namespace mallard {

// The class of each direct slot (sizes (slot-1)*8+1 .. slot*8), set at
// process start from the align16 option.
extern uint8_t g_direct_class[kDirectSlots];

// The size class serving a request of `size` bytes (<= kMediumSizeMax).
unsigned request_class(size_t size);

// This thread's heap, set up on first use; nullptr only when out of memory.
// A thread without one adopts an orphan heap if there is one: preferably
// `preferred_orphan`, the owner of the block its first call frees (a thread
// that takes over a dead thread's blocks, as in larson and threadchurn, then
// frees them locally and reuses their pages instead of filling another heap).
Heap* heap_get(const Heap* preferred_orphan = nullptr);

// Allocates one block of `size_class` from `heap`, aligned to `alignment`
// (for aligned requests: the class is then a multiple of it, up to 8 KiB).
void* heap_malloc_class(Heap* heap, unsigned size_class, size_t alignment = 0, size_t zeroed_bytes = 0);

// For remote.cpp, which returns blocks to their pages:
// A page of `heap` with a free block for `size_class` (queue walk, refill,
// or a new page), whose blocks are aligned to start_alignment if nonzero;
// nullptr when out of memory. With may_borrow, a young heap may return a
// page of a larger class instead (heap.cpp, young_heap_lender).
Page* heap_find_page(Heap* heap, unsigned size_class, size_t start_alignment = 0, bool may_borrow = false);
// The owner (or whoever holds an orphan's work lock) puts `block` back on its
// page's local free list: the page rejoins its queue if it was full, and is
// retired if it is now empty.
void free_local_slow(Heap* heap, Page* page, Block* block);

// Set when this thread's heap was handed back at exit: a free from a later
// TLS destructor must not adopt a heap again only to batch remote frees.
extern constinit thread_local bool tls_thread_exiting;

// Gives back the empty pages kept at the head of their queues (see
// page_now_empty); called from the purge tick once per purge delay.
void heap_release_kept_pages(Heap* heap);

// Called by the pthread key destructor when a thread exits.
void heap_thread_exit(void* heap);

// Drains remote frees and frees every empty page; then purges every free page
// (purge_all) or those past the delay and beyond the dirty cap.
// Returns the number of bytes purged. Caller owns the heap.
size_t heap_collect(Heap* heap, bool purge_all);

// Purges this heap's free pages whose delay has passed (or beyond the dirty
// cap); called on page events.
void heap_purge_tick(Heap* heap, uint64_t now_ms);

// Every heap ever made, newest first (Heap::next_all), and the lock under
// which the list grows.
extern Lock g_heaps_lock;
extern Heap* g_all_heaps;

void heap_process_init();

}  // namespace mallard
