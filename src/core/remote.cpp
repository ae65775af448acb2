#include "core/remote.hpp"

#include "core/alloc.hpp"
#include "core/heap.hpp"
#include "core/orphan.hpp"
#include "core/report.hpp"
#include "core/segment.hpp"
#include "core/size_class.hpp"

namespace mallard {

namespace {

constexpr uintptr_t kBatchTag = 1;
constexpr unsigned kBatchClass = size_class_of(sizeof(RemoteBatch));
static_assert(class_size(kBatchClass) == sizeof(RemoteBatch));
static_assert(alignof(RemoteBatch) > kBatchTag, "the tag bit is free in a batch's address");

// Marks `block` free (its free key in word 1) before it leaves this thread,
// so that freeing it again, here or in its owner, is caught; reports it if
// it is free already. Returns the block.
Block* block_mark_freed(Block* block, uintptr_t key, const char* what) {
  if (MALLARD_UNLIKELY(block->key == key)) report_double_free(what, block);
  block->key = key;
  return block;
}

// Marks the blocks appended to a batch (remote_batch_append reads none of
// them) before it is handed over. The loads are independent, so the
// blocks' lines, most in other cores' caches, arrive in parallel rather
// than one free at a time. A double free is reported here, by the freeing
// thread still, and as free's: a block that the batch holds twice is found
// at its second entry.
void batch_mark_freed(RemoteBatch* batch) {
  for (uint32_t i = 0; i < batch->count; ++i) {
    Block* block = batch->blocks[i];
    block_mark_freed(block, free_key_of(paged_block_page(block)), "free");
  }
}

// Pushes `entry` onto owner's stack; `link` (the block or the batch, whose
// word 0 is the link) points at the previous top.
void remote_stack_push(Heap* owner, Block* link, Block* entry) {
  Block* head = owner->remote_free.load(std::memory_order_relaxed);
  do {
    link->next = head;
  } while (!owner->remote_free.compare_exchange_weak(head, entry, std::memory_order_release,
                                                     std::memory_order_relaxed));
}

// Pushes `count` (at least one) single blocks onto owner's stack at once,
// linked through their first words.
void remote_chain_push(Heap* owner, Block* const* blocks, uint32_t count) {
  for (uint32_t i = 0; i + 1 < count; ++i) blocks[i]->next = blocks[i + 1];
  remote_stack_push(owner, blocks[count - 1], blocks[0]);
}

// Frees a batch that has been handed over to `drained` and read. A hosted
// batch is one of the blocks freed into `drained` (its key is written);
// any other is a block of the heap that carved it, which may be this
// thread's, another live thread's, or an orphan.
//
// Another heap's batch (a live one's or an orphan's), drained by this
// thread for its own heap, goes back the way its blocks came: in this
// heap's batch for that heap, which it hosts or joins (a batch block can
// always host one: no batch is carved for it). Pushed back alone, each
// cost a compare-and-swap on the carver's stack, and the carver an
// exchange, for every 28 blocks it sent: in BM_cross_thread_free that swap
// was the hottest instruction of the producer's drain (DESIGN.md "Batch
// blocks go home in batches").
void free_batch_block(Heap* drained, RemoteBatch* batch) {
  auto* block = reinterpret_cast<Block*>(batch);
  if (batch_is_hosted(batch)) return free_to_owner(drained, block);
  Page* page = page_of_block(block);
  if (drained == tls_heap && page->heap != drained) return remote_free(page, block, free_key_of(page), "free");
  block->key = free_key_of(page);
  free_to_owner(tls_heap, block);
}
static_assert(class_size(kBatchClass) >= kBatchHostMinBytes, "a batch block hosts the batch that takes it home");

// A new batch for blocks of `owner`, carved from `heap`. The batches this
// heap handed over come back to it as remote frees: drain them first, or a
// thread that only frees (and so has no other slow path) would carve a new
// batch every 28 frees and keep none (xmalloc grew to 177 MiB).
// That drain may open this heap's batch in `slot` (free_batch_block sends
// other heaps' batch blocks home through it): one for `owner` is the batch
// to use, one for another heap is handed over. nullptr when out of memory.
RemoteBatch* batch_new(Heap* heap, unsigned slot, Heap* owner) {
  if (heap->remote_free.load(std::memory_order_relaxed) != nullptr) {
    heap_drain_remote(heap);
    if (RemoteBatch* opened = heap->outgoing[slot]) {
      if (opened->owner == owner) return opened;
      remote_batch_hand_over(heap, slot);
    }
  }
  Page* page = heap->queues[kBatchClass].first;
  if (page == nullptr || page->free == nullptr) page = heap_find_page(heap, kBatchClass);
  if (page == nullptr) return nullptr;
  auto* batch = static_cast<RemoteBatch*>(page_take(page));
  if (batch == nullptr) return nullptr;
  batch->key = 0;
  batch->owner = owner;
  batch->count = 0;
  batch->opened_at = heap->slow_calls;
  return batch;
}

// Makes `block`, freed into `owner` (its key written), the batch that
// carries it and the next blocks for `owner`, taking over the entries of
// `own`, this heap's batch for `owner` if any, which goes back to its page.
// The batch then costs no memory: the owner frees the host after reading
// it, instead of sending a block of this heap back, which this heap could
// reuse only after draining its own stack. In xmalloc, whose consumers free
// blocks of 8-512 bytes, the consumers' batches held 116-180 KiB each at
// the peak (DESIGN.md "Batches hosted by freed blocks").
RemoteBatch* batch_host(Heap* heap, RemoteBatch* own, Heap* owner, Block* block) {
  auto* host = reinterpret_cast<RemoteBatch*>(block);
  host->owner = owner;
  host->count = 0;
  host->opened_at = own != nullptr ? own->opened_at : heap->slow_calls;
  if (own != nullptr) {
    for (uint32_t i = 0; i < own->count; ++i) host->blocks[i] = own->blocks[i];
    host->count = own->count;
    free_local_slow(heap, page_of_block(own), reinterpret_cast<Block*>(own));
  }
  return host;
}

// A heap's first remote frees of blocks too small to host a batch go one
// by one, unless it has a page for batches already. A batch is then a block
// of the freeing heap, so the first one of a heap without blocks of that
// class takes a page of its own, and, for a thread that allocates nothing
// small, a segment: a thread of sizes:32K freed the start-up state its
// creator allocated for it (libstdc++ deletes it as the thread ends) by
// mapping a 4 MiB segment, faulting its header and a page, and releasing it
// at exit; a cache-scratch worker kept a 4 KiB page for its one batch. Past
// kUnbatchedRemoteFrees, a thread that frees other threads' blocks (a
// consumer) batches them as before.
constexpr uint32_t kUnbatchedRemoteFrees = 64;
static_assert(kUnbatchedRemoteFrees <= UINT8_MAX, "Heap::remote_frees_unbatched is one byte");

bool batch_worth_making(Heap* heap) {
  if (heap->remote_frees_unbatched >= kUnbatchedRemoteFrees || heap->queues[kBatchClass].first != nullptr) return true;
  heap->remote_frees_unbatched++;
  return false;
}

// The blocks of one batch, back to their pages. The addresses come from one
// array: the blocks' lines are fetched independently (each is written once)
// instead of one after another. The common case is inline: a page of this
// heap that needs no attention (in its queue, and not emptied by this block)
// takes the block on its free list, whose key the freeing thread
// wrote. The rest go through free_to_owner. (Sending every block through it
// cost 61.5 instructions a block, now 34.7; DESIGN.md "The owner's drain
// takes its pages' blocks inline".) The page's owner is read as an atomic:
// a page of another heap may be moving to a third (orphan_absorb); once it
// is this heap's, its flags are this thread's to read plainly.
void drain_batch(Heap* heap, Block* const* blocks, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    Block* block = blocks[i];
    Page* page = paged_block_page(block);
    if (MALLARD_LIKELY(page->heap == heap && page->flags.owner_load() == 0 && page->used > 1)) {
      block->next = page->free;
      page->free = block;
      page->used--;
      continue;
    }
    free_to_owner(heap, block);
  }
}

}  // namespace

void free_to_owner(Heap* heap, Block* block) {
  Page* page = page_of_block(block);
  if (MALLARD_LIKELY(page->heap == heap)) return free_local_slow(heap, page, block);
  remote_free_single(page, block);
}

MALLARD_RARE void remote_free_single(Page* page, Block* block) {
  Heap* owner = page->heap;
  if (owner->orphaned.load(std::memory_order_acquire) && orphan_free(owner, &block, 1)) return;
  remote_stack_push(owner, block, block);
}

// A batch flushed with at most this many blocks (by a slow path, or because
// the next free was for another heap) goes onto the owner's stack as a chain
// of its blocks, linked through their first words, with the same one
// exchange; the batch block stays home. Pushed as a batch, it would stay
// allocated in this heap until the owner drains it, which an owner that
// sleeps never does: in larson, whose main thread sleeps while the
// lineages free its 8,000 initial blocks, the 256-byte class had
// 1,740-1,951 blocks in use at the RSS peak, 815-945 with chains (DESIGN.md
// "Short batches go as chains"). A chain costs the drain a dependent load a
// block, where a batch's addresses are read from one array: hence only
// short ones.
constexpr uint32_t kChainedFlushMax = 4;

void remote_batch_hand_over(Heap* heap, unsigned slot) {
  RemoteBatch* batch = heap->outgoing[slot];
  if (batch == nullptr) return;
  heap->outgoing[slot] = nullptr;
  batch_mark_freed(batch);
  Heap* owner = batch->owner;
  bool hosted = batch_is_hosted(batch);
  // Nobody drains an orphan's stack soon: free the blocks on its behalf (one
  // lock and one purge for the batch), unless someone is working on it.
  bool freed = owner->orphaned.load(std::memory_order_acquire) && orphan_free(owner, batch->blocks, batch->count);
  if (freed && hosted) return remote_free_single(page_of_block(batch), reinterpret_cast<Block*>(batch));
  if (!freed) {
    if (hosted || batch->count > kChainedFlushMax) {
      auto* entry = reinterpret_cast<Block*>(reinterpret_cast<uintptr_t>(batch) | kBatchTag);
      remote_stack_push(owner, reinterpret_cast<Block*>(batch), entry);
      return;  // the owner's drain frees the batch block
    }
    if (batch->count > 0) remote_chain_push(owner, batch->blocks, batch->count);
  }
  free_local_slow(heap, page_of_block(batch), reinterpret_cast<Block*>(batch));
}

namespace {
// Hands over the batches open for at least `age` of the heap's slow paths.
void hand_over_batches_older_than(Heap* heap, uint32_t age) {
  for (unsigned slot = 0; slot < kOutgoingSlots; ++slot) {
    RemoteBatch* batch = heap->outgoing[slot];
    if (batch != nullptr && heap->slow_calls - batch->opened_at >= age) remote_batch_hand_over(heap, slot);
  }
}
}  // namespace

void remote_batch_flush(Heap* heap) { hand_over_batches_older_than(heap, 0); }

// A batch stays open across this many of its heap's slow paths (allocation
// refills; Heap::slow_calls) before the next one hands it over. Handing
// every batch over at each slow path, churn:64K's threads, which take one
// every 9 allocations, sent 1.3 blocks a batch.
constexpr uint32_t kBatchMaxAge = 32;

void remote_batch_flush_aged(Heap* heap) { hand_over_batches_older_than(heap, kBatchMaxAge); }

void remote_free(Page* page, Block* block, uintptr_t key, const char* what) {
  Heap* heap = tls_heap;
  // A thread that only frees (a completion thread) gets a heap for its batches.
  if (heap == &g_empty_heap && !tls_thread_exiting) heap = heap_get(page->heap);
  // Unless it goes into a batch, the block is marked free before it leaves.
  auto alone = [&] { remote_free_single(page, block_mark_freed(block, key, what)); };
  if (heap == nullptr || heap == &g_empty_heap) return alone();
  // Read the owner only now: while heap_get looked for an orphan to adopt,
  // another thread may have absorbed the page's orphan heap (the empty heap
  // left behind can still be adopted, and its pages are no longer its).
  Heap* owner = page->heap;
  if (heap == owner) return free_local_slow(heap, page, block_mark_freed(block, key, what));  // it adopted the owner
  unsigned slot = page->remote_slot;
  RemoteBatch* batch = heap->outgoing[slot];
  if (batch != nullptr && batch->owner != owner) {
    remote_batch_hand_over(heap, slot);
    batch = nullptr;
  }
  if (block_takes_batch_over(batch, page)) {
    heap->outgoing[slot] = batch_host(heap, batch, owner, block_mark_freed(block, key, what));
    return;
  }
  if (batch == nullptr) {
    if (!batch_worth_making(heap)) return alone();
    batch = batch_new(heap, slot, owner);
    if (batch == nullptr) return alone();
    heap->outgoing[slot] = batch;
  }
  remote_batch_add(heap, slot, batch, block);  // marked when the batch is handed over
}

void heap_drain_remote(Heap* heap) {
  Block* entry = heap->remote_free.exchange(nullptr, std::memory_order_acquire);
  while (entry != nullptr) {
    if ((reinterpret_cast<uintptr_t>(entry) & kBatchTag) == 0) {
      Block* next = entry->next;
      free_to_owner(heap, entry);
      entry = next;
      continue;
    }
    auto* batch = reinterpret_cast<RemoteBatch*>(reinterpret_cast<uintptr_t>(entry) & ~kBatchTag);
    entry = reinterpret_cast<Block*>(batch->next);
    drain_batch(heap, batch->blocks, batch->count);
    free_batch_block(heap, batch);
  }
}

}  // namespace mallard
