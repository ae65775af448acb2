// fio's bssplit notation: "4k/85:32k/11:512/3:1m/1" gives block sizes and
// their share of I/Os in percent; a comma separates the read list from the
// write list ("R,W"), and a single list applies to both. An entry without a
// percentage ("4k/" or "4k") shares what the others leave of 100% equally.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mallard::tool {

struct BlockSizeShare {
  std::uint64_t bytes;
  double percent;
};
using BlockSizeSplit = std::vector<BlockSizeShare>;

struct DirectionalSplit {
  BlockSizeSplit read;
  BlockSizeSplit write;
};

// Throws std::invalid_argument with the reason for a malformed list.
BlockSizeSplit parse_block_size_split(std::string_view list);
DirectionalSplit parse_bssplit(std::string_view text);
// Mean block size weighted by share, for sizing a run by bytes.
double mean_block_size(const BlockSizeSplit& split);

// Picks a block size with the split's probabilities from a uniform number in [0, 1).
class BlockSizePicker {
 public:
  explicit BlockSizePicker(const BlockSizeSplit& split);
  std::uint64_t pick(double uniform) const;

 private:
  std::vector<double> cumulative_;
  std::vector<std::uint64_t> sizes_;
};

}  // namespace mallard::tool
