// The boundary check of free() (page_is_block_start in src/core/alloc.hpp)
// rests on arithmetic in the size-class table: offset * magic < n * step,
// with step = size * magic (mod 2^64), holds exactly when offset is a
// multiple of the class size below n blocks. This test checks that claim for
// every class over every offset a page can produce, including the wrapped
// 32-bit offsets of pointers below a page's first block. A wrong magic would
// let free() accept an interior pointer, or reject a real block.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/config.hpp"
#include "core/size_class.hpp"

namespace mallard {
namespace {

bool accepted(uint32_t offset, uint64_t magic, uint64_t step, uint64_t blocks) {
  return uint64_t{offset} * magic < blocks * step;
}

TEST(BlockBoundary, MagicTestsBlockStartAndCapacityInOneCompare) {
  constexpr uint32_t kPageBytes = uint32_t{1} << kMediumPageShift;  // the largest page
  constexpr uint32_t kBelowStart = 8192;  // offsets of pointers up to this far before the first block
  for (unsigned size_class = 1; size_class < kClassCount; ++size_class) {
    const uint64_t size = class_size(size_class);
    const uint64_t magic = kSizeClasses.magic[size_class];
    const uint64_t step = size * magic;  // wraps by design
    ASSERT_GT(step, 0u) << "class " << size_class;
    ASSERT_LE(step, size) << "class " << size_class;
    const uint64_t max_blocks = kPageBytes / size;
    for (uint64_t blocks : {uint64_t{0}, uint64_t{1}, max_blocks / 2, max_blocks}) {
      for (uint32_t offset = 0; offset < kPageBytes; ++offset) {
        bool expected = offset % size == 0 && offset / size < blocks;
        if (accepted(offset, magic, step, blocks) != expected) {
          FAIL() << "class " << size_class << " (size " << size << "), " << blocks << " blocks, offset " << offset;
        }
      }
      for (uint32_t below = 1; below <= kBelowStart; ++below) {
        uint32_t offset = 0u - below;
        if (accepted(offset, magic, step, blocks)) {
          FAIL() << "class " << size_class << ": pointer " << below << " bytes before the first block accepted";
        }
      }
    }
  }
}

}  // namespace
}  // namespace mallard
