#include "report/tables.hpp"

#include <cmath>

#include "util/text.hpp"

namespace mallard::tool {

namespace {

std::string ratio(double value) { return std::isfinite(value) ? strprintf("%.2f", value) : "-"; }

std::string failed_or_missing(const CellSummary& cell) { return cell.failed_runs > 0 ? "FAILED" : "n/a"; }

std::vector<std::string> header_with_allocators(const std::string& first, const Summary& summary) {
  std::vector<std::string> header{first};
  for (const auto& allocator : summary.allocators) header.push_back(allocator);
  return header;
}

// "1.23 s (1.20-1.31)" style: median and range, using the given formatter.
template <typename Format>
std::string with_range(const Spread& spread, Format format) {
  if (spread.count == 0) return "-";
  if (spread.count == 1 || spread.min == spread.max) return format(spread.median);
  return format(spread.median) + " (" + format(spread.min) + "–" + format(spread.max) + ")";
}

// A workload's own metric column: the median, "-" when missing, "never (>W)"
// when it lies past the window it was watched for.
std::string metric_column_cell(const MetricColumn& column, const CellSummary& cell) {
  auto format = [&](double value) { return column.format == "bytes" ? format_bytes(value) : strprintf(column.format.c_str(), value); };
  auto found = cell.metric_medians.find(column.metric);
  if (found == cell.metric_medians.end()) return "-";
  if (!column.never_above.empty()) {
    auto window = cell.metric_medians.find(column.never_above);
    if (window != cell.metric_medians.end() && found->second > window->second) return "never (>" + format(window->second) + ")";
  }
  return format(found->second);
}

// For a workload whose peak RSS follows one of its metrics
// (MetricColumn::explains_peak_rss): "; deepest queue 53 against 4", mallard's
// median first, then the leanest peer's. Empty otherwise.
std::string peak_rss_context(const RowSummary& row, const Summary& summary) {
  if (row.least_rss_peer < 0) return "";
  for (const auto& column : row.metric_columns) {
    if (!column.explains_peak_rss) continue;
    const CellSummary& own = row.cells[static_cast<std::size_t>(summary.mallard)];
    const CellSummary& peer = row.cells[static_cast<std::size_t>(row.least_rss_peer)];
    return "; " + column.header + " " + metric_column_cell(column, own) + " against " + metric_column_cell(column, peer);
  }
  return "";
}

// A row left out of the geometric means and targets is marked (see the
// reports' "How to read it").
std::string ranked_name(const RowSummary& row) { return row.ranked ? row.benchmark : row.benchmark + " (unranked)"; }

}  // namespace

TextTable throughput_matrix(const Summary& summary) {
  TextTable table(header_with_allocators("throughput (ops/s, ×best)", summary));
  for (const auto& row : summary.rows) {
    std::vector<std::string> cells{ranked_name(row)};
    for (const auto& cell : row.cells) {
      cells.push_back(cell.has_result() ? format_si(cell.ops_per_s.median) + " " + ratio(cell.ratio_to_best) : failed_or_missing(cell));
    }
    table.add_row(cells);
  }
  table.add_separator();
  std::vector<std::string> best{"geomean ×best"}, glibc{"geomean ×glibc"};
  for (std::size_t a = 0; a < summary.allocators.size(); ++a) {
    best.push_back(ratio(summary.geomean_to_best[a]));
    glibc.push_back(ratio(summary.geomean_to_glibc[a]));
  }
  table.add_row(best);
  table.add_row(glibc);
  return table;
}

TextTable peak_rss_matrix(const Summary& summary) {
  TextTable table(header_with_allocators("peak RSS (×least)", summary));
  for (const auto& row : summary.rows) {
    std::vector<std::string> cells{ranked_name(row)};
    for (const auto& cell : row.cells) {
      cells.push_back(cell.has_result() ? format_bytes(cell.peak_rss.median) + " " + ratio(cell.rss_ratio_to_least) : failed_or_missing(cell));
    }
    table.add_row(cells);
  }
  table.add_separator();
  std::vector<std::string> geomean{"geomean ×least"};
  for (double value : summary.geomean_rss_to_least) geomean.push_back(ratio(value));
  table.add_row(geomean);
  return table;
}

TextTable peer_table(const Summary& summary) {
  TextTable table({"benchmark", "time ×best peer", "faster in reps", "peak RSS ×lowest peer", "leaner in reps"});
  auto against = [&](double value, int peer, const std::string& context = "") {
    return peer >= 0 ? ratio(value) + " (" + summary.allocators[static_cast<std::size_t>(peer)] + context + ")" : std::string("-");
  };
  auto of = [](int won, int paired) { return paired > 0 ? std::to_string(won) + " of " + std::to_string(paired) : std::string("-"); };
  for (const auto& row : summary.rows) {
    const CellSummary& mallard = row.cells[static_cast<std::size_t>(summary.mallard)];
    if (!mallard.has_result()) {
      table.add_row({ranked_name(row), failed_or_missing(mallard), "-", failed_or_missing(mallard), "-"});
      continue;
    }
    table.add_row({ranked_name(row), against(row.time_to_best_peer, row.best_peer), of(row.reps_ahead_of_best_peer, row.reps_paired_with_best_peer),
                   against(row.rss_to_least_peer, row.least_rss_peer, peak_rss_context(row, summary)),
                   of(row.reps_leaner_than_least_rss_peer, row.reps_paired_with_least_rss_peer)});
  }
  table.add_separator();
  table.add_row({"geomean", ratio(summary.geomean_time_to_best_peer), "", ratio(summary.geomean_rss_to_least_peer), ""});
  return table;
}

TextTable detail_table(const RowSummary& row, const Summary& summary) {
  bool has_latency = false;
  for (const auto& cell : row.cells) has_latency = has_latency || cell.metric_medians.contains("lat_p99_us");
  std::vector<std::string> header = {"allocator", "ops/s (min–max)", "×best", "×glibc", "time", "peak RSS", "final RSS", "user", "sys"};
  if (has_latency) header.insert(header.end(), {"p50 µs", "p99 µs", "p99.9 µs"});
  for (const auto& column : row.metric_columns) header.push_back(column.header);
  TextTable table(header);
  for (std::size_t a = 0; a < row.cells.size(); ++a) {
    const auto& cell = row.cells[a];
    std::string name = summary.allocators[a] + (static_cast<int>(a) == row.best ? " *" : "");
    if (!cell.has_result()) {
      table.add_row({name, failed_or_missing(cell)});
      continue;
    }
    std::vector<std::string> cells = {name,
                                      with_range(cell.ops_per_s, format_si),
                                      ratio(cell.ratio_to_best),
                                      ratio(cell.ratio_to_glibc),
                                      with_range(cell.seconds, format_seconds),
                                      format_bytes(cell.peak_rss.median),
                                      format_bytes(cell.final_rss.median),
                                      format_seconds(cell.user_seconds.median),
                                      format_seconds(cell.sys_seconds.median)};
    auto metric = [&](const char* name_of_metric, const char* format) {
      auto found = cell.metric_medians.find(name_of_metric);
      return found == cell.metric_medians.end() ? std::string("-") : strprintf(format, found->second);
    };
    if (has_latency) {
      cells.push_back(metric("lat_p50_us", "%.1f"));
      cells.push_back(metric("lat_p99_us", "%.1f"));
      cells.push_back(metric("lat_p999_us", "%.1f"));
    }
    for (const auto& column : row.metric_columns) cells.push_back(metric_column_cell(column, cell));
    if (cell.failed_runs > 0) cells[0] += strprintf(" (%zu failed)", cell.failed_runs);
    table.add_row(cells);
  }
  return table;
}

TextTable allocator_table(const BenchResults& results) {
  TextTable table({"allocator", "version", "library", "origin"});
  for (const auto& allocator : results.allocators) {
    std::string library = allocator.path.empty() ? "(libc, no preload)" : allocator.path;
    for (const auto& variable : allocator.environment) library += " with " + variable;
    table.add_row({allocator.name, allocator.version, library, allocator.origin});
  }
  return table;
}

TextTable parameter_table(const BenchResults& results) {
  TextTable table({"workload", "parameters"});
  for (const auto& workload : results.workloads) {
    std::string text;
    for (const auto& [name, value] : workload.params) text += (text.empty() ? "" : " ") + name + "=" + value;
    table.add_row({workload.name, text});
  }
  return table;
}

}  // namespace mallard::tool
