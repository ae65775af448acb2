// Size classes: 16..128 bytes in steps of 8 (so 24, 40, 56 exist and a
// 24-byte object costs 24 bytes), then 8 classes per power of two up to
// kMediumSizeMax (worst-case internal waste 1/9 < 12.5%). Class 0 is unused
// so that "no class" can be 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/config.hpp"

namespace mallard {

inline constexpr unsigned kTinyClassCount = 15;  // 16, 24, ..., 128
inline constexpr unsigned kClassesPerDoubling = 8;
// Doublings from 128 to kMediumSizeMax (2^7 .. 2^17).
inline constexpr unsigned kClassCount = 1 + kTinyClassCount + 10 * kClassesPerDoubling;

constexpr size_t class_size_compute(unsigned cls) {
  if (cls == 0) return 0;
  if (cls <= kTinyClassCount) return 8 * (cls + 1);
  unsigned k = cls - kTinyClassCount - 1;
  unsigned bit = 7 + k / kClassesPerDoubling;
  size_t step = size_t{1} << (bit - 3);
  return (size_t{1} << bit) + (k % kClassesPerDoubling + 1) * step;
}

// The class for a request of `size` bytes (1 <= size <= kMediumSizeMax).
constexpr unsigned size_class_of(size_t size) {
  if (size <= 128) return size <= 16 ? 1 : static_cast<unsigned>((size + 7) / 8 - 1);
  size_t s = size - 1;
  unsigned bit = 63u - static_cast<unsigned>(__builtin_clzll(s));  // floor(log2(s)), >= 7
  unsigned sub = static_cast<unsigned>((s >> (bit - 3)) & 7);
  return kTinyClassCount + (bit - 7) * kClassesPerDoubling + sub + 1;
}

struct SizeClassTable {
  uint32_t size[kClassCount];
  // floor(2^64 / size) + 1, so that step = size * magic (mod 2^64) is in
  // (0, size]. For a 32-bit offset = q * size + r the product offset * magic
  // (mod 2^64) is q * step when r == 0, and at least magic > 2^46 otherwise
  // (after Lemire et al., "Faster remainder by direct computation"). So
  // "offset * magic < n * step" tests r == 0 and q < n in one compare.
  uint64_t magic[kClassCount];
};

// The boundary-check multiplier for blocks `size` bytes apart (see magic).
constexpr uint64_t block_magic_of(size_t size) {
  uint64_t magic = ~uint64_t{0} / size + 1;
  return magic * size == 0 ? magic + 1 : magic;  // a power of two: 2^64 / size is exact
}

constexpr SizeClassTable make_size_class_table() {
  SizeClassTable t{};
  for (unsigned c = 0; c < kClassCount; ++c) {
    t.size[c] = static_cast<uint32_t>(class_size_compute(c));
    if (c != 0) t.magic[c] = block_magic_of(t.size[c]);
  }
  return t;
}

inline constexpr SizeClassTable kSizeClasses MALLARD_RESIDENT_CONST(size_classes) = make_size_class_table();

constexpr size_t class_size(unsigned cls) { return kSizeClasses.size[cls]; }

static_assert(class_size_compute(kClassCount - 1) == kMediumSizeMax);
static_assert(size_class_of(kMediumSizeMax) == kClassCount - 1);
static_assert(class_size(size_class_of(24)) == 24);
static_assert(class_size(size_class_of(129)) == 144);
static_assert(class_size(size_class_of(257)) == 288);

// Classes above kDirectSizeMax by a table load instead of size_class_of's
// bit scan (6 instructions fewer on malloc's path for 1 KiB-128 KiB; sizes:4K
// and sizes:32K, DESIGN.md): every class there is a multiple of 128 bytes, so
// all sizes in a 128-byte bucket (128b - 127 .. 128b) share one class.
inline constexpr size_t kMediumBucketShift = 7;
inline constexpr size_t kMediumBucket = size_t{1} << kMediumBucketShift;  // 128 bytes
inline constexpr size_t kMediumBuckets = kMediumSizeMax / kMediumBucket + 1;

struct MediumClassTable {
  uint8_t class_of[kMediumBuckets];
};

constexpr MediumClassTable make_medium_class_table() {
  MediumClassTable t{};
  for (size_t b = 1; b < kMediumBuckets; ++b) t.class_of[b] = static_cast<uint8_t>(size_class_of(b * kMediumBucket));
  return t;
}

inline constexpr MediumClassTable kMediumClasses MALLARD_RESIDENT_CONST(medium_classes) = make_medium_class_table();

constexpr bool medium_buckets_exact() {
  for (size_t b = (kDirectSizeMax >> kMediumBucketShift) + 1; b < kMediumBuckets; ++b) {
    if (size_class_of((b - 1) * kMediumBucket + 1) != size_class_of(b * kMediumBucket)) return false;
  }
  return true;
}
static_assert(medium_buckets_exact(), "every class above kDirectSizeMax is a multiple of 128 bytes");
static_assert(kClassCount <= 256);

// The classes above the direct table, which malloc finds in Heap::current.
inline constexpr unsigned kFirstQueueClass = size_class_of(kDirectSizeMax + 1);
inline constexpr unsigned kQueueClassCount = kClassCount - kFirstQueueClass;

// The class of kDirectSizeMax < size <= kMediumSizeMax.
constexpr unsigned medium_size_class_of(size_t size) {
  return kMediumClasses.class_of[(size + kMediumBucket - 1) >> kMediumBucketShift];
}

// The smallest class at or above `size` whose blocks are all aligned to
// `alignment` (pages start on kMaxClassAlignment boundaries), or 0 if none.
unsigned aligned_size_class_of(size_t size, size_t alignment);

}  // namespace mallard
