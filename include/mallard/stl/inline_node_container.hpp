// mallard STL: what the node-based inline containers share.
//
// Those members of the std container that a node living inside the object
// would break (moves, swap, node handles, merge) are written once here:
// inline_node_owner for all of them, inline_node_container adding node
// handles and merge for inline_map, inline_set and inline_unordered_map. The
// containers themselves add their constructors and merge() (inline_list:
// splice() and merge()).
#pragma once

#include <compare>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <utility>

#include "inline_node_pool.hpp"

namespace mallard::detail {

// What every node container with inline slots shares, inline_list included.
// Derived is the inline container (CRTP), Base its std container over
// inline_node_allocator, and SlotSize/N/BucketSlotBytes size the inline
// storage. The storage is the first base so that it is constructed before,
// and destroyed after, Base (base-from-member idiom).
template <class Derived, class Base, std::size_t SlotSize, std::size_t N, std::size_t BucketSlotBytes = 0>
class inline_node_owner
    : protected inline_node_storage<SlotSize, node_slot_align<typename Base::value_type>, N, BucketSlotBytes>,
      public Base {
 public:
  using typename Base::allocator_type;
  using typename Base::const_iterator;
  using typename Base::iterator;
  using typename Base::size_type;
  using typename Base::value_type;

  static constexpr std::size_t inline_capacity = N;

  void swap(Derived& other) {
    if (this == &other) return;
    Derived held(std::move(other));
    other = std::move(derived());
    derived() = std::move(held);
  }

  friend void swap(Derived& a, Derived& b) { a.swap(b); }

  friend bool operator==(const Derived& a, const Derived& b) {
    return static_cast<const Base&>(a) == static_cast<const Base&>(b);
  }
  friend auto operator<=>(const Derived& a, const Derived& b) requires requires(const Base& x) { x <=> x; }
  {
    return static_cast<const Base&>(a) <=> static_cast<const Base&>(b);
  }

  // Nodes currently in the inline slots (the rest are on the heap).
  std::size_t inline_nodes() const noexcept { return this->inline_pool()->nodes_in_use(); }

 protected:
  // Base's constructor with these arguments and the allocator of this
  // object's pool.
  template <class... Args>
  explicit inline_node_owner(Args&&... args) : Base(std::forward<Args>(args)..., pool_allocator()) {}
  inline_node_owner(const inline_node_owner& other) : Base(other, pool_allocator()) {}
  // The allocators differ, so Base's allocator-extended move constructor
  // moves (or, for a throwing move, copies) each element into this object.
  inline_node_owner(inline_node_owner&& other) : Base(std::move(other), pool_allocator()) { other.clear(); }

  ~inline_node_owner() = default;

  inline_node_owner& operator=(const inline_node_owner& other) {
    Base::operator=(other);
    return *this;
  }
  inline_node_owner& operator=(inline_node_owner&& other) {
    if (this != &other) {
      Base::operator=(std::move(other));
      other.clear();
    }
    return *this;
  }
  // operator=(initializer_list) of the derived container (std::list's own
  // assign() must stay visible, so not that name).
  Derived& assign_initializer_list(std::initializer_list<value_type> init) {
    Base::operator=(init);
    return derived();
  }

  allocator_type pool_allocator() noexcept { return allocator_type(this->inline_pool()); }

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }
};

// What inline_map, inline_set and inline_unordered_map add: node handles
// and merge() across containers, whose nodes a foreign pool cannot take.
// What differs between them is read off Base: a map's node hands out key()
// and mapped(), a set's node value(); a tree gives a merged element the
// place lower_bound found, a hash table finds its own.
template <class Derived, class Base, std::size_t SlotSize, std::size_t N, std::size_t BucketSlotBytes = 0>
class inline_node_container : public inline_node_owner<Derived, Base, SlotSize, N, BucketSlotBytes> {
  using owner = inline_node_owner<Derived, Base, SlotSize, N, BucketSlotBytes>;
  static constexpr bool is_map = requires { typename Base::mapped_type; };
  static constexpr bool is_ordered = requires { typename Base::key_compare; };

 public:
  using typename owner::allocator_type;
  using typename owner::const_iterator;
  using typename owner::iterator;
  using typename owner::value_type;
  using typename Base::insert_return_type;
  using typename Base::key_type;
  using typename Base::node_type;

  using Base::insert;

  insert_return_type insert(node_type&& node) {
    if (node.empty()) return {this->end(), false, node_type()};
    if (node.get_allocator() == this->get_allocator()) return Base::insert(std::move(node));
    const auto [position, inserted] = emplace_from(*this, node);
    if (!inserted) return {position, false, std::move(node)};
    node = node_type();  // the foreign node goes back to its own allocator
    return {position, true, node_type()};
  }

  iterator insert(const_iterator hint, node_type&& node) {
    if (node.empty()) return this->end();
    if (node.get_allocator() == this->get_allocator()) return Base::insert(hint, std::move(node));
    const auto [position, inserted] = emplace_from(*this, hint, node);
    if (inserted) node = node_type();
    return position;
  }

  node_type extract(const_iterator position) {
    if (!this->inline_pool()->owns_node(std::addressof(*position))) return Base::extract(position);
    // The node is in this object: rebuild the element in a heap node with a
    // heap-only allocator, which outlives *this safely. If that throws, the
    // element is put back and *this is unchanged.
    node_type inline_node = Base::extract(position);
    try {
      Base heap_only = heap_only_like();
      emplace_from(heap_only, inline_node);
      return heap_only.extract(heap_only.begin());
    } catch (...) {
      Base::insert(std::move(inline_node));
      throw;
    }
  }

  node_type extract(const key_type& key) {
    const auto position = this->find(key);
    return position == this->end() ? node_type() : extract(position);
  }

 protected:
  using owner::owner;

  // Elements whose key is not in *this leave source and join *this.
  template <class Source>
  void merge_from(Source& source) {
    // A merge of the container into itself moves nothing. (Compared with
    // the std base: `this` also covers the inline storage, which comes first.)
    if (static_cast<const void*>(&source) == static_cast<const void*>(static_cast<const Base*>(this))) return;
    for (auto it = source.begin(); it != source.end();) {
      const auto [hint, present] = merge_position(key_of(*it));
      if (present) {
        ++it;
        continue;
      }
      const auto next = std::next(it);
      auto node = source.extract(it);
      try {
        if constexpr (is_ordered) {
          emplace_new_from(*this, hint, node);
        } else {
          emplace_from(*this, node);
        }
      } catch (...) {
        if constexpr (is_ordered) {
          source.insert(next, std::move(node));
        } else {
          source.insert(std::move(node));
        }
        throw;
      }
      it = next;
    }
  }

 private:
  static const key_type& key_of(const value_type& value) noexcept {
    if constexpr (is_map) {
      return value.first;
    } else {
      return value;
    }
  }

  // An empty container with the same ordering or hashing as *this whose
  // nodes come from the heap only.
  Base heap_only_like() const {
    if constexpr (is_ordered) {
      return Base(this->key_comp(), allocator_type());
    } else {
      return Base(1, this->hash_function(), this->key_eq(), allocator_type());
    }
  }

  // Where merge_from() puts an element with this key, and whether *this has
  // the key already.
  std::pair<const_iterator, bool> merge_position(const key_type& key) const {
    if constexpr (is_ordered) {
      const auto hint = this->lower_bound(key);
      return {hint, hint != this->end() && !this->key_comp()(key, key_of(*hint))};
    } else {
      return {this->end(), this->contains(key)};
    }
  }

  // The element of a foreign node (Base's or a merge source's), moved into
  // target unless target has its key (copied where its move could throw, so
  // that a failure leaves the node intact): where the key is, and whether the
  // element moved.
  template <class Node>
  static std::pair<iterator, bool> emplace_from(Base& target, Node& node) {
    if constexpr (is_map) {
      return target.try_emplace(std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
    } else {
      return emplace_from(target, target.cend(), node);
    }
  }

  template <class Node>
  static std::pair<iterator, bool> emplace_from(Base& target, const_iterator hint, Node& node) {
    if constexpr (is_map) {
      const auto size_before = target.size();
      const auto position =
          target.try_emplace(hint, std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
      return {position, target.size() != size_before};
    } else {
      // emplace() would move the value out of the node before it found the
      // key taken; a set has no try_emplace.
      const auto position = target.find(node.value());
      if (position != target.end()) return {position, false};
      return {emplace_new_from(target, hint, node), true};
    }
  }

  // Precondition: target does not have the node's key.
  template <class Node>
  static iterator emplace_new_from(Base& target, const_iterator hint, Node& node) {
    if constexpr (is_map) {
      return target.emplace_hint(hint, std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
    } else {
      return target.emplace_hint(hint, std::move_if_noexcept(node.value()));
    }
  }
};

}  // namespace mallard::detail
