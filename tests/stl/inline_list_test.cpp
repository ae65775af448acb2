// inline_list against std::list: random operation sequences (splice and merge
// across lists included), every copy/move/swap combination, exceptions.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <list>
#include <optional>
#include <random>
#include <vector>

#include "instrumented.hpp"

namespace {

using mallard_test::counters;
using mallard_test::tracked;
using mallard_test::tracked_throwing_move;

template <class List>
std::vector<int> values_of(const List& list) {
  std::vector<int> values;
  for (const auto& element : list) values.push_back(element.value());
  return values;
}

std::vector<int> values_of(const std::list<int>& list) { return {list.begin(), list.end()}; }

template <class It>
It advanced(It it, std::size_t steps) {
  std::advance(it, static_cast<std::ptrdiff_t>(steps));
  return it;
}

template <class Element, std::size_t N, std::size_t M>
void run_random_sequence(std::uint32_t seed, std::size_t steps) {
  counters::reset();
  {
    std::mt19937 random(seed);
    auto pick = [&](std::size_t bound) { return bound == 0 ? std::size_t{0} : random() % bound; };
    mallard::inline_list<Element, N> actual;
    mallard::inline_list<Element, M> other;  // a different inline capacity: splice and merge across types
    std::list<int> expected;
    std::list<int> other_expected;
    for (std::size_t step = 0; step < steps; ++step) {
      const int value = static_cast<int>(random() % 100);
      switch (random() % 20) {
        case 0:
          actual.push_back(value);
          expected.push_back(value);
          break;
        case 1:
          actual.emplace_front(value);
          expected.emplace_front(value);
          break;
        case 2: {
          const auto at = pick(expected.size() + 1);
          const auto count = pick(4);
          actual.insert(advanced(actual.begin(), at), count, Element(value));
          expected.insert(advanced(expected.begin(), at), count, value);
          break;
        }
        case 3:
          if (!expected.empty()) {
            const auto at = pick(expected.size());
            actual.erase(advanced(actual.begin(), at));
            expected.erase(advanced(expected.begin(), at));
          }
          break;
        case 4:
          if (!expected.empty()) {
            actual.pop_front();
            expected.pop_front();
          }
          break;
        case 5: {
          // Whole-list splice from the other list (different object, different N).
          const auto at = pick(expected.size() + 1);
          actual.splice(advanced(actual.begin(), at), other);
          expected.splice(advanced(expected.begin(), at), other_expected);
          break;
        }
        case 6:
          if (!other_expected.empty()) {
            const auto at = pick(expected.size() + 1);
            const auto from = pick(other_expected.size());
            actual.splice(advanced(actual.begin(), at), other, advanced(other.begin(), from));
            expected.splice(advanced(expected.begin(), at), other_expected, advanced(other_expected.begin(), from));
          }
          break;
        case 7: {
          const auto first = pick(expected.size() + 1);
          const auto last = first + pick(expected.size() - first + 1);
          const auto at = pick(other_expected.size() + 1);
          other.splice(advanced(other.begin(), at), actual, advanced(actual.begin(), first),
                       advanced(actual.begin(), last));
          other_expected.splice(advanced(other_expected.begin(), at), expected, advanced(expected.begin(), first),
                                advanced(expected.begin(), last));
          break;
        }
        case 8:
          if (expected.size() > 1) {
            // Splice within one list relinks, as std does.
            const auto from = pick(expected.size());
            actual.splice(actual.begin(), actual, advanced(actual.begin(), from));
            expected.splice(expected.begin(), expected, advanced(expected.begin(), from));
          }
          break;
        case 9:
          actual.sort();
          expected.sort();
          other.sort();
          other_expected.sort();
          actual.merge(other);
          expected.merge(other_expected);
          break;
        case 10:
          actual.sort(std::greater<>());
          expected.sort(std::greater<>());
          break;
        case 11:
          ASSERT_EQ(actual.unique(), expected.unique());
          break;
        case 12:
          ASSERT_EQ(actual.remove(Element(value)), expected.remove(value));
          break;
        case 13:
          actual.reverse();
          expected.reverse();
          break;
        case 14: {
          const auto count = pick(3 * N + 3);
          actual.resize(count);
          expected.resize(count, 0);
          break;
        }
        case 15:
          actual.swap(actual);
          if (random() % 2 == 0) {
            mallard::inline_list<Element, N> copy(actual);
            actual = std::move(copy);
          } else {
            actual.assign(pick(2 * N + 2), Element(value));
            expected.assign(actual.size(), value);
          }
          break;
        case 16: {
          mallard::inline_list<Element, N> moved(std::move(actual));
          ASSERT_TRUE(actual.empty());
          actual.swap(moved);
          break;
        }
        case 17:
          if (random() % 4 == 0) {
            actual.clear();
            expected.clear();
          }
          break;
        case 18:
          ASSERT_EQ(std::erase_if(actual, [&](const Element& e) { return e.value() == value; }),
                    std::erase_if(expected, [&](int e) { return e == value; }));
          break;
        case 19:
          actual.remove_if([&](const Element& e) { return e.value() > 90 + value % 10; });
          expected.remove_if([&](int e) { return e > 90 + value % 10; });
          break;
      }
      ASSERT_EQ(values_of(actual), values_of(expected)) << "step " << step;
      ASSERT_EQ(values_of(other), values_of(other_expected)) << "step " << step;
      ASSERT_EQ(actual.size(), expected.size());
      ASSERT_LE(actual.inline_nodes(), N);
      ASSERT_EQ(counters::live.load(), static_cast<long>(expected.size() + other_expected.size()));
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineList, RandomOperationsMatchStdList) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    run_random_sequence<tracked, 4, 2>(seed, 40000);
    run_random_sequence<tracked_throwing_move, 1, 3>(seed, 3000);
  }
}

enum class shape { empty, inline_, heap };
constexpr std::size_t inline_slots = 4;
using tracked_list = mallard::inline_list<tracked, inline_slots>;

std::vector<int> contents_for(shape s, int base) {
  const int count = s == shape::empty ? 0 : s == shape::inline_ ? 3 : 9;
  std::vector<int> contents;
  for (int i = 0; i < count; ++i) contents.push_back(base + i);
  return contents;
}

tracked_list make_list(shape s, int base) {
  tracked_list list;
  for (int value : contents_for(s, base)) list.push_back(value);
  return list;
}

void expect_independent(tracked_list& a, tracked_list& b) {
  auto a_values = values_of(a);
  auto b_values = values_of(b);
  for (int i = 0; i < 10; ++i) a.push_back(500 + i);
  b.push_front(400);
  for (int i = 0; i < 10; ++i) a_values.push_back(500 + i);
  b_values.insert(b_values.begin(), 400);
  EXPECT_EQ(values_of(a), a_values);
  EXPECT_EQ(values_of(b), b_values);
}

class InlineListCombinations : public ::testing::TestWithParam<std::tuple<shape, shape>> {
 protected:
  void SetUp() override { counters::reset(); }
  void TearDown() override { mallard_test::expect_clean_counters(); }
};

TEST_P(InlineListCombinations, CopyAndMoveConstruct) {
  const shape from = std::get<0>(GetParam());
  tracked_list source = make_list(from, 10);
  tracked_list copy(source);
  EXPECT_EQ(values_of(copy), contents_for(from, 10));
  tracked_list moved(std::move(source));
  EXPECT_EQ(values_of(moved), contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  expect_independent(source, moved);
  expect_independent(copy, moved);
}

TEST_P(InlineListCombinations, CopyAndMoveAssign) {
  auto [from, to] = GetParam();
  tracked_list source = make_list(from, 10);
  tracked_list target = make_list(to, 50);
  target = source;
  EXPECT_EQ(values_of(target), contents_for(from, 10));
  tracked_list second = make_list(to, 70);
  second = std::move(source);
  EXPECT_EQ(values_of(second), contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  expect_independent(source, second);
  expect_independent(target, second);
}

TEST_P(InlineListCombinations, SwapAndSurviveSource) {
  auto [left, right] = GetParam();
  std::optional<tracked_list> a(make_list(left, 10));
  tracked_list b = make_list(right, 50);
  a->swap(b);
  EXPECT_EQ(values_of(*a), contents_for(right, 50));
  EXPECT_EQ(values_of(b), contents_for(left, 10));
  swap(*a, b);
  std::swap(*a, b);
  EXPECT_EQ(values_of(b), contents_for(left, 10));
  a.reset();
  EXPECT_EQ(values_of(b), contents_for(left, 10));
  b.push_back(1);
}

INSTANTIATE_TEST_SUITE_P(AllShapes, InlineListCombinations,
                         ::testing::Combine(::testing::Values(shape::empty, shape::inline_, shape::heap),
                                            ::testing::Values(shape::empty, shape::inline_, shape::heap)));

// Splice and merge between lists are strong when the element's move may
// throw (elements are copied into a side list first).
TEST(InlineList, SpliceAndMergeAreStrong) {
  counters::reset();
  {
    mallard::inline_list<tracked_throwing_move, 2> target{1, 3, 5};
    mallard::inline_list<tracked_throwing_move, 2> source{2, 4, 6, 8};
    counters::throw_countdown = 3;
    EXPECT_THROW(target.splice(target.end(), source), mallard_test::injected_failure);
    EXPECT_EQ(values_of(target), (std::vector<int>{1, 3, 5}));
    EXPECT_EQ(values_of(source), (std::vector<int>{2, 4, 6, 8}));
    counters::throw_countdown = 2;
    EXPECT_THROW(target.merge(source), mallard_test::injected_failure);
    EXPECT_EQ(values_of(target), (std::vector<int>{1, 3, 5}));
    EXPECT_EQ(values_of(source), (std::vector<int>{2, 4, 6, 8}));
    counters::throw_countdown = 0;
    target.merge(source);
    EXPECT_EQ(values_of(target), (std::vector<int>{1, 2, 3, 4, 5, 6, 8}));
    EXPECT_TRUE(source.empty());
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineList, InterfaceMatchesStdList) {
  mallard::inline_list<std::string, 2> words(3, "x");
  EXPECT_EQ(words.size(), 3u);
  words.assign({"c", "a", "b", "a"});
  words.sort();
  words.unique();
  EXPECT_EQ(words, (mallard::inline_list<std::string, 2>{"a", "b", "c"}));
  EXPECT_LT(words, (mallard::inline_list<std::string, 2>{"a", "c"}));
  EXPECT_EQ(std::erase(words, "b"), 1u);
  words.emplace(std::next(words.begin()), "m");
  EXPECT_EQ(words.front(), "a");
  EXPECT_EQ(*std::next(words.begin()), "m");
  EXPECT_EQ(words.back(), "c");
  mallard::inline_list<mallard_test::move_only, 1> owners;
  owners.emplace_back(1);
  owners.emplace_back(2);
  mallard::inline_list<mallard_test::move_only, 1> taken(std::move(owners));
  EXPECT_EQ(taken.back().value(), 2);
}

}  // namespace
