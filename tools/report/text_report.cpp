// The plain-text reports: the terminal overview and report.txt's detail.
#include <cmath>

#include "report/tables.hpp"
#include "report/targets.hpp"
#include "report/writers.hpp"
#include "util/text.hpp"

namespace mallard::tool {

namespace {

std::string headline(const BenchResults& results, const Summary& summary) {
  return strprintf("mallard bench: %zu allocators x %zu benchmarks x %d repetitions%s, %s on %s (%u CPUs)\n",
                   summary.allocators.size(), summary.rows.size(), results.repetitions, results.quick ? " (--quick)" : "",
                   format_seconds(results.duration_seconds).c_str(), results.machine.cpu_model.c_str(), results.machine.cpus);
}

std::string targets_text(const Summary& summary) {
  if (!summary.compares_mallard()) return "";
  std::string out = "\nmallard against the best peer (issue #4 targets; time = peer's ops/s / mallard's, below 1.00 is faster):\n";
  out += peer_table(summary).plain();
  for (const auto& check : check_targets(summary)) out += "  " + describe(check) + " — " + verdict_text(check.verdict) + "\n";
  return out;
}

}  // namespace

std::string render_overview_text(const BenchResults& results, const Summary& summary) {
  std::string out = headline(results, summary);
  out += "Medians over repetitions. ×best = median / best allocator's median (1.00 is the fastest); ×least = peak RSS /\n"
         "smallest peak RSS (1.00 uses least memory). Geometric means weigh each workload equally.\n\n";
  out += throughput_matrix(summary).plain();
  out += "\n";
  out += peak_rss_matrix(summary).plain();
  out += targets_text(summary);
  for (const auto& note : results.notes) out += "note: " + note + "\n";
  if (!summary.failures.empty()) {
    out += strprintf("\n%zu FAILED runs (not results):\n", summary.failures.size());
    for (const auto& failure : summary.failures) out += "  " + failure + "\n";
  }
  return out;
}

std::string render_detail_text(const BenchResults& results, const Summary& summary) {
  std::string out = headline(results, summary);
  out += "Command: " + results.command_line + "\nStarted: " + results.started_at + "\n\n";
  out += allocator_table(results).plain() + "\n";
  for (const auto& row : summary.rows) {
    std::string description;
    for (const auto& workload : results.workloads) {
      if (workload.name == row.workload) description = workload.description;
    }
    out += row.benchmark + "  [" + row.ops_unit + "]  " + description + "\n";
    out += detail_table(row, summary).plain("  ") + "\n";
  }
  out += parameter_table(results).plain();
  return out;
}

}  // namespace mallard::tool
