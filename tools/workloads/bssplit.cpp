#include "workloads/bssplit.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "util/text.hpp"

namespace mallard::tool {

BlockSizeSplit parse_block_size_split(std::string_view list) {
  BlockSizeSplit split;
  double assigned = 0;
  std::size_t unassigned = 0;
  for (const auto& entry : mallard::tool::split(list, ':')) {
    auto slash = entry.find('/');
    std::string size_text(trim(entry.substr(0, slash)));
    auto bytes = parse_size(size_text);
    if (!bytes || *bytes == 0) throw std::invalid_argument("bssplit: bad block size '" + size_text + "'");
    double percent = -1;
    if (slash != std::string::npos && !trim(std::string_view(entry).substr(slash + 1)).empty()) {
      auto value = parse_number(std::string_view(entry).substr(slash + 1));
      if (!value || *value < 0 || *value > 100) throw std::invalid_argument("bssplit: bad percentage in '" + entry + "'");
      percent = *value;
      assigned += percent;
    } else {
      ++unassigned;
    }
    split.push_back({*bytes, percent});
  }
  if (split.empty()) throw std::invalid_argument("bssplit: empty list");
  if (assigned > 100.0 + 1e-9) throw std::invalid_argument("bssplit: percentages add up to more than 100");
  if (unassigned == 0 && std::fabs(assigned - 100.0) > 1e-9) {
    throw std::invalid_argument("bssplit: percentages add up to " + strprintf("%g", assigned) + ", not 100");
  }
  for (auto& share : split) {
    if (share.percent < 0) share.percent = (100.0 - assigned) / static_cast<double>(unassigned);
  }
  return split;
}

DirectionalSplit parse_bssplit(std::string_view text) {
  auto lists = split(text, ',');
  if (lists.empty() || lists.size() > 3) throw std::invalid_argument("bssplit: expected 'READ' or 'READ,WRITE'");
  DirectionalSplit directional;
  directional.read = parse_block_size_split(lists[0]);
  directional.write = lists.size() > 1 ? parse_block_size_split(lists[1]) : directional.read;
  return directional;
}

double mean_block_size(const BlockSizeSplit& split) {
  double mean = 0;
  for (const auto& share : split) mean += static_cast<double>(share.bytes) * share.percent / 100.0;
  return mean;
}

BlockSizePicker::BlockSizePicker(const BlockSizeSplit& split) {
  double running = 0;
  for (const auto& share : split) {
    running += share.percent / 100.0;
    cumulative_.push_back(running);
    sizes_.push_back(share.bytes);
  }
}

std::uint64_t BlockSizePicker::pick(double uniform) const {
  for (std::size_t i = 0; i < cumulative_.size(); ++i) {
    if (uniform < cumulative_[i]) return sizes_[i];
  }
  return sizes_.back();
}

}  // namespace mallard::tool
