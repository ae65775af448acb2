// A model of the extents' fit policy (src/core/extent.cpp) under churn's
// medium requests, to ask whether another policy would leave less free
// space resident. It replays the churn workload (tools/workloads/churn.cpp)
// on T simulated shards: each thread keeps SLOTS slots, each step frees a
// random slot's block and draws a new size log-uniform from 8 bytes to 64
// KiB; sizes over 8 KiB (the medium ones, which a large heap takes from the
// extents) are carved in 1 KiB granules from 4 MiB segments in that thread's
// shard, and every 16th step the slot is swapped with one of SHARED places,
// so that some frees reach another thread's shard. Free neighbours
// coalesce; a segment's free end (its tail) stays out of the bins and the
// shortest tail that holds a request is carved when no bin does, as in
// extent.cpp.
//
// Policies: 0, the allocator's: exact-size bins, newest first, and the
// newest of the bin of longer extents; 1, address-ordered best fit: the
// lowest address in the first bin that fits, and the shortest, then lowest,
// of the longer extents.
//
// Prints the peak of the granules the segments ever handed out (what stays
// resident without a purge) against the peak of granules in use. Not part
// of the build:
//   c++ -O2 -std=c++20 bench/extent_fit_sim.cpp -o /tmp/extent_fit_sim
//   /tmp/extent_fit_sim POLICY THREADS SLOTS STEPS SHARED
// e.g. `0 4 10000 1000000 4096` and `1 4 10000 1000000 4096` (DESIGN.md,
// "Address-ordered best fit in the extents").
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace {

constexpr uint32_t kSegmentGranules = 4096;   // 4 MiB of 1 KiB granules
constexpr uint32_t kFirstGranule = 24;        // after the segment's header and tags
constexpr uint32_t kExactBins = 128;          // 128 KiB
constexpr uint32_t kLargerBin = kExactBins + 1;
constexpr uint32_t kMediumMin = 8 * 1024;     // larger requests come to the extents
constexpr uint64_t kNone = ~uint64_t{0};

int g_policy = 0;

uint64_t key_of(uint32_t segment, uint32_t granule) { return uint64_t{segment} << 32 | granule; }
uint32_t segment_of(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
uint32_t granule_of(uint64_t key) { return static_cast<uint32_t>(key); }
uint32_t bin_of(uint32_t granules) { return granules <= kExactBins ? granules : kLargerBin; }

class Shard {
 public:
  Shard() : newest_(kLargerBin + 1), ordered_(kLargerBin + 1) {}

  uint64_t carve(uint32_t granules) {
    uint64_t key = find(granules);
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

  uint64_t touched_granules() const {
    uint64_t total = 0;
    for (uint32_t t : touched_) total += t - kFirstGranule;
    return total;
  }

 private:
  uint64_t find(uint32_t granules) {
    for (uint32_t b = bin_of(granules); b <= kLargerBin; ++b) {
      if (g_policy == 0) {
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
    if (g_policy == 0) newest_[bin_of(n)].push_back(key_of(s, g)); else ordered_[bin_of(n)].insert(key_of(s, g));
  }

  void unfile(uint32_t s, uint32_t g) {
    if (g == tail_[s]) {
      tail_[s] = kSegmentGranules;
      return;
    }
    uint32_t n = free_[s][g];
    free_[s].erase(g);
    uint64_t key = key_of(s, g);
    if (g_policy != 0) {
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s POLICY(0|1) THREADS SLOTS STEPS SHARED\n", argv[0]);
    return 2;
  }
  g_policy = std::atoi(argv[1]);
  int threads = std::atoi(argv[2]);
  size_t slots = std::strtoul(argv[3], nullptr, 10);
  long steps = std::atol(argv[4]);
  size_t shared_places = std::strtoul(argv[5], nullptr, 10);
  if (threads <= 0 || slots == 0 || steps <= 0 || shared_places == 0) return 2;

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
      if (touched > peak_touched) peak_touched = touched;
      if (in_use > peak_in_use) peak_in_use = in_use;
    }
  }
  std::printf("policy %d: peak handed out %.1f MiB, peak in use %.1f MiB, ratio %.3f\n", g_policy,
              static_cast<double>(peak_touched) / 1024, static_cast<double>(peak_in_use) / 1024,
              static_cast<double>(peak_touched) / static_cast<double>(peak_in_use));
  return 0;
}
