// Runs the benchmark matrix: every (workload case, allocator) pair R times,
// allocators interleaved within each case and repetitions outermost
// (case1: A B C, case2: B C A, ..., then repetition 2), so slow drift of the
// machine hits every allocator alike, and the order rotates from case to case
// and repetition to repetition, so that no allocator always runs right after
// the same neighbour or always last. Each run is a fresh child process.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "alloc/allocator_catalog.hpp"
#include "report/results.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

struct BenchRow {
  const Workload* workload;
  std::string case_name;
  ParamValues params;
  std::string benchmark() const { return case_name.empty() ? workload->name : workload->name + ":" + case_name; }
};

struct RunSettings {
  std::string self_executable;  // the mallard binary, re-executed as `mallard __child`
  std::string log_directory;    // empty: no logs
  double timeout_seconds = 600;
};

// One repetition of one row under one allocator.
RunRecord run_benchmark_once(const BenchRow& row, const AllocatorSpec& allocator, int repetition, const RunSettings& settings);

struct BenchPlan {
  std::vector<AllocatorSpec> allocators;
  std::vector<BenchRow> rows;
  int repetitions = 3;
};

// Called before and after each run, e.g. to draw progress.
struct RunObserver {
  std::function<void(std::size_t job, std::size_t jobs, const BenchRow&, const AllocatorSpec&, int repetition)> before;
  std::function<void(std::size_t job, const RunRecord&)> after;
};

std::vector<RunRecord> run_plan(const BenchPlan& plan, const RunSettings& settings, const RunObserver& observer);

// The order of `allocators` allocators for row `row` of repetition
// `repetition` (1-based): a rotation by row + repetition - 1, so over
// `allocators` consecutive repetitions every allocator takes every position
// once.
std::vector<std::size_t> allocator_order(std::size_t allocators, std::size_t row, int repetition);

// The mallard executable this process runs from.
std::string self_executable_path();

}  // namespace mallard::tool
