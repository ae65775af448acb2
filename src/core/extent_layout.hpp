// The layout of an extent segment (extent.hpp): 1 KiB granules, and after
// the segment's fields and page descriptors, the boundary tags of its
// extents. Shared by extent.cpp and realloc's inline test, which reads a
// block's own tag without the shard's lock: only a call on that block (its
// realloc or its free, by the program's contract never at once with another
// on it) writes the tag at its first granule.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/config.hpp"
#include "core/segment.hpp"
#include "core/types.hpp"

namespace mallard {

inline constexpr size_t kGranuleShift = 10;
inline constexpr size_t kGranule = size_t{1} << kGranuleShift;
inline constexpr uint32_t kGranules = kSegmentSize >> kGranuleShift;
inline constexpr uint16_t kFreeBit = 0x8000;

struct ExtentShard;  // extent.cpp

// What an extent segment holds after its segment fields and page descriptors.
// The boundary tags are two arrays beside the blocks rather than words inside
// them: a block keeps all its granules, and a free neighbour is found without
// touching its memory.
struct ExtentArea {
  ExtentShard* shard;             // set when mapped, never changed
  Segment* next;                  // in the shard's list
  Segment* prev;
  // Where the free extent that ends the segment starts (kGranules when the
  // last extent is a block): it is not in the bins (extent_file). Its
  // freed_in_sweep, for its granules below touched_end.
  uint32_t tail_start;
  uint64_t tail_freed_in_sweep;
  // The next three are read by statistics without the lock.
  Relaxed<uint32_t> used_granules;
  // Granules [0, touched_end) may be resident; the rest of the segment was
  // never written since it was mapped or purged.
  Relaxed<uint32_t> touched_end;
  // Bytes below touched_end that are not resident: the purged pages of the
  // clean free extents in the bins (purgeable_pages of each).
  Relaxed<size_t> purged_bytes;
  // head[g]: the length in granules of the extent that starts at granule g,
  // with kFreeBit when it is free; 0 at every granule that starts none.
  uint16_t head[kGranules];
  // tail[g]: the length of the free extent whose last granule is g; 0 at
  // every other granule.
  uint16_t tail[kGranules];
};
// After the descriptors free() and realloc read for a chunk whose small-page
// table entry is kMediumEntry (medium_page_at: one per MiB), which an
// extent segment's is: all four say kPageExtent (extent_segment_map).
inline constexpr size_t kAreaOffset = offsetof(Segment, slots) + kMediumPagesPerSegment * sizeof(Page);
inline constexpr uint32_t kFirstGranule = (kAreaOffset + sizeof(ExtentArea) + kGranule - 1) >> kGranuleShift;
inline constexpr uint32_t kDataGranules = kGranules - kFirstGranule;
static_assert(kDataGranules < kFreeBit, "a length fits beside the free bit");
static_assert(kMediumSizeMax % kGranule == 0);

MALLARD_INLINE ExtentArea* area_of(Segment* s) {
  return reinterpret_cast<ExtentArea*>(reinterpret_cast<uint8_t*>(s) + kAreaOffset);
}

// The tag at p when p starts an extent of s (free or live), else 0; sets
// *granule to p's granule.
MALLARD_INLINE uint16_t head_at(Segment* s, const void* p, uint32_t* granule) {
  uintptr_t offset = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(s);
  *granule = static_cast<uint32_t>(offset >> kGranuleShift);
  if ((offset & (kGranule - 1)) != 0 || *granule < kFirstGranule) return 0;
  return area_of(s)->head[*granule];
}

MALLARD_INLINE bool is_live_block(uint16_t head) { return head != 0 && (head & kFreeBit) == 0; }

// The usable size of p when p is a live extent block of s, else 0.
MALLARD_INLINE size_t extent_block_size(Segment* s, const void* p) {
  uint32_t granule;
  uint16_t head = head_at(s, p, &granule);
  return is_live_block(head) ? size_t{head} << kGranuleShift : 0;
}

}  // namespace mallard
