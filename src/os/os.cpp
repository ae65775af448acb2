#include "os/os.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

extern char** environ;

namespace mallard::os {

size_t g_page_size = 0;

size_t page_size_from_os() {
  auto size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  __atomic_store_n(&g_page_size, size, __ATOMIC_RELAXED);
  return size;
}

void* map(size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

namespace {

// Aligned mappings are first tried at a hinted address, so that most cost one
// mmap instead of an over-sized mmap and two munmaps. The hint walks upward
// through a region the kernel's top-down placement rarely reaches, from a
// random start (ASLR); a taken address just falls back to over-mapping.
std::atomic<uintptr_t> g_aligned_hint{0};
constexpr uintptr_t kHintBase = uintptr_t{32} << 40;   // 32 TiB
constexpr uintptr_t kHintLimit = uintptr_t{96} << 40;  // 96 TiB

void* map_at_hint(size_t size, size_t alignment, Placement placement) {
  uintptr_t hint = g_aligned_hint.load(std::memory_order_relaxed);
  if (hint == 0) {
    uintptr_t start = kHintBase + ((random_seed() % (uintptr_t{1} << 20)) << 22);
    g_aligned_hint.compare_exchange_strong(hint, start);
    hint = g_aligned_hint.load(std::memory_order_relaxed);
  }
  size_t span = (size + alignment - 1) & ~(alignment - 1);
  if (placement == Placement::kApart) span += alignment;
  uintptr_t addr;
  do {
    addr = (hint + alignment - 1) & ~(alignment - 1);
    if (addr + span > kHintLimit) return nullptr;
  } while (!g_aligned_hint.compare_exchange_weak(hint, addr + span, std::memory_order_relaxed));
  void* p = mmap(reinterpret_cast<void*>(addr), size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if ((reinterpret_cast<uintptr_t>(p) & (alignment - 1)) == 0) return p;
  munmap(p, size);
  return nullptr;
}

}  // namespace

void* map_aligned(size_t size, size_t alignment, Placement placement) {
  if (alignment <= page_size()) return map(size);
  if (void* p = map_at_hint(size, alignment, placement)) return p;
  // Over-map by the alignment, then trim the unaligned head and the tail.
  size_t over = size + alignment;
  if (over < size) return nullptr;
  auto* raw = static_cast<char*>(map(over));
  if (raw == nullptr) return nullptr;
  uintptr_t start = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(alignment - 1);
  auto* aligned = reinterpret_cast<char*>(start);
  size_t head = static_cast<size_t>(aligned - raw);
  if (head > 0) munmap(raw, head);
  size_t tail = over - head - size;
  if (tail > 0) munmap(aligned + size, tail);
  return aligned;
}

void unmap(void* addr, size_t size) { munmap(addr, size); }

namespace {

std::atomic<size_t> g_purge_calls{0};
// Cleared for good when the kernel refuses process_madvise on this process:
// older kernels lack the call, refuse MADV_DONTNEED through it or do not
// know PIDFD_SELF, and a seccomp filter may refuse it.
std::atomic<bool> g_purge_batches{true};

// The calling thread, which stands for its whole process here (its address
// space is the process's), without opening a pidfd: a descriptor of ours
// could be closed by the program and its number reused, by then perhaps for
// another process's pidfd, whose memory the call would purge.
constexpr int kPidfdSelf = -10000;  // PIDFD_SELF (PIDFD_SELF_THREAD)

}  // namespace

std::atomic<bool> g_purges_zero{true};

void purge(void* addr, size_t size) {
  // MADV_DONTNEED drops the pages at once, so RSS falls immediately (MADV_FREE
  // would leave them counted until the kernel is under pressure).
  int saved_errno = errno;  // free() leaves errno alone
  if (madvise(addr, size, MADV_DONTNEED) != 0) g_purges_zero.store(false, std::memory_order_relaxed);
  errno = saved_errno;
  g_purge_calls.fetch_add(1, std::memory_order_relaxed);
}

void purge_ranges(const PurgeRange* ranges, size_t count) {
  static_assert(sizeof(PurgeRange) == sizeof(iovec) && offsetof(PurgeRange, addr) == offsetof(iovec, iov_base) &&
                offsetof(PurgeRange, size) == offsetof(iovec, iov_len));
  if (count > 1 && g_purge_batches.load(std::memory_order_relaxed)) {
    size_t bytes = 0;
    for (size_t i = 0; i < count; ++i) bytes += ranges[i].size;
    int saved_errno = errno;  // free() leaves errno alone
    long done = syscall(SYS_process_madvise, kPidfdSelf, reinterpret_cast<const iovec*>(ranges), count, MADV_DONTNEED, 0);
    g_purge_calls.fetch_add(1, std::memory_order_relaxed);
    if (done >= 0 && static_cast<size_t>(done) == bytes) return;
    // Refused, or stopped part way: purge every range one by one (again is
    // harmless: these pages are free). Only a refusal of the call itself
    // turns batches off; a range it rejected fails as a madvise too.
    if (done < 0 && errno != EINTR && errno != EAGAIN && errno != ENOMEM) {
      g_purge_batches.store(false, std::memory_order_relaxed);
    }
    errno = saved_errno;
  }
  for (size_t i = 0; i < count; ++i) purge(ranges[i].addr, ranges[i].size);
}

namespace {
// Cleared when the kernel does not know MADV_POPULATE_WRITE (before 5.14,
// e.g. RHEL 8's 4.18): no system call per MiB that can only fail.
std::atomic<bool> g_populate_known{true};
}  // namespace

void populate(void* addr, size_t size) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // linux/mman.h, Linux 5.14
#endif
  if (!g_populate_known.load(std::memory_order_relaxed)) return;
  int saved_errno = errno;
  if (madvise(addr, size, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    g_populate_known.store(false, std::memory_order_relaxed);
  }
  errno = saved_errno;
}

void advise_huge_pages(void* addr, size_t size, bool huge) {
  int saved_errno = errno;  // malloc and free leave errno alone when they succeed
  madvise(addr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  errno = saved_errno;
}

size_t purge_calls() { return g_purge_calls.load(std::memory_order_relaxed); }

bool grow_in_place(void* addr, size_t old_size, size_t new_size) {
  int saved_errno = errno;  // a refusal is an answer here, not an error of realloc's
  bool grown = mremap(addr, old_size, new_size, 0) != MAP_FAILED;
  errno = saved_errno;
  return grown;
}

bool move_mapping(void* addr, size_t old_size, size_t new_size, void* dest) {
  int saved_errno = errno;
  bool moved = mremap(addr, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dest) != MAP_FAILED;
  errno = saved_errno;
  return moved;
}

uint64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

bool environment_ready() { return environ != nullptr; }

const char* env(const char* name) {
  if (environ == nullptr) return nullptr;
  size_t len = strlen(name);
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  }
  return nullptr;
}

void write_fd(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
}

void write_stderr(const char* buf, size_t len) {
  int saved = errno;
  write_fd(2, buf, len);
  errno = saved;
}

void abort_process() {
  // abort() may flush stdio, which may allocate; raise SIGABRT directly, with
  // the default action restored so that a handler cannot swallow it.
  signal(SIGABRT, SIG_DFL);
  raise(SIGABRT);
  _exit(134);
}

void futex_wait(uint32_t* word, uint32_t expected) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_one(uint32_t* word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }

uint64_t random_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == sizeof seed && seed != 0) return seed;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (static_cast<uint64_t>(ts.tv_nsec) << 20) ^ reinterpret_cast<uintptr_t>(&seed) ^ 0x9E3779B97F4A7C15ull;
}

}  // namespace mallard::os
