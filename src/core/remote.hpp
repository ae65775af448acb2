// Remote frees: blocks freed by a thread other than their heap's owner.
//
// The freeing thread collects them in a batch per destination heap (a
// RemoteBatch: one of the freed blocks when one is large enough, else a
// 256-byte block of the freeing thread's heap) and pushes the whole batch
// onto the owner's `remote_free` stack with one atomic exchange; the owner
// drains that stack in its allocation slow path. The stack also carries
// single blocks (from threads that cannot batch: an exiting thread, or out
// of memory; and a heap's first few remote frees of blocks too small to
// host a batch, see remote.cpp), told apart by the low bit of the entry
// that links to them: set for a batch.
#pragma once

#include "core/types.hpp"

namespace mallard {

// Frees `block` of `page` (whose free key is `key`), which belongs to another
// heap than this thread's; `what` names the call for an error report.
void remote_free(Page* page, Block* block, uintptr_t key, const char* what);

inline constexpr uint32_t kBatchCapacity = sizeof(RemoteBatch::blocks) / sizeof(Block*);

// Returns a freed block to its page on behalf of `heap` (whose owner, or
// holder of its orphan work lock, calls this) if the page is `heap`'s; a page
// that has moved to another heap since (orphan_absorb) gets it as a remote
// free. The block's free key is already written.
void free_to_owner(Heap* heap, Block* block);

// One block, unbatched, to its page's current owner: freed on the owner's
// behalf if it is an orphan (orphan_free), else pushed alone on its stack.
// For threads that cannot batch, and for blocks whose page changed owner.
void remote_free_single(Page* page, Block* block);

// Hands over `heap`'s pending batch in `slot`, if any: when it is full, or
// its slot is wanted for another destination. Caller owns the heap.
void remote_batch_hand_over(Heap* heap, unsigned slot);

// Hands over all of `heap`'s pending batches: on trim and collect, and at
// thread exit. Caller owns the heap.
void remote_batch_flush(Heap* heap);

// Hands over the batches that have stayed open for kBatchMaxAge of the
// heap's slow paths, so that a block waits a bounded time before its owner
// can reuse it. From the heap's slow path. Caller owns the heap.
void remote_batch_flush_aged(Heap* heap);

// Returns the blocks other threads freed into `heap` to their pages.
// Caller owns the heap.
void heap_drain_remote(Heap* heap);

// A freed block of at least this many bytes can hold the batch it travels
// in (a hosted batch): as many entries as a batch of the freeing heap.
inline constexpr uint32_t kBatchHostMinBytes = sizeof(RemoteBatch);

// A hosted batch is one of the blocks it hands over, which keeps its free
// key in word 1; a batch of the freeing heap holds 0 there.
inline bool batch_is_hosted(const RemoteBatch* batch) { return batch->key != 0; }

// Whether a block of `page` freed for the same owner as `batch` (or with no
// batch open) becomes the batch: it is large enough, and the open batch, if
// any, is one of the freeing heap's.
inline bool block_takes_batch_over(const RemoteBatch* batch, const Page* page) {
  return page->block_size >= kBatchHostMinBytes && (batch == nullptr || !batch_is_hosted(batch));
}

// Adds `block` to `batch`, this heap's open batch in `slot`, and hands the
// batch over once it is full. The block is not read here (below), but the
// hand-over will write its free key: a prefetch for writing asks for its
// line now, so that it arrives, exclusive, during the frees until then
// instead of while the hand-over waits for it. A consumer freeing 256
// blocks of 8-512 bytes just written on another core took 19.3-19.4 ns a
// free without it and 14.7-14.9 with it (bench/remote_free_handoff.c;
// DESIGN.md "A remote free asks for its block's line").
inline void remote_batch_add(Heap* heap, unsigned slot, RemoteBatch* batch, Block* block) {
  batch->blocks[batch->count++] = block;
  __builtin_prefetch(block, 1, 3);
  if (batch->count == kBatchCapacity) remote_batch_hand_over(heap, slot);
}

// The common remote free, inline in the free path: this thread's pending
// batch is for `owner` already, and is hosted or `block` could not host it.
// False otherwise (no batch, one for another heap, a thread without a heap,
// whose batch is always null, or a block that takes over a batch of the
// freeing heap), and remote_free takes it with its rarer cases.
//
// The block itself is not read or written here (remote_batch_add only asks
// for its line). Its line is most likely in the cache of the core that
// allocated it, and a free that reads it there waits for it: in xmalloc
// that wait was 72% of the consumers' time in free, and the consumers fell
// behind the producer. The batch checks and marks its blocks when it is
// handed over (remote_batch_flush), all at once, so their lines are
// fetched in parallel (DESIGN.md "A batch checks its blocks when it is
// handed over").
inline bool remote_batch_append(Heap* heap, const Heap* owner, const Page* page, Block* block) {
  unsigned slot = page->remote_slot;
  RemoteBatch* batch = heap->outgoing[slot];
  if (batch == nullptr || batch->owner != owner) return false;
  if (block_takes_batch_over(batch, page)) return false;
  remote_batch_add(heap, slot, batch, block);
  return true;
}

}  // namespace mallard
