// cache-scratch: Hoard's passive false-sharing test (Berger et al., ASPLOS
// 2000), from its description. The main thread allocates one small object per
// thread, back to back, so they share cache lines, and hands one to each
// thread. Each thread frees it and then allocates, writes and frees objects of
// the same size; an allocator that gives the freed object back to that thread
// keeps it writing into a line other threads are writing too.

#include "workloads/false_sharing.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

void run_cache_scratch(const Params& params, const std::string&, const RunContext&, MetricSink& sink) {
  run_false_sharing(params, "cache-scratch", true, sink);
}

}  // namespace

Workload make_cache_scratch_workload() {
  Workload workload;
  workload.name = "cache-scratch";
  workload.description =
      "Hoard passive false sharing: objects allocated together by one thread are freed by workers, which then "
      "allocate, write and free objects of that size";
  workload.ops_unit = "objects";
  workload.params = false_sharing_params();
  workload.run = run_cache_scratch;
  return workload;
}

}  // namespace mallard::tool
