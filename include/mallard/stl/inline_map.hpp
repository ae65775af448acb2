// mallard STL: inline_map and inline_set, a std::map / std::set whose first N
// nodes live inside the object.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "inline_node_pool.hpp"

namespace mallard {

// inline_map<Key, T, N, Compare> is a std::map<Key, T, Compare, A> (public
// base: the whole std::map interface, std::erase_if included) whose
// allocator A takes nodes from N slots inside the object and from the global
// allocator past that. Erased slots are reused first, so a map that shrinks
// back under N nodes stops allocating on the heap.
//
// What differs from std::map, because nodes may live in the object:
//  - Move construction/assignment and swap move the elements one by one
//    (O(size), not noexcept) instead of handing over the tree; the source is
//    left empty and reusable. Iterators into the source do not survive.
//  - extract() of an inline node moves the element into a heap node, so a
//    node handle never points into a container that may die before it.
//    insert(node_type&&) and merge() across containers move the element out
//    of the foreign node (the std precondition that the allocators compare
//    equal cannot hold between two different objects' pools).
//  - Slicing to the std::map base is allowed for reading; calling the base's
//    swap() on two inline containers, or deleting through a base pointer, is
//    not (the base has no virtual destructor, and std::map::swap requires
//    equal allocators).
// Exception guarantees are those of std::map for every operation it shares;
// extract() and node insertion are strong, merge() is strong per element
// when the element's move constructor does not throw (it copies otherwise).
template <class Key, class T, std::size_t N, class Compare = std::less<Key>>
class inline_map
    : private detail::inline_node_storage<detail::tree_node_slot_size<std::pair<const Key, T>>,
                                          detail::node_slot_align<std::pair<const Key, T>>, N, 0>,
      public std::map<Key, T, Compare, detail::inline_node_allocator<std::pair<const Key, T>>> {
  using storage = detail::inline_node_storage<detail::tree_node_slot_size<std::pair<const Key, T>>,
                                              detail::node_slot_align<std::pair<const Key, T>>, N, 0>;
  using base = std::map<Key, T, Compare, detail::inline_node_allocator<std::pair<const Key, T>>>;

 public:
  using typename base::allocator_type;
  using typename base::const_iterator;
  using typename base::insert_return_type;
  using typename base::iterator;
  using typename base::key_compare;
  using typename base::key_type;
  using typename base::mapped_type;
  using typename base::node_type;
  using typename base::size_type;
  using typename base::value_type;

  static constexpr std::size_t inline_capacity = N;

  inline_map() : base(Compare(), own_allocator()) {}
  explicit inline_map(const Compare& compare) : base(compare, own_allocator()) {}
  template <std::input_iterator InputIt>
  inline_map(InputIt first, InputIt last, const Compare& compare = Compare())
      : base(first, last, compare, own_allocator()) {}
  inline_map(std::initializer_list<value_type> init, const Compare& compare = Compare())
      : base(init, compare, own_allocator()) {}
  inline_map(const inline_map& other) : base(other, own_allocator()) {}
  // The allocators differ, so std::map's allocator-extended move constructor
  // moves (or, for a throwing move, copies) each element into this object.
  inline_map(inline_map&& other) : base(std::move(other), own_allocator()) { other.clear(); }

  ~inline_map() = default;

  inline_map& operator=(const inline_map& other) {
    base::operator=(other);
    return *this;
  }
  inline_map& operator=(inline_map&& other) {
    if (this != &other) {
      base::operator=(std::move(other));
      other.clear();
    }
    return *this;
  }
  inline_map& operator=(std::initializer_list<value_type> init) {
    base::operator=(init);
    return *this;
  }

  using base::insert;

  insert_return_type insert(node_type&& node) {
    if (node.empty()) return {this->end(), false, node_type()};
    if (node.get_allocator() == this->get_allocator()) return base::insert(std::move(node));
    auto [position, inserted] =
        base::try_emplace(std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
    if (!inserted) return {position, false, std::move(node)};
    node = node_type();  // the foreign node goes back to its own allocator
    return {position, true, node_type()};
  }

  iterator insert(const_iterator hint, node_type&& node) {
    if (node.empty()) return this->end();
    if (node.get_allocator() == this->get_allocator()) return base::insert(hint, std::move(node));
    const auto size_before = this->size();
    auto position = base::try_emplace(hint, std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
    if (this->size() != size_before) node = node_type();
    return position;
  }

  node_type extract(const_iterator position) {
    if (!this->inline_pool()->owns_node(std::addressof(*position))) return base::extract(position);
    // The node is in this object: rebuild the element in a heap node with a
    // heap-only allocator, which outlives *this safely. If that throws, the
    // element is put back and *this is unchanged.
    node_type inline_node = base::extract(position);
    try {
      base heap_only(this->key_comp(), allocator_type());
      heap_only.try_emplace(std::move_if_noexcept(inline_node.key()), std::move_if_noexcept(inline_node.mapped()));
      return heap_only.extract(heap_only.begin());
    } catch (...) {
      base::insert(std::move(inline_node));
      throw;
    }
  }

  node_type extract(const key_type& key) {
    const auto position = this->find(key);
    return position == this->end() ? node_type() : extract(position);
  }

  // Elements whose key is not in *this leave source and join *this.
  template <class Compare2, class Allocator2>
  void merge(std::map<Key, T, Compare2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::map<Key, T, Compare2, Allocator2>&& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multimap<Key, T, Compare2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multimap<Key, T, Compare2, Allocator2>&& source) {
    merge_from(source);
  }

  void swap(inline_map& other) {
    if (this == &other) return;
    inline_map held(std::move(other));
    other = std::move(*this);
    *this = std::move(held);
  }

  friend void swap(inline_map& a, inline_map& b) { a.swap(b); }

  friend bool operator==(const inline_map& a, const inline_map& b) {
    return static_cast<const base&>(a) == static_cast<const base&>(b);
  }
  friend auto operator<=>(const inline_map& a, const inline_map& b) {
    return static_cast<const base&>(a) <=> static_cast<const base&>(b);
  }

  // Nodes currently in the inline slots (the rest are on the heap).
  std::size_t inline_nodes() const noexcept { return this->inline_pool()->nodes_in_use(); }

 private:
  allocator_type own_allocator() noexcept { return allocator_type(this->inline_pool()); }

  template <class Source>
  void merge_from(Source& source) {
    if (static_cast<const void*>(&source) == static_cast<const void*>(this)) return;
    for (auto it = source.begin(); it != source.end();) {
      const auto hint = this->lower_bound(it->first);
      if (hint != this->end() && !this->key_comp()(it->first, hint->first)) {
        ++it;
        continue;
      }
      auto node = source.extract(it++);
      try {
        base::emplace_hint(hint, std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
      } catch (...) {
        source.insert(it, std::move(node));
        throw;
      }
    }
  }
};

// inline_set<Key, N, Compare>: std::set with N inline nodes. Everything said
// about inline_map above holds here.
template <class Key, std::size_t N, class Compare = std::less<Key>>
class inline_set : private detail::inline_node_storage<detail::tree_node_slot_size<Key>,
                                                       detail::node_slot_align<Key>, N, 0>,
                   public std::set<Key, Compare, detail::inline_node_allocator<Key>> {
  using storage =
      detail::inline_node_storage<detail::tree_node_slot_size<Key>, detail::node_slot_align<Key>, N, 0>;
  using base = std::set<Key, Compare, detail::inline_node_allocator<Key>>;

 public:
  using typename base::allocator_type;
  using typename base::const_iterator;
  using typename base::insert_return_type;
  using typename base::iterator;
  using typename base::key_compare;
  using typename base::key_type;
  using typename base::node_type;
  using typename base::size_type;
  using typename base::value_type;

  static constexpr std::size_t inline_capacity = N;

  inline_set() : base(Compare(), own_allocator()) {}
  explicit inline_set(const Compare& compare) : base(compare, own_allocator()) {}
  template <std::input_iterator InputIt>
  inline_set(InputIt first, InputIt last, const Compare& compare = Compare())
      : base(first, last, compare, own_allocator()) {}
  inline_set(std::initializer_list<value_type> init, const Compare& compare = Compare())
      : base(init, compare, own_allocator()) {}
  inline_set(const inline_set& other) : base(other, own_allocator()) {}
  inline_set(inline_set&& other) : base(std::move(other), own_allocator()) { other.clear(); }

  ~inline_set() = default;

  inline_set& operator=(const inline_set& other) {
    base::operator=(other);
    return *this;
  }
  inline_set& operator=(inline_set&& other) {
    if (this != &other) {
      base::operator=(std::move(other));
      other.clear();
    }
    return *this;
  }
  inline_set& operator=(std::initializer_list<value_type> init) {
    base::operator=(init);
    return *this;
  }

  using base::insert;

  insert_return_type insert(node_type&& node) {
    if (node.empty()) return {this->end(), false, node_type()};
    if (node.get_allocator() == this->get_allocator()) return base::insert(std::move(node));
    const auto position = this->find(node.value());
    if (position != this->end()) return {position, false, std::move(node)};
    const auto inserted = base::emplace_hint(position, std::move_if_noexcept(node.value()));
    node = node_type();
    return {inserted, true, node_type()};
  }

  iterator insert(const_iterator hint, node_type&& node) {
    if (node.empty()) return this->end();
    if (node.get_allocator() == this->get_allocator()) return base::insert(hint, std::move(node));
    const auto position = this->find(node.value());
    if (position != this->end()) return position;
    const auto inserted = base::emplace_hint(hint, std::move_if_noexcept(node.value()));
    node = node_type();
    return inserted;
  }

  node_type extract(const_iterator position) {
    if (!this->inline_pool()->owns_node(std::addressof(*position))) return base::extract(position);
    node_type inline_node = base::extract(position);
    try {
      base heap_only(this->key_comp(), allocator_type());
      heap_only.emplace(std::move_if_noexcept(inline_node.value()));
      return heap_only.extract(heap_only.begin());
    } catch (...) {
      base::insert(std::move(inline_node));
      throw;
    }
  }

  node_type extract(const key_type& key) {
    const auto position = this->find(key);
    return position == this->end() ? node_type() : extract(position);
  }

  template <class Compare2, class Allocator2>
  void merge(std::set<Key, Compare2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::set<Key, Compare2, Allocator2>&& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multiset<Key, Compare2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multiset<Key, Compare2, Allocator2>&& source) {
    merge_from(source);
  }

  void swap(inline_set& other) {
    if (this == &other) return;
    inline_set held(std::move(other));
    other = std::move(*this);
    *this = std::move(held);
  }

  friend void swap(inline_set& a, inline_set& b) { a.swap(b); }

  friend bool operator==(const inline_set& a, const inline_set& b) {
    return static_cast<const base&>(a) == static_cast<const base&>(b);
  }
  friend auto operator<=>(const inline_set& a, const inline_set& b) {
    return static_cast<const base&>(a) <=> static_cast<const base&>(b);
  }

  std::size_t inline_nodes() const noexcept { return this->inline_pool()->nodes_in_use(); }

 private:
  allocator_type own_allocator() noexcept { return allocator_type(this->inline_pool()); }

  template <class Source>
  void merge_from(Source& source) {
    if (static_cast<const void*>(&source) == static_cast<const void*>(this)) return;
    for (auto it = source.begin(); it != source.end();) {
      const auto hint = this->lower_bound(*it);
      if (hint != this->end() && !this->key_comp()(*it, *hint)) {
        ++it;
        continue;
      }
      auto node = source.extract(it++);
      try {
        base::emplace_hint(hint, std::move_if_noexcept(node.value()));
      } catch (...) {
        source.insert(it, std::move(node));
        throw;
      }
    }
  }
};

}  // namespace mallard
