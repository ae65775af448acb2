// Heaps of exited threads ("orphans"). A thread's heap outlives it: at exit
// it joins the orphan list with its pages, and the next new thread adopts it
// (orphan_pop_after_hand_over), while frees into it from other threads are
// done on its behalf (orphan_free), a live heap about to take memory that is
// not resident yet may absorb its pages instead (orphan_absorb), and any
// thread's purge tick sweeps the list (orphans_collect). Every change to an
// orphan happens under its orphan_work_lock; the list itself is under
// g_orphan_lock.
#pragma once

#include <cstddef>

#include "core/lock.hpp"
#include "core/types.hpp"

namespace mallard {

extern Lock g_orphan_lock;

// Makes `heap`, whose thread is exiting and which no thread owns any more
// (heap_thread_exit), an orphan: flagged, its remote frees drained, and on
// the orphan list for the next new thread to adopt.
void orphan_push(Heap* heap);

// The heap a new thread adopts: `preferred`, the owner of the block its
// first call frees, if that heap is an orphan or becomes one within a few
// yields (its thread may be handing over to this one), else the most
// recently orphaned one free to take; nullptr if none.
Heap* orphan_pop_after_hand_over(const Heap* preferred);

// Frees blocks of an orphaned heap on its behalf, under its lock once; false
// if not done here (the heap is busy or no longer an orphan): push them as
// remote frees then.
bool orphan_free(Heap* owner, Block* const* blocks, size_t count);

// Takes over the pages of an exited thread's heap that nobody has adopted:
// its segments, their pages with free blocks and its free pages, all still
// resident. Called by a live heap about to take memory that is not resident
// yet, so that threads overlapping with those that exited reuse their memory
// rather than each keeping its own (threadchurn; DESIGN.md). The emptied
// orphan stays on the orphan list, to be adopted by a new thread; blocks
// freed into it later are forwarded. Returns false if no orphan holding
// segments was free to take.
bool orphan_absorb(Heap* heap);

// Sweeps the heaps of exited threads (heap_collect on each). Returns bytes
// purged. `wait` chooses between lock and try_lock.
size_t orphans_collect(bool wait, bool purge_all);

// In the child after fork (single-threaded, global locks reset).
void orphans_after_fork_in_child();

}  // namespace mallard
