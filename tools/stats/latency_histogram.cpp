#include "stats/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mallard::tool {

std::size_t LatencyHistogram::bucket_of(std::uint64_t value) {
  if (value < kExact) return static_cast<std::size_t>(value);
  int exponent = 63 - std::countl_zero(value);  // >= 6
  int shift = exponent - kSubBucketBits;
  std::uint64_t sub_bucket = (value >> shift) & ((1u << kSubBucketBits) - 1);
  return kExact + static_cast<std::size_t>(exponent - 6) * (1u << kSubBucketBits) + static_cast<std::size_t>(sub_bucket);
}

std::uint64_t LatencyHistogram::bucket_lower_bound(std::size_t bucket) {
  if (bucket < kExact) return bucket;
  std::size_t offset = bucket - kExact;
  int exponent = static_cast<int>(offset >> kSubBucketBits) + 6;
  std::uint64_t sub_bucket = offset & ((1u << kSubBucketBits) - 1);
  return (std::uint64_t{1} << exponent) | (sub_bucket << (exponent - kSubBucketBits));
}

std::uint64_t LatencyHistogram::bucket_width(std::size_t bucket) {
  if (bucket < kExact) return 1;
  int exponent = static_cast<int>((bucket - kExact) >> kSubBucketBits) + 6;
  return std::uint64_t{1} << (exponent - kSubBucketBits);
}

void LatencyHistogram::record(std::uint64_t value) {
  ++counts_[bucket_of(value)];
  ++total_;
  max_ = std::max(max_, value);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  max_ = std::max(max_, other.max_);
}

double LatencyHistogram::percentile(double p) const {
  if (total_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total_)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
    seen += counts_[bucket];
    if (seen >= rank) {
      if (bucket < kExact) return static_cast<double>(bucket);
      double mid = static_cast<double>(bucket_lower_bound(bucket)) + static_cast<double>(bucket_width(bucket) - 1) / 2.0;
      return std::min(mid, static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace mallard::tool
