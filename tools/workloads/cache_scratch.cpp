// cache-scratch: Hoard's passive false-sharing test (Berger et al., ASPLOS
// 2000), from its description. The main thread allocates one small object per
// thread, back to back, so they share cache lines, and hands one to each
// thread. Each thread frees it and then allocates, writes and frees objects of
// the same size; an allocator that gives the freed object back to that thread
// keeps it writing into a line other threads are writing too.
#include <barrier>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "workloads/false_sharing.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

void run_cache_scratch(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  auto threads = params.count("threads");
  auto iterations = params.count("iterations");
  auto object_size = params.size("object_size");
  auto repetitions = params.count("repetitions");
  if (threads == 0 || object_size == 0) throw std::invalid_argument("cache-scratch: threads and object_size must be positive");
  std::vector<void*> handed_out(threads);
  for (auto& object : handed_out) object = std::malloc(object_size);
  std::barrier start_line(static_cast<std::ptrdiff_t>(threads + 1));
  std::vector<std::jthread> workers;
  for (std::uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start_line.arrive_and_wait();
      std::free(handed_out[t]);
      write_objects(iterations, object_size, repetitions);
    });
  }
  start_line.arrive_and_wait();
  auto start = SteadyClock::now();
  workers.clear();
  double seconds = seconds_between(start, SteadyClock::now());
  sink.throughput(static_cast<double>(threads * iterations), seconds);
}

}  // namespace

Workload make_cache_scratch_workload() {
  Workload workload;
  workload.name = "cache-scratch";
  workload.description =
      "Hoard passive false sharing: objects allocated together by one thread are freed by workers, which then "
      "allocate, write and free objects of that size";
  workload.ops_unit = "objects";
  workload.params = {
      {"threads", "4", "4", "threads"},
      {"iterations", "80k", "20k", "objects per thread"},
      {"object_size", "8", "8", "object bytes"},
      {"repetitions", "5000", "5000", "writes of each byte per object"},
  };
  workload.run = run_cache_scratch;
  return workload;
}

}  // namespace mallard::tool
