// Writes every report format into the --out directory.
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "report/writers.hpp"

namespace mallard::tool {

namespace {

void write_file(const std::filesystem::path& path, const std::string& content, std::vector<std::string>& written) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
  written.push_back(path.string());
}

}  // namespace

std::vector<std::string> write_report_directory(const std::string& directory, const BenchResults& results, const Summary& summary) {
  std::filesystem::path root(directory);
  std::filesystem::create_directories(root / "charts");
  std::vector<std::string> written;
  write_file(root / "results.csv", render_csv(results), written);
  write_file(root / "results.json", render_json(results, summary), written);
  write_file(root / "report.txt", render_overview_text(results, summary) + "\n" + render_detail_text(results, summary), written);
  write_file(root / "report.md", render_markdown(results, summary), written);
  for (const auto& workload : results.workloads) {
    write_file(root / "charts" / (workload.name + "-throughput.svg"), render_throughput_chart(workload, summary), written);
    write_file(root / "charts" / (workload.name + "-peak-rss.svg"), render_peak_rss_chart(workload, summary), written);
    if (workload.chart_rss_over_time) {
      write_file(root / "charts" / (workload.name + "-rss-over-time.svg"), render_rss_timeline_chart(workload, results), written);
    }
  }
  write_file(root / "index.html", render_html(results, summary), written);
  return written;
}

}  // namespace mallard::tool
