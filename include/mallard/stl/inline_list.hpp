// mallard STL: inline_list<T, N>, a std::list whose first N nodes live inside
// the object.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <list>
#include <utility>

#include "inline_node_container.hpp"

namespace mallard {

// inline_list<T, N> is a std::list<T, A> (public base: the whole interface,
// std::erase and std::erase_if included) whose allocator takes nodes from N
// slots in the object, then from the global allocator. Erased slots are
// reused first.
//
// What differs from std::list, because nodes may live in the object:
//  - Move construction/assignment and swap move elements one by one
//    (O(size), not noexcept); the source is left empty and reusable.
//  - splice() and merge() from another list move the elements into new nodes
//    of *this instead of relinking the source's nodes (std requires equal
//    allocators, which two objects' pools never are): O(moved elements),
//    may allocate, and iterators to the moved elements do not follow them.
//    They are strong: the moved elements are built in a side list first and
//    linked in with a no-throw splice; with a throwing move constructor the
//    elements are copied, so a failure leaves the source intact. Splicing
//    within one list relinks, as std does.
// sort(), unique(), remove(), reverse() and the rest are std::list's own.
template <class T, std::size_t N>
class inline_list : public detail::inline_node_owner<inline_list<T, N>, std::list<T, detail::inline_node_allocator<T>>,
                                                     detail::list_node_slot_size<T>, N> {
  using owner = typename inline_list::inline_node_owner;  // the base, by its injected-class-name
  using base = std::list<T, detail::inline_node_allocator<T>>;

 public:
  using typename owner::const_iterator;
  using typename owner::size_type;

  inline_list() : owner() {}
  explicit inline_list(size_type count) : owner(count) {}
  inline_list(size_type count, const T& value) : owner(count, value) {}
  template <std::input_iterator InputIt>
  inline_list(InputIt first, InputIt last) : owner(first, last) {}
  inline_list(std::initializer_list<T> init) : owner(init) {}

  inline_list& operator=(std::initializer_list<T> init) { return this->assign_initializer_list(init); }

  // --- splice: relinks within one list, moves elements between lists ---

  void splice(const_iterator position, base& other) { splice(position, other, other.begin(), other.end()); }
  void splice(const_iterator position, base&& other) { splice(position, other); }

  void splice(const_iterator position, base& other, const_iterator element) {
    if (&other == this) return base::splice(position, other, element);
    splice(position, other, element, std::next(element));
  }
  void splice(const_iterator position, base&& other, const_iterator element) { splice(position, other, element); }

  void splice(const_iterator position, base& other, const_iterator first, const_iterator last) {
    if (&other == this) return base::splice(position, other, first, last);
    base moved = transfer_copy(first, last);
    other.erase(first, last);
    base::splice(position, moved);
  }
  void splice(const_iterator position, base&& other, const_iterator first, const_iterator last) {
    splice(position, other, first, last);
  }

  // --- merge: both lists sorted; stable, *this's elements first among equals ---

  void merge(base& other) { merge(other, std::less<>()); }
  void merge(base&& other) { merge(other, std::less<>()); }

  template <class Compare>
  void merge(base& other, Compare compare) {
    if (&other == this) return;
    base moved = transfer_copy(other.cbegin(), other.cend());
    other.clear();
    base::merge(moved, compare);
  }
  template <class Compare>
  void merge(base&& other, Compare compare) {
    merge(other, compare);
  }

 private:
  // New nodes of *this (same pool, so base::splice/merge may relink them)
  // holding the elements of [first, last), moved when that cannot throw.
  base transfer_copy(const_iterator first, const_iterator last) {
    base moved(this->pool_allocator());
    for (; first != last; ++first) moved.emplace_back(std::move_if_noexcept(const_cast<T&>(*first)));
    return moved;
  }
};

}  // namespace mallard
