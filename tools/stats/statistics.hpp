// Summary statistics over repetitions: median, percentiles, geometric mean
// and the median with its min-max spread, which is what every report prints.
#pragma once

#include <cstddef>
#include <vector>

namespace mallard::tool {

// Median of the values (mean of the two middle ones for an even count); NaN when empty.
double median(std::vector<double> values);
// Percentile p in [0, 100] with linear interpolation between closest ranks
// (the "type 7" definition used by R, NumPy and spreadsheets); NaN when empty.
double percentile(std::vector<double> values, double p);
// Geometric mean; NaN when empty or when any value is not positive, because a
// ratio of zero or less has no meaning in a geometric mean.
double geometric_mean(const std::vector<double>& values);

struct Spread {
  double median;
  double min;
  double max;
  std::size_t count;
};
// NaN fields and count 0 when empty.
Spread spread_of(const std::vector<double>& values);

}  // namespace mallard::tool
