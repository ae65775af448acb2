// churn: random churn across threads, after mimalloc-bench's mstress. Each
// thread keeps a number of slots of live blocks; each step frees a random
// slot's block and allocates one of a random size in its place, log-uniform
// from 8 bytes to the case's largest, writing a byte in each of its pages;
// every few steps the thread swaps that block with one of a set of places
// all threads share, so that some frees are of blocks other threads
// allocated. Sizes of every class mix in one heap and leave it in random
// order, as a long-running server's do: what the matrix's one-size and
// one-pattern workloads do not show. The 256K case keeps a few hundred
// blocks of 128-256 KiB live and freed at once (large blocks in mallard).
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

struct ChurnCase {
  std::uint64_t largest;  // bytes
  std::uint64_t slots;    // live blocks a thread
};

// "64k:10000,256k:2000": the largest block and the slots a thread, per case.
std::vector<ChurnCase> parse_cases(const std::string& text) {
  std::vector<ChurnCase> cases;
  for (const auto& item : split(text, ',')) {
    auto entry = parse_size_count(item);
    if (!entry || entry->bytes < 16 || entry->count == 0) {
      throw std::invalid_argument("churn: bad cases entry '" + item + "' (want LARGEST:SLOTS, LARGEST at least 16)");
    }
    cases.push_back({entry->bytes, entry->count});
  }
  return cases;
}

constexpr double kSmallest = 8;

void run_churn(const Params& params, const std::string& case_name, const RunContext&, MetricSink& sink) {
  auto threads = static_cast<unsigned>(params.count("threads"));
  auto steps = params.count("steps");
  auto swap_every = params.count("swap_every");
  auto shared_places = params.count("shared");
  if (threads == 0 || steps == 0 || swap_every == 0 || shared_places == 0) {
    throw std::invalid_argument("churn: threads, steps, swap_every and shared must be positive");
  }
  ChurnCase chosen{};
  for (const auto& candidate : parse_cases(params.text("cases"))) {
    if (size_label(candidate.largest) == case_name) chosen = candidate;
  }
  if (chosen.largest == 0) throw std::invalid_argument("churn: no case " + case_name);
  double log2_span = std::log2(static_cast<double>(chosen.largest) / kSmallest);

  std::vector<std::atomic<void*>> shared(shared_places);
  std::barrier start_line(threads + 1);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      FastRandom random(t * 7919 + 17);
      std::vector<void*> slots(chosen.slots, nullptr);
      start_line.arrive_and_wait();
      for (std::uint64_t i = 0; i < steps; ++i) {
        std::size_t k = random.below(slots.size());
        std::free(slots[k]);
        auto bytes = static_cast<std::size_t>(kSmallest * std::exp2(random.unit() * log2_span));
        void* block = std::malloc(bytes);
        if (block == nullptr) std::abort();
        touch_pages(block, bytes);
        slots[k] = block;
        if (i % swap_every == 0) slots[k] = shared[random.below(shared.size())].exchange(block, std::memory_order_acq_rel);
      }
      for (void* block : slots) std::free(block);
    });
  }
  // Clock first, then release the workers (see sizes.cpp).
  auto start = SteadyClock::now();
  start_line.arrive_and_wait();
  workers.clear();
  double seconds = seconds_between(start, SteadyClock::now());
  for (auto& place : shared) std::free(place.load(std::memory_order_relaxed));
  sink.throughput(static_cast<double>(steps) * threads, seconds);
  sink.metric("threads", threads);
}

}  // namespace

Workload make_churn_workload() {
  Workload workload;
  workload.name = "churn";
  workload.description =
      "mstress-like random churn: T threads each free a random one of their live blocks and allocate one of a "
      "random size (log-uniform to the case's largest), touching its pages; some blocks change threads";
  workload.ops_unit = "free+malloc";
  workload.params = {
      {"threads", "4", "4", "threads churning at once"},
      {"steps", "1M", "100k", "free+malloc steps a thread"},
      {"cases", "64k:10000,256k:2000", "64k:2000,256k:500", "LARGEST:SLOTS per case: the largest size, live blocks a thread"},
      {"swap_every", "16", "16", "every this many steps a thread swaps its new block with a shared place"},
      {"shared", "4096", "1024", "places the threads share"},
  };
  workload.cases = [](const Params& params) {
    std::vector<std::string> cases;
    for (const auto& entry : parse_cases(params.text("cases"))) cases.push_back(size_label(entry.largest));
    return cases;
  };
  workload.run = run_churn;
  return workload;
}

}  // namespace mallard::tool
