// Multi-threaded stress: many threads on few cores, blocks handed between
// threads and freed remotely, every block stamped and verified; thread churn
// (thousands of short-lived threads leaving blocks behind). mallard_* names
// only, so the test runs under ThreadSanitizer too (label sanitize-core): all
// hand-offs go through mutexes, which gives the happens-before edges TSan
// needs and leaves mallard's own synchronization as the only thing checked.
#include <mallard/mallard.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace mallard_test;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

// Operation counts are for Release builds; sanitizers make every access
// several times slower.
constexpr size_t scaled(size_t n) { return kSanitized ? std::max<size_t>(n / 8, 1) : n; }

struct Block {
  void* p = nullptr;
  size_t size = 0;
  uint64_t tag = 0;
};

// Skewed towards small sizes, like real programs: 60% up to 128 B, 25% up
// to 4 KiB, 10% up to 128 KiB, 4.5% large up to 1 MiB, 0.5% up to 4 MiB.
size_t random_size(std::mt19937_64& rng) {
  unsigned r = static_cast<unsigned>(rng() % 1000);
  auto between = [&](size_t lo, size_t hi) { return lo + rng() % (hi - lo + 1); };
  if (r < 600) return between(1, 128);
  if (r < 850) return between(129, 4 * KiB);
  if (r < 950) return between(4 * KiB + 1, 128 * KiB);
  if (r < 995) return between(128 * KiB + 1, 1 * MiB);
  return between(1 * MiB + 1, 4 * MiB);
}

// Allocates with one of malloc, calloc or posix_memalign and stamps the
// block with a pattern derived from its address and size. Returns a block
// with p == nullptr (and records a failure) on error.
Block allocate_stamped(std::mt19937_64& rng) {
  size_t size = random_size(rng);
  void* p = nullptr;
  unsigned how = static_cast<unsigned>(rng() % 10);
  if (how < 8) {
    p = mallard_malloc(size);
  } else if (how == 8) {
    p = mallard_calloc(1, size);
    if (p != nullptr) {
      size_t head = std::min(size, size_t{4096});
      EXPECT_EQ(first_nonzero(p, head), SIZE_MAX) << "calloc(1, " << size << ") not zeroed";
      EXPECT_EQ(first_nonzero(static_cast<char*>(p) + size - head, head), SIZE_MAX) << "calloc(1, " << size << ")";
    }
  } else {
    size_t alignment = size_t{16} << (rng() % 9);  // 16 .. 4096
    if (mallard_posix_memalign(&p, alignment, size) != 0) p = nullptr;
    if (p != nullptr) {
      EXPECT_TRUE(is_aligned(p, alignment)) << "posix_memalign(" << alignment << ", " << size << ") = " << p;
    }
  }
  EXPECT_NE(p, nullptr) << "allocation of " << size << " bytes failed";
  if (p == nullptr) return {};
  EXPECT_GE(mallard_malloc_usable_size(p), size);
  uint64_t tag = stamp_tag(p, size);
  stamp(p, size, tag);
  return {p, size, tag};
}

// Verifies the stamp; on mismatch records where (the block's address, size
// and the first bad offset) and returns false.
bool verify(const Block& b, const char* where) {
  size_t bad = stamp_mismatch(b.p, b.size, b.tag);
  EXPECT_EQ(bad, SIZE_MAX) << where << ": block " << b.p << " of " << b.size << " bytes damaged at offset " << bad;
  return bad == SIZE_MAX;
}

void verify_and_free(const Block& b, const char* where) {
  verify(b, where);
  mallard_free(b.p);
}

// Reallocates b to a new random size, checks the kept prefix (whole stamps
// are only full up to kFullStampLimit: beyond that the first 4 KiB are), and
// stamps the result afresh.
Block reallocate(const Block& b, std::mt19937_64& rng) {
  size_t new_size = random_size(rng);
  void* q = mallard_realloc(b.p, new_size);
  EXPECT_NE(q, nullptr) << "realloc(" << b.size << " -> " << new_size << ")";
  if (q == nullptr) return b;
  size_t kept = b.size <= kFullStampLimit ? std::min(b.size, new_size) : std::min(new_size, size_t{4096});
  size_t bad = stamp_all_mismatch(q, kept, b.tag);
  EXPECT_EQ(bad, SIZE_MAX) << "realloc " << b.size << " -> " << new_size << " lost byte " << bad;
  uint64_t tag = stamp_tag(q, new_size, 1);
  stamp(q, new_size, tag);
  return {q, new_size, tag};
}

// A set of mailboxes: threads post blocks to others' boxes and collect
// their own.
class Mailboxes {
 public:
  explicit Mailboxes(size_t count) : boxes_(count) {}
  size_t count() const { return boxes_.size(); }

  // False when the box is full (the caller then frees the block itself).
  bool post(size_t box, const Block& b) {
    std::lock_guard lock(boxes_[box].mutex);
    if (boxes_[box].blocks.size() >= kCapacity) return false;
    boxes_[box].blocks.push_back(b);
    return true;
  }
  std::vector<Block> collect(size_t box) {
    std::vector<Block> taken;
    std::lock_guard lock(boxes_[box].mutex);
    taken.swap(boxes_[box].blocks);
    return taken;
  }

 private:
  static constexpr size_t kCapacity = 256;
  struct Box {
    std::mutex mutex;
    std::vector<Block> blocks;
  };
  std::deque<Box> boxes_;
};

}  // namespace

TEST(Stress, RandomSizesHandedBetweenThreads) {
  constexpr size_t kThreads = 32;
  const size_t ops_per_thread = scaled(400000);
  constexpr size_t kMaxLocal = 64;
  Mailboxes mail(kThreads);
  std::atomic<size_t> remote_frees{0}, reallocs{0};

  auto worker = [&](size_t id) {
    std::mt19937_64 rng(0x5EED0000 + id);
    std::vector<Block> local;
    for (size_t op = 0; op < ops_per_thread; ++op) {
      unsigned r = static_cast<unsigned>(rng() % 100);
      if (r < 45) {
        Block b = allocate_stamped(rng);
        if (b.p == nullptr) continue;
        if (rng() % 2 == 0) {
          size_t to = (id + 1 + rng() % (kThreads - 1)) % kThreads;  // never ourselves
          if (mail.post(to, b)) continue;
        }
        if (local.size() >= kMaxLocal) {
          verify_and_free(local.front(), "local");
          local.front() = local.back();
          local.pop_back();
        }
        local.push_back(b);
      } else if (r < 75) {
        for (Block& b : mail.collect(id)) {
          if (!verify(b, "received")) continue;  // leak it rather than free garbage
          ++remote_frees;
          if (rng() % 5 == 0) {  // realloc a block another thread allocated
            ++reallocs;
            Block moved = reallocate(b, rng);
            if (local.size() < kMaxLocal) {
              local.push_back(moved);
              continue;
            }
            b = moved;
          }
          mallard_free(b.p);
        }
      } else if (!local.empty()) {
        size_t i = rng() % local.size();
        verify_and_free(local[i], "local");
        local[i] = local.back();
        local.pop_back();
      }
      if (testing::Test::HasFailure()) return;
    }
    for (const Block& b : local) verify_and_free(b, "local at exit");
  };

  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kThreads; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  // What is left in the boxes belongs to exited threads: free it from here.
  for (size_t box = 0; box < mail.count(); ++box)
    for (const Block& b : mail.collect(box)) verify_and_free(b, "left over");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu threads x %zu ops, %zu blocks freed remotely (%zu reallocated), %.1f s\n", kThreads,
              ops_per_thread, remote_frees.load(), reallocs.load(), seconds);
  EXPECT_GT(remote_frees.load(), kThreads * ops_per_thread / 10) << "the hand-off did not happen";
}

// The storage-server pattern: submitters allocate requests, a few completion
// threads free them. Every block of a producer goes to another thread.
TEST(Stress, ProducersAndConsumers) {
  constexpr size_t kProducers = 8, kConsumers = 4;
  const size_t blocks_per_producer = scaled(200000);
  std::mutex m;
  std::condition_variable cv;
  std::deque<Block> queue;
  size_t producers_left = kProducers;
  std::atomic<size_t> consumed{0};

  auto producer = [&](size_t id) {
    const size_t sizes[] = {24, 40, 64, 200, 512, 4096, 24, 24};  // Redis-like: mostly 24 B
    for (size_t i = 0; i < blocks_per_producer; ++i) {
      size_t size = sizes[(i + id) % std::size(sizes)];
      void* p = mallard_malloc(size);
      if (p == nullptr) {
        ADD_FAILURE() << "malloc(" << size << ") failed";
        break;
      }
      Block b{p, size, stamp_tag(p, size, id)};
      stamp(p, size, b.tag);
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return queue.size() < 4096; });
      queue.push_back(b);
      cv.notify_all();
    }
    std::lock_guard lock(m);
    --producers_left;
    cv.notify_all();
  };
  auto consumer = [&] {
    for (;;) {
      std::vector<Block> batch;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return !queue.empty() || producers_left == 0; });
        if (queue.empty()) return;
        while (!queue.empty() && batch.size() < 64) {
          batch.push_back(queue.front());
          queue.pop_front();
        }
        cv.notify_all();
      }
      for (const Block& b : batch) verify_and_free(b, "consumer");
      consumed += batch.size();
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kProducers; ++i) threads.emplace_back(producer, i);
  for (size_t i = 0; i < kConsumers; ++i) threads.emplace_back(consumer);
  for (auto& t : threads) t.join();
  EXPECT_EQ(consumed.load(), kProducers * blocks_per_producer);
}

// Thousands of short-lived threads. Each allocates, frees some blocks
// itself, leaves others in a shared pool and frees blocks that earlier
// (now exited) threads left there, so frees reach heaps whose thread is
// gone. At the end the remaining blocks are freed by the main thread.
TEST(Stress, ThreadChurn) {
  const size_t total_threads = scaled(3000);
  constexpr size_t kConcurrent = 32;
  std::mutex pool_mutex;
  std::vector<Block> pool;
  std::atomic<size_t> orphans_freed{0};

  mallard_trim(0);
  mallard_stats before{};
  ASSERT_EQ(mallard_stats_get(&before), 0);

  auto short_life = [&](size_t id) {
    std::mt19937_64 rng(0xC4A2 + id);
    std::vector<Block> mine;
    const size_t count = 4 + rng() % 24;
    for (size_t i = 0; i < count; ++i) {
      size_t size = rng() % 50 == 0 ? 256 * KiB + rng() % (64 * KiB) : 1 + rng() % (rng() % 4 == 0 ? 16 * KiB : 256);
      void* p = mallard_malloc(size);
      ASSERT_NE(p, nullptr);
      Block b{p, size, stamp_tag(p, size, id)};
      stamp(p, size, b.tag);
      mine.push_back(b);
    }
    std::vector<Block> adopted;
    {
      std::lock_guard lock(pool_mutex);
      for (size_t i = 0; i < 8 && !pool.empty(); ++i) {
        size_t k = rng() % pool.size();
        adopted.push_back(pool[k]);
        pool[k] = pool.back();
        pool.pop_back();
      }
      // Leave about half of our blocks behind; one thread in ten leaves all.
      bool leave_all = id % 10 == 0;
      while (!mine.empty() && (leave_all || mine.size() > count / 2)) {
        pool.push_back(mine.back());
        mine.pop_back();
      }
    }
    for (const Block& b : adopted) verify_and_free(b, "orphan");
    orphans_freed += adopted.size();
    for (const Block& b : mine) verify_and_free(b, "own");
  };

  size_t started = 0;
  while (started < total_threads && !HasFailure()) {
    std::vector<std::thread> wave;
    for (size_t i = 0; i < kConcurrent && started < total_threads; ++i) wave.emplace_back(short_life, started++);
    for (auto& t : wave) t.join();
  }
  for (const Block& b : pool) verify_and_free(b, "pool at end");
  std::printf("%zu threads, %zu blocks freed by a thread other than their (exited) owner\n", started,
              orphans_freed.load());
  EXPECT_GT(orphans_freed.load(), total_threads);

  mallard_trim(0);
  mallard_stats after{};
  ASSERT_EQ(mallard_stats_get(&after), 0);
  EXPECT_EQ(after.threads, before.threads) << "exited threads must give their heaps back";
  // Exited threads hand their memory back: with every block freed, nothing
  // may stay resident or mapped per thread. (One 4 MiB segment kept per
  // exited thread would be 12 GB here.)
  auto grew = [](size_t a, size_t b) { return static_cast<int64_t>(a) - static_cast<int64_t>(b); };
  EXPECT_LT(grew(after.resident, before.resident), int64_t{64 * MiB})
      << "resident " << before.resident << " -> " << after.resident;
  EXPECT_LT(grew(after.mapped, before.mapped), int64_t{512 * MiB})
      << "mapped " << before.mapped << " -> " << after.mapped;
}

// Larson's server pattern: each lineage's thread replaces random blocks of
// its array, then starts a successor, hands it the array and exits; the
// successor's first call frees a block of the exiting thread's heap. That
// is the moment a new thread adopts the heap it frees into (orphan.cpp,
// orphan_pop_after_hand_over), while other threads absorb orphans and free
// into them: the race remote_free once lost (DESIGN.md, "Thread exit, orphan
// heaps, fork").
namespace {

struct Lineages {
  struct Lineage {
    std::vector<Block> blocks;
    size_t rounds_left = 0;
    uint64_t seed = 0;
  };
  std::vector<Lineage> lineages;
  size_t ops_per_round = 0;
  std::atomic<size_t> hand_overs{0};
  std::mutex mutex;
  std::condition_variable all_done;
  size_t left = 0;  // lineages still running, under mutex
};

Block larson_block(std::mt19937_64& rng, uint64_t id) {
  size_t size = 8 + rng() % 1000;  // larson's 8..1000 B
  void* p = mallard_malloc(size);
  EXPECT_NE(p, nullptr) << "malloc(" << size << ") failed";
  if (p == nullptr) return {};
  Block b{p, size, stamp_tag(p, size, id)};
  stamp(p, size, b.tag);
  return b;
}

void lineage_round(Lineages* run, Lineages::Lineage* lineage) {
  std::mt19937_64 rng(lineage->seed++);
  for (size_t i = 0; i < run->ops_per_round; ++i) {
    Block& slot = lineage->blocks[rng() % lineage->blocks.size()];
    if (slot.p != nullptr) verify_and_free(slot, "lineage");
    slot = larson_block(rng, lineage->seed);
  }
  if (--lineage->rounds_left == 0 || ::testing::Test::HasFailure()) {
    std::lock_guard lock(run->mutex);
    --run->left;
    run->all_done.notify_all();
    return;
  }
  ++run->hand_overs;
  std::thread(lineage_round, run, lineage).detach();
}

}  // namespace

TEST(Stress, LineagesHandTheirBlocksToTheNextThread) {
  constexpr size_t kLineages = 6, kSlots = 300;
  const size_t rounds = scaled(400);
  Lineages run;
  run.lineages.resize(kLineages);
  run.ops_per_round = 1500;
  run.left = kLineages;
  std::mt19937_64 rng(0x1A250);
  for (size_t l = 0; l < kLineages; ++l) {
    run.lineages[l].seed = 1000 * l;
    run.lineages[l].rounds_left = rounds;
    // The main thread allocates the first blocks, as in larson.
    for (size_t s = 0; s < kSlots; ++s) run.lineages[l].blocks.push_back(larson_block(rng, l));
  }
  for (auto& lineage : run.lineages) std::thread(lineage_round, &run, &lineage).detach();
  {
    std::unique_lock lock(run.mutex);
    run.all_done.wait(lock, [&] { return run.left == 0; });
  }
  for (auto& lineage : run.lineages) {
    for (const Block& b : lineage.blocks) {
      if (b.p != nullptr) verify_and_free(b, "lineage at end");
    }
  }
  std::printf("%zu hand-overs between threads\n", run.hand_overs.load());
  EXPECT_EQ(run.hand_overs.load(), kLineages * (rounds - 1));
}
