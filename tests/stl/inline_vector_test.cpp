// inline_vector against std::vector: random operation sequences, every
// copy/move/swap combination, exception guarantees.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <list>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "instrumented.hpp"

namespace {

using mallard_test::counters;
using mallard_test::tracked;
using mallard_test::tracked_throwing_move;

template <class Vector>
std::vector<int> values_of(const Vector& vector) {
  std::vector<int> values;
  for (const auto& element : vector) values.push_back(element.value());
  return values;
}

template <class Vector>
void expect_same(const Vector& actual, const std::vector<int>& expected, std::size_t step) {
  ASSERT_EQ(actual.size(), expected.size()) << "step " << step;
  ASSERT_EQ(values_of(actual), expected) << "step " << step;
  ASSERT_GE(actual.capacity(), actual.size());
  ASSERT_EQ(actual.empty(), expected.empty());
  ASSERT_EQ(actual.end() - actual.begin(), static_cast<std::ptrdiff_t>(actual.size()));
  if (!expected.empty()) {
    ASSERT_EQ(actual.front().value(), expected.front());
    ASSERT_EQ(actual.back().value(), expected.back());
    ASSERT_EQ(actual.data(), &actual[0]);
  }
}

template <class Element, std::size_t N>
void run_random_sequence(std::uint32_t seed, std::size_t steps) {
  counters::reset();
  {
    std::mt19937 random(seed);
    auto pick = [&](std::size_t bound) { return bound == 0 ? std::size_t{0} : random() % bound; };
    mallard::inline_vector<Element, N> actual;
    mallard::inline_vector<Element, N> other;
    std::vector<int> expected;
    std::vector<int> other_expected;
    for (std::size_t step = 0; step < steps; ++step) {
      const int value = static_cast<int>(random() % 1000);
      switch (random() % 22) {
        case 0:
        case 1:
          actual.push_back(Element(value));
          expected.push_back(value);
          break;
        case 2:
          actual.emplace_back(value);
          expected.push_back(value);
          break;
        case 3:
          if (!expected.empty()) {
            actual.pop_back();
            expected.pop_back();
          }
          break;
        case 4: {
          const auto at = pick(expected.size() + 1);
          actual.insert(actual.begin() + at, Element(value));
          expected.insert(expected.begin() + at, value);
          break;
        }
        case 5: {
          const auto at = pick(expected.size() + 1);
          const auto count = pick(2 * N + 2);
          actual.insert(actual.begin() + at, count, Element(value));
          expected.insert(expected.begin() + at, count, value);
          break;
        }
        case 6: {
          const auto at = pick(expected.size() + 1);
          std::vector<int> source(pick(2 * N + 2), value);
          std::iota(source.begin(), source.end(), value);
          actual.insert(actual.begin() + at, source.begin(), source.end());
          expected.insert(expected.begin() + at, source.begin(), source.end());
          break;
        }
        case 7:
          if (!expected.empty()) {
            const auto at = pick(expected.size());
            actual.erase(actual.begin() + at);
            expected.erase(expected.begin() + at);
          }
          break;
        case 8: {
          const auto first = pick(expected.size() + 1);
          const auto last = first + pick(expected.size() - first + 1);
          actual.erase(actual.begin() + first, actual.begin() + last);
          expected.erase(expected.begin() + first, expected.begin() + last);
          break;
        }
        case 9: {
          const auto count = pick(3 * N + 3);
          actual.resize(count);
          expected.resize(count, 0);
          break;
        }
        case 10: {
          const auto count = pick(3 * N + 3);
          actual.resize(count, Element(value));
          expected.resize(count, value);
          break;
        }
        case 11:
          actual.reserve(pick(4 * N + 4));
          break;
        case 12:
          actual.shrink_to_fit();
          if (actual.size() <= N) {
            ASSERT_TRUE(actual.is_inline());
          } else {
            ASSERT_EQ(actual.capacity(), actual.size());
          }
          break;
        case 13:
          if (pick(4) == 0) {
            actual.clear();
            expected.clear();
          }
          break;
        case 14: {
          const auto count = pick(2 * N + 2);
          actual.assign(count, Element(value));
          expected.assign(count, value);
          break;
        }
        case 15: {
          // Self-referencing insertions: the value is an element of the vector.
          if (!expected.empty()) {
            const auto from = pick(expected.size());
            const auto at = pick(expected.size() + 1);
            actual.insert(actual.begin() + at, actual[from]);
            expected.insert(expected.begin() + at, expected[from]);
            actual.push_back(actual[from]);
            expected.push_back(expected[from]);
          }
          break;
        }
        case 16:
          other = actual;
          other_expected = expected;
          break;
        case 17:
          actual.swap(other);
          std::swap(expected, other_expected);
          break;
        case 18:
          actual = std::move(other);
          expected = std::move(other_expected);
          other_expected.clear();
          ASSERT_TRUE(other.empty());
          break;
        case 19: {
          mallard::inline_vector<Element, N> moved(std::move(actual));
          ASSERT_TRUE(actual.empty());
          actual = moved;
          break;
        }
        case 20:
          if (!expected.empty()) {
            const auto at = pick(expected.size());
            actual[at] = Element(value);
            expected[at] = value;
            ASSERT_EQ(actual.at(at).value(), value);
          }
          break;
        case 21: {
          const int threshold = value;
          const auto removed = erase_if(actual, [&](const Element& e) { return e.value() < threshold / 4; });
          const auto expected_removed = std::erase_if(expected, [&](int e) { return e < threshold / 4; });
          ASSERT_EQ(removed, expected_removed);
          break;
        }
      }
      expect_same(actual, expected, step);
      expect_same(other, other_expected, step);
      ASSERT_EQ(counters::live.load(), static_cast<long>(expected.size() + other_expected.size()));
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineVector, RandomOperationsMatchStdVector) {
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    run_random_sequence<tracked, 4>(seed, 60000);
    run_random_sequence<tracked_throwing_move, 3>(seed, 3000);
    run_random_sequence<tracked, 1>(seed, 3000);
    run_random_sequence<tracked, 0>(seed, 2000);
  }
}

// --- copy / move / swap in every combination of inline and heap states ---

enum class shape { empty, inline_, heap };

constexpr std::size_t inline_slots = 4;
using tracked_vector = mallard::inline_vector<tracked, inline_slots>;

std::vector<int> contents_for(shape s, int base) {
  switch (s) {
    case shape::empty:
      return {};
    case shape::inline_:
      return {base, base + 1, base + 2};
    case shape::heap:
      return {base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6};
  }
  return {};
}

tracked_vector make_vector(shape s, int base) {
  tracked_vector vector;
  for (int value : contents_for(s, base)) vector.push_back(value);
  return vector;
}

void expect_shape(const tracked_vector& vector, const std::vector<int>& expected) {
  EXPECT_EQ(values_of(vector), expected);
  if (expected.size() <= inline_slots && vector.capacity() == inline_slots) {
    EXPECT_TRUE(vector.is_inline());
  }
}

// Both objects stay usable and independent after the operation.
void expect_independent(tracked_vector& a, tracked_vector& b) {
  auto a_values = values_of(a);
  auto b_values = values_of(b);
  for (int i = 0; i < 10; ++i) a.push_back(900 + i);
  b.push_back(800);
  a_values.insert(a_values.end(), {900, 901, 902, 903, 904, 905, 906, 907, 908, 909});
  b_values.push_back(800);
  EXPECT_EQ(values_of(a), a_values);
  EXPECT_EQ(values_of(b), b_values);
}

class InlineVectorCombinations : public ::testing::TestWithParam<std::tuple<shape, shape>> {
 protected:
  void SetUp() override { counters::reset(); }
  void TearDown() override { mallard_test::expect_clean_counters(); }
};

TEST_P(InlineVectorCombinations, CopyConstruct) {
  auto [from, unused] = GetParam();
  (void)unused;
  tracked_vector source = make_vector(from, 10);
  tracked_vector copy(source);
  expect_shape(copy, contents_for(from, 10));
  expect_shape(source, contents_for(from, 10));
  expect_independent(source, copy);
}

TEST_P(InlineVectorCombinations, MoveConstruct) {
  auto [from, unused] = GetParam();
  (void)unused;
  tracked_vector source = make_vector(from, 10);
  tracked_vector moved(std::move(source));
  expect_shape(moved, contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  EXPECT_TRUE(source.is_inline());
  expect_independent(source, moved);
}

TEST_P(InlineVectorCombinations, CopyAssign) {
  auto [from, to] = GetParam();
  tracked_vector source = make_vector(from, 10);
  tracked_vector target = make_vector(to, 50);
  target = source;
  expect_shape(target, contents_for(from, 10));
  expect_shape(source, contents_for(from, 10));
  expect_independent(source, target);
}

TEST_P(InlineVectorCombinations, MoveAssign) {
  auto [from, to] = GetParam();
  tracked_vector source = make_vector(from, 10);
  tracked_vector target = make_vector(to, 50);
  target = std::move(source);
  expect_shape(target, contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  expect_independent(source, target);
}

TEST_P(InlineVectorCombinations, Swap) {
  auto [left, right] = GetParam();
  tracked_vector a = make_vector(left, 10);
  tracked_vector b = make_vector(right, 50);
  a.swap(b);
  expect_shape(a, contents_for(right, 50));
  expect_shape(b, contents_for(left, 10));
  swap(a, b);
  expect_shape(a, contents_for(left, 10));
  expect_shape(b, contents_for(right, 50));
  std::swap(a, b);
  expect_shape(a, contents_for(right, 50));
  expect_shape(b, contents_for(left, 10));
  expect_independent(a, b);
}

TEST_P(InlineVectorCombinations, SelfAssignment) {
  auto [from, unused] = GetParam();
  (void)unused;
  tracked_vector v = make_vector(from, 10);
  tracked_vector& alias = v;
  v = alias;
  expect_shape(v, contents_for(from, 10));
  v = std::move(alias);
  expect_shape(v, contents_for(from, 10));
  v.swap(alias);
  expect_shape(v, contents_for(from, 10));
}

INSTANTIATE_TEST_SUITE_P(AllShapes, InlineVectorCombinations,
                         ::testing::Combine(::testing::Values(shape::empty, shape::inline_, shape::heap),
                                            ::testing::Values(shape::empty, shape::inline_, shape::heap)));

// A heap-backed vector hands its buffer over: no element is touched.
TEST(InlineVector, MoveOfHeapVectorStealsBuffer) {
  counters::reset();
  {
    tracked_vector source = make_vector(shape::heap, 1);
    const tracked* buffer = source.data();
    const long constructions = counters::constructions;
    tracked_vector moved(std::move(source));
    EXPECT_EQ(moved.data(), buffer);
    EXPECT_EQ(counters::constructions.load(), constructions);
  }
  mallard_test::expect_clean_counters();
}

// --- exception guarantees ---

template <class Element>
void check_strong_push_back_on_growth() {
  counters::reset();
  {
    mallard::inline_vector<Element, 2> vector;
    for (int i = 0; i < 2; ++i) vector.push_back(i);
    for (long fail_at = 1; fail_at <= 4; ++fail_at) {
      const auto before = values_of(vector);
      const auto capacity = vector.capacity();
      const Element value(77);
      counters::throw_countdown = fail_at;
      try {
        vector.push_back(value);
        counters::throw_countdown = 0;
        vector.pop_back();
        continue;
      } catch (const mallard_test::injected_failure&) {
      }
      counters::throw_countdown = 0;
      EXPECT_EQ(values_of(vector), before) << "fail_at " << fail_at;
      EXPECT_EQ(vector.capacity(), capacity);
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineVector, PushBackIsStrongWhenGrowing) {
  check_strong_push_back_on_growth<tracked>();
  // Throwing move, copyable element: growth copies, so it stays strong.
  check_strong_push_back_on_growth<tracked_throwing_move>();
}

TEST(InlineVector, ReserveResizeAndShrinkAreStrong) {
  counters::reset();
  {
    mallard::inline_vector<tracked_throwing_move, 3> vector{1, 2, 3, 4, 5};
    const auto before = values_of(vector);
    counters::throw_countdown = 3;
    EXPECT_THROW(vector.reserve(100), mallard_test::injected_failure);
    EXPECT_EQ(values_of(vector), before);
    counters::throw_countdown = 7;
    EXPECT_THROW(vector.resize(40), mallard_test::injected_failure);
    EXPECT_EQ(values_of(vector), before);
    vector.resize(2);
    counters::throw_countdown = 2;
    EXPECT_THROW(vector.shrink_to_fit(), mallard_test::injected_failure);
    EXPECT_EQ(values_of(vector), (std::vector<int>{1, 2}));
    counters::throw_countdown = 0;
    vector.shrink_to_fit();
    EXPECT_TRUE(vector.is_inline());
  }
  mallard_test::expect_clean_counters();
}

// Insertions in the middle are basic: the vector stays valid, nothing leaks.
TEST(InlineVector, MiddleInsertionIsBasic) {
  counters::reset();
  {
    std::mt19937 random(7);
    mallard::inline_vector<tracked_throwing_move, 4> vector{1, 2, 3};
    for (int round = 0; round < 300; ++round) {
      counters::throw_countdown = static_cast<long>(random() % 6) + 1;
      try {
        const auto at = random() % (vector.size() + 1);
        switch (round % 3) {
          case 0:
            vector.insert(vector.begin() + static_cast<std::ptrdiff_t>(at), 3, tracked_throwing_move(5));
            break;
          case 1:
            vector.emplace(vector.begin() + static_cast<std::ptrdiff_t>(at), 6);
            break;
          case 2: {
            const std::vector<int> source{7, 8, 9, 10};
            vector.insert(vector.begin() + static_cast<std::ptrdiff_t>(at), source.begin(), source.end());
            break;
          }
        }
      } catch (const mallard_test::injected_failure&) {
      }
      counters::throw_countdown = 0;
      ASSERT_EQ(counters::live.load(), static_cast<long>(vector.size()));
      if (vector.size() > 40) vector.resize(3);
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineVector, ThrowingCopyConstructionLeaksNothing) {
  counters::reset();
  {
    using small_vector = mallard::inline_vector<tracked, 2>;
    const small_vector source{1, 2, 3, 4, 5, 6};
    for (long fail_at = 1; fail_at <= 6; ++fail_at) {
      counters::throw_countdown = fail_at;
      EXPECT_THROW(small_vector copy(source), mallard_test::injected_failure);
      counters::throw_countdown = 0;
      EXPECT_EQ(counters::live.load(), 6);
    }
  }
  mallard_test::expect_clean_counters();
}

// --- the rest of the std::vector interface ---

TEST(InlineVector, InterfaceMatchesStdVector) {
  mallard::inline_vector<std::string, 2> v{"a", "b", "c"};
  EXPECT_EQ(v.size(), 3u);
  EXPECT_THROW(static_cast<void>(v.at(3)), std::out_of_range);
  EXPECT_EQ(std::string(v.rbegin()->c_str()), "c");
  EXPECT_EQ(v.crend() - v.crbegin(), 3);
  v.assign({"x", "y"});
  EXPECT_EQ(v, (mallard::inline_vector<std::string, 2>{"x", "y"}));
  EXPECT_LT(v, (mallard::inline_vector<std::string, 2>{"x", "z"}));
  EXPECT_TRUE((v <=> mallard::inline_vector<std::string, 2>{"x"}) > 0);
  v.insert(v.begin() + 1, {"p", "q"});
  EXPECT_EQ(v, (mallard::inline_vector<std::string, 2>{"x", "p", "q", "y"}));
  EXPECT_EQ(erase(v, std::string("p")), 1u);
  EXPECT_GE(v.max_size(), 1000u);
  EXPECT_EQ(v.get_allocator(), std::allocator<std::string>());

  // Input iterators (single pass) for construction and insertion.
  std::istringstream numbers("1 2 3 4 5");
  mallard::inline_vector<int, 2> from_stream{std::istream_iterator<int>(numbers), std::istream_iterator<int>()};
  EXPECT_EQ(from_stream, (mallard::inline_vector<int, 2>{1, 2, 3, 4, 5}));
  std::istringstream more("8 9");
  from_stream.insert(from_stream.begin() + 1, std::istream_iterator<int>(more), std::istream_iterator<int>());
  EXPECT_EQ(from_stream, (mallard::inline_vector<int, 2>{1, 8, 9, 2, 3, 4, 5}));

  // Move-only elements.
  mallard::inline_vector<mallard_test::move_only, 2> owners;
  for (int i = 0; i < 5; ++i) owners.emplace_back(i);
  owners.erase(owners.begin());
  owners.insert(owners.begin(), mallard_test::move_only(9));
  mallard::inline_vector<mallard_test::move_only, 2> taken(std::move(owners));
  EXPECT_EQ(taken.size(), 5u);
  EXPECT_EQ(taken.front().value(), 9);

  // Over-aligned elements stay aligned inline and on the heap.
  struct alignas(64) wide {
    int value = 0;
  };
  mallard::inline_vector<wide, 3> aligned(10);
  for (auto& element : aligned) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&element) % 64, 0u);
  aligned.resize(2);
  aligned.shrink_to_fit();
  for (auto& element : aligned) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&element) % 64, 0u);
}

}  // namespace
