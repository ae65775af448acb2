// sizes: the Ceph STL-allocator experiment (seed 003). Many threads (32 in the
// original) each allocate a block of one size, touch it and free it, over and
// over; one case per block size. The original ran 100M iterations for 32 B and
// 4 KiB, 2M for 32 and 64 KiB and 200K for 1 MiB; the defaults keep those
// proportions at a scale that fits the default matrix.
#include <barrier>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "util/text.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

struct BlockCase {
  std::uint64_t bytes;
  std::uint64_t operations;
};

// "32:4M,4k:4M,1m:8k": block size and total alloc/touch/free cycles per case.
std::vector<BlockCase> parse_blocks(const std::string& text) {
  std::vector<BlockCase> blocks;
  for (const auto& item : split(text, ',')) {
    auto entry = parse_size_count(item);
    if (!entry || entry->bytes == 0) throw std::invalid_argument("sizes: bad blocks entry '" + item + "' (want SIZE:COUNT)");
    blocks.push_back({entry->bytes, entry->count});
  }
  return blocks;
}

void run_sizes(const Params& params, const std::string& case_name, const RunContext&, MetricSink& sink) {
  auto threads = static_cast<unsigned>(params.count("threads"));
  if (threads == 0) throw std::invalid_argument("sizes: threads must be at least 1");
  BlockCase block{};
  for (const auto& candidate : parse_blocks(params.text("blocks"))) {
    if (size_label(candidate.bytes) == case_name) block = candidate;
  }
  if (block.bytes == 0) throw std::invalid_argument("sizes: no block size for case " + case_name);

  std::uint64_t per_thread = block.operations / threads;
  std::barrier start_line(threads + 1);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, bytes = block.bytes] {
      start_line.arrive_and_wait();
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        void* p = std::malloc(bytes);
        if (p == nullptr) std::abort();
        touch_pages(p, bytes);
        keep_alive(p);
        std::free(p);
      }
    });
  }
  // The clock starts before this thread releases the workers: started after,
  // it missed whatever they ran before this thread got the CPU back.
  auto start = SteadyClock::now();
  start_line.arrive_and_wait();
  for (auto& worker : workers) worker.join();
  double seconds = seconds_between(start, SteadyClock::now());
  sink.throughput(static_cast<double>(per_thread * threads), seconds);
  sink.metric("block_bytes", static_cast<double>(block.bytes));
  sink.metric("threads", threads);
}

}  // namespace

Workload make_sizes_workload() {
  Workload workload;
  workload.name = "sizes";
  workload.description =
      "Ceph STL-allocator experiment: T threads allocate, touch (one byte per page) and free "
      "blocks of one size, one case per size";
  workload.ops_unit = "alloc+touch+free";
  workload.params = {
      {"threads", "32", "32", "threads allocating at once"},
      {"blocks", "32:150M,4k:75M,32k:20M,64k:10M,1m:600k", "32:32M,4k:16M,32k:4M,64k:2M,1m:120k",
       "SIZE:CYCLES per case, total over all threads"},
  };
  workload.cases = [](const Params& params) {
    std::vector<std::string> cases;
    for (const auto& block : parse_blocks(params.text("blocks"))) cases.push_back(size_label(block.bytes));
    return cases;
  };
  workload.run = run_sizes;
  return workload;
}

}  // namespace mallard::tool
