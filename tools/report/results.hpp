// What a bench run produces: one RunRecord per allocator x workload case x
// repetition, plus the context (machine, allocator versions, parameters) that
// makes the numbers reproducible. Every report writer reads only this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mallard::tool {

struct RssSample {
  double seconds;  // since the child started
  std::uint64_t bytes;
};

struct RunRecord {
  std::string workload;
  std::string case_name;  // empty for single-case workloads
  std::string allocator;
  int repetition = 0;  // 1-based
  bool ok = false;
  std::string error;  // why the run is not a result
  double operations = 0;
  double seconds = 0;  // the workload's measured phase
  double ops_per_s = 0;
  double wall_seconds = 0;  // the whole child process
  double user_seconds = 0;
  double sys_seconds = 0;
  std::uint64_t peak_rss_bytes = 0;   // the child's VmHWM (else wait4's ru_maxrss) or the runner's highest sample of its RSS, whichever is higher, unless the workload measured another process
  std::uint64_t final_rss_bytes = 0;  // reported by the child from /proc/self/statm at the end
  std::string malloc_provider;        // the object the child proved malloc comes from
  std::map<std::string, double> metrics;
  std::vector<RssSample> rss_series;
  std::string log_file;

  std::string benchmark() const { return case_name.empty() ? workload : workload + ":" + case_name; }
};

struct AllocatorInfo {
  std::string name;
  std::string path;  // empty for glibc
  std::string version;
  std::string origin;
  std::vector<std::string> environment;  // VAR=VALUE set in its runs (--env)
};

// A metric a workload reports (sink.metric) that the detail tables show in a
// column of its own, with the median over repetitions.
struct MetricColumn {
  std::string metric;  // the name the workload reports
  std::string header;
  std::string format = "%.2f";  // printf format of the value, or "bytes"
  // The name of a metric holding the end of the window this one was watched
  // for: a value above it means "did not happen within the window" and shows
  // as "never (>window)". Empty when the metric always happens.
  std::string never_above;
  // The workload's peak RSS follows this metric (xmalloc: the most batches
  // its queue held at once, every block of them live). The Targets table
  // shows its median for mallard and for the leanest peer beside the peak
  // RSS ratio, so that a ratio that compares different amounts of live
  // memory says so.
  bool explains_peak_rss = false;
};

struct WorkloadInfo {
  std::string name;
  std::string description;
  std::string ops_unit;
  std::map<std::string, std::string> params;
  std::vector<std::string> cases;
  bool chart_rss_over_time = false;
  std::vector<MetricColumn> metric_columns;
  bool ranked = true;  // see Workload::ranked
};

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  unsigned cpus = 0;
  std::uint64_t memory_bytes = 0;
  std::string kernel;
  std::string os;
  std::string glibc_version;
  std::string compiler;
  std::string mallard_version;
};

struct BenchResults {
  std::string started_at;  // ISO 8601, local time with offset
  std::string command_line;
  double duration_seconds = 0;
  int repetitions = 0;
  bool quick = false;
  MachineInfo machine;
  std::vector<AllocatorInfo> allocators;  // report column order
  std::vector<WorkloadInfo> workloads;    // report row order
  std::vector<RunRecord> runs;
  std::vector<std::string> notes;  // skipped allocators/workloads and why
};

}  // namespace mallard::tool
