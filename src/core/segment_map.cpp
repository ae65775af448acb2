// The two maps from an address to its segment (segment.hpp): the segment map
// and free()'s small-page table. Zero-initialized BSS, 288 MiB of address
// space, each 4 KiB page of it resident only once a segment's entry is
// written (or, on a kernel without the shared zero page, read) there. Their
// own file, linked after every other but extent.cpp (src/CMakeLists.txt),
// so that they follow the library's small globals in .bss instead of
// splitting them over pages of their own.
#include "core/segment.hpp"

namespace mallard {

std::atomic<uint8_t> g_segment_map[kSegmentMapEntries];
constinit SmallPageTable g_small_pages{};

}  // namespace mallard
