// Randomized differential test: long random sequences of every allocation
// call, checked against a shadow model of the live blocks (size, usable
// size, alignment, content stamp). After every call the model's
// expectations are checked: contents intact, alignment honoured, usable size
// >= size and stable, and no two live blocks overlapping (an ordered map of
// address ranges). Fixed seeds make every failure reproducible: the message
// names the seed and the operation number.
//
// mallard_* names only (label sanitize-core). The model's own containers use
// the standard allocator, which in sanitizer builds is the sanitizer's.
#include <mallard/mallard.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mallard_test;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

// How a block was obtained decides how it may be freed: free_sized takes
// blocks of malloc, calloc and realloc (C23), free_aligned_sized blocks of
// aligned_alloc.
enum class Origin { kMalloc, kMemalign, kAlignedAlloc };

struct LiveBlock {
  size_t size;
  size_t usable;
  size_t alignment;
  Origin origin;
  uint64_t tag;
  size_t index;  // position in Differential::addresses_
};

class Differential {
 public:
  explicit Differential(uint64_t seed) : seed_(seed), rng_(seed) {}

  // Runs `ops` random operations; stops at the first inconsistency and
  // returns its description (empty when all went well).
  std::string run(size_t ops) {
    for (op_ = 0; op_ < ops && error_.empty(); ++op_) {
      step();
      if (op_ % 20000 == 19999) verify_all();
    }
    if (error_.empty()) verify_all();
    while (!live_.empty() && error_.empty()) release(live_.begin()->first, /*how=*/0);
    return error_;
  }

  size_t max_live() const { return max_live_; }
  size_t count(const char* what) const { return counts_.count(what) ? counts_.at(what) : 0; }

 private:
  // --- random choices --------------------------------------------------

  size_t below(size_t n) { return static_cast<size_t>(rng_() % n); }

  // Half the sizes sit on or next to a size-class boundary, where
  // off-by-one errors live.
  size_t random_size() {
    size_t r = below(100);
    if (r < 50) {
      size_t boundary;
      size_t which = below(10);
      if (which < 4) {
        boundary = 16 + 8 * below(15);  // 16 .. 128
      } else if (which < 9) {
        size_t p = size_t{128} << below(10);  // 128 .. 64 KiB
        boundary = p + (below(8) + 1) * (p / 8);
      } else {
        boundary = (size_t{128} << below(5)) * KiB;  // 128 KiB .. 2 MiB
      }
      return boundary - 1 + below(3);
    }
    if (r < 80) return below(513);
    if (r < 95) return 513 + below(128 * KiB);
    return 128 * KiB + below(2 * MiB);
  }

  size_t random_alignment() {
    // 8 .. 64 KiB usually, up to 4 MiB now and then.
    return below(20) == 0 ? size_t{1} << (17 + below(6)) : size_t{8} << below(14);
  }

  uint64_t next_tag() { return rng_() | 1; }

  // --- model ---------------------------------------------------------------

  void fail(const std::string& what) {
    if (!error_.empty()) return;
    std::ostringstream out;
    out << "seed " << seed_ << ", operation " << op_ << ": " << what;
    error_ = out.str();
  }

  // Checks a fresh block against the model and records it.
  void add(void* p, size_t size, size_t alignment, Origin origin, const char* how) {
    ++counts_[how];
    if (p == nullptr) return fail(std::string(how) + " returned NULL for " + std::to_string(size) + " bytes");
    auto addr = reinterpret_cast<uintptr_t>(p);
    if (addr % alignment != 0)
      return fail(std::string(how) + " returned " + hex(p) + ", not aligned to " + std::to_string(alignment));
    size_t usable = mallard_malloc_usable_size(p);
    if (usable < size)
      return fail(std::string(how) + ": usable size " + std::to_string(usable) + " < " + std::to_string(size));
    // [addr, addr+usable) must not touch any live block.
    auto next = live_.lower_bound(addr);
    if (next != live_.end() && next->first < addr + std::max<size_t>(usable, 1))
      return fail(std::string(how) + " returned " + hex(p) + " (+" + std::to_string(usable) + ") overlapping the live block at " +
                  hex(reinterpret_cast<void*>(next->first)));
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + std::max<size_t>(prev->second.usable, 1) > addr)
        return fail(std::string(how) + " returned " + hex(p) + " inside the live block at " +
                    hex(reinterpret_cast<void*>(prev->first)) + " (+" + std::to_string(prev->second.usable) + ")");
    }
    LiveBlock b{size, usable, alignment, origin, next_tag(), addresses_.size()};
    stamp(p, size, b.tag);
    live_.emplace(addr, b);
    addresses_.push_back(addr);
    max_live_ = std::max(max_live_, live_.size());
  }

  void erase_live(uintptr_t addr) {
    auto it = live_.find(addr);
    size_t index = it->second.index;
    live_.erase(it);
    addresses_[index] = addresses_.back();
    addresses_.pop_back();
    if (index < addresses_.size()) live_.at(addresses_[index]).index = index;
  }

  bool intact(uintptr_t addr, const LiveBlock& b, const char* when) {
    void* p = reinterpret_cast<void*>(addr);
    size_t bad = stamp_mismatch(p, b.size, b.tag);
    if (bad != SIZE_MAX) {
      fail(std::string(when) + ": block " + hex(p) + " of " + std::to_string(b.size) + " bytes damaged at offset " +
           std::to_string(bad));
      return false;
    }
    size_t usable = mallard_malloc_usable_size(p);
    if (usable != b.usable) {
      fail(std::string(when) + ": usable size of " + hex(p) + " changed from " + std::to_string(b.usable) + " to " +
           std::to_string(usable));
      return false;
    }
    return true;
  }

  void verify_all() {
    for (const auto& [addr, b] : live_)
      if (!intact(addr, b, "sweep")) return;
  }

  uintptr_t random_live() { return addresses_[below(addresses_.size())]; }

  // Frees a live block: how 0 = free, 1 = free_sized / free_aligned_sized.
  void release(uintptr_t addr, int how) {
    LiveBlock b = live_.at(addr);
    if (!intact(addr, b, "before free")) return;
    erase_live(addr);
    void* p = reinterpret_cast<void*>(addr);
    if (how == 1 && b.origin == Origin::kMalloc) {
      ++counts_["free_sized"];
      mallard_free_sized(p, b.size);
    } else if (how == 1 && b.origin == Origin::kAlignedAlloc) {
      ++counts_["free_aligned_sized"];
      mallard_free_aligned_sized(p, b.alignment, b.size);
    } else {
      ++counts_["free"];
      mallard_free(p);
    }
  }

  // realloc / reallocarray of a live block to new_size; `result` is what
  // the call returned (errno tells a failure from realloc-to-zero).
  void after_realloc(uintptr_t addr, const LiveBlock& old, void* result, size_t new_size, bool expect_failure,
                     const char* how) {
    ++counts_[how];
    if (expect_failure) {
      if (result != nullptr) return fail(std::string(how) + " of an impossible size succeeded");
      if (errno != ENOMEM) return fail(std::string(how) + " failed without ENOMEM");
      intact(addr, old, "after a failed realloc");  // the old block must be untouched
      return;
    }
    if (result == nullptr && new_size == 0) {  // glibc-style: realloc(p, 0) freed p
      erase_live(addr);
      return;
    }
    if (result == nullptr) return fail(std::string(how) + " to " + std::to_string(new_size) + " returned NULL");
    // The kept prefix is the part of the old stamp below new_size.
    size_t kept = std::min(old.size, new_size);
    size_t bad = SIZE_MAX;
    for_each_stamped_range(old.size, [&](size_t begin, size_t len) {
      if (bad == SIZE_MAX && begin < kept)
        bad = stamp_bytes_mismatch(static_cast<const uint8_t*>(result), begin, std::min(begin + len, kept), old.tag);
    });
    if (bad != SIZE_MAX)
      return fail(std::string(how) + " " + std::to_string(old.size) + " -> " + std::to_string(new_size) + " lost byte " +
                  std::to_string(bad));
    erase_live(addr);
    --counts_[how];  // add() counts it again
    add(result, new_size, 8, Origin::kMalloc, how);
  }

  // --- one random operation -------------------------------------------------

  void step() {
    size_t r = below(100);
    bool must_free = live_.size() > 3000, must_alloc = live_.size() < 16;
    if (must_free) r = 60 + below(40);
    if (must_alloc) r = below(40);

    if (r < 16) {
      size_t n = random_size();
      add(mallard_malloc(n), n, n <= 16 || n % 16 == 0 ? 16 : 8, Origin::kMalloc, "malloc");
    } else if (r < 21) {
      if (below(20) == 0) {  // overflow
        size_t a = (size_t{1} << 33) + below(1000), b = (size_t{1} << 31) + below(1000);
        errno = 0;
        void* p = mallard_calloc(opaque(a), opaque(b));
        ++counts_["calloc overflow"];
        if (p != nullptr || errno != ENOMEM) fail("calloc overflow did not fail with ENOMEM");
        return;
      }
      size_t count = 1 + below(64), n = random_size() / count;
      void* p = mallard_calloc(count, n);
      if (p != nullptr && first_nonzero(p, count * n) != SIZE_MAX)
        return fail("calloc(" + std::to_string(count) + ", " + std::to_string(n) + ") not zeroed");
      add(p, count * n, 8, Origin::kMalloc, "calloc");
    } else if (r < 26) {
      size_t alignment = random_alignment(), n = random_size();
      if (below(25) == 0) {
        size_t bad = alignment * (3 + 2 * below(3));  // 3, 5 or 7 times: not a power of two
        void* p = reinterpret_cast<void*>(0x1);
        ++counts_["posix_memalign EINVAL"];
        if (mallard_posix_memalign(&p, bad, n) != EINVAL) fail("posix_memalign(" + std::to_string(bad) + ") not EINVAL");
        return;
      }
      void* p = nullptr;
      int rc = mallard_posix_memalign(&p, alignment, n);
      if (rc != 0) return fail("posix_memalign failed with " + std::to_string(rc));
      add(p, n, alignment, Origin::kMemalign, "posix_memalign");
    } else if (r < 30) {
      size_t alignment = size_t{1} << below(13), n = random_size();  // 1 .. 4096
      add(mallard_aligned_alloc(alignment, n), n, alignment, Origin::kAlignedAlloc, "aligned_alloc");
    } else if (r < 33) {
      size_t alignment = random_alignment(), n = random_size();
      add(mallard_memalign(alignment, n), n, alignment, Origin::kMemalign, "memalign");
    } else if (r < 36) {
      size_t n = random_size();
      add(mallard_realloc(nullptr, n), n, 8, Origin::kMalloc, "realloc(NULL)");
    } else if (r < 38) {
      // Equal to the class grid: the result is 16-aligned for multiples of 16.
      size_t n = 16 * (1 + below(64));
      add(mallard_malloc(n), n, 16, Origin::kMalloc, "malloc");
    } else if (r < 40) {
      size_t count = 1 + below(100), n = random_size() / count + 1;
      add(mallard_reallocarray(nullptr, count, n), count * n, 8, Origin::kMalloc, "reallocarray(NULL)");
    } else if (r < 55) {
      uintptr_t addr = random_live();
      LiveBlock old = live_.at(addr);
      if (!intact(addr, old, "before realloc")) return;
      size_t kind = below(40);
      size_t new_size = kind == 0 ? 0 : kind < 3 ? old.size + below(64) : random_size();
      bool impossible = kind == 3;
      errno = 0;
      void* q = mallard_realloc(reinterpret_cast<void*>(addr), impossible ? opaque(SIZE_MAX - below(8192)) : new_size);
      after_realloc(addr, old, q, new_size, impossible, "realloc");
    } else if (r < 60) {
      uintptr_t addr = random_live();
      LiveBlock old = live_.at(addr);
      if (!intact(addr, old, "before reallocarray")) return;
      bool overflow = below(10) == 0;
      size_t count = overflow ? (size_t{1} << 40) : 1 + below(32);
      size_t n = overflow ? (size_t{1} << 30) : random_size() / count + 1;
      errno = 0;
      void* q = mallard_reallocarray(reinterpret_cast<void*>(addr), opaque(count), opaque(n));
      after_realloc(addr, old, q, overflow ? 0 : count * n, overflow, "reallocarray");
    } else if (r < 80) {
      release(random_live(), 0);
    } else if (r < 92) {
      release(random_live(), 1);
    } else {
      uintptr_t addr = random_live();
      intact(addr, live_.at(addr), "check");
    }
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  size_t op_ = 0;
  std::string error_;
  std::map<uintptr_t, LiveBlock> live_;  // by address, for the overlap check
  std::vector<uintptr_t> addresses_;      // the same blocks, for uniform random picks
  size_t max_live_ = 0;
  std::map<std::string, size_t> counts_;
};

class DifferentialTest : public testing::TestWithParam<uint64_t> {};

}  // namespace

TEST_P(DifferentialTest, RandomSequenceMatchesTheModel) {
  const size_t ops = kSanitized ? 50000 : 200000;
  Differential model(GetParam());
  std::string error = model.run(ops);
  EXPECT_EQ(error, "") << "reproduce with --gtest_filter=*RandomSequenceMatchesTheModel/*";
  std::printf("seed %llu: %zu ops, up to %zu live blocks; %zu malloc, %zu realloc, %zu free_sized, %zu posix_memalign\n",
              static_cast<unsigned long long>(GetParam()), ops, model.max_live(), model.count("malloc"),
              model.count("realloc"), model.count("free_sized"), model.count("posix_memalign"));
  // The mix must really have exercised every call.
  for (const char* what : {"malloc", "calloc", "calloc overflow", "realloc", "realloc(NULL)", "reallocarray",
                           "reallocarray(NULL)", "posix_memalign", "posix_memalign EINVAL", "aligned_alloc",
                           "memalign", "free", "free_sized", "free_aligned_sized"})
    EXPECT_GT(model.count(what), 0u) << what;
}

INSTANTIATE_TEST_SUITE_P(Seeds, DifferentialTest, testing::Values(1, 2, 3, 20240601, 0xDEADBEEF));
