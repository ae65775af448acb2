// A model of the extents' fit policy (src/core/extent.cpp), to ask whether
// another policy would leave less free space resident, before building it.
// Free neighbours coalesce; a segment's free end (its tail) stays out of the
// bins, and the shortest tail that holds a request is carved when no bin
// does, as in extent.cpp. Blocks are carved in 1 KiB granules from 4 MiB
// segments.
//
// Two workloads:
// - `churn` replays tools/workloads/churn.cpp on T model shards: each thread
//   keeps SLOTS slots, each step frees a random slot's block and draws a new
//   size log-uniform from 8 bytes to 64 KiB; sizes over 8 KiB (the medium
//   ones, which a large heap takes from the extents) come from that thread's
//   shard, and every 16th step the slot is swapped with one of SHARED
//   places, so that some frees reach another thread's shard.
// - `regrow` replays one thread of tools/workloads/regrow.cpp on one shard:
//   BUFFERS buffers (the first ones part-built), each step appends 1-256
//   bytes to a random one until it reaches its final length (log-uniform,
//   16 B to 64 KiB), then frees it and begins another. A buffer grows by
//   realloc to its exact length (DOUBLING 0) or to twice its capacity (1);
//   it lives in a size class up to 2 KiB (not modelled), then in the
//   extents, where realloc asks for a quarter more than the block holds
//   when that is more than the request (src/api/malloc.cpp,
//   realloc_target), grows in place into the free extent after the block
//   when it can, and otherwise moves. The optional HEADROOM_DIVISOR (4 for
//   that quarter, 8 for an eighth, 0 for none) and HEADROOM_CAP (at most
//   this many bytes) ask what another headroom would leave resident; the
//   counts of reallocs of extent blocks, and of those that moved, what it
//   would cost.
//
// Policies: 0, the allocator's: exact-size bins, newest first, and the
// newest of the bin of longer extents; 1, address-ordered best fit: the
// lowest address in the first bin that fits, and the shortest, then lowest,
// of the longer extents; 2 (regrow): as 0, but a block that moves to grow
// takes the start of the longest free extent, tails included, so that it
// has room to grow in place.
//
// Prints the peak of the granules the segments ever handed out (what stays
// resident without a purge) against the peak of granules in use. Not part
// of the build:
//   c++ -O2 -std=c++20 bench/extent_fit_sim.cpp -o /tmp/extent_fit_sim
//   /tmp/extent_fit_sim churn POLICY THREADS SLOTS STEPS SHARED
//   /tmp/extent_fit_sim regrow POLICY BUFFERS APPENDS DOUBLING [HEADROOM_DIVISOR [HEADROOM_CAP]]
// e.g. `churn 0 4 10000 1000000 4096`, `regrow 2 256 4000000 0` and
// `regrow 0 256 4000000 0 8` (DESIGN.md, "Address-ordered best fit in the
// extents", "Less headroom for grown extent blocks").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr uint32_t kSegmentGranules = 4096;   // 4 MiB of 1 KiB granules
constexpr uint32_t kFirstGranule = 17;        // after the segment's header and tags (extent_layout.hpp)
constexpr uint32_t kExactBins = 128;          // 128 KiB
constexpr uint32_t kLargerBin = kExactBins + 1;
constexpr uint32_t kMediumMin = 8 * 1024;     // larger requests come to the extents
constexpr uint64_t kNone = ~uint64_t{0};

int g_policy = 0;
// Policy 1 keeps its bins in address order; 0 and 2 newest first.
bool ordered_bins() { return g_policy == 1; }

uint64_t key_of(uint32_t segment, uint32_t granule) { return uint64_t{segment} << 32 | granule; }
uint32_t segment_of(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
uint32_t granule_of(uint64_t key) { return static_cast<uint32_t>(key); }
uint32_t bin_of(uint32_t granules) { return granules <= kExactBins ? granules : kLargerBin; }

class Shard {
 public:
  Shard() : newest_(kLargerBin + 1), ordered_(kLargerBin + 1) {}

  // `moving`: a block that realloc moves to grow (policy 2 places it apart).
  uint64_t carve(uint32_t granules, bool moving = false) {
    uint64_t key = moving && g_policy == 2 ? longest_free(granules) : find(granules);
    uint32_t s, g;
    if (key != kNone) {
      s = segment_of(key);
      g = granule_of(key);
    } else {
      s = shortest_tail_holding(granules);
      g = tail_[s];
    }
    uint32_t length = g == tail_[s] ? kSegmentGranules - g : free_[s][g];
    unfile(s, g);
    if (length > granules) file(s, g + granules, length - granules);
    if (g + granules > touched_[s]) touched_[s] = g + granules;
    uint64_t block = key_of(s, g);
    live_[block] = granules;
    return block;
  }

  void release(uint64_t block) {
    uint32_t s = segment_of(block), g = granule_of(block), n = live_[block];
    live_.erase(block);
    uint32_t end = g + n;
    if (end == tail_[s]) {
      unfile(s, end);
      n = kSegmentGranules - g;
    } else if (auto next = free_[s].find(end); next != free_[s].end()) {
      uint32_t m = next->second;
      unfile(s, end);
      n += m;
    }
    auto before = free_[s].lower_bound(g);
    if (before != free_[s].begin()) {
      --before;
      if (before->first + before->second == g) {
        uint32_t start = before->first, m = before->second;
        unfile(s, start);
        g = start;
        n += m;
      }
    }
    file(s, g, n);
  }

  uint32_t granules_of(uint64_t block) { return live_[block]; }

  // Grows `block` to `wanted` granules into the free extent after it, as
  // extent.cpp's grow_in_place; false if that is not free or too short.
  bool grow_in_place(uint64_t block, uint32_t wanted) {
    uint32_t s = segment_of(block), g = granule_of(block), n = live_[block];
    uint32_t right = g + n, length;
    if (right == tail_[s]) {
      length = kSegmentGranules - right;
    } else if (auto next = free_[s].find(right); next != free_[s].end()) {
      length = next->second;
    } else {
      return false;
    }
    if (n + length < wanted) return false;
    unfile(s, right);
    if (n + length > wanted) file(s, g + wanted, n + length - wanted);
    live_[block] = wanted;
    if (g + wanted > touched_[s]) touched_[s] = g + wanted;
    return true;
  }

  uint64_t touched_granules() const {
    uint64_t total = 0;
    for (uint32_t t : touched_) total += t - kFirstGranule;
    return total;
  }

 private:
  uint64_t find(uint32_t granules) {
    for (uint32_t b = bin_of(granules); b <= kLargerBin; ++b) {
      if (!ordered_bins()) {
        if (!newest_[b].empty()) return newest_[b].back();
      } else if (b <= kExactBins) {
        if (!ordered_[b].empty()) return *ordered_[b].begin();
      } else {
        uint64_t best = kNone;
        uint32_t best_length = ~0u;
        for (uint64_t key : ordered_[b]) {
          uint32_t length = free_[segment_of(key)][granule_of(key)];
          if (length < best_length) best_length = length, best = key;
        }
        return best;
      }
    }
    return kNone;
  }

  // The longest free extent or tail that holds `granules`; kNone if none.
  uint64_t longest_free(uint32_t granules) {
    uint64_t best = kNone;
    uint32_t best_length = granules - 1;
    for (uint32_t s = 0; s < free_.size(); ++s) {
      for (const auto& [g, length] : free_[s]) {
        if (length > best_length) best_length = length, best = key_of(s, g);
      }
      if (tail_[s] < kSegmentGranules && kSegmentGranules - tail_[s] > best_length) {
        best_length = kSegmentGranules - tail_[s];
        best = key_of(s, tail_[s]);
      }
    }
    return best;
  }

  uint32_t shortest_tail_holding(uint32_t granules) {
    int best = -1;
    for (size_t s = 0; s < tail_.size(); ++s) {
      if (kSegmentGranules - tail_[s] >= granules && (best < 0 || tail_[s] > tail_[best])) best = static_cast<int>(s);
    }
    if (best >= 0) return static_cast<uint32_t>(best);
    free_.emplace_back();
    tail_.push_back(kFirstGranule);
    touched_.push_back(kFirstGranule);
    return static_cast<uint32_t>(tail_.size() - 1);
  }

  void file(uint32_t s, uint32_t g, uint32_t n) {
    if (g + n == kSegmentGranules) {
      tail_[s] = g;
      return;
    }
    free_[s][g] = n;
    if (ordered_bins()) ordered_[bin_of(n)].insert(key_of(s, g)); else newest_[bin_of(n)].push_back(key_of(s, g));
  }

  void unfile(uint32_t s, uint32_t g) {
    if (g == tail_[s]) {
      tail_[s] = kSegmentGranules;
      return;
    }
    uint32_t n = free_[s][g];
    free_[s].erase(g);
    uint64_t key = key_of(s, g);
    if (ordered_bins()) {
      ordered_[bin_of(n)].erase(key);
      return;
    }
    auto& bin = newest_[bin_of(n)];
    for (size_t i = bin.size(); i-- > 0;) {
      if (bin[i] == key) {
        bin.erase(bin.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }

  std::vector<std::map<uint32_t, uint32_t>> free_;  // per segment: free extent start -> length, tail excepted
  std::vector<uint32_t> tail_, touched_;
  std::vector<std::vector<uint64_t>> newest_;       // policy 0's bins
  std::vector<std::set<uint64_t>> ordered_;         // policy 1's bins
  std::map<uint64_t, uint32_t> live_;
};

struct Slot {
  int shard = -1;  // -1: empty, or a block not in the extents
  uint64_t block = 0;
  uint32_t granules = 0;
};

double mib(uint64_t granules) { return static_cast<double>(granules) / 1024; }

void print_peaks(uint64_t peak_touched, uint64_t peak_in_use) {
  std::printf("policy %d: peak handed out %.2f MiB, peak in use %.2f MiB, ratio %.3f\n", g_policy, mib(peak_touched),
              mib(peak_in_use), static_cast<double>(peak_touched) / static_cast<double>(peak_in_use));
}

int run_churn(int threads, size_t slots, long steps, size_t shared_places) {
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Shard> shards(threads);
  std::vector<std::vector<Slot>> held(threads, std::vector<Slot>(slots));
  std::vector<Slot> shared(shared_places);
  uint64_t in_use = 0, peak_in_use = 0, peak_touched = 0;
  for (long i = 0; i < steps; ++i) {
    for (int t = 0; t < threads; ++t) {
      Slot& slot = held[t][random() % slots];
      if (slot.shard >= 0) {
        shards[slot.shard].release(slot.block);
        in_use -= slot.granules;
      }
      slot = Slot{};
      double bytes = 8 * std::exp2(unit(random) * 13.0);  // 8 B .. 64 KiB
      if (bytes > kMediumMin) {
        auto granules = static_cast<uint32_t>((bytes + 1023) / 1024);
        slot = Slot{t, shards[t].carve(granules), granules};
        in_use += granules;
      }
      if (i % 16 == 0) std::swap(slot, shared[random() % shared_places]);
    }
    if (i % 64 == 0) {
      uint64_t touched = 0;
      for (const Shard& shard : shards) touched += shard.touched_granules();
      peak_touched = std::max(peak_touched, touched);
      peak_in_use = std::max(peak_in_use, in_use);
    }
  }
  print_peaks(peak_touched, peak_in_use);
  return 0;
}

constexpr uint64_t kExtentMinSize = 2 * 1024;
constexpr uint64_t kMediumSizeMax = 128 * 1024;

uint64_t granules_for(uint64_t bytes) { return (bytes + 1023) / 1024; }

// A size class's usable size up to kExtentMinSize (src/core/size_class.hpp).
uint64_t class_usable(uint64_t bytes) {
  if (bytes <= 128) return bytes <= 16 ? 16 : (bytes + 7) / 8 * 8;
  uint64_t step = uint64_t{1} << (63 - __builtin_clzll(bytes - 1) - 3);
  return (bytes + step - 1) / step * step;
}

struct Buffer {
  uint64_t length = 0, capacity = 0, final_length = 0;
  uint64_t block = kNone;  // in the extents, else kNone (a size class, or none yet)
};

struct Headroom {
  uint64_t divisor = 4;         // realloc asks for capacity / divisor more (0: nothing more)
  uint64_t cap = ~uint64_t{0};  // but at most this many bytes more
  uint64_t of(uint64_t capacity) const { return divisor == 0 ? 0 : std::min(capacity / divisor, cap); }
};

int run_regrow(size_t buffers, long appends, bool doubling, Headroom headroom) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> unit(0, 1);
  Shard shard;
  std::vector<Buffer> held(buffers);
  uint64_t in_use = 0, peak_in_use = 0, peak_touched = 0, extent_reallocs = 0, moves = 0;
  auto begin = [&](Buffer& b) {
    b = Buffer{};
    b.final_length = static_cast<uint64_t>(std::exp(std::log(16.0) + unit(random) * std::log(65536.0 / 16.0)));
  };
  // realloc(b, size): a quarter more than the block holds when that is more
  // than asked (realloc_target), in place if the free extent after holds
  // that or else `size`, otherwise a move.
  auto grow = [&](Buffer& b, uint64_t size) {
    uint64_t target = size;
    if (size > b.capacity && b.capacity <= kMediumSizeMax) target = std::max(size, std::min(b.capacity + headroom.of(b.capacity), kMediumSizeMax));
    if (b.block == kNone) {
      if (target <= kExtentMinSize) {
        b.capacity = class_usable(size > b.capacity ? target : size);
        return;
      }
      auto granules = static_cast<uint32_t>(granules_for(target));
      b.block = shard.carve(granules, b.capacity > 0);
      in_use += granules;
      b.capacity = uint64_t{granules} * 1024;
      return;
    }
    uint32_t held_granules = shard.granules_of(b.block);
    ++extent_reallocs;
    for (uint64_t want : {granules_for(target), granules_for(size)}) {
      if (shard.grow_in_place(b.block, static_cast<uint32_t>(want))) {
        in_use += want - held_granules;
        b.capacity = want * 1024;
        return;
      }
    }
    ++moves;
    auto granules = static_cast<uint32_t>(granules_for(target));
    uint64_t moved = shard.carve(granules, true);
    shard.release(b.block);
    in_use += granules - held_granules;
    b.block = moved;
    b.capacity = uint64_t{granules} * 1024;
  };
  for (Buffer& b : held) {  // the first ones part-built
    begin(b);
    auto part = static_cast<uint64_t>(unit(random) * static_cast<double>(b.final_length));
    if (part > 0) grow(b, part);
    b.length = part;
  }
  for (long i = 0; i < appends; ++i) {
    Buffer& b = held[random() % buffers];
    uint64_t length = std::min(b.length + 1 + random() % 256, b.final_length);
    if (length > b.capacity) grow(b, doubling ? std::max(length, 2 * b.capacity) : length);
    b.length = length;
    if (b.length == b.final_length) {
      if (b.block != kNone) {
        in_use -= shard.granules_of(b.block);
        shard.release(b.block);
      }
      begin(b);
    }
    if (i % 256 == 0) {
      peak_touched = std::max(peak_touched, shard.touched_granules());
      peak_in_use = std::max(peak_in_use, in_use);
    }
  }
  print_peaks(peak_touched, peak_in_use);
  std::printf("reallocs of extent blocks %llu, of which moved %llu\n", static_cast<unsigned long long>(extent_reallocs),
              static_cast<unsigned long long>(moves));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 2 ? argv[1] : "";
  if (argc > 2) g_policy = std::atoi(argv[2]);
  if (mode == "churn" && argc == 7) {
    int threads = std::atoi(argv[3]);
    size_t slots = std::strtoul(argv[4], nullptr, 10), shared = std::strtoul(argv[6], nullptr, 10);
    long steps = std::atol(argv[5]);
    if (threads > 0 && slots > 0 && steps > 0 && shared > 0 && g_policy >= 0 && g_policy <= 1) {
      return run_churn(threads, slots, steps, shared);
    }
  }
  if (mode == "regrow" && argc >= 6 && argc <= 8) {
    size_t buffers = std::strtoul(argv[3], nullptr, 10);
    long appends = std::atol(argv[4]);
    Headroom headroom;
    if (argc > 6) headroom.divisor = std::strtoull(argv[6], nullptr, 10);
    if (argc > 7) headroom.cap = std::strtoull(argv[7], nullptr, 10);
    if (buffers > 0 && appends > 0 && g_policy >= 0 && g_policy <= 2) {
      return run_regrow(buffers, appends, std::atoi(argv[5]) != 0, headroom);
    }
  }
  std::fprintf(stderr,
               "usage: %s churn POLICY(0|1) THREADS SLOTS STEPS SHARED\n"
               "       %s regrow POLICY(0|1|2) BUFFERS APPENDS DOUBLING(0|1) [HEADROOM_DIVISOR [HEADROOM_CAP]]\n",
               argv[0], argv[0]);
  return 2;
}
