// The OS layer: the only code in libmallard that calls mmap, madvise, sysconf,
// reads /proc or the environment, or writes to a file descriptor. Nothing here
// allocates with malloc, so it is safe at any point of the process's life.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mallard::os {

// The system page size (4 KiB on x86-64), cached after the first call: a
// load and a test inline (the large-block paths ask for it several times a
// call; out of line it was 24 of the 257 instructions of a 1 MiB
// malloc+free pair).
// (Relaxed atomic accesses: threads may fill it at once, with one value.)
extern size_t g_page_size;  // 0 until the first call
size_t page_size_from_os();
inline size_t page_size() {
  size_t size = __atomic_load_n(&g_page_size, __ATOMIC_RELAXED);
  return __builtin_expect(size != 0, 1) ? size : page_size_from_os();
}

// `size` rounded up to a whole number of pages (wraps to a smaller value when
// size is within a page of SIZE_MAX: callers that take sizes from outside
// test for that).
inline size_t round_to_page(size_t size) { return (size + page_size() - 1) & ~(page_size() - 1); }

// Where map_aligned puts a mapping against the one it made before.
enum class Placement : uint8_t {
  // Right after it, so that the kernel merges the two into one VMA.
  kPacked,
  // An alignment further on, so that it is a VMA of its own: a page fault
  // then takes only its VMA's lock, which the mmap or munmap of another
  // mapping does not hold (a fault in a merged VMA waits for every mmap that
  // extends it and every munmap that splits it; DESIGN.md "Segments apart").
  kApart,
};

// Maps `size` bytes of fresh, zeroed, read-write memory whose start is a
// multiple of `alignment` (a power of two, at least the page size). Returns
// nullptr when the OS refuses.
void* map_aligned(size_t size, size_t alignment, Placement placement);

// Maps `size` bytes anywhere (page aligned); nullptr on failure.
void* map(size_t size);

void unmap(void* addr, size_t size);

// Gives the physical pages behind [addr, addr+size) back to the OS; the range
// stays mapped and reads back as zero when touched again.
void purge(void* addr, size_t size);

// Whether every purge so far did give its pages back, so that a purged
// range reads back as zero. The kernel refuses MADV_DONTNEED on locked
// memory (mlockall), leaving the old bytes there; from the first refusal on,
// this is false for good, and calloc no longer trusts purged memory to be
// zero (alloc.hpp, page_take). Inline: calloc asks on every fresh block.
extern std::atomic<bool> g_purges_zero;
inline bool purged_memory_reads_zero() { return g_purges_zero.load(std::memory_order_relaxed); }

// Purges several ranges, in as few system calls as the kernel allows: one
// process_madvise(MADV_DONTNEED) on this process for up to kMaxPurgeRanges
// of them where the kernel takes it, else one madvise each. Here a madvise
// of 64 KiB cost 65-68 us and a process_madvise 13-16 us a range in
// batches of 64 (DESIGN.md, "Purges go out in batches").
struct PurgeRange {
  void* addr;
  size_t size;
};
inline constexpr size_t kMaxPurgeRanges = 64;
void purge_ranges(const PurgeRange* ranges, size_t count);

// The ranges one purge pass has gathered, given to purge_ranges together
// when the pass flushes them, when the batch is full, or when it ends.
class PurgeBatch {
 public:
  PurgeBatch() = default;
  PurgeBatch(const PurgeBatch&) = delete;
  PurgeBatch& operator=(const PurgeBatch&) = delete;
  ~PurgeBatch() { flush(); }
  void add(void* start, size_t bytes) {
    if (count_ == kMaxPurgeRanges) flush();
    ranges_[count_++] = {start, bytes};
  }
  void flush() {
    if (count_ != 0) purge_ranges(ranges_, count_);
    count_ = 0;
  }

 private:
  PurgeRange ranges_[kMaxPurgeRanges];
  size_t count_ = 0;
};

// Asks the kernel to back [addr, addr+size) with transparent huge pages
// where it can (MADV_HUGEPAGE), or not to (MADV_NOHUGEPAGE, which also keeps
// khugepaged from collapsing a purged range back into a whole huge page). A
// kernel without THP refuses; nothing else changes then.
void advise_huge_pages(void* addr, size_t size, bool huge);

// Faults [addr, addr+size) in, writable, in one system call
// (MADV_POPULATE_WRITE, Linux 5.14) instead of one page fault per 4 KiB page
// as the range is first written. An older kernel, or one short of memory,
// refuses; the pages then fault in one by one as before (a kernel that does
// not know the call is not asked again).
void populate(void* addr, size_t size);

// System calls made so far to purge memory (madvise or process_madvise).
size_t purge_calls();

// Grows the mapping [addr, addr+old_size) to new_size bytes where it is, if
// the address space after it is free (mremap without moving); false if not.
bool grow_in_place(void* addr, size_t old_size, size_t new_size);

// Moves the mapping [addr, addr+old_size) to dest, which the caller mapped
// with new_size bytes (it is replaced), and grows it to new_size: its pages
// move with their contents, none is copied (mremap). false, with nothing
// moved and dest still mapped, if the kernel refuses.
bool move_mapping(void* addr, size_t old_size, size_t new_size, void* dest);

// Monotonic milliseconds (vDSO clock, no syscall on Linux).
uint64_t now_ms();

// Whether the process environment is set up yet (it is not during the
// dynamic loader's earliest allocations).
bool environment_ready();

// getenv without touching malloc (walks environ); nullptr when unset.
const char* env(const char* name);

// Writes all of buf to fd 2, retrying on EINTR; async-signal-safe.
void write_stderr(const char* buf, size_t len);

// Writes a buffer to a file descriptor.
void write_fd(int fd, const char* buf, size_t len);

[[noreturn]] void abort_process();

// Sleeps while *word == expected (or until woken); spurious returns happen.
void futex_wait(uint32_t* word, uint32_t expected);
// Wakes one thread sleeping on word.
void futex_wake_one(uint32_t* word);

// A small random seed from the kernel (getrandom), or from the clock and an
// address when that fails.
uint64_t random_seed();

}  // namespace mallard::os
