// mallard::arena and arena_resource: lifetimes, children, frees from many
// threads at once, destructors at arena end, std::pmr containers.
#include <mallard/stl.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory_resource>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "instrumented.hpp"

namespace {

using mallard_test::counters;
using mallard_test::tracked;

TEST(Arena, MakeDestroyAndAlignment) {
  counters::reset();
  {
    mallard::arena arena;
    std::vector<tracked*> objects;
    for (int i = 0; i < 1000; ++i) objects.push_back(arena.make<tracked>(i));
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(objects[static_cast<std::size_t>(i)]->value(), i);
    for (tracked* object : objects) mallard::arena::destroy(object);
    EXPECT_EQ(counters::live.load(), 0);

    for (std::size_t alignment = 1; alignment <= 4096; alignment *= 2) {
      void* memory = arena.allocate(24, alignment);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory) % alignment, 0u) << alignment;
      std::memset(memory, 0xAB, 24);
      mallard::arena::deallocate(memory);
    }
    struct alignas(128) wide {
      char bytes[200];
    };
    wide* w = arena.make<wide>();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w) % 128, 0u);
    mallard::arena::destroy(w);

    // Larger than half a block: a dedicated block, freed at once.
    void* big = arena.allocate(arena.block_size());
    std::memset(big, 1, arena.block_size());
    const auto blocks_with_big = arena.blocks_in_use();
    mallard::arena::deallocate(big);
    EXPECT_EQ(arena.blocks_in_use(), blocks_with_big - 1);
  }
  mallard_test::expect_clean_counters();
}

// Blocks are recycled once the arena moved past them and they are empty.
TEST(Arena, EmptyBlocksAreReused) {
  mallard::arena arena(mallard::arena_options{.block_size = 4096});
  for (int round = 0; round < 200; ++round) {
    std::vector<void*> memory;
    for (int i = 0; i < 200; ++i) memory.push_back(arena.allocate(64));
    for (void* p : memory) mallard::arena::deallocate(p);
  }
  // 200 * (64 + 16) bytes span about 4 blocks; recycling keeps the total small.
  EXPECT_LE(arena.blocks_in_use() + arena.blocks_cached(), 8u);
}

// A child takes its blocks from the parent and gives them back when it ends.
TEST(Arena, ChildReturnsBlocksToParent) {
  mallard::arena parent(mallard::arena_options{.block_size = 8192});
  void* anchor = parent.allocate(16);
  for (int request = 0; request < 100; ++request) {
    std::vector<std::uint64_t*> objects;
    {
      mallard::arena child(parent);
      EXPECT_EQ(child.block_size(), parent.block_size());
      for (int i = 0; i < 600; ++i) objects.push_back(child.make<std::uint64_t>(static_cast<std::uint64_t>(i)));
      EXPECT_GE(child.blocks_in_use(), 2u);
      for (std::size_t i = 0; i < objects.size(); i += 2) mallard::arena::destroy(objects[i]);
    }
    // The other half dies after the child: their blocks go back then.
    for (std::size_t i = 1; i < objects.size(); i += 2) mallard::arena::destroy(objects[i]);
  }
  mallard::arena::deallocate(anchor);
  // Every child's blocks went back to the parent's cache: the steady state
  // needs only a handful of blocks in total.
  EXPECT_LE(parent.blocks_cached(), 6u);
  EXPECT_GE(parent.blocks_cached(), 2u);
}

// A child that destroys what is left at its end gives every block back,
// trivially destructible objects included.
TEST(Arena, ChildWithDestroyAtEndReturnsEverything) {
  mallard::arena parent(mallard::arena_options{.block_size = 8192});
  for (int request = 0; request < 50; ++request) {
    mallard::arena child(parent, true);
    for (int i = 0; i < 600; ++i) static_cast<void>(child.make<std::uint64_t>(static_cast<std::uint64_t>(i)));
  }
  EXPECT_LE(parent.blocks_cached(), 6u);
  EXPECT_LE(parent.blocks_in_use(), 1u);
}

// Objects may outlive the arena object; the memory stays until the last one goes.
TEST(Arena, ObjectsOutliveTheirArena) {
  counters::reset();
  std::vector<tracked*> survivors;
  {
    mallard::arena parent;
    {
      mallard::arena child(parent);
      for (int i = 0; i < 50; ++i) survivors.push_back(child.make<tracked>(i));
    }
    for (int i = 0; i < 50; ++i) survivors.push_back(parent.make<tracked>(100 + i));
  }
  // Both arena objects are gone; the objects are still readable.
  for (std::size_t i = 0; i < survivors.size(); ++i) {
    EXPECT_EQ(survivors[i]->value(), i < 50 ? static_cast<int>(i) : static_cast<int>(100 + i - 50));
  }
  for (tracked* object : survivors) mallard::arena::destroy(object);
  mallard_test::expect_clean_counters();
}

TEST(Arena, DestructorsOfAliveObjectsRunNewestFirst) {
  std::vector<int> destroyed;
  struct recorder {
    std::vector<int>* log;
    int id;
    ~recorder() { log->push_back(id); }
  };
  {
    mallard::arena arena(mallard::arena_options{.block_size = 4096, .destroy_alive_objects_at_end = true});
    std::vector<recorder*> objects;
    for (int i = 0; i < 500; ++i) objects.push_back(arena.make<recorder>(&destroyed, i));
    // Some die early, on other threads too.
    std::thread other([&] {
      for (int i = 0; i < 500; i += 3) mallard::arena::destroy(objects[static_cast<std::size_t>(i)]);
    });
    other.join();
    // An object bigger than half a block, in its own block.
    struct big_recorder : recorder {
      char payload[3000] = {};
    };
    static_cast<void>(arena.make<big_recorder>(big_recorder{{&destroyed, 1000}}));
  }
  // The 1000 is destroyed twice: the temporary, then at arena end first.
  std::vector<int> expected;
  for (int i = 0; i < 500; i += 3) expected.push_back(i);
  expected.push_back(1000);
  expected.push_back(1000);
  for (int i = 499; i >= 0; --i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  EXPECT_EQ(destroyed, expected);

  // Child arenas can ask for it too.
  destroyed.clear();
  {
    mallard::arena parent;
    mallard::arena child(parent, true);
    static_cast<void>(child.make<recorder>(&destroyed, 1));
    static_cast<void>(child.make<recorder>(&destroyed, 2));
  }
  EXPECT_EQ(destroyed, (std::vector<int>{2, 1}));
}

// Many threads free objects of one arena at once (and allocate from it).
TEST(Arena, ConcurrentFreesAndAllocations) {
  counters::reset();
  constexpr int threads = 8;
  constexpr int objects_per_thread = 20000;
  {
    mallard::arena arena(mallard::arena_options{.block_size = 16384});
    std::vector<tracked*> objects;
    for (int i = 0; i < threads * objects_per_thread; ++i) objects.push_back(arena.make<tracked>(i));
    std::atomic<bool> go{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        std::mt19937 random(static_cast<unsigned>(t));
        std::vector<tracked*> mine;
        for (int i = t; i < threads * objects_per_thread; i += threads) {
          EXPECT_EQ(objects[static_cast<std::size_t>(i)]->value(), i);
          mallard::arena::destroy(objects[static_cast<std::size_t>(i)]);
          // Interleave allocations from the same arena.
          if (random() % 4 == 0) mine.push_back(arena.make<tracked>(i));
          if (mine.size() > 64) {
            for (tracked* object : mine) mallard::arena::destroy(object);
            mine.clear();
          }
        }
        for (tracked* object : mine) mallard::arena::destroy(object);
      });
    }
    go = true;
    for (auto& worker : workers) worker.join();
    EXPECT_EQ(counters::live.load(), 0);
  }
  mallard_test::expect_clean_counters();
}

// Children created and ended on many threads, objects freed on others.
TEST(Arena, ConcurrentChildrenOfOneParent) {
  counters::reset();
  {
    mallard::arena parent(mallard::arena_options{.block_size = 8192});
    std::vector<std::thread> workers;
    for (int t = 0; t < 6; ++t) {
      workers.emplace_back([&parent, t] {
        for (int request = 0; request < 300; ++request) {
          std::vector<tracked*> objects;
          {
            mallard::arena child(parent);
            for (int i = 0; i < 40; ++i) objects.push_back(child.make<tracked>(t * 1000 + i));
            std::thread freer([&] {
              for (std::size_t i = 0; i < objects.size(); i += 2) mallard::arena::destroy(objects[i]);
            });
            freer.join();
          }
          for (std::size_t i = 1; i < objects.size(); i += 2) mallard::arena::destroy(objects[i]);
        }
      });
    }
    for (auto& worker : workers) worker.join();
  }
  mallard_test::expect_clean_counters();
}

TEST(Arena, NestedChildrenAndThrowingConstructors) {
  counters::reset();
  {
    mallard::arena root;
    mallard::arena middle(root);
    mallard::arena leaf(middle);
    tracked* kept = leaf.make<tracked>(5);
    counters::throw_countdown = 1;
    EXPECT_THROW(static_cast<void>(leaf.make<tracked>(6)), mallard_test::injected_failure);
    EXPECT_EQ(kept->value(), 5);
    mallard::arena::destroy(kept);
  }
  mallard_test::expect_clean_counters();
}

TEST(ArenaResource, PmrContainers) {
  mallard::arena arena;
  mallard::arena_resource resource(arena);
  {
    std::pmr::vector<std::pmr::string> strings(&resource);
    for (int i = 0; i < 1000; ++i) strings.emplace_back(std::string(40, static_cast<char>('a' + i % 26)));
    std::pmr::map<int, std::pmr::string> map(&resource);
    for (int i = 0; i < 2000; ++i) map.emplace(i, "value that does not fit the small string buffer");
    for (int i = 0; i < 2000; i += 2) map.erase(i);
    EXPECT_EQ(map.size(), 1000u);
    EXPECT_EQ(strings[27], std::pmr::string(40, 'b'));
    EXPECT_EQ(strings.get_allocator().resource(), &resource);
  }
  EXPECT_TRUE(resource.is_equal(resource));
  mallard::arena_resource other(arena);
  EXPECT_FALSE(resource.is_equal(other));
  // Everything was freed: the arena keeps at most its current block in use.
  EXPECT_LE(arena.blocks_in_use(), 1u);
}

}  // namespace
