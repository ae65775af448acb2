// The report formats. Each renders to a string from the same BenchResults
// (and its Summary), so they can be tested without running anything;
// write_report_directory puts them all in --out DIR.
#pragma once

#include <string>
#include <vector>

#include "report/results.hpp"
#include "report/summary.hpp"

namespace mallard::tool {

// What the terminal shows: throughput and peak-RSS matrices, geometric means, failures.
std::string render_overview_text(const BenchResults& results, const Summary& summary);
// Every benchmark with every measured quantity (report.txt, --detail).
std::string render_detail_text(const BenchResults& results, const Summary& summary);
// One row per allocator x benchmark x repetition.
std::string render_csv(const BenchResults& results);
std::string render_json(const BenchResults& results, const Summary& summary);
// Small multiples: one panel per case of the workload, one bar per allocator
// (median, with a min-max whisker).
std::string render_throughput_chart(const WorkloadInfo& workload, const Summary& summary);
std::string render_peak_rss_chart(const WorkloadInfo& workload, const Summary& summary);
// RSS over time, one line per allocator (first successful repetition).
std::string render_rss_timeline_chart(const WorkloadInfo& workload, const BenchResults& results);
// A self-contained page: tables and the charts inline, no network.
std::string render_html(const BenchResults& results, const Summary& summary);
// BENCHMARKS.md: the command, date, machine, the matrices and how to read them.
std::string render_markdown(const BenchResults& results, const Summary& summary);

// Writes results.csv, results.json, report.txt, report.md, index.html and
// charts/*.svg into the directory (created if needed); returns the paths written.
std::vector<std::string> write_report_directory(const std::string& directory, const BenchResults& results, const Summary& summary);

}  // namespace mallard::tool
