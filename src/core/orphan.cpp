#include "core/orphan.hpp"

#include <sched.h>

#include "core/heap.hpp"
#include "core/large.hpp"
#include "core/options.hpp"
#include "core/page.hpp"
#include "core/purge.hpp"
#include "core/remote.hpp"
#include "core/segment.hpp"
#include "core/stats.hpp"
#include "os/os.hpp"

namespace mallard {

Lock g_orphan_lock;

namespace {

Heap* g_orphans = nullptr;

// Takes the orphan at *link if its work lock is free (one being freed into by
// another thread is skipped rather than waited for). g_orphan_lock is held.
Heap* orphan_unlink(Heap** link) {
  Heap* heap = *link;
  if (!heap->orphan_work_lock.try_lock()) return nullptr;
  *link = heap->next_orphan;
  heap->next_orphan = nullptr;
  heap->orphaned.store(false, std::memory_order_relaxed);
  heap->inherited = heap_segments_used(heap) != 0;
  heap->adopted = true;
  heap->orphan_work_lock.unlock();
  stats_sub(g_stats.orphaned_heaps, 1);
  return heap;
}

// Adopts an orphan heap: `preferred` if it is one, else (unless
// `only_preferred`) the most recently orphaned one available.
Heap* orphan_pop(const Heap* preferred, bool only_preferred) {
  if (g_stats.orphaned_heaps.load(std::memory_order_relaxed) == 0) return nullptr;
  LockGuard guard(g_orphan_lock);
  for (Heap** link = &g_orphans; preferred != nullptr && *link != nullptr; link = &(*link)->next_orphan) {
    if (*link == preferred) {
      if (Heap* heap = orphan_unlink(link)) return heap;
      break;
    }
  }
  if (only_preferred) return nullptr;
  for (Heap** link = &g_orphans; *link != nullptr; link = &(*link)->next_orphan) {
    if (Heap* heap = orphan_unlink(link)) return heap;
  }
  return nullptr;
}

}  // namespace

// A new thread whose first call frees a block of another thread's heap,
// `preferred`: if that heap is not an orphan yet, its thread may be handing
// over to this one and about to exit (larson: each thread starts its
// successor, then exits). A few yields let it finish, so that this thread
// adopts the heap holding the blocks it will free, not another lineage's.
// Taking another one made every hand-over a remote free, and one heap's
// pages were emptied while another's were carved: larson's peak RSS median
// 27.6 -> 20.7 MiB over ten runs (DESIGN.md). A thread that frees into a
// heap whose thread lives on waits these yields once.
constexpr int kHandOverYields = 4;

Heap* orphan_pop_after_hand_over(const Heap* preferred) {
  for (int i = 0; preferred != nullptr && i < kHandOverYields; ++i) {
    if (Heap* heap = orphan_pop(preferred, true)) return heap;
    sched_yield();
  }
  return orphan_pop(preferred, false);
}

void orphan_push(Heap* heap) {
  {
    LockGuard work(heap->orphan_work_lock);
    heap->orphaned_at_ms = os::now_ms();
    heap->orphaned.store(true, std::memory_order_release);
    // Blocks pushed by other threads before they could see the flag.
    heap_drain_remote(heap);
  }
  LockGuard guard(g_orphan_lock);
  heap->next_orphan = g_orphans;
  g_orphans = heap;
  stats_add(g_stats.orphaned_heaps, 1);
}

// The dirty bytes an orphan keeps. For a purge delay after its thread exited,
// three times dirty_max_kb: a new thread is likely to adopt it and reuse those
// pages warm (thread churn frees the blocks a thread left behind right after
// it exits). Not the cap its thread had raised for itself (heap_dirty_cap, up
// to 32 times dirty_max_kb): exited threads' raised caps kept threadchurn's
// free pages warm for the whole run in one run of five (resident 40-42 MiB
// with 14-23 MiB in use, peaks of 45-57 MiB against 24-32). Keeping only
// dirty_max_kb, threadchurn's adopting threads faulted in again what it
// purged, at 0.45-0.78x the speed; twice that ran 1.6x faster for the same
// peak, and three times 1.6x faster again, its threads' 4 MiB each then
// coming back warm (DESIGN.md "An orphan keeps dirty_max_kb", "An orphan
// keeps three times dirty_max_kb"). After the delay, half of dirty_max_kb, so
// that a program whose threads are gone sees its RSS fall even if no thread
// allocates afterwards.
namespace {
constexpr size_t kRecentOrphanCaps = 3;
size_t orphan_dirty_cap(const Heap* orphan, uint64_t now) {
  bool recent = now < orphan->orphaned_at_ms + static_cast<uint64_t>(option_purge_delay_ms());
  return recent ? kRecentOrphanCaps * dirty_cap_bytes() : dirty_cap_bytes() / 2;
}
}  // namespace

// Blocks of an exited thread's heap: no owner will drain them soon, so free
// them on the orphan's behalf under the heap's work lock (which also keeps the
// heap from being adopted meanwhile), and purge to the orphan dirty cap.
// Only try the lock: if another thread is working on the heap, a remote push
// is just as good (the blocks are drained by the next collector). Returns
// false if the blocks were not freed here.
bool orphan_free(Heap* owner, Block* const* blocks, size_t count) {
  if (!owner->orphan_work_lock.try_lock()) return false;
  bool orphaned = owner->orphaned.load(std::memory_order_relaxed);
  if (orphaned) {
    for (size_t i = 0; i < count; ++i) free_to_owner(owner, blocks[i]);
    uint64_t now = os::now_ms();
    heap_purge(owner, now, orphan_dirty_cap(owner, now));
  }
  owner->orphan_work_lock.unlock();
  return orphaned;
}

namespace {

// Appends every page of `from` to `to`.
void page_list_move(PageList* from, PageList* to) {
  while (Page* page = from->first) {
    page_list_remove(from, page);
    page_list_push_back(to, page);
  }
}

// Makes `heap` the owner of every page of `orphan`'s segments.
void segments_change_owner(Heap* orphan, Heap* heap) {
  LockGuard guard(g_segments_lock);
  uint32_t left = orphan->segments_owned;
  for (Segment* segment = g_segments; segment != nullptr && left > 0; segment = segment->next) {
    if (segment->heap != orphan) continue;
    segment->heap = heap;
    --left;
    for (uint32_t i = 0; i < segment->pages_initialized; ++i) {
      Page* page = segment_page(segment, i);
      page->heap = heap;
      page->remote_slot = heap->remote_slot;
      page_set_flags(page, page->flags);  // local_owner follows heap
    }
  }
  heap->segments_owned = heap->segments_owned + orphan->segments_owned;
  orphan->segments_owned = 0;
  orphan->host_absorbed = true;  // its host, if still its own, went too
}

}  // namespace

bool orphan_absorb(Heap* heap) {
  Heap* orphan = nullptr;
  {
    LockGuard guard(g_orphan_lock);
    for (Heap* candidate = g_orphans; candidate != nullptr; candidate = candidate->next_orphan) {
      if (candidate->segments_owned == 0 || !candidate->orphan_work_lock.try_lock()) continue;
      if (heap_segments_used(candidate) != 0) {
        orphan = candidate;
        break;
      }
      candidate->orphan_work_lock.unlock();
    }
  }
  if (orphan == nullptr) return false;
  // Blocks freed into its pages while they are still its; later ones are
  // forwarded by whoever drains its stack (free_to_owner).
  heap_drain_remote(orphan);
  heap_large_cache_flush(orphan);
  segments_change_owner(orphan, heap);
  for (unsigned c = 1; c < kClassCount; ++c) {
    while (Page* page = orphan->queues[c].first) {
      queue_remove(orphan, c, page);
      queue_push_back(heap, c, page);
    }
  }
  for (unsigned k = 0; k < 2; ++k) {
    page_list_move(&orphan->free_dirty[k], &heap->free_dirty[k]);
    page_list_move(&orphan->free_clean[k], &heap->free_clean[k]);
    // Setting up their descriptors now (as clean free pages) wrote two more
    // header pages per segment: 8 KiB a thread in sizes:32B (DESIGN.md).
    Segment** tail = &heap->fresh[k];
    while (*tail != nullptr) tail = &(*tail)->fresh_next;
    *tail = orphan->fresh[k];
    orphan->fresh[k] = nullptr;
  }
  heap->inherited = true;
  heap->dirty_bytes += orphan->dirty_bytes;
  orphan->dirty_bytes = 0;
  // Its pages come with what its thread learned about keeping them: the
  // memory it was made to purge is what this heap now faults in.
  heap_inherit_dirty_cap(heap, orphan);
  uint64_t now = os::now_ms();
  heap_purge(orphan, now, 0);  // nothing left: resets its purge schedule
  orphan->orphan_work_lock.unlock();
  return true;
}

size_t orphans_collect(bool wait, bool purge_all) {
  if (g_stats.orphaned_heaps.load(std::memory_order_relaxed) == 0) return 0;
  if (wait) {
    g_orphan_lock.lock();
  } else if (!g_orphan_lock.try_lock()) {
    return 0;
  }
  size_t purged = 0;
  for (Heap* heap = g_orphans; heap != nullptr; heap = heap->next_orphan) {
    if (wait) {
      heap->orphan_work_lock.lock();
    } else if (!heap->orphan_work_lock.try_lock()) {
      continue;
    }
    purged += heap_collect(heap, purge_all);
    heap->orphan_work_lock.unlock();
  }
  g_orphan_lock.unlock();
  return purged;
}

MALLARD_RARE void orphans_after_fork_in_child() {
  // A heap whose work lock was held by a thread that does not exist in the
  // child may be half-updated: drop it from the orphan list (its memory is
  // leaked in the child, never corrupted). The others are unlocked anyway.
  Heap** link = &g_orphans;
  while (Heap* heap = *link) {
    if (!heap->orphan_work_lock.try_lock()) {
      *link = heap->next_orphan;
      stats_sub(g_stats.orphaned_heaps, 1);
      continue;
    }
    heap->orphan_work_lock.unlock();
    link = &heap->next_orphan;
  }
}

}  // namespace mallard
