// A workload is a module: a name, a description, named parameters (each with
// a default and a --quick value), the cases it splits into, and a run
// function that does the work inside a child process and reports metrics.
// Adding a workload is one file that defines a make_*_workload() function and
// one line in registry.cpp.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/results.hpp"

namespace mallard::tool {

struct ParamSpec {
  std::string name;
  std::string default_value;
  std::string quick_value;  // what --quick uses: about a second for the whole workload
  std::string help;
};

using ParamValues = std::map<std::string, std::string>;

// Typed, checked access to a workload's resolved parameters; a missing or
// malformed value throws std::invalid_argument naming the parameter.
class Params {
 public:
  explicit Params(ParamValues values) : values_(std::move(values)) {}
  const std::string& text(const std::string& name) const;
  std::uint64_t size(const std::string& name) const;   // 4k = 4096
  std::uint64_t count(const std::string& name) const;  // 4k = 4000
  double number(const std::string& name) const;
  const ParamValues& values() const { return values_; }

 private:
  ParamValues values_;
};

// What the child knows about the allocator it runs under; most workloads only
// allocate, but `redis` starts a server under the same allocator.
struct RunContext {
  std::string allocator_name;
  std::string preload_path;     // empty for glibc
  std::string glibc_shim_path;  // preload that routes a jemalloc-linked program to glibc malloc
};

// Where a workload reports results. Throughput is the headline number; other
// metrics land in the CSV/JSON and, for the known ones (latency percentiles)
// and those the workload lists in metric_columns, in the tables. A workload
// that measures another process (redis) reports that process's peak/final
// RSS and CPU with override().
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void throughput(double operations, double seconds) = 0;
  virtual void metric(std::string_view name, double value) = 0;
  // Names: peak_rss_bytes, final_rss_bytes, user_s, sys_s.
  virtual void override_process_metric(std::string_view name, double value) = 0;
  // A human-readable progress line (goes to the run's log file).
  virtual void log(std::string_view line) = 0;
};

struct Workload {
  std::string name;
  std::string description;
  std::string ops_unit;  // what one "op" of the throughput is
  std::vector<ParamSpec> params;
  // The cases the runner schedules as separate child processes; one unnamed case by default.
  std::function<std::vector<std::string>(const Params&)> cases;
  std::function<void(const Params&, const std::string& case_name, const RunContext&, MetricSink&)> run;
  // Empty when the workload can run here, else why not (e.g. redis-server missing).
  std::function<std::string()> unavailable_reason;
  // Draw the RSS-over-time chart for this workload.
  bool chart_rss_over_time = false;
  // Metrics of this workload that the detail tables show as columns.
  std::vector<MetricColumn> metric_columns;
  // False for a check whose throughput is incidental to what it measures
  // (rss-return times how fast freed memory goes back; its "throughput" is how
  // fast the frees ran, which an allocator that returns nothing wins): shown
  // in every table, left out of the geometric means and the per-benchmark
  // targets.
  bool ranked = true;
};

const std::vector<Workload>& all_workloads();
const Workload* find_workload(std::string_view name);

// Defaults (or --quick values) with name=value overrides applied; throws
// std::invalid_argument for a parameter the workload does not have.
ParamValues resolve_params(const Workload& workload, bool quick, const ParamValues& overrides);
std::vector<std::string> cases_of(const Workload& workload, const ParamValues& values);

}  // namespace mallard::tool
