// mallard as the process's allocator (built with MALLARD_OVERRIDE, label
// override): the standard names and every operator new/delete resolve to
// libmallard; glibc's reporting functions report mallard's numbers; invalid
// frees through free() abort with a message; fork with allocating threads;
// memory returns to the OS after a peak; a late dlopen works.
#include <dlfcn.h>
#include <malloc.h>
#include <mallard/mallard.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "death_support.hpp"
#include "test_support.hpp"

// C23 names that glibc 2.36's headers do not declare yet.
extern "C" void free_sized(void* p, size_t size);
extern "C" void free_aligned_sized(void* p, size_t alignment, size_t size);

using namespace mallard_test;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

size_t allocated_now() {
  mallard_stats s{};
  EXPECT_EQ(mallard_stats_get(&s), 0);
  return s.allocated;
}

std::string library_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "(unknown)";
  return info.dli_fname;
}

bool is_mallard_library(const std::string& path) { return path.find("libmallard.so") != std::string::npos; }

std::string capture_stderr(void (*fn)()) {
  std::fflush(stderr);
  int saved = dup(2);
  int mem = memfd_create("mallard-test-stderr", 0);
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

}  // namespace

// ---------------------------------------------------------------------------
// The allocator in use is mallard

TEST(Override, StandardNamesResolveToLibmallard) {
  // dlsym(RTLD_DEFAULT) answers with the definition every caller in the
  // process binds to: it must be libmallard's, not libc's or libstdc++'s.
  for (const char* name :
       {"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc",
        "pvalloc", "malloc_usable_size", "free_sized", "free_aligned_sized", "malloc_trim", "mallinfo2", "malloc_stats",
        "malloc_info",
        // operator new / delete: plain, array, nothrow, aligned, sized.
        "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
        "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv",
        "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t",
        "_ZdaPvmSt11align_val_t", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t"}) {
    void* symbol = dlsym(RTLD_DEFAULT, name);
    ASSERT_NE(symbol, nullptr) << name;
    EXPECT_TRUE(is_mallard_library(library_of(symbol))) << name << " resolves to " << library_of(symbol);
  }
  EXPECT_TRUE(is_mallard_library(library_of(reinterpret_cast<void*>(&malloc)))) << library_of(reinterpret_cast<void*>(&malloc));
  EXPECT_TRUE(is_mallard_library(library_of(reinterpret_cast<void*>(&free))));
}

TEST(Override, MallocHasMallardsSizeClasses) {
  // glibc gives 24 usable bytes for malloc(1) and 136 for malloc(129). In a
  // new thread: this process's first heap, this thread's, may serve a class
  // it has no page for with a free block of a larger class while it is
  // young (DESIGN.md "The first heap borrows while young"); a later
  // thread's heap does not borrow.
  std::thread([] {
    void* a = malloc(opaque(size_t{1}));
    void* b = malloc(opaque(size_t{129}));
    void* c = malloc(opaque(size_t{24}));
    EXPECT_EQ(malloc_usable_size(a), 16u);
    EXPECT_EQ(malloc_usable_size(b), 144u);
    EXPECT_EQ(malloc_usable_size(c), 24u);
    EXPECT_EQ(mallard_malloc_usable_size(b), 144u);
    free(a);
    free(b);
    free(c);
  }).join();
}

TEST(Override, EveryStandardFunctionIsCountedByMallard) {
  size_t base = allocated_now();
  auto expect_counted = [&](void* p, const char* what) {
    ASSERT_NE(p, nullptr) << what;
    EXPECT_EQ(allocated_now() - base, mallard_malloc_usable_size(p)) << what << " did not allocate from mallard";
  };
  void* p = malloc(opaque(size_t{3000}));
  expect_counted(p, "malloc");
  free(p);
  p = calloc(opaque(size_t{30}), 100);
  expect_counted(p, "calloc");
  free_sized(p, 3000);
  p = realloc(nullptr, opaque(size_t{5000}));
  expect_counted(p, "realloc(NULL)");
  p = realloc(p, opaque(size_t{70000}));
  expect_counted(p, "realloc");
  p = reallocarray(p, 7, opaque(size_t{9000}));
  expect_counted(p, "reallocarray");
  free(p);
  ASSERT_EQ(posix_memalign(&p, 4096, opaque(size_t{100})), 0);
  expect_counted(p, "posix_memalign");
  free(p);
  p = aligned_alloc(256, opaque(size_t{512}));
  expect_counted(p, "aligned_alloc");
  free_aligned_sized(p, 256, 512);
  p = memalign(64, opaque(size_t{1000}));
  expect_counted(p, "memalign");
  free(p);
  p = valloc(opaque(size_t{10}));
  expect_counted(p, "valloc");
  free(p);
  p = pvalloc(opaque(size_t{10}));
  expect_counted(p, "pvalloc");
  free(p);
  EXPECT_EQ(allocated_now(), base) << "free, free_sized or free_aligned_sized did not free";
}

TEST(Override, MallardAndStandardNamesShareOneHeap) {
  void* a = malloc(100);
  void* b = mallard_malloc(100);
  mallard_free(a);
  free(b);
  void* c = realloc(mallard_malloc(10), 20000);
  ASSERT_NE(c, nullptr);
  mallard_free(c);
}

TEST(Override, LibcInternalAllocationsUseMallard) {
  // libc calls malloc through its PLT: strdup, asprintf and open_memstream
  // must get their memory from mallard, and free() must take it back.
  char* s = strdup("a string of some length");
  ASSERT_NE(s, nullptr);
  EXPECT_GE(mallard_malloc_usable_size(s), std::strlen(s) + 1);
  free(s);
  char* formatted = nullptr;
  ASSERT_GT(asprintf(&formatted, "%0500d", 7), 0);
  EXPECT_GE(mallard_malloc_usable_size(formatted), 501u);
  free(formatted);
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 10000; ++i) std::fprintf(f, "line %d\n", i);
  std::fclose(f);
  EXPECT_GE(mallard_malloc_usable_size(buf), len);
  free(buf);
}

// ---------------------------------------------------------------------------
// operator new / delete

namespace {

struct alignas(256) OverAligned {
  char bytes[300];
};

// Checks that p came from mallard: it is counted in `allocated` at its
// usable size, and the usable size covers the request.
void expect_from_mallard(void* p, size_t base, size_t size, size_t alignment, const char* form) {
  ASSERT_NE(p, nullptr) << form;
  escape(p);
  EXPECT_TRUE(is_aligned(p, alignment)) << form << " returned " << p;
  EXPECT_GE(mallard_malloc_usable_size(p), size) << form;
  EXPECT_EQ(allocated_now() - base, mallard_malloc_usable_size(p)) << form << " did not allocate from mallard";
  std::memset(p, 0x3C, size);
}

}  // namespace

TEST(OperatorNew, EveryFormAllocatesAndFreesThroughMallard) {
  const std::nothrow_t& nt = std::nothrow;
  for (size_t size : {size_t{1}, size_t{24}, size_t{1000}, size_t{100000}, 2 * MiB}) {
    const size_t n = opaque(size);
    for (size_t al : {size_t{32}, size_t{256}, size_t{4096}, 2 * MiB}) {
      const auto a = std::align_val_t{al};
      size_t base = allocated_now();
      void* p;
      p = ::operator new(n), expect_from_mallard(p, base, n, 8, "new"), ::operator delete(p);
      p = ::operator new(n), expect_from_mallard(p, base, n, 8, "new"), ::operator delete(p, n);
      p = ::operator new[](n), expect_from_mallard(p, base, n, 8, "new[]"), ::operator delete[](p);
      p = ::operator new[](n), expect_from_mallard(p, base, n, 8, "new[]"), ::operator delete[](p, n);
      p = ::operator new(n, nt), expect_from_mallard(p, base, n, 8, "new nothrow"), ::operator delete(p, nt);
      p = ::operator new[](n, nt), expect_from_mallard(p, base, n, 8, "new[] nothrow"), ::operator delete[](p, nt);
      p = ::operator new(n, a), expect_from_mallard(p, base, n, al, "new aligned"), ::operator delete(p, a);
      p = ::operator new(n, a), expect_from_mallard(p, base, n, al, "new aligned"), ::operator delete(p, n, a);
      p = ::operator new[](n, a), expect_from_mallard(p, base, n, al, "new[] aligned"), ::operator delete[](p, a);
      p = ::operator new[](n, a), expect_from_mallard(p, base, n, al, "new[] aligned"), ::operator delete[](p, n, a);
      p = ::operator new(n, a, nt), expect_from_mallard(p, base, n, al, "new aligned nothrow"),
      ::operator delete(p, a, nt);
      p = ::operator new[](n, a, nt), expect_from_mallard(p, base, n, al, "new[] aligned nothrow"),
      ::operator delete[](p, a, nt);
      EXPECT_EQ(allocated_now(), base) << "a delete form did not free (size " << size << ", alignment " << al << ")";
    }
  }
}

TEST(OperatorNew, NewExpressionsUseMallard) {
  size_t base = allocated_now();
  auto* numbers = new int[1000];
  escape(numbers);
  EXPECT_EQ(allocated_now() - base, mallard_malloc_usable_size(numbers));
  delete[] numbers;
  auto* aligned = new OverAligned;  // aligned operator new, sized aligned delete
  escape(aligned);
  EXPECT_TRUE(is_aligned(aligned, 256));
  EXPECT_EQ(allocated_now() - base, mallard_malloc_usable_size(aligned));
  delete aligned;
  auto* text = new std::string(5000, 'x');
  escape(text);
  EXPECT_GE(allocated_now() - base, 5000u);
  delete text;
  EXPECT_EQ(allocated_now(), base);
}

TEST(OperatorNew, ImpossibleSizesThrowBadAlloc) {
  for (size_t huge : {SIZE_MAX, SIZE_MAX - 4095, size_t{PTRDIFF_MAX} + 1, size_t{1} << 57}) {
    const size_t n = opaque(huge);
    EXPECT_THROW(escape(::operator new(n)), std::bad_alloc) << huge;
    EXPECT_THROW(escape(::operator new[](n)), std::bad_alloc) << huge;
    EXPECT_THROW(escape(::operator new(n, std::align_val_t{64})), std::bad_alloc) << huge;
    EXPECT_THROW(escape(::operator new[](n, std::align_val_t{4096})), std::bad_alloc) << huge;
    EXPECT_EQ(::operator new(n, std::nothrow), nullptr);
    EXPECT_EQ(::operator new[](n, std::nothrow), nullptr);
    EXPECT_EQ(::operator new(n, std::align_val_t{64}, std::nothrow), nullptr);
    EXPECT_EQ(::operator new[](n, std::align_val_t{64}, std::nothrow), nullptr);
  }
}

namespace {
std::atomic<int> g_new_handler_calls{0};
void counting_new_handler() {
  ++g_new_handler_calls;
  std::set_new_handler(nullptr);  // next failure throws
}
}  // namespace

TEST(OperatorNew, FailureCallsTheNewHandlerThenThrows) {
  g_new_handler_calls = 0;
  std::set_new_handler(counting_new_handler);
  EXPECT_THROW(escape(::operator new(opaque(SIZE_MAX - 100))), std::bad_alloc);
  EXPECT_EQ(g_new_handler_calls.load(), 1);
  g_new_handler_calls = 0;
  std::set_new_handler(counting_new_handler);
  EXPECT_EQ(::operator new(opaque(SIZE_MAX - 100), std::nothrow), nullptr);
  EXPECT_EQ(g_new_handler_calls.load(), 1);
  std::set_new_handler(nullptr);
}

namespace {
void throwing_new_handler() {
  ++g_new_handler_calls;
  throw std::bad_alloc();
}
}  // namespace

// The nothrow forms run a handler that throws inside the C++ runtime's
// try block (libmallard links no C++ runtime of its own): nullptr comes back.
TEST(OperatorNew, NothrowFormsReturnNullWhenTheHandlerThrows) {
  std::set_new_handler(throwing_new_handler);
  size_t n = opaque(SIZE_MAX - 100);
  g_new_handler_calls = 0;
  EXPECT_EQ(::operator new(n, std::nothrow), nullptr);
  EXPECT_EQ(::operator new[](n, std::nothrow), nullptr);
  EXPECT_EQ(::operator new(n, std::align_val_t{64}, std::nothrow), nullptr);
  EXPECT_EQ(::operator new[](n, std::align_val_t{4096}, std::nothrow), nullptr);
  EXPECT_EQ(g_new_handler_calls.load(), 4);
  g_new_handler_calls = 0;
  EXPECT_THROW(escape(::operator new(n, std::align_val_t{64})), std::bad_alloc);
  EXPECT_EQ(g_new_handler_calls.load(), 1);
  std::set_new_handler(nullptr);
}

// ---------------------------------------------------------------------------
// glibc's reporting functions report mallard's statistics

TEST(GlibcReporting, Mallinfo2MatchesMallardStats) {
  void* held = malloc(opaque(16 * MiB));
  ASSERT_NE(held, nullptr);
  escape(held);  // or GCC may drop the malloc/free pair
  mallard_stats before{}, after{};
  struct mallinfo2 mi {};
  // Retry until no allocation happened between the two snapshots.
  for (int attempt = 0; attempt < 10; ++attempt) {
    mallard_stats_get(&before);
    mi = mallinfo2();
    mallard_stats_get(&after);
    if (before.allocated == after.allocated) break;
  }
  EXPECT_EQ(mi.uordblks, after.allocated);
  EXPECT_GE(mi.uordblks, 16 * MiB);
  EXPECT_GE(mi.arena, mi.uordblks) << "the address space held covers the live blocks";
  size_t with_block = mi.uordblks;
  free(held);
  EXPECT_GE(with_block - mallinfo2().uordblks, 16 * MiB);
}

TEST(GlibcReporting, MallocStatsPrintsMallardsStatistics) {
  std::string text = capture_stderr([] { malloc_stats(); });
  EXPECT_NE(text.find("allocated"), std::string::npos) << text;
  EXPECT_EQ(text.find("Arena 0:"), std::string::npos) << "glibc's malloc_stats output:\n" << text;
}

TEST(GlibcReporting, MallocInfoPrintsXmlWithMallardsNumbers) {
  void* held = malloc(opaque(8 * MiB));
  escape(held);  // or GCC may drop the malloc/free pair
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ASSERT_EQ(malloc_info(0, f), 0);
  std::fclose(f);
  std::string xml(buf, len);
  free(buf);
  free(held);
  EXPECT_EQ(xml.rfind("<malloc", 0), 0u) << xml;
  EXPECT_NE(xml.find("</malloc>"), std::string::npos) << xml;
  size_t at = xml.find("\"allocated\"");
  ASSERT_NE(at, std::string::npos) << xml;
  size_t digits = xml.find_first_of("0123456789", at);
  ASSERT_NE(digits, std::string::npos) << xml;
  EXPECT_GE(std::stoull(xml.substr(digits)), 8 * MiB) << xml;
}

// ---------------------------------------------------------------------------
// Invalid frees through the standard names

TEST(OverrideDeathTest, FreeOfAStackPointer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        char on_stack[32];
        announce_addresses({on_stack});
        free(opaque(static_cast<void*>(on_stack)));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): invalid pointer {0}"));
}

TEST(OverrideDeathTest, FreeOfAnInteriorPointer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        char* p = static_cast<char*>(malloc(opaque(size_t{200})));
        announce_addresses({p + 40, p});
        free(opaque(p + 40));
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): interior pointer {0} (block at {1})"));
}

TEST(OverrideDeathTest, DoubleFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* p = malloc(opaque(size_t{32}));
        void* again = opaque(p);  // hidden from -Wuse-after-free
        announce_addresses({p});
        free(p);
        free(again);
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"));
  EXPECT_EXIT(
      {
        void* p = malloc(opaque(4 * MiB));
        void* again = opaque(p);  // hidden from -Wuse-after-free
        announce_addresses({p});
        free(p);
        free(again);
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("mallard: error: free(): double free of {0}"));
}

TEST(OverrideDeathTest, DoubleDelete) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto* p = new std::string(100, 'x');
        void* block = opaque(static_cast<void*>(p));
        void* again = opaque(block);  // hidden from -Wuse-after-free
        announce_addresses({block});
        ::operator delete(block);
        ::operator delete(again);
      },
      testing::KilledBySignal(SIGABRT), ReportsAddresses("double free of {0}"));
}

// ---------------------------------------------------------------------------
// fork while other threads allocate

TEST(Fork, ChildOfAMultiThreadedParentCanAllocate) {
  std::atomic<bool> stop{false};
  std::atomic<size_t> parent_ops{0};
  auto churn = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<void*> held(64, nullptr);
    while (!stop.load(std::memory_order_relaxed)) {
      size_t i = rng() % held.size();
      free(held[i]);
      size_t size = rng() % 8 == 0 ? 1 + rng() % (2 * MiB) : 1 + rng() % 2000;
      held[i] = malloc(size);
      std::memset(held[i], 0x11, std::min<size_t>(size, 256));
      if (rng() % 16 == 0) {  // and C++ allocations
        auto* s = new std::string(1 + rng() % 500, 'y');
        escape(s);
        delete s;
      }
      ++parent_ops;
    }
    for (void* p : held) free(p);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 4; ++i) threads.emplace_back(churn, i);

  constexpr int kForks = 20;
  for (int round = 0; round < kForks && !HasFailure(); ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // let the threads run mid-operation
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: only this thread survived. A lock another thread held at
      // fork time would hang it; the alarm turns a hang into a failure.
      alarm(30);
      std::mt19937 rng(round);
      std::vector<void*> blocks;
      for (int i = 0; i < 50000; ++i) {
        size_t size = rng() % 32 == 0 ? 1 + rng() % (4 * MiB) : 1 + rng() % 4000;
        void* p = malloc(size);
        if (p == nullptr) _exit(2);
        std::memset(p, 0x22, std::min<size_t>(size, 1024));
        blocks.push_back(p);
        if (blocks.size() > 200) {
          size_t k = rng() % blocks.size();
          free(blocks[k]);
          blocks[k] = blocks.back();
          blocks.pop_back();
        }
      }
      // Threads in the child allocate too, and free each other's blocks.
      std::vector<void*> handed(1000);
      std::thread producer([&] {
        for (void*& p : handed) p = malloc(1 + rng() % 1000);
      });
      producer.join();
      std::thread consumer([&] {
        for (void* p : handed) free(p);
      });
      consumer.join();
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << round << " ended with " << describe_status(status)
        << (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (deadlocked after fork?)" : "");
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(parent_ops.load(), 0u);
}

// ---------------------------------------------------------------------------
// Memory returns to the OS after a peak

namespace {

constexpr int kPurgeDelayMs = 50;

// Frees nothing itself: waits, with one small malloc/free per step (purging
// may be driven by allocator calls), until RSS is back under 10% of the
// peak's increase or the margin is spent. Returns the milliseconds it took,
// or -1.
int wait_for_rss_below(size_t baseline, size_t peak, int margin_ms) {
  const size_t limit = baseline + (peak - baseline) / 10;
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kPurgeDelayMs));
  for (;;) {
    free(malloc(opaque(size_t{64})));
    int elapsed = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
    if (rss_bytes() < limit) return elapsed;
    if (elapsed > margin_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(kPurgeDelayMs));
  }
}

// Failure details: where RSS stands, and where an explicit trim takes it
// (tells "never purged" from "purged only on request").
std::string rss_report(size_t baseline, size_t peak) {
  size_t now = rss_bytes();
  int trimmed = mallard_trim(0);
  return "RSS is " + std::to_string(now / MiB) + " MiB (baseline " + std::to_string(baseline / MiB) + " MiB, peak " +
         std::to_string(peak / MiB) + " MiB) 2000 ms after everything was freed with purge_delay_ms " +
         std::to_string(kPurgeDelayMs) + "; mallard_trim(0) then returned " + std::to_string(trimmed) +
         " and RSS became " + std::to_string(rss_bytes() / MiB) + " MiB";
}

class RssTest : public testing::Test {
 protected:
  void SetUp() override {
    saved_delay_ = mallard_option_get("purge_delay_ms");
    ASSERT_EQ(mallard_option_set("purge_delay_ms", std::to_string(kPurgeDelayMs).c_str()), 0);
  }
  void TearDown() override { mallard_option_set("purge_delay_ms", saved_delay_.c_str()); }
  std::string saved_delay_;
};

}  // namespace

TEST_F(RssTest, FallsAfterAPeakOfSmallBlocks) {
  constexpr size_t kPeakBytes = 512 * MiB;
  std::mt19937_64 rng(7);
  // The pointer array is allocated and touched before the baseline (room
  // for twice the expected ~1M blocks, so it never grows).
  std::vector<void*> blocks(kPeakBytes / 256, nullptr);
  blocks.clear();
  size_t baseline = rss_bytes();
  for (size_t total = 0; total < kPeakBytes;) {
    size_t size = 64 + rng() % (1024 - 64 + 1);
    void* p = malloc(size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x6B, size);
    blocks.push_back(p);
    total += size;
  }
  size_t peak = rss_bytes();
  ASSERT_GT(peak, baseline + kPeakBytes * 9 / 10) << "the blocks were not resident";
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (void* p : blocks) free(p);
  int ms = wait_for_rss_below(baseline, peak, 2000);
  std::printf("RSS: baseline %zu MiB, peak %zu MiB, %s\n", baseline / MiB, peak / MiB,
              ms < 0 ? "did not fall" : ("fell below 10% of the increase in " + std::to_string(ms) + " ms").c_str());
  EXPECT_GE(ms, 0) << rss_report(baseline, peak);
}

TEST_F(RssTest, FallsAfterBlocksOfExitedThreadsAreFreed) {
  // Four threads allocate 64 MiB each and exit; the main thread frees it all
  // afterwards. Their heaps' memory must go back to the OS as well.
  constexpr size_t kPerThread = 64 * MiB;
  std::vector<std::vector<void*>> per_thread(4);
  for (auto& v : per_thread) {  // allocated and touched before the baseline
    v.resize(kPerThread / 200);
    v.clear();
  }
  size_t baseline = rss_bytes();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < per_thread.size(); ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (size_t total = 0; total < kPerThread;) {
        size_t size = 64 + rng() % 900;
        void* p = malloc(size);
        std::memset(p, 0x4D, size);
        per_thread[t].push_back(p);
        total += size;
      }
    });
  }
  for (auto& t : threads) t.join();
  size_t peak = rss_bytes();
  ASSERT_GT(peak, baseline + per_thread.size() * kPerThread * 9 / 10);
  for (auto& v : per_thread)
    for (void* p : v) free(p);
  int ms = wait_for_rss_below(baseline, peak, 2000);
  std::printf("RSS: baseline %zu MiB, peak %zu MiB, %s\n", baseline / MiB, peak / MiB,
              ms < 0 ? "did not fall" : ("fell below 10% of the increase in " + std::to_string(ms) + " ms").c_str());
  EXPECT_GE(ms, 0) << rss_report(baseline, peak);
}

// ---------------------------------------------------------------------------
// dlopen: a program not linked with mallard loads libmallard.so late and
// calls it from threads that existed before the load and threads created
// after (static-TLS surprises show up here).

TEST(Dlopen, LateLoadedLibraryWorksFromManyThreads) {
  ChildResult r = run_child({MALLARD_DLOPEN_PROBE, MALLARD_LIB_PATH});
  EXPECT_TRUE(r.exited_with(0)) << describe_status(r.status) << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("dlopen probe: ok"), std::string::npos) << r.out;
}
