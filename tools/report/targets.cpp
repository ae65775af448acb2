#include "report/targets.hpp"

#include <cmath>

#include "util/text.hpp"

namespace mallard::tool {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Three decimals: the verdict compares the unrounded ratio, and 1.004 printed
// as "1.00" beside "not met" would read as a contradiction.
std::string times(double ratio) { return strprintf("%.3f×", ratio); }
std::string two_decimals(double value) { return strprintf("%.2f", value); }

Verdict verdict_of(bool met) { return met ? Verdict::met : Verdict::not_met; }

TargetCheck not_measured(std::string target) { return {std::move(target), "", kNaN, kNaN, Verdict::not_measured}; }

const CellSummary& mallard_cell(const Summary& summary, const RowSummary& row) { return row.cells[static_cast<std::size_t>(summary.mallard)]; }

// A benchmark where a peer has a result and mallard has none: a failed run
// must not let a per-benchmark target pass by leaving the benchmark out.
bool mallard_missing(const Summary& summary, const RowSummary& row) { return row.best >= 0 && !mallard_cell(summary, row).has_result(); }

// Mallard's ratio against a peer (row.*ratio, the peer row.*peer) on every
// benchmark: met when none is above the bound and none lacks mallard.
TargetCheck every_benchmark_at_most(const Summary& summary, std::string target, double bound, double RowSummary::*ratio, int RowSummary::*peer) {
  const RowSummary* worst = nullptr;
  std::size_t missing = 0;
  for (const auto& row : summary.rows) {
    if (!row.ranked) continue;
    if (mallard_missing(summary, row)) ++missing;
    if (std::isfinite(row.*ratio) && (worst == nullptr || row.*ratio > worst->*ratio)) worst = &row;
  }
  if (worst == nullptr && missing == 0) return not_measured(std::move(target));
  std::string measured;
  if (worst != nullptr) {
    measured = "worst " + times(worst->*ratio) + " (" + worst->benchmark + ", " + summary.allocators[static_cast<std::size_t>(worst->*peer)] + ")";
  }
  if (missing > 0) measured += (measured.empty() ? "" : "; ") + strprintf("mallard has no result on %zu benchmark(s)", missing);
  double value = worst != nullptr ? worst->*ratio : kNaN;
  return {std::move(target), measured, value, bound, verdict_of(missing == 0 && value <= bound)};
}

TargetCheck geomean_at_most(std::string target, double geomean, double bound) {
  if (!std::isfinite(geomean)) return not_measured(std::move(target));
  return {std::move(target), times(geomean), geomean, bound, verdict_of(geomean <= bound)};
}

// A quantity of one workload that issue #4 holds against one named peer.
struct PeerTarget {
  const char* workload;
  const char* peer;
  const char* quantity;
  double (*of)(const CellSummary&);  // NaN when the cell lacks it
  std::string (*format)(double);
  bool lower_is_better;
};

// A workload's own metric (its median); NaN when the cell lacks it.
double metric_median(const CellSummary& cell, const char* name) {
  auto found = cell.metric_medians.find(name);
  return found == cell.metric_medians.end() ? kNaN : found->second;
}

// kv reports RSS / requested bytes as frag_ratio; redis reports Redis's own
// ratio, RSS / used_memory, whose used_memory adds up the allocator's usable
// sizes of the server's blocks (each allocator against its own rounding).
double fragmentation(const CellSummary& cell) { return metric_median(cell, "frag_ratio"); }
double throughput(const CellSummary& cell) { return cell.ops_per_s.median; }

constexpr PeerTarget kPeerTargets[] = {
    {"kv", "jemalloc", "fragmentation (RSS / requested bytes)", fragmentation, two_decimals, true},
    {"redis", "jemalloc", "fragmentation (RSS / used_memory, the server's usable bytes)", fragmentation, two_decimals, true},
    {"iopath", "tcmalloc", "ops/s", throughput, format_si, false},
    {"iopath", "mimalloc", "ops/s", throughput, format_si, false},
};

TargetCheck check_row_against_peer(const Summary& summary, const RowSummary& row, int peer, const PeerTarget& spec, std::string target) {
  double theirs = peer >= 0 ? spec.of(row.cells[static_cast<std::size_t>(peer)]) : kNaN;
  if (!std::isfinite(theirs)) return not_measured(std::move(target));
  const CellSummary& own_cell = mallard_cell(summary, row);
  if (!own_cell.has_result()) return {std::move(target), "mallard has no result", kNaN, theirs, Verdict::not_met};
  double own = spec.of(own_cell);
  if (!std::isfinite(own)) return not_measured(std::move(target));
  bool met = spec.lower_is_better ? own < theirs : own > theirs;
  return {std::move(target), "mallard " + spec.format(own) + ", " + spec.peer + " " + spec.format(theirs), own, theirs, verdict_of(met)};
}

void check_against_peer(const Summary& summary, const PeerTarget& spec, std::vector<TargetCheck>& checks) {
  std::string relation = std::string(" ") + spec.quantity + (spec.lower_is_better ? " below " : " above ") + spec.peer + "'s";
  int peer = summary.index_of(spec.peer);
  bool ran = false;
  for (const auto& row : summary.rows) {
    if (row.workload != spec.workload) continue;
    ran = true;
    checks.push_back(check_row_against_peer(summary, row, peer, spec, row.benchmark + relation));
  }
  if (!ran) checks.push_back(not_measured(spec.workload + relation));
}

// Debian's redis-server after the RPUSHes (list-max-listpack-size 1): server
// RSS at most 0.95x the lowest of these peers.
constexpr const char* kRedisRssPeers[] = {"jemalloc", "tcmalloc", "mimalloc", "tbbmalloc"};
constexpr double kRedisRssBound = 0.95;

void check_redis_rss(const Summary& summary, std::vector<TargetCheck>& checks) {
  std::string target = "redis: server RSS after the RPUSHes ≤ 0.95× the lowest of jemalloc, tcmalloc, mimalloc, tbbmalloc";
  for (const auto& row : summary.rows) {
    if (row.workload != "redis") continue;
    double lowest = kNaN;
    const char* lowest_peer = nullptr;
    for (const char* peer : kRedisRssPeers) {
      int index = summary.index_of(peer);
      double rss = index >= 0 ? metric_median(row.cells[static_cast<std::size_t>(index)], "rss_bytes_rpush") : kNaN;
      if (std::isfinite(rss) && (lowest_peer == nullptr || rss < lowest)) lowest = rss, lowest_peer = peer;
    }
    double own = metric_median(mallard_cell(summary, row), "rss_bytes_rpush");
    if (lowest_peer == nullptr || !std::isfinite(own)) break;
    double ratio = own / lowest;
    std::string measured = "mallard " + format_bytes(own) + ", " + lowest_peer + " " + format_bytes(lowest) + ": " + times(ratio);
    checks.push_back({std::move(target), measured, ratio, kRedisRssBound, verdict_of(ratio <= kRedisRssBound)});
    return;
  }
  checks.push_back(not_measured(std::move(target)));
}

// rss-return: RSS below 10% of the peak within mallard's purge delay, which
// the workload reads from the library (purge_delay_ms), in every case.
void check_memory_return(const Summary& summary, std::vector<TargetCheck>& checks) {
  bool ran = false;
  for (const auto& row : summary.rows) {
    if (row.workload != "rss-return") continue;
    ran = true;
    std::string target = row.benchmark + ": RSS below 10% of the peak within the purge delay";
    const CellSummary& own = mallard_cell(summary, row);
    double ms = metric_median(own, "ms_to_10pct"), delay = metric_median(own, "purge_delay_ms");
    if (!std::isfinite(ms) || !std::isfinite(delay)) {
      checks.push_back(own.has_result() ? not_measured(std::move(target))
                                        : TargetCheck{std::move(target), "mallard has no result", kNaN, kNaN, Verdict::not_met});
      continue;
    }
    checks.push_back({std::move(target), strprintf("%.0f ms, purge delay %.0f ms", ms, delay), ms, delay, verdict_of(ms <= delay)});
  }
  if (!ran) checks.push_back(not_measured("rss-return: RSS below 10% of the peak within the purge delay"));
}

}  // namespace

const char* verdict_text(Verdict verdict) {
  switch (verdict) {
    case Verdict::met: return "met";
    case Verdict::not_met: return "not met";
    case Verdict::not_measured: break;
  }
  return "not measured in this run";
}

std::string describe(const TargetCheck& check) { return check.measured.empty() ? check.target : check.target + ": " + check.measured; }

std::vector<TargetCheck> check_targets(const Summary& summary) {
  if (!summary.compares_mallard()) return {};
  std::vector<TargetCheck> checks;
  checks.push_back(every_benchmark_at_most(summary, "time ≤ 1.00× the best peer on every benchmark", 1.00, &RowSummary::time_to_best_peer,
                                           &RowSummary::best_peer));
  checks.push_back(geomean_at_most("time geomean ≤ 0.95× the best peer", summary.geomean_time_to_best_peer, 0.95));
  checks.push_back(geomean_at_most("peak RSS geomean ≤ 1.00× the lowest peer", summary.geomean_rss_to_least_peer, 1.00));
  checks.push_back(every_benchmark_at_most(summary, "peak RSS ≤ 1.25× the lowest peer on every benchmark", 1.25, &RowSummary::rss_to_least_peer,
                                           &RowSummary::least_rss_peer));
  for (const PeerTarget& spec : kPeerTargets) check_against_peer(summary, spec, checks);
  check_redis_rss(summary, checks);
  check_memory_return(summary, checks);
  return checks;
}

}  // namespace mallard::tool
