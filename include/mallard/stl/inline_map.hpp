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

#include "inline_node_container.hpp"

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
class inline_map : public detail::inline_node_container<
                       inline_map<Key, T, N, Compare>,
                       std::map<Key, T, Compare, detail::inline_node_allocator<std::pair<const Key, T>>>,
                       detail::tree_node_slot_size<std::pair<const Key, T>>, N> {
  using container = typename inline_map::inline_node_container;  // the base, by its injected-class-name

 public:
  using typename container::value_type;

  inline_map() : container(Compare()) {}
  explicit inline_map(const Compare& compare) : container(compare) {}
  template <std::input_iterator InputIt>
  inline_map(InputIt first, InputIt last, const Compare& compare = Compare()) : container(first, last, compare) {}
  inline_map(std::initializer_list<value_type> init, const Compare& compare = Compare()) : container(init, compare) {}

  inline_map& operator=(std::initializer_list<value_type> init) { return this->assign_initializer_list(init); }

  template <class Compare2, class Allocator2>
  void merge(std::map<Key, T, Compare2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::map<Key, T, Compare2, Allocator2>&& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multimap<Key, T, Compare2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multimap<Key, T, Compare2, Allocator2>&& source) {
    this->merge_from(source);
  }
};

// inline_set<Key, N, Compare>: std::set with N inline nodes. Everything said
// about inline_map above holds here.
template <class Key, std::size_t N, class Compare = std::less<Key>>
class inline_set : public detail::inline_node_container<inline_set<Key, N, Compare>,
                                                        std::set<Key, Compare, detail::inline_node_allocator<Key>>,
                                                        detail::tree_node_slot_size<Key>, N> {
  using container = typename inline_set::inline_node_container;  // the base, by its injected-class-name

 public:
  using typename container::value_type;

  inline_set() : container(Compare()) {}
  explicit inline_set(const Compare& compare) : container(compare) {}
  template <std::input_iterator InputIt>
  inline_set(InputIt first, InputIt last, const Compare& compare = Compare()) : container(first, last, compare) {}
  inline_set(std::initializer_list<value_type> init, const Compare& compare = Compare()) : container(init, compare) {}

  inline_set& operator=(std::initializer_list<value_type> init) { return this->assign_initializer_list(init); }

  template <class Compare2, class Allocator2>
  void merge(std::set<Key, Compare2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::set<Key, Compare2, Allocator2>&& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multiset<Key, Compare2, Allocator2>& source) {
    this->merge_from(source);
  }
  template <class Compare2, class Allocator2>
  void merge(std::multiset<Key, Compare2, Allocator2>&& source) {
    this->merge_from(source);
  }
};

}  // namespace mallard
