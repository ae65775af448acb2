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

}  // namespace

Summary summarize(const BenchResults& results) {
  Summary summary;
  for (const auto& allocator : results.allocators) summary.allocators.push_back(allocator.name);
  int glibc = -1;
  for (std::size_t a = 0; a < summary.allocators.size(); ++a) {
    if (summary.allocators[a] == "glibc") glibc = static_cast<int>(a);
  }

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
      for (const auto& allocator : summary.allocators) {
        std::vector<const RunRecord*> runs;
        for (const auto& run : results.runs) {
          if (run.workload == workload.name && run.case_name == case_name && run.allocator == allocator) runs.push_back(&run);
        }
        row.cells.push_back(summarize_cell(runs));
      }
      for (std::size_t a = 0; a < row.cells.size(); ++a) {
        const auto& cell = row.cells[a];
        if (!cell.has_result()) continue;
        if (row.best < 0 || cell.ops_per_s.median > row.cells[static_cast<std::size_t>(row.best)].ops_per_s.median) row.best = static_cast<int>(a);
        if (row.least_rss < 0 || cell.peak_rss.median < row.cells[static_cast<std::size_t>(row.least_rss)].peak_rss.median) {
          row.least_rss = static_cast<int>(a);
        }
      }
      for (auto& cell : row.cells) {
        if (!cell.has_result()) continue;
        cell.ratio_to_best = cell.ops_per_s.median / row.cells[static_cast<std::size_t>(row.best)].ops_per_s.median;
        cell.rss_ratio_to_least = cell.peak_rss.median / row.cells[static_cast<std::size_t>(row.least_rss)].peak_rss.median;
        if (glibc >= 0 && row.cells[static_cast<std::size_t>(glibc)].has_result()) {
          cell.ratio_to_glibc = cell.ops_per_s.median / row.cells[static_cast<std::size_t>(glibc)].ops_per_s.median;
        }
      }
      summary.rows.push_back(std::move(row));
    }
  }

  // Per workload, then across workloads (see the header for why).
  std::size_t allocators = summary.allocators.size();
  std::vector<std::vector<double>> per_workload_best(allocators), per_workload_glibc(allocators), per_workload_rss(allocators);
  for (const auto& workload : results.workloads) {
    std::vector<std::vector<double>> best(allocators), to_glibc(allocators), rss(allocators);
    for (const auto& row : summary.rows) {
      if (row.workload != workload.name) continue;
      bool complete = true;
      for (const auto& cell : row.cells) complete = complete && cell.has_result();
      if (!complete) continue;
      ++summary.rows_in_geomean;
      for (std::size_t a = 0; a < allocators; ++a) {
        best[a].push_back(row.cells[a].ratio_to_best);
        to_glibc[a].push_back(row.cells[a].ratio_to_glibc);
        rss[a].push_back(row.cells[a].rss_ratio_to_least);
      }
    }
    for (std::size_t a = 0; a < allocators; ++a) {
      if (best[a].empty()) continue;
      per_workload_best[a].push_back(geometric_mean(best[a]));
      per_workload_glibc[a].push_back(geometric_mean(to_glibc[a]));
      per_workload_rss[a].push_back(geometric_mean(rss[a]));
    }
  }
  for (std::size_t a = 0; a < allocators; ++a) {
    summary.geomean_to_best.push_back(geometric_mean(per_workload_best[a]));
    summary.geomean_to_glibc.push_back(glibc >= 0 ? geometric_mean(per_workload_glibc[a]) : kNaN);
    summary.geomean_rss_to_least.push_back(geometric_mean(per_workload_rss[a]));
  }
  return summary;
}

}  // namespace mallard::tool
