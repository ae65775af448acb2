// cache-thrash: Hoard's active false-sharing test (Berger et al., ASPLOS
// 2000), from its description. Each thread allocates a small object, writes
// it many times and frees it, over and over. An allocator that hands objects
// on the same cache line to different threads makes the writes bounce the
// line between cores.

#include "workloads/false_sharing.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

void run_cache_thrash(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  run_false_sharing(params, "cache-thrash", false, sink);
}

}  // namespace

Workload make_cache_thrash_workload() {
  Workload workload;
  workload.name = "cache-thrash";
  workload.description = "Hoard active false sharing: each thread allocates a small object, writes it many times, frees it";
  workload.ops_unit = "objects";
  workload.params = false_sharing_params();
  workload.run = run_cache_thrash;
  return workload;
}

}  // namespace mallard::tool
