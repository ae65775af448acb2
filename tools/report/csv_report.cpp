// results.csv: one row per run, with every metric any run reported as a column.
#include <set>

#include "report/writers.hpp"
#include "util/text.hpp"

namespace mallard::tool {

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string render_csv(const BenchResults& results) {
  std::set<std::string> metric_names;
  for (const auto& run : results.runs) {
    for (const auto& [name, value] : run.metrics) metric_names.insert(name);
  }
  std::string out =
      "workload,case,benchmark,allocator,repetition,ok,error,operations,seconds,ops_per_s,wall_seconds,user_seconds,sys_seconds,"
      "peak_rss_bytes,final_rss_bytes,malloc_provider";
  for (const auto& name : metric_names) {
    out += ',';  // appended separately: GCC 12 -Wrestrict false positive on "," + std::string
    out += csv_field(name);
  }
  out += "\n";
  for (const auto& run : results.runs) {
    out += csv_field(run.workload) + "," + csv_field(run.case_name) + "," + csv_field(run.benchmark()) + "," + csv_field(run.allocator) + "," +
           std::to_string(run.repetition) + "," + (run.ok ? "1" : "0") + "," + csv_field(run.error) + "," +
           strprintf("%.0f,%.6f,%.2f,%.6f,%.6f,%.6f,%llu,%llu,", run.operations, run.seconds, run.ops_per_s, run.wall_seconds,
                     run.user_seconds, run.sys_seconds, static_cast<unsigned long long>(run.peak_rss_bytes),
                     static_cast<unsigned long long>(run.final_rss_bytes)) +
           csv_field(run.malloc_provider);
    for (const auto& name : metric_names) {
      auto found = run.metrics.find(name);
      out += ',';
      if (found != run.metrics.end()) out += strprintf("%.10g", found->second);
    }
    out += "\n";
  }
  return out;
}

}  // namespace mallard::tool
