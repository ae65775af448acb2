// The two maps from an address to its segment (segment.hpp): the segment map
// and free()'s small-page table. Zero-initialized BSS, 288 MiB of address
// space, each 4 KiB page of it resident only once a segment's entry is
// written there. Their own file, linked last (src/CMakeLists.txt), so that
// they follow every other global of the library in .bss instead of
// splitting the small ones over pages of their own.
#include "core/segment.hpp"

namespace mallard {

std::atomic<uint8_t> g_segment_map[kSegmentMapEntries];
constinit SmallPageTable g_small_pages{};

}  // namespace mallard
