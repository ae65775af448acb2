#include "report/summary.hpp"

#include <cmath>
#include <limits>

namespace mallard::tool {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

CellSummary summarize_cell(const std::vector<const RunRecord*>& runs) {
  CellSummary cell{};
  cell.ratio_to_best = cell.ratio_to_glibc = cell.rss_ratio_to_least = kNaN;
  std::vector<double> ops, seconds, peak, final_rss, user, sys;
  std::map<std::string, std::vector<double>> metrics;
  for (const RunRecord* run : runs) {
    if (!run->ok) {
      ++cell.failed_runs;
      continue;
    }
    ++cell.ok_runs;
    ops.push_back(run->ops_per_s);
    seconds.push_back(run->seconds);
    peak.push_back(static_cast<double>(run->peak_rss_bytes));
    final_rss.push_back(static_cast<double>(run->final_rss_bytes));
    user.push_back(run->user_seconds);
    sys.push_back(run->sys_seconds);
    for (const auto& [name, value] : run->metrics) metrics[name].push_back(value);
  }
  cell.ops_per_s = spread_of(ops);
  cell.seconds = spread_of(seconds);
  cell.peak_rss = spread_of(peak);
  cell.final_rss = spread_of(final_rss);
  cell.user_seconds = spread_of(user);
  cell.sys_seconds = spread_of(sys);
  for (auto& [name, values] : metrics) cell.metric_medians[name] = median(values);
  return cell;
}

bool faster(const CellSummary& a, const CellSummary& b) { return a.ops_per_s.median > b.ops_per_s.median; }
bool leaner(const CellSummary& a, const CellSummary& b) { return a.peak_rss.median < b.peak_rss.median; }

// The index of the cell with a result that `better` prefers to every other,
// leaving out `excluded` (mallard, when choosing its best peer); -1 if none.
template <typename Better>
int pick(const std::vector<CellSummary>& cells, Better better, int excluded = -1) {
  int chosen = -1;
  for (std::size_t a = 0; a < cells.size(); ++a) {
    if (static_cast<int>(a) == excluded || !cells[a].has_result()) continue;
    if (chosen < 0 || better(cells[a], cells[static_cast<std::size_t>(chosen)])) chosen = static_cast<int>(a);
  }
  return chosen;
}

const CellSummary& cell_at(const RowSummary& row, int allocator) { return row.cells[static_cast<std::size_t>(allocator)]; }

void rate_against_best(RowSummary& row, int glibc) {
  row.best = pick(row.cells, faster);
  row.least_rss = pick(row.cells, leaner);
  for (auto& cell : row.cells) {
    if (!cell.has_result()) continue;
    cell.ratio_to_best = cell.ops_per_s.median / cell_at(row, row.best).ops_per_s.median;
    cell.rss_ratio_to_least = cell.peak_rss.median / cell_at(row, row.least_rss).peak_rss.median;
    if (glibc >= 0 && cell_at(row, glibc).has_result()) cell.ratio_to_glibc = cell.ops_per_s.median / cell_at(row, glibc).ops_per_s.median;
  }
}

// Pairs mallard's runs with a peer's of the same repetition: how many pairs
// there are, and in how many `wins(mine, theirs)` holds.
template <typename Wins>
void pair_by_repetition(const std::vector<const RunRecord*>& mine, const std::vector<const RunRecord*>& theirs, Wins wins, int& won,
                        int& paired) {
  for (const RunRecord* own : mine) {
    for (const RunRecord* peer : theirs) {
      if (!own->ok || !peer->ok || peer->repetition != own->repetition) continue;
      ++paired;
      if (wins(*own, *peer)) ++won;
    }
  }
}

// `runs` holds each allocator's runs of the row, indexed like row.cells.
void rate_against_peers(RowSummary& row, int mallard, const std::vector<std::vector<const RunRecord*>>& runs) {
  if (mallard < 0 || !cell_at(row, mallard).has_result()) return;
  row.best_peer = pick(row.cells, faster, mallard);
  row.least_rss_peer = pick(row.cells, leaner, mallard);
  if (row.best_peer < 0) return;  // no peer has a result
  const CellSummary& own = cell_at(row, mallard);
  row.time_to_best_peer = cell_at(row, row.best_peer).ops_per_s.median / own.ops_per_s.median;
  row.rss_to_least_peer = own.peak_rss.median / cell_at(row, row.least_rss_peer).peak_rss.median;
  const auto& own_runs = runs[static_cast<std::size_t>(mallard)];
  pair_by_repetition(
      own_runs, runs[static_cast<std::size_t>(row.best_peer)], [](const RunRecord& a, const RunRecord& b) { return a.ops_per_s > b.ops_per_s; },
      row.reps_ahead_of_best_peer, row.reps_paired_with_best_peer);
  pair_by_repetition(
      own_runs, runs[static_cast<std::size_t>(row.least_rss_peer)],
      [](const RunRecord& a, const RunRecord& b) { return a.peak_rss_bytes < b.peak_rss_bytes; }, row.reps_leaner_than_least_rss_peer,
      row.reps_paired_with_least_rss_peer);
}

// A row the geometric means count: a ranked workload's, with a result for
// every allocator.
bool counts_in_geomean(const RowSummary& row) {
  if (!row.ranked) return false;
  for (const auto& cell : row.cells) {
    if (!cell.has_result()) return false;
  }
  return true;
}

// The geometric mean of value(row) over the rows that count (see above), each workload's
// rows combined first (see the header for why).
template <typename Value>
double geomean_by_workload(const std::vector<WorkloadInfo>& workloads, const std::vector<RowSummary>& rows, Value value) {
  std::vector<double> per_workload;
  for (const auto& workload : workloads) {
    std::vector<double> values;
    for (const auto& row : rows) {
      if (row.workload == workload.name && counts_in_geomean(row)) values.push_back(value(row));
    }
    if (!values.empty()) per_workload.push_back(geometric_mean(values));
  }
  return geometric_mean(per_workload);
}

}  // namespace

int Summary::index_of(const std::string& allocator) const {
  for (std::size_t a = 0; a < allocators.size(); ++a) {
    if (allocators[a] == allocator) return static_cast<int>(a);
  }
  return -1;
}

Summary summarize(const BenchResults& results) {
  Summary summary;
  for (const auto& allocator : results.allocators) summary.allocators.push_back(allocator.name);
  int glibc = summary.index_of("glibc");
  summary.mallard = summary.index_of("mallard");

  for (const auto& run : results.runs) {
    if (!run.ok) summary.failures.push_back(run.benchmark() + " " + run.allocator + " #" + std::to_string(run.repetition) + ": " + run.error);
  }

  for (const auto& workload : results.workloads) {
    for (const auto& case_name : workload.cases) {
      RowSummary row;
      row.workload = workload.name;
      row.case_name = case_name;
      row.benchmark = case_name.empty() ? workload.name : workload.name + ":" + case_name;
      row.ops_unit = workload.ops_unit;
      row.metric_columns = workload.metric_columns;
      row.ranked = workload.ranked;
      std::vector<std::vector<const RunRecord*>> runs_by_allocator;
      for (const auto& allocator : summary.allocators) {
        std::vector<const RunRecord*>& runs = runs_by_allocator.emplace_back();
        for (const auto& run : results.runs) {
          if (run.workload == workload.name && run.case_name == case_name && run.allocator == allocator) runs.push_back(&run);
        }
        row.cells.push_back(summarize_cell(runs));
      }
      rate_against_best(row, glibc);
      rate_against_peers(row, summary.mallard, runs_by_allocator);
      summary.rows.push_back(std::move(row));
    }
  }

  for (const auto& row : summary.rows) summary.rows_in_geomean += counts_in_geomean(row) ? 1 : 0;
  for (std::size_t a = 0; a < summary.allocators.size(); ++a) {
    auto mean_of = [&](double CellSummary::*ratio) {
      return geomean_by_workload(results.workloads, summary.rows, [&](const RowSummary& row) { return row.cells[a].*ratio; });
    };
    summary.geomean_to_best.push_back(mean_of(&CellSummary::ratio_to_best));
    summary.geomean_to_glibc.push_back(glibc >= 0 ? mean_of(&CellSummary::ratio_to_glibc) : kNaN);
    summary.geomean_rss_to_least.push_back(mean_of(&CellSummary::rss_ratio_to_least));
  }
  if (summary.compares_mallard()) {
    auto mean_of = [&](double RowSummary::*ratio) {
      return geomean_by_workload(results.workloads, summary.rows, [&](const RowSummary& row) { return row.*ratio; });
    };
    summary.geomean_time_to_best_peer = mean_of(&RowSummary::time_to_best_peer);
    summary.geomean_rss_to_least_peer = mean_of(&RowSummary::rss_to_least_peer);
  }
  return summary;
}

}  // namespace mallard::tool
