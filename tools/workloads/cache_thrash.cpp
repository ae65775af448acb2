// cache-thrash: Hoard's active false-sharing test (Berger et al., ASPLOS
// 2000), from its description. Each thread allocates a small object, writes
// it many times and frees it, over and over. An allocator that hands objects
// on the same cache line to different threads makes the writes bounce the
// line between cores.
#include <barrier>
#include <stdexcept>
#include <thread>
#include <vector>

#include "workloads/false_sharing.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

void run_cache_thrash(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  auto threads = params.count("threads");
  auto iterations = params.count("iterations");
  auto object_size = params.size("object_size");
  auto repetitions = params.count("repetitions");
  if (threads == 0 || object_size == 0) throw std::invalid_argument("cache-thrash: threads and object_size must be positive");
  std::barrier start_line(static_cast<std::ptrdiff_t>(threads + 1));
  std::vector<std::jthread> workers;
  for (std::uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      start_line.arrive_and_wait();
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

Workload make_cache_thrash_workload() {
  Workload workload;
  workload.name = "cache-thrash";
  workload.description = "Hoard active false sharing: each thread allocates a small object, writes it many times, frees it";
  workload.ops_unit = "objects";
  workload.params = {
      {"threads", "4", "4", "threads"},
      {"iterations", "80k", "20k", "objects per thread"},
      {"object_size", "8", "8", "object bytes"},
      {"repetitions", "5000", "5000", "writes of each byte per object"},
  };
  workload.run = run_cache_thrash;
  return workload;
}

}  // namespace mallard::tool
