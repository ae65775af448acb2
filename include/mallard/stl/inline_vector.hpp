// mallard STL: inline_vector<T, N>, a std::vector whose first N elements live
// inside the object (a "small vector", like llvm::SmallVector or
// boost::container::small_vector).
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace mallard {

namespace detail {

// The comparison std containers use for operator<=> ("synth-three-way"):
// operator<=> when the element has it, otherwise one built from operator<.
struct synth_three_way_fn {
  template <class A, class B>
  constexpr auto operator()(const A& a, const B& b) const
    requires requires {
      { a < b } -> std::convertible_to<bool>;
      { b < a } -> std::convertible_to<bool>;
    }
  {
    if constexpr (std::three_way_comparable_with<A, B>) {
      return a <=> b;
    } else {
      if (a < b) return std::weak_ordering::less;
      if (b < a) return std::weak_ordering::greater;
      return std::weak_ordering::equivalent;
    }
  }
};
inline constexpr synth_three_way_fn synth_three_way{};

}  // namespace detail

// inline_vector<T, N> has the interface and the guarantees of std::vector<T>:
// same complexity, same iterator invalidation (any growth invalidates all
// iterators), same exception guarantees (push_back, emplace_back, reserve,
// resize and insertion at the end are strong when T's move constructor is
// noexcept or T is copyable; other insertions are basic). While size() <= N
// and capacity was never raised beyond N, elements live in the object and
// the heap is never touched.
//
// Differences from std::vector, all forced by the inline storage:
//  - Moving or swapping a vector whose elements are inline moves the
//    elements one by one (O(size), noexcept only when T's move is); a vector
//    on the heap hands over its buffer in O(1), as std::vector does. After
//    a move, the source is empty and reusable.
//  - Iterators into an inline source do not survive a move or swap (the
//    elements stay in the source object, which is being emptied).
//  - The allocator is not a template parameter: heap storage comes from
//    std::allocator<T>, which is stateless (is_always_equal, and none of
//    the propagate_on_container_* traits matter).
//  - erase(v, x) and erase_if(v, pred) are mallard:: functions found by
//    argument-dependent lookup, not std:: overloads.
template <class T, std::size_t N>
class inline_vector {
 public:
  using value_type = T;
  using allocator_type = std::allocator<T>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  static constexpr size_type inline_capacity = N;

  // --- construction, assignment, destruction ---

  inline_vector() noexcept {}

  explicit inline_vector(size_type count) {
    construct_with([&] {
      reserve(count);
      std::uninitialized_value_construct_n(data_, count);
      size_ = count;
    });
  }

  inline_vector(size_type count, const T& value) {
    construct_with([&] {
      reserve(count);
      std::uninitialized_fill_n(data_, count, value);
      size_ = count;
    });
  }

  template <std::input_iterator InputIt>
  inline_vector(InputIt first, InputIt last) {
    construct_with([&] { assign(first, last); });
  }

  inline_vector(std::initializer_list<T> init) : inline_vector(init.begin(), init.end()) {}

  inline_vector(const inline_vector& other) {
    construct_with([&] {
      reserve(other.size_);
      std::uninitialized_copy(other.begin(), other.end(), data_);
      size_ = other.size_;
    });
  }

  inline_vector(inline_vector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (!other.is_inline()) {
      steal_heap_buffer(other);
    } else {
      std::uninitialized_move(other.begin(), other.end(), data_);
      size_ = other.size_;
      other.clear();
    }
  }

  ~inline_vector() {
    std::destroy(begin(), end());
    release_heap_buffer();
  }

  inline_vector& operator=(const inline_vector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }

  inline_vector& operator=(inline_vector&& other) noexcept(std::is_nothrow_move_constructible_v<T> &&
                                                           std::is_nothrow_move_assignable_v<T>) {
    if (this == &other) return *this;
    if (!other.is_inline()) {
      clear();
      release_heap_buffer();
      steal_heap_buffer(other);
    } else {
      // other.size() <= N <= capacity(): no allocation, only element moves.
      assign_in_place(std::make_move_iterator(other.begin()), other.size_);
      other.clear();
    }
    return *this;
  }

  inline_vector& operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }

  void assign(size_type count, const T& value) {
    if (count > capacity_) {
      inline_vector replacement(count, value);
      *this = std::move(replacement);  // replacement is on the heap: O(1), no throw
      return;
    }
    const size_type common = std::min(count, size_);
    std::fill_n(data_, common, value);
    if (count > size_) {
      std::uninitialized_fill_n(data_ + size_, count - size_, value);
    } else {
      std::destroy(data_ + count, data_ + size_);
    }
    size_ = count;
  }

  template <std::input_iterator InputIt>
  void assign(InputIt first, InputIt last) {
    if constexpr (std::forward_iterator<InputIt>) {
      const auto count = static_cast<size_type>(std::distance(first, last));
      if (count > capacity_) {
        inline_vector replacement;
        replacement.reserve(count);
        std::uninitialized_copy(first, last, replacement.data_);
        replacement.size_ = count;
        *this = std::move(replacement);
        return;
      }
      assign_in_place(first, count);
    } else {
      clear();
      for (; first != last; ++first) emplace_back(*first);
    }
  }

  void assign(std::initializer_list<T> init) { assign(init.begin(), init.end()); }

  allocator_type get_allocator() const noexcept { return allocator_type{}; }

  // --- element access ---

  reference at(size_type index) {
    if (index >= size_) throw std::out_of_range("mallard::inline_vector::at");
    return data_[index];
  }
  const_reference at(size_type index) const {
    if (index >= size_) throw std::out_of_range("mallard::inline_vector::at");
    return data_[index];
  }
  reference operator[](size_type index) noexcept { return data_[index]; }
  const_reference operator[](size_type index) const noexcept { return data_[index]; }
  reference front() noexcept { return data_[0]; }
  const_reference front() const noexcept { return data_[0]; }
  reference back() noexcept { return data_[size_ - 1]; }
  const_reference back() const noexcept { return data_[size_ - 1]; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }

  // --- iterators ---

  iterator begin() noexcept { return data_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator cbegin() const noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cend() const noexcept { return data_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator crbegin() const noexcept { return const_reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  const_reverse_iterator crend() const noexcept { return const_reverse_iterator(begin()); }

  // --- capacity ---

  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  size_type size() const noexcept { return size_; }
  size_type max_size() const noexcept {
    return std::min<size_type>(std::allocator_traits<allocator_type>::max_size(allocator_type{}),
                               static_cast<size_type>(std::numeric_limits<difference_type>::max()) / sizeof(T));
  }
  size_type capacity() const noexcept { return capacity_; }

  // Whether the elements are in the object's inline storage (not on the heap).
  bool is_inline() const noexcept { return data_ == inline_data(); }

  void reserve(size_type new_capacity) {
    if (new_capacity <= capacity_) return;
    if (new_capacity > max_size()) throw std::length_error("mallard::inline_vector::reserve");
    reallocate(new_capacity, size_, 0, [](T*) {});
  }

  // Moves the elements back inline when they fit; otherwise trims the heap
  // buffer to size(). Strong guarantee, like std::vector's.
  void shrink_to_fit() {
    if (is_inline() || size_ == capacity_) return;
    reallocate(size_ <= N ? N : size_, size_, 0, [](T*) {});
  }

  // --- modifiers ---

  void clear() noexcept {
    std::destroy(begin(), end());
    size_ = 0;
  }

  iterator insert(const_iterator position, const T& value) { return emplace(position, value); }
  iterator insert(const_iterator position, T&& value) { return emplace(position, std::move(value)); }

  iterator insert(const_iterator position, size_type count, const T& value) {
    const auto index = index_of(position);
    if (count == 0) return data_ + index;
    if (capacity_ - size_ >= count) {
      const T copy(value);  // value may be an element that is about to move
      insert_in_place(index, count, [&](T* dest, size_type n) { std::uninitialized_fill_n(dest, n, copy); },
                      [&](T* dest, size_type n) { std::fill_n(dest, n, copy); });
    } else {
      reallocate(next_capacity(size_ + count), index, count,
                 [&](T* gap) { std::uninitialized_fill_n(gap, count, value); });
    }
    return data_ + index;
  }

  template <std::input_iterator InputIt>
  iterator insert(const_iterator position, InputIt first, InputIt last) {
    const auto index = index_of(position);
    if constexpr (std::forward_iterator<InputIt>) {
      const auto count = static_cast<size_type>(std::distance(first, last));
      if (count == 0) return data_ + index;
      if (capacity_ - size_ >= count) {
        insert_in_place(
            index, count,
            [&](T* dest, size_type n) { std::uninitialized_copy(std::next(first, difference_type(count - n)), last, dest); },
            [&](T* dest, size_type n) { std::copy_n(first, n, dest); });
      } else {
        reallocate(next_capacity(size_ + count), index, count,
                   [&](T* gap) { std::uninitialized_copy(first, last, gap); });
      }
    } else {
      const size_type old_size = size_;
      for (; first != last; ++first) emplace_back(*first);
      std::rotate(data_ + index, data_ + old_size, data_ + size_);
    }
    return data_ + index;
  }

  iterator insert(const_iterator position, std::initializer_list<T> init) {
    return insert(position, init.begin(), init.end());
  }

  template <class... Args>
  iterator emplace(const_iterator position, Args&&... args) {
    const auto index = index_of(position);
    if (index == size_) {
      emplace_back(std::forward<Args>(args)...);
    } else if (size_ < capacity_) {
      T value(std::forward<Args>(args)...);  // args may refer to an element that moves below
      std::construct_at(data_ + size_, std::move(data_[size_ - 1]));
      ++size_;
      std::move_backward(data_ + index, data_ + size_ - 2, data_ + size_ - 1);
      data_[index] = std::move(value);
    } else {
      reallocate(next_capacity(size_ + 1), index, 1,
                 [&](T* gap) { std::construct_at(gap, std::forward<Args>(args)...); });
    }
    return data_ + index;
  }

  iterator erase(const_iterator position) {
    T* target = data_ + index_of(position);
    std::move(target + 1, end(), target);
    pop_back();
    return target;
  }

  iterator erase(const_iterator first, const_iterator last) {
    T* target = data_ + index_of(first);
    if (first != last) {
      T* new_end = std::move(data_ + index_of(last), end(), target);
      std::destroy(new_end, end());
      size_ = static_cast<size_type>(new_end - data_);
    }
    return target;
  }

  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }

  template <class... Args>
  reference emplace_back(Args&&... args) {
    if (size_ < capacity_) {
      T* slot = std::construct_at(data_ + size_, std::forward<Args>(args)...);
      ++size_;
      return *slot;
    }
    // The new element is built in the new buffer before the old elements
    // move, so args may refer to an element of *this.
    reallocate(next_capacity(size_ + 1), size_, 1,
               [&](T* gap) { std::construct_at(gap, std::forward<Args>(args)...); });
    return back();
  }

  void pop_back() noexcept {
    --size_;
    std::destroy_at(data_ + size_);
  }

  void resize(size_type count) {
    if (count <= size_) {
      std::destroy(data_ + count, end());
      size_ = count;
    } else if (count <= capacity_) {
      std::uninitialized_value_construct_n(end(), count - size_);
      size_ = count;
    } else {
      reallocate(next_capacity(count), size_, count - size_,
                 [&](T* gap) { std::uninitialized_value_construct_n(gap, count - size_); });
    }
  }

  void resize(size_type count, const T& value) {
    if (count <= size_) {
      std::destroy(data_ + count, end());
      size_ = count;
    } else if (count <= capacity_) {
      std::uninitialized_fill_n(end(), count - size_, value);
      size_ = count;
    } else {
      reallocate(next_capacity(count), size_, count - size_,
                 [&](T* gap) { std::uninitialized_fill_n(gap, count - size_, value); });
    }
  }

  void swap(inline_vector& other) noexcept(std::is_nothrow_move_constructible_v<T> &&
                                           std::is_nothrow_swappable_v<T>) {
    if (this == &other) return;
    if (!is_inline() && !other.is_inline()) {
      std::swap(data_, other.data_);
      std::swap(size_, other.size_);
      std::swap(capacity_, other.capacity_);
    } else if (!is_inline()) {
      swap_heap_with_inline(*this, other);
    } else if (!other.is_inline()) {
      swap_heap_with_inline(other, *this);
    } else {
      inline_vector& longer = size_ >= other.size_ ? *this : other;
      inline_vector& shorter = size_ >= other.size_ ? other : *this;
      std::swap_ranges(shorter.begin(), shorter.end(), longer.begin());
      std::uninitialized_move(longer.begin() + shorter.size_, longer.end(), shorter.end());
      const size_type longer_size = longer.size_;
      std::destroy(longer.begin() + shorter.size_, longer.end());
      longer.size_ = shorter.size_;
      shorter.size_ = longer_size;
    }
  }

  friend void swap(inline_vector& a, inline_vector& b) noexcept(noexcept(a.swap(b))) { a.swap(b); }

  friend bool operator==(const inline_vector& a, const inline_vector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

  friend auto operator<=>(const inline_vector& a, const inline_vector& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end(), detail::synth_three_way);
  }

 private:
  T* inline_data() noexcept { return reinterpret_cast<T*>(inline_storage_.data()); }
  const T* inline_data() const noexcept { return reinterpret_cast<const T*>(inline_storage_.data()); }

  size_type index_of(const_iterator position) const noexcept {
    return static_cast<size_type>(position - data_);
  }

  // Geometric growth (factor 2), as libstdc++ and libc++ do.
  size_type next_capacity(size_type required) const {
    if (required > max_size()) throw std::length_error("mallard::inline_vector");
    const size_type doubled = capacity_ > max_size() / 2 ? max_size() : 2 * capacity_;
    return std::max(required, doubled);
  }

  // Runs a constructor body; on exception frees what it built (the
  // destructor does not run for a constructor that throws).
  template <class Body>
  void construct_with(Body&& body) {
    try {
      body();
    } catch (...) {
      clear();
      release_heap_buffer();
      throw;
    }
  }

  void steal_heap_buffer(inline_vector& other) noexcept {
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.data_ = other.inline_data();
    other.size_ = 0;
    other.capacity_ = N;
  }

  void release_heap_buffer() noexcept {
    if (!is_inline()) {
      allocator_type{}.deallocate(data_, capacity_);
      data_ = inline_data();
      capacity_ = N;
    }
  }

  // Moves the elements to new storage with a gap of gap_count elements at
  // gap_index, built by fill_gap(gap) first. Strong guarantee: on exception
  // the new storage is released and *this is unchanged. The new storage is
  // the inline buffer when the heap is being left for good (shrink_to_fit).
  template <class FillGap>
  void reallocate(size_type new_capacity, size_type gap_index, size_type gap_count, FillGap&& fill_gap) {
    const bool to_inline = new_capacity <= N && !is_inline();
    T* new_data = to_inline ? inline_data() : allocator_type{}.allocate(new_capacity);
    T* constructed_end = new_data;
    try {
      fill_gap(new_data + gap_index);
      try {
        constructed_end = relocate(data_, data_ + gap_index, new_data);
        relocate(data_ + gap_index, data_ + size_, new_data + gap_index + gap_count);
      } catch (...) {
        std::destroy(new_data, constructed_end);
        std::destroy(new_data + gap_index, new_data + gap_index + gap_count);
        throw;
      }
    } catch (...) {
      if (!to_inline) allocator_type{}.deallocate(new_data, new_capacity);
      throw;
    }
    std::destroy(begin(), end());
    if (!is_inline()) allocator_type{}.deallocate(data_, capacity_);
    data_ = new_data;
    capacity_ = to_inline ? N : new_capacity;
    size_ += gap_count;
  }

  // Move when that cannot throw (or there is no copy), else copy: what keeps
  // reallocation strongly exception-safe.
  static T* relocate(T* first, T* last, T* dest) {
    if constexpr (std::is_nothrow_move_constructible_v<T> || !std::is_copy_constructible_v<T>) {
      return std::uninitialized_move(first, last, dest);
    } else {
      return std::uninitialized_copy(first, last, dest);
    }
  }

  // Replaces the contents with count elements read from first, without
  // reallocating. Precondition: count <= capacity().
  template <class ForwardIt>
  void assign_in_place(ForwardIt first, size_type count) {
    if (count <= size_) {
      std::copy_n(first, count, data_);
      std::destroy(data_ + count, end());
    } else {
      std::copy_n(first, size_, data_);
      std::uninitialized_copy_n(std::next(first, static_cast<difference_type>(size_)), count - size_, end());
    }
    size_ = count;
  }

  // Opens a gap of count elements at index within the current capacity.
  // construct_tail(dest, n) builds the last n new elements into raw memory;
  // assign_head(dest, n) assigns the first n new elements over moved-from
  // ones. size_ always counts exactly the constructed elements, so an
  // exception leaves a valid vector (basic guarantee, as std::vector).
  template <class ConstructTail, class AssignHead>
  void insert_in_place(size_type index, size_type count, ConstructTail&& construct_tail, AssignHead&& assign_head) {
    T* position = data_ + index;
    T* old_end = end();
    const size_type elements_after = size_ - index;
    if (elements_after > count) {
      std::uninitialized_move(old_end - count, old_end, old_end);
      size_ += count;
      std::move_backward(position, old_end - count, old_end);
      assign_head(position, count);
    } else {
      construct_tail(old_end, count - elements_after);
      size_ += count - elements_after;
      std::uninitialized_move(position, old_end, end());
      size_ += elements_after;
      assign_head(position, elements_after);
    }
  }

  // heap_side's inline buffer is unused, so inline_side's elements move
  // there, and inline_side takes over heap_side's heap buffer.
  static void swap_heap_with_inline(inline_vector& heap_side, inline_vector& inline_side) {
    T* heap_buffer = heap_side.data_;
    std::uninitialized_move(inline_side.begin(), inline_side.end(), heap_side.inline_data());
    const size_type inline_size = inline_side.size_;
    inline_side.clear();
    inline_side.data_ = heap_buffer;
    inline_side.size_ = heap_side.size_;
    inline_side.capacity_ = heap_side.capacity_;
    heap_side.data_ = heap_side.inline_data();
    heap_side.size_ = inline_size;
    heap_side.capacity_ = N;
  }

  // Invariant: data_ is inline_data() (capacity_ == N) or a heap buffer of
  // capacity_ > N elements; [data_, data_ + size_) are constructed.
  T* data_ = inline_data();
  size_type size_ = 0;
  size_type capacity_ = N;
  alignas(T) std::array<std::byte, N * sizeof(T)> inline_storage_;
};

template <class T, std::size_t N, class U>
typename inline_vector<T, N>::size_type erase(inline_vector<T, N>& vector, const U& value) {
  const auto new_end = std::remove(vector.begin(), vector.end(), value);
  const auto removed = static_cast<typename inline_vector<T, N>::size_type>(vector.end() - new_end);
  vector.erase(new_end, vector.end());
  return removed;
}

template <class T, std::size_t N, class Predicate>
typename inline_vector<T, N>::size_type erase_if(inline_vector<T, N>& vector, Predicate predicate) {
  const auto new_end = std::remove_if(vector.begin(), vector.end(), predicate);
  const auto removed = static_cast<typename inline_vector<T, N>::size_type>(vector.end() - new_end);
  vector.erase(new_end, vector.end());
  return removed;
}

}  // namespace mallard
