// What coalescing would save regrow's medium blocks: one thread of the regrow
// workload (tools/workloads/regrow.cpp, same steps and distributions),
// replayed against models of how an allocator keeps medium blocks (above
// 8 KiB), counting the bytes each model has made resident at the end (no
// purging: regrow reaches its high-water marks early and reuses them within a
// purge delay, DESIGN.md "Medium classes reuse freed blocks").
//   classes:   mallard's today: size classes 8 per doubling, a cache line
//              more for multiples of 4 KiB (block_stride), realloc moves to a
//              quarter more room, a class without a free block takes one of a
//              class up to a quarter larger, and otherwise carves a new one.
//              Resident: every block ever carved.
//   extents:   one address range per thread, blocks rounded to their class
//              (or, in the "1 KiB granules" row, only to 1 KiB), best fit among free extents (ties: lowest address),
//              free neighbours coalesce, and realloc grows in place when the
//              free extent after the block holds the growth. Resident: the
//              highest address ever handed out (first touches only).
//   extents + N cached a class: the same behind a cache of up to N freed
//              blocks a class, which malloc takes first (what would keep
//              a class page's fast path: sizes:32K mallocs and frees one
//              block of a class over and over).
// Not a benchmark and not part of the build (a model of allocator policy; the
// figures it prints are counted in the model, not measured on an allocator):
//   g++ -O2 -std=c++20 -Isrc bench/regrow_model.cpp -o /tmp/regrow_model
//   /tmp/regrow_model [exact|doubling] [appends per thread, default 4000000]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/size_class.hpp"

namespace {

constexpr uint64_t kSmallMax = mallard::kSmallSizeMax;
constexpr uint64_t kMediumMax = mallard::kMediumSizeMax;
constexpr uint64_t kGranule = 1024;

// xorshift64*: the model needs the workload's distributions, not its stream.
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull | 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
};

// The size of mallard's class for `size` bytes (its own table), or `size`
// itself past the largest class.
uint64_t class_size(uint64_t size) {
  if (size == 0 || size > mallard::kMediumSizeMax) return size;
  return mallard::class_size(mallard::size_class_of(size));
}

uint64_t usable_of_class(uint64_t cls) { return cls > kSmallMax && cls % 4096 == 0 ? cls + 64 : cls; }

struct Model {
  virtual ~Model() = default;
  // A medium block of at least `size` bytes; returns its id; *usable set.
  virtual uint64_t alloc(uint64_t size, uint64_t* usable) = 0;
  virtual void release(uint64_t id) = 0;
  // Grows block `id` to `size` where it is, if the model can; true if so.
  virtual bool grow_in_place(uint64_t id, uint64_t size, uint64_t* usable) = 0;
  virtual uint64_t resident() const = 0;
};

struct ClassModel : Model {
  std::map<uint64_t, uint64_t> free_count, carved;  // by class size
  std::map<uint64_t, uint64_t> block_class;         // id -> class size
  uint64_t next_id = 1;
  uint64_t alloc(uint64_t size, uint64_t* usable) override {
    uint64_t cls = class_size(size);
    uint64_t take = cls;
    if (free_count[cls] == 0) {
      take = 0;
      for (uint64_t c = class_size(cls + 1); c <= cls + cls / 4 && c <= kMediumMax; c = class_size(c + 1)) {
        if (free_count[c] != 0) {
          take = c;
          break;
        }
      }
      if (take == 0) {
        take = cls;
        carved[cls]++;
        free_count[cls]++;
      }
    }
    free_count[take]--;
    block_class[next_id] = take;
    *usable = usable_of_class(take);
    return next_id++;
  }
  void release(uint64_t id) override {
    free_count[block_class[id]]++;
    block_class.erase(id);
  }
  bool grow_in_place(uint64_t, uint64_t, uint64_t*) override { return false; }
  uint64_t resident() const override {
    uint64_t bytes = 0;
    for (const auto& [cls, n] : carved) bytes += n * usable_of_class(cls);
    return bytes;
  }
};

struct ExtentModel : Model {
  std::map<uint64_t, uint64_t> free_by_start;     // start -> length (granules)
  std::set<std::pair<uint64_t, uint64_t>> by_size;  // (length, start)
  std::map<uint64_t, uint64_t> live;              // start -> length
  uint64_t top = 0, high = 0;
  bool class_rounding;
  explicit ExtentModel(bool rounding) : class_rounding(rounding) {}
  uint64_t granules(uint64_t size) const {
    uint64_t bytes = class_rounding ? class_size(size) : size;
    return (bytes + kGranule - 1) / kGranule;
  }
  void free_insert(uint64_t start, uint64_t len) {
    free_by_start[start] = len;
    by_size.insert({len, start});
  }
  void free_erase(uint64_t start) {
    auto it = free_by_start.find(start);
    by_size.erase({it->second, start});
    free_by_start.erase(it);
  }
  uint64_t alloc(uint64_t size, uint64_t* usable) override {
    uint64_t n = granules(size);
    uint64_t start;
    auto it = by_size.lower_bound({n, 0});
    if (it != by_size.end()) {
      auto [len, s] = *it;
      free_erase(s);
      if (len > n) free_insert(s + n, len - n);
      start = s;
    } else {
      start = top;
      top += n;
      if (top > high) high = top;
    }
    live[start] = n;
    *usable = n * kGranule;
    return start;
  }
  void release(uint64_t start) override {
    uint64_t n = live[start];
    live.erase(start);
    auto next = free_by_start.find(start + n);
    if (next != free_by_start.end()) {
      n += next->second;
      free_erase(next->first);
    }
    auto prev = free_by_start.lower_bound(start);
    if (prev != free_by_start.begin()) {
      --prev;
      if (prev->first + prev->second == start) {
        start = prev->first;
        n += prev->second;
        free_erase(start);
      }
    }
    if (start + n == top) {
      top = start;  // back to the untouched end (still resident: `high` stays)
      return;
    }
    free_insert(start, n);
  }
  bool grow_in_place(uint64_t start, uint64_t size, uint64_t* usable) override {
    uint64_t n = live[start], want = granules(size);
    if (want <= n) return false;
    uint64_t end = start + n, extra = want - n;
    auto next = free_by_start.find(end);
    if (next != free_by_start.end() && next->second >= extra) {
      uint64_t len = next->second;
      free_erase(end);
      if (len > extra) free_insert(end + extra, len - extra);
    } else if (end == top) {
      top += extra;
      if (top > high) high = top;
    } else {
      return false;
    }
    live[start] = want;
    *usable = want * kGranule;
    return true;
  }
  uint64_t resident() const override { return high * kGranule; }
};

// Extents behind a per-class cache of up to `depth` freed blocks, which
// malloc takes first (the fast path a class page gives today: sizes:32K
// frees and mallocs one block of a class over and over).
struct CachedExtentModel : Model {
  ExtentModel extents{true};
  unsigned depth;
  std::map<uint64_t, std::vector<uint64_t>> cache;  // class -> block ids
  std::map<uint64_t, uint64_t> block_class;
  explicit CachedExtentModel(unsigned d) : depth(d) {}
  uint64_t alloc(uint64_t size, uint64_t* usable) override {
    uint64_t cls = class_size(size);
    auto& list = cache[cls];
    uint64_t id;
    if (!list.empty()) {
      id = list.back();
      list.pop_back();
      *usable = extents.live[id] * kGranule;
    } else {
      id = extents.alloc(size, usable);
    }
    block_class[id] = cls;
    return id;
  }
  void release(uint64_t id) override {
    uint64_t cls = block_class[id];
    block_class.erase(id);
    auto& list = cache[cls];
    if (list.size() < depth && extents.live[id] * kGranule == cls) {
      list.push_back(id);
      return;
    }
    extents.release(id);
  }
  bool grow_in_place(uint64_t id, uint64_t size, uint64_t* usable) override {
    return extents.grow_in_place(id, size, usable);
  }
  uint64_t resident() const override { return extents.resident(); }
};

struct Buffer {
  uint64_t length = 0, capacity = 0, final_length = 0;
  uint64_t usable = 0;  // of its block (0: none)
  uint64_t id = 0;      // its medium block in the model (0: none, or a small block)
};

struct Tally {
  uint64_t live_peak = 0, live = 0, moves = 0, copied = 0, reallocs = 0;
};

// realloc of a medium-or-smaller buffer to `size`, as mallard's realloc_impl
// decides (keep, grow in place in the extent model, or move to a quarter
// more room); small blocks are not modelled (their sizes are tallied only).
void resize(Model& model, Buffer& b, uint64_t size, Tally& t) {
  uint64_t usable = b.usable;
  if (b.capacity != 0 && size <= usable && size >= usable / 2) return;
  ++t.reallocs;
  if (b.id != 0 && model.grow_in_place(b.id, size, &b.usable)) return;
  uint64_t target = size;
  if (b.capacity != 0 && size > usable) {
    uint64_t grown = usable + usable / 4;
    if (grown > kMediumMax) grown = kMediumMax;
    if (target < grown) target = grown;
  }
  uint64_t old_id = b.id;
  if (target > kSmallMax) {
    b.id = model.alloc(target, &b.usable);
  } else {
    b.id = 0;
    b.usable = class_size(target);
  }
  if (b.capacity != 0) {
    ++t.moves;
    t.copied += b.length;
  }
  if (old_id != 0) model.release(old_id);
}

void run(Model& model, bool doubling, uint64_t appends, Tally& t) {
  Random random(1);
  const double log_min = std::log(16.0), log_max = std::log(65536.0);
  std::vector<Buffer> buffers(256);
  auto live_size = [](const Buffer& b) { return b.id != 0 ? b.usable : uint64_t{0}; };
  auto begin = [&](Buffer& b) {
    b = Buffer{};
    b.final_length = static_cast<uint64_t>(std::exp(log_min + random.unit() * (log_max - log_min)));
  };
  auto append = [&](Buffer& b, uint64_t bytes) {
    if (bytes == 0) return;
    uint64_t length = b.length + bytes;
    if (length > b.capacity) {
      uint64_t capacity = doubling ? std::max(length, b.capacity * 2) : length;
      t.live -= live_size(b);
      resize(model, b, capacity, t);
      b.capacity = capacity;
      t.live += live_size(b);
      if (t.live > t.live_peak) t.live_peak = t.live;
    }
    b.length = length;
  };
  for (auto& b : buffers) {
    begin(b);
    append(b, random.below(b.final_length));
  }
  for (uint64_t i = 0; i < appends; ++i) {
    Buffer& b = buffers[random.below(buffers.size())];
    append(b, std::min(random.between(1, 256), b.final_length - b.length));
    if (b.length >= b.final_length) {
      t.live -= live_size(b);
      if (b.id != 0) model.release(b.id);
      begin(b);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool doubling = argc > 1 && std::strcmp(argv[1], "doubling") == 0;
  uint64_t appends = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4000000;
  ClassModel classes;
  ExtentModel extents_classes(true), extents_exact(false);
  CachedExtentModel cached1(1), cached4(4);
  struct Row {
    const char* name;
    Model* model;
  } rows[] = {{"classes (mallard today)", &classes},
              {"extents, class-rounded", &extents_classes},
              {"extents, 1 KiB granules", &extents_exact},
              {"extents + 1 cached a class", &cached1},
              {"extents + 4 cached a class", &cached4}};
  std::printf("regrow:%s, one thread, %llu appends; medium blocks (> 8 KiB) only\n", doubling ? "doubling" : "exact",
              static_cast<unsigned long long>(appends));
  std::printf("%-26s %12s %12s %10s %12s\n", "model", "resident MiB", "live peak", "moves", "copied MiB");
  for (const auto& row : rows) {
    Tally t;
    run(*row.model, doubling, appends, t);
    std::printf("%-26s %12.2f %12.2f %10llu %12.1f\n", row.name, row.model->resident() / 1048576.0,
                t.live_peak / 1048576.0, static_cast<unsigned long long>(t.moves), t.copied / 1048576.0);
  }
  return 0;
}
