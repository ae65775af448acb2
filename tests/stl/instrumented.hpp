// Element types for the mallard STL tests: they count constructions and
// destructions, detect use after destruction, and throw on request.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <compare>
#include <cstddef>
#include <functional>
#include <stdexcept>

namespace mallard_test {

struct injected_failure : std::runtime_error {
  injected_failure() : std::runtime_error("injected failure") {}
};

// Global counters shared by every instrumented type.
struct counters {
  // Atomic: arena tests create and destroy elements on many threads.
  static inline std::atomic<long> live = 0;
  static inline std::atomic<long> constructions = 0;
  static inline std::atomic<long> destructions = 0;
  static inline std::atomic<long> errors = 0;
  // When positive, counts down on every throwing-capable construction; the
  // construction that brings it to zero throws. Single-threaded tests only.
  static inline long throw_countdown = 0;

  static void reset() {
    live = 0;
    constructions = 0;
    destructions = 0;
    errors = 0;
    throw_countdown = 0;
  }
  static void maybe_throw() {
    if (throw_countdown > 0 && --throw_countdown == 0) throw injected_failure();
  }
};

// An int with a lifetime check. NothrowMove selects whether moves are
// noexcept (and never throw) or may throw like copies.
template <bool NothrowMove>
class basic_tracked {
 public:
  basic_tracked() : basic_tracked(0) {}
  basic_tracked(int value) : value_(value) {  // NOLINT: implicit, like the int it wraps
    counters::maybe_throw();
    born();
  }
  basic_tracked(const basic_tracked& other) : value_(other.checked()) {
    counters::maybe_throw();
    born();
  }
  basic_tracked(basic_tracked&& other) noexcept(NothrowMove) : value_(other.checked()) {
    if constexpr (!NothrowMove) counters::maybe_throw();
    other.value_ = moved_from_value;
    born();
  }
  basic_tracked& operator=(const basic_tracked& other) {
    check();
    value_ = other.checked();
    return *this;
  }
  basic_tracked& operator=(basic_tracked&& other) noexcept(NothrowMove) {
    check();
    value_ = other.checked();
    if (&other != this) other.value_ = moved_from_value;
    return *this;
  }
  ~basic_tracked() {
    check();
    magic_ = dead_magic;
    --counters::live;
    ++counters::destructions;
  }

  int value() const { return checked(); }

  friend bool operator==(const basic_tracked& a, const basic_tracked& b) { return a.checked() == b.checked(); }
  friend std::strong_ordering operator<=>(const basic_tracked& a, const basic_tracked& b) {
    return a.checked() <=> b.checked();
  }

  static constexpr int moved_from_value = -1000000;

 private:
  static constexpr unsigned alive_magic = 0xA11FE5u;
  static constexpr unsigned dead_magic = 0xDEADu;

  void born() {
    magic_ = alive_magic;
    ++counters::live;
    ++counters::constructions;
  }
  void check() const {
    if (magic_ != alive_magic) {
      ++counters::errors;
      ADD_FAILURE() << "instrumented element used after destruction (or never constructed)";
    }
  }
  int checked() const {
    check();
    return value_;
  }

  int value_;
  unsigned magic_ = 0;
};

using tracked = basic_tracked<true>;
using tracked_throwing_move = basic_tracked<false>;

// A move-only element, to check that nothing requires a copy.
class move_only {
 public:
  explicit move_only(int value) : value_(value) {}
  move_only(move_only&& other) noexcept : value_(other.value_) { other.value_ = -1; }
  move_only& operator=(move_only&& other) noexcept {
    value_ = other.value_;
    other.value_ = -1;
    return *this;
  }
  int value() const { return value_; }
  friend auto operator<=>(const move_only&, const move_only&) = default;

 private:
  int value_;
};

// Every instrumented element is gone and none was misused.
inline void expect_clean_counters() {
  EXPECT_EQ(counters::live.load(), 0);
  EXPECT_EQ(counters::errors.load(), 0);
  EXPECT_EQ(counters::constructions.load(), counters::destructions.load());
}

}  // namespace mallard_test

template <bool NothrowMove>
struct std::hash<mallard_test::basic_tracked<NothrowMove>> {
  std::size_t operator()(const mallard_test::basic_tracked<NothrowMove>& t) const noexcept {
    return std::hash<int>{}(t.value());
  }
};
