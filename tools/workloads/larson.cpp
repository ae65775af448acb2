// larson: Larson and Krishnan's server simulation ("Memory allocation for
// long-running server applications", ISMM 1998), written from the paper's
// description. Each of T threads owns an array of blocks of random sizes and
// repeatedly frees a random slot and allocates a new random-sized block into
// it. After a round, the thread hands its array to a newly created thread and
// exits, as a server hands a connection's state to the next worker: the new
// thread frees blocks a dead thread allocated.
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

struct LarsonConfig {
  std::uint64_t slots;
  std::uint64_t ops_per_round;
  std::uint64_t rounds;
  std::uint64_t min_size;
  std::uint64_t max_size;
};

struct Lineage {
  std::vector<void*> blocks;
  std::uint64_t seed = 0;
  std::uint64_t rounds_left = 0;
  std::atomic<bool> finished{false};
};

void run_round(const LarsonConfig& config, Lineage* lineage, std::atomic<std::uint64_t>& operations) {
  FastRandom random(lineage->seed++);
  auto& blocks = lineage->blocks;
  for (std::uint64_t i = 0; i < config.ops_per_round; ++i) {
    std::uint64_t slot = random.below(blocks.size());
    std::free(blocks[slot]);
    std::uint64_t bytes = random.between(config.min_size, config.max_size);
    auto* block = static_cast<unsigned char*>(std::malloc(bytes));
    if (block == nullptr) std::abort();
    block[0] = static_cast<unsigned char>(i);
    blocks[slot] = block;
  }
  operations.fetch_add(config.ops_per_round, std::memory_order_relaxed);
  if (--lineage->rounds_left > 0) {
    // Hand the blocks to a successor; this thread exits as soon as it has started it.
    std::thread(run_round, std::cref(config), lineage, std::ref(operations)).detach();
  } else {
    lineage->finished.store(true, std::memory_order_release);
    lineage->finished.notify_all();
  }
}

void run_larson(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  LarsonConfig config{params.count("slots"), params.count("ops_per_round"), params.count("rounds"), params.size("min_size"),
                      params.size("max_size")};
  auto threads = params.count("threads");
  if (threads == 0 || config.slots == 0 || config.rounds == 0 || config.min_size == 0 || config.min_size > config.max_size) {
    throw std::invalid_argument("larson: threads, slots and rounds must be positive and 0 < min_size <= max_size");
  }
  // The main thread allocates every initial block, so first frees are remote too.
  std::vector<Lineage> lineages(threads);
  FastRandom random(7);
  for (std::uint64_t t = 0; t < threads; ++t) {
    lineages[t].seed = t * 1000 + 1;
    lineages[t].rounds_left = config.rounds;
    for (std::uint64_t s = 0; s < config.slots; ++s) lineages[t].blocks.push_back(std::malloc(random.between(config.min_size, config.max_size)));
  }
  std::atomic<std::uint64_t> operations{0};
  auto start = SteadyClock::now();
  for (auto& lineage : lineages) std::thread(run_round, std::cref(config), &lineage, std::ref(operations)).detach();
  for (auto& lineage : lineages) {
    while (!lineage.finished.load(std::memory_order_acquire)) lineage.finished.wait(false, std::memory_order_acquire);
  }
  double seconds = seconds_between(start, SteadyClock::now());
  for (auto& lineage : lineages) {
    for (void* block : lineage.blocks) std::free(block);
  }
  sink.throughput(static_cast<double>(operations.load()), seconds);
  sink.metric("threads_created", static_cast<double>(threads * config.rounds));
}

}  // namespace

Workload make_larson_workload() {
  Workload workload;
  workload.name = "larson";
  workload.description =
      "Larson-Krishnan server churn: threads free and reallocate random slots of random size (8..1000 B), then hand "
      "their blocks to a new thread and exit";
  workload.ops_unit = "free+malloc";
  workload.params = {
      {"threads", "8", "8", "concurrent threads"},
      {"slots", "1000", "1000", "blocks each thread owns"},
      {"ops_per_round", "20000", "20000", "free+malloc pairs before hand-over"},
      {"rounds", "800", "150", "hand-overs per thread lineage"},
      {"min_size", "8", "8", "smallest block"},
      {"max_size", "1000", "1000", "largest block"},
  };
  workload.run = run_larson;
  return workload;
}

}  // namespace mallard::tool
