// index.html: one self-contained page (styles and SVG charts inline, no
// scripts, no network) with the overview, the charts and the detail tables.
#include "report/tables.hpp"
#include "report/writers.hpp"
#include "util/text.hpp"

namespace mallard::tool {

namespace {

constexpr const char* kStyle = R"(<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f0f0f0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.chart { margin: 0.5em 0 1.5em 0; overflow-x: auto; }
.meta td { text-align: left; }
.failed { color: #b00; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
</style>
)";

}  // namespace

std::string render_html(const BenchResults& results, const Summary& summary) {
  const MachineInfo& machine = results.machine;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>mallard bench " +
                     escape_markup(results.started_at) + "</title>\n" + kStyle + "</head>\n<body>\n";
  html += "<h1>mallard bench</h1>\n<table class=\"meta\">\n";
  auto meta = [&](const std::string& name, const std::string& value) { html += "<tr><th>" + name + "</th><td>" + escape_markup(value) + "</td></tr>\n"; };
  meta("command", results.command_line);
  meta("started", results.started_at);
  meta("duration", format_seconds(results.duration_seconds));
  meta("repetitions", std::to_string(results.repetitions) + (results.quick ? " (--quick)" : ""));
  meta("machine", machine.cpu_model + ", " + std::to_string(machine.cpus) + " CPUs, " + format_bytes(static_cast<double>(machine.memory_bytes)) +
                      " RAM, " + machine.os + ", " + machine.kernel + ", glibc " + machine.glibc_version);
  html += "</table>\n";

  html += "<h2>How to read this</h2>\n<p>Every run is a fresh process with the allocator preloaded (the process proves "
          "which library serves its <code>malloc</code>; a run where the preload did not take is reported as a failure, "
          "not a result). Numbers are medians over the repetitions, which ran interleaved (A B C A B C...). "
          "<b>×best</b> is the median throughput divided by the best allocator's for that benchmark (1.00 = fastest); "
          "<b>×least</b> is peak RSS divided by the smallest peak RSS (1.00 = least memory). The geometric means combine "
          "each workload's cases first, so every workload counts once. The <code>redis</code> benchmark measures the server "
          "process (RSS from /proc, CPU from wait4); Debian links redis-server against jemalloc, so its glibc row preloads "
          "mallard's glibc shim, and INFO's allocator fields describe jemalloc whatever serves malloc.</p>\n";

  html += "<h2>Throughput</h2>\n" + throughput_matrix(summary).html();
  html += "<h2>Peak RSS</h2>\n" + peak_rss_matrix(summary).html();
  if (!summary.failures.empty()) {
    html += "<h2 class=\"failed\">Failed runs</h2>\n<ul class=\"failed\">\n";
    for (const auto& failure : summary.failures) html += "<li>" + escape_markup(failure) + "</li>\n";
    html += "</ul>\n";
  }
  if (!results.notes.empty()) {
    html += "<h2>Notes</h2>\n<ul>\n";
    for (const auto& note : results.notes) html += "<li>" + escape_markup(note) + "</li>\n";
    html += "</ul>\n";
  }

  html += "<h2>Allocators</h2>\n" + allocator_table(results).html();
  for (const auto& workload : results.workloads) {
    html += "<h2 id=\"" + escape_markup(workload.name) + "\">" + escape_markup(workload.name) + "</h2>\n<p>" + escape_markup(workload.description) + "</p>\n";
    html += "<div class=\"chart\">" + render_throughput_chart(workload, summary) + "</div>\n";
    html += "<div class=\"chart\">" + render_peak_rss_chart(workload, summary) + "</div>\n";
    if (workload.chart_rss_over_time) html += "<div class=\"chart\">" + render_rss_timeline_chart(workload, results) + "</div>\n";
    for (const auto& row : summary.rows) {
      if (row.workload != workload.name) continue;
      html += "<h3>" + escape_markup(row.benchmark) + " <small>(" + escape_markup(row.ops_unit) + ")</small></h3>\n" + detail_table(row, summary).html();
    }
  }
  html += "<h2>Parameters</h2>\n" + parameter_table(results).html();
  html += "<p>Raw data: <a href=\"results.csv\">results.csv</a>, <a href=\"results.json\">results.json</a>; per-run logs in "
          "<code>logs/</code>.</p>\n</body>\n</html>\n";
  return html;
}

}  // namespace mallard::tool
