// mallard STL: chained arenas.
//
// An arena serves allocations from blocks it owns. Objects are created with
// make<T>() and may be destroyed one by one, from any thread; a block is
// recycled once the arena has moved past it and its last object is gone, and
// all blocks are released when the arena and every object in it are gone.
// A child arena (arena child(parent)) takes its blocks from its parent and
// gives them back when it ends, so short-lived contexts hanging off a
// long-lived one (an I/O completion and its callbacks) cost no heap traffic.
//
// How a block counts its objects without a lock: one 64-bit state word per
// block holds the bump offset, the number of live allocations, a "sealed"
// bit and a generation. Allocation is one compare-and-swap (offset += size,
// live += 1); deallocation is one fetch_sub (live -= 1). The arena seals a
// block when it stops allocating from it; whoever brings the word to
// "sealed and no live allocation" (the sealer or the last deallocation)
// recycles the block, exactly once. The generation changes whenever a block
// is recycled, so a thread that read a block's state before it was recycled
// fails its compare-and-swap instead of allocating from a reused block.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <thread>
#include <new>
#include <type_traits>
#include <utility>

namespace mallard {

struct arena_options {
  // Bytes per block, header included. A child arena uses its parent's block
  // size, so blocks pass freely between them. Allocations larger than half a
  // block get a block of their own.
  std::size_t block_size = 64 * 1024;
  // Run the destructors of make<T>() objects still alive when the arena
  // ends, newest first. Costs 32 bytes per object, and blocks are recycled
  // only when the arena ends (a record of every object must stay readable
  // until then) instead of as soon as their objects are gone.
  bool destroy_alive_objects_at_end = false;
};

class arena;

namespace detail {

class arena_core;

// Layout of the state word; see the file comment.
namespace arena_state {
inline constexpr std::uint64_t offset_bits = 32;
inline constexpr std::uint64_t live_bits = 20;
inline constexpr std::uint64_t offset_mask = (std::uint64_t{1} << offset_bits) - 1;
inline constexpr std::uint64_t live_one = std::uint64_t{1} << offset_bits;
inline constexpr std::uint64_t live_mask = ((std::uint64_t{1} << live_bits) - 1) << offset_bits;
inline constexpr std::uint64_t sealed = std::uint64_t{1} << (offset_bits + live_bits);
inline constexpr std::uint64_t generation_one = sealed << 1;
inline constexpr std::uint64_t generation_mask = ~(generation_one - 1);

constexpr std::uint64_t live_count(std::uint64_t state) noexcept { return (state & live_mask) >> offset_bits; }
}  // namespace arena_state

// One block: this header, then the bump-allocated data area. Cache-line
// sized and aligned so the data area starts on a cache line.
struct alignas(64) arena_block {
  std::atomic<std::uint64_t> state{0};
  arena_core* owner = nullptr;
  arena_block* next = nullptr;  // link in a block cache or a retained list
  std::size_t total_bytes = 0;  // header included
  bool dedicated = false;       // holds one oversized allocation; never cached

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + sizeof(arena_block); }
  std::size_t capacity() const noexcept { return total_bytes - sizeof(arena_block); }
};

// Kept for make<T>() objects in arenas that destroy alive objects at end.
struct arena_object_record {
  void (*destroy)(void* object) noexcept = nullptr;
  void* object = nullptr;
  arena_object_record* older = nullptr;
  std::atomic<bool> alive{true};
};

// Written just before every allocation: which block to count it against.
struct arena_allocation_prefix {
  arena_block* block;
  arena_object_record* record;  // nullptr unless tracked
};

inline constexpr std::size_t arena_block_alignment = alignof(arena_block);

inline arena_block* new_arena_block(std::size_t total_bytes) {
  void* memory = ::operator new(total_bytes, std::align_val_t{arena_block_alignment});
  auto* block = ::new (memory) arena_block();
  block->total_bytes = total_bytes;
  return block;
}

inline void delete_arena_block(arena_block* block) noexcept {
  block->~arena_block();
  ::operator delete(static_cast<void*>(block), std::align_val_t{arena_block_alignment});
}

// Lock-free stack of recycled blocks. Pushes come from any thread (the last
// deallocation in a block); pops take the whole stack at once with an
// exchange, which is immune to the ABA problem of popping one node.
class arena_block_stack {
 public:
  void push(arena_block* block) noexcept {
    arena_block* head = head_.load(std::memory_order_relaxed);
    do {
      block->next = head;
    } while (!head_.compare_exchange_weak(head, block, std::memory_order_release, std::memory_order_relaxed));
  }
  // Blocks on the stack now. Safe against concurrent pushes (they only
  // prepend); the caller excludes concurrent take_all().
  std::size_t size() const noexcept {
    std::size_t count = 0;
    for (arena_block* block = head_.load(std::memory_order_acquire); block != nullptr; block = block->next) ++count;
    return count;
  }

  arena_block* take_all() noexcept {
    // The load spares a read-modify-write in the common case of an empty stack.
    if (head_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    return head_.exchange(nullptr, std::memory_order_acquire);
  }

 private:
  std::atomic<arena_block*> head_{nullptr};
};

// Guards the refill path, held for a few dozen instructions. A yielding
// spin lock rather than std::mutex: unlocking is a plain store, one atomic
// read-modify-write less per block handed out (children take a block at
// least once each).
class arena_refill_lock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// The shared state of an arena. It outlives the arena object while blocks
// with live objects remain: references = 1 for the arena object + 1 per
// block taken and not yet recycled. A child's core is itself allocated in
// its parent arena, which keeps the parent's core alive as long as the
// child's.
class arena_core {
 public:
  arena_core(std::size_t block_size, bool track_objects, arena_core* parent) noexcept
      : block_size_(block_size), track_objects_(track_objects), parent_(parent) {}

  arena_core(const arena_core&) = delete;
  arena_core& operator=(const arena_core&) = delete;

  // Fast path: one compare-and-swap on the current block.
  void* allocate(std::size_t bytes, std::size_t alignment, bool with_record) {
    if (bytes == 0) bytes = 1;
    if (bytes > std::size_t{1} << 62 || alignment > std::size_t{1} << 30) throw std::bad_alloc();
    if (alignment < alignof(arena_allocation_prefix)) alignment = alignof(arena_allocation_prefix);
    const std::size_t prefix_bytes =
        sizeof(arena_allocation_prefix) + (with_record ? sizeof(arena_object_record) : 0);
    if (prefix_bytes + bytes + alignment > (block_size_ - sizeof(arena_block)) / 2) {
      return allocate_dedicated(bytes, alignment, prefix_bytes, with_record);
    }
    for (;;) {
      arena_block* block = current_.load(std::memory_order_acquire);
      if (block != nullptr) {
        if (void* memory = try_bump(block, bytes, alignment, prefix_bytes, with_record)) return memory;
      }
      refill(block);
    }
  }

  static void deallocate(void* memory) noexcept {
    arena_block* block = prefix_of(memory)->block;
    const std::uint64_t state =
        block->state.fetch_sub(arena_state::live_one, std::memory_order_acq_rel) - arena_state::live_one;
    if (arena_state::live_count(state) == 0 && (state & arena_state::sealed) != 0) recycle(block);
  }

  // Registers a constructed make<T>() object so that the arena's end can
  // destroy it. Lock-free push; creation order is push order.
  void track(void* object, void (*destroy)(void*) noexcept) noexcept {
    arena_object_record* record = prefix_of(object)->record;
    record->destroy = destroy;
    record->object = object;
    arena_object_record* head = newest_record_.load(std::memory_order_relaxed);
    do {
      record->older = head;
    } while (!newest_record_.compare_exchange_weak(head, record, std::memory_order_release,
                                                   std::memory_order_relaxed));
  }

  // destroy<T>(): runs the destructor unless the arena's end already did.
  template <class T>
  static void destroy_object(T* object) noexcept {
    arena_object_record* record = prefix_of(object)->record;
    if (record != nullptr && !record->alive.exchange(false, std::memory_order_acq_rel)) return;
    object->~T();
    deallocate(object);
  }

  // The arena object ends: destroy tracked objects, stop allocating, give
  // cached blocks back, drop the arena object's reference. No lock: nothing
  // may allocate from the arena while it ends, and its children (the only
  // other users of the refill state) have ended before it; blocks recycled
  // meanwhile by other threads only push onto the lock-free stack.
  void end_of_arena() noexcept {
    for (arena_object_record* record = newest_record_.load(std::memory_order_acquire); record != nullptr;
         record = record->older) {
      if (record->alive.exchange(false, std::memory_order_acq_rel)) {
        record->destroy(record->object);
        deallocate(record->object);
      }
    }
    arena_alive_.store(false, std::memory_order_release);
    arena_block* to_seal = current_.load(std::memory_order_relaxed);
    current_.store(nullptr, std::memory_order_relaxed);
    if (to_seal != nullptr) {
      to_seal->next = retained_;
    } else {
      to_seal = retained_;
    }
    retained_ = nullptr;
    give_back_cached_blocks();
    while (to_seal != nullptr) {
      arena_block* next = to_seal->next;
      seal(to_seal);
      to_seal = next;
    }
    release_reference();
  }

  std::size_t block_size() const noexcept { return block_size_; }
  // References are the arena object's plus one per block taken.
  std::size_t blocks_in_use() const noexcept { return references_.load(std::memory_order_relaxed) - 1; }
  // Diagnostic, O(cached blocks): counted rather than maintained, which
  // would cost two atomic operations per block reuse.
  std::size_t blocks_cached() noexcept {
    std::lock_guard lock(refill_lock_);
    std::size_t count = recycled_.size();
    for (arena_block* block = spare_; block != nullptr; block = block->next) ++count;
    return count;
  }
  bool tracks_objects() const noexcept { return track_objects_; }

  static arena_allocation_prefix* prefix_of(void* memory) noexcept {
    return static_cast<arena_allocation_prefix*>(memory) - 1;
  }

  // A block for a child arena: from this arena's cache, its ancestors', or the heap.
  arena_block* take_block() {
    {
      std::lock_guard lock(refill_lock_);
      if (arena_block* block = pop_cached_locked()) return block;
    }
    if (parent_ != nullptr) return parent_->take_block();
    return new_arena_block(block_size_);
  }

  // Takes back a recycled block of a child arena.
  void cache_block(arena_block* block) noexcept { recycled_.push(block); }

 private:
  void* try_bump(arena_block* block, std::size_t bytes, std::size_t alignment, std::size_t prefix_bytes,
                 bool with_record) noexcept {
    const auto data = reinterpret_cast<std::uintptr_t>(block->data());
    const std::size_t capacity = block->capacity();
    std::uint64_t state = block->state.load(std::memory_order_acquire);
    for (;;) {
      // Checked after reading the state: if the block is still current now,
      // that state belongs to this arena's current use of it, and any later
      // recycling changes the word and fails the compare-and-swap.
      if (current_.load(std::memory_order_acquire) != block) return nullptr;
      if ((state & arena_state::sealed) != 0) return nullptr;
      if (arena_state::live_count(state) == arena_state::live_mask >> arena_state::offset_bits) return nullptr;
      // A block with no live allocation starts over from its beginning
      // (not in tracking arenas: their records must stay readable).
      const bool restart = arena_state::live_count(state) == 0 && !track_objects_;
      const std::uintptr_t frontier = data + (restart ? 0 : state & arena_state::offset_mask);
      const std::uintptr_t object = (frontier + prefix_bytes + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
      const std::uintptr_t end = object + bytes;
      if (end - data > capacity) return nullptr;
      const std::uint64_t next_state = ((state & ~arena_state::offset_mask) | (end - data)) + arena_state::live_one;
      if (block->state.compare_exchange_weak(state, next_state, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
        return place_prefix(reinterpret_cast<void*>(object), block, with_record);
      }
      // Another allocation won, or the block was sealed or recycled.
    }
  }

  static void* place_prefix(void* object, arena_block* block, bool with_record) noexcept {
    arena_object_record* record = nullptr;
    if (with_record) {
      record = ::new (static_cast<std::byte*>(object) - sizeof(arena_allocation_prefix) -
                      sizeof(arena_object_record)) arena_object_record();
    }
    ::new (prefix_of(object)) arena_allocation_prefix{block, record};
    return object;
  }

  // Slow path: the current block (observed) cannot serve the request.
  // Replace it, unless another thread already did.
  void refill(arena_block* observed) {
    arena_block* retired = nullptr;
    {
      std::lock_guard lock(refill_lock_);
      if (current_.load(std::memory_order_relaxed) != observed) return;
      arena_block* fresh = pop_cached_locked();
      if (fresh == nullptr) fresh = parent_ != nullptr ? parent_->take_block() : new_arena_block(block_size_);
      adopt(fresh);
      // Reset before publishing: nobody else can reach the block now.
      fresh->state.store((fresh->state.load(std::memory_order_relaxed) & arena_state::generation_mask) +
                             arena_state::generation_one,
                         std::memory_order_relaxed);
      current_.store(fresh, std::memory_order_release);
      if (observed != nullptr) {
        if (track_objects_) {
          observed->next = retained_;  // sealed when the arena ends
          retained_ = observed;
        } else {
          retired = observed;
        }
      }
    }
    if (retired != nullptr) seal(retired);
  }

  void* allocate_dedicated(std::size_t bytes, std::size_t alignment, std::size_t prefix_bytes, bool with_record) {
    const std::size_t total = sizeof(arena_block) + prefix_bytes + alignment + bytes;
    arena_block* block = new_arena_block(total);
    block->dedicated = true;
    adopt(block);
    const auto data = reinterpret_cast<std::uintptr_t>(block->data());
    const std::uintptr_t object = (data + prefix_bytes + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
    if (track_objects_) {
      // Sealed with the others when the arena ends, so its record stays readable.
      block->state.store(arena_state::live_one, std::memory_order_relaxed);
      std::lock_guard lock(refill_lock_);
      block->next = retained_;
      retained_ = block;
    } else {
      block->state.store(arena_state::live_one | arena_state::sealed, std::memory_order_relaxed);
    }
    return place_prefix(reinterpret_cast<void*>(object), block, with_record);
  }

  void adopt(arena_block* block) noexcept {
    block->owner = this;
    block->next = nullptr;
    references_.fetch_add(1, std::memory_order_relaxed);
  }

  static void seal(arena_block* block) noexcept {
    const std::uint64_t state = block->state.fetch_or(arena_state::sealed, std::memory_order_acq_rel);
    if (arena_state::live_count(state) == 0) recycle(block);
  }

  // The block is sealed and empty: keep it for reuse while the arena lives,
  // else hand it to the parent (or the heap, for a root arena).
  static void recycle(arena_block* block) noexcept {
    arena_core* owner = block->owner;
    if (block->dedicated) {
      delete_arena_block(block);
    } else if (owner->arena_alive_.load(std::memory_order_acquire)) {
      owner->cache_block(block);
    } else {
      owner->give_back(block);
    }
    owner->release_reference();
  }

  void give_back(arena_block* block) noexcept {
    if (parent_ != nullptr) {
      parent_->cache_block(block);
    } else {
      delete_arena_block(block);
    }
  }

  arena_block* pop_cached_locked() noexcept {
    if (spare_ == nullptr) spare_ = recycled_.take_all();
    arena_block* block = spare_;
    if (block != nullptr) spare_ = block->next;
    return block;
  }

  void give_back_cached_blocks() noexcept {
    while (arena_block* block = pop_cached_locked()) give_back(block);
  }

  // Called by the arena object (once) and by each recycled block.
  void release_reference() noexcept {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // Blocks recycled while the arena object was ending may still sit here.
    give_back_cached_blocks();
    if (parent_ != nullptr) {
      this->~arena_core();
      deallocate(this);  // lives in the parent arena
    } else {
      delete this;
    }
  }

  const std::size_t block_size_;
  const bool track_objects_;
  arena_core* const parent_;
  std::atomic<arena_block*> current_{nullptr};
  std::atomic<std::size_t> references_{1};
  std::atomic<bool> arena_alive_{true};
  std::atomic<arena_object_record*> newest_record_{nullptr};
  arena_block_stack recycled_;
  arena_refill_lock refill_lock_;    // guards the refill path, spare_ and retained_
  arena_block* spare_ = nullptr;      // recycled blocks already taken off recycled_
  arena_block* retained_ = nullptr;   // full blocks kept unsealed (tracking arenas)
};

}  // namespace detail

// A region for objects that belong to one context. Thread-safe: allocate and
// make from any thread (one compare-and-swap; a short lock only when a block is
// full), deallocate and destroy from any thread without a lock. Not movable:
// child arenas and objects refer to it.
//
// Lifetime rules:
//  - Objects may outlive the arena object: their block stays until they are
//    destroyed. Memory is never released while an object in it is alive.
//  - A child arena (arena child(parent)) takes blocks from its parent and
//    gives them back to it as they empty after the child ends. The parent
//    object must outlive the child object (its shared state outlives both,
//    as long as any block of either has live objects).
class arena {
 public:
  arena() : arena(arena_options{}) {}
  explicit arena(arena_options options)
      : core_(new detail::arena_core(clamp_block_size(options.block_size), options.destroy_alive_objects_at_end,
                                     nullptr)) {}
  explicit arena(arena& parent) : arena(parent, false) {}
  arena(arena& parent, bool destroy_alive_objects_at_end)
      : core_(parent.make_core_for_child(destroy_alive_objects_at_end)) {}

  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;

  ~arena() { core_->end_of_arena(); }

  // Raw memory (alignment: a power of two). Give it back with deallocate().
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = alignof(std::max_align_t)) {
    return core_->allocate(bytes, alignment, false);
  }

  // Any thread, no lock. The memory must come from allocate() of some arena.
  static void deallocate(void* memory) noexcept { detail::arena_core::deallocate(memory); }

  template <class T, class... Args>
  [[nodiscard]] T* make(Args&&... args) {
    // Tracking arenas record every made object, trivially destructible ones
    // included: the arena's end is what gives their memory back.
    const bool tracked = core_->tracks_objects();
    void* memory = core_->allocate(sizeof(T), alignof(T), tracked);
    T* object;
    try {
      if constexpr (std::is_constructible_v<T, Args...>) {
        object = ::new (memory) T(std::forward<Args>(args)...);
      } else {
        object = ::new (memory) T{std::forward<Args>(args)...};  // aggregates
      }
    } catch (...) {
      deallocate(memory);
      throw;
    }
    if (tracked) core_->track(object, [](void* p) noexcept { std::destroy_at(static_cast<T*>(p)); });
    return object;
  }

  // Destroys an object made by make<T>() of any arena, from any thread, with
  // no lock. The pointer must be the one make() returned (not a base
  // subobject).
  template <class T>
  static void destroy(T* object) noexcept {
    detail::arena_core::destroy_object(object);
  }

  std::size_t block_size() const noexcept { return core_->block_size(); }
  // Blocks this arena took and that still hold live objects or are current.
  std::size_t blocks_in_use() const noexcept { return core_->blocks_in_use(); }
  // Empty blocks kept for reuse by this arena and its children.
  std::size_t blocks_cached() const noexcept { return core_->blocks_cached(); }

 private:
  static std::size_t clamp_block_size(std::size_t block_size) noexcept {
    // Floor: room for a few allocations. Ceiling: offsets fit the state word
    // and the live count cannot overflow before the block is full.
    constexpr std::size_t smallest = 4 * 1024;
    constexpr std::size_t largest = std::size_t{16} << 20;
    return block_size < smallest ? smallest : block_size > largest ? largest : block_size;
  }

  detail::arena_core* make_core_for_child(bool destroy_alive_objects_at_end) {
    void* memory = core_->allocate(sizeof(detail::arena_core), alignof(detail::arena_core), false);
    return ::new (memory) detail::arena_core(core_->block_size(), destroy_alive_objects_at_end, core_);
  }

  detail::arena_core* core_;
};

// std::pmr::memory_resource over an arena: std::pmr containers allocate from
// the arena, and deallocation counts down the arena's blocks (lock-free).
// Two arena_resources compare equal only if they are the same object, as for
// std::pmr::monotonic_buffer_resource.
class arena_resource : public std::pmr::memory_resource {
 public:
  explicit arena_resource(arena& source) noexcept : arena_(&source) {}

  arena& source() const noexcept { return *arena_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override { return arena_->allocate(bytes, alignment); }
  void do_deallocate(void* memory, std::size_t, std::size_t) override { arena::deallocate(memory); }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  arena* arena_;
};

}  // namespace mallard
