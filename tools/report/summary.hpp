// Turns the raw runs into what the reports print: per benchmark and
// allocator, the median and min-max over repetitions of throughput, time,
// RSS and CPU; the ratio of the median throughput to the best allocator's
// and to glibc's; and per allocator a geometric mean of those ratios.
//
// The geometric mean weighs workloads equally: the ratios of a workload's
// cases are first combined into one geometric mean per workload (mixed has
// sixteen cases, kv one), and those are combined across workloads. Only
// benchmarks where every allocator has a result take part, so the means are
// comparable with each other.
//
// Issue #4 states mallard's targets against its best *peer* (every other
// allocator of the run), so each row also compares mallard with the fastest
// and the leanest peer, and those ratios get geometric means of their own.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "report/results.hpp"
#include "stats/statistics.hpp"

namespace mallard::tool {

struct CellSummary {
  std::size_t ok_runs = 0;
  std::size_t failed_runs = 0;
  Spread ops_per_s{};
  Spread seconds{};
  Spread peak_rss{};
  Spread final_rss{};
  Spread user_seconds{};
  Spread sys_seconds{};
  std::map<std::string, double> metric_medians;
  double ratio_to_best;      // median ops/s / best median ops/s; 1 = best
  double ratio_to_glibc;     // median ops/s / glibc's median ops/s
  double rss_ratio_to_least; // median peak RSS / smallest median peak RSS; 1 = least
  bool has_result() const { return ok_runs > 0; }
};

struct RowSummary {
  std::string workload;
  std::string case_name;
  std::string benchmark;
  std::string ops_unit;
  std::vector<MetricColumn> metric_columns;  // the workload's own columns in the detail table
  bool ranked = true;                        // counts in the geomeans and targets (Workload::ranked)
  std::vector<CellSummary> cells;           // indexed like Summary::allocators
  int best = -1;                   // index of the highest median throughput
  int least_rss = -1;              // index of the smallest median peak RSS
  // Mallard against its peers; -1 and NaN when mallard or every peer lacks a result.
  int best_peer = -1;       // the peer with the highest median throughput
  int least_rss_peer = -1;  // the peer with the smallest median peak RSS
  // Mallard's time per operation / the best peer's (= best peer's ops/s /
  // mallard's); below 1 mallard is faster.
  double time_to_best_peer = std::numeric_limits<double>::quiet_NaN();
  double rss_to_least_peer = std::numeric_limits<double>::quiet_NaN();  // mallard's median peak RSS / least peer's
  // Repetition by repetition: in how many of the repetitions where both
  // have a result mallard's throughput beat the best peer's. Runs of one
  // repetition are interleaved, so a machine that changes speed during the
  // bench moves both; the medians may come from different phases.
  int reps_ahead_of_best_peer = 0;
  int reps_paired_with_best_peer = 0;
  // The same for peak RSS against the leanest peer: in how many repetitions
  // mallard's peak was below that peer's.
  int reps_leaner_than_least_rss_peer = 0;
  int reps_paired_with_least_rss_peer = 0;
};

struct Summary {
  std::vector<std::string> allocators;
  std::vector<RowSummary> rows;
  std::vector<double> geomean_to_best;   // per allocator
  std::vector<double> geomean_to_glibc;  // per allocator; NaN without glibc
  std::vector<double> geomean_rss_to_least;
  std::size_t rows_in_geomean = 0;
  int mallard = -1;  // index of mallard; -1 when it did not run
  double geomean_time_to_best_peer = std::numeric_limits<double>::quiet_NaN();
  double geomean_rss_to_least_peer = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> failures;  // "benchmark allocator #rep: error"
  // The allocator's index in `allocators`; -1 when it did not run.
  int index_of(const std::string& allocator) const;
  // Whether the run has mallard and at least one peer to hold it against.
  bool compares_mallard() const { return mallard >= 0 && allocators.size() > 1; }
};

Summary summarize(const BenchResults& results);

}  // namespace mallard::tool
