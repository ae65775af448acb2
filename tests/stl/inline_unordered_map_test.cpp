// inline_unordered_map against std::unordered_map: random operation
// sequences, every copy/move/swap combination, node handles, exceptions.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "instrumented.hpp"

namespace {

using mallard_test::counters;
using mallard_test::tracked;
using mallard_test::tracked_throwing_move;

template <class Map>
std::vector<std::pair<int, int>> sorted_pairs(const Map& map) {
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [key, value] : map) {
    if constexpr (std::is_same_v<std::decay_t<decltype(key)>, int>) {
      pairs.emplace_back(key, value);
    } else {
      pairs.emplace_back(key.value(), value.value());
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

template <class Element, std::size_t N>
void run_random_sequence(std::uint32_t seed, std::size_t steps) {
  using map_type = mallard::inline_unordered_map<Element, Element, N>;
  counters::reset();
  {
    std::mt19937 random(seed);
    map_type actual;
    map_type other;
    std::unordered_map<int, int> expected;
    std::unordered_map<int, int> other_expected;
    const int key_range = static_cast<int>(3 * N + 4);
    for (std::size_t step = 0; step < steps; ++step) {
      const int key = static_cast<int>(random() % static_cast<unsigned>(key_range));
      const int value = static_cast<int>(random() % 1000);
      switch (random() % 18) {
        case 0:
        case 1:
          ASSERT_EQ(actual.insert({Element(key), Element(value)}).second, expected.insert({key, value}).second);
          break;
        case 2:
          actual.emplace(key, value);
          expected.emplace(key, value);
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
        case 7: {
          auto it = actual.find(key);
          ASSERT_EQ(it == actual.end(), !expected.contains(key));
          if (it != actual.end()) {
            ASSERT_EQ(it->second.value(), expected.at(key));
            actual.erase(it);
            expected.erase(key);
          }
          break;
        }
        case 8:
          if (random() % 6 == 0) {
            actual.clear();
            expected.clear();
          }
          break;
        case 9: {
          auto node = actual.extract(key);
          if (node) {
            auto result = other.insert(std::move(node));
            auto expected_result = other_expected.insert(expected.extract(key));
            ASSERT_EQ(result.inserted, expected_result.inserted);
            ASSERT_EQ(result.node.empty(), expected_result.node.empty());
          }
          break;
        }
        case 10:
          actual.merge(other);
          expected.merge(other_expected);
          break;
        case 11:
          other = actual;
          other_expected = expected;
          break;
        case 12:
          actual.swap(other);
          std::swap(expected, other_expected);
          break;
        case 13:
          other = std::move(actual);
          other_expected = std::move(expected);
          expected.clear();
          break;
        case 14: {
          map_type moved(std::move(other));
          ASSERT_TRUE(other.empty());
          other = moved;
          break;
        }
        case 15:
          if (random() % 4 == 0) {
            actual.rehash(random() % 40);
          } else {
            actual.reserve(random() % 20);
          }
          break;
        case 16:
          ASSERT_EQ(std::erase_if(actual, [&](const auto& item) { return item.second.value() < value / 8; }),
                    std::erase_if(expected, [&](const auto& item) { return item.second < value / 8; }));
          break;
        case 17: {
          auto range = actual.equal_range(key);
          ASSERT_EQ(std::distance(range.first, range.second), static_cast<std::ptrdiff_t>(expected.count(key)));
          ASSERT_EQ(actual.count(key), expected.count(key));
          break;
        }
      }
      ASSERT_EQ(sorted_pairs(actual), sorted_pairs(expected)) << "step " << step;
      ASSERT_EQ(sorted_pairs(other), sorted_pairs(other_expected)) << "step " << step;
      ASSERT_LE(actual.inline_nodes(), N);
      ASSERT_LE(actual.load_factor(), actual.max_load_factor());
      ASSERT_EQ(counters::live.load(), static_cast<long>(2 * (expected.size() + other_expected.size())));
    }
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineUnorderedMap, RandomOperationsMatchStdUnorderedMap) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    run_random_sequence<tracked, 8>(seed, 50000);
    run_random_sequence<tracked_throwing_move, 3>(seed, 3000);
    run_random_sequence<tracked, 1>(seed, 2000);
  }
}

enum class shape { empty, inline_, heap };
constexpr std::size_t inline_slots = 4;
using tracked_map = mallard::inline_unordered_map<tracked, tracked, inline_slots>;

std::vector<std::pair<int, int>> contents_for(shape s, int base) {
  const int count = s == shape::empty ? 0 : s == shape::inline_ ? 3 : 20;
  std::vector<std::pair<int, int>> contents;
  for (int i = 0; i < count; ++i) contents.emplace_back(base + i, 7 * i);
  return contents;
}

tracked_map make_map(shape s, int base) {
  tracked_map map;
  for (auto [key, value] : contents_for(s, base)) map.emplace(key, value);
  return map;
}

void expect_independent(tracked_map& a, tracked_map& b) {
  auto a_pairs = sorted_pairs(a);
  auto b_pairs = sorted_pairs(b);
  for (int i = 0; i < 30; ++i) a.emplace(1000 + i, i);
  const int fresh_key = 5000 + static_cast<int>(b.size());
  b.emplace(fresh_key, 1);
  for (int i = 0; i < 30; ++i) a_pairs.emplace_back(1000 + i, i);
  b_pairs.emplace_back(fresh_key, 1);
  std::sort(a_pairs.begin(), a_pairs.end());
  std::sort(b_pairs.begin(), b_pairs.end());
  EXPECT_EQ(sorted_pairs(a), a_pairs);
  EXPECT_EQ(sorted_pairs(b), b_pairs);
}

class InlineUnorderedMapCombinations : public ::testing::TestWithParam<std::tuple<shape, shape>> {
 protected:
  void SetUp() override { counters::reset(); }
  void TearDown() override { mallard_test::expect_clean_counters(); }
};

TEST_P(InlineUnorderedMapCombinations, CopyAndMoveConstruct) {
  const shape from = std::get<0>(GetParam());
  std::optional<tracked_map> source(make_map(from, 10));
  tracked_map copy(*source);
  EXPECT_EQ(sorted_pairs(copy), contents_for(from, 10));
  tracked_map moved(std::move(*source));
  EXPECT_EQ(sorted_pairs(moved), contents_for(from, 10));
  EXPECT_TRUE(source->empty());
  expect_independent(*source, moved);
  source.reset();
  expect_independent(copy, moved);
}

TEST_P(InlineUnorderedMapCombinations, CopyAndMoveAssign) {
  auto [from, to] = GetParam();
  tracked_map source = make_map(from, 10);
  tracked_map target = make_map(to, 50);
  target = source;
  EXPECT_EQ(sorted_pairs(target), contents_for(from, 10));
  tracked_map second = make_map(to, 70);
  second = std::move(source);
  EXPECT_EQ(sorted_pairs(second), contents_for(from, 10));
  EXPECT_TRUE(source.empty());
  expect_independent(source, second);
  expect_independent(target, second);
}

TEST_P(InlineUnorderedMapCombinations, Swap) {
  auto [left, right] = GetParam();
  std::optional<tracked_map> a(make_map(left, 10));
  tracked_map b = make_map(right, 50);
  a->swap(b);
  EXPECT_EQ(sorted_pairs(*a), contents_for(right, 50));
  EXPECT_EQ(sorted_pairs(b), contents_for(left, 10));
  swap(*a, b);
  std::swap(*a, b);
  EXPECT_EQ(sorted_pairs(b), contents_for(left, 10));
  a.reset();
  tracked_map c;
  expect_independent(b, c);
}

INSTANTIATE_TEST_SUITE_P(AllShapes, InlineUnorderedMapCombinations,
                         ::testing::Combine(::testing::Values(shape::empty, shape::inline_, shape::heap),
                                            ::testing::Values(shape::empty, shape::inline_, shape::heap)));

TEST(InlineUnorderedMap, NodeHandleOutlivesItsContainer) {
  counters::reset();
  {
    tracked_map::node_type node;
    {
      tracked_map map = make_map(shape::inline_, 1);
      node = map.extract(tracked(2));
    }
    ASSERT_FALSE(node.empty());
    EXPECT_EQ(node.mapped().value(), 7);
    tracked_map other;
    EXPECT_TRUE(other.insert(std::move(node)).inserted);
    EXPECT_EQ(other.at(tracked(2)).value(), 7);
  }
  mallard_test::expect_clean_counters();
}

TEST(InlineUnorderedMap, InsertIsStrong) {
  counters::reset();
  {
    tracked_map map = make_map(shape::heap, 1);
    const auto before = sorted_pairs(map);
    for (long fail_at = 1; fail_at <= 2; ++fail_at) {
      counters::throw_countdown = fail_at;
      EXPECT_THROW(map.emplace(1000, 1), mallard_test::injected_failure);
      counters::throw_countdown = 0;
      EXPECT_EQ(sorted_pairs(map), before);
    }
    for (long fail_at = 1; fail_at <= 10; ++fail_at) {
      counters::throw_countdown = fail_at;
      EXPECT_THROW(tracked_map copy(map), mallard_test::injected_failure);
      counters::throw_countdown = 0;
      EXPECT_EQ(counters::live.load(), static_cast<long>(2 * map.size()));
    }
  }
  mallard_test::expect_clean_counters();
}

// The container is its own source: nothing can move, and no key is hashed.
TEST(InlineUnorderedMap, MergeIntoItselfHashesNoKeys) {
  int hashes = 0;
  auto counting_hash = [&hashes](int key) {
    ++hashes;
    return std::hash<int>()(key);
  };
  mallard::inline_unordered_map<int, int, 2, decltype(counting_hash)> map(8, counting_hash);
  for (int key = 0; key < 6; ++key) map.emplace(key, key * 10);
  hashes = 0;
  map.merge(map);
  EXPECT_EQ(hashes, 0);
  EXPECT_EQ(map.size(), 6u);
  EXPECT_EQ(map.at(5), 50);
}

TEST(InlineUnorderedMap, InterfaceMatchesStdUnorderedMap) {
  mallard::inline_unordered_map<std::string, int, 4> counts{{"a", 1}, {"b", 2}};
  counts["c"] += 3;
  EXPECT_EQ(counts.at("c"), 3);
  EXPECT_THROW(static_cast<void>(counts.at("z")), std::out_of_range);
  EXPECT_EQ(counts, (mallard::inline_unordered_map<std::string, int, 4>{{"c", 3}, {"a", 1}, {"b", 2}}));
  EXPECT_GE(counts.bucket_count(), 3u);
  EXPECT_LT(counts.bucket(std::string("a")), counts.bucket_count());
  counts.max_load_factor(0.5f);
  counts.rehash(100);
  EXPECT_GE(counts.bucket_count(), 100u);
  EXPECT_EQ(counts.size(), 3u);
  std::unordered_map<std::string, int> plain{{"d", 4}, {"a", 9}};
  counts.merge(plain);
  EXPECT_EQ(counts.at("a"), 1);
  EXPECT_EQ(counts.at("d"), 4);
  EXPECT_EQ(plain.size(), 1u);
  std::map<std::string, int> ordered(counts.begin(), counts.end());
  EXPECT_EQ(ordered.size(), 4u);
  auto hasher = counts.hash_function();
  EXPECT_EQ(hasher("a"), std::hash<std::string>{}("a"));
  EXPECT_TRUE(counts.key_eq()("x", "x"));
}

}  // namespace
