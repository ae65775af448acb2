// mallard STL: inline_unordered_map, a std::unordered_map whose first N nodes
// and its bucket arrays live inside the object.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <unordered_map>
#include <utility>

#include "inline_node_container.hpp"

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
    : public detail::inline_node_container<
          inline_unordered_map<Key, T, N, Hash, KeyEqual>,
          std::unordered_map<Key, T, Hash, KeyEqual, detail::inline_node_allocator<std::pair<const Key, T>>>,
          detail::hash_node_slot_size<std::pair<const Key, T>>, N, detail::hash_bucket_slot_bytes(N)> {
  using container = typename inline_unordered_map::inline_node_container;  // the base, by its injected-class-name

 public:
  using typename container::size_type;
  using typename container::value_type;

  inline_unordered_map() : container() {}
  explicit inline_unordered_map(size_type bucket_count, const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual())
      : container(bucket_count, hash, equal) {}
  template <std::input_iterator InputIt>
  inline_unordered_map(InputIt first, InputIt last, size_type bucket_count = 0, const Hash& hash = Hash(),
                       const KeyEqual& equal = KeyEqual())
      : container(first, last, bucket_count, hash, equal) {}
  inline_unordered_map(std::initializer_list<value_type> init, size_type bucket_count = 0, const Hash& hash = Hash(),
                       const KeyEqual& equal = KeyEqual())
      : container(init, bucket_count, hash, equal) {}

  inline_unordered_map& operator=(std::initializer_list<value_type> init) { return this->assign_initializer_list(init); }

  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_map<Key, T, Hash2, KeyEqual2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_map<Key, T, Hash2, KeyEqual2, Allocator2>&& source) {
    this->merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_multimap<Key, T, Hash2, KeyEqual2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Hash2, class KeyEqual2, class Allocator2>
  void merge(std::unordered_multimap<Key, T, Hash2, KeyEqual2, Allocator2>&& source) {
    this->merge_from(source);
  }
};

}  // namespace mallard
