// The tables every report shares (terminal, report.txt, BENCHMARKS.md,
// index.html), built once from the summary so the formats cannot disagree.
#pragma once

#include "report/results.hpp"
#include "report/summary.hpp"
#include "util/text_table.hpp"

namespace mallard::tool {

// Benchmarks x allocators: median ops/s and its ratio to the best, plus the geometric means.
TextTable throughput_matrix(const Summary& summary);
// Benchmarks x allocators: median peak RSS and its ratio to the smallest.
TextTable peak_rss_matrix(const Summary& summary);
// Benchmarks: mallard's time and peak RSS against the best peer's (issue #4),
// plus their geometric means. Only for a summary that compares_mallard().
TextTable peer_table(const Summary& summary);
// One benchmark, one line per allocator: every measured quantity with min-max,
// then the workload's own metric columns (medians).
TextTable detail_table(const RowSummary& row, const Summary& summary);
// Allocators with the file and version that was measured.
TextTable allocator_table(const BenchResults& results);
// Workload parameters, one line per workload.
TextTable parameter_table(const BenchResults& results);

}  // namespace mallard::tool
