// Issue #4's targets for mallard, checked against a run. Every verdict is
// computed from the summary's numbers, never written by hand, and a target the
// run cannot decide (it lacks the workload or the allocator) says so rather
// than passing.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "report/summary.hpp"

namespace mallard::tool {

enum class Verdict { met, not_met, not_measured };

struct TargetCheck {
  std::string target;    // what issue #4 asks, e.g. "time ≤ 1.00× the best peer on every benchmark"
  std::string measured;  // what this run measured, e.g. "worst 1.070× (sizes:32B, tcmalloc)"; empty if nothing
  double value = std::numeric_limits<double>::quiet_NaN();  // mallard's number
  double bound = std::numeric_limits<double>::quiet_NaN();  // the limit, or the named peer's number
  Verdict verdict = Verdict::not_measured;
};

// "met", "not met", "not measured in this run".
const char* verdict_text(Verdict verdict);
// "target: measured" (the target alone when nothing was measured), which
// every report prints before the verdict.
std::string describe(const TargetCheck& check);

// In the order: time per benchmark and its geometric mean, peak RSS
// likewise, kv and redis fragmentation against jemalloc, iopath throughput
// against tcmalloc and mimalloc, redis-server RSS after the RPUSHes against
// the lowest of four peers, and memory back within the purge delay
// (rss-return). Empty unless summary.compares_mallard().
std::vector<TargetCheck> check_targets(const Summary& summary);

}  // namespace mallard::tool
