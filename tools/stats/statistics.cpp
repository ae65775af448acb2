#include "stats/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mallard::tool {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  p = std::clamp(p, 0.0, 100.0);
  double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  auto lower = static_cast<std::size_t>(std::floor(rank));
  std::size_t upper = std::min(lower + 1, values.size() - 1);
  double fraction = rank - static_cast<double>(lower);
  return values[lower] + (values[upper] - values[lower]) * fraction;
}

double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  double log_sum = 0;
  for (double value : values) {
    if (!(value > 0) || !std::isfinite(value)) return kNaN;
    log_sum += std::log(value);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

Spread spread_of(const std::vector<double>& values) {
  if (values.empty()) return {kNaN, kNaN, kNaN, 0};
  auto [min, max] = std::minmax_element(values.begin(), values.end());
  return {median(values), *min, *max, values.size()};
}

}  // namespace mallard::tool
