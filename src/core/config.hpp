// Compile-time geometry of the allocator. Every number here is explained in
// docs/DESIGN.md together with the measurement behind it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mallard {

// Segments are 4 MiB, aligned to 4 MiB, so the segment of any pointer inside
// one is `p & ~kSegmentMask` and its header is found without a per-block header.
inline constexpr size_t kSegmentShift = 22;
inline constexpr size_t kSegmentSize = size_t{1} << kSegmentShift;
inline constexpr uintptr_t kSegmentMask = kSegmentSize - 1;

// Small pages (64 KiB) hold blocks up to 8 KiB; medium pages (1 MiB) hold
// blocks up to 128 KiB: both keep at least 8 blocks a page.
inline constexpr size_t kSmallPageShift = 16;
inline constexpr size_t kMediumPageShift = 20;
inline constexpr size_t kSmallSizeMax = 8 * 1024;
inline constexpr size_t kMediumSizeMax = 128 * 1024;  // the largest size class
inline constexpr size_t kMaxPagesPerSegment = kSegmentSize >> kSmallPageShift;

// realloc grows a block to more than this (up to kMediumSizeMax), or makes
// one from NULL, in an extent (extent.hpp) rather than a size class: a
// buffer that grows leaves its memory free for any size (regrow:exact at
// 2 KiB: 37.5-40.0 MiB against 41.7-42.7 at 8 KiB, and fewer faults;
// DESIGN.md "Grown buffers in coalescing extents").
inline constexpr size_t kExtentMinSize = 2 * 1024;

// realloc grows a large block past its mapping in place when the address
// space after it is free (one mremap); when it is not, a block of at least
// this many bytes moves with its pages (mremap to a new mapping) rather than
// being copied: below it, a copy costs about as much as the two system calls.
inline constexpr size_t kRemapMinBytes = 256 * 1024;

// The segment header (segment fields plus 64 page descriptors of 128 bytes,
// 8.1 KiB) occupies the start of the first page; page 0 begins after it, on
// the next 8 KiB boundary. Descriptors are set up as pages are handed out,
// so a thread that uses few pages touches only the first 4 KiB.
inline constexpr size_t kSegmentHeaderSize = 16 * 1024;

// Page colouring (page.cpp): the first block of a page starts this far at
// most past the page area's start; small pages pay up to 512 bytes of 64 KiB.
inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kMaxColourSmall = 512;
inline constexpr size_t kMaxColourMedium = 4096 - 64;

// Alignments up to this are served from ordinary size classes (a class that
// is a multiple of the alignment): every page starts on an 8 KiB boundary.
inline constexpr size_t kMaxClassAlignment = 8 * 1024;

// Alignments beyond this are refused (ENOMEM): large blocks record the distance
// from the pointer's 4 MiB chunk to their segment in one byte.
inline constexpr size_t kMaxAlignment = size_t{1} << 29;  // 512 MiB

// Sizes up to kDirectSizeMax are looked up in the heap's direct page table,
// indexed by (size + 7) / 8: one load from size to page.
inline constexpr size_t kDirectSizeMax = 1024;
inline constexpr size_t kDirectSlots = kDirectSizeMax / 8 + 1;

inline constexpr size_t kMinBlockSize = 16;
inline constexpr size_t kWordSize = sizeof(void*);

// Requests above this cannot be met by any mapping; fail fast with ENOMEM.
inline constexpr size_t kMaxRequest = (size_t{1} << 47) - (size_t{1} << 30);

#if defined(__GNUC__)
#define MALLARD_LIKELY(x) __builtin_expect(!!(x), 1)
#define MALLARD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MALLARD_NOINLINE __attribute__((noinline))
// Code that the programs the library mostly serves never run: error
// reports, statistics, option text, fork, realloc and its extents, large
// blocks, the aligned and legacy entry points. It goes to a section of its
// own, which the shared library's link (src/rare_text.ld) maps as a
// segment of its own: the kernel maps up to 16 pages of a file around each
// fault, but only within the fault's mapping, so a process that runs none
// of it keeps none of its pages resident (DESIGN.md "Rare code in a
// mapping of its own"). Elsewhere (the static library) it is ordinary text.
#define MALLARD_RARE __attribute__((section("mallard_rare")))
#define MALLARD_COLD __attribute__((cold, noinline, section("mallard_rare")))
// Constant tables read at run time, placed with the relocated read-only data
// (RELRO), whose page every process has resident anyway, instead of .rodata,
// which the library's error messages and unwind tables share: the kernel
// maps a read fault's neighbours with it, so one table read there made the
// whole read-only mapping resident (DESIGN.md "No reads of .rodata"). A
// section of its own for each: an inline variable's section is a COMDAT
// group named after it.
#define MALLARD_RESIDENT_CONST(name) __attribute__((section(".data.rel.ro.mallard_" #name)))
#define MALLARD_INLINE inline __attribute__((always_inline))
// Another exported name for the function `target` defined in the same file.
#define MALLARD_ALIAS(target) __attribute__((alias(#target), visibility("default"), used))
// The exported malloc, free, new and delete start on a cache line: their fast
// paths then sit in as few lines and fetch blocks as they can, wherever the
// linker happens to put them (a change elsewhere in the library moved malloc
// from offset 32 to 48 of its line and cost sizes:32B 11%; DESIGN.md).
#define MALLARD_FAST_ENTRY __attribute__((aligned(64)))
// malloc and free: a section each, which src/fast_entries.ld places at a
// fixed offset of a 4 KiB page (elsewhere, the linker puts them with the
// rest of the code, on a cache line as above).
#define MALLARD_PINNED_ENTRY(name) __attribute__((aligned(64), section("mallard_entry_" #name)))
#endif

}  // namespace mallard
