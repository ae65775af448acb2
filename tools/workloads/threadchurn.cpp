// threadchurn: threads that live briefly, as in thread-per-request servers
// and task pools that grow and shrink. Each round starts a set of threads;
// each allocates a burst of small and medium blocks, frees most of them, and
// leaves the rest to be freed by the next round's threads after it has
// exited. It measures what thread-cache setup and teardown cost, and how much
// memory dead threads' caches keep (final RSS).
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

void run_threadchurn(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  auto rounds = params.count("rounds");
  auto threads_per_round = params.count("threads");
  auto allocations = params.count("allocations");
  auto kept = params.count("kept");
  auto min_size = params.size("min_size"), max_size = params.size("max_size");
  if (threads_per_round == 0 || kept > allocations || min_size == 0 || min_size > max_size) {
    throw std::invalid_argument("threadchurn: threads > 0, kept <= allocations, 0 < min_size <= max_size");
  }
  // Blocks each thread leaves behind, freed by the thread in the same slot next round.
  std::vector<std::vector<void*>> left_behind(threads_per_round);
  auto start = SteadyClock::now();
  for (std::uint64_t round = 0; round < rounds; ++round) {
    std::vector<std::jthread> threads;
    for (std::uint64_t t = 0; t < threads_per_round; ++t) {
      threads.emplace_back([&, t, round] {
        for (void* block : left_behind[t]) std::free(block);
        left_behind[t].clear();
        FastRandom random(round * 1000 + t + 1);
        std::vector<void*> blocks(allocations);
        for (auto& block : blocks) {
          std::uint64_t bytes = random.between(min_size, max_size);
          block = std::malloc(bytes);
          if (block == nullptr) std::abort();
          static_cast<unsigned char*>(block)[0] = 1;
        }
        for (std::uint64_t i = kept; i < allocations; ++i) std::free(blocks[i]);
        blocks.resize(kept);
        left_behind[t] = std::move(blocks);
      });
    }
  }
  double seconds = seconds_between(start, SteadyClock::now());
  for (auto& blocks : left_behind) {
    for (void* block : blocks) std::free(block);
  }
  sink.throughput(static_cast<double>(rounds * threads_per_round), seconds);
  sink.metric("allocations_per_s", static_cast<double>(rounds * threads_per_round * allocations) / seconds);
}

}  // namespace

Workload make_threadchurn_workload() {
  Workload workload;
  workload.name = "threadchurn";
  workload.description =
      "short-lived threads: each allocates a burst (16 B..4 KiB), frees most, leaves some for the next round's "
      "threads to free after it exits";
  workload.ops_unit = "threads";
  workload.params = {
      {"rounds", "400", "60", "rounds of thread creation"},
      {"threads", "8", "8", "threads per round"},
      {"allocations", "2000", "2000", "blocks each thread allocates"},
      {"kept", "200", "200", "blocks each thread leaves to the next round"},
      {"min_size", "16", "16", "smallest block"},
      {"max_size", "4k", "4k", "largest block"},
  };
  workload.run = run_threadchurn;
  return workload;
}

}  // namespace mallard::tool
