#include "util/text.hpp"

#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace mallard::tool {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::optional<double> parse_number(std::string_view text) {
  std::string copy(trim(text));
  if (copy.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

namespace {

// Splits "1.5M" into 1.5 and "M"; the suffix is returned lower-cased.
std::optional<std::pair<double, std::string>> number_and_suffix(std::string_view text) {
  text = trim(text);
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) ++digits;
  if (digits == 0) return std::nullopt;
  auto number = parse_number(text.substr(0, digits));
  if (!number || *number < 0) return std::nullopt;
  std::string suffix;
  for (char c : text.substr(digits)) suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::pair{*number, suffix};
}

std::optional<std::uint64_t> scaled(double number, double multiplier) {
  double value = number * multiplier;
  if (value > 1.8e19 || value != std::floor(value)) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto parsed = number_and_suffix(text);
  if (!parsed) return std::nullopt;
  auto [number, suffix] = *parsed;
  if (suffix.size() > 1 && (suffix.ends_with("ib") || suffix.ends_with("b"))) {
    suffix = suffix.substr(0, suffix.ends_with("ib") ? suffix.size() - 2 : suffix.size() - 1);
  } else if (suffix == "b") {
    suffix.clear();
  }
  double multiplier = 0;
  if (suffix.empty()) multiplier = 1;
  else if (suffix == "k") multiplier = 1024.0;
  else if (suffix == "m") multiplier = 1024.0 * 1024;
  else if (suffix == "g") multiplier = 1024.0 * 1024 * 1024;
  else if (suffix == "t") multiplier = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  return scaled(number, multiplier);
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  auto parsed = number_and_suffix(text);
  if (!parsed) return std::nullopt;
  auto [number, suffix] = *parsed;
  double multiplier = 0;
  if (suffix.empty()) multiplier = 1;
  else if (suffix == "k") multiplier = 1e3;
  else if (suffix == "m") multiplier = 1e6;
  else if (suffix == "g") multiplier = 1e9;
  else return std::nullopt;
  return scaled(number, multiplier);
}

std::optional<SizeCount> parse_size_count(std::string_view item) {
  auto colon = item.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto bytes = parse_size(item.substr(0, colon));
  auto count = parse_count(item.substr(colon + 1));
  if (!bytes || !count) return std::nullopt;
  return SizeCount{*bytes, *count};
}

std::string size_label(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && std::fabs(bytes) >= 1024) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return strprintf("%.0f B", bytes);
  return strprintf(std::fabs(bytes) < 10 ? "%.2f %s" : (std::fabs(bytes) < 100 ? "%.1f %s" : "%.0f %s"), bytes, kUnits[unit]);
}

std::string format_si(double value) {
  if (!std::isfinite(value)) return "-";
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T"};
  int prefix = 0;
  while (prefix < 4 && std::fabs(value) >= 1000) {
    value /= 1000;
    ++prefix;
  }
  const char* format = std::fabs(value) < 10 ? "%.2f%s" : (std::fabs(value) < 100 ? "%.1f%s" : "%.0f%s");
  return strprintf(format, value, kPrefixes[prefix]);
}

std::string escape_markup(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 1e-3) return strprintf("%.0f us", seconds * 1e6);
  if (seconds < 1) return strprintf(seconds < 0.01 ? "%.2f ms" : "%.1f ms", seconds * 1e3);
  return strprintf(seconds < 10 ? "%.2f s" : "%.1f s", seconds);
}

std::string format_clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  long total = std::lround(seconds);
  if (total >= 3600) return strprintf("%ldh%02ldm", total / 3600, (total % 3600) / 60);
  return strprintf("%ldm%02lds", total / 60, total % 60);
}

std::string strprintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
  if (length > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  return text;
}

}  // namespace mallard::tool
