// Text helpers shared by the command line, the workloads and the reports:
// splitting, trimming, and human-readable units (sizes use binary multiples
// like fio, counts use decimal multiples).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mallard::tool {

std::vector<std::string> split(std::string_view text, char separator);
std::string_view trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);

// "512", "4k", "32K", "1m", "1MiB", "2g" -> bytes (k = 1024, as fio reads them).
std::optional<std::uint64_t> parse_size(std::string_view text);
// "1000", "100k", "2M", "1.5M" -> count (k = 1000).
std::optional<std::uint64_t> parse_count(std::string_view text);
std::optional<double> parse_number(std::string_view text);
// "32:4M", "64k:10000" -> a size and a count, as the workloads' lists of
// cases write them (sizes' blocks, churn's cases).
struct SizeCount {
  std::uint64_t bytes;
  std::uint64_t count;
};
std::optional<SizeCount> parse_size_count(std::string_view item);

// 32 -> "32B", 4096 -> "4K", 1048576 -> "1M": compact labels for case names.
std::string size_label(std::uint64_t bytes);
// 1536 -> "1.5 MiB".
std::string format_bytes(double bytes);
// 41234567 -> "41.2M": throughput with an SI prefix.
std::string format_si(double value);
// 0.0123 -> "12.3 ms", 2.5 -> "2.50 s".
std::string format_seconds(double seconds);
// 125 -> "2m05s": for the progress ETA.
std::string format_clock(double seconds);
// "a<b & \"c\"" -> "a&lt;b &amp; &quot;c&quot;": text for HTML and SVG,
// in elements and in quoted attributes.
std::string escape_markup(std::string_view text);
// printf into a std::string.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mallard::tool
