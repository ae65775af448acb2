// mallard STL: the node pool behind the node-based inline containers.
//
// An inline container (inline_map, inline_set, inline_list,
// inline_unordered_map) is a std container whose allocator points at a pool
// that lives inside the container object: N node slots, plus for hash tables
// two bucket-array slots. A node that does not fit (the pool is full, or the
// standard library's node is larger than estimated) comes from the global
// allocator instead, so the estimate below is about speed, never correctness.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

// GCC 12 reports the allocator's pool pointer as "maybe uninitialized" when
// an empty node handle (whose allocator lives in an uninitialized union
// member, by design of libstdc++) is destroyed or assigned; the read never
// happens on an empty handle. Silenced here, where the warning lands, so that
// users building with -Werror are not affected.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mallard::detail {

constexpr std::size_t round_up(std::size_t value, std::size_t alignment) noexcept {
  return (value + alignment - 1) / alignment * alignment;
}

// Node size estimates. Each covers libstdc++ and libc++ exactly (and MSVC's
// layout fits within them); see docs/STL.md.
template <class Value>
constexpr std::size_t node_slot_align = std::max(alignof(void*), alignof(Value));

// Red-black tree node: colour plus three links (32 bytes on LP64), then the value.
template <class Value>
constexpr std::size_t tree_node_slot_size =
    round_up(round_up(4 * sizeof(void*), alignof(Value)) + sizeof(Value), node_slot_align<Value>);

// Doubly linked list node: two links, then the value.
template <class Value>
constexpr std::size_t list_node_slot_size =
    round_up(round_up(2 * sizeof(void*), alignof(Value)) + sizeof(Value), node_slot_align<Value>);

// Hash node: libstdc++ is {next, value, cached hash}, libc++ is {next, hash, value}.
template <class Value>
constexpr std::size_t hash_node_slot_size = std::max(
    round_up(round_up(round_up(sizeof(void*), alignof(Value)) + sizeof(Value), sizeof(std::size_t)) +
                 sizeof(std::size_t),
             node_slot_align<Value>),
    round_up(round_up(sizeof(void*) + sizeof(std::size_t), alignof(Value)) + sizeof(Value),
             node_slot_align<Value>));

// libstdc++ grows a hash table through 13, 29, 59, 127... buckets, and never
// holds more than about 2 buckets per element while it has at most N
// elements; max(13, 2N) bucket pointers therefore hold every bucket array a
// table of up to N elements uses.
constexpr std::size_t hash_bucket_slot_bytes(std::size_t node_count) noexcept {
  return std::max<std::size_t>(13, 2 * node_count) * sizeof(void*);
}

// Bookkeeping for one container's inline storage. Single-threaded, like the
// container that owns it. Invariant: every slot in [slots_begin_, next_unused_)
// is either holding a live node or on free_list_; slots past next_unused_ were
// never handed out, so a fresh container touches no slot memory.
class inline_node_pool {
 public:
  inline_node_pool(std::byte* slots, std::size_t slot_size, std::size_t slot_align, std::size_t slot_count,
                   std::byte* bucket_slots, std::size_t bucket_slot_bytes) noexcept
      : slots_begin_(slots),
        slots_end_(slots + slot_size * slot_count),
        next_unused_(slots),
        slot_size_(slot_size),
        slot_align_(slot_align),
        bucket_slots_(bucket_slots),
        bucket_slot_bytes_(bucket_slot_bytes) {}

  inline_node_pool(const inline_node_pool&) = delete;
  inline_node_pool& operator=(const inline_node_pool&) = delete;

  // A free slot for one node of this size, or nullptr (then the caller uses the heap).
  void* allocate_node(std::size_t size, std::size_t align) noexcept {
    if (size > slot_size_ || align > slot_align_) return nullptr;
    if (free_list_ != nullptr) {
      free_slot* slot = free_list_;
      free_list_ = slot->next;
      ++nodes_in_use_;
      return slot;
    }
    if (next_unused_ != slots_end_) {
      std::byte* slot = next_unused_;
      next_unused_ += slot_size_;
      ++nodes_in_use_;
      return slot;
    }
    return nullptr;
  }

  bool owns_node(const void* p) const noexcept { return contains(slots_begin_, slots_end_, p); }

  // Precondition: owns_node(p). The slot is reused by the next allocate_node.
  void deallocate_node(void* p) noexcept {
    free_list_ = ::new (p) free_slot{free_list_};
    --nodes_in_use_;
  }

  // Bucket arrays: two slots, so a rehash can hold the old and the new array.
  void* allocate_buckets(std::size_t bytes) noexcept {
    if (bytes > bucket_slot_bytes_) return nullptr;
    for (unsigned slot = 0; slot < 2; ++slot) {
      if ((buckets_in_use_ & (1u << slot)) == 0) {
        buckets_in_use_ |= 1u << slot;
        return bucket_slots_ + slot * bucket_slot_bytes_;
      }
    }
    return nullptr;
  }

  bool owns_buckets(const void* p) const noexcept {
    return contains(bucket_slots_, bucket_slots_ + 2 * bucket_slot_bytes_, p);
  }

  void deallocate_buckets(void* p) noexcept {
    const auto slot = static_cast<unsigned>((static_cast<std::byte*>(p) - bucket_slots_) /
                                            static_cast<std::ptrdiff_t>(bucket_slot_bytes_));
    buckets_in_use_ &= ~(1u << slot);
  }

  std::size_t nodes_in_use() const noexcept { return nodes_in_use_; }
  std::size_t slot_count() const noexcept {
    return slot_size_ == 0 ? 0 : static_cast<std::size_t>(slots_end_ - slots_begin_) / slot_size_;
  }
  std::size_t slot_size() const noexcept { return slot_size_; }

 private:
  struct free_slot {
    free_slot* next;
  };

  // Pointers into different objects are compared as integers: operator< on
  // unrelated pointers is unspecified.
  static bool contains(const std::byte* begin, const std::byte* end, const void* p) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    return address >= reinterpret_cast<std::uintptr_t>(begin) && address < reinterpret_cast<std::uintptr_t>(end);
  }

  std::byte* slots_begin_;
  std::byte* slots_end_;
  std::byte* next_unused_;
  free_slot* free_list_ = nullptr;
  std::size_t slot_size_;
  std::size_t slot_align_;
  std::size_t nodes_in_use_ = 0;
  std::byte* bucket_slots_;
  std::size_t bucket_slot_bytes_;
  unsigned buckets_in_use_ = 0;
};

// The allocator every inline node container hands to its std container.
//
// Allocator-aware traits, and why:
//  - propagate_on_container_copy/move_assignment and _swap are false: the
//    pool belongs to one container object, so an allocator must never move
//    to another container. With them false, std's assignment operators keep
//    the target's pool and copy or move elements into it, which is exactly
//    the semantics the inline containers need.
//  - is_always_equal is false: two allocators are equal only when they point
//    to the same pool, because only that pool can take its slots back.
//  - select_on_container_copy_construction returns a heap-only allocator
//    (no pool), so a std container copy-constructed from an inline
//    container's base never points into the source object.
//  - A default-constructed allocator is heap-only; it serves node handles
//    that must outlive their container (see extract()).
template <class T>
class inline_node_allocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::false_type;
  using propagate_on_container_swap = std::false_type;
  using is_always_equal = std::false_type;

  inline_node_allocator() noexcept = default;
  explicit inline_node_allocator(inline_node_pool* pool) noexcept : pool_(pool) {}
  template <class U>
  inline_node_allocator(const inline_node_allocator<U>& other) noexcept : pool_(other.pool()) {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if (pool_ != nullptr) {
      // Hash tables allocate their bucket arrays as arrays of node pointers;
      // every other allocation of a node container is a single node.
      if constexpr (std::is_pointer_v<T>) {
        if (void* buckets = pool_->allocate_buckets(n * sizeof(T))) return static_cast<T*>(buckets);
      } else {
        if (n == 1) {
          if (void* node = pool_->allocate_node(sizeof(T), alignof(T))) return static_cast<T*>(node);
        }
      }
    }
    return std::allocator<T>{}.allocate(n);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (pool_ != nullptr) {
      if constexpr (std::is_pointer_v<T>) {
        if (pool_->owns_buckets(p)) return pool_->deallocate_buckets(p);
      } else {
        if (pool_->owns_node(p)) return pool_->deallocate_node(p);
      }
    }
    std::allocator<T>{}.deallocate(p, n);
  }

  inline_node_allocator select_on_container_copy_construction() const noexcept { return inline_node_allocator{}; }

  inline_node_pool* pool() const noexcept { return pool_; }

  template <class U>
  friend bool operator==(const inline_node_allocator& a, const inline_node_allocator<U>& b) noexcept {
    return a.pool() == b.pool();
  }

 private:
  inline_node_pool* pool_ = nullptr;
};

// The inline storage, as a base class of each inline container so that it is
// constructed before, and destroyed after, the std container that uses it
// (base-from-member idiom).
template <std::size_t SlotSize, std::size_t SlotAlign, std::size_t SlotCount, std::size_t BucketSlotBytes>
class inline_node_storage {
 protected:
  inline_node_storage() noexcept
      : inline_pool_(node_slots_.data(), SlotSize, SlotAlign, SlotCount, bucket_slots_.data(), BucketSlotBytes) {}
  inline_node_storage(const inline_node_storage&) = delete;
  inline_node_storage& operator=(const inline_node_storage&) = delete;
  ~inline_node_storage() = default;

  inline_node_pool* inline_pool() noexcept { return &inline_pool_; }
  const inline_node_pool* inline_pool() const noexcept { return &inline_pool_; }

 private:
  alignas(SlotAlign) std::array<std::byte, SlotSize * SlotCount> node_slots_;
  alignas(void*) std::array<std::byte, 2 * BucketSlotBytes> bucket_slots_;
  inline_node_pool inline_pool_;
};

}  // namespace mallard::detail

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
