// stl_bench: seed 003's synthetic test and a per-request workload, std::
// containers against mallard STL, all threads at once.
//
// block/<size>/<variant>: one object of <size> bytes created and destroyed
// per iteration, the way a request creates a context:
//   std          std::list<block> with one element (one operator new/delete)
//   inline       mallard::inline_list<block, 1>: the node is inside the list
//   arena        make<block>() / destroy() from a long-lived per-thread arena
//                (seed 003's "placement" allocator: a completion context
//                handing memory to its short-lived callbacks)
//   child_arena  a child arena per request, carved from the per-thread arena
// request/<variant>: small maps, vectors and hash maps (N <= 8) built, read
// and torn down per request:
//   std          std::map, std::vector, std::unordered_map
//   inline       mallard::inline_map/inline_vector/inline_unordered_map
//   pmr_arena    std::pmr containers over an arena_resource on a child arena
//
// scripts/stl-bench.sh runs this binary under each allocator and prints the
// ratios std time / mallard time.
#include <mallard/stl.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory_resource>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr int thread_count = 32;

// A block whose constructor touches one byte: the benchmark measures the
// allocation, not filling a megabyte.
template <std::size_t Bytes>
struct block {
  block() noexcept { bytes[0] = std::byte{1}; }
  std::byte bytes[Bytes];
};

// Per-thread arena big enough that a block never needs a dedicated one.
constexpr std::size_t arena_block_size_for(std::size_t bytes) {
  return bytes * 4 < 64 * 1024 ? 64 * 1024 : bytes * 4;
}

template <std::size_t Bytes>
void block_std(benchmark::State& state) {
  for (auto _ : state) {
    std::list<block<Bytes>> list;
    list.emplace_back();
    benchmark::DoNotOptimize(&list.front());
  }
}

template <std::size_t Bytes>
void block_inline(benchmark::State& state) {
  for (auto _ : state) {
    mallard::inline_list<block<Bytes>, 1> list;
    list.emplace_back();
    benchmark::DoNotOptimize(&list.front());
  }
}

template <std::size_t Bytes>
void block_arena(benchmark::State& state) {
  mallard::arena context(mallard::arena_options{.block_size = arena_block_size_for(Bytes)});
  for (auto _ : state) {
    auto* object = context.make<block<Bytes>>();
    benchmark::DoNotOptimize(object);
    mallard::arena::destroy(object);
  }
}

template <std::size_t Bytes>
void block_child_arena(benchmark::State& state) {
  mallard::arena context(mallard::arena_options{.block_size = arena_block_size_for(Bytes)});
  for (auto _ : state) {
    mallard::arena request(context);
    auto* object = request.make<block<Bytes>>();
    benchmark::DoNotOptimize(object);
    mallard::arena::destroy(object);
  }
}

// One request: a header map of 6 entries, a vector of 8 offsets, a hash map
// of 4 attributes, a few lookups. Returns something derived from all of it.
template <class Map, class Vector, class HashMap>
std::uint64_t serve_request(std::uint64_t request_id, Map& headers, Vector& offsets, HashMap& attributes) {
  for (int i = 0; i < 6; ++i) headers.emplace(static_cast<int>((request_id + static_cast<std::uint64_t>(i) * 7) % 16), request_id + static_cast<std::uint64_t>(i));
  for (int i = 0; i < 8; ++i) offsets.push_back(request_id * 8 + static_cast<std::uint64_t>(i));
  for (int i = 0; i < 4; ++i) attributes.emplace(i * 3, request_id ^ static_cast<std::uint64_t>(i));
  std::uint64_t digest = 0;
  for (int key = 0; key < 16; key += 3) {
    if (auto it = headers.find(key); it != headers.end()) digest += it->second;
    if (auto it = attributes.find(key); it != attributes.end()) digest ^= it->second;
  }
  for (auto offset : offsets) digest += offset;
  return digest;
}

void request_std(benchmark::State& state) {
  std::uint64_t id = 0;
  for (auto _ : state) {
    std::map<int, std::uint64_t> headers;
    std::vector<std::uint64_t> offsets;
    std::unordered_map<int, std::uint64_t> attributes;
    benchmark::DoNotOptimize(serve_request(++id, headers, offsets, attributes));
  }
}

void request_inline(benchmark::State& state) {
  std::uint64_t id = 0;
  for (auto _ : state) {
    mallard::inline_map<int, std::uint64_t, 8> headers;
    mallard::inline_vector<std::uint64_t, 8> offsets;
    mallard::inline_unordered_map<int, std::uint64_t, 8> attributes;
    benchmark::DoNotOptimize(serve_request(++id, headers, offsets, attributes));
  }
}

void request_pmr_arena(benchmark::State& state) {
  mallard::arena context;
  std::uint64_t id = 0;
  for (auto _ : state) {
    mallard::arena request(context);
    mallard::arena_resource resource(request);
    std::pmr::map<int, std::uint64_t> headers(&resource);
    std::pmr::vector<std::uint64_t> offsets(&resource);
    std::pmr::unordered_map<int, std::uint64_t> attributes(&resource);
    benchmark::DoNotOptimize(serve_request(++id, headers, offsets, attributes));
  }
}

template <std::size_t Bytes>
void register_block_benchmarks(const std::string& size_name) {
  const std::string prefix = "block/" + size_name + "/";
  benchmark::RegisterBenchmark((prefix + "std").c_str(), block_std<Bytes>)->Threads(thread_count)->UseRealTime();
  benchmark::RegisterBenchmark((prefix + "inline").c_str(), block_inline<Bytes>)->Threads(thread_count)->UseRealTime();
  benchmark::RegisterBenchmark((prefix + "arena").c_str(), block_arena<Bytes>)->Threads(thread_count)->UseRealTime();
  benchmark::RegisterBenchmark((prefix + "child_arena").c_str(), block_child_arena<Bytes>)
      ->Threads(thread_count)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_block_benchmarks<32>("32B");
  register_block_benchmarks<4 * 1024>("4KiB");
  register_block_benchmarks<32 * 1024>("32KiB");
  register_block_benchmarks<64 * 1024>("64KiB");
  register_block_benchmarks<1024 * 1024>("1MiB");
  benchmark::RegisterBenchmark("request/std", request_std)->Threads(thread_count)->UseRealTime();
  benchmark::RegisterBenchmark("request/inline", request_inline)->Threads(thread_count)->UseRealTime();
  benchmark::RegisterBenchmark("request/pmr_arena", request_pmr_arena)->Threads(thread_count)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
