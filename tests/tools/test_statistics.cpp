// Median, percentiles, geometric mean and the latency histogram against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/latency_histogram.hpp"
#include "stats/statistics.hpp"

namespace mallard::tool {
namespace {

TEST(Statistics, Median) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(Statistics, PercentileInterpolatesBetweenClosestRanks) {
  std::vector<double> one_to_ten{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(one_to_ten, 100), 10);
  EXPECT_DOUBLE_EQ(percentile(one_to_ten, 50), 5.5);
  EXPECT_NEAR(percentile(one_to_ten, 90), 9.1, 1e-12);   // rank 8.1
  EXPECT_NEAR(percentile(one_to_ten, 25), 3.25, 1e-12);  // rank 2.25
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 150), 2);          // clamped
}

TEST(Statistics, GeometricMean) {
  EXPECT_NEAR(geometric_mean({1, 4, 16}), 4, 1e-12);
  EXPECT_NEAR(geometric_mean({2, 8}), 4, 1e-12);
  EXPECT_NEAR(geometric_mean({0.5, 2}), 1, 1e-12);
  EXPECT_TRUE(std::isnan(geometric_mean({})));
  EXPECT_TRUE(std::isnan(geometric_mean({1, 0})));
  EXPECT_TRUE(std::isnan(geometric_mean({1, -2})));
}

TEST(Statistics, SpreadIsMedianMinMax) {
  Spread spread = spread_of({5, 1, 9, 3});
  EXPECT_DOUBLE_EQ(spread.median, 4);
  EXPECT_DOUBLE_EQ(spread.min, 1);
  EXPECT_DOUBLE_EQ(spread.max, 9);
  EXPECT_EQ(spread.count, 4u);
  EXPECT_EQ(spread_of({}).count, 0u);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram histogram;
  for (std::uint64_t v = 1; v <= 10; ++v) histogram.record(v);
  EXPECT_EQ(histogram.count(), 10u);
  EXPECT_DOUBLE_EQ(histogram.percentile(50), 5);
  EXPECT_DOUBLE_EQ(histogram.percentile(100), 10);
  EXPECT_DOUBLE_EQ(histogram.percentile(0), 1);
  EXPECT_EQ(histogram.max(), 10u);
}

TEST(LatencyHistogram, LargeValuesWithinThreePercent) {
  LatencyHistogram histogram;
  for (std::uint64_t v = 1; v <= 100000; ++v) histogram.record(v * 1000);
  EXPECT_NEAR(histogram.percentile(50), 50e6, 50e6 * 0.03);
  EXPECT_NEAR(histogram.percentile(99), 99e6, 99e6 * 0.03);
  EXPECT_NEAR(histogram.percentile(99.9), 99.9e6, 99.9e6 * 0.03);
  LatencyHistogram other;
  other.record(5);
  other.merge(histogram);
  EXPECT_EQ(other.count(), 100001u);
  EXPECT_DOUBLE_EQ(other.percentile(0), 5);
}

TEST(LatencyHistogram, BucketsTileTheRange) {
  for (std::size_t bucket = 0; bucket + 1 < 1900; ++bucket) {
    EXPECT_EQ(LatencyHistogram::bucket_lower_bound(bucket) + LatencyHistogram::bucket_width(bucket),
              LatencyHistogram::bucket_lower_bound(bucket + 1))
        << bucket;
  }
  for (std::uint64_t value : {0ull, 63ull, 64ull, 65ull, 1000ull, 123456789ull, ~0ull}) {
    std::size_t bucket = LatencyHistogram::bucket_of(value);
    EXPECT_LE(LatencyHistogram::bucket_lower_bound(bucket), value);
    EXPECT_LE(value - LatencyHistogram::bucket_lower_bound(bucket), LatencyHistogram::bucket_width(bucket) - 1);
  }
}

}  // namespace
}  // namespace mallard::tool
