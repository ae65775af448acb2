#include "core/size_class.hpp"

namespace mallard {

// Every class c has size 2^b + m*2^(b-3); a block at offset i*size from an
// aligned page start is aligned to A exactly when size is a multiple of A, so
// walk up from the natural class until one is.
unsigned aligned_size_class_of(size_t size, size_t alignment) {
  if (alignment > kMaxClassAlignment) return 0;
  size_t want = size < alignment ? alignment : size;
  if (want > kMediumSizeMax) return 0;
  for (unsigned c = size_class_of(want); c < kClassCount; ++c) {
    if (class_size(c) % alignment == 0) return c;
  }
  return 0;
}

}  // namespace mallard
