// mallard STL: inline_unordered_map, a std::unordered_map whose first N nodes
// and its bucket arrays live inside the object.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <unordered_map>
#include <utility>

#include "inline_node_pool.hpp"

namespace mallard {

// inline_unordered_map<Key, T, N, Hash, KeyEqual> is a
// std::unordered_map<Key, T, Hash, KeyEqual, A> (public base: the whole
// interface, std::erase_if included) whose allocator takes nodes from N
// slots in the object and bucket arrays from two inline bucket slots (two,
// so that a rehash can build the new array while the old one is alive).
// With libstdc++, a table of up to N elements never touches the heap; larger
// tables, or a bucket count raised by rehash()/reserve() past what the slots
// hold, use the global allocator for what does not fit.
//
// Differences from std::unordered_map are those of inline_map: element-wise
// move and swap (O(size), not noexcept; the source is left empty), extract()
// moves an inline element into a heap node, node insertion and merge() across
// containers move elements out of foreign nodes.
template <class Key, class T, std::size_t N, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>>
class inline_unordered_map
    : private detail::inline_node_storage<detail::hash_node_slot_size<std::pair<const Key, T>>,
                                          detail::node_slot_align<std::pair<const Key, T>>, N,
                                          detail::hash_bucket_slot_bytes(N)>,
      public std::unordered_map<Key, T, Hash, KeyEqual, detail::inline_node_allocator<std::pair<const Key, T>>> {
  using base = std::unordered_map<Key, T, Hash, KeyEqual, detail::inline_node_allocator<std::pair<const Key, T>>>;

 public:
  using typename base::allocator_type;
  using typename base::const_iterator;
  using typename base::hasher;
  using typename base::insert_return_type;
  using typename base::iterator;
  using typename base::key_equal;
  using typename base::key_type;
  using typename base::mapped_type;
  using typename base::node_type;
  using typename base::size_type;
  using typename base::value_type;

  static constexpr std::size_t inline_capacity = N;

  inline_unordered_map() : base(own_allocator()) {}
  explicit inline_unordered_map(size_type bucket_count, const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual())
      : base(bucket_count, hash, equal, own_allocator()) {}
  template <std::input_iterator InputIt>
  inline_unordered_map(InputIt first, InputIt last, size_type bucket_count = 0, const Hash& hash = Hash(),
                       const KeyEqual& equal = KeyEqual())
      : base(first, last, bucket_count, hash, equal, own_allocator()) {}
  inline_unordered_map(std::initializer_list<value_type> init, size_type bucket_count = 0, const Hash& hash = Hash(),
                       const KeyEqual& equal = KeyEqual())
      : base(init, bucket_count, hash, equal, own_allocator()) {}
  inline_unordered_map(const inline_unordered_map& other) : base(other, own_allocator()) {}
  inline_unordered_map(inline_unordered_map&& other) : base(std::move(other), own_allocator()) { other.clear(); }

  ~inline_unordered_map() = default;

  inline_unordered_map& operator=(const inline_unordered_map& other) {
    base::operator=(other);
    return *this;
  }
  inline_unordered_map& operator=(inline_unordered_map&& other) {
    if (this != &other) {
      base::operator=(std::move(other));
      other.clear();
    }
    return *this;
  }
  inline_unordered_map& operator=(std::initializer_list<value_type> init) {
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
    node = node_type();
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
    node_type inline_node = base::extract(position);
    try {
      base heap_only(1, this->hash_function(), this->key_eq(), allocator_type());
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

  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_map<Key, T, Hash2, KeyEqual2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_map<Key, T, Hash2, KeyEqual2, Allocator2>&& source) {
    merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_multimap<Key, T, Hash2, KeyEqual2, Allocator2>& source) {
    merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_multimap<Key, T, Hash2, KeyEqual2, Allocator2>&& source) {
    merge_from(source);
  }

  void swap(inline_unordered_map& other) {
    if (this == &other) return;
    inline_unordered_map held(std::move(other));
    other = std::move(*this);
    *this = std::move(held);
  }

  friend void swap(inline_unordered_map& a, inline_unordered_map& b) { a.swap(b); }

  friend bool operator==(const inline_unordered_map& a, const inline_unordered_map& b) {
    return static_cast<const base&>(a) == static_cast<const base&>(b);
  }

  std::size_t inline_nodes() const noexcept { return this->inline_pool()->nodes_in_use(); }

 private:
  allocator_type own_allocator() noexcept { return allocator_type(this->inline_pool()); }

  template <class Source>
  void merge_from(Source& source) {
    if (static_cast<const void*>(&source) == static_cast<const void*>(this)) return;
    for (auto it = source.begin(); it != source.end();) {
      if (this->contains(it->first)) {
        ++it;
        continue;
      }
      const auto next = std::next(it);
      auto node = source.extract(it);
      try {
        base::try_emplace(std::move_if_noexcept(node.key()), std::move_if_noexcept(node.mapped()));
      } catch (...) {
        source.insert(std::move(node));
        throw;
      }
      it = next;
    }
  }
};

}  // namespace mallard
