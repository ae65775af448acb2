// What the inline containers and arenas ask of the global allocator: nothing
// while they fit, slots reused after erase, no heap once a container shrinks
// back under N; and the strong guarantee when the heap says no.
//
// This binary replaces the global operator new/delete to count calls and to
// fail on request.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>

namespace {

long heap_allocations = 0;
long fail_allocation_countdown = 0;  // when positive, the allocation that brings it to 0 fails

void* counted_allocate(std::size_t size, std::size_t alignment) {
  if (fail_allocation_countdown > 0 && --fail_allocation_countdown == 0) throw std::bad_alloc();
  ++heap_allocations;
  if (size == 0) size = 1;
  void* memory = alignment <= alignof(std::max_align_t)
                     ? std::malloc(size)
                     : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}

// Heap allocations made while running body.
template <class Body>
long heap_allocations_during(Body&& body) {
  const long before = heap_allocations;
  body();
  return heap_allocations - before;
}

}  // namespace

void* operator new(std::size_t size) { return counted_allocate(size, alignof(std::max_align_t)); }
void* operator new[](std::size_t size) { return counted_allocate(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return counted_allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return counted_allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_allocate(size, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_allocate(size, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }

namespace {

TEST(HeapUsage, InlineVectorStaysOffTheHeapUpToN) {
  mallard::inline_vector<int, 8> vector;
  EXPECT_EQ(heap_allocations_during([&] {
              for (int i = 0; i < 8; ++i) vector.push_back(i);
              mallard::inline_vector<int, 8> copy(vector);
              mallard::inline_vector<int, 8> moved(std::move(copy));
              copy = moved;
              swap(copy, moved);
            }),
            0);
  EXPECT_EQ(heap_allocations_during([&] { vector.push_back(8); }), 1);
  vector.resize(4);
  vector.shrink_to_fit();
  EXPECT_TRUE(vector.is_inline());
  EXPECT_EQ(heap_allocations_during([&] { vector.resize(8); }), 0);
}

template <class Map, class MakeKey>
void check_node_container(MakeKey make_key) {
  constexpr std::size_t n = Map::inline_capacity;
  Map map;
  EXPECT_EQ(heap_allocations_during([&] {
              for (std::size_t i = 0; i < n; ++i) map.emplace(make_key(i), typename Map::mapped_type{});
            }),
            0)
      << "first N nodes are inline";
  EXPECT_EQ(map.inline_nodes(), n);
  // Erased slots are reused.
  EXPECT_EQ(heap_allocations_during([&] {
              for (int round = 0; round < 10; ++round) {
                map.erase(make_key(0));
                map.emplace(make_key(0), typename Map::mapped_type{});
              }
            }),
            0);
  // Past N, nodes come from the heap (a hash table may also move its
  // buckets there)...
  EXPECT_GE(heap_allocations_during([&] {
              for (std::size_t i = n; i < n + 3; ++i) map.emplace(make_key(i), typename Map::mapped_type{});
            }),
            3);
  // ...and once the map shrinks under N, new nodes take the freed slots.
  for (std::size_t i = 0; i < n; ++i) map.erase(make_key(i));
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(heap_allocations_during([&] {
              for (std::size_t i = 100; i < 100 + n; ++i) map.emplace(make_key(i), typename Map::mapped_type{});
            }),
            0);
  // Copies and moves of a map that never outgrew N stay inline.
  Map fitting;
  for (std::size_t i = 0; i < n; ++i) fitting.emplace(make_key(i), typename Map::mapped_type{});
  EXPECT_EQ(heap_allocations_during([&] {
              Map copy(fitting);
              Map moved(std::move(copy));
              copy = moved;
              moved.swap(copy);
            }),
            0);
}

std::string short_key(std::size_t i) { return std::to_string(i + 1000); }  // short: no heap
std::size_t size_key(std::size_t i) { return i; }

struct alignas(32) wide_value {
  double parts[4] = {};
};

TEST(HeapUsage, NodeContainersStayOffTheHeapUpToN) {
  check_node_container<mallard::inline_map<std::size_t, int, 8>>(size_key);
  check_node_container<mallard::inline_map<std::string, std::string, 5>>(short_key);
  check_node_container<mallard::inline_map<std::size_t, wide_value, 3>>(size_key);
  check_node_container<mallard::inline_unordered_map<std::size_t, int, 1>>(size_key);
  check_node_container<mallard::inline_unordered_map<std::size_t, int, 8>>(size_key);
  check_node_container<mallard::inline_unordered_map<std::size_t, int, 13>>(size_key);
  check_node_container<mallard::inline_unordered_map<std::size_t, int, 64>>(size_key);
  check_node_container<mallard::inline_unordered_map<std::string, int, 6>>(short_key);
  check_node_container<mallard::inline_unordered_map<std::size_t, wide_value, 4>>(size_key);
}

TEST(HeapUsage, SetAndListStayOffTheHeapUpToN) {
  mallard::inline_set<int, 6> set;
  mallard::inline_list<std::string, 6> list;
  EXPECT_EQ(heap_allocations_during([&] {
              for (int i = 0; i < 6; ++i) set.insert(i);
              for (int i = 0; i < 6; ++i) list.emplace_back("short");
              list.sort();
              list.unique();
              list.remove("x");
              for (int i = 0; i < 5; ++i) list.emplace_front("again");
              set.erase(3);
              set.insert(30);
            }),
            0);
  EXPECT_EQ(heap_allocations_during([&] { list.emplace_back("seventh"); }), 1);
}

// Node handles of inline nodes are rebuilt on the heap; the slot is freed.
TEST(HeapUsage, ExtractMovesInlineNodesToTheHeap) {
  mallard::inline_map<int, int, 4> map{{1, 1}, {2, 2}};
  mallard::inline_map<int, int, 4>::node_type node;
  EXPECT_EQ(heap_allocations_during([&] { node = map.extract(1); }), 1);
  EXPECT_EQ(map.inline_nodes(), 1u);
}

TEST(HeapUsage, StrongGuaranteeWhenTheHeapFails) {
  mallard::inline_map<int, int, 2> map{{1, 1}, {2, 2}};
  fail_allocation_countdown = 1;
  EXPECT_THROW(map.emplace(3, 3), std::bad_alloc);
  fail_allocation_countdown = 0;
  EXPECT_EQ(map, (mallard::inline_map<int, int, 2>{{1, 1}, {2, 2}}));

  mallard::inline_vector<std::string, 2> vector{"a", "b"};
  fail_allocation_countdown = 1;
  EXPECT_THROW(vector.push_back("c"), std::bad_alloc);
  fail_allocation_countdown = 0;
  EXPECT_EQ(vector, (mallard::inline_vector<std::string, 2>{"a", "b"}));
  EXPECT_TRUE(vector.is_inline());

  mallard::inline_list<int, 1> source{1, 2, 3};
  mallard::inline_list<int, 1> target{0};
  fail_allocation_countdown = 2;
  EXPECT_THROW(target.splice(target.end(), source), std::bad_alloc);
  fail_allocation_countdown = 0;
  EXPECT_EQ(source, (mallard::inline_list<int, 1>{1, 2, 3}));
  EXPECT_EQ(target, (mallard::inline_list<int, 1>{0}));

  mallard::arena arena;
  fail_allocation_countdown = 1;
  EXPECT_THROW(static_cast<void>(arena.allocate(1 << 20)), std::bad_alloc);
  fail_allocation_countdown = 0;
}

// A child arena per request: after the first request, no heap traffic at all.
TEST(HeapUsage, ChildArenasReuseTheParentsBlocks) {
  mallard::arena parent;
  auto request = [&] {
    mallard::arena child(parent);
    mallard::arena_resource resource(child);
    std::pmr::vector<int> numbers(&resource);
    for (int i = 0; i < 100; ++i) numbers.push_back(i);
    int* answer = child.make<int>(42);
    mallard::arena::destroy(answer);
  };
  request();
  EXPECT_EQ(heap_allocations_during([&] {
              for (int i = 0; i < 100; ++i) request();
            }),
            0);
}

}  // namespace
