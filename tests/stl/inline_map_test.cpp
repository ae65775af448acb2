// inline_map and inline_set against std::map and std::set: random operation
// sequences, every copy/move/swap combination, node handles, merge,
// exception guarantees.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "instrumented.hpp"

namespace {

using mallard_test::counters;
using mallard_test::tracked;
using mallard_test::tracked_throwing_move;

template <class Map>
std::vector<std::pair<int, int>> pairs_of(const Map& map) {
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [key, value] : map) pairs.emplace_back(key.value(), value.value());
  return pairs;
}

std::vector<std::pair<int, int>> pairs_of(const std::map<int, int>& map) { return {map.begin(), map.end()}; }

template <class Map>
void expect_same(const Map& actual, const std::map<int, int>& expected, std::size_t step) {
  ASSERT_EQ(actual.size(), expected.size()) << "step " << step;
  ASSERT_EQ(pairs_of(actual), pairs_of(expected)) << "step " << step;
  ASSERT_LE(actual.inline_nodes(), Map::inline_capacity);
  ASSERT_LE(actual.inline_nodes(), actual.size());
}

template <class Element, std::size_t N>
void run_random_map_sequence(std::uint32_t seed, std::size_t steps) {
  using map_type = mallard::inline_map<Element, Element, N>;
  counters::reset();
  {
    std::mt19937 random(seed);
    map_type actual;
    map_type other;
    std::map<int, int> expected;
    std::map<int, int> other_expected;
    const int key_range = static_cast<int>(3 * N + 4);
    for (std::size_t step = 0; step < steps; ++step) {
      const int key = static_cast<int>(random() % static_cast<unsigned>(key_range));
      const int value = static_cast<int>(random() % 1000);
      switch (random() % 20) {
        case 0: {
          const auto [it, inserted] = actual.insert({Element(key), Element(value)});
          const auto [expected_it, expected_inserted] = expected.insert({key, value});
          ASSERT_EQ(inserted, expected_inserted);
          ASSERT_EQ(it->second.value(), expected_it->second);
          break;
        }
        case 1:
          actual.emplace(key, value);
          expected.emplace(key, value);
          break;
        case 2:
          actual.try_emplace(key, value);
          expected.try_emplace(key, value);
          break;
        case 3:
          actual.insert_or_assign(key, value);
          expected.insert_or_assign(key, value);
          break;
        case 4:
          actual[key] = Element(value);
          expected[key] = value;
          break;
        case 5:
        case 6:
          ASSERT_EQ(actual.erase(key), expected.erase(key));
          break;
        case 7:
          if (!expected.empty()) {
            auto it = actual.lower_bound(key);
            auto expected_it = expected.lower_bound(key);
            if (it != actual.end()) {
              actual.erase(it);
              expected.erase(expected_it);
            }
          }
          break;
        case 8: {
          auto first = actual.lower_bound(key);
          auto last = actual.upper_bound(key + 3);
          actual.erase(first, last);
          expected.erase(expected.lower_bound(key), expected.upper_bound(key + 3));
          break;
        }
        case 9:
          if (random() % 8 == 0) {
            actual.clear();
            expected.clear();
          }
          break;
        case 10: {
          ASSERT_EQ(actual.count(key), expected.count(key));
          ASSERT_EQ(actual.contains(key), expected.contains(key));
          auto [first, last] = actual.equal_range(key);
          ASSERT_EQ(std::distance(first, last), static_cast<std::ptrdiff_t>(expected.count(key)));
          auto found = actual.find(key);
          if (found != actual.end()) {
            ASSERT_EQ(found->second.value(), expected.at(key));
          }
          break;
        }
        case 11: {
          // Node handle from one container into the other.
          auto node = actual.extract(key);
          if (node) {
            auto expected_node = expected.extract(key);
            auto result = other.insert(std::move(node));
            auto expected_result = other_expected.insert(std::move(expected_node));
            ASSERT_EQ(result.inserted, expected_result.inserted);
            ASSERT_EQ(result.node.empty(), expected_result.node.empty());
          }
          break;
        }
        case 12:
          actual.merge(other);
          expected.merge(other_expected);
          break;
        case 13:
          other = actual;
          other_expected = expected;
          break;
        case 14:
          actual.swap(other);
          std::swap(expected, other_expected);
          break;
        case 15:
          other = std::move(actual);
          other_expected = std::move(expected);
          expected.clear();
          break;
        case 16: {
          map_type moved(std::move(other));
          ASSERT_TRUE(other.empty());
          other = moved;
          break;
        }
        case 17: {
          const auto removed = std::erase_if(actual, [&](const auto& item) { return item.second.value() < value / 8; });
          const auto expected_removed =
              std::erase_if(expected, [&](const auto& item) { return item.second < value / 8; });
          ASSERT_EQ(removed, expected_removed);
          break;
        }
        case 18: {
          // Extract and reinsert into the same map, with a hint.
          auto node = actual.extract(key);
          if (node) {
            node.mapped() = Element(value);
            actual.insert(actual.end(), std::move(node));
            expected[key] = value;
          }
          break;
        }
        case 19:
          if (random() % 4 == 0) {
            map_type fresh{{Element(key), Element(value)}, {Element(key + 1), Element(value)}};
            actual = fresh;
            expected = {{key, value}, {key + 1, value}};
          }
          break;
      }
      expect_same(actual, expected, step);
      expect_same(other, other_expected, step);
      ASSERT_EQ(counters::live.load(), static_cast<long>(2 * (expected.size() + other_expected.size())));
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineMap, RandomOperationsMatchStdMap) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    run_random_map_sequence<tracked, 4>(seed, 50000);
    run_random_map_sequence<tracked_throwing_move, 2>(seed, 3000);
    run_random_map_sequence<tracked, 1>(seed, 2000);
    run_random_map_sequence<tracked, 0>(seed, 2000);
  }
}

template <std::size_t N>
void run_random_set_sequence(std::uint32_t seed, std::size_t steps) {
  using set_type = mallard::inline_set<tracked, N>;
  counters::reset();
  {
    std::mt19937 random(seed);
    set_type actual;
    set_type other;
    std::set<int> expected;
    std::set<int> other_expected;
    auto check = [&](std::size_t step) {
      std::vector<int> actual_values;
      for (const auto& element : actual) actual_values.push_back(element.value());
      ASSERT_EQ(actual_values, std::vector<int>(expected.begin(), expected.end())) << "step " << step;
      std::vector<int> other_values;
      for (const auto& element : other) other_values.push_back(element.value());
      ASSERT_EQ(other_values, std::vector<int>(other_expected.begin(), other_expected.end())) << "step " << step;
      ASSERT_EQ(counters::live.load(), static_cast<long>(expected.size() + other_expected.size()));
    };
    for (std::size_t step = 0; step < steps; ++step) {
      const int key = static_cast<int>(random() % (3 * N + 4));
      switch (random() % 10) {
        case 0:
        case 1:
          ASSERT_EQ(actual.insert(key).second, expected.insert(key).second);
          break;
        case 2:
          actual.emplace_hint(actual.end(), key);
          expected.emplace_hint(expected.end(), key);
          break;
        case 3:
        case 4:
          ASSERT_EQ(actual.erase(key), expected.erase(key));
          break;
        case 5: {
          auto node = actual.extract(key);
          if (node) {
            auto result = other.insert(std::move(node));
            auto expected_result = other_expected.insert(expected.extract(key));
            ASSERT_EQ(result.inserted, expected_result.inserted);
          }
          break;
        }
        case 6:
          other.merge(actual);
          other_expected.merge(expected);
          break;
        case 7:
          actual.swap(other);
          std::swap(expected, other_expected);
          break;
        case 8:
          if (random() % 3 == 0) {
            actual = std::move(other);
            expected = std::move(other_expected);
            other_expected.clear();
          }
          break;
        case 9:
          other = actual;
          other_expected = expected;
          break;
      }
      check(step);
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineSet, RandomOperationsMatchStdSet) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    run_random_set_sequence<4>(seed, 40000);
    run_random_set_sequence<1>(seed, 2000);
  }
}

// --- copy / move / swap in every combination of inline and heap states ---

enum class shape { empty, inline_, heap };
constexpr std::size_t inline_slots = 4;
using tracked_map = mallard::inline_map<tracked, tracked, inline_slots>;

std::vector<std::pair<int, int>> contents_for(shape s, int base) {
  const int count = s == shape::empty ? 0 : s == shape::inline_ ? 3 : 9;
  std::vector<std::pair<int, int>> contents;
  for (int i = 0; i < count; ++i) contents.emplace_back(base + i, 100 * base + i);
  return contents;
}

tracked_map make_map(shape s, int base) {
  tracked_map map;
  for (auto [key, value] : contents_for(s, base)) map.emplace(key, value);
  return map;
}

void expect_independent(tracked_map& a, tracked_map& b) {
  auto a_pairs = pairs_of(a);
  auto b_pairs = pairs_of(b);
  for (int i = 0; i < 12; ++i) a.emplace(1000 + i, i);
  b.emplace(2000, 1);
  for (int i = 0; i < 12; ++i) a_pairs.emplace_back(1000 + i, i);
  b_pairs.emplace_back(2000, 1);
  EXPECT_EQ(pairs_of(a), a_pairs);
  EXPECT_EQ(pairs_of(b), b_pairs);
  a.clear();
  b.clear();
  EXPECT_EQ(a.inline_nodes(), 0u);
  EXPECT_EQ(b.inline_nodes(), 0u);
}

class InlineMapCombinations : public ::testing::TestWithParam<std::tuple<shape, shape>> {
 protected:
  void SetUp() override { counters::reset(); }
  void TearDown() override { mallard_test::expect_clean_counters(); }
};

TEST_P(InlineMapCombinations, CopyConstruct) {
  const shape from = std::get<0>(GetParam());
  tracked_map source = make_map(from, 10);
  tracked_map copy(source);
  EXPECT_EQ(pairs_of(copy), contents_for(from, 10));
  EXPECT_EQ(pairs_of(source), contents_for(from, 10));
  EXPECT_EQ(copy.inline_nodes(), std::min(copy.size(), inline_slots));
  expect_independent(source, copy);
}

TEST_P(InlineMapCombinations, MoveConstruct) {
  const shape from = std::get<0>(GetParam());
  tracked_map source = make_map(from, 10);
  tracked_map moved(std::move(source));
  EXPECT_EQ(pairs_of(moved), contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  EXPECT_EQ(source.inline_nodes(), 0u);
  expect_independent(source, moved);
}

TEST_P(InlineMapCombinations, CopyAssign) {
  auto [from, to] = GetParam();
  tracked_map source = make_map(from, 10);
  tracked_map target = make_map(to, 50);
  target = source;
  EXPECT_EQ(pairs_of(target), contents_for(from, 10));
  EXPECT_EQ(pairs_of(source), contents_for(from, 10));
  expect_independent(source, target);
}

TEST_P(InlineMapCombinations, MoveAssign) {
  auto [from, to] = GetParam();
  tracked_map source = make_map(from, 10);
  tracked_map target = make_map(to, 50);
  target = std::move(source);
  EXPECT_EQ(pairs_of(target), contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  expect_independent(source, target);
}

TEST_P(InlineMapCombinations, Swap) {
  auto [left, right] = GetParam();
  tracked_map a = make_map(left, 10);
  tracked_map b = make_map(right, 50);
  a.swap(b);
  EXPECT_EQ(pairs_of(a), contents_for(right, 50));
  EXPECT_EQ(pairs_of(b), contents_for(left, 10));
  swap(a, b);
  EXPECT_EQ(pairs_of(a), contents_for(left, 10));
  std::swap(a, b);
  EXPECT_EQ(pairs_of(a), contents_for(right, 50));
  EXPECT_EQ(pairs_of(b), contents_for(left, 10));
  expect_independent(a, b);
}

// A moved-from container dies before the one it was moved into, and the
// other way round: neither may refer to the other's storage.
TEST_P(InlineMapCombinations, SourceDiesFirst) {
  const shape from = std::get<0>(GetParam());
  std::optional<tracked_map> source(make_map(from, 10));
  tracked_map target(std::move(*source));
  source.reset();
  EXPECT_EQ(pairs_of(target), contents_for(from, 10));
  std::optional<tracked_map> copy(target);
  tracked_map assigned;
  assigned = *copy;
  copy.reset();
  EXPECT_EQ(pairs_of(assigned), contents_for(from, 10));
}

INSTANTIATE_TEST_SUITE_P(AllShapes, InlineMapCombinations,
                         ::testing::Combine(::testing::Values(shape::empty, shape::inline_, shape::heap),
                                            ::testing::Values(shape::empty, shape::inline_, shape::heap)));

// --- node handles and merge ---

TEST(InlineMap, NodeHandleOutlivesItsContainer) {
  counters::reset();
  {
    tracked_map::node_type node;
    {
      tracked_map map = make_map(shape::inline_, 1);
      node = map.extract(2);
      ASSERT_FALSE(node.empty());
      EXPECT_EQ(map.inline_nodes(), 2u);  // the inline slot is free again
    }
    EXPECT_EQ(node.key().value(), 2);
    EXPECT_EQ(node.mapped().value(), 101);
    tracked_map other;
    auto result = other.insert(std::move(node));
    EXPECT_TRUE(result.inserted);
    EXPECT_EQ(other.at(2).value(), 101);
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineMap, MergeAcrossInlineCapacitiesAndStdMaps) {
  mallard::inline_map<int, std::string, 2> small{{1, "one"}, {2, "two"}, {3, "three"}};
  mallard::inline_map<int, std::string, 8> large{{2, "TWO"}, {4, "four"}};
  large.merge(small);
  EXPECT_EQ(large.size(), 4u);
  EXPECT_EQ(large.at(2), "TWO");
  EXPECT_EQ(small.size(), 1u);  // the duplicate key stays behind, as in std::map::merge
  std::map<int, std::string> plain{{5, "five"}, {1, "uno"}};
  large.merge(plain);
  EXPECT_EQ(large.at(5), "five");
  EXPECT_EQ(plain.size(), 1u);
  std::multimap<int, std::string> many{{7, "a"}, {7, "b"}};
  large.merge(many);
  EXPECT_EQ(large.count(7), 1u);
  EXPECT_EQ(many.size(), 1u);
  large.merge(large);
  EXPECT_EQ(large.size(), 6u);
}

// The container is its own source: nothing can move, and no key is compared.
TEST(InlineMap, MergeIntoItselfComparesNoKeys) {
  int comparisons = 0;
  auto counting_less = [&comparisons](int a, int b) {
    ++comparisons;
    return a < b;
  };
  mallard::inline_map<int, int, 2, decltype(counting_less)> map(counting_less);
  for (int key = 0; key < 6; ++key) map.emplace(key, key * 10);
  comparisons = 0;
  map.merge(map);
  EXPECT_EQ(comparisons, 0);
  EXPECT_EQ(map.size(), 6u);
  EXPECT_EQ(map.at(5), 50);
}

TEST(InlineMap, InterfaceMatchesStdMap) {
  mallard::inline_map<std::string, int, 3, std::less<>> map{{"b", 2}, {"a", 1}};
  EXPECT_EQ(map.find(std::string_view("a"))->second, 1);  // heterogeneous lookup
  EXPECT_THROW(static_cast<void>(map.at("zz")), std::out_of_range);
  map.emplace_hint(map.begin(), "0", 0);
  EXPECT_EQ(map.begin()->first, "0");
  mallard::inline_map<std::string, int, 3, std::less<>> same{{"0", 0}, {"a", 1}, {"b", 2}};
  EXPECT_EQ(map, same);
  same["c"] = 3;
  EXPECT_NE(map, same);
  EXPECT_LT(map, same);
  EXPECT_EQ(map.key_comp()("a", "b"), true);
  EXPECT_TRUE(map.value_comp()(*map.begin(), *std::next(map.begin())));
  const std::map<std::string, int, std::less<>, decltype(map)::allocator_type>& base = map;
  EXPECT_EQ(base.size(), 3u);
  EXPECT_GE(map.max_size(), 1000u);

  mallard::inline_set<std::string, 2> words{"pear", "fig", "apple"};
  EXPECT_EQ(*words.begin(), "apple");
  EXPECT_EQ(std::erase_if(words, [](const std::string& w) { return w.size() == 3; }), 1u);
  EXPECT_EQ(words, (mallard::inline_set<std::string, 2>{"apple", "pear"}));
  std::set<std::string> more{"kiwi", "pear"};
  words.merge(more);
  EXPECT_EQ(words.size(), 3u);
  EXPECT_EQ(more.size(), 1u);
}

// --- exception guarantees ---

TEST(InlineMap, InsertIsStrongAndCopyLeaksNothing) {
  counters::reset();
  {
    tracked_map map = make_map(shape::heap, 1);
    const auto before = pairs_of(map);
    for (long fail_at = 1; fail_at <= 2; ++fail_at) {
      counters::throw_countdown = fail_at;
      EXPECT_THROW(map.emplace(100, 1), mallard_test::injected_failure);
      counters::throw_countdown = 0;
      EXPECT_EQ(pairs_of(map), before);
    }
    for (long fail_at = 1; fail_at <= 2 * static_cast<long>(map.size()); ++fail_at) {
      counters::throw_countdown = fail_at;
      EXPECT_THROW(tracked_map copy(map), mallard_test::injected_failure);
      counters::throw_countdown = 0;
      EXPECT_EQ(counters::live.load(), static_cast<long>(2 * map.size()));
    }
    // Copy assignment is basic: the target is valid, holds no leaked element.
    tracked_map target = make_map(shape::inline_, 50);
    counters::throw_countdown = 5;
    EXPECT_THROW(target = map, mallard_test::injected_failure);
    counters::throw_countdown = 0;
    EXPECT_EQ(counters::live.load(), static_cast<long>(2 * (map.size() + target.size())));
    target = map;
    EXPECT_EQ(pairs_of(target), before);
  }
  mallard_test::expect_clean_counters();
}

// Moving an element with a throwing move constructor copies it instead, so a
// failed move construction of the container leaves the source intact.
TEST(InlineMap, FailedMoveLeavesSourceIntact) {
  counters::reset();
  {
    using throwing_map = mallard::inline_map<tracked_throwing_move, tracked_throwing_move, 4>;
    throwing_map source;
    for (int i = 0; i < 7; ++i) source.emplace(i, i);
    std::vector<std::pair<int, int>> before;
    for (const auto& [k, v] : source) before.emplace_back(k.value(), v.value());
    counters::throw_countdown = 5;
    EXPECT_THROW(throwing_map moved(std::move(source)), mallard_test::injected_failure);
    counters::throw_countdown = 0;
    std::vector<std::pair<int, int>> after;
    for (const auto& [k, v] : source) after.emplace_back(k.value(), v.value());
    EXPECT_EQ(after, before);
  }
  mallard_test::expect_clean_counters();
}

}  // namespace
