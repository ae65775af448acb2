// Semantics of mallard's C API, through the mallard_* names only so that the
// test also runs under ThreadSanitizer and UBSan (label sanitize-core).
//
// Test order matters for one thing: the exact `allocated` accounting tests
// come first, before any test has started threads, because blocks freed by
// another thread may be counted until their owner collects them.
#include <mallard/mallard.h>

#include <gtest/gtest.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <bit>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "death_support.hpp"
#include "test_support.hpp"

using namespace mallard_test;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr size_t kSmallLimit = 128 * KiB;  // largest size-class block
constexpr size_t kLargeGranule = 4096;     // large blocks are page-granular

// The usable size the size-class design promises for a request of n bytes:
// 16-byte minimum, 8-byte steps up to 128, 8 classes per power of two up to
// 128 KiB, 4 KiB granules above. A class above 8 KiB that is a multiple of
// 4 KiB comes with one more cache line (its blocks are spaced by it).
size_t expected_usable(size_t n) {
  if (n <= 16) return 16;
  if (n <= 128) return round_up(n, 8);
  if (n <= kSmallLimit) {
    size_t cls = round_up(n, std::bit_floor(n - 1) / 8);
    return cls > 8 * KiB && cls % (4 * KiB) == 0 ? cls + 64 : cls;
  }
  return round_up(n, kLargeGranule);
}

// Sizes on both sides of every size-class boundary up to kSmallLimit, then
// large sizes up to `max`.
std::vector<size_t> class_boundary_sizes(size_t max) {
  std::set<size_t> sizes;
  auto add = [&](size_t c) {
    for (size_t n : {c - 1, c, c + 1})
      if (n >= 1 && n <= max) sizes.insert(n);
  };
  for (size_t c = 16; c <= 128; c += 8) add(c);
  for (size_t p = 128; p < kSmallLimit; p *= 2)
    for (size_t j = 1; j <= 8; ++j) add(p + j * (p / 8));
  for (size_t n = kSmallLimit; n <= max; n *= 2) {
    add(n);
    add(n + kLargeGranule);
    add(n + n / 2);
  }
  return {sizes.begin(), sizes.end()};
}

mallard_stats stats_now() {
  mallard_stats s{};
  EXPECT_EQ(mallard_stats_get(&s), 0);
  return s;
}

// Runs fn with file descriptor 2 redirected to a memory file; returns what
// was written to it.
std::string capture_stderr(const std::function<void()>& fn) {
  std::fflush(stderr);
  int saved = dup(2);
  int mem = memfd_create("mallard-test-stderr", 0);
  if (saved < 0 || mem < 0) return "<capture failed>";
  dup2(mem, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  char buf[4096];
  lseek(mem, 0, SEEK_SET);
  for (ssize_t n; (n = read(mem, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(mem);
  return text;
}

// Runs fn with `out` a FILE* writing to a memory file; returns the text.
std::string capture_file(const std::function<void(FILE*)>& fn) {
  int mem = memfd_create("mallard-test-file", 0);
  FILE* f = fdopen(mem, "w+");
  if (f == nullptr) return "<capture failed>";
  fn(f);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

// Validates JSON syntax and records every number under its key, at any
// depth (mallard_stats_print may nest its fields).
class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}
  bool parse() {
    bool ok = value("");
    ws();
    return ok && pos_ == s_.size();
  }
  std::map<std::string, std::vector<std::string>> numbers;

 private:
  void ws() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr) ++pos_;
  }
  bool eat(char c) {
    ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') ++pos_;
      if (pos_ < s_.size()) out->push_back(s_[pos_++]);
    }
    return eat('"');
  }
  bool value(const std::string& key) {
    ws();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      if (eat('}')) return true;
      do {
        std::string k;
        if (!string(&k) || !eat(':') || !value(k)) return false;
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      ++pos_;
      if (eat(']')) return true;
      do {
        if (!value(key)) return false;
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') {
      std::string ignored;
      return string(&ignored);
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return true;
      }
    }
    size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-0123456789.eE", s_[pos_]) != nullptr) ++pos_;
    if (pos_ == start) return false;
    numbers[key].emplace_back(s_.substr(start, pos_ - start));
    return true;
  }
  std::string_view s_;
  size_t pos_ = 0;
};

// Signed difference of two statistics (after - before).
int64_t delta(size_t after, size_t before) { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }

// For the checks that run in a fresh process (EXPECT_EXIT): says what was
// wrong and with which value, and ends the process with status 1.
[[noreturn]] void fail(const char* what, int64_t value) {
  std::fprintf(stderr, "%s (%lld)\n", what, static_cast<long long>(value));
  _exit(1);
}

// Fresh-process checks' threads: exit status 2 if one cannot be made or
// joined.
pthread_t start_thread(void* (*body)(void*), void* arg = nullptr) {
  pthread_t t;
  if (pthread_create(&t, nullptr, body, arg) != 0) _exit(2);
  return t;
}
void join_thread(pthread_t t) {
  if (pthread_join(t, nullptr) != 0) _exit(2);
}

// Runs `body` in a new thread and waits for it.
void run_in_a_thread(void* (*body)(void*)) { join_thread(start_thread(body)); }

// The bytes of blocks other threads freed that this thread takes back when
// it drains its remote stack (mallard_trim drains it).
// Fills `blocks` with new blocks of `size` bytes; returns their usable bytes
// (main's heap may be the process's first, which lends a class a larger
// class's blocks while young).
template <size_t N>
int64_t allocate_each(void* (&blocks)[N], size_t size) {
  int64_t made = 0;
  for (void*& p : blocks) made += static_cast<int64_t>(mallard_malloc_usable_size(p = mallard_malloc(size)));
  return made;
}

int64_t bytes_taken_back_by_draining() {
  mallard_stats before{}, after{};
  mallard_stats_get(&before);
  mallard_trim(0);
  mallard_stats_get(&after);
  return delta(before.allocated, after.allocated);
}

// Resident OS pages among those wholly inside [p, p + bytes), at most a
// segment's worth; SIZE_MAX if the range is not mapped or larger. Counted
// into a buffer on the stack: a vector would come from the calling thread's
// heap, and its class's new page could be one of those looked at.
size_t resident_pages(void* p, size_t bytes) {
  const uintptr_t page = page_size();
  uintptr_t first = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  unsigned char vec[4 * MiB / 4096];
  size_t count = (end - first) / page;
  if (count > sizeof vec || mincore(reinterpret_cast<void*>(first), end - first, vec) != 0) return SIZE_MAX;
  return static_cast<size_t>(std::count_if(vec, vec + count, [](unsigned char v) { return (v & 1) != 0; }));
}

// Whether transparent huge pages are always on: a fresh segment may then
// fault in 2 MiB at a time, and residency tests cannot see single pages.
bool thp_always() {
  char text[128] = {};
  int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY);
  if (fd < 0) return false;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 && std::strstr(text, "[always]") != nullptr;
}

const char* const kStatsFields[] = {"allocated", "active", "resident", "mapped", "metadata",
                                    "retained", "purged_total", "segments", "threads", "abandoned"};

}  // namespace

// ---------------------------------------------------------------------------
// Statistics: exact accounting first (see the note at the top).

TEST(Stats, AllocatedCountsLiveBlocksAtTheirUsableSize) {
  const size_t sizes[] = {1, 24, 100, 129, 1000, 5000, 70000, 200000, 3 * MiB + 5};
  std::vector<void*> blocks;
  blocks.reserve(std::size(sizes) * 10);
  mallard_stats before = stats_now();
  size_t usable_total = 0;
  for (int round = 0; round < 10; ++round) {
    for (size_t n : sizes) {
      void* p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      usable_total += mallard_malloc_usable_size(p);
      blocks.push_back(p);
    }
  }
  mallard_stats during = stats_now();
  EXPECT_EQ(during.allocated - before.allocated, usable_total);
  for (void* p : blocks) mallard_free(p);
  mallard_stats after = stats_now();
  EXPECT_EQ(after.allocated, before.allocated);
}

// Remote frees wait in the freeing thread's batch (src/core/remote.cpp) until
// it is full, the thread exits or trims; the owner then takes them back.
TEST(Stats, BlocksFreedByAThreadThatOnlyFreesComeBack) {
  const size_t sizes[] = {16, 24, 48, 100, 256, 1000, 5000, 70000};
  std::vector<void*> blocks;
  blocks.reserve(std::size(sizes) * 40);
  // glibc keeps some memory of the first threads it creates (their TLS
  // vectors, with the cached stacks): let it do so before counting.
  std::thread([] { mallard_free(mallard_malloc(16)); }).join();
  mallard_trim(0);
  mallard_stats before = stats_now();
  for (int round = 0; round < 40; ++round) {  // 320 blocks: several full batches and a partial one
    for (size_t n : sizes) blocks.push_back(mallard_malloc(n));
  }
  std::thread freer([&] {
    for (void* p : blocks) mallard_free(p);
  });
  freer.join();
  mallard_trim(0);  // the owner drains what the exited thread handed over
  EXPECT_EQ(stats_now().allocated, before.allocated);
  // Every block is reusable: allocate them again and check they are distinct.
  std::set<void*> again;
  for (int round = 0; round < 40; ++round) {
    for (size_t n : sizes) again.insert(mallard_malloc(n));
  }
  EXPECT_EQ(again.size(), blocks.size());
  for (void* p : again) mallard_free(p);
}

TEST(Stats, AllocatedFollowsEveryAllocationFunction) {
  mallard_stats before = stats_now();
  void* a = mallard_calloc(10, 100);
  void* b = mallard_realloc(nullptr, 300);
  void* c = nullptr;
  ASSERT_EQ(mallard_posix_memalign(&c, 4096, 5000), 0);
  void* d = mallard_aligned_alloc(256, 256);
  void* e = mallard_memalign(64, 1 * MiB);
  void* f = mallard_valloc(10);
  void* g = mallard_pvalloc(5000);
  void* h = mallard_reallocarray(nullptr, 7, 9);
  void* blocks[] = {a, b, c, d, e, f, g, h};
  size_t usable_total = 0;
  for (void* p : blocks) {
    ASSERT_NE(p, nullptr);
    usable_total += mallard_malloc_usable_size(p);
  }
  EXPECT_EQ(stats_now().allocated - before.allocated, usable_total);
  mallard_free(a);
  mallard_free_sized(b, 300);
  mallard_free(c);
  mallard_free_aligned_sized(d, 256, 256);
  mallard_free(e);
  mallard_free(f);
  mallard_free(g);
  mallard_free_sized(h, 63);
  EXPECT_EQ(stats_now().allocated, before.allocated);
}

TEST(Stats, GetRejectsNull) { EXPECT_EQ(mallard_stats_get(nullptr), EINVAL); }

TEST(Stats, FieldsMoveInTheRightDirection) {
  // Hold the purge back so that only our own trim releases memory.
  std::string saved_delay = mallard_option_get("purge_delay_ms");
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "100000"), 0);
  constexpr size_t kSmallBytes = 32 * MiB, kBlock = 1000, kLarge = 16 * MiB;
  // The test's own bookkeeping is allocated before the first snapshot (in
  // override builds std::vector uses mallard too).
  std::vector<void*> blocks;
  blocks.reserve(kSmallBytes / kBlock + 2);
  mallard_trim(0);
  mallard_stats s0 = stats_now();
  EXPECT_LE(s0.allocated, s0.active);
  EXPECT_LE(s0.active, s0.mapped);

  for (size_t total = 0; total < kSmallBytes; total += kBlock) {
    void* p = mallard_malloc(kBlock);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5A, kBlock);
    blocks.push_back(p);
  }
  void* large = mallard_malloc(kLarge);
  ASSERT_NE(large, nullptr);
  std::memset(large, 0x5A, kLarge);
  blocks.push_back(large);
  constexpr size_t kHeld = kSmallBytes + kLarge;

  mallard_stats s1 = stats_now();
  const int64_t held = kHeld, most_of_held = kHeld * 9 / 10;
  EXPECT_GE(delta(s1.allocated, s0.allocated), held);
  EXPECT_GE(delta(s1.active, s0.active), held);
  EXPECT_GE(delta(s1.resident, s0.resident), most_of_held) << "we touched every byte after a trim";
  EXPECT_GT(s1.segments, s0.segments);
  EXPECT_GT(s1.metadata, 0u);
  EXPECT_GE(s1.threads, 1u);
  EXPECT_LE(s1.allocated, s1.active);
  EXPECT_LE(s1.active, s1.mapped);

  for (void* p : blocks) mallard_free(p);
  mallard_stats s2 = stats_now();
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_GE(delta(s1.active, s2.active), most_of_held) << "pages without a live block are not active";
  EXPECT_LE(s2.active, s2.mapped);

  // Freed pages may be purged at once (beyond the dirty-memory cap) or wait
  // for the delay; a trim purges what is left. Both together return the
  // peak, and the small blocks' pages are counted as purged.
  const int first_trim = mallard_trim(0);
  const int second_trim = mallard_trim(0);
  mallard_stats s3 = stats_now();
  EXPECT_EQ(first_trim, 1) << "freed pages were waiting for the (long) purge delay";
  EXPECT_EQ(second_trim, 0) << "nothing was freed since the last trim";
  EXPECT_GT(delta(s2.resident, s3.resident), 0) << "the trim released nothing resident";
  EXPECT_GE(delta(s1.resident, s3.resident), most_of_held);
  EXPECT_GE(delta(s3.purged_total, s1.purged_total), int64_t{kSmallBytes * 9 / 10});
  EXPECT_GT(s3.purged_total, s2.purged_total);

  ASSERT_EQ(mallard_option_set("purge_delay_ms", saved_delay.c_str()), 0);
}

// Whether this kernel purges several ranges of the calling process in one
// process_madvise (what mallard tries first), found out on the test's own
// memory, independently of mallard: two separate pages go, the one between
// them stays.
bool kernel_purges_ranges_in_one_call() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* m = static_cast<char*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (m == MAP_FAILED) return false;
  std::memset(m, 1, 3 * page);
  iovec ranges[2] = {{m, page}, {m + 2 * page, page}};
  constexpr int kPidfdSelf = -10000;  // PIDFD_SELF
  long done = syscall(SYS_process_madvise, kPidfdSelf, ranges, 2, MADV_DONTNEED, 0);
  bool batched = done == static_cast<long>(2 * page) && m[0] == 0 && m[page] == 1 && m[2 * page] == 0;
  munmap(m, 3 * page);
  return batched;
}

uint64_t printed_purge_calls() {
  std::string json = capture_file([](FILE* f) { mallard_stats_print(f, "J"); });
  JsonReader reader(json);
  EXPECT_TRUE(reader.parse()) << "not valid JSON:\n" << json;
  EXPECT_EQ(reader.numbers["purge_calls"].size(), 1u) << json;
  return reader.numbers["purge_calls"].empty() ? 0 : std::stoull(reader.numbers["purge_calls"].front());
}

// Pages freed past the dirty cap are purged a quarter of the cap at a time,
// all in one system call where the kernel allows it: a program freeing a big
// structure paid one madvise per 64 KiB page before. The freed pages here
// are every other page, so no two of them make one range; their neighbours
// stay in use and must keep their contents.
TEST(Purge, PagesPastTheDirtyCapGoBackInFewSystemCalls) {
  std::string saved_delay = mallard_option_get("purge_delay_ms");
  std::string saved_cap = mallard_option_get("dirty_max_kb");
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "100000"), 0);  // only the cap purges
  ASSERT_EQ(mallard_option_set("dirty_max_kb", "1024"), 0);      // 16 pages of 64 KiB
  constexpr size_t kBlock = 1024, kBlocks = 256 * (64 * KiB / kBlock);
  const bool batched = kernel_purges_ranges_in_one_call();
  // A thread of its own: a fresh heap, whose pages hold only these blocks.
  std::thread([&] {
    std::vector<void*> blocks;
    blocks.reserve(kBlocks);
    for (size_t i = 0; i < kBlocks; ++i) {
      auto* p = static_cast<unsigned char*>(mallard_malloc(kBlock));
      ASSERT_NE(p, nullptr);
      std::memset(p, static_cast<int>(i & 0xFF), kBlock);
      blocks.push_back(p);
    }
    std::set<uintptr_t> freed_pages;
    for (void* p : blocks) {
      uintptr_t page = reinterpret_cast<uintptr_t>(p) >> 16;
      if (page % 2 == 0) freed_pages.insert(page);
    }
    uint64_t calls_before = printed_purge_calls();
    for (void*& p : blocks) {
      if ((reinterpret_cast<uintptr_t>(p) >> 16) % 2 != 0) continue;
      mallard_free(p);
      p = nullptr;
    }
    uint64_t calls = printed_purge_calls() - calls_before;
    // A freed page no longer resident in full was purged (each was one range).
    size_t purged = 0;
    const size_t os_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (uintptr_t page : freed_pages) {
      unsigned char resident[64 * KiB / 4096];
      ASSERT_EQ(mincore(reinterpret_cast<void*>(page << 16), 64 * KiB, resident), 0);
      size_t in_memory = 0;
      for (size_t i = 0; i < 64 * KiB / os_page; ++i) in_memory += resident[i] & 1;
      purged += in_memory == 0;
    }
    // All but the cap's 16 pages and the class's two kept pages.
    EXPECT_GE(purged + 18, freed_pages.size()) << "freed pages were not purged";
    if (batched) {
      EXPECT_LE(calls * 3, purged) << calls << " system calls for " << purged << " separate ranges";
    } else {
      EXPECT_GE(calls, purged) << "without batches, each range takes a madvise";
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      auto* p = static_cast<unsigned char*>(blocks[i]);
      if (p == nullptr) continue;
      ASSERT_EQ(p[0], i & 0xFF) << "a live neighbour of a purged page lost its contents";
      ASSERT_EQ(p[kBlock - 1], i & 0xFF);
      mallard_free(p);
    }
  }).join();
  ASSERT_EQ(mallard_option_set("dirty_max_kb", saved_cap.c_str()), 0);
  ASSERT_EQ(mallard_option_set("purge_delay_ms", saved_delay.c_str()), 0);
}

// A heap that frees more than its dirty cap and then allocates it again
// within the purge delay would purge and fault in all but the cap every
// time: its cap grows when it takes back memory it was made to purge, up to
// 32 times dirty_max_kb. A cycle of 6 MiB under a 1 MiB cap purges about 5
// MiB at first and nothing once the cap has grown; one of 48 MiB still
// purges all but 32 MiB; a heap that frees far more than its grown cap is
// shedding a peak and keeps 1 MiB again. In a fresh process: a heap adopted
// from an earlier test's thread would start with its cap grown.
namespace dirty_cap_grows {
// Bytes purged while this thread allocates `bytes` of 1 KiB blocks, writes
// them, and frees them all.
int64_t purged_by_one_cycle(size_t bytes) {
  constexpr size_t kBlock = 1024;
  std::vector<void*> blocks(bytes / kBlock);
  mallard_stats before = stats_now();
  for (void*& p : blocks) {
    p = mallard_malloc(kBlock);
    if (p == nullptr) _exit(2);
    std::memset(p, 0x5A, kBlock);
  }
  for (void* p : blocks) mallard_free(p);
  return delta(stats_now().purged_total, before.purged_total);
}

void fail(const char* what, int64_t bytes) {
  std::fprintf(stderr, "%s (%lld bytes purged)\n", what, static_cast<long long>(bytes));
  _exit(1);
}

void run() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("purge_delay_ms", "100000") != 0) _exit(2);  // only the cap purges
  if (mallard_option_set("dirty_max_kb", "1024") != 0) _exit(2);
  std::thread([] {
    int64_t first = purged_by_one_cycle(6 * MiB);
    if (first < int64_t{4 * MiB}) fail("the first cycle kept more than the 1 MiB cap", first);
    int64_t last = 0;
    for (int cycle = 0; cycle < 5; ++cycle) last = purged_by_one_cycle(6 * MiB);
    if (last > int64_t{MiB / 2}) fail("the cap did not grow to what the heap takes back", last);
    // A peak ten times the grown cap is shed, not cycled through: the heap
    // goes back to keeping 1 MiB: 79.6 MiB purged; keeping its grown cap, 75.7.
    int64_t shed = purged_by_one_cycle(80 * MiB);
    if (shed < int64_t{77 * MiB + MiB / 2}) fail("a heap with a grown cap kept it after shedding a large peak", shed);
  }).join();
  std::thread([] {
    int64_t last = 0;
    for (int cycle = 0; cycle < 6; ++cycle) last = purged_by_one_cycle(48 * MiB);
    if (last < int64_t{15 * MiB}) fail("the cap grew past 32 times dirty_max_kb", last);
  }).join();
  _exit(0);
}
}  // namespace dirty_cap_grows

TEST(Purge, DirtyCapGrowsForAHeapThatTakesBackWhatItPurged) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(dirty_cap_grows::run(), testing::ExitedWithCode(0), "");
}

// A heap that holds thp_heap_mb of segments advises the segments it takes
// next for transparent huge pages; a smaller one never does. A segment keeps
// the advice while a purge leaves it at least half in use, and takes it back
// when one leaves it less (khugepaged would otherwise collapse each range of
// a few live blocks into a whole resident huge page again). The advice shows
// in the mapping's VmFlags: "hg" for MADV_HUGEPAGE, "nh" for MADV_NOHUGEPAGE.
// A kernel without THP refuses both, which the test finds out on memory of
// its own. With thp_heap_mb 0, no segment is advised. In a fresh process, so
// that the thread's heap starts empty.
namespace huge_pages {
constexpr uintptr_t kSegment = 4 * 1024 * 1024;

bool kernel_takes_the_advice() {
  const size_t size = 2 * kSegment;
  void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  bool taken = madvise(m, size, MADV_HUGEPAGE) == 0;
  munmap(m, size);
  return taken;
}

// The VmFlags of the mapping holding p, from /proc/self/smaps ("" if none).
std::string vma_flags(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) _exit(2);
  char line[512];
  bool inside = false;
  std::string flags;
  auto address = reinterpret_cast<uintptr_t>(p);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &start, &end) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = start <= address && address < end;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line + 8;
      break;
    }
  }
  std::fclose(f);
  return flags;
}

bool has_flag(std::string flags, const char* flag) {
  std::replace(flags.begin(), flags.end(), '\n', ' ');
  return (" " + flags + " ").find(" " + std::string(flag) + " ") != std::string::npos;
}

void fail(const char* what, const void* p) {
  std::fprintf(stderr, "%s: block %p, VmFlags:%s", what, p, vma_flags(p).c_str());
  _exit(1);
}

void run() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("purge_delay_ms", "100000") != 0) _exit(2);
  if (mallard_option_set("dirty_max_kb", "0") != 0) _exit(2);  // every emptied page is purged at once
  if (mallard_option_set("thp_heap_mb", "16") != 0) _exit(2);  // from the fifth segment on
  if (mallard_option_set("prefault_heap_mb", "0") != 0) _exit(2);  // only the advice makes pages resident
  const bool advised = kernel_takes_the_advice();
  std::thread([advised] {
    constexpr size_t kBlock = 1024, kPage = 64 * KiB;
    std::vector<void*> blocks(40 * MiB / kBlock);
    for (void*& p : blocks) {
      p = mallard_malloc(kBlock);
      if (p == nullptr) _exit(2);
      std::memset(p, 0x5A, kBlock);
    }
    // 30 MiB in: a whole segment the heap took past thp_heap_mb.
    void* first = blocks.front();
    void* later = blocks[blocks.size() * 3 / 4];
    if (has_flag(vma_flags(first), "hg")) fail("the heap's first segment was advised for huge pages", first);
    if (has_flag(vma_flags(later), "hg") != advised) fail("a segment past thp_heap_mb was not advised for huge pages", later);
    auto segment = reinterpret_cast<uintptr_t>(later) & ~(kSegment - 1);
    // Free the blocks of pages [from, to) of that segment.
    auto free_pages = [&](size_t from, size_t to) {
      for (void*& p : blocks) {
        auto address = reinterpret_cast<uintptr_t>(p);
        if (p == nullptr || address < segment + from * kPage || address >= segment + to * kPage) continue;
        mallard_free(p);
        p = nullptr;
      }
    };
    // A quarter of its pages: purged (all but the class's two kept pages),
    // and the segment, three quarters in use, keeps its advice.
    free_pages(16, 32);
    size_t resident = resident_pages(reinterpret_cast<void*>(segment + 16 * kPage), 16 * kPage);
    if (resident > 2 * kPage / page_size()) fail("the freed pages of a segment with huge pages were not purged", later);
    if (has_flag(vma_flags(later), "hg") != advised) fail("a segment three quarters in use lost its advice", later);
    // All but its first page: the purges leave it less than half in use.
    free_pages(1, kSegment / kPage);
    if (has_flag(vma_flags(later), "hg")) fail("a segment mostly purged kept its advice for huge pages", later);
    if (advised && !has_flag(vma_flags(later), "nh")) fail("a segment mostly purged did not take its advice back", later);
    for (void* p : blocks) mallard_free(p);
  }).join();
  // Off: a heap as large advises none of its segments.
  if (mallard_option_set("thp_heap_mb", "0") != 0) _exit(2);
  std::thread([] {
    std::vector<void*> blocks(40 * MiB / 1024);
    for (void*& p : blocks) {
      p = mallard_malloc(1024);
      if (p == nullptr) _exit(2);
      std::memset(p, 0x5A, 1024);
    }
    if (has_flag(vma_flags(blocks.back()), "hg")) fail("thp_heap_mb:0 still advised huge pages", blocks.back());
    for (void* p : blocks) mallard_free(p);
  }).join();
  _exit(0);
}
}  // namespace huge_pages

TEST(Purge, HugePagesForALargeHeapUntilItsSegmentsArePurged) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(huge_pages::run(), testing::ExitedWithCode(0), "");
}

// A heap that holds prefault_heap_mb of segments populates the fresh pages of
// the small segments it takes next a MiB at a time: handing out the first
// page of each MiB makes the whole MiB resident, before any block of its
// other pages is written; the next MiB stays untouched, and a trim purges
// what was populated but not handed out. In the medium segments it takes
// next, each block is populated as it is carved. A smaller heap populates
// nothing, and with prefault_heap_mb 0 no heap does. In a fresh process, so
// that the thread's heap starts empty and takes its pages in order (one
// class, nothing freed).
namespace prefault {
constexpr uintptr_t kSegment = 4 * 1024 * 1024, kPage = 64 * KiB;
constexpr size_t kMaxBlocks = 3 * kSegment / 1024;  // 1 KiB blocks to page 20 of a third segment

void fail(const char* what, uintptr_t segment, size_t page) {
  std::fprintf(stderr, "%s: segment %#lx, page %zu\n", what, static_cast<unsigned long>(segment), page);
  _exit(1);
}

// Allocates 1 KiB blocks into `blocks`, writing each, until one lands on page
// 20 (the fifth page of the second MiB) of the heap's `nth` segment (from 1);
// returns that segment.
uintptr_t fill_to_page_20_of_segment(int nth, std::vector<void*>& blocks) {
  uintptr_t segment = 0;
  int segments = 0;
  for (;;) {
    void* p = mallard_malloc(1024);
    if (p == nullptr) _exit(2);
    std::memset(p, 0x5A, 1024);
    blocks.push_back(p);
    auto address = reinterpret_cast<uintptr_t>(p);
    if ((address & ~(kSegment - 1)) != segment) {
      segment = address & ~(kSegment - 1);
      ++segments;
    }
    if (segments == nth && (address - segment) / kPage == 20) return segment;
    if (segments > nth || blocks.size() == kMaxBlocks) _exit(2);  // pages not taken in order: the test's premise fails
  }
}

// Resident OS pages of the segment's pages [first, last].
size_t resident_in_pages(uintptr_t segment, size_t first, size_t last) {
  size_t resident = resident_pages(reinterpret_cast<void*>(segment + first * kPage), (last - first + 1) * kPage);
  if (resident == SIZE_MAX) _exit(2);
  return resident;
}

// A fresh process whose heaps populate from their third segment on.
void prefault_from_the_third_segment() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("thp_heap_mb", "0") != 0) _exit(2);
  if (mallard_option_set("prefault_heap_mb", "8") != 0) _exit(2);
  if (mallard_option_set("extent_heap_mb", "0") != 0) _exit(2);  // medium blocks from their classes
}

void run() {
  prefault_from_the_third_segment();
  const size_t os_pages_per_page = kPage / page_size();
  std::thread([&] {
    std::vector<void*> blocks;
    blocks.reserve(kMaxBlocks);  // one allocation, before the heap takes any small page
    uintptr_t first = fill_to_page_20_of_segment(1, blocks);
    if (resident_in_pages(first, 21, 31) != 0) fail("a small heap populated pages it had not handed out", first, 21);
    uintptr_t third = fill_to_page_20_of_segment(3, blocks);
    if (resident_in_pages(third, 21, 31) != 11 * os_pages_per_page) {
      fail("a heap past prefault_heap_mb did not populate the rest of the MiB", third, 21);
    }
    if (resident_in_pages(third, 32, 47) != 0) fail("a heap populated the MiB after the one it uses", third, 32);
    // Medium pages are not populated a MiB at a time: a MiB holds one, of
    // one class, whose few blocks may be all that class ever has (DESIGN.md
    // "Medium classes reuse freed blocks"). In a medium segment taken now,
    // each block is populated whole as it is carved, and nothing after it;
    // in the medium segment taken before the heap was large (it holds
    // `blocks`' array), a block's pages past its first stay untouched until
    // written. Blocks of one class after another take a page each until one
    // lands in a segment taken now. On the stack: a vector's array would
    // take a small page the checks below see.
    uintptr_t first_medium = reinterpret_cast<uintptr_t>(blocks.data()) & ~(kSegment - 1);
    void* medium_blocks[8];
    size_t medium_count = 0;
    for (size_t kib : {64, 56, 48, 40, 32, 24, 20, 16}) {
      void* medium = mallard_malloc(kib * KiB);
      if (medium == nullptr) _exit(2);
      medium_blocks[medium_count++] = medium;
      auto start = reinterpret_cast<uintptr_t>(medium);
      uintptr_t first_os_page = start & ~(page_size() - 1);
      uintptr_t rest = (start + kib * KiB + page_size() - 1) & ~(page_size() - 1);
      if ((start & ~(kSegment - 1)) == first_medium) {
        if (resident_pages(reinterpret_cast<void*>(first_os_page + page_size()), rest - first_os_page - page_size()) != 0) {
          fail("a small heap populated a medium block", first_medium, 0);
        }
        continue;
      }
      if (resident_pages(reinterpret_cast<void*>(first_os_page), rest - first_os_page) != (rest - first_os_page) / page_size()) {
        fail("a heap past prefault_heap_mb did not populate a fresh medium block", start & ~(kSegment - 1), 0);
      }
      uintptr_t medium_page_end = ((start + kib * KiB) | (MiB - 1)) + 1;
      if (resident_pages(reinterpret_cast<void*>(rest), medium_page_end - rest) != 0) {
        fail("a heap populated a medium page ahead of its blocks", rest & ~(kSegment - 1), 0);
      }
      break;
    }
    if ((reinterpret_cast<uintptr_t>(medium_blocks[medium_count - 1]) & ~(kSegment - 1)) == first_medium) _exit(2);
    for (size_t i = 0; i < medium_count; ++i) mallard_free(medium_blocks[i]);
    // A trim gives the populated pages not handed out back, like free ones
    // (the segment stays: the block on page 20 is live).
    for (size_t i = 0; i + 1 < blocks.size(); ++i) mallard_free(blocks[i]);
    mallard_trim(0);
    if (resident_in_pages(third, 21, 31) != 0) fail("a trim left populated pages resident", third, 21);
    mallard_free(blocks.back());
  }).join();
  // The exited thread's heap keeps a class's last pages: the trim gives them
  // back, so that the next thread has no orphan with segments to absorb.
  mallard_trim(0);
  if (mallard_option_set("prefault_heap_mb", "0") != 0) _exit(2);
  std::thread([&] {
    std::vector<void*> blocks;
    blocks.reserve(kMaxBlocks);  // one allocation, before the heap takes any small page
    uintptr_t third = fill_to_page_20_of_segment(3, blocks);
    if (resident_in_pages(third, 21, 31) != 0) fail("prefault_heap_mb:0 still populated pages", third, 21);
    for (void* p : blocks) mallard_free(p);
  }).join();
  _exit(0);
}
// A thread that exits with its blocks still allocated leaves its heap, an
// orphan, holding the segment; what the heap populated ahead of them goes
// back at the exit, not when (if ever) a thread adopts the heap.
void run_exit() {
  prefault_from_the_third_segment();
  uintptr_t third = 0;
  std::thread([&] {
    std::vector<void*> blocks;
    blocks.reserve(kMaxBlocks);
    third = fill_to_page_20_of_segment(3, blocks);
    if (resident_in_pages(third, 21, 31) != 11 * (kPage / page_size())) {
      fail("a heap past prefault_heap_mb did not populate the rest of the MiB", third, 21);
    }
  }).join();
  if (resident_in_pages(third, 21, 31) != 0) fail("an exited thread's heap kept the pages it populated ahead", third, 21);
  _exit(0);
}

}  // namespace prefault

TEST(Purge, FreshPagesOfALargeHeapArePopulatedAMiBAtATime) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(prefault::run(), testing::ExitedWithCode(0), "");
}

TEST(Purge, AThreadsExitPurgesThePagesItsHeapPopulatedAhead) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(prefault::run_exit(), testing::ExitedWithCode(0), "");
}

// A medium class out of free blocks on its first page takes a block freed on a page
// it had filled before it carves more of the first page: carving makes more
// memory resident, and the block freed there is resident already (regrow,
// DESIGN.md "Medium classes reuse freed blocks"). The
// largest class, whose pages hold 7 blocks, one carved at a time, in a
// fresh process (no orphan heap to take pages from) and a new thread.
namespace reuse_before_carving {
void run() {
  std::thread([] {
    constexpr size_t kBlock = 128 * KiB;
    std::vector<void*> blocks;
    for (;;) {
      void* p = mallard_malloc(kBlock);
      if (p == nullptr || blocks.size() == 64) _exit(2);
      blocks.push_back(p);
      // The first block on a second page: the first page is full.
      if (blocks.size() > 1 && (reinterpret_cast<uintptr_t>(p) ^ reinterpret_cast<uintptr_t>(blocks[0])) >= MiB) break;
    }
    if (blocks.size() < 3) _exit(2);
    void* freed = blocks[1];
    mallard_free(freed);
    void* next = mallard_malloc(kBlock);
    if (next != freed) {
      std::fprintf(stderr, "carved %p on the newer page instead of reusing %p\n", next, freed);
      _exit(1);
    }
    mallard_free(next);
    blocks.erase(blocks.begin() + 1);
    for (void* p : blocks) mallard_free(p);
  }).join();
  _exit(0);
}
}  // namespace reuse_before_carving

TEST(Pages, AMediumClassReusesFreedBlocksBeforeCarvingMore) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(reuse_before_carving::run(), testing::ExitedWithCode(0), "");
}

TEST(Pages, ASmallClassAbove1KiBReusesFreedBlocksBeforeCarvingMore) {
  // A thread that keeps its 20 newest 4 KiB blocks, freeing the oldest for
  // each new one, as iopath's submitters do with their data buffers. The
  // freed blocks are on the page its class filled first, which went back to
  // the end of the class's queue; a class of 4 KiB blocks used to carve the
  // page at the front to its end first, a new 4 KiB page for each carved
  // block: the library before grew `resident` by 32 KiB here (DESIGN.md
  // "Classes above 1 KiB reuse freed blocks before carving").
  std::thread([] {
    constexpr size_t kSize = 4096;
    constexpr int kLive = 20;
    void* ring[kLive];
    for (auto& block : ring) {
      block = mallard_malloc(kSize);
      ASSERT_NE(block, nullptr);
      std::memset(block, 0x5a, kSize);
    }
    mallard_stats before{};
    ASSERT_EQ(mallard_stats_get(&before), 0);
    for (int i = 0; i < 40 * kLive; ++i) {
      void*& oldest = ring[i % kLive];
      mallard_free(oldest);
      oldest = mallard_malloc(kSize);
      ASSERT_NE(oldest, nullptr);
      std::memset(oldest, 0x5a, kSize);
    }
    mallard_stats after{};
    ASSERT_EQ(mallard_stats_get(&after), 0);
    for (void* block : ring) mallard_free(block);
    // Slack for a carving that ends past the block it needed.
    EXPECT_LE(after.resident, before.resident + 8 * KiB)
        << "resident " << before.resident << " bytes with 20 blocks live, " << after.resident << " after cycling them";
  }).join();
}

// A medium class with no free block takes a free one of a class up to
// twice its size before it carves memory of its own, and leaves one of a
// class further up alone (DESIGN.md "Medium classes reuse freed blocks",
// "Medium classes borrow from classes up to twice their size"). In a new
// thread of a fresh process, whose heap has no 16 KiB page.
namespace borrow_larger {
void run() {
  std::thread([] {
    void* larger = mallard_malloc(32 * KiB);   // the largest class at most twice 16 KiB
    void* keeper = mallard_malloc(32 * KiB);   // keeps the page in use
    void* too_large = mallard_malloc(36 * KiB);  // the class after it
    void* keeper2 = mallard_malloc(36 * KiB);
    if (larger == nullptr || keeper == nullptr || too_large == nullptr || keeper2 == nullptr) _exit(2);
    mallard_free(too_large);
    mallard_free(larger);
    void* p = mallard_malloc(16 * KiB);
    if (p != larger) {
      std::fprintf(stderr, "16 KiB came from %p, not the free 32 KiB block %p\n", p, larger);
      _exit(1);
    }
    if (mallard_malloc_usable_size(p) < 32 * KiB) _exit(1);
    std::memset(p, 0x5A, 32 * KiB);
    // The free 36 KiB block is more than twice as large: 16 KiB takes a
    // page of its own.
    void* q = mallard_malloc(16 * KiB);
    if (q == nullptr || q == too_large) {
      std::fprintf(stderr, "16 KiB took the free 36 KiB block %p\n", too_large);
      _exit(1);
    }
    for (void* block : {p, q, keeper, keeper2}) mallard_free(block);
  }).join();
  _exit(0);
}
}  // namespace borrow_larger

TEST(Pages, AMediumClassTakesFreeBlocksOfTheNextClasses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(borrow_larger::run(), testing::ExitedWithCode(0), "");
}

// `resident` follows what the OS holds: a thread's segment headers count
// their touched OS pages, not 16 KiB each, and a freed page as far as its
// blocks were carved, not its whole 64 KiB. A thread of a fresh process (so
// that it maps segments of its own, which mincore can then look at) holds a
// small and a medium block, frees them and exits; at both points the change
// in `resident` is within a few OS pages of the resident pages of its two
// segments (the slack is the heap itself and the main thread's own
// allocations meanwhile).
namespace resident_follows_the_os {
constexpr uintptr_t kSegment = 4 * 1024 * 1024;
std::latch holding(1), measured(1);
void* blocks[2];
void* hold_then_free(void*) {
  blocks[0] = mallard_malloc(64);
  blocks[1] = mallard_malloc(32 * 1024);
  std::memset(blocks[0], 1, 64);
  std::memset(blocks[1], 1, 32 * 1024);
  holding.count_down();
  measured.wait();
  mallard_free(blocks[0]);
  mallard_free(blocks[1]);
  return nullptr;
}
// Resident bytes of the segment holding p (0 once it is unmapped).
size_t segment_resident(void* p) {
  const size_t page = page_size();
  auto* segment = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(kSegment - 1));
  std::vector<unsigned char> vec(kSegment / page);
  if (mincore(segment, kSegment, vec.data()) != 0) return 0;
  return page * static_cast<size_t>(std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1) != 0; }));
}
void run() {
  const int64_t slack = static_cast<int64_t>(3 * page_size());
  auto check = [&](const char* when, const mallard_stats& before, const mallard_stats& now) {
    int64_t by_stats = delta(now.resident, before.resident);
    int64_t by_os = static_cast<int64_t>(segment_resident(blocks[0]) + segment_resident(blocks[1]));
    if (by_stats < by_os - slack || by_stats > by_os + slack) {
      std::fprintf(stderr, "%s: resident grew by %lld, the thread's segments hold %lld\n", when, static_cast<long long>(by_stats),
                   static_cast<long long>(by_os));
      _exit(1);
    }
  };
  mallard_stats start = stats_now();
  if (start.abandoned != 0) _exit(2);  // not a fresh process
  pthread_t t;
  if (pthread_create(&t, nullptr, hold_then_free, nullptr) != 0) _exit(2);
  holding.wait();
  if ((reinterpret_cast<uintptr_t>(blocks[0]) & ~(kSegment - 1)) == (reinterpret_cast<uintptr_t>(blocks[1]) & ~(kSegment - 1))) _exit(2);
  check("holding its blocks", start, stats_now());
  measured.count_down();
  pthread_join(t, nullptr);
  check("after its exit", start, stats_now());
  _exit(0);
}
}  // namespace resident_follows_the_os

TEST(Stats, ResidentFollowsWhatTheOsHolds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(resident_follows_the_os::run(), testing::ExitedWithCode(0), "");
}

TEST(Stats, ThreadsCountsLiveThreadHeaps) {
  mallard_stats s0 = stats_now();
  void* left_behind = nullptr;
  bool allocated = false, may_exit = false;
  std::mutex m;
  std::condition_variable cv;
  std::thread t([&] {
    void* p = mallard_malloc(100);
    std::unique_lock lock(m);
    left_behind = p;
    allocated = true;
    cv.notify_all();
    cv.wait(lock, [&] { return may_exit; });
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return allocated; });
  }
  EXPECT_EQ(stats_now().threads, s0.threads + 1);
  {
    std::lock_guard lock(m);
    may_exit = true;
  }
  cv.notify_all();
  t.join();
  EXPECT_EQ(stats_now().threads, s0.threads) << "an exited thread hands its heap back";
  ASSERT_NE(left_behind, nullptr);
  mallard_free(left_behind);  // a block owned by an exited thread
}

// A thread that runs while another exits takes over the exited thread's
// pages when it needs a page it does not have (orphan_absorb): it allocates
// from the pages the other used instead of new memory. Blocks of those
// pages freed afterwards, even ones already on their way to the exited
// thread's heap, reach the new owner.
// A thread whose first call frees a block of an exited thread adopts that
// thread's heap, not merely the most recently orphaned one: the block is then
// freed locally and is the next one of its size the thread allocates. (Plain
// pthreads: a std::thread frees its state at exit, and the batch page that
// takes would absorb the other orphan into the exiting heap.)
namespace adoption {
constexpr size_t kSize = 48;
void* from_first = nullptr;
void* from_second = nullptr;
void* reused = nullptr;
std::latch both_allocated(2);
std::latch first_gone(1);
void* first(void*) {
  from_first = mallard_malloc(kSize);
  both_allocated.count_down();
  both_allocated.wait();
  return nullptr;
}
void* second(void*) {
  from_second = mallard_malloc(kSize);
  both_allocated.count_down();
  first_gone.wait();  // exits last: its heap is the most recent orphan
  return nullptr;
}
void* adopter(void*) {
  mallard_free(from_first);
  reused = mallard_malloc(kSize);
  return nullptr;
}
}  // namespace adoption

TEST(Orphans, AThreadWhoseFirstCallFreesAnExitedThreadsBlockAdoptsItsHeap) {
  using namespace adoption;
  // This thread's heap first, should no earlier test have made it (run
  // alone under TSan, whose malloc is not mallard's): the process's first
  // heap serves a 48-byte request with a larger class's block while young.
  mallard_free(mallard_malloc(kSize));
  pthread_t a, b, c;
  ASSERT_EQ(pthread_create(&a, nullptr, first, nullptr), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, second, nullptr), 0);
  pthread_join(a, nullptr);
  first_gone.count_down();
  pthread_join(b, nullptr);
  ASSERT_EQ(pthread_create(&c, nullptr, adopter, nullptr), 0);
  pthread_join(c, nullptr);
  EXPECT_EQ(reused, from_first);
  mallard_free(reused);
  mallard_free(from_second);
}

// A live heap that absorbs an exited thread's heap while it has a fresh
// segment of its own keeps the other's fresh segment as it is: the page
// descriptors not handed out yet stay untouched, so that segment's header
// costs one OS page, not three (8 KiB a thread in sizes:32B; DESIGN.md). The
// heap uses up its own fresh segment first, then the absorbed one.
// (Plain pthreads, as above; it runs in a fresh process, where no earlier
// test's orphans can be absorbed or adopted instead.)
namespace fresh_absorb {
constexpr uintptr_t kSegmentBytes = uintptr_t{4} << 20;
uintptr_t segment_of(const void* p) { return reinterpret_cast<uintptr_t>(p) & ~(kSegmentBytes - 1); }
void* a_block = nullptr;
void* b_first = nullptr;
std::vector<void*> b_blocks;
std::latch b_has_heap(1);
std::latch a_gone(1);
void* exiting(void*) {
  b_has_heap.wait();  // b's heap is its own, not this one adopted
  a_block = mallard_malloc(48);
  return nullptr;
}
void* absorbing(void*) {
  b_first = mallard_malloc(48);
  b_has_heap.count_down();
  a_gone.wait();
  // A class it has no page of: the first new page absorbs the orphan. 66
  // pages of 8 KiB blocks: 63 from its own segment, then 3 of the absorbed one.
  for (int i = 0; i < 8 * 66; ++i) b_blocks.push_back(mallard_malloc(8192));
  return nullptr;
}
// Exits 0 if every check holds, else prints the first that failed and exits 1.
void run() {
  b_blocks.reserve(8 * 66);
  pthread_t a, b;
  if (pthread_create(&b, nullptr, absorbing, nullptr) != 0 || pthread_create(&a, nullptr, exiting, nullptr) != 0) _exit(2);
  pthread_join(a, nullptr);
  a_gone.count_down();
  pthread_join(b, nullptr);
  uintptr_t own = segment_of(b_first), absorbed = segment_of(a_block);
  auto fail = [](const char* what) {
    std::fprintf(stderr, "%s\n", what);
    _exit(1);
  };
  if (own == absorbed) fail("the two threads shared a segment");
  if (segment_of(b_blocks.front()) != own) fail("the first new page did not come from the heap's own fresh segment");
  if (segment_of(b_blocks.back()) != absorbed) fail("the absorbed fresh segment was not used after the heap's own");
  // The absorbed segment hosts the exited thread's heap: the header's first
  // OS page holds its fields, that heap and descriptors 0-4; descriptors
  // 5-63 fill its second and third OS pages. Only pages 0-3 were handed out.
  if (!thp_always()) {
    unsigned char resident[2] = {};
    if (mincore(reinterpret_cast<void*>(absorbed + 4096), 8192, resident) != 0) fail("mincore failed");
    if ((resident[0] | resident[1]) & 1) fail("the absorbed segment's unused page descriptors were written");
  }
  _exit(0);
}
}  // namespace fresh_absorb

TEST(Orphans, AnAbsorbedFreshSegmentKeepsItsUnusedDescriptorsUntouched) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fresh_absorb::run(), testing::ExitedWithCode(0), "");
}

// A thread that starts after another exited may get its thread pointer: glibc
// gives the new thread the exited one's cached stack and TCB. free()'s fast
// path finds a page's owner by thread pointer, so an exiting thread takes
// its pointer out of its pages: a block the new thread frees into the
// exited thread's heap goes the way of any other thread's free (into its
// outgoing batch), not straight onto the page's free list, where the heap's
// adopter would race with it. Here: `a` leaves blocks behind; `c`, with a
// stack of another size and a heap of its own, exits after it, so that `b`
// adopts c's heap but gets a's stack; `b` frees one of a's blocks and stays
// alive (its batch stays unsent); `d` adopts a's heap by freeing another and
// allocates twice: the freed block must not come back. (A fresh process, as
// above.)
namespace reused_thread_pointer {
constexpr size_t kSize = 48;
void* a_blocks[3];
pthread_t a_thread;
bool b_has_a_thread_pointer = false;
void* d_got[2];
std::latch c_has_heap(1);
std::latch a_gone(1);
std::latch b_freed(1);
std::latch d_done(1);
void* leaver(void*) {
  a_thread = pthread_self();
  for (void*& p : a_blocks) p = mallard_malloc(kSize);  // the page stays in its queue
  return nullptr;
}
void* other_stack(void*) {
  void* p = mallard_malloc(16);  // a heap before a's is an orphan to adopt
  c_has_heap.count_down();
  a_gone.wait();
  mallard_free(p);
  return nullptr;
}
void* reuser(void*) {
  b_has_a_thread_pointer = pthread_equal(pthread_self(), a_thread) != 0;
  mallard_free(mallard_malloc(16));  // adopts c's heap, the latest orphan
  // A page of the batches' class (256 bytes), so that the next free goes
  // into a batch: a heap without one sends its first remote frees alone,
  // and one alone to an orphan is freed into its page at once.
  mallard_free(mallard_malloc(256));
  mallard_free(a_blocks[0]);
  b_freed.count_down();
  d_done.wait();
  return nullptr;
}
void* adopter(void*) {
  mallard_free(a_blocks[1]);  // the first call: adopts a's heap
  d_got[0] = mallard_malloc(kSize);
  d_got[1] = mallard_malloc(kSize);
  return nullptr;
}
void run() {
  auto fail = [](const char* what) {
    std::fprintf(stderr, "%s\n", what);
    _exit(1);
  };
  pthread_attr_t bigger;
  size_t stack = 0;
  if (pthread_attr_init(&bigger) != 0 || pthread_attr_getstacksize(&bigger, &stack) != 0 ||
      pthread_attr_setstacksize(&bigger, 2 * stack) != 0) {
    fail("pthread attributes");
  }
  pthread_t a, b, c, d;
  if (pthread_create(&c, &bigger, other_stack, nullptr) != 0) fail("thread c");
  c_has_heap.wait();
  if (pthread_create(&a, nullptr, leaver, nullptr) != 0 || pthread_join(a, nullptr) != 0) fail("thread a");
  a_gone.count_down();
  if (pthread_join(c, nullptr) != 0) fail("thread c");
  if (pthread_create(&b, nullptr, reuser, nullptr) != 0) fail("thread b");
  b_freed.wait();
  if (pthread_create(&d, nullptr, adopter, nullptr) != 0 || pthread_join(d, nullptr) != 0) fail("thread d");
  d_done.count_down();
  pthread_join(b, nullptr);
  if (!b_has_a_thread_pointer) fail("b did not get a's thread pointer (glibc gave it another stack): nothing was tested");
  if (d_got[0] != a_blocks[1]) fail("d did not adopt a's heap");
  if (d_got[1] == a_blocks[0]) fail("b's free took the fast path into a's page");
  _exit(0);
}
}  // namespace reused_thread_pointer

TEST(Orphans, ANewThreadWithAnExitedThreadsThreadPointerFreesIntoItsHeapAsAnyThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(reused_thread_pointer::run(), testing::ExitedWithCode(0), "");
}

// A thread that exits gives its empty medium pages (blocks of 8-128 KiB)
// back to the OS at once, unless its heap came from an exited thread: then
// threads come and go, and the pages stay for the next one. Here a first
// thread makes a heap of its own and exits; a second adopts that heap (the
// only orphan of a fresh process) and exits too. (A fresh process, as above.)
namespace exit_purge {
constexpr size_t kSize = 64 * 1024, kCount = 16;
void* blocks[kCount];
void* use_medium_blocks(void*) {
  for (void*& b : blocks) {
    b = mallard_malloc(kSize);
    memset(b, 1, kSize);
  }
  for (void* b : blocks) mallard_free(b);
  return nullptr;
}
void run() {
  auto run_thread = [](mallard_stats* after) {
    pthread_t t;
    if (pthread_create(&t, nullptr, use_medium_blocks, nullptr) != 0 || pthread_join(t, nullptr) != 0) _exit(2);
    *after = stats_now();
  };
  mallard_stats start = stats_now(), after_first{}, after_second{};
  if (start.abandoned != 0) fail("not a fresh process: orphans", static_cast<int64_t>(start.abandoned));
  run_thread(&after_first);
  int64_t purged = delta(after_first.purged_total, start.purged_total);
  if (purged < static_cast<int64_t>(kSize * kCount * 9 / 10)) fail("a new heap's exit did not purge its medium pages", purged);
  run_thread(&after_second);
  if (after_second.abandoned != 1) fail("the second thread did not adopt the first one's heap", static_cast<int64_t>(after_second.abandoned));
  purged = delta(after_second.purged_total, after_first.purged_total);
  if (purged != 0) fail("an adopted heap's exit purged", purged);
  for (void* b : blocks) {
    size_t resident = resident_pages(b, kSize);
    if (resident < kSize / page_size() - 1) fail("an adopted heap's medium block is not resident after its exit", static_cast<int64_t>(resident));
  }
  _exit(0);
}
}  // namespace exit_purge

TEST(Orphans, AnExitingThreadPurgesItsEmptyMediumPagesUnlessItsHeapWasAdopted) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_purge::run(), testing::ExitedWithCode(0), "");
}

// Unless its medium pages hold 60 KiB or less: then the purge would cost
// more than the pages (a system call and a TLB shootdown), and they wait,
// resident, for the purge delay like any free page; the orphan sweep, run
// from another thread's slow path once the delay is over, purges them. Here
// a thread's only block is one of 32 KiB (so its heap lives in that block's
// medium segment) and it exits. (A fresh process, as above.)
namespace exit_keeps_small_remainder {
constexpr size_t kSize = 32 * 1024;
void* block;
void* use_one_block(void*) {
  block = mallard_malloc(kSize);
  memset(block, 1, kSize);
  mallard_free(block);
  return nullptr;
}
void run() {
  if (mallard_option_set("purge_delay_ms", "50") != 0) fail("purge_delay_ms=50 refused", 0);
  mallard_stats start = stats_now();
  if (start.abandoned != 0) fail("not a fresh process: orphans", static_cast<int64_t>(start.abandoned));
  // Blocks this thread frees at the end, so that its purge tick runs then
  // without its heap needing a page meanwhile: a heap that needs one takes
  // an orphan's dirty pages over first (orphan_absorb), and this orphan's
  // would be reused instead of purged. 64 blocks take three pages.
  void* more[64];
  for (void*& b : more) b = mallard_malloc(kSize);
  pthread_t t;
  if (pthread_create(&t, nullptr, use_one_block, nullptr) != 0 || pthread_join(t, nullptr) != 0) _exit(2);
  mallard_stats after_exit = stats_now();
  if (after_exit.abandoned != 1) fail("the thread did not leave an orphan", static_cast<int64_t>(after_exit.abandoned));
  int64_t purged = delta(after_exit.purged_total, start.purged_total);
  if (purged != 0) fail("the exit purged a 32 KiB remainder", purged);
  size_t kept = resident_pages(block, kSize);
  if (kept < kSize / page_size() - 1) fail("the exited thread's block is not resident", static_cast<int64_t>(kept));
  usleep(150 * 1000);  // three purge delays
  // The pages this frees (the class keeps one) run the purge tick, which
  // sweeps the orphans.
  for (void* b : more) mallard_free(b);
  purged = delta(stats_now().purged_total, after_exit.purged_total);
  if (purged < static_cast<int64_t>(kSize)) fail("the sweep did not purge the orphan's medium page", purged);
  size_t left = resident_pages(block, kSize);
  if (left != 0) fail("the exited thread's block is resident after the sweep", static_cast<int64_t>(left));
  _exit(0);
}
}  // namespace exit_keeps_small_remainder

TEST(Orphans, AnExitingThreadKeepsAMediumRemainderOf60KiBOrLessUntilTheSweep) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_keeps_small_remainder::run(), testing::ExitedWithCode(0), "");
}

// A segment whose pages are all free goes to the segment cache while it
// holds fewer than `segment_cache` segments, else back to the OS. Threads
// that exit together release theirs together: each takes a place in the
// cache before purging outside its lock, so exactly `segment_cache` stay,
// and a place is free again once its segment is in. Here the cache holds 2.
// A first wave of 8 threads, each with a heap of its own whose one medium
// segment holds a 96 KiB block (more than an exit keeps unpurged), exits at
// once: 2 of those stay mapped. A second
// wave of 10 adopts the 8 orphans (whose exits keep their pages, so their 8
// segments stay mapped) and makes 2 heaps of its own, whose segments refill
// the cache. Each heap lives in a small segment of its own, never given
// back (heap_create: each thread's first request is a small one, or its
// heap would live in its medium segment instead), so 8 more stay mapped
// after the first wave and 10 after the second. (A fresh process: no
// orphans, an empty cache.)
namespace segment_cache_bound {
constexpr size_t kSegmentBytes = size_t{4} << 20;  // the segment size, a 4 MiB mapping
pthread_barrier_t all_allocated;
void* hold_a_medium_block(void*) {
  mallard_free(mallard_malloc(16));  // the heap, in a small segment
  void* b = mallard_malloc(96 * 1024);
  memset(b, 1, 96 * 1024);
  pthread_barrier_wait(&all_allocated);  // every heap is made before any exits
  mallard_free(b);
  return nullptr;
}
void wave(unsigned threads) {
  std::vector<pthread_t> ids(threads);
  pthread_barrier_init(&all_allocated, nullptr, threads);
  for (pthread_t& t : ids) {
    if (pthread_create(&t, nullptr, hold_a_medium_block, nullptr) != 0) _exit(2);
  }
  for (pthread_t t : ids) pthread_join(t, nullptr);
  pthread_barrier_destroy(&all_allocated);
}
void run() {
  if (mallard_option_set("segment_cache", "2") != 0) fail("segment_cache=2 refused", 0);
  mallard_free(mallard_malloc(16));  // this thread's own segment, before counting
  mallard_stats start = stats_now();
  if (start.abandoned != 0) fail("not a fresh process: orphans", static_cast<int64_t>(start.abandoned));
  wave(8);
  mallard_stats after_first = stats_now();
  int64_t kept = delta(after_first.mapped, start.mapped);
  if (after_first.abandoned != 8) fail("the first wave did not leave 8 orphans", static_cast<int64_t>(after_first.abandoned));
  if (kept != static_cast<int64_t>((8 + 2) * kSegmentBytes)) fail("the first wave did not leave 8 heaps' and 2 cached segments mapped (bytes)", kept);
  wave(10);
  mallard_stats after_second = stats_now();
  if (after_second.abandoned != 10) fail("the second wave did not end with 10 orphans", static_cast<int64_t>(after_second.abandoned));
  kept = delta(after_second.mapped, start.mapped);
  if (kept != static_cast<int64_t>((10 + 8 + 2) * kSegmentBytes)) fail("the second wave did not leave 10 heaps', 8 adopted and 2 cached segments (bytes)", kept);
  _exit(0);
}
}  // namespace segment_cache_bound

// A thread's heap lives in the header of the first segment it maps, small
// or, when its first request is medium, medium; that segment is never given
// back: not when all its pages are free and purged by a trim, not when the
// thread exits. Here a thread's first malloc maps one segment, heap and
// block together; it fills and frees a few pages and trims: its segment
// stays mapped, and the heap in it keeps working. Once the thread has
// exited and the process trimmed, the segment is still mapped, one more
// than before the thread; a new thread adopts the heap and allocates from
// that same segment again. (A fresh process: no orphan heap to adopt but
// this one.)
namespace hosted_heap {
size_t block_bytes = 0;
size_t block_count = 0;
// Not a vector: its array would be the thread's first request, and a medium one.
constexpr size_t kMaxBlocks = 4000;
void* blocks[kMaxBlocks];
uintptr_t segment_of(const void* p) { return reinterpret_cast<uintptr_t>(p) >> 22; }
uintptr_t first_segment = 0;
void* empty_trim_and_allocate(void*) {
  size_t before_first = stats_now().segments;
  blocks[0] = mallard_malloc(block_bytes);
  if (stats_now().segments != before_first + 1) fail("a thread's first malloc mapped other than one segment", delta(stats_now().segments, before_first));
  for (size_t i = 1; i < block_count; ++i) blocks[i] = mallard_malloc(block_bytes);
  first_segment = segment_of(blocks[0]);
  size_t segments = stats_now().segments;
  for (size_t i = 0; i < block_count; ++i) mallard_free(blocks[i]);
  mallard_trim(0);
  if (stats_now().segments != segments) fail("a trim gave back the segment of a live thread's heap", static_cast<int64_t>(segments));
  for (size_t i = 0; i < block_count; ++i) blocks[i] = mallard_malloc(block_bytes);
  if (segment_of(blocks[0]) != first_segment) fail("the heap did not allocate from its own segment after a trim", 0);
  for (size_t i = 0; i < block_count; ++i) mallard_free(blocks[i]);
  return nullptr;
}
void* adopt(void*) {
  void* p = mallard_malloc(block_bytes);
  if (segment_of(p) != first_segment) fail("the adopted heap did not allocate from its segment", 0);
  mallard_free(p);
  return nullptr;
}
void run(size_t bytes, size_t count) {
  if (count > kMaxBlocks) _exit(2);
  block_bytes = bytes;
  block_count = count;
  mallard_free(mallard_malloc(48));  // this thread's heap and segment, before counting
  size_t before = stats_now().segments;
  run_in_a_thread(empty_trim_and_allocate);
  mallard_trim(0);
  mallard_stats after = stats_now();
  if (after.abandoned != 1) fail("the thread did not leave its heap as an orphan", static_cast<int64_t>(after.abandoned));
  if (after.segments != before + 1) fail("segments an exited thread's heap kept after a trim", delta(after.segments, before));
  run_in_a_thread(adopt);
  _exit(0);
}
}  // namespace hosted_heap

TEST(Orphans, AHeapsSegmentOutlivesItsPagesAndItsThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // 48-byte blocks over four small pages (page 0 has 48 KiB of blocks).
  EXPECT_EXIT(hosted_heap::run(48, 4000), testing::ExitedWithCode(0), "");
}

TEST(Orphans, AHeapMadeAtAMediumMallocLivesInItsMediumSegment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // 64 KiB blocks over three medium pages of 1 MiB.
  EXPECT_EXIT(hosted_heap::run(64 * 1024, 40), testing::ExitedWithCode(0), "");
}

// A thread's first remote frees go one by one: batching them would take a
// 256-byte block of its own heap, and so a page for a thread
// that allocates nothing small (libstdc++ has every thread free, as it ends,
// the state its creator allocated for it). A thread that keeps freeing
// other threads' blocks batches them. (A fresh process: no orphan heap with
// pages to adopt.)
namespace unbatched_remote_frees {
constexpr size_t kBlocks = 100;
void* made_by_main[kBlocks];
size_t next_to_free = 0;
size_t to_free = 0;
mallard_stats after_freeing;
void* free_blocks_of_main(void*) {
  for (size_t i = 0; i < to_free; ++i) mallard_free(made_by_main[next_to_free++]);
  mallard_stats_get(&after_freeing);  // the thread's batch, if any, is not handed over yet
  return nullptr;
}
// The bytes of pages holding live blocks that a thread freeing `blocks` of
// main's added (its heap's segment, mapped as it makes the heap, takes none).
int64_t pages_taken_by_a_thread_freeing(size_t blocks) {
  mallard_stats before{};
  mallard_stats_get(&before);
  to_free = blocks;
  run_in_a_thread(free_blocks_of_main);
  return static_cast<int64_t>(after_freeing.active) - static_cast<int64_t>(before.active);
}
void run() {
  for (void*& p : made_by_main) p = mallard_malloc(48);
  int64_t taken = pages_taken_by_a_thread_freeing(1);
  if (taken != 0) fail("bytes of pages a thread that freed one block of another thread took", taken);
  taken = pages_taken_by_a_thread_freeing(kBlocks - 1);
  if (taken <= 0) fail("a thread that freed 99 blocks of another thread took no page for its batches", taken);
  _exit(0);
}
}  // namespace unbatched_remote_frees

TEST(Remote, AThreadsFirstRemoteFreesNeedNoPageOfItsOwn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(unbatched_remote_frees::run(), testing::ExitedWithCode(0), "");
}

// A thread that hands over a batch of a few blocks (trim hands over
// whatever it has pending) pushes them as a chain and keeps no batch block
// allocated for an owner that may not drain its stack for a long time (one
// asleep in pthread_join here, larson's main thread in the workload). Once
// the owner drains, the blocks are back. (A fresh process.)
namespace chained_flush {
constexpr size_t kUnbatched = 64;  // remote.cpp: a thread's first remote frees go one by one
constexpr size_t kBlocks = kUnbatched + 3;  // then a batch of 3
void* made_by_main[kBlocks];
int64_t kept_by_flush = -1;
void* free_a_short_batch(void*) {
  for (size_t i = 0; i < kUnbatched; ++i) mallard_free(made_by_main[i]);
  mallard_stats before{};
  mallard_stats_get(&before);
  for (size_t i = kUnbatched; i < kUnbatched + 3; ++i) mallard_free(made_by_main[i]);  // a batch of 3, pending
  mallard_trim(0);  // hands the batch over
  mallard_stats after{};
  mallard_stats_get(&after);
  kept_by_flush = static_cast<int64_t>(after.allocated) - static_cast<int64_t>(before.allocated);
  return nullptr;
}
void run() {
  // Their usable size: main's heap may be the process's first, which lends
  // a class a larger class's blocks while young.
  int64_t made = allocate_each(made_by_main, 48);
  run_in_a_thread(free_a_short_batch);
  if (kept_by_flush != 0) fail("bytes a flushed batch of 3 blocks kept allocated", kept_by_flush);
  int64_t returned = bytes_taken_back_by_draining();
  if (returned != made) fail("bytes main took back when it drained", returned);
  _exit(0);
}
}  // namespace chained_flush

TEST(Remote, AShortBatchKeepsNoBlockAllocatedForItsOwner) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(chained_flush::run(), testing::ExitedWithCode(0), "");
}

// A thread that frees the blocks of two other threads in turn keeps a batch
// open for each: a free for one does not hand over the other's batch (with
// a single open batch, every change of destination did, and the owners got
// their blocks back one at a time). Trim hands both over. The blocks hold
// 300 bytes, so each batch lives in one of them and the first remote frees
// batch at once. (A fresh process: heaps take the batch slots in turn.)
namespace batch_per_destination {
constexpr size_t kBlocks = 20;  // fewer than a batch holds (28)
void* of_main[kBlocks];
void* of_other[kBlocks];
std::latch other_allocated(1), freed(1), main_measured(1), trimmed(1), all_done(1);
void* other_owner(void*) {
  for (void*& p : of_other) p = mallard_malloc(300);
  other_allocated.count_down();
  all_done.wait();  // stays alive: the blocks of an exited thread's heap take another way
  return nullptr;
}
void* free_in_turn(void*) {
  for (size_t i = 0; i < kBlocks; ++i) {
    mallard_free(of_main[i]);
    mallard_free(of_other[i]);
  }
  freed.count_down();
  main_measured.wait();
  mallard_trim(0);  // hands both batches over
  trimmed.count_down();
  return nullptr;
}
void run() {
  int64_t made = allocate_each(of_main, 300);
  pthread_t other = start_thread(other_owner);
  other_allocated.wait();
  pthread_t freeing = start_thread(free_in_turn);
  freed.wait();
  int64_t before_trim = bytes_taken_back_by_draining();
  main_measured.count_down();
  trimmed.wait();
  int64_t after_trim = bytes_taken_back_by_draining();
  all_done.count_down();
  join_thread(freeing);
  join_thread(other);
  if (before_trim != 0) fail("bytes main took back before the freeing thread handed its batches over", before_trim);
  if (after_trim != made) fail("bytes main took back once they were handed over", after_trim);
  _exit(0);
}
}  // namespace batch_per_destination

TEST(Remote, AThreadFreeingForTwoHeapsKeepsABatchOpenForEach) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(batch_per_destination::run(), testing::ExitedWithCode(0), "");
}

// A batch stays open for a bounded time: a thread that freed a few of
// main's blocks and then only allocates hands the batch over within 32 of
// its slow paths (remote.cpp, kBatchMaxAge), here the first blocks of 48
// classes, each a slow path; main then takes its blocks back. (A fresh
// process.)
namespace batch_age {
constexpr size_t kBlocks = 5;
constexpr size_t kClasses = 48;
void* of_main[kBlocks];
std::latch allocated(1), main_measured(1);
// The i-th size class from 16 bytes: 16 to 256 by 16, then eight classes
// a doubling.
size_t nth_class_size(size_t i) {
  if (i < 16) return 16 * (i + 1);
  size_t doubling = 256 << ((i - 16) / 8);
  return doubling + doubling / 8 * ((i - 16) % 8 + 1);
}
void* free_then_allocate(void*) {
  for (void* p : of_main) mallard_free(p);
  void* own[kClasses];
  for (size_t i = 0; i < kClasses; ++i) own[i] = mallard_malloc(nth_class_size(i));
  allocated.count_down();
  main_measured.wait();
  for (void* p : own) mallard_free(p);
  return nullptr;
}
void run() {
  int64_t made = allocate_each(of_main, 300);
  pthread_t freeing = start_thread(free_then_allocate);
  allocated.wait();
  int64_t taken_back = bytes_taken_back_by_draining();
  main_measured.count_down();
  join_thread(freeing);
  if (taken_back != made) fail("bytes main took back after the freeing thread's 48 slow paths", taken_back);
  _exit(0);
}
}  // namespace batch_age

TEST(Remote, AnOpenBatchIsHandedOverWithin32SlowPaths) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(batch_age::run(), testing::ExitedWithCode(0), "");
}

// A batch of remote frees lives in one of the blocks it hands over when one
// holds at least 256 bytes: a thread that frees another thread's blocks of
// 300 bytes allocates nothing for its batches, not even past its first 64
// remote frees, and takes no page; the owner gets every block back when it
// drains. (A fresh process.)
namespace hosted_batches {
constexpr size_t kBlocks = 1000;
void* made_by_main[kBlocks];
mallard_stats before_freeing, after_freeing;
void* free_blocks_of_main(void*) {
  mallard_stats_get(&before_freeing);
  for (void* p : made_by_main) mallard_free(p);
  mallard_stats_get(&after_freeing);  // the last batch is not handed over yet
  return nullptr;
}
void run() {
  size_t usable = 0;
  for (void*& p : made_by_main) {
    p = mallard_malloc(300);
    usable += mallard_malloc_usable_size(p);
  }
  run_in_a_thread(free_blocks_of_main);
  int64_t allocated = delta(after_freeing.allocated, before_freeing.allocated);
  if (allocated != 0) fail("bytes a thread allocated to free another thread's blocks", allocated);
  int64_t taken = delta(after_freeing.active, before_freeing.active);
  if (taken != 0) fail("bytes of pages a thread took to free another thread's blocks", taken);
  int64_t returned = bytes_taken_back_by_draining();
  if (returned != static_cast<int64_t>(usable)) fail("bytes main took back when it drained", returned);
  _exit(0);
}
}  // namespace hosted_batches

TEST(Remote, ABatchOfLargeEnoughBlocksLivesInOneOfThem) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(hosted_batches::run(), testing::ExitedWithCode(0), "");
}

// Blocks too small to hold a batch start one in a block of the freeing
// thread's heap; the next block large enough takes the batch over. Whatever
// the mix, every block comes back to its owner exactly once: the owner's
// allocated bytes return to where they were, and it hands each block out
// once again. (A fresh process.)
namespace mixed_batches {
constexpr size_t kBlocks = 3000;
void* made_by_main[kBlocks];
void* free_blocks_of_main(void*) {
  for (void* p : made_by_main) mallard_free(p);
  return nullptr;
}
size_t size_of_block(size_t i) { return i % 7 < 5 ? 48 : 256 + i % 300; }  // runs of small blocks, then large ones
void run() {
  // glibc keeps a joined thread's stack, and the TLS vector it calloc'd
  // for it, for the next thread: a first thread makes that allocation.
  run_in_a_thread([](void*) -> void* { return nullptr; });
  mallard_trim(0);
  mallard_stats start{};
  mallard_stats_get(&start);
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kBlocks; ++i) made_by_main[i] = mallard_malloc(size_of_block(i));
    {
      std::vector<void*> sorted(made_by_main, made_by_main + kBlocks);
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) fail("a block handed out twice in round", round);
    }
    run_in_a_thread(free_blocks_of_main);
    mallard_trim(0);  // main drains its stack
    mallard_stats now{};
    mallard_stats_get(&now);
    int64_t held = delta(now.allocated, start.allocated);
    if (held != 0) fail("bytes main holds after its blocks came back, against before", held);
  }
  _exit(0);
}
}  // namespace mixed_batches

TEST(Remote, EveryBlockComesBackOnceWhateverTheBatchLivesIn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(mixed_batches::run(), testing::ExitedWithCode(0), "");
}

// A remote free that goes into the freeing thread's batch does not read or
// write the block (the line stays where it is, most likely in the cache of
// the thread that allocated it) until the batch is handed over; then every
// block goes back to its owner. (A fresh process.)
namespace untouched_until_handover {
constexpr size_t kUnbatched = 64;  // remote.cpp: a thread's first remote frees go one by one
// then a batch of 4, pending (so short that it goes over as a chain of its
// blocks: main then takes back exactly the blocks)
constexpr size_t kBlocks = kUnbatched + 4;
constexpr size_t kSize = 48;  // too small to host a batch
constexpr unsigned char kFill = 0x5a;
void* made_by_main[kBlocks];
int64_t changed_while_pending = 0;
void* free_blocks_of_main(void*) {
  for (void* p : made_by_main) mallard_free(p);
  for (size_t i = kUnbatched; i < kBlocks; ++i) {
    const auto* bytes = static_cast<const volatile unsigned char*>(made_by_main[i]);
    for (size_t b = 0; b < kSize; ++b) changed_while_pending += bytes[b] != kFill;
  }
  return nullptr;  // the thread's exit hands the batch over
}
void run() {
  int64_t made = 0;  // at the blocks' usable size (see chained_flush)
  for (void*& p : made_by_main) {
    memset(p = mallard_malloc(kSize), kFill, kSize);
    made += static_cast<int64_t>(mallard_malloc_usable_size(p));
  }
  run_in_a_thread(free_blocks_of_main);
  if (changed_while_pending != 0) fail("bytes a pending remote free changed in its blocks", changed_while_pending);
  int64_t returned = bytes_taken_back_by_draining();
  if (returned != made) fail("bytes main took back when it drained", returned);
  _exit(0);
}
}  // namespace untouched_until_handover

TEST(Remote, ABatchedRemoteFreeLeavesTheBlockAloneUntilHandover) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(untouched_until_handover::run(), testing::ExitedWithCode(0), "");
}

// The batches a thread hands over live, for blocks too small to hold one,
// in blocks of its own heap. The owner that drains them sends those blocks
// home in a batch of its own (one of them holds it), handed over like any
// other, not one at a time: the freeing thread gets none back before the
// owner hands its batches over (trim here), and all of them after. (A
// fresh process.)
namespace batch_blocks_go_home {
constexpr size_t kUnbatched = 64;  // remote.cpp: a thread's first remote frees go one by one
constexpr size_t kBatches = 3;     // then three full batches of 28, each handed over as it fills
constexpr size_t kBlocks = kUnbatched + kBatches * 28;
constexpr int64_t kBatchBlockBytes = 256;  // sizeof(RemoteBatch)
void* made_by_main[kBlocks];
int64_t back_before_handover = -1, back_after_handover = -1;
std::latch freed(1), main_drained(1), first_look(1), main_trimmed(1);
void* free_blocks_of_main(void*) {
  for (void* p : made_by_main) mallard_free(p);
  freed.count_down();
  main_drained.wait();
  back_before_handover = bytes_taken_back_by_draining();
  first_look.count_down();
  main_trimmed.wait();
  back_after_handover = bytes_taken_back_by_draining();
  return nullptr;
}
void run() {
  allocate_each(made_by_main, 48);
  pthread_t freeing = start_thread(free_blocks_of_main);
  freed.wait();
  void* other_class = mallard_malloc(3000);  // a slow path: drains main's stack, hands nothing over
  main_drained.count_down();
  first_look.wait();
  mallard_trim(0);  // hands main's batches over
  main_trimmed.count_down();
  join_thread(freeing);
  mallard_free(other_class);
  if (back_before_handover != 0) fail("bytes the freeing thread took back before main handed its batches over", back_before_handover);
  if (back_after_handover != static_cast<int64_t>(kBatches) * kBatchBlockBytes) {
    fail("bytes the freeing thread took back once main handed its batches over", back_after_handover);
  }
  _exit(0);
}
}  // namespace batch_blocks_go_home

TEST(Remote, DrainedBatchBlocksGoHomeInABatch) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(batch_blocks_go_home::run(), testing::ExitedWithCode(0), "");
}

// Two threads that free each other's small blocks in turn: each drains
// batch blocks of the other while it frees into it, the drain may open the
// very batch the free wanted (remote.cpp, batch_new), and no batch or batch
// block is lost on the way. Once both have exited and main has trimmed,
// the bytes allocated are where they were. (A fresh process.)
namespace crossed_batches {
constexpr size_t kBlocks = 300;
constexpr int kRounds = 40;
void* blocks_of[2][kBlocks];
std::barrier<> step(2);
void* trade(void* arg) {
  const auto self = reinterpret_cast<uintptr_t>(arg);
  for (int round = 0; round < kRounds; ++round) {
    for (void*& p : blocks_of[self]) p = mallard_malloc(48 + 16 * static_cast<size_t>(round % 3));
    step.arrive_and_wait();
    for (void* p : blocks_of[1 - self]) mallard_free(p);
    step.arrive_and_wait();
  }
  return nullptr;
}
void run_two(void* (*body)(void*)) {
  pthread_t first = start_thread(body, reinterpret_cast<void*>(0)), second = start_thread(body, reinterpret_cast<void*>(1));
  join_thread(first);
  join_thread(second);
}
void run() {
  run_two([](void*) -> void* { return nullptr; });  // glibc's cached state for two threads (see mixed_batches)
  mallard_trim(0);
  mallard_stats start{};
  mallard_stats_get(&start);
  run_two(trade);
  mallard_trim(0);
  mallard_stats now{};
  mallard_stats_get(&now);
  int64_t held = delta(now.allocated, start.allocated);
  if (held != 0) fail("bytes still allocated after both threads freed each other's blocks and exited", held);
  _exit(0);
}
}  // namespace crossed_batches

TEST(Remote, ThreadsFreeingEachOthersBlocksLoseNoBatch) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(crossed_batches::run(), testing::ExitedWithCode(0), "");
}

TEST(Orphans, ThreadsExitingTogetherFillTheSegmentCacheExactly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(segment_cache_bound::run(), testing::ExitedWithCode(0), "");
}

// An exited thread's heap keeps three times dirty_max_kb of free pages warm, not
// the cap its thread had raised for itself: the blocks it left behind, freed
// after it exited, are purged down to that. A thread that cycles 6 MiB under
// a 1 MiB cap grows its cap past 6 MiB (as in dirty_cap_grows); it then
// hands 6 MiB of blocks to this thread and exits, and this thread frees them
// into its heap. Keeping the raised cap, that purged nothing; keeping 3 MiB,
// 4.2 MiB (5.0 when it kept 2). In a fresh process, so that the exiting
// thread's heap is its own.
namespace orphan_cap {
void run() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("purge_delay_ms", "100000") != 0) _exit(2);  // only caps purge, and the orphan stays recent
  if (mallard_option_set("dirty_max_kb", "1024") != 0) _exit(2);
  // This thread's remote frees go into batches, 256-byte blocks: a page for
  // them now, or making the first batch would absorb the orphan here.
  mallard_free(mallard_malloc(256));
  constexpr size_t kBlock = 1024, kBytes = 6 * MiB;
  std::vector<void*> left_behind(kBytes / kBlock);
  std::thread([&] {
    int64_t last_cycle = 0;
    for (int cycle = 0; cycle < 6; ++cycle) last_cycle = dirty_cap_grows::purged_by_one_cycle(kBytes);
    if (last_cycle > int64_t{MiB / 2}) _exit(3);  // the cap did not grow: the test would prove nothing
    for (void*& p : left_behind) {
      p = mallard_malloc(kBlock);
      if (p == nullptr) _exit(2);
      std::memset(p, 0x5A, kBlock);
    }
  }).join();
  mallard_stats before = stats_now();
  if (before.abandoned == 0) _exit(2);
  for (void* p : left_behind) mallard_free(p);
  int64_t purged = delta(stats_now().purged_total, before.purged_total);
  if (purged < int64_t{3 * MiB}) {
    std::fprintf(stderr, "an exited thread's heap kept its raised cap: %lld bytes purged of %zu freed\n",
                 static_cast<long long>(purged), kBytes);
    _exit(1);
  }
  _exit(0);
}
}  // namespace orphan_cap

TEST(Orphans, AnExitedThreadsHeapKeepsTheConfiguredDirtyCap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(orphan_cap::run(), testing::ExitedWithCode(0), "");
}

TEST(Orphans, ALiveThreadReusesAnExitedThreadsFreedBlocks) {
  constexpr size_t kSize = 200, kCount = 600, kReused = 100;
  // The containers are sized first: `allocated` counts their blocks too.
  std::vector<void*> freed_by_exiter, reused;
  freed_by_exiter.reserve(kCount);
  reused.reserve(kReused);
  // This thread's remote frees go into a batch, itself a 256-byte block: a
  // page for them now, or making the first batch would absorb the orphan here.
  mallard_free(mallard_malloc(256));
  // glibc keeps the TLS vectors of the first threads alive at once.
  std::thread warm_a([] { mallard_free(mallard_malloc(16)); }), warm_b([] { mallard_free(mallard_malloc(16)); });
  warm_a.join();
  warm_b.join();
  mallard_trim(0);
  mallard_stats before = stats_now();
  std::mutex m;
  std::condition_variable cv;
  int step = 0;  // 1: reuser has a heap; 2: exiter is gone, reuser may go on; 3: reuser done; 4: reuser may exit
  auto wait_for = [&](int s) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return step >= s; });
  };
  auto advance = [&](int s) {
    std::lock_guard lock(m);
    step = s;
    cv.notify_all();
  };
  void* kept[2] = {};
  std::thread reuser([&] {
    void* own = mallard_malloc(32);  // a heap of its own, with no page of kSize's class
    advance(1);
    wait_for(2);
    for (size_t i = 0; i < kReused; ++i) reused.push_back(mallard_malloc(kSize));
    mallard_free(own);
    advance(3);
    wait_for(4);
    for (void* p : reused) mallard_free(p);
    mallard_trim(0);  // takes back the blocks forwarded to it
  });
  wait_for(1);
  std::thread exiter([&] {
    for (size_t i = 0; i < kCount; ++i) freed_by_exiter.push_back(mallard_malloc(kSize));
    kept[0] = freed_by_exiter.front();
    kept[1] = freed_by_exiter.back();
    freed_by_exiter.pop_back();
    freed_by_exiter.erase(freed_by_exiter.begin());
    for (void* p : freed_by_exiter) mallard_free(p);
  });
  exiter.join();
  // Freed by this thread into the exited thread's heap: it waits in this
  // thread's batch for that heap while the reuser takes the page over.
  mallard_free(kept[0]);
  advance(2);
  wait_for(3);
  // Pages live in 4 MiB segments, one per heap here: the reuser's own is
  // another one than the exited thread's.
  auto segment = [](const void* p) { return reinterpret_cast<uintptr_t>(p) >> 22; };
  size_t from_exiter = 0;
  for (void* p : reused) from_exiter += segment(p) == segment(kept[1]);
  EXPECT_EQ(from_exiter, reused.size()) << "the reuser allocated new memory instead of the exited thread's pages";
  mallard_trim(0);             // hands the batch to the exited heap, which forwards it
  mallard_free(kept[1]);       // a remote free straight to the new owner
  mallard_trim(0);
  advance(4);
  reuser.join();
  mallard_trim(0);
  EXPECT_EQ(stats_now().allocated, before.allocated) << "a block was lost on its way to the page's new owner";
}

TEST(Stats, PrintJsonHasEveryFieldAsANumber) {
  void* held = mallard_malloc(8 * MiB);
  ASSERT_NE(held, nullptr);
  std::string json = capture_file([](FILE* f) { mallard_stats_print(f, "J"); });
  JsonReader reader(json);
  ASSERT_TRUE(reader.parse()) << "not valid JSON:\n" << json;
  for (const char* field : kStatsFields) {
    ASSERT_TRUE(reader.numbers.count(field)) << "no numeric \"" << field << "\" in:\n" << json;
    for (const std::string& v : reader.numbers[field])
      EXPECT_EQ(v.find_first_not_of("0123456789"), std::string::npos) << field << " = " << v;
  }
  // The first "allocated" (the process total) includes the block we hold.
  EXPECT_GE(std::stoull(reader.numbers["allocated"].front()), 8 * MiB);
  EXPECT_GE(std::stoull(reader.numbers["threads"].front()), 1u);
  mallard_free(held);
}

// The per-class lines of mallard_stats_print: {size, pages, full_pages,
// blocks_used, blocks_carved} for every class with pages. Returns the
// figures of the class whose blocks are `size` bytes (all zero if absent).
struct PrintedClass {
  uint64_t pages = 0, full_pages = 0, used = 0, carved = 0;
};
PrintedClass printed_class(size_t size) {
  std::string json = capture_file([](FILE* f) { mallard_stats_print(f, "J"); });
  JsonReader reader(json);
  EXPECT_TRUE(reader.parse()) << "not valid JSON:\n" << json;
  auto& sizes = reader.numbers["size"];
  for (const char* key : {"pages", "full_pages", "blocks_used", "blocks_carved"})
    EXPECT_EQ(reader.numbers[key].size(), sizes.size()) << key << " missing from a class in:\n" << json;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (std::stoull(sizes[i]) != size) continue;
    return {std::stoull(reader.numbers["pages"][i]), std::stoull(reader.numbers["full_pages"][i]),
            std::stoull(reader.numbers["blocks_used"][i]), std::stoull(reader.numbers["blocks_carved"][i])};
  }
  return {};
}

TEST(Stats, PrintCountsEachClassesPagesAndBlocks) {
  constexpr size_t kCount = 100;
  void* probe = mallard_malloc(3000);
  ASSERT_NE(probe, nullptr);
  size_t class_bytes = mallard_malloc_usable_size(probe);  // a small block's usable size is its class's
  mallard_free(probe);
  PrintedClass before = printed_class(class_bytes);
  std::vector<void*> blocks(kCount);
  for (void*& b : blocks) b = mallard_malloc(class_bytes);
  PrintedClass held = printed_class(class_bytes);
  EXPECT_EQ(held.used - before.used, kCount) << "class of " << class_bytes << " bytes";
  EXPECT_GE(held.carved, held.used);
  EXPECT_GE(held.pages, 1u);
  EXPECT_LE(held.full_pages, held.pages);
  // Enough pages for the blocks: each holds at most 64 KiB of them.
  EXPECT_GE(held.pages * 64 * KiB, held.used * class_bytes);
  for (void* b : blocks) mallard_free(b);
  EXPECT_EQ(printed_class(class_bytes).used, before.used) << "freed blocks still counted";
  std::string text = capture_file([](FILE* f) { mallard_stats_print(f, nullptr); });
  EXPECT_NE(text.find("classes:"), std::string::npos) << text;
  EXPECT_NE(text.find("dirty pages:"), std::string::npos) << text;
}

// The large blocks' and extents' figures of mallard_stats_print.
struct PrintedLargeAndExtents {
  uint64_t blocks = 0, bytes = 0, past_end = 0, cached_blocks = 0, cached_bytes = 0;
  uint64_t extent_bytes = 0, extent_resident = 0;
};
PrintedLargeAndExtents printed_large_and_extents() {
  std::string json = capture_file([](FILE* f) { mallard_stats_print(f, "J"); });
  JsonReader reader(json);
  EXPECT_TRUE(reader.parse()) << "not valid JSON:\n" << json;
  auto& n = reader.numbers;
  // "bytes" is the large blocks' and then the extents'; "resident" the
  // process total's and then the extents'.
  for (const char* key : {"blocks", "past_end", "cached_blocks", "cached_bytes"}) {
    EXPECT_EQ(n[key].size(), 1u) << key << " in:\n" << json;
  }
  EXPECT_EQ(n["bytes"].size(), 2u) << json;
  EXPECT_EQ(n["resident"].size(), 2u) << json;
  if (::testing::Test::HasFailure()) return {};
  return {std::stoull(n["blocks"][0]),        std::stoull(n["bytes"][0]),        std::stoull(n["past_end"][0]),
          std::stoull(n["cached_blocks"][0]), std::stoull(n["cached_bytes"][0]), std::stoull(n["bytes"][1]),
          std::stoull(n["resident"][1])};
}

// A large block reused for a smaller request keeps the pages its earlier use
// wrote past the new end, and a freed one is held in a cache: neither is in
// the per-class figures, and churn:256K's memory was mostly there (DESIGN.md
// "Statistics").
TEST(Stats, PrintShowsLargeBlocksTheirCacheAndExtents) {
  std::string saved_delay = mallard_option_get("purge_delay_ms");
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "100000"), 0);  // nothing cached is purged meanwhile
  mallard_trim(0);  // no block cached by an earlier test serves the requests below
  PrintedLargeAndExtents before = printed_large_and_extents();
  auto* big = static_cast<char*>(mallard_malloc(2 * MiB));
  ASSERT_NE(big, nullptr);
  std::memset(big, 1, 2 * MiB);
  PrintedLargeAndExtents held = printed_large_and_extents();
  EXPECT_EQ(held.blocks - before.blocks, 1u);
  EXPECT_EQ(held.bytes - before.bytes, 2 * MiB);
  EXPECT_EQ(held.past_end, before.past_end);
  mallard_free(big);
  PrintedLargeAndExtents cached = printed_large_and_extents();
  EXPECT_EQ(cached.blocks, before.blocks);
  EXPECT_EQ(cached.cached_blocks - before.cached_blocks, 1u);
  EXPECT_GE(cached.cached_bytes - before.cached_bytes, 2 * MiB);
  void* smaller = mallard_malloc(MiB + 4 * KiB);
  ASSERT_EQ(smaller, big) << "the freed block was not reused";
  PrintedLargeAndExtents reused = printed_large_and_extents();
  EXPECT_EQ(reused.blocks - before.blocks, 1u);
  EXPECT_EQ(reused.bytes - before.bytes, MiB + 4 * KiB);
  EXPECT_EQ(reused.past_end - before.past_end, MiB - 4 * KiB);
  EXPECT_EQ(reused.cached_blocks, before.cached_blocks);
  mallard_free(smaller);
  void* grown = mallard_realloc(nullptr, 10 * KiB);  // made by realloc: an extent block
  ASSERT_NE(grown, nullptr);
  PrintedLargeAndExtents with_extent = printed_large_and_extents();
  EXPECT_EQ(with_extent.extent_bytes - before.extent_bytes, 10 * KiB);
  EXPECT_GE(with_extent.extent_resident, with_extent.extent_bytes);
  mallard_free(grown);
  EXPECT_EQ(printed_large_and_extents().extent_bytes, before.extent_bytes);
  std::string text = capture_file([](FILE* f) { mallard_stats_print(f, nullptr); });
  EXPECT_NE(text.find("large blocks:"), std::string::npos) << text;
  EXPECT_NE(text.find("extents:"), std::string::npos) << text;
  ASSERT_EQ(mallard_option_set("purge_delay_ms", saved_delay.c_str()), 0);
}

TEST(Stats, PrintTextByDefaultAndToStderrForNull) {
  std::string text = capture_file([](FILE* f) { mallard_stats_print(f, nullptr); });
  EXPECT_NE(text.find("allocated"), std::string::npos) << text;
  EXPECT_FALSE(JsonReader(text).parse()) << "text mode printed JSON";
  std::string empty_opts = capture_file([](FILE* f) { mallard_stats_print(f, ""); });
  EXPECT_NE(empty_opts.find("allocated"), std::string::npos) << empty_opts;
  std::string on_stderr = capture_stderr([] { mallard_stats_print(nullptr, nullptr); });
  EXPECT_NE(on_stderr.find("allocated"), std::string::npos) << on_stderr;
}

// ---------------------------------------------------------------------------
// Version

TEST(Version, MatchesTheHeaderMacros) {
  std::string expected = std::to_string(MALLARD_VERSION_MAJOR) + "." + std::to_string(MALLARD_VERSION_MINOR) + "." +
                         std::to_string(MALLARD_VERSION_PATCH);
  ASSERT_NE(mallard_version(), nullptr);
  EXPECT_EQ(std::string(mallard_version()), expected);
}

// ---------------------------------------------------------------------------
// malloc, free and usable size

TEST(Malloc, PagesEmptiedAndReusedHandOutEachBlockOnce) {
  // Freeing every block empties pages, which go back to the heap with their
  // carved blocks still listed; the next round takes them back for the same
  // class with those lists. Each block must come out once, whole: stamp
  // every block with its index and check them all once the round is out.
  for (size_t n : {size_t{24}, size_t{1000}, size_t{4096}, size_t{8000}, size_t{40000}}) {
    const size_t count = n < 10000 ? 3000 : 200;
    std::vector<void*> blocks(count);
    uint64_t order = 12345;
    for (int round = 0; round < 4; ++round) {
      for (size_t i = 0; i < count; ++i) {
        blocks[i] = mallard_malloc(n);
        ASSERT_NE(blocks[i], nullptr);
        std::memset(blocks[i], static_cast<int>(i & 0xFF), n);
        std::memcpy(blocks[i], &i, sizeof i);
      }
      std::set<void*> distinct(blocks.begin(), blocks.end());
      ASSERT_EQ(distinct.size(), count) << "a block was handed out twice, size " << n << ", round " << round;
      for (size_t i = 0; i < count; ++i) {
        size_t stamp;
        std::memcpy(&stamp, blocks[i], sizeof stamp);
        ASSERT_EQ(stamp, i) << "size " << n << ", round " << round;
        auto* bytes = static_cast<unsigned char*>(blocks[i]);
        ASSERT_EQ(bytes[n - 1], i & 0xFF) << "size " << n << ", round " << round;
      }
      // Free in a scrambled order, so pages empty at different times.
      for (size_t i = count - 1; i > 0; --i) {
        order = order * 6364136223846793005u + 1442695040888963407u;
        std::swap(blocks[i], blocks[(order >> 33) % (i + 1)]);
      }
      for (void* p : blocks) mallard_free(p);
    }
  }
}

TEST(Malloc, AReusedPageServesItsFreeBlocksBeforeCarvingMore) {
  // Threads that run one after another, each allocating and freeing one
  // block: each exits with its page empty, which goes back to its heap as a
  // free page with its blocks listed, and the next thread adopts the heap
  // and takes the page back for the same class. The page used to carve the
  // next 4 KiB of blocks as well, at every reuse: the heap that 16
  // cache-scratch workers adopted in turn had 48 KiB of blocks resident
  // for one 16-byte block at a time (DESIGN.md "A reused page carves
  // nothing while it has free blocks").
  constexpr size_t kSize = 1400;
  auto one_thread = [] {
    std::thread([] {
      void* p = mallard_malloc(kSize);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0x5a, kSize);
      mallard_free(p);
    }).join();
  };
  one_thread();
  mallard_stats first{};
  ASSERT_EQ(mallard_stats_get(&first), 0);
  for (int i = 0; i < 16; ++i) one_thread();
  mallard_stats after{};
  ASSERT_EQ(mallard_stats_get(&after), 0);
  // Slack for one thread that made a heap of its own instead of adopting
  // the last one's: a header page and a page of blocks, and a page more.
  EXPECT_LE(after.resident, first.resident + 16 * KiB)
      << "resident " << first.resident << " bytes after one thread, " << after.resident << " after 16 more";
}

TEST(Malloc, ZeroReturnsUniquePointers) {
  std::set<void*> seen;
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) {
    void* p = mallard_malloc(0);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(p).second) << "malloc(0) returned " << p << " twice while both were live";
    blocks.push_back(p);
  }
  for (void* p : blocks) mallard_free(p);
}

TEST(Malloc, FreeNullIsANoOp) {
  mallard_free(nullptr);
  mallard_free_sized(nullptr, 0);
  mallard_free_sized(nullptr, 100);
  mallard_free_aligned_sized(nullptr, 64, 64);
  EXPECT_EQ(mallard_malloc_usable_size(nullptr), 0u);
}

// Every request size of the small range, not a sample: a bad class table
// entry shows up as one wrong size. A medium class with no free block of its
// own takes one of a class up to a quarter larger (DESIGN.md "Medium classes
// reuse freed blocks"), and the process's first heap, while young, a small
// class one up to twice its size ("The first heap borrows while young"), so
// this runs in a new thread of a fresh process, with sizes going up: no
// larger class has a free block when a class is first asked for (in this
// process, a block an earlier test left live keeps its page's free blocks).
void usable_sizes_follow_the_classes() {
  int result = 0;
  // A page for each medium class makes the heap large enough to take its
  // medium blocks from the extents (extent_heap_mb), whose sizes are granular.
  if (mallard_option_set("extent_heap_mb", "0") != 0) _exit(2);
  // The process's first heap is main's, even where mallard serves only the
  // mallard_* calls (under a sanitizer): the thread's heap then borrows none.
  mallard_free(mallard_malloc(16));
  std::thread([&] {
    for (size_t n = 1; n <= kSmallLimit && result == 0; ++n) {
      void* p = mallard_malloc(n);
      if (p == nullptr) {
        result = 2;
        break;
      }
      size_t usable = mallard_malloc_usable_size(p);
      mallard_free(p);
      if (usable != expected_usable(n)) {
        std::fprintf(stderr, "malloc(%zu): usable %zu, expected %zu\n", n, usable, expected_usable(n));
        result = 1;
      }
    }
  }).join();
  _exit(result);
}

TEST(Malloc, UsableSizeFollowsTheSizeClassesUpTo128KiB) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(usable_sizes_follow_the_classes(), testing::ExitedWithCode(0), "");
}

// In a new thread: the process's first heap, this thread's, may serve a
// class it has no page for with a larger class's free block while it is
// young (DESIGN.md "The first heap borrows while young").
TEST(Malloc, UsableSizeSpotChecks) {
  std::thread([] {
    const std::pair<size_t, size_t> cases[] = {{1, 16}, {16, 16}, {17, 24}, {24, 24}, {40, 40}, {56, 56},
                                               {128, 128}, {129, 144}, {257, 288}};
    for (auto [n, usable] : cases) {
      void* p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(mallard_malloc_usable_size(p), usable) << "malloc(" << n << ")";
      mallard_free(p);
    }
  }).join();
}

TEST(Malloc, LargeBlocksArePageGranular) {
  for (size_t n : {kSmallLimit + 1, kSmallLimit + 4095, kSmallLimit + 4096, kSmallLimit + 4097, size_t{200000},
                   1 * MiB - 1, 1 * MiB, 3 * MiB + 5, 64 * MiB + 1}) {
    void* p = mallard_malloc(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(mallard_malloc_usable_size(p), round_up(n, kLargeGranule)) << "malloc(" << n << ")";
    // The whole usable size is ours to write.
    auto* bytes = static_cast<unsigned char*>(p);
    bytes[0] = 1;
    bytes[mallard_malloc_usable_size(p) - 1] = 2;
    mallard_free(p);
  }
}

TEST(Malloc, UsableSizeIsWritableAndSeparate) {
  // Blocks of every class side by side, each filled up to its usable size:
  // a usable size that reaches into a neighbour breaks the neighbour's stamp.
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t n : class_boundary_sizes(1 * MiB)) {
    for (int copy = 0; copy < 3; ++copy) {
      void* p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      size_t usable = mallard_malloc_usable_size(p);
      ASSERT_GE(usable, n);
      stamp(p, usable, stamp_tag(p, usable));
      blocks.emplace_back(p, usable);
    }
  }
  for (auto [p, usable] : blocks) {
    EXPECT_EQ(stamp_mismatch(p, usable, stamp_tag(p, usable)), SIZE_MAX) << p << " usable " << usable;
    mallard_free(p);
  }
}

TEST(Malloc, NaturalAlignment) {
  // 16-aligned when the request is at most 16 or a multiple of 16; 8-aligned
  // otherwise (C17: an object of 24 bytes cannot need 16-byte alignment).
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 1024; ++n) sizes.push_back(n);
  for (size_t n : class_boundary_sizes(4 * MiB)) sizes.push_back(n);
  for (size_t n : sizes) {
    void* blocks[6];
    for (void*& p : blocks) {  // several, so that not only a page's first block is checked
      p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(is_aligned(p, 8)) << "malloc(" << n << ") = " << p;
      if (n <= 16 || n % 16 == 0) {
        EXPECT_TRUE(is_aligned(p, 16)) << "malloc(" << n << ") = " << p;
      }
    }
    for (void* p : blocks) mallard_free(p);
  }
}

// ---------------------------------------------------------------------------
// Aligned allocation

namespace {

struct AlignedCase {
  const char* how;
  void* p;
  size_t alignment, size;
};

// Marks the first and last bytes of a block (touching every page of the
// 192 MiB blocks of the 64 MiB alignments would dominate the test's time).
void stamp_ends(void* p, size_t size, uint64_t tag) {
  size_t head = std::min(size, size_t{4096});
  stamp_all(p, head, tag);
  size_t tail = std::max(head, size - std::min(size, size_t{4096}));
  stamp_all(static_cast<char*>(p) + tail, size - tail, ~tag);
}
bool ends_intact(const void* p, size_t size, uint64_t tag) {
  size_t head = std::min(size, size_t{4096});
  size_t tail = std::max(head, size - std::min(size, size_t{4096}));
  return stamp_all_mismatch(p, head, tag) == SIZE_MAX &&
         stamp_all_mismatch(static_cast<const char*>(p) + tail, size - tail, ~tag) == SIZE_MAX;
}

}  // namespace

TEST(Aligned, EveryPowerOfTwoFrom8To64MiB) {
  for (size_t alignment = 8; alignment <= 64 * MiB; alignment *= 2) {
    std::vector<AlignedCase> live;
    for (size_t size : {size_t{1}, alignment / 2, alignment - 1, alignment, alignment + 1, 2 * alignment,
                        3 * alignment - 8}) {
      void* p = nullptr;
      ASSERT_EQ(mallard_posix_memalign(&p, alignment, size), 0) << alignment << "/" << size;
      live.push_back({"posix_memalign", p, alignment, size});
      live.push_back({"aligned_alloc", mallard_aligned_alloc(alignment, size), alignment, size});
      live.push_back({"memalign", mallard_memalign(alignment, size), alignment, size});
    }
    for (const AlignedCase& c : live) {
      ASSERT_NE(c.p, nullptr) << c.how << "(" << c.alignment << ", " << c.size << ")";
      EXPECT_TRUE(is_aligned(c.p, c.alignment)) << c.how << "(" << c.alignment << ", " << c.size << ") = " << c.p;
      EXPECT_GE(mallard_malloc_usable_size(c.p), c.size) << c.how << "(" << c.alignment << ", " << c.size << ")";
      stamp_ends(c.p, c.size, stamp_tag(c.p, c.size));
    }
    // All blocks of this alignment were live together: none may overlap.
    for (const AlignedCase& c : live) {
      EXPECT_TRUE(ends_intact(c.p, c.size, stamp_tag(c.p, c.size)))
          << c.how << "(" << c.alignment << ", " << c.size << ") was overwritten";
      mallard_free(c.p);
    }
  }
}

// A large block aligned beyond a page starts at the first multiple of the
// alignment past its segment header, whatever the header's size (with a 12
// KiB header, 8 KiB alignment once came out 4 KiB off).
TEST(Aligned, LargeBlocksAlignedBeyondAPage) {
  for (size_t alignment : {size_t{8192}, size_t{16384}, size_t{65536}, 1 * MiB}) {
    for (size_t size : {128 * KiB + 1, size_t{300000}, 2 * MiB}) {
      void* p = nullptr;
      ASSERT_EQ(mallard_posix_memalign(&p, alignment, size), 0) << alignment << "/" << size;
      EXPECT_TRUE(is_aligned(p, alignment)) << alignment << "/" << size << " = " << p;
      EXPECT_GE(mallard_malloc_usable_size(p), size);
      std::memset(p, 0xa5, size);
      mallard_free(p);
    }
  }
}

// A thread keeps only the last large block it freed; the one before goes to
// the global cache at once, where another thread reuses it instead of
// mapping a new one (each thread's cached block is memory that only it can
// use: with two kept, mixed:real's eight jobs held 2 MiB each).
TEST(Large, AThreadKeepsItsLastFreedBlockAndSharesTheOneBefore) {
  constexpr size_t kSize = 2 * MiB + 12345;
  mallard_trim(0);  // empties the global cache and this thread's
  std::latch both_freed(1);
  std::latch one_taken(1);
  void* first = nullptr;
  void* last = nullptr;
  void* taken_back = nullptr;
  std::thread freer([&] {
    first = mallard_malloc(kSize);
    last = mallard_malloc(kSize);
    mallard_free(first);
    mallard_free(last);
    both_freed.count_down();
    one_taken.wait();
    taken_back = mallard_malloc(kSize);
  });
  both_freed.wait();
  void* here = mallard_malloc(kSize);
  one_taken.count_down();
  freer.join();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(here, first) << "the block freed before the last did not reach the global cache";
  EXPECT_EQ(taken_back, last) << "the freeing thread did not get its last block back";
  mallard_free(here);
  mallard_free(taken_back);
}

// A block a thread keeps for itself is not lost to the others: a thread
// about to map a new large block takes it over first.
TEST(Large, AThreadAboutToMapTakesAnotherThreadsIdleBlock) {
  constexpr size_t kSize = 3 * MiB + 4321;
  mallard_trim(0);  // empties the global cache and this thread's
  std::latch kept_freed(1);
  std::latch allocated_here(1);
  void* kept = nullptr;
  std::thread keeper([&] {
    kept = mallard_malloc(kSize);
    mallard_free(kept);
    kept_freed.count_down();
    allocated_here.wait();  // alive, its block still cached
  });
  kept_freed.wait();
  void* here = mallard_malloc(kSize);
  allocated_here.count_down();
  keeper.join();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(here, kept) << "a new block was mapped while another thread held one idle";
  mallard_free(here);
}

// The global cache serves the smallest cached block that holds a request,
// and of blocks of one capacity the one freed last, whether the capacities
// are below 4 MiB (one list each in the cache's index) or above (one list
// for all of them).
TEST(Large, TheCacheServesTheSmallestBlockThatFits) {
  mallard_trim(0);  // empties the global cache and this thread's
  const size_t sizes[] = {200 * KiB, 300 * KiB, 300 * KiB, 500 * KiB, 2 * MiB, 6 * MiB, 9 * MiB, 7 * MiB};
  std::vector<void*> blocks;
  for (size_t n : sizes) blocks.push_back(mallard_malloc(n));
  // This thread keeps the last block it frees for itself: a small one, which
  // fits none of the requests below.
  void* kept = mallard_malloc(140 * KiB);
  for (void* p : blocks) ASSERT_NE(p, nullptr);
  ASSERT_NE(kept, nullptr);
  for (void* p : blocks) mallard_free(p);
  mallard_free(kept);
  struct Request {
    size_t size;
    void* expected;
  };
  const Request requests[] = {
      {250 * KiB, blocks[2]},     // the second 300 KiB block: freed after the first
      {250 * KiB, blocks[1]},     // then the first
      {400 * KiB, blocks[3]},     // 500 KiB, not 2 MiB
      {5 * MiB, blocks[5]},       // 6 MiB, not 7 or 9 MiB
      {6 * MiB + 1, blocks[7]},   // 7 MiB
      {300 * KiB, blocks[4]},     // 2 MiB: at most four times the request, and 1 MiB
  };
  std::vector<void*> taken;
  for (const Request& request : requests) {
    void* p = mallard_malloc(request.size);
    ASSERT_NE(p, nullptr);
    taken.push_back(p);
    EXPECT_EQ(p, request.expected) << "request of " << request.size << " bytes";
  }
  for (void* p : taken) mallard_free(p);
  mallard_trim(0);
}

// The mapping of /proc/self/maps that holds p: {start, end}, or {0, 0}.
std::pair<uintptr_t, uintptr_t> mapping_of(const void* p) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return {0, 0};
  char line[512];
  auto address = reinterpret_cast<uintptr_t>(p);
  std::pair<uintptr_t, uintptr_t> found{0, 0};
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &start, &end) == 2 && start <= address && address < end) found = {start, end};
  }
  std::fclose(f);
  return found;
}

// Each segment is a mapping (VMA) of its own, not merged with the segments
// mapped before and after it: a page fault then takes only its own VMA's
// lock, and another thread's mmap or munmap does not hold it (segment.cpp,
// segment_placement). Medium blocks fill three segments of this thread's
// heap, large blocks three more; every one must be its own mapping, and it
// must hold no other segment. Only mappings placed at the hint are kept
// apart: under ThreadSanitizer, whose shadow memory covers the hint's
// region, every segment is over-mapped where the kernel puts it, and the
// kernel's top-down placement packs those together.
TEST(Segments, EachIsAMappingOfItsOwn) {
  if (kSanitized) GTEST_SKIP() << "the sanitizer's shadow memory covers the region where segments are placed apart";
  constexpr uintptr_t kSegment = uintptr_t{4} * MiB;
  std::vector<void*> blocks;
  for (int i = 0; i < 120; ++i) blocks.push_back(mallard_malloc(96 * KiB));  // 40 a segment
  for (int i = 0; i < 3; ++i) blocks.push_back(mallard_malloc(MiB + 4321));
  std::vector<uintptr_t> segments;
  for (void* p : blocks) {
    ASSERT_NE(p, nullptr);
    uintptr_t segment = reinterpret_cast<uintptr_t>(p) & ~(kSegment - 1);
    if (std::find(segments.begin(), segments.end(), segment) == segments.end()) segments.push_back(segment);
  }
  ASSERT_GE(segments.size(), 6u);
  for (uintptr_t segment : segments) {
    auto [start, end] = mapping_of(reinterpret_cast<void*>(segment));
    EXPECT_EQ(start, segment) << "the mapping holding segment " << std::hex << segment << " starts before it";
    for (uintptr_t other : segments) {
      if (other == segment) continue;
      EXPECT_FALSE(other >= start && other < end) << std::hex << other << " shares the mapping of " << segment;
    }
  }
  for (void* p : blocks) mallard_free(p);
}

// Plain large blocks start a few cache lines into a page (colouring); a freed
// one kept for reuse must not serve a request for page alignment.
TEST(Aligned, LargeRequestsAfterFreedPlainLargeBlocks) {
  for (size_t n : {size_t{200000}, 1 * MiB, 3 * MiB}) {
    for (int round = 0; round < 4; ++round) {
      void* plain = mallard_malloc(n);
      ASSERT_NE(plain, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(plain) % 64, 0u);
      mallard_free(plain);
      void* aligned = nullptr;
      ASSERT_EQ(mallard_posix_memalign(&aligned, 4096, n), 0);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 4096, 0u) << n;
      void* valloced = mallard_valloc(n);
      ASSERT_NE(valloced, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(valloced) % 4096, 0u) << n;
      mallard_free(aligned);
      mallard_free(valloced);
    }
  }
}

TEST(Aligned, AlignmentEqualToSize) {
  // mimalloc 2.0.9 as shipped by Debian gets posix_memalign(256, 256) wrong.
  for (size_t n = 8; n <= 4 * MiB; n *= 2) {
    std::vector<void*> blocks;
    for (int i = 0; i < 8; ++i) {
      void* p = nullptr;
      ASSERT_EQ(mallard_posix_memalign(&p, n, n), 0);
      EXPECT_TRUE(is_aligned(p, n)) << "posix_memalign(" << n << ", " << n << ") = " << p;
      blocks.push_back(p);
    }
    for (void* p : blocks) mallard_free(p);
  }
}

// Medium pages (blocks above 8 KiB) are coloured by cache lines, so plain
// blocks of those classes are only 64-byte aligned; an aligned request must
// still find (or start) a page whose blocks are aligned, also when the class
// already has coloured pages with free blocks.
TEST(Aligned, MediumClassesWhenUnalignedPagesExist) {
  for (size_t size : {size_t{16} * 1024, size_t{24} * 1024, size_t{64} * 1024, size_t{100} * 1024, size_t{128} * 1024}) {
    for (size_t alignment : {size_t{128}, size_t{4096}, size_t{8192}}) {
      std::vector<void*> plain, aligned;
      for (int i = 0; i < 6; ++i) plain.push_back(mallard_malloc(size));
      mallard_free(plain[1]);  // a coloured page with a free block heads the queue
      plain[1] = nullptr;
      for (int i = 0; i < 20; ++i) {
        void* p = nullptr;
        ASSERT_EQ(mallard_posix_memalign(&p, alignment, size), 0);
        EXPECT_TRUE(is_aligned(p, alignment)) << "posix_memalign(" << alignment << ", " << size << ") = " << p;
        EXPECT_GE(mallard_malloc_usable_size(p), size);
        std::memset(p, 0x5a, size);
        aligned.push_back(p);
      }
      std::set<void*> distinct(aligned.begin(), aligned.end());
      EXPECT_EQ(distinct.size(), aligned.size());
      for (void* p : plain) mallard_free(p);
      for (void* p : aligned) mallard_free(p);
    }
  }
}

// Aligned requests take the block malloc would hand out when it happens to
// be aligned (aligned_take_fast): plain and aligned blocks of the same
// classes, allocated and freed in a random order, must all keep their
// alignment and their bytes; posix_memalign leaves errno as it was.
TEST(Aligned, PlainAndAlignedBlocksOfOneClassMix) {
  struct Mix {
    size_t alignment, size;
  };
  std::mt19937_64 random(58);
  for (Mix mix : {Mix{16, 24}, Mix{32, 100}, Mix{64, 192}, Mix{64, 256}, Mix{512, 4096}, Mix{4096, 4096},
                  Mix{4096, 24 * KiB}, Mix{4096, 64 * KiB}, Mix{8192, 100 * KiB}}) {
    std::vector<AlignedCase> live;
    for (int step = 0; step < 600; ++step) {
      void* p = nullptr;
      switch (random() % 4) {
        case 0:
          p = mallard_malloc(mix.size);
          live.push_back({"malloc", p, 8, mix.size});
          break;
        case 1:
          errno = 1234;
          ASSERT_EQ(mallard_posix_memalign(&p, mix.alignment, mix.size), 0);
          EXPECT_EQ(errno, 1234) << "posix_memalign(" << mix.alignment << ", " << mix.size << ") wrote errno";
          live.push_back({"posix_memalign", p, mix.alignment, mix.size});
          break;
        case 2:
          p = mallard_aligned_alloc(mix.alignment, mix.size);
          live.push_back({"aligned_alloc", p, mix.alignment, mix.size});
          break;
        default:
          if (!live.empty()) {
            size_t victim = random() % live.size();
            ASSERT_TRUE(ends_intact(live[victim].p, live[victim].size, stamp_tag(live[victim].p, live[victim].size)))
                << live[victim].how << "(" << mix.alignment << ", " << mix.size << ") was overwritten";
            mallard_free(live[victim].p);
            live[victim] = live.back();
            live.pop_back();
          }
          continue;
      }
      const AlignedCase& c = live.back();
      ASSERT_NE(c.p, nullptr) << c.how << "(" << mix.alignment << ", " << mix.size << ")";
      EXPECT_TRUE(is_aligned(c.p, c.alignment)) << c.how << "(" << mix.alignment << ", " << mix.size << ") = " << c.p;
      EXPECT_GE(mallard_malloc_usable_size(c.p), mix.size);
      stamp_ends(c.p, c.size, stamp_tag(c.p, c.size));
    }
    for (const AlignedCase& c : live) {
      EXPECT_TRUE(ends_intact(c.p, c.size, stamp_tag(c.p, c.size))) << c.how << " was overwritten";
      mallard_free(c.p);
    }
  }
}

TEST(Aligned, SmallAlignmentsOfMemalign) {
  for (size_t alignment : {1, 2, 4}) {
    void* p = mallard_memalign(alignment, 10);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(mallard_malloc_usable_size(p), 10u);
    mallard_free(p);
  }
}

TEST(Aligned, ZeroSize) {
  void* p = reinterpret_cast<void*>(1);
  ASSERT_EQ(mallard_posix_memalign(&p, 64, 0), 0);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(is_aligned(p, 64));
  mallard_free(p);
  void* q = mallard_aligned_alloc(4096, 0);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(is_aligned(q, 4096));
  mallard_free(q);
  void* r = mallard_memalign(128, 0);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(is_aligned(r, 128));
  mallard_free(r);
}

TEST(Aligned, PosixMemalignRejectsBadAlignments) {
  for (size_t alignment : {size_t{0}, size_t{1}, size_t{2}, size_t{4}, size_t{12}, size_t{24}, size_t{40},
                           size_t{48}, size_t{96}, size_t{1000}, size_t{4097}, size_t{3} << 20, SIZE_MAX,
                           (size_t{1} << 63) + 8}) {
    void* sentinel = reinterpret_cast<void*>(0x1234);
    void* p = sentinel;
    EXPECT_EQ(mallard_posix_memalign(&p, opaque(alignment), 64), EINVAL) << "alignment " << alignment;
    // POSIX: on error *memptr is left unmodified or set to NULL.
    EXPECT_TRUE(p == sentinel || p == nullptr) << "alignment " << alignment;
  }
}

TEST(Aligned, VallocIsPageAligned) {
  const size_t page = page_size();
  for (size_t n : {size_t{1}, size_t{100}, page - 1, page, page + 1, 1 * MiB + 3}) {
    void* p = mallard_valloc(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(is_aligned(p, page)) << "valloc(" << n << ") = " << p;
    EXPECT_GE(mallard_malloc_usable_size(p), n);
    mallard_free(p);
  }
}

TEST(Aligned, PvallocRoundsUpToAPage) {
  const size_t page = page_size();
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, page - 1, page, page + 1, 1 * MiB + 3}) {
    void* p = mallard_pvalloc(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(is_aligned(p, page)) << "pvalloc(" << n << ") = " << p;
    size_t usable = mallard_malloc_usable_size(p);
    EXPECT_GE(usable, round_up(n, page)) << "pvalloc(" << n << ")";
    std::memset(p, 0x77, round_up(n, page));  // the rounded size is ours
    mallard_free(p);
  }
}

// ---------------------------------------------------------------------------
// Requests that cannot be met: NULL (or ENOMEM) and errno ENOMEM, never a
// crash. Sizes near SIZE_MAX catch overflows in rounding and alignment
// padding; 2^57 exceeds every Linux user address space (5-level paging
// included) but does not overflow anything.

namespace {
const size_t kImpossibleSizes[] = {
    size_t{PTRDIFF_MAX}, size_t{PTRDIFF_MAX} + 1, SIZE_MAX,       SIZE_MAX - 1, SIZE_MAX - 15,
    SIZE_MAX - 4095,     SIZE_MAX - 64 * MiB,     size_t{1} << 57, SIZE_MAX / 2 + 4096,
};
}

TEST(OutOfMemory, MallocFamilyReturnsNullWithEnomem) {
  for (size_t n : kImpossibleSizes) {
    size_t size = opaque(n);
    errno = 0;
    EXPECT_EQ(mallard_malloc(size), nullptr) << "malloc(" << n << ")";
    EXPECT_EQ(errno, ENOMEM) << "malloc(" << n << ")";
    errno = 0;
    EXPECT_EQ(mallard_calloc(1, size), nullptr) << "calloc(1, " << n << ")";
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mallard_calloc(size, 1), nullptr) << "calloc(" << n << ", 1)";
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mallard_realloc(nullptr, size), nullptr) << "realloc(NULL, " << n << ")";
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mallard_valloc(size), nullptr) << "valloc(" << n << ")";
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mallard_pvalloc(size), nullptr) << "pvalloc(" << n << ")";
    EXPECT_EQ(errno, ENOMEM);
    for (size_t alignment : {size_t{8}, size_t{16}, size_t{4096}, 2 * MiB, 64 * MiB}) {
      void* p = reinterpret_cast<void*>(0x1234);
      EXPECT_EQ(mallard_posix_memalign(&p, alignment, size), ENOMEM) << alignment << "/" << n;
      errno = 0;
      EXPECT_EQ(mallard_aligned_alloc(alignment, size), nullptr) << "aligned_alloc(" << alignment << ", " << n << ")";
      EXPECT_EQ(errno, ENOMEM);
      errno = 0;
      EXPECT_EQ(mallard_memalign(alignment, size), nullptr) << "memalign(" << alignment << ", " << n << ")";
      EXPECT_EQ(errno, ENOMEM);
    }
  }
}

TEST(OutOfMemory, ImpossibleAlignment) {
  // A power of two that is a multiple of sizeof(void*), so valid, but larger
  // than the address space.
  size_t alignment = opaque(size_t{1} << 62);
  void* p = nullptr;
  EXPECT_EQ(mallard_posix_memalign(&p, alignment, 64), ENOMEM);
  errno = 0;
  EXPECT_EQ(mallard_aligned_alloc(alignment, 64), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(mallard_memalign(alignment, 64), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

TEST(OutOfMemory, CallocAndReallocarrayOverflow) {
  const std::pair<size_t, size_t> overflowing[] = {
      {SIZE_MAX / 2 + 1, 2}, {size_t{1} << 32, size_t{1} << 32}, {SIZE_MAX, SIZE_MAX}, {3, SIZE_MAX / 3 + 1},
      {SIZE_MAX, 2},         {65537, SIZE_MAX / 65536},
  };
  void* old = mallard_malloc(100);
  ASSERT_NE(old, nullptr);
  stamp(old, 100, 42);
  for (auto [a, b] : overflowing) {
    errno = 0;
    EXPECT_EQ(mallard_calloc(opaque(a), opaque(b)), nullptr) << "calloc(" << a << ", " << b << ")";
    EXPECT_EQ(errno, ENOMEM) << "calloc(" << a << ", " << b << ")";
    errno = 0;
    EXPECT_EQ(mallard_reallocarray(nullptr, opaque(a), opaque(b)), nullptr) << a << " x " << b;
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mallard_reallocarray(old, opaque(a), opaque(b)), nullptr) << a << " x " << b;
    EXPECT_EQ(errno, ENOMEM);
    ASSERT_EQ(stamp_mismatch(old, 100, 42), SIZE_MAX) << "a failed reallocarray damaged the block";
  }
  mallard_free(old);
}

TEST(OutOfMemory, FailedReallocLeavesTheBlockIntact) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{5000}, size_t{300000}, 5 * MiB}) {
    void* p = mallard_malloc(n);
    ASSERT_NE(p, nullptr);
    size_t usable = mallard_malloc_usable_size(p);
    stamp(p, n, stamp_tag(p, n));
    for (size_t huge : kImpossibleSizes) {
      errno = 0;
      EXPECT_EQ(mallard_realloc(p, opaque(huge)), nullptr) << "realloc(" << n << " -> " << huge << ")";
      EXPECT_EQ(errno, ENOMEM);
    }
    EXPECT_EQ(stamp_mismatch(p, n, stamp_tag(p, n)), SIZE_MAX);
    EXPECT_EQ(mallard_malloc_usable_size(p), usable);
    mallard_free(p);
  }
  // An over-aligned block too.
  void* p = nullptr;
  ASSERT_EQ(mallard_posix_memalign(&p, 4096, 1000), 0);
  stamp(p, 1000, 7);
  EXPECT_EQ(mallard_realloc(p, opaque(SIZE_MAX - 100)), nullptr);
  EXPECT_EQ(stamp_mismatch(p, 1000, 7), SIZE_MAX);
  mallard_free(p);
}

// ---------------------------------------------------------------------------
// calloc

TEST(Calloc, ZeroCountOrSizeGivesAUniqueBlock) {
  void* a = mallard_calloc(0, 10);
  void* b = mallard_calloc(10, 0);
  void* c = mallard_calloc(0, 0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(c, nullptr);
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
  mallard_free(a);
  mallard_free(b);
  mallard_free(c);
}

TEST(Calloc, ZeroesReusedDirtyMemory) {
  // A block is dirtied to its usable size, freed, and calloc asks for the
  // same size: it gets the same memory back, and must clear it.
  for (size_t n : {size_t{1}, size_t{16}, size_t{24}, size_t{100}, size_t{128}, size_t{144}, size_t{1000},
                   size_t{4096}, size_t{10000}, size_t{65536}, kSmallLimit, size_t{200000}, 1 * MiB, 4 * MiB}) {
    for (int i = 0; i < 20; ++i) {
      void* p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0xAB, mallard_malloc_usable_size(p));
      mallard_free(p);
      void* q = mallard_calloc(1, n);
      ASSERT_NE(q, nullptr);
      ASSERT_EQ(first_nonzero(q, n), SIZE_MAX) << "calloc(1, " << n << ") round " << i;
      mallard_free(q);
    }
  }
}

// calloc clears small blocks with fixed-size stores from either end of the
// size rounded up to 8 (zero_block): every size up to past those runs, a
// dirty block reused, comes back zero, and the block after it keeps its
// bytes.
TEST(Calloc, ZeroesEverySmallSizeAndNoMore) {
  size_t reused = 0;
  for (size_t n = 0; n <= 136; ++n) {
    auto* p = static_cast<unsigned char*>(mallard_malloc(n));
    auto* next = static_cast<unsigned char*>(mallard_malloc(n));
    ASSERT_NE(p, nullptr);
    ASSERT_NE(next, nullptr);
    size_t next_size = mallard_malloc_usable_size(next);
    std::memset(next, 0xCD, next_size);
    std::memset(p, 0xAB, mallard_malloc_usable_size(p));
    mallard_free(p);
    auto* q = static_cast<unsigned char*>(mallard_calloc(1, n));
    ASSERT_NE(q, nullptr);
    if (q == p) ++reused;  // not when p's page was not the class's current one any more
    EXPECT_EQ(first_nonzero(q, n), SIZE_MAX) << "calloc(1, " << n << ")";
    for (size_t i = 0; i < next_size; ++i) {
      ASSERT_EQ(next[i], 0xCD) << "calloc(1, " << n << ") wrote byte " << i << " of another block";
    }
    mallard_free(q);
    mallard_free(next);
  }
  EXPECT_GE(reused, 120u) << "calloc got the dirty block just freed back for most sizes";
}

// Fills and frees pages of small blocks `rounds` times: their slow paths
// run the purge upkeep (heap and global ticks).
void churn_small_pages(int rounds) {
  std::vector<void*> blocks;
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 4096; ++i) blocks.push_back(mallard_malloc(1000));
    for (void* b : blocks) mallard_free(b);
    blocks.clear();
  }
}

enum class PurgeSeen { kPurged, kStillResident, kUnmapped };

// Churns small pages (above) until the OS page after the one holding `p`,
// a freed large block, is no longer resident, for at most 2,000 rounds a
// millisecond apart.
PurgeSeen churn_until_purged(const void* p) {
  const size_t page = page_size();
  auto* second_page = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) | (page - 1)) + 1);
  for (int round = 0; round < 2000; ++round) {
    churn_small_pages(1);
    unsigned char resident = 1;
    if (mincore(second_page, page, &resident) != 0) return PurgeSeen::kUnmapped;
    if ((resident & 1) == 0) return PurgeSeen::kPurged;
    usleep(1000);
  }
  return PurgeSeen::kStillResident;
}

TEST(Calloc, ZeroesAPurgedLargeBlockReused) {
  // A freed large block waits in a cache and is purged after the delay; its
  // first bytes share an OS page with the mapping's header, which the purge
  // must keep, so they stay dirty. calloc of the same size takes the purged
  // mapping back and must clear them; the header must still describe it.
  std::string saved_delay = mallard_option_get("purge_delay_ms");
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "0"), 0);
  constexpr size_t kSize = 300000;
  auto* p = static_cast<unsigned char*>(mallard_malloc(kSize));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xAB, mallard_malloc_usable_size(p));
  mallard_free(p);
  PurgeSeen seen = churn_until_purged(p);
  ASSERT_NE(seen, PurgeSeen::kUnmapped) << "the cached block was unmapped, not purged";
  ASSERT_EQ(seen, PurgeSeen::kPurged) << "the freed large block was never purged";
  auto* q = static_cast<unsigned char*>(mallard_calloc(1, kSize));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q, p) << "calloc took another mapping: the purged one is not reused";
  EXPECT_EQ(first_nonzero(q, kSize), SIZE_MAX);
  EXPECT_GE(mallard_malloc_usable_size(q), kSize);
  mallard_free(q);
  ASSERT_EQ(mallard_option_set("purge_delay_ms", saved_delay.c_str()), 0);
}

// A medium segment's page 0 starts in the header's first OS page, after
// the descriptors (and the heap of a thread whose first request was
// medium): its first block's first bytes share that page, which a purge
// keeps. Here a new thread fills page 0 with 64 KiB blocks, dirties them,
// frees them and trims: calloc must find every byte zero again, the first
// block's head included. A page for aligned requests starts at its first
// 8 KiB boundary instead: the first thread of a fresh process asks for
// aligned medium blocks, the most aligned first, which its new medium
// segment's page 0 serves.
namespace medium_page_zero {
constexpr size_t kSize = 64 * 1024;
constexpr size_t kBlocks = 15;  // page 0: (1 MiB - 3,968) / (64 KiB + 64)
constexpr uintptr_t kSegmentMask = (uintptr_t{4} << 20) - 1;
void* dirty_free_trim_calloc(void*) {
  void* blocks[kBlocks];
  for (void*& b : blocks) {
    b = mallard_malloc(kSize);
    if (b == nullptr) fail("malloc failed", 0);
    std::memset(b, 0xAB, mallard_malloc_usable_size(b));
  }
  uintptr_t first = reinterpret_cast<uintptr_t>(blocks[0]);
  if ((first & kSegmentMask) >= 4096) fail("page 0's first block is not in its header's OS page", static_cast<int64_t>(first & kSegmentMask));
  for (void* b : blocks) mallard_free(b);
  mallard_trim(0);
  bool first_again = false;
  for (void*& b : blocks) {
    b = mallard_calloc(1, kSize);
    if (b == nullptr) fail("calloc failed", 0);
    first_again |= reinterpret_cast<uintptr_t>(b) == first;
    auto* bytes = static_cast<const unsigned char*>(b);
    for (size_t i = 0; i < kSize; ++i) {
      if (bytes[i] != 0) fail("calloc gave a nonzero byte at offset", static_cast<int64_t>(i));
    }
  }
  if (!first_again) fail("calloc did not take page 0's first block again", 0);
  for (void* b : blocks) mallard_free(b);
  return nullptr;
}
void* aligned_in_a_new_segment(void*) {
  for (size_t alignment : {size_t{8192}, size_t{4096}, size_t{128}}) {
    void* p = nullptr;
    if (mallard_posix_memalign(&p, alignment, kSize) != 0 || p == nullptr) fail("posix_memalign failed", 0);
    if (reinterpret_cast<uintptr_t>(p) % alignment != 0) fail("a medium block is not aligned to", static_cast<int64_t>(alignment));
    std::memset(p, 1, kSize);
    mallard_free(p);
  }
  return nullptr;
}
void run(void* (*body)(void*)) {
  run_in_a_thread(body);
  _exit(0);
}
}  // namespace medium_page_zero

TEST(Calloc, ZeroesAMediumPageThatStartsInItsHeaderPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(medium_page_zero::run(medium_page_zero::dirty_free_trim_calloc), testing::ExitedWithCode(0), "");
}

TEST(Aligned, AMediumPageThatStartsInItsHeaderPageServesAlignedBlocks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(medium_page_zero::run(medium_page_zero::aligned_in_a_new_segment), testing::ExitedWithCode(0), "");
}

TEST(Calloc, ZeroesAfterAManyBlockDirtyCycle) {
  for (size_t n : {size_t{24}, size_t{48}, size_t{520}, size_t{3000}, size_t{40000}, size_t{300000}}) {
    const size_t count = n < 10000 ? 2000 : 32;
    std::vector<void*> blocks(count);
    for (void*& p : blocks) {
      p = mallard_malloc(n);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0xAB, mallard_malloc_usable_size(p));
    }
    for (void* p : blocks) mallard_free(p);
    for (void*& p : blocks) {
      p = mallard_calloc(n / 8 + 1, 8);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(first_nonzero(p, (n / 8 + 1) * 8), SIZE_MAX) << "calloc of " << n;
    }
    for (void* p : blocks) mallard_free(p);
  }
}

// calloc takes blocks carved from memory that reads as zero (a fresh
// mapping, or purged) without clearing them. These tests dirty memory in
// the ways that must still make it clear: a page another class wrote, and
// a purge the kernel refused.
namespace calloc_zero {
constexpr size_t kPages = 12;  // of 64 KiB: beyond the two a class's queue keeps when empty

// Fills kPages small pages' worth of `size`-byte blocks with 0xAB and frees
// them all; returns the 64 KiB pages they were on.
std::set<uintptr_t> dirty_pages_of(size_t size) {
  std::vector<void*> blocks(kPages * 64 * KiB / size);
  std::set<uintptr_t> pages;
  for (void*& p : blocks) {
    p = mallard_malloc(size);
    if (p == nullptr) std::abort();
    std::memset(p, 0xAB, size);
    pages.insert(reinterpret_cast<uintptr_t>(p) >> 16);
  }
  for (void* p : blocks) mallard_free(p);
  return pages;
}

// Callocs kPages small pages' worth of `size`-byte blocks and checks each;
// returns how many lay on `pages`, or SIZE_MAX after a block that was not
// zero (reported on stderr).
size_t calloc_checked(size_t size, const std::set<uintptr_t>& pages) {
  std::vector<void*> blocks(kPages * 64 * KiB / size);
  size_t on_pages = 0, bad = SIZE_MAX;
  for (void*& p : blocks) {
    p = mallard_calloc(1, size);
    if (p == nullptr) std::abort();
    if (size_t at = first_nonzero(p, size); at != SIZE_MAX && bad == SIZE_MAX) {
      std::fprintf(stderr, "calloc(1, %zu) = %p: byte %zu is not zero\n", size, p, at);
      bad = at;
    }
    on_pages += pages.count(reinterpret_cast<uintptr_t>(p) >> 16);
  }
  for (void* p : blocks) mallard_free(p);
  return bad != SIZE_MAX ? SIZE_MAX : on_pages;
}

// In a fresh process: with all memory locked, the kernel refuses to purge
// (MADV_DONTNEED fails on locked pages), so the pages trim "purged" still
// hold their bytes; calloc must not take them for zero.
void after_a_refused_purge() {
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    std::fprintf(stderr, "mlockall: %s\n", std::strerror(errno));
    _exit(2);
  }
  // A block of another class keeps the segment in use: with every page
  // free, trim would give the whole segment back, and calloc would carve a
  // new one (where mallard is not the process's malloc, as under UBSan).
  void* pin = mallard_malloc(48);
  std::set<uintptr_t> pages = dirty_pages_of(512);
  mallard_trim(0);
  size_t reused = calloc_checked(512, pages);
  mallard_free(pin);
  if (reused == SIZE_MAX) _exit(1);
  if (reused == 0) {
    std::fprintf(stderr, "no calloc'd block reused a page trim tried to purge\n");
    _exit(3);
  }
  _exit(0);
}

// In a fresh process, whose heap has no medium page yet: a calloc'd 64 KiB
// block from a new medium page leaves its OS pages untouched but the first
// (its link word). Exits with the number of resident pages beyond that.
void fresh_block_untouched() {
  constexpr size_t kSize = 64 * KiB;
  void* p = mallard_calloc(1, kSize);
  if (p == nullptr) _exit(100);
  size_t resident = resident_pages(p, kSize);
  _exit(resident == SIZE_MAX ? 101 : static_cast<int>(resident > 1 ? resident - 1 : 0));
}
}  // namespace calloc_zero

TEST(Calloc, ZeroesAPageAnotherClassDirtied) {
  std::thread([] {
    std::set<uintptr_t> pages = calloc_zero::dirty_pages_of(512);
    size_t reused = calloc_zero::calloc_checked(208, pages);
    ASSERT_NE(reused, SIZE_MAX) << "calloc returned a block that was not zero";
    EXPECT_GT(reused, 0u) << "no calloc'd block reused a page the other class dirtied";
  }).join();
}

// Blocks freed onto a page's list go ahead of the blocks carved there from
// fresh memory, which calloc takes without clearing: a freed block is told
// apart by its free key, which every free writes, the owner's and another
// thread's alike. Here each freed block's key word is zero when freed (the
// program wrote it), and the rest of it is not.
TEST(Calloc, ZeroesFreedBlocksAheadOfFreshOnes) {
  constexpr size_t kSize = 48;
  constexpr int kBlocks = 300;
  for (bool remote : {false, true}) {
    std::thread([remote] {
      std::vector<void*> dirtied;
      for (int i = 0; i < kBlocks; ++i) {
        auto* p = static_cast<uint64_t*>(mallard_malloc(kSize));
        ASSERT_NE(p, nullptr);
        std::memset(p, 0xAB, kSize);
        p[1] = 0;  // where a freed block's key goes
        dirtied.push_back(p);
      }
      // Every other one, so that the page keeps carved blocks behind them.
      std::vector<void*> freed;
      for (int i = 0; i < kBlocks; i += 2) freed.push_back(dirtied[i]);
      if (remote) {
        std::thread([&] {
          for (void* p : freed) mallard_free(p);
        }).join();
      } else {
        for (void* p : freed) mallard_free(p);
      }
      std::vector<void*> taken;
      std::set<void*> reused;
      std::set<void*> was_freed(freed.begin(), freed.end());
      for (int i = 0; i < 4 * kBlocks; ++i) {
        void* q = mallard_calloc(1, kSize);
        ASSERT_NE(q, nullptr);
        ASSERT_EQ(first_nonzero(q, kSize), SIZE_MAX) << (remote ? "remote" : "local") << " calloc " << i;
        if (was_freed.count(q) != 0) reused.insert(q);
        taken.push_back(q);
      }
      EXPECT_EQ(reused.size(), freed.size()) << (remote ? "remote" : "local") << ": calloc reused every freed block";
      for (void* q : taken) mallard_free(q);
      for (int i = 1; i < kBlocks; i += 2) mallard_free(dirtied[i]);
    }).join();
  }
}

TEST(Calloc, ZeroesMemoryAPurgeCouldNotGiveBack) {
  // A sanitizer's shadow is terabytes of reserved memory that mlockall would
  // try to fault in.
  if (kSanitized) GTEST_SKIP() << "mlockall would lock the sanitizer's shadow memory";
  pid_t probe = fork();
  ASSERT_GE(probe, 0);
  if (probe == 0) _exit(mlockall(MCL_CURRENT | MCL_FUTURE) == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(probe, &status, 0), probe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    GTEST_SKIP() << "mlockall is refused here (needs CAP_IPC_LOCK or a large RLIMIT_MEMLOCK)";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(calloc_zero::after_a_refused_purge(), testing::ExitedWithCode(0), "");
}

TEST(Calloc, LeavesFreshMemoryUntouched) {
  if (thp_always()) GTEST_SKIP() << "transparent huge pages are always on: a fresh segment faults in whole";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(calloc_zero::fresh_block_untouched(), testing::ExitedWithCode(0), "");
}

// ---------------------------------------------------------------------------
// realloc

TEST(Realloc, NullPointerIsMalloc) {
  void* p = mallard_realloc(nullptr, 24);
  ASSERT_NE(p, nullptr);
  // A small block, of the 24-byte class or, in a thread's first moments, a
  // slightly larger class's that its young heap borrowed (heap.cpp); run
  // alone, this test is the process's first allocation.
  EXPECT_GE(mallard_malloc_usable_size(p), 24u);
  EXPECT_LE(mallard_malloc_usable_size(p), 48u);
  mallard_free(p);
  void* q = mallard_realloc(nullptr, 0);
  EXPECT_NE(q, nullptr) << "realloc(NULL, 0) is malloc(0)";
  mallard_free(q);
}

TEST(Realloc, ToZeroFreesOrReturnsAUniqueBlock) {
  // glibc frees and returns NULL; returning a fresh minimal block is also
  // allowed. Either way it must not crash, and a returned block is usable.
  void* other = mallard_malloc(16);
  for (size_t n : {size_t{1}, size_t{100}, size_t{300000}}) {
    void* p = mallard_malloc(n);
    ASSERT_NE(p, nullptr);
    void* r = mallard_realloc(p, 0);
    std::printf("realloc(%zu-byte block, 0) returned %s\n", n, r == nullptr ? "NULL (block freed)" : "a new block");
    RecordProperty("realloc_to_zero_" + std::to_string(n), r == nullptr ? "null" : "block");
    if (r != nullptr) {
      EXPECT_NE(r, other);
      mallard_free(r);
    }
  }
  mallard_free(other);
}

TEST(Realloc, PreservesContentsAcrossEveryClassBoundary) {
  // One block grows from 1 byte to 8 MiB through every class boundary, then
  // shrinks back. The whole block always carries one stamp, so any byte lost
  // or misplaced by a move shows up.
  std::vector<size_t> ladder = class_boundary_sizes(8 * MiB);
  ladder.insert(ladder.begin(), 1);
  std::vector<size_t> path = ladder;
  path.insert(path.end(), ladder.rbegin() + 1, ladder.rend());
  const uint64_t tag = 0xC0FFEE;
  size_t size = path.front();
  char* p = static_cast<char*>(mallard_malloc(size));
  ASSERT_NE(p, nullptr);
  stamp_all(p, size, tag);
  for (size_t next : path) {
    char* q = static_cast<char*>(mallard_realloc(p, next));
    ASSERT_NE(q, nullptr) << size << " -> " << next;
    ASSERT_GE(mallard_malloc_usable_size(q), next);
    size_t kept = std::min(size, next);
    for (size_t i = 0; i < kept; ++i)
      ASSERT_EQ(static_cast<uint8_t>(q[i]), stamp_byte(tag, i)) << "byte " << i << " after " << size << " -> " << next;
    for (size_t i = kept; i < next; ++i) q[i] = static_cast<char>(stamp_byte(tag, i));
    p = q;
    size = next;
  }
  mallard_free(p);
}

// A small or medium block that realloc must move for a small growth moves
// to at least a quarter more room, so that the growths after it stay in
// place; a bigger growth gets what it asks, and the headroom never crosses
// into large blocks. A buffer growing by an eighth at a time (CPython's
// lists) thus moves at most every other step, not at every class boundary.
TEST(Realloc, SmallGrowthsMoveToAQuarterMoreRoom) {
  for (size_t start : {size_t{40}, size_t{1000}, size_t{5000}, 40 * KiB}) {
    auto* p = static_cast<char*>(mallard_malloc(start));
    ASSERT_NE(p, nullptr);
    size_t usable = mallard_malloc_usable_size(p);
    stamp_all(p, usable, start);
    auto* q = static_cast<char*>(mallard_realloc(p, usable + 1));
    ASSERT_NE(q, nullptr);
    EXPECT_GE(mallard_malloc_usable_size(q), usable + usable / 4) << "grown from " << usable;
    EXPECT_EQ(stamp_all_mismatch(q, usable, start), SIZE_MAX) << "grown from " << usable;
    mallard_free(q);
  }
  // A growth past a quarter gets its own size's class, not more.
  auto* p = static_cast<char*>(mallard_malloc(1000));
  size_t usable = mallard_malloc_usable_size(p);
  auto* q = static_cast<char*>(mallard_realloc(p, 2 * usable));
  ASSERT_NE(q, nullptr);
  auto* probe = mallard_malloc(2 * usable);
  EXPECT_EQ(mallard_malloc_usable_size(q), mallard_malloc_usable_size(probe));
  mallard_free(probe);
  mallard_free(q);
  // The largest medium block's headroom stops at the largest class: the
  // grown block (an extent, extent.hpp) holds no more than a block of that
  // class. (After a trim: a class with no free block of its own would take
  // a free one of the largest class, left by an earlier test.)
  mallard_trim(0);
  constexpr size_t kLargestClass = 128 * KiB;
  auto* m = static_cast<char*>(mallard_malloc(kLargestClass - 8 * KiB));
  size_t m_usable = mallard_malloc_usable_size(m);
  ASSERT_LT(m_usable, kLargestClass);
  auto* n = static_cast<char*>(mallard_realloc(m, m_usable + 1));
  ASSERT_NE(n, nullptr);
  auto* largest = mallard_malloc(kLargestClass);
  EXPECT_GE(mallard_malloc_usable_size(n), kLargestClass);
  EXPECT_LE(mallard_malloc_usable_size(n), mallard_malloc_usable_size(largest));
  mallard_free(largest);
  mallard_free(n);
  // Growing one byte at a time from 512 B to 64 KiB: with a class step of
  // an eighth a move at every class would be 8 per doubling (56); a quarter
  // more at each move makes it at most about 3.1 per doubling. Up to 2 KiB
  // the block is in a size class, and each doubling needs a move; past it,
  // an extent, which may grow in place into free memory after it.
  auto* b = static_cast<char*>(mallard_malloc(512));
  ASSERT_NE(b, nullptr);
  int moves = 0, class_moves = 0;
  for (size_t size = 513; size <= 64 * KiB; ++size) {
    auto* c = static_cast<char*>(mallard_realloc(b, size));
    ASSERT_NE(c, nullptr);
    if (c != b) {
      ++moves;
      class_moves += size <= 2 * KiB;
    }
    c[size - 1] = static_cast<char>(size);
    b = c;
  }
  EXPECT_LE(moves, 23);
  EXPECT_GE(class_moves, 2) << "every doubling of a class block needs at least one move";
  mallard_free(b);
}

// realloc moving a medium block into one carved from memory that is not
// resident yet faults in the pages its copy fills with one system call
// (MADV_POPULATE_WRITE) before copying, rather than one page fault each as
// the copy reaches them (a fault costs 6-7 us here; DESIGN.md "realloc
// populates the fresh block it copies into"), and no more than those
// pages. Counted with the page-fault software event for this thread, which
// counts the faults the program takes, not those the kernel takes for it in
// the system call. In a fresh process and a new thread, whose heap has no
// block of the class realloc moves to. (Under TSan and ASan, their shadow
// memory faults as the copy writes it: only the bytes and residency are
// checked there.) A grown medium block is an extent: a first one, kept live,
// maps the thread's extent segment, so that the faults its header and tags
// take are not counted, and the block measured is carved after it from
// memory the segment never handed out.
namespace populate_copy {
long open_fault_counter() {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_PAGE_FAULTS;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

void run() {
  std::thread([] {
    auto* first = mallard_realloc(mallard_malloc(9 * KiB), 11 * KiB);
    if (first == nullptr) _exit(2);
    constexpr size_t kFrom = 40 * KiB;  // moves to a quarter more room
    auto* p = static_cast<char*>(mallard_malloc(kFrom));
    if (p == nullptr) _exit(2);
    size_t copied = mallard_malloc_usable_size(p);  // a cache line more than asked (block_stride)
    stamp_all(p, copied, 7);
    long counter = open_fault_counter();
    if (counter < 0) {
      std::fprintf(stderr, "perf_event_open: %s\n", std::strerror(errno));
      _exit(3);
    }
    ioctl(static_cast<int>(counter), PERF_EVENT_IOC_RESET, 0);
    ioctl(static_cast<int>(counter), PERF_EVENT_IOC_ENABLE, 0);
    auto* q = static_cast<char*>(mallard_realloc(p, copied + 1));
    ioctl(static_cast<int>(counter), PERF_EVENT_IOC_DISABLE, 0);
    uint64_t faults = 0;
    if (read(static_cast<int>(counter), &faults, sizeof faults) != sizeof faults) _exit(3);
    if (q == nullptr || q == p || stamp_all_mismatch(q, copied, 7) != SIZE_MAX) _exit(4);
    size_t usable = mallard_malloc_usable_size(q);
    size_t page = page_size();
    if (!MALLARD_TEST_SANITIZED && faults > 2) {
      std::fprintf(stderr, "the copy of %zu bytes took %llu page faults\n", copied,
                   static_cast<unsigned long long>(faults));
      _exit(1);
    }
    // Past the copy (and its last page), the new block is not resident.
    uintptr_t rest = (reinterpret_cast<uintptr_t>(q) + copied + page - 1) & ~(page - 1);
    uintptr_t end = (reinterpret_cast<uintptr_t>(q) + usable) & ~(page - 1);
    if (end <= rest) _exit(2);
    size_t resident = resident_pages(reinterpret_cast<void*>(rest), end - rest);
    if (resident != 0) {
      std::fprintf(stderr, "%zu pages past the copied bytes are resident\n", resident);
      _exit(1);
    }
    mallard_free(q);
    mallard_free(first);
  }).join();
  _exit(0);
}
}  // namespace populate_copy

// A block realloc grew (an extent: 1 KiB granules) stays where it is for
// every size it holds that would not waste more than half of it, and moves,
// with its bytes, for a size below that.
TEST(Realloc, AGrownBlockStaysWhileItHoldsTheSize) {
  auto* p = static_cast<char*>(mallard_realloc(mallard_malloc(1000), 20 * KiB));
  ASSERT_NE(p, nullptr);
  size_t usable = mallard_malloc_usable_size(p);
  ASSERT_GE(usable, 20 * KiB);
  stamp_all(p, 20 * KiB, 7);
  for (size_t size : {usable, usable - 1, usable / 2 + 1, usable / 2}) {
    EXPECT_EQ(mallard_realloc(p, size), p) << size << " of " << usable;
  }
  auto* q = static_cast<char*>(mallard_realloc(p, usable / 2 - 1));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  EXPECT_EQ(stamp_all_mismatch(q, usable / 2 - 1, 7), SIZE_MAX);
  mallard_free(q);
}

TEST(Realloc, AMoveIntoFreshMemoryFaultsItsCopyInAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(populate_copy::run(), testing::ExitedWithCode(0), "");
}

namespace {

// The first address past the mapping of the large block p (its end, rounded
// up to a page, as mallard maps it).
uintptr_t large_mapping_end(const void* p) {
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t end = reinterpret_cast<uintptr_t>(p) + mallard_malloc_usable_size(const_cast<void*>(p));
  return (end + page - 1) & ~(page - 1);
}

// Maps `bytes` of inaccessible memory at addr, failing if anything is mapped
// there already; nullptr if so.
void* reserve_exactly_at(uintptr_t addr, size_t bytes) {
  void* p = mmap(reinterpret_cast<void*>(addr), bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

size_t mapped_bytes() {
  mallard_stats stats{};
  EXPECT_EQ(mallard_stats_get(&stats), 0);
  return stats.mapped;
}

}  // namespace

// A large block that realloc grows past its mapping keeps its bytes without
// a copy: the mapping grows where it is when the address space after it is
// free, and otherwise its pages move to a new mapping (mremap). Both ways
// are forced here: a page mapped right after the block leaves only the move.
TEST(Realloc, LargeBlocksGrowWithoutACopy) {
  for (bool blocked : {false, true}) {
    // A fresh mapping, no bigger than the block: a cached one could hold 3
    // MiB already (cached mappings serve up to four times their request).
    mallard_trim(0);
    size_t size = 300 * KiB;
    auto* p = static_cast<char*>(mallard_malloc(size));
    ASSERT_NE(p, nullptr);
    stamp_all(p, size, 77);
    uintptr_t end = large_mapping_end(p);
    constexpr size_t kGrown = 3 * MiB;
    // Whatever lies in the 3 MiB after the mapping: free (the block can grow
    // in place) or not. A test page tells, and stays only if blocking.
    void* probe = reserve_exactly_at(end, kGrown);
    bool room_after = probe != nullptr;
    if (probe != nullptr) munmap(probe, kGrown);
    void* blocker = blocked ? reserve_exactly_at(end, 4096) : nullptr;
    size_t mapped_before = mapped_bytes();
    auto* q = static_cast<char*>(mallard_realloc(p, kGrown));
    ASSERT_NE(q, nullptr);
    if (blocked || !room_after) {
      EXPECT_NE(q, p) << "the page after the block is taken: the mapping had to move";
    } else {
      EXPECT_EQ(q, p) << "the address space after the block was free: it grows in place";
    }
    EXPECT_GE(mallard_malloc_usable_size(q), kGrown);
    EXPECT_EQ(stamp_all_mismatch(q, size, 77), SIZE_MAX) << (blocked ? "moved" : "grown") << " block lost its bytes";
    // The new part is writable to its end, and reads as zero (fresh pages).
    for (size_t i = size + 4096; i < kGrown; i += 64 * KiB) EXPECT_EQ(q[i], 0) << "byte " << i;
    std::memset(q + size, 0x5A, kGrown - size);
    // The block keeps its offset in the mapping, so the mapping grew by as
    // much as the span from the block's start to the mapping's end.
    EXPECT_EQ(mapped_bytes() - mapped_before, (large_mapping_end(q) - reinterpret_cast<uintptr_t>(q)) -
                                                  (end - reinterpret_cast<uintptr_t>(p)))
        << "mapped grows by what the mapping grew";
    if (blocker != nullptr) munmap(blocker, 4096);
    // Grows again (now from 3 MiB), then shrinks back within the mapping.
    auto* r = static_cast<char*>(mallard_realloc(q, 9 * MiB));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(stamp_all_mismatch(r, size, 77), SIZE_MAX);
    EXPECT_EQ(static_cast<uint8_t>(r[kGrown - 1]), 0x5A);
    auto* t = static_cast<char*>(mallard_realloc(r, 400 * KiB));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(stamp_all_mismatch(t, size, 77), SIZE_MAX);
    mallard_free(t);
  }
}

// Below kRemapMinBytes (256 KiB) a large block grows in place too when the
// address space after its mapping is free; only a move is a copy there.
TEST(Realloc, SmallLargeBlocksGrowInPlace) {
  for (bool blocked : {false, true}) {
    mallard_trim(0);  // a fresh mapping (see LargeBlocksGrowWithoutACopy)
    size_t size = 140 * KiB;
    auto* p = static_cast<char*>(mallard_malloc(size));
    ASSERT_NE(p, nullptr);
    stamp_all(p, size, 31);
    uintptr_t end = large_mapping_end(p);
    void* probe = reserve_exactly_at(end, 1 * MiB);
    bool room_after = probe != nullptr;
    if (probe != nullptr) munmap(probe, 1 * MiB);
    void* blocker = blocked ? reserve_exactly_at(end, 4096) : nullptr;
    auto* q = static_cast<char*>(mallard_realloc(p, 220 * KiB));
    ASSERT_NE(q, nullptr);
    if (blocked || !room_after) {
      EXPECT_NE(q, p) << "the page after the block is taken: it had to be copied";
    } else {
      EXPECT_EQ(q, p) << "the address space after the block was free: it grows in place";
    }
    EXPECT_EQ(stamp_all_mismatch(q, size, 31), SIZE_MAX);
    std::memset(q + size, 0x3C, 220 * KiB - size);
    if (blocker != nullptr) munmap(blocker, 4096);
    mallard_free(q);
  }
}

// A block that realloc grows to a large size, past what it holds (a medium
// block, or a large one past its mapping), moves into a cached mapping whose
// pages are still resident (freed less than a purge delay ago), and grows on
// inside it without any page purged: the cached memory is reused rather
// than faulted in anew beside it.
TEST(Realloc, BlocksGrowIntoAWarmCachedMapping) {
  for (size_t size : {100 * KiB, 1 * MiB}) {  // a medium block, a large one
    mallard_trim(0);  // empty caches
    auto* warm = static_cast<char*>(mallard_malloc(8 * MiB));
    ASSERT_NE(warm, nullptr);
    std::memset(warm, 0x11, 8 * MiB);
    mallard_free(warm);  // cached, resident
    // Too small to be served from the 8 MiB mapping (a quarter of it at least).
    auto* p = static_cast<char*>(mallard_malloc(size));
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p, warm);
    stamp_all(p, size, 53);
    mallard_stats before{};
    ASSERT_EQ(mallard_stats_get(&before), 0);
    auto* q = static_cast<char*>(mallard_realloc(p, 5 * MiB / 2));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q, warm) << "the warm cached mapping takes the growing block of " << size << " bytes";
    EXPECT_EQ(stamp_all_mismatch(q, size, 53), SIZE_MAX) << "the block's bytes were copied over";
    std::memset(q + size, 0x22, 5 * MiB / 2 - size);
    auto* r = static_cast<char*>(mallard_realloc(q, 8 * MiB));
    EXPECT_EQ(r, q) << "it grows on inside the cached mapping";
    EXPECT_EQ(stamp_all_mismatch(r, size, 53), SIZE_MAX);
    mallard_stats after{};
    ASSERT_EQ(mallard_stats_get(&after), 0);
    EXPECT_EQ(after.purged_total, before.purged_total) << "no resident page of the mapping was given back";
    mallard_free(r);
  }
}

// A block that realloc grows just past the medium sizes takes a warm cached
// mapping of up to 64 times its size, where it grows on without a copy; a
// malloc of the same size does not (the cache's fit for it is four times),
// and neither does a growth into a mapping past 64 times.
TEST(Realloc, AGrowingBlockTakesAWarmMappingEarly) {
  for (size_t cached : {8 * MiB, 16 * MiB}) {
    mallard_trim(0);  // empty caches
    auto* warm = static_cast<char*>(mallard_malloc(cached));
    ASSERT_NE(warm, nullptr);
    std::memset(warm, 0x11, cached);
    mallard_free(warm);  // cached, resident
    auto* plain = static_cast<char*>(mallard_malloc(140 * KiB));
    ASSERT_NE(plain, nullptr);
    EXPECT_NE(plain, warm) << "a malloc of 140 KiB does not take the cached mapping of " << cached << " bytes";
    auto* p = static_cast<char*>(mallard_malloc(100 * KiB));
    ASSERT_NE(p, nullptr);
    stamp_all(p, 100 * KiB, 59);
    auto* q = static_cast<char*>(mallard_realloc(p, 140 * KiB));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(stamp_all_mismatch(q, 100 * KiB, 59), SIZE_MAX) << "the block's bytes were copied over";
    if (cached == 8 * MiB) {
      EXPECT_EQ(q, warm) << "the growing block takes the warm mapping at 140 KiB";
      auto* r = static_cast<char*>(mallard_realloc(q, 7 * MiB));
      EXPECT_EQ(r, q) << "and grows on inside it";
      q = r;
    } else {
      EXPECT_NE(q, warm) << "a mapping of more than 64 times the block stays in the cache";
    }
    mallard_free(q);
    mallard_free(plain);
  }
}

// After a move the old address is no block of mallard's: freeing it again
// is reported, as for any pointer mallard did not hand out.
TEST(InvalidFreeDeathTest, TheOldAddressOfAMovedLargeBlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        mallard_trim(0);  // a fresh mapping (see LargeBlocksGrowWithoutACopy)
        auto* p = static_cast<char*>(mallard_malloc(512 * KiB));
        void* blocker = reserve_exactly_at(large_mapping_end(p), 4096);
        auto* q = static_cast<char*>(mallard_realloc(p, 4 * MiB));
        if (q == p || q == nullptr) std::abort();  // not moved: the test cannot run
        if (blocker != nullptr) munmap(blocker, 4096);
        announce_addresses({p});
        mallard_free(opaque(p));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
}

TEST(Realloc, AlignedBlocksKeepTheirContents) {
  for (size_t alignment : {size_t{32}, size_t{64}, size_t{256}, size_t{4096}, 64 * KiB, 1 * MiB}) {
    for (size_t n : {size_t{8}, alignment / 2 + 8, alignment, 3 * alignment + 5}) {
      for (size_t target : {n / 3 + 1, n * 3, n + 200000}) {
        void* p = nullptr;
        ASSERT_EQ(mallard_posix_memalign(&p, alignment, n), 0);
        stamp_all(p, n, alignment ^ n);
        void* q = mallard_realloc(p, target);
        ASSERT_NE(q, nullptr);
        ASSERT_EQ(stamp_all_mismatch(q, std::min(n, target), alignment ^ n), SIZE_MAX)
            << "aligned(" << alignment << ", " << n << ") realloc to " << target;
        mallard_free(q);
      }
    }
  }
}

TEST(Realloc, ReallocarrayMultiplies) {
  void* p = mallard_reallocarray(nullptr, 10, 10);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(mallard_malloc_usable_size(p), 100u);
  stamp_all(p, 100, 5);
  void* q = mallard_reallocarray(p, 1000, 10);
  ASSERT_NE(q, nullptr);
  EXPECT_GE(mallard_malloc_usable_size(q), 10000u);
  EXPECT_EQ(stamp_all_mismatch(q, 100, 5), SIZE_MAX);
  mallard_free(q);
}

// ---------------------------------------------------------------------------
// Grown medium blocks: extents (src/core/extent.hpp). realloc grows a block
// to a medium size into a 1 KiB-granular extent; what a freed one leaves is
// free for any size, free neighbours coalesce, and a block grows in place
// into the free extent after it. Each layout test runs in a fresh process
// (a death test's child), whose thread starts on an empty shard.

namespace {

// A block realloc grew from a small one to `size` bytes (an extent), with
// its first `size` bytes stamped with `tag`.
char* grown_block(size_t size, uint64_t tag) {
  auto* p = static_cast<char*>(mallard_realloc(mallard_malloc(1000), size));
  if (p != nullptr) stamp_all(p, size, tag);
  return p;
}

// Exits with the number of the first failed check (0: all held).
void extent_layout_child() {
  char* a = grown_block(24 * KiB, 1);
  char* b = grown_block(24 * KiB, 2);
  if (a == nullptr || b == nullptr) _exit(10);
  if (mallard_malloc_usable_size(a) % KiB != 0 || mallard_malloc_usable_size(a) < 24 * KiB) _exit(11);
  // A smaller size takes the memory a freed block left (a size class would
  // keep it for its own size): best fit, ahead of the untouched rest.
  mallard_free(a);
  char* c = grown_block(16 * KiB, 3);
  if (c != a) _exit(12);
  // Freed neighbours coalesce: a block as large as both takes their place.
  mallard_free(c);
  mallard_free(b);
  char* d = grown_block(48 * KiB, 4);
  if (d != a) _exit(13);
  // With free memory after it, the block grows where it is, its bytes kept.
  char* e = static_cast<char*>(mallard_realloc(d, 100 * KiB));
  if (e != d) _exit(14);
  if (stamp_all_mismatch(e, 48 * KiB, 4) != SIZE_MAX) _exit(15);
  // Shrinking by less than half keeps it; a copy keeps the bytes either way.
  if (mallard_realloc(e, 60 * KiB) != e) _exit(16);
  char* f = static_cast<char*>(mallard_realloc(e, 20 * KiB));
  if (f == nullptr || stamp_all_mismatch(f, 20 * KiB, 4) != SIZE_MAX) _exit(17);
  mallard_free(f);
  // A block realloc makes from nothing is an extent at once: it grows in
  // place (a 3 KiB class block would move to grow to 6 KiB).
  auto* g = static_cast<char*>(mallard_realloc(nullptr, 3 * KiB));
  if (g == nullptr) _exit(18);
  stamp_all(g, 3 * KiB, 5);
  if (mallard_realloc(g, 6 * KiB) != g || stamp_all_mismatch(g, 3 * KiB, 5) != SIZE_MAX) _exit(19);
  mallard_free(g);
  _exit(0);
}

// Live blocks of 16 KiB (stamped 1 and 3) on both sides of eight 64 KiB
// blocks carved in a row and freed: their free extent's OS pages past its
// first two are [from, to). Exits with 10 or 11 if the layout is not that.
struct FreedBetweenLiveBlocks {
  char* first;
  char* last;
  void* from;
  size_t bytes;
};

FreedBetweenLiveBlocks free_between_live_blocks() {
  char* first = grown_block(16 * KiB, 1);
  std::vector<char*> middle;
  for (int i = 0; i < 8; ++i) middle.push_back(grown_block(64 * KiB, 2));
  char* last = grown_block(16 * KiB, 3);
  if (first == nullptr || last == nullptr) _exit(10);
  for (size_t i = 1; i < middle.size(); ++i) {
    if (middle[i] != middle[i - 1] + mallard_malloc_usable_size(middle[i - 1])) _exit(11);  // carved in a row
  }
  for (char* p : middle) mallard_free(p);
  size_t page = page_size();
  uintptr_t from = (reinterpret_cast<uintptr_t>(middle.front()) + 2 * page) & ~(page - 1);
  uintptr_t to = reinterpret_cast<uintptr_t>(last) & ~(page - 1);
  return {first, last, reinterpret_cast<void*>(from), to - from};
}

// The live blocks' bytes are intact (exit 14 if not); frees them.
void check_and_free_live_blocks(const FreedBetweenLiveBlocks& layout) {
  if (stamp_all_mismatch(layout.first, 16 * KiB, 1) != SIZE_MAX || stamp_all_mismatch(layout.last, 16 * KiB, 3) != SIZE_MAX) {
    _exit(14);
  }
  mallard_free(layout.first);
  mallard_free(layout.last);
}

// Frees every free extent's whole pages on trim, and the statistics' resident
// bytes fall with them (the freed extent lies inside the segment's touched
// part, so only a count of what was purged there can show it).
void extent_trim_child() {
  mallard_trim(0);
  size_t resident_before = stats_now().resident;
  FreedBetweenLiveBlocks layout = free_between_live_blocks();
  mallard_trim(0);
  if (resident_pages(layout.from, layout.bytes) != 0) _exit(12);
  // What the live blocks and the purged extent's first pages hold is far
  // less than half of what was purged.
  if (stats_now().resident > resident_before + layout.bytes / 2) _exit(13);
  check_and_free_live_blocks(layout);
  _exit(0);
}

// Free extents between live blocks stay resident for the purge delay, for
// the next blocks, and go back after it while the blocks around them live.
void extent_decay_child() {
  if (mallard_option_set("purge_delay_ms", "20") != 0) _exit(2);
  FreedBetweenLiveBlocks layout = free_between_live_blocks();
  size_t pages = layout.bytes / page_size();
  if (resident_pages(layout.from, layout.bytes) != pages) _exit(12);  // kept through the delay
  // The purge tick runs on the heaps' slow paths (small pages churned).
  int round = 0;
  while (resident_pages(layout.from, layout.bytes) != 0) {
    if (++round == 2000) _exit(13);
    churn_small_pages(1);
    usleep(1000);
  }
  // The purged memory serves blocks again.
  char* again = grown_block(64 * KiB, 4);
  if (again == nullptr || stamp_all_mismatch(again, 64 * KiB, 4) != SIZE_MAX) _exit(15);
  mallard_free(again);
  check_and_free_live_blocks(layout);
  _exit(0);
}

}  // namespace

// A heap that holds extent_heap_mb of segments takes a medium block from the
// extents when its class's current page has none free; a smaller heap, calloc,
// and every heap with extent_heap_mb 0 keep the classes. A class block of
// 40,860 bytes is usable to 41,024 (the 40 KiB class and the line that keeps
// its blocks apart), an extent block to 40,960 (1 KiB granules). In a fresh
// process, so that the thread's heap starts small.
namespace large_heap {
constexpr size_t kRequest = 40 * KiB - 100, kClassUsable = 40 * KiB + 64, kExtentUsable = 40 * KiB;
constexpr int kMaxBlocks = 400;  // 16 MiB of requests: past the 12 MiB threshold below

// Allocates and writes blocks of kRequest until one comes from the extents
// (returns its index) or kMaxBlocks are made (returns -1); exits with 3 on a
// block that is neither kind.
int fill_until_extent(std::vector<char*>& blocks) {
  for (int i = 0; i < kMaxBlocks; ++i) {
    auto* p = static_cast<char*>(mallard_malloc(kRequest));
    if (p == nullptr) _exit(2);
    size_t usable = mallard_malloc_usable_size(p);
    if (usable != kClassUsable && usable != kExtentUsable) _exit(3);
    std::memset(p, 0x5A, usable);
    blocks.push_back(p);
    if (usable == kExtentUsable) return i;
  }
  return -1;
}

void child() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("extent_heap_mb", "12") != 0) _exit(2);
  std::thread([] {
    std::vector<char*> blocks;
    blocks.reserve(2 * kMaxBlocks);  // before the heap takes its pages
    int first_extent = fill_until_extent(blocks);
    if (first_extent < 1) _exit(4);  // the small heap's first block came from its class
    for (int i = 0; i < 50; ++i) {    // and from then on, from the extents
      auto* p = static_cast<char*>(mallard_malloc(kRequest));
      if (p == nullptr || mallard_malloc_usable_size(p) != kExtentUsable) _exit(5);
      std::memset(p, 0x6B, kRequest);
      blocks.push_back(p);
    }
    // calloc keeps the class, whose blocks it knows to read as zero.
    auto* zeroed = static_cast<unsigned char*>(mallard_calloc(1, kRequest));
    if (zeroed == nullptr || mallard_malloc_usable_size(zeroed) != kClassUsable) _exit(6);
    for (size_t i = 0; i < kRequest; ++i) {
      if (zeroed[i] != 0) _exit(7);
    }
    mallard_free(zeroed);
    for (char* p : blocks) mallard_free(p);
  }).join();
  mallard_trim(0);
  if (mallard_option_set("extent_heap_mb", "0") != 0) _exit(2);
  std::thread([] {
    std::vector<char*> blocks;
    blocks.reserve(kMaxBlocks);
    if (fill_until_extent(blocks) != -1) _exit(8);  // extent_heap_mb 0: never
    for (char* p : blocks) mallard_free(p);
  }).join();
  _exit(0);
}
}  // namespace large_heap

TEST(Extents, ALargeHeapsMediumBlocksComeFromTheExtents) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(large_heap::child(), testing::ExitedWithCode(0), "");
}

// A large heap's medium malloc that goes to the extents is a slow path like
// any other: it drains the blocks other threads freed into the heap's pages,
// which count as allocated until then. Without that, a thread whose mallocs
// all went to the extents would leave them waiting. In a fresh process.
void extent_malloc_drains_remote_frees_child() {
  if (stats_now().abandoned != 0) _exit(2);  // not a fresh process
  if (mallard_option_set("extent_heap_mb", "1") != 0) _exit(2);  // any heap with a segment
  std::thread([] {
    constexpr size_t kBlocks = 1000, kBlockSize = 64;
    std::vector<void*> blocks(kBlocks);
    for (auto& block : blocks) {
      block = mallard_malloc(kBlockSize);
      if (block == nullptr) _exit(2);
    }
    // Freed by another thread, whose exit hands them over to this heap.
    std::thread([&] {
      for (void* block : blocks) mallard_free(block);
    }).join();
    size_t before = stats_now().allocated;
    void* medium = mallard_malloc(40 * KiB);
    if (medium == nullptr || mallard_malloc_usable_size(medium) != 40 * KiB) _exit(3);  // from the extents
    size_t after = stats_now().allocated;
    // Left waiting: before + 40,960. Drained: the 64,000 bytes less, and
    // the other blocks this thread gave the freeing one (its std::thread
    // state) with them.
    if (after + kBlocks * kBlockSize > before + 40 * KiB) _exit(4);
    mallard_free(medium);
  }).join();
  _exit(0);
}

TEST(Extents, AMallocFromTheExtentsDrainsRemoteFrees) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(extent_malloc_drains_remote_frees_child(), testing::ExitedWithCode(0), "");
}

TEST(Extents, FreeExtentsGoBackAfterThePurgeDelay) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(extent_decay_child(), testing::ExitedWithCode(0), "");
}

TEST(Extents, FreedMemoryServesAnySizeAndCoalesces) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(extent_layout_child(), testing::ExitedWithCode(0), "");
}

TEST(Extents, TrimPurgesFreeExtents) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(extent_trim_child(), testing::ExitedWithCode(0), "");
}

// Every thread may free another's grown blocks, while the owner keeps
// growing and freeing its own (the shard's lock; TSan checks the rest), and
// the statistics count each live block at its usable size.
TEST(Extents, BlocksFreedByOtherThreadsAndCounted) {
  constexpr int kThreads = 4;
  constexpr int kBlocks = MALLARD_TEST_SANITIZED ? 200 : 2000;
  std::vector<std::vector<char*>> made(kThreads);
  for (auto& blocks : made) blocks.reserve(kBlocks);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  // glibc keeps some memory of the threads it created (their TLS vectors,
  // with the cached stacks): let it do so for as many threads before
  // counting. Blocks freed by threads that exited are counted until their
  // owner takes them back (trim): the threads' own state, here.
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([] { mallard_free(grown_block(20 * KiB, 0)); });
  for (auto& thread : threads) thread.join();
  threads.clear();
  mallard_trim(0);
  mallard_stats before = stats_now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&made, t] {
      for (int i = 0; i < kBlocks; ++i) {
        size_t size = 9 * KiB + static_cast<size_t>((i * 7919 + t * 104729) % (100 * 1024));
        char* p = grown_block(size, static_cast<uint64_t>(t * kBlocks + i));
        ASSERT_NE(p, nullptr);
        if (i % 3 == 0) {
          mallard_free(p);
        } else {
          made[t].push_back(p);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  mallard_trim(0);
  size_t usable_total = 0;
  for (auto& blocks : made) {
    for (char* p : blocks) usable_total += mallard_malloc_usable_size(p);
  }
  EXPECT_EQ(stats_now().allocated - before.allocated, usable_total);
  // Each thread frees the next one's blocks, checking their bytes first.
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&made, t] {
      for (char* p : made[(t + 1) % kThreads]) {
        EXPECT_GE(mallard_malloc_usable_size(p), 9 * KiB);
        mallard_free(p);
      }
      char* own = grown_block(30 * KiB, 9);
      ASSERT_NE(own, nullptr);
      mallard_free(own);
    });
  }
  for (auto& thread : threads) thread.join();
  mallard_trim(0);
  EXPECT_EQ(stats_now().allocated, before.allocated);
}

// A fork child grows and frees blocks even when the parent forked while
// another thread was inside the extents (their locks are taken before fork).
TEST(Extents, WorkInAForkChild) {
  std::atomic<bool> stop{false};
  std::thread busy([&stop] {
    while (!stop.load()) mallard_free(grown_block(20 * KiB, 5));
  });
  for (int round = 0; round < 5; ++round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      char* p = grown_block(40 * KiB, 6);
      char* q = p == nullptr ? nullptr : static_cast<char*>(mallard_realloc(p, 90 * KiB));
      _exit(q != nullptr && stamp_all_mismatch(q, 40 * KiB, 6) == SIZE_MAX ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
  }
  stop = true;
  busy.join();
  mallard_trim(0);  // takes back the exited thread's state, so that later tests count from here
}

// ---------------------------------------------------------------------------
// Sized frees (C23)

TEST(SizedFree, FreesEveryKindOfBlock) {
  mallard_stats before = stats_now();
  for (size_t n : class_boundary_sizes(2 * MiB)) {
    void* p = mallard_malloc(n);
    ASSERT_NE(p, nullptr);
    mallard_free_sized(p, n);
    void* c = mallard_calloc(n, 1);
    ASSERT_NE(c, nullptr);
    mallard_free_sized(c, n);
    void* r = mallard_realloc(mallard_malloc(n / 2 + 1), n);
    ASSERT_NE(r, nullptr);
    mallard_free_sized(r, n);
  }
  for (size_t alignment = 8; alignment <= 4 * MiB; alignment *= 4) {
    for (size_t n : {alignment, 3 * alignment, alignment / 2}) {
      void* p = mallard_aligned_alloc(alignment, n);
      ASSERT_NE(p, nullptr);
      mallard_free_aligned_sized(p, alignment, n);
    }
  }
  EXPECT_EQ(stats_now().allocated, before.allocated) << "a sized free did not free";
}

// ---------------------------------------------------------------------------
// Options

TEST(Options, GetAndSetPurgeDelay) {
  const char* initial = mallard_option_get("purge_delay_ms");
  ASSERT_NE(initial, nullptr);
  std::string saved = initial;
  EXPECT_EQ(saved.find_first_not_of("0123456789"), std::string::npos) << "purge_delay_ms = " << saved;
  EXPECT_EQ(mallard_option_set("purge_delay_ms", "50"), 0);
  EXPECT_STREQ(mallard_option_get("purge_delay_ms"), "50");
  EXPECT_EQ(mallard_option_set("purge_delay_ms", "1234"), 0);
  EXPECT_STREQ(mallard_option_get("purge_delay_ms"), "1234");
  EXPECT_EQ(mallard_option_set("purge_delay_ms", saved.c_str()), 0);
  EXPECT_EQ(mallard_option_get("purge_delay_ms"), saved);
}

// A purge delay lowered at run time also applies to the purges already
// scheduled under the longer one: a large block freed after the change goes
// back within the new delay, not 100 s later.
TEST(Options, ALoweredPurgeDelayAppliesToPurgesAlreadyScheduled) {
  std::string saved_delay = mallard_option_get("purge_delay_ms");
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "100000"), 0);
  churn_small_pages(8);  // every tick of this heap and the global one now waits 100 s
  ASSERT_EQ(mallard_option_set("purge_delay_ms", "0"), 0);
  constexpr size_t kSize = 300000;
  void* p = mallard_malloc(kSize);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xAB, kSize);
  mallard_free(p);
  EXPECT_EQ(churn_until_purged(p), PurgeSeen::kPurged) << "the large block waited for the old delay";
  ASSERT_EQ(mallard_option_set("purge_delay_ms", saved_delay.c_str()), 0);
}

TEST(Options, BadValuesAreRejectedWithAWarning) {
  std::string saved = mallard_option_get("purge_delay_ms");
  for (const char* bad : {"abc", "", "12abc", "1.5"}) {
    int rc = -1;
    std::string err = capture_stderr([&] { rc = mallard_option_set("purge_delay_ms", bad); });
    EXPECT_EQ(rc, EINVAL) << "purge_delay_ms:'" << bad << "'";
    EXPECT_NE(err.find("mallard: warning:"), std::string::npos) << err;
    EXPECT_NE(err.find(std::string("'") + bad + "'"), std::string::npos) << err;
    EXPECT_NE(err.find("'purge_delay_ms'"), std::string::npos) << err;
    EXPECT_EQ(mallard_option_get("purge_delay_ms"), saved) << "a rejected value changed the option";
  }
  std::string saved_verbose = mallard_option_get("verbose");
  EXPECT_TRUE(saved_verbose == "true" || saved_verbose == "false") << saved_verbose;
  EXPECT_EQ(mallard_option_set("verbose", "maybe"), EINVAL);
  EXPECT_EQ(mallard_option_get("verbose"), saved_verbose);
}

TEST(Options, BooleanOptions) {
  for (const char* name : {"verbose", "stats_print"}) {
    const char* initial = mallard_option_get(name);
    ASSERT_NE(initial, nullptr) << name;
    std::string saved = initial;
    EXPECT_EQ(mallard_option_set(name, "true"), 0) << name;
    EXPECT_STREQ(mallard_option_get(name), "true");
    EXPECT_EQ(mallard_option_set(name, "false"), 0) << name;
    EXPECT_STREQ(mallard_option_get(name), "false");
    EXPECT_EQ(mallard_option_set(name, saved.c_str()), 0);
  }
}

TEST(Options, UnknownNames) {
  EXPECT_EQ(mallard_option_get("no_such_option"), nullptr);
  int rc = 0;
  std::string err = capture_stderr([&] { rc = mallard_option_set("no_such_option", "1"); });
  EXPECT_EQ(rc, EINVAL);
  EXPECT_NE(err.find("mallard: warning:"), std::string::npos) << err;
  EXPECT_NE(err.find("'no_such_option'"), std::string::npos) << err;
}

// MALLARD_CONF is read at start-up: the test re-executes this binary with
// the variable set, running only the (otherwise disabled) test below, which
// prints the option values it sees.
TEST(DISABLED_ConfChild, PrintOptions) {
  for (const char* name : {"purge_delay_ms", "verbose", "stats_print"}) {
    const char* value = mallard_option_get(name);
    std::printf("option %s=%s\n", name, value ? value : "(null)");
  }
  std::fflush(stdout);
}

namespace {
ChildResult run_with_conf(const std::string& conf) {
  return run_child({self_exe(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_ConfChild.PrintOptions"},
                   {"MALLARD_CONF=" + conf});
}
}  // namespace

TEST(Conf, ValuesAreApplied) {
  ChildResult r = run_with_conf("purge_delay_ms:123,verbose:false");
  ASSERT_TRUE(r.exited_with(0)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_NE(r.out.find("option purge_delay_ms=123\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("option verbose=false\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("mallard: warning:"), std::string::npos) << r.err;
}

TEST(Conf, UnknownKeyWarnsAndTheRestStillApplies) {
  ChildResult r = run_with_conf("foo:1,purge_delay_ms:77");
  ASSERT_TRUE(r.exited_with(0)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_NE(r.err.find("mallard: warning:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'foo'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("option purge_delay_ms=77\n"), std::string::npos) << r.out;
}

TEST(Conf, BadValueWarnsAndKeepsTheDefault) {
  ChildResult defaults = run_with_conf("");
  ASSERT_TRUE(defaults.exited_with(0)) << describe_status(defaults.status) << "\n" << defaults.err;
  size_t at = defaults.out.find("option purge_delay_ms=");
  ASSERT_NE(at, std::string::npos) << defaults.out;
  std::string default_line = defaults.out.substr(at, defaults.out.find('\n', at) - at + 1);

  ChildResult r = run_with_conf("purge_delay_ms:abc");
  ASSERT_TRUE(r.exited_with(0)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_NE(r.err.find("mallard: warning:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'abc'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'purge_delay_ms'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(default_line), std::string::npos) << "expected " << default_line << "in\n" << r.out;

  ChildResult b = run_with_conf("verbose:maybe");
  ASSERT_TRUE(b.exited_with(0)) << describe_status(b.status) << "\n" << b.err;
  EXPECT_NE(b.err.find("'maybe'"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("'verbose'"), std::string::npos) << b.err;
}

TEST(Conf, StatsPrintAtExit) {
  ChildResult r = run_with_conf("stats_print:true");
  ASSERT_TRUE(r.exited_with(0)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_NE(r.out.find("option stats_print=true\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("allocated"), std::string::npos) << "no statistics on stderr at exit:\n" << r.err;
  ChildResult quiet = run_with_conf("stats_print:false");
  ASSERT_TRUE(quiet.exited_with(0));
  EXPECT_EQ(quiet.err.find("allocated"), std::string::npos) << quiet.err;
}

// ---------------------------------------------------------------------------
// Invalid frees: reported on stderr with the address, then abort.

namespace {
int global_object[16];
}

TEST(InvalidFreeDeathTest, StackPointer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        char on_stack[64];
        announce_addresses({on_stack + 16});
        mallard_free(opaque(on_stack + 16));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
}

TEST(InvalidFreeDeathTest, GlobalObject) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        announce_addresses({global_object});
        mallard_free(opaque(static_cast<void*>(global_object)));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
}

TEST(InvalidFreeDeathTest, MmapPointers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Memory mallard never handed out, at a page start and inside a page, and
  // an address that is not mapped at all.
  for (size_t offset : {size_t{0}, size_t{64}, size_t{4096 + 16}}) {
    EXPECT_EXIT(
        {
          char* m = static_cast<char*>(mmap(nullptr, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
          announce_addresses({m + offset});
          mallard_free(opaque(m + offset));
        },
        testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"))
        << "offset " << offset;
  }
  EXPECT_EXIT(
      {
        char* m = static_cast<char*>(mmap(nullptr, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        munmap(m, 8 * MiB);
        announce_addresses({m + 256});
        mallard_free(opaque(m + 256));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
}

// Addresses beyond the 47-bit user space: a kernel-half address, and a
// block's own address with a high bit set, freed by its owner and by another
// thread. None is in the segment map's range; each is reported.
TEST(InvalidFreeDeathTest, AddressesBeyondTheUserSpace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* kernel_half = reinterpret_cast<void*>(uintptr_t{0xffff800000001000});
        announce_addresses({kernel_half});
        mallard_free(opaque(kernel_half));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
  for (uintptr_t high_bit : {uintptr_t{1} << 47, uintptr_t{1} << 63}) {
    for (bool from_owner : {true, false}) {
      EXPECT_EXIT(
          {
            void* aliased = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(mallard_malloc(16)) | high_bit);
            announce_addresses({aliased});
            if (from_owner) {
              mallard_free(opaque(aliased));
            } else {
              std::thread([&] { mallard_free(opaque(aliased)); }).join();
            }
          },
          testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"))
          << "bit " << std::countr_zero(high_bit) << (from_owner ? ", owner" : ", other thread");
    }
  }
}

// Inside a segment mallard owns, but in a page it never handed out (its
// descriptor is set up only when the page is first used): the last page of a
// small segment (64 KiB pages) and of a medium one (1 MiB pages), which
// free() reaches through different entries of the small-page table.
TEST(InvalidFreeDeathTest, PointerIntoAPageNeverUsed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr uintptr_t kSegment = uintptr_t{4} * MiB;
  struct Kind {
    size_t block_size;
    uintptr_t page_size;
  };
  for (Kind kind : {Kind{16, 64 * 1024}, Kind{100000, 1 * MiB}}) {
    for (const char* call : {"free", "malloc_usable_size"}) {
      EXPECT_EXIT(
          {
            auto* block = static_cast<char*>(mallard_malloc(kind.block_size));
            auto segment = reinterpret_cast<uintptr_t>(block) & ~(kSegment - 1);
            char* unused = reinterpret_cast<char*>(segment + kSegment - kind.page_size + 256);
            announce_addresses({unused});
            if (std::string_view(call) == "free") {
              mallard_free(opaque(unused));
            } else {
              std::printf("%zu\n", mallard_malloc_usable_size(opaque(unused)));
            }
          },
          testing::KilledBySignal(SIGABRT), ReportsAddresses(std::string("mallard: error: ") + call + "(): invalid pointer {0}"))
          << call << ", blocks of " << kind.block_size;
    }
  }
}

TEST(InvalidFreeDeathTest, InteriorPointers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (size_t size : {size_t{16}, size_t{64}, size_t{1000}, size_t{100000}, 1 * MiB}) {
    // Offsets inside the block (size 16 + 16 would be the next block).
    for (size_t offset : {size_t{1}, size_t{8}, size - 1}) {
      EXPECT_EXIT(
          {
            char* p = static_cast<char*>(mallard_malloc(size));
            announce_addresses({p + offset, p});
            mallard_free(opaque(p + offset));
          },
          testing::KilledBySignal(SIGABRT),
          ReportsAddresses("mallard: error: free(): interior pointer {0} (block at {1})"))
          << "size " << size << " offset " << offset;
    }
  }
  // A page inside a large block.
  EXPECT_EXIT(
      {
        char* p = static_cast<char*>(mallard_malloc(1 * MiB));
        announce_addresses({p + 4096, p});
        mallard_free(opaque(p + 4096));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): interior pointer {0} (block at {1})"));
}

TEST(InvalidFreeDeathTest, InteriorPointerOfAnAlignedBlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        char* p = static_cast<char*>(mallard_aligned_alloc(4096, 100));
        announce_addresses({p + 32});
        mallard_free(opaque(p + 32));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): interior pointer {0}"));
}

TEST(InvalidFreeDeathTest, DoubleFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (size_t size : {size_t{16}, size_t{24}, size_t{48}, size_t{1024}, size_t{100000}, 1 * MiB, 20 * MiB}) {
    EXPECT_EXIT(
        {
          void* p = mallard_malloc(size);
          announce_addresses({p});
          mallard_free(p);
          mallard_free(opaque(p));
        },
        testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"))
        << "size " << size;
  }
}

// A block freed by another thread waits in that thread's batch: freeing it
// again there, or in the owner after the handover, is still a double free.
TEST(InvalidFreeDeathTest, DoubleFreeOfARemoteFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (size_t size : {size_t{16}, size_t{256}, size_t{100000}}) {
    EXPECT_EXIT(
        {
          void* p = mallard_malloc(size);
          announce_addresses({p});
          std::thread([p] {
            mallard_free(p);
            mallard_free(opaque(p));
          }).join();
        },
        testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"))
        << "size " << size << ", twice in the freeing thread";
    EXPECT_EXIT(
        {
          void* p = mallard_malloc(size);
          announce_addresses({p});
          std::thread([p] { mallard_free(p); }).join();
          mallard_free(opaque(p));
        },
        testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"))
        << "size " << size << ", then in the owner";
  }
}

// The same past a thread's first remote frees, which go one by one: the
// block then waits in the freeing thread's batch for its owner, which free()
// appends to without leaving its fast path's page (free_other_slow).
TEST(InvalidFreeDeathTest, DoubleFreeOfABatchedRemoteFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr size_t kBlocks = 200;  // well past the unbatched first 64
  for (size_t size : {size_t{16}, size_t{256}, size_t{100000}}) {
    for (bool owner_frees_again : {false, true}) {
      EXPECT_EXIT(
          {
            std::vector<void*> blocks(kBlocks);
            for (auto& block : blocks) block = mallard_malloc(size);
            void* last = blocks.back();
            announce_addresses({last});
            std::thread([&] {
              for (void* block : blocks) mallard_free(block);
              if (!owner_frees_again) mallard_free(opaque(last));
            }).join();
            mallard_free(opaque(last));
          },
          testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"))
          << "size " << size << (owner_frees_again ? ", then in the owner" : ", twice in the freeing thread");
    }
  }
}

// The owner frees a block that another thread freed first and still holds
// in its pending batch (that thread has not read the block yet): the
// batch finds the block free when it is handed over, and reports it.
TEST(InvalidFreeDeathTest, DoubleFreeOfABlockWaitingInABatch) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr size_t kBlocks = 80;  // past the unbatched first 64: the last ones wait in a batch
  EXPECT_EXIT(
      {
        std::vector<void*> blocks(kBlocks);
        for (auto& block : blocks) block = mallard_malloc(48);
        void* last = blocks.back();
        announce_addresses({last});
        std::latch freed{1};
        std::latch freed_again{1};
        std::thread other([&] {
          for (void* block : blocks) mallard_free(block);
          freed.count_down();
          freed_again.wait();
        });  // the thread's exit hands its batch over
        freed.wait();
        mallard_free(opaque(last));
        freed_again.count_down();
        other.join();
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"));
}

// A pointer inside another thread's block is reported as such by the thread
// that frees it.
TEST(InvalidFreeDeathTest, InteriorPointerFreedByAnotherThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (size_t size : {size_t{64}, size_t{100000}}) {
    EXPECT_EXIT(
        {
          char* p = static_cast<char*>(mallard_malloc(size));
          announce_addresses({p + 8, p});
          std::thread([p] { mallard_free(opaque(p + 8)); }).join();
        },
        testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): interior pointer {0} (block at {1})"))
        << "size " << size;
  }
}

TEST(InvalidFreeDeathTest, DoubleSizedFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* p = mallard_malloc(64);
        announce_addresses({p});
        mallard_free_sized(p, 64);
        mallard_free_sized(opaque(p), 64);
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("double free of {0}"));
}

// A grown medium block (an extent) freed twice, or a pointer inside one, is
// reported with its address, from the owner and from another thread.
TEST(InvalidFreeDeathTest, ExtentBlocks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* p = mallard_realloc(mallard_malloc(1000), 20 * KiB);
        void* keep = mallard_realloc(mallard_malloc(1000), 20 * KiB);  // p's neighbour stays live
        announce_addresses({p});
        escape(keep);
        mallard_free(p);
        mallard_free(opaque(p));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"));
  // realloc reads a grown block's tag inline (realloc_kept_block_size); a
  // freed one's goes to realloc_impl, which reports it.
  EXPECT_EXIT(
      {
        void* p = mallard_realloc(mallard_malloc(1000), 20 * KiB);
        void* keep = mallard_realloc(mallard_malloc(1000), 20 * KiB);
        announce_addresses({p});
        escape(keep);
        mallard_free(p);
        escape(mallard_realloc(opaque(p), 21 * KiB));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: realloc(): double free of {0}"));
  EXPECT_EXIT(
      {
        auto* p = static_cast<char*>(mallard_realloc(mallard_malloc(1000), 20 * KiB));
        announce_addresses({p + 4 * KiB, p});
        std::thread([p] { mallard_free(opaque(p + 4 * KiB)); }).join();
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): interior pointer {0} (block at {1})"));
  EXPECT_EXIT(
      {
        auto* p = static_cast<char*>(mallard_realloc(mallard_malloc(1000), 20 * KiB));
        announce_addresses({p + 100, p});
        mallard_malloc_usable_size(opaque(p + 100));
      },
      testing::KilledBySignal(SIGABRT),
      ReportsAddresses("mallard: error: malloc_usable_size(): interior pointer {0} (block at {1})"));
}
