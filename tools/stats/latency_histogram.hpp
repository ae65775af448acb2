// A fixed-size log-linear latency histogram (in the spirit of HdrHistogram):
// values below 64 are counted exactly, above that each power of two is split
// into 32 buckets, so any reported percentile is within about 3% of the true
// value. Its storage is inline, so recording a latency never allocates: the
// benchmark must not measure its own bookkeeping through the allocator under test.
#pragma once

#include <array>
#include <cstdint>

namespace mallard::tool {

class LatencyHistogram {
 public:
  void record(std::uint64_t value);
  void merge(const LatencyHistogram& other);
  std::uint64_t count() const { return total_; }
  std::uint64_t max() const { return max_; }
  // Value at percentile p in [0, 100]: the midpoint of the bucket that holds
  // the ceil(p% * count)-th smallest value (exact for values below 64); 0 when empty.
  double percentile(double p) const;

  static std::size_t bucket_of(std::uint64_t value);
  static std::uint64_t bucket_lower_bound(std::size_t bucket);
  static std::uint64_t bucket_width(std::size_t bucket);

 private:
  static constexpr int kSubBucketBits = 5;
  static constexpr std::size_t kExact = 64;  // 2 << kSubBucketBits
  static constexpr std::size_t kBuckets = kExact + (64 - 6) * (1u << kSubBucketBits);

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace mallard::tool
