// Micro-benchmarks of the allocation fast paths. The binary uses whatever
// malloc the process has: run it with LD_PRELOAD=build/src/libmallard.so (or
// any other allocator's library); scripts/micro-bench.sh runs it under every
// allocator for `make bench`.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// One malloc + free pair of a fixed size: the thread-local fast path.
void BM_malloc_free(benchmark::State& state) {
  size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_malloc_free)->Arg(16)->Arg(24)->Arg(64)->Arg(256)->Arg(1024)->Arg(8192)->Arg(65536)->Arg(1 << 20);

// One calloc + free pair: a block reused at once, so calloc must clear it.
void BM_calloc_free(benchmark::State& state) {
  size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = calloc(1, size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_calloc_free)->Arg(24)->Arg(100)->Arg(1024);

// One posix_memalign + free pair: a storage stack's page-aligned I/O buffer
// (4096, 4096), a cache-line-aligned object (64, 256), and a page-aligned
// 64 KiB buffer. Arguments: alignment, size.
void BM_aligned_free(benchmark::State& state) {
  size_t alignment = static_cast<size_t>(state.range(0)), size = static_cast<size_t>(state.range(1));
  for (auto _ : state) {
    void* p = nullptr;
    if (posix_memalign(&p, alignment, size) != 0) std::abort();
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_aligned_free)->Args({64, 256})->Args({4096, 4096})->Args({4096, 65536});

// A batch of 1000 blocks allocated then freed (LIFO): exercises refills.
void BM_batch(benchmark::State& state) {
  size_t size = static_cast<size_t>(state.range(0));
  std::vector<void*> blocks(1000);
  for (auto _ : state) {
    for (auto& b : blocks) b = malloc(size);
    for (auto& b : blocks) free(b);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_batch)->Arg(24)->Arg(128)->Arg(4096);

// Producer/consumer: blocks allocated here are freed by another thread.
void BM_cross_thread_free(benchmark::State& state) {
  constexpr size_t kRing = 4096;
  std::vector<std::atomic<void*>> ring(kRing);
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    size_t i = 0;
    while (!done.load(std::memory_order_acquire)) {
      void* p = ring[i].exchange(nullptr, std::memory_order_acq_rel);
      if (p != nullptr) free(p);
      i = (i + 1) % kRing;
    }
    for (auto& slot : ring) free(slot.exchange(nullptr));
  });
  size_t i = 0;
  for (auto _ : state) {
    void* p = malloc(64);
    void* old = ring[i].exchange(p, std::memory_order_acq_rel);
    if (old != nullptr) free(old);
    i = (i + 1) % kRing;
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_cross_thread_free);

// A buffer regrown by realloc from 1 KiB to the argument's size, an eighth
// (plus 48 bytes) at a time, each new part written, then freed: a list or
// string builder run once per request. Per realloc call. Up to 64 KiB the
// blocks are small and medium (size-class allocators copy between
// classes); to 8 MiB most of the work is large blocks, whose pages an
// allocator may keep from the round before or fault in again.
void BM_realloc_grow(benchmark::State& state) {
  size_t target = static_cast<size_t>(state.range(0));
  size_t calls = 0;
  for (auto _ : state) {
    size_t size = 1024;
    auto* p = static_cast<char*>(malloc(size));
    for (;;) {
      size_t grown = size + size / 8 + 48;
      if (grown > target) break;
      p = static_cast<char*>(realloc(p, grown));
      if (p == nullptr) std::abort();
      std::memset(p + size, 1, grown - size);
      benchmark::DoNotOptimize(p);
      benchmark::ClobberMemory();  // the bytes written count
      size = grown;
      ++calls;
    }
    free(p);
  }
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
BENCHMARK(BM_realloc_grow)->Arg(64 << 10)->Arg(8 << 20);

// A large heap's medium blocks in random churn: the churn workload's core
// on one thread. 48 MiB of live blocks of 8-64 KiB (log-uniform); each
// iteration frees a random one and allocates another of a random size,
// writing its first byte. Past 32 MiB of segments mallard serves these from
// its coalescing extents, whose lock and bins cost more a block than a size
// class (DESIGN.md "The extents' lock and lists on the Intel Xeon").
void BM_medium_churn(benchmark::State& state) {
  constexpr size_t kLiveBytes = size_t{48} << 20;
  constexpr size_t kSizes = 4096;  // drawn ahead: the loop times the allocator, not exp2
  uint64_t random = 88172645463325252u;
  auto next = [&random] {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    return random;
  };
  std::vector<size_t> sizes(kSizes);
  for (auto& size : sizes) size = static_cast<size_t>(8192.0 * std::exp2(3.0 * static_cast<double>(next() >> 11) * 0x1p-53));
  std::vector<char*> blocks;
  for (size_t live = 0; live < kLiveBytes;) {
    size_t size = sizes[blocks.size() % kSizes];
    auto* p = static_cast<char*>(malloc(size));
    if (p == nullptr) std::abort();
    p[0] = 1;
    blocks.push_back(p);
    live += size;
  }
  size_t i = 0;
  for (auto _ : state) {
    char*& slot = blocks[next() % blocks.size()];
    free(slot);
    slot = static_cast<char*>(malloc(sizes[i++ % kSizes]));
    if (slot == nullptr) std::abort();
    slot[0] = 1;
  }
  for (char* p : blocks) free(p);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_medium_churn);

}  // namespace

BENCHMARK_MAIN();
