#include "run/child_protocol.hpp"

#include "util/text.hpp"

namespace mallard::tool {

bool apply_child_line(std::string_view line, RunRecord& record, bool& saw_done) {
  auto space = line.find(' ');
  std::string_view keyword = line.substr(0, space);
  std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  auto words = split(rest, ' ');
  auto number_at = [&](std::size_t index) { return index < words.size() ? parse_number(words[index]) : std::nullopt; };

  if (keyword == "done") {
    saw_done = true;
  } else if (keyword == "provider") {
    record.malloc_provider = std::string(rest);
  } else if (keyword == "error") {
    record.error = record.error.empty() ? std::string(rest) : record.error + "; " + std::string(rest);
  } else if (keyword == "throughput" && number_at(0) && number_at(1)) {
    record.operations = *number_at(0);
    record.seconds = *number_at(1);
    record.ops_per_s = record.seconds > 0 ? record.operations / record.seconds : 0;
  } else if (keyword == "peak_rss" && number_at(0)) {
    // A workload that measured another process's peak (redis) keeps it.
    if (!record.metrics.contains("measured_peak_rss_bytes")) record.peak_rss_bytes = static_cast<std::uint64_t>(*number_at(0));
  } else if (keyword == "final_rss" && number_at(0)) {
    // A workload that measured another process's final RSS (redis) keeps it.
    if (!record.metrics.contains("measured_final_rss_bytes")) record.final_rss_bytes = static_cast<std::uint64_t>(*number_at(0));
  } else if (keyword == "metric" && number_at(1)) {
    record.metrics[words[0]] = *number_at(1);
  } else if (keyword == "override" && number_at(1)) {
    double value = *number_at(1);
    if (words[0] == "peak_rss_bytes") record.peak_rss_bytes = static_cast<std::uint64_t>(value);
    else if (words[0] == "final_rss_bytes") record.final_rss_bytes = static_cast<std::uint64_t>(value);
    else if (words[0] == "user_s") record.user_seconds = value;
    else if (words[0] == "sys_s") record.sys_seconds = value;
    else return false;
    record.metrics["measured_" + words[0]] = value;
  } else {
    return false;
  }
  return true;
}

}  // namespace mallard::tool
